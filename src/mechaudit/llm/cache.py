"""Content-addressed response cache: append-only JSONL files, indexed by sqlite.

A cache folder holds

- ``responses.jsonl`` (committed; the record of truth), two kinds of line:

  - ``{"kind": "system", "sha256": ..., "text": ...}``: a system prompt, written once, so that long
    shared rubrics are not repeated in every record;
  - ``{"kind": "response", "key": ..., "request": {...}, "response": {...}, "source": ...}``: one
    answer; ``request`` holds model, version, temperature, max_tokens, messages and the sha256 of
    the system prompt; ``response`` holds text, model, stop_reason, message id and usage;

- ``batches.jsonl`` (the Message Batches log, :class:`BatchState`): ``submitted`` and ``collected``
  events with batch ids;
- ``cache-index.sqlite`` (+ ``-wal``/``-shm``/``.lock``; derived, never committed, safe to delete
  when no process is using the folder): sqlite in WAL mode with one row per request key (byte
  offset and length of its line), one per system prompt (its text) and one per batch id (its
  ``submitted`` line, collected or not), plus the size, mtime, inode and a hash of the last 4 KiB
  of each JSONL file as indexed.

Opening compares the files with the index: unchanged (the usual case) costs a stat and one query;
a file that only grew (another writer, a ``git pull``) has just its new lines indexed; any other
change (a checkout that rewrote the file, lines deleted by hand, a damaged or missing index) rebuilds
the index from the file. A lookup reads its one line with ``pread`` and checks the key in it, so
memory does not grow with the cache and a stale index cannot return a wrong answer.

Writes, from any number of threads and processes, take the folder's write lock (an ``flock``, then
sqlite's ``BEGIN IMMEDIATE`` with a busy timeout), index whatever another writer appended, skip a
key that is already present, append the line(s) with one ``write`` plus ``fsync``, then commit the
index rows. A crash before the commit leaves a line the next writer or reader indexes; a crash
inside the write leaves a torn last line, which is reported (warning), ignored and cut off before
the next append. No credentials or HTTP headers are ever part of a record or of the index.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tempfile
import threading
import time
import warnings
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tqdm import tqdm

from mechaudit.llm.request import LLMRequest
from mechaudit.paths import cache_path

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows: sqlite's busy timeout alone serializes writers
    fcntl = None  # type: ignore[assignment]

CACHE_FILENAME = "responses.jsonl"
STATE_FILENAME = "batches.jsonl"
INDEX_FILENAME = "cache-index.sqlite"
BUSY_TIMEOUT_S = 120.0  # how long a writer waits for another process's write lock
_SCHEMA_VERSION = 1
_TAIL_BYTES = 4096  # the end of the indexed part of a file is fingerprinted by this many bytes
_CHUNK_BYTES = 8 << 20  # read size while indexing
_ROWS_PER_INSERT = 20_000  # executemany batch while indexing
_BIG_BYTES = 256 << 20  # indexing more than this shows a progress bar and uses a larger page cache
_BIG_CACHE_KIB = 128 << 10

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS logs (
        name TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
        inode INTEGER NOT NULL, tail TEXT NOT NULL, lines INTEGER NOT NULL,
        records INTEGER NOT NULL, duplicates INTEGER NOT NULL, newline INTEGER NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS responses (
        key TEXT PRIMARY KEY, offset INTEGER NOT NULL, length INTEGER NOT NULL) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS systems (
        sha256 TEXT PRIMARY KEY, text TEXT NOT NULL, offset INTEGER NOT NULL,
        length INTEGER NOT NULL) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS batches (
        batch_id TEXT PRIMARY KEY, offset INTEGER NOT NULL, length INTEGER NOT NULL,
        collected INTEGER NOT NULL) WITHOUT ROWID""",
)
_LOG_FIELDS = ("size", "mtime_ns", "inode", "tail", "lines", "records", "duplicates", "newline")


def default_cache_dir() -> Path:
    """``llm_cache`` under the cache folder (``mechaudit.paths.cache_path``: ``data/llm_cache`` in a
    checkout, the user cache folder for an installed package, ``$MECHAUDIT_CACHE/llm_cache`` if set)."""
    return cache_path("llm_cache")


class CacheRecoveryWarning(UserWarning):
    """The cache file ended in a partial line (a crash during a write); it was ignored."""


def system_sha256(text: str) -> str:
    """sha256 hex digest of a system prompt."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


def _parse(raw: bytes) -> dict[str, Any]:
    record = json.loads(raw)
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    return record


def _check_cache_record(record: dict[str, Any]) -> None:
    """Raise ValueError unless ``record`` is a valid ``system`` or ``response`` line."""
    kind = record.get("kind")
    if kind == "system":
        if not isinstance(record.get("sha256"), str) or not isinstance(record.get("text"), str):
            raise ValueError("field 'sha256' or 'text' missing")
    elif kind == "response":
        if not isinstance(record.get("key"), str) or not isinstance(record.get("response"), dict):
            raise ValueError("field 'key' or 'response' missing")
    else:
        raise ValueError(f"field 'kind' is {kind!r}, expected 'response' or 'system'")


def _connect(path: Path) -> sqlite3.Connection:
    """A connection to the index at ``path`` (created, or recreated if its schema is outdated)."""
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if conn.execute("PRAGMA user_version").fetchone()[0] != _SCHEMA_VERSION:
            conn.execute("BEGIN IMMEDIATE")
            if conn.execute("PRAGMA user_version").fetchone()[0] != _SCHEMA_VERSION:  # another process?
                for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                    conn.execute(f'DROP TABLE "{table}"')
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
            conn.execute("COMMIT")
        for attempt in range(200):  # WAL is a property of the file: set once, kept by every opener
            try:
                if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 199:
                    raise
                time.sleep(0.05)
        conn.execute("PRAGMA synchronous = NORMAL")  # the JSONL is fsynced; the index is derived
    except BaseException:
        conn.close()
        raise
    return conn


def _close_handles(handles: dict[str, Any]) -> None:
    for name in ("fd", "lock"):
        if handles.get(name) is not None:
            os.close(handles.pop(name))
    if handles.get("conn") is not None:
        handles.pop("conn").close()


class _IndexedLog:
    """An append-only JSONL file plus its rows in the folder's sqlite index (shared machinery)."""

    _tables: tuple[str, ...] = ()
    _what = "record"

    def __init__(self, directory: str | os.PathLike[str], filename: str, index_filename: str) -> None:
        self.directory = Path(directory)
        self.path = self.directory / filename
        self.index_path = self.directory / index_filename
        self._name = filename
        self._lock = threading.RLock()
        self._handles: dict[str, Any] = {}
        self._fd_inode: int | None = None
        self._pid = os.getpid()
        weakref.finalize(self, _close_handles, self._handles)
        with self._lock:
            self._sync()

    # -- connection and file handles ---------------------------------------------------------
    def _conn(self, create: bool = False) -> sqlite3.Connection | None:
        """The index connection; opened on first need, and only created by a writer (reading a
        folder without a JSONL file or an index writes nothing)."""
        if self._pid != os.getpid():  # a forked child must not use the parent's connection
            self._handles.clear()
            self._fd_inode, self._pid = None, os.getpid()
        conn = self._handles.get("conn")
        if conn is None and (create or self.path.exists() or self.index_path.exists()):
            self.directory.mkdir(parents=True, exist_ok=True)
            conn = self._handles["conn"] = self._open_index()
            if not create:
                self._catch_up_if_stale(conn)
        return conn

    @property
    def _index_file(self) -> str:
        """Where the index really is (beside the JSONL, or a temporary folder if that is read-only)."""
        conn = self._handles["conn"]
        return conn.execute("PRAGMA database_list").fetchone()[2]

    def _open_index(self) -> sqlite3.Connection:
        path = self.index_path
        if not os.access(self.directory, os.W_OK):  # read-only folder: keep the index elsewhere
            path = self._fallback_index_path()
        try:
            return _connect(path)
        except sqlite3.OperationalError as exc:
            if path != self.index_path or not any(m in str(exc) for m in ("unable to open", "readonly")):
                raise
            path = self._fallback_index_path()
        except sqlite3.DatabaseError:  # not a database (damaged): the index is derived, rebuild it
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        return _connect(path)

    def _fallback_index_path(self) -> Path:
        folder = Path(tempfile.gettempdir()) / "mechaudit-cache-index"
        folder.mkdir(parents=True, exist_ok=True)
        tag = hashlib.sha256(str(self.directory.resolve()).encode()).hexdigest()[:20]
        return folder / f"{tag}-{self.index_path.name}"

    def close(self) -> None:
        """Close the index connection and the file handle (reopened on next use)."""
        with self._lock:
            _close_handles(self._handles)
            self._fd_inode = None

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _fd(self) -> int | None:
        """A read-only descriptor of the JSONL file (None if it does not exist)."""
        fd = self._handles.get("fd")
        if fd is None:
            try:
                fd = os.open(self.path, os.O_RDONLY)
            except FileNotFoundError:
                return None
            self._handles["fd"] = fd
            self._fd_inode = os.fstat(fd).st_ino
        return fd

    def _refresh_fd(self, inode: int | None) -> None:
        if self._handles.get("fd") is not None and self._fd_inode != inode:
            os.close(self._handles.pop("fd"))
            self._fd_inode = None

    def _pread(self, offset: int, length: int) -> bytes:
        fd = self._fd()
        return b"" if fd is None else os.pread(fd, length, offset)

    def _tail_hash(self, size: int) -> str:
        start = max(0, size - _TAIL_BYTES)
        return hashlib.sha256(self._pread(start, size - start)).hexdigest()

    def _stat(self) -> os.stat_result | None:
        try:
            return os.stat(self.path)
        except FileNotFoundError:
            return None

    # -- the log row -------------------------------------------------------------------------
    def _row(self, conn: sqlite3.Connection) -> dict[str, Any] | None:
        row = conn.execute(f"SELECT {', '.join(_LOG_FIELDS)} FROM logs WHERE name = ?", (self._name,)).fetchone()
        return None if row is None else dict(zip(_LOG_FIELDS, row))

    def _save_row(self, conn: sqlite3.Connection, row: dict[str, Any]) -> None:
        conn.execute(
            f"INSERT OR REPLACE INTO logs (name, {', '.join(_LOG_FIELDS)}) VALUES (?{', ?' * len(_LOG_FIELDS)})",
            (self._name, *(row[f] for f in _LOG_FIELDS)),
        )

    @staticmethod
    def _fresh(row: dict[str, Any] | None, st: os.stat_result | None) -> bool:
        if st is None:
            return row is None or row["size"] == 0
        return (row is not None and row["size"] == st.st_size and row["mtime_ns"] == st.st_mtime_ns
                and row["inode"] == st.st_ino)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction on the index: holds the lock of every process sharing the folder.

        Writers first queue on an ``flock`` beside the index (handed over at once on release,
        where sqlite's busy handler would poll with sleeps of up to 100 ms), then take sqlite's own
        write lock, which also covers processes without ``fcntl``."""
        with self._lock:
            conn = self._conn(create=True)
            assert conn is not None
            lock_fd = self._handles.get("lock")
            if lock_fd is None and fcntl is not None:
                lock_fd = self._handles["lock"] = os.open(f"{self._index_file}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            if lock_fd is not None:
                fcntl.flock(lock_fd, fcntl.LOCK_EX)
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            finally:
                if lock_fd is not None:
                    fcntl.flock(lock_fd, fcntl.LOCK_UN)

    # -- indexing ----------------------------------------------------------------------------
    def _sync(self, force: bool = False) -> None:
        """Bring the index up to date with the file (a stat and a query when nothing changed)."""
        with self._lock:
            conn = self._conn()
            if conn is not None:
                self._catch_up_if_stale(conn, force)

    def _catch_up_if_stale(self, conn: sqlite3.Connection, force: bool = False) -> None:
        if force or not self._fresh(self._row(conn), self._stat()):
            with self._write():
                self._catch_up(force)

    def _catch_up(self, force: bool = False, warn: bool = True) -> dict[str, Any]:
        """Index what the file holds beyond the indexed part (inside a write transaction); returns
        the log row. Rebuilds from scratch when the indexed part itself changed. ``warn``: report
        a torn last line (writers, which cut it off, pass False)."""
        conn = self._handles["conn"]
        st, row = self._stat(), self._row(conn)
        self._refresh_fd(None if st is None else st.st_ino)
        if not force and self._fresh(row, st) and row is not None:
            return row
        if (force or row is None or st is None or st.st_size < row["size"]
                or self._tail_hash(row["size"]) != row["tail"]):
            row = self._reset(conn, drop_row=st is None)
            if st is None:
                return row
        assert st is not None
        big = st.st_size - row["size"] > _BIG_BYTES
        if big:  # a first index of a large file: keep the growing B-tree in memory meanwhile
            page_cache = conn.execute("PRAGMA cache_size").fetchone()[0]  # restored after
            conn.execute(f"PRAGMA cache_size = -{_BIG_CACHE_KIB}")
        offset, lineno, newline = self._index_rest(conn, row, st.st_size, big, warn)
        if big:
            conn.execute(f"PRAGMA cache_size = {page_cache}")
        row.update(size=offset, mtime_ns=st.st_mtime_ns, inode=st.st_ino, tail=self._tail_hash(offset),
                   lines=lineno, newline=newline if offset else 1)
        self._save_row(conn, row)
        return row

    def _reset(self, conn: sqlite3.Connection, drop_row: bool) -> dict[str, Any]:
        """Empty this log's index tables (and delete its log row if ``drop_row``); returns the log
        row of an empty file."""
        for table in self._tables:
            conn.execute(f"DELETE FROM {table}")
        if drop_row:
            conn.execute("DELETE FROM logs WHERE name = ?", (self._name,))
        return dict(size=0, mtime_ns=0, inode=0, tail=self._tail_hash(0), lines=0, records=0, duplicates=0,
                    newline=1)

    def _index_rest(self, conn: sqlite3.Connection, row: dict[str, Any], size: int, big: bool,
                    warn: bool) -> tuple[int, int, int]:
        """Index the file's lines from byte ``row["size"]`` on (updating ``row``'s counts); returns
        (indexed bytes, lines, 1 if the indexed part ends in a newline else 0)."""
        # after a last line without newline, the next segment starts with that line's newline
        offset, lineno = row["size"], row["lines"] - (0 if row["newline"] else 1)
        items: list[tuple[int, int, int, tuple]] = []
        bar = tqdm(total=size - offset, unit="B", unit_scale=True, leave=False, disable=not big,
                   desc=f"indexing {self.path.name}")
        with open(self.path, "rb") as fh, bar:
            fh.seek(offset)
            rest = b""
            while chunk := fh.read(_CHUNK_BYTES):
                bar.update(len(chunk))
                parts = (rest + chunk).split(b"\n")
                rest = parts.pop()
                for raw in parts:
                    lineno += 1
                    if raw.strip():
                        entry = self._fast_entry(raw) or self._parse_line(raw, lineno)
                        items.append((lineno, offset, len(raw), entry))
                    offset += len(raw) + 1
                if len(items) >= _ROWS_PER_INSERT:
                    self._index_items(conn, row, items)
                    items = []
        newline = 1
        if rest.strip():  # a last line without newline: complete (kept) or torn (skipped)
            entry = self._last_entry(rest, lineno + 1, warn)
            if entry is not None:
                lineno += 1
                items.append((lineno, offset, len(rest), entry))
                offset += len(rest)
                newline = 0
        elif rest:  # trailing blanks without newline
            offset += len(rest)
            newline = 0
        self._index_items(conn, row, items)
        return offset, lineno, newline

    def _last_entry(self, raw: bytes, lineno: int, warn: bool) -> tuple | None:
        """The entry of a last line without newline; None if it is torn (warned about if ``warn``)."""
        try:
            record = _parse(raw)
            self._check(record)
        except ValueError as exc:
            if warn:
                warnings.warn(
                    f"{self.path}: line {lineno} is incomplete (the process probably died while writing "
                    f"it); it is ignored and will be cut off before the next write ({exc})",
                    CacheRecoveryWarning,
                    stacklevel=6,
                )
            return None
        return self._entry(record)

    def _parse_line(self, raw: bytes, lineno: int) -> tuple:
        try:
            record = _parse(raw)
            self._check(record)
        except ValueError as exc:
            raise ValueError(f"{self.path}, line {lineno}: invalid {self._what}: {exc}") from exc
        return self._entry(record)

    def _check(self, record: dict[str, Any]) -> None:
        """Raise ValueError if ``record`` is not a valid line of this log."""

    def _entry(self, record: dict[str, Any]) -> tuple:
        """The few fields of a valid record that the index needs."""
        raise NotImplementedError

    def _fast_entry(self, raw: bytes) -> tuple | None:
        """The entry of a line in the writer's own canonical form without parsing it, else None."""
        return None

    def _index_items(self, conn: sqlite3.Connection, row: dict[str, Any],
                     items: list[tuple[int, int, int, tuple]]) -> None:
        """Insert index rows for lines (lineno, offset, length, entry); update ``row``'s
        ``records`` and ``duplicates``."""
        raise NotImplementedError

    def _append(self, conn: sqlite3.Connection, row: dict[str, Any], lines: list[bytes]) -> list[tuple[int, int]]:
        """Append ``lines`` (each ending in a newline) with one write + fsync, inside a write
        transaction after :meth:`_catch_up`; returns (offset, length) of each line and updates
        ``row``. A torn tail left by a crash is cut off first."""
        existed = self.path.exists()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            if os.fstat(fd).st_size != row["size"]:
                os.ftruncate(fd, row["size"])
            prefix = b"" if row["newline"] else b"\n"
            view = memoryview(prefix + b"".join(lines))
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        if not existed:  # make the new directory entry durable too
            dir_fd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        self._refresh_fd(st.st_ino)
        spans, offset = [], row["size"] + len(prefix)
        for line in lines:
            spans.append((offset, len(line) - 1))
            offset += len(line)
        row.update(size=st.st_size, mtime_ns=st.st_mtime_ns, inode=st.st_ino, tail=self._tail_hash(st.st_size),
                   lines=row["lines"] + len(lines), newline=1)
        return spans


class ResponseCache(_IndexedLog):
    """Thread- and process-safe response store keyed by :attr:`LLMRequest.key`.

    ``get`` is one indexed query plus one ``pread`` of the record's line; ``put`` appends and
    fsyncs one or two lines under the folder's write lock. ``duplicates`` counts response lines
    whose key an earlier line already had (e.g. two branches' caches merged by git); the first one
    is used.
    """

    _tables = ("responses", "systems")
    _what = "cache record"

    def __init__(self, directory: str | os.PathLike[str], filename: str = CACHE_FILENAME) -> None:
        index = INDEX_FILENAME if filename == CACHE_FILENAME else f"{filename}.{INDEX_FILENAME}"
        super().__init__(directory, filename, index)

    def _check(self, record: dict[str, Any]) -> None:
        _check_cache_record(record)

    def _entry(self, record: dict[str, Any]) -> tuple:
        if record["kind"] == "system":
            return ("system", record["sha256"], record["text"])
        return ("response", record["key"])

    def _fast_entry(self, raw: bytes) -> tuple | None:
        # A response line as ``put`` writes it (json.dumps, sorted keys): the top-level key comes
        # right before ``"kind": "response"``. Inside a JSON string every quote is escaped, so this
        # byte pattern can only be the record's own fields. Anything else is parsed in full.
        start = raw.find(b'"key": "')
        end = raw.find(b'", "kind": "response", ', start)
        if start < 0 or end < 0 or raw[:1] != b"{" or raw.rstrip()[-1:] != b"}" or b'"response": {' not in raw:
            return None
        key = raw[start + 8 : end]
        return None if b'"' in key or b"\\" in key else ("response", key.decode("utf-8"))

    def _index_items(self, conn, row, items) -> None:
        responses = [(e[1], off, n) for _, off, n, e in items if e[0] == "response"]
        systems = [(e[1], e[2], off, n) for _, off, n, e in items if e[0] == "system"]
        before = conn.total_changes
        conn.executemany("INSERT OR IGNORE INTO responses (key, offset, length) VALUES (?, ?, ?)", responses)
        added = conn.total_changes - before
        conn.executemany("INSERT OR IGNORE INTO systems (sha256, text, offset, length) VALUES (?, ?, ?, ?)", systems)
        row["records"] += added
        row["duplicates"] += len(responses) - added

    # -- reading -----------------------------------------------------------------------------
    def _state(self) -> dict[str, Any] | None:
        with self._lock:
            conn = self._conn()
            return None if conn is None else self._row(conn)

    @property
    def duplicates(self) -> int:
        """Response lines in the file whose key an earlier line already had."""
        row = self._state()
        return 0 if row is None else int(row["duplicates"])

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        with self._lock:
            conn = self._conn()
            return conn is not None and conn.execute(
                "SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None

    def __len__(self) -> int:
        row = self._state()
        return 0 if row is None else int(row["records"])

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored ``response`` part for ``key`` (text, model, usage, ...) or None."""
        record = self.record(key)
        return None if record is None else record["response"]

    def record(self, key: str) -> dict[str, Any] | None:
        """The full stored record for ``key`` (with its request fields) or None."""
        with self._lock:
            for attempt in range(2):
                conn = self._conn()
                found = None if conn is None else conn.execute(
                    "SELECT offset, length FROM responses WHERE key = ?", (key,)).fetchone()
                if found is None:
                    return None
                raw = self._pread(*found)
                try:
                    record = _parse(raw)
                    if record.get("key") == key and record.get("kind") == "response":
                        return record
                except ValueError:
                    pass
                if attempt == 0:  # the file changed in a way the cheap checks missed: rebuild
                    self._sync(force=True)
            raise ValueError(f"{self.path}: the line indexed for key {key} holds another record")

    def system_text(self, sha256: str) -> str | None:
        """A stored system prompt by its sha256."""
        with self._lock:
            conn = self._conn()
            found = None if conn is None else conn.execute(
                "SELECT text FROM systems WHERE sha256 = ?", (sha256,)).fetchone()
        return None if found is None else found[0]

    def keys(self, since: int = 0) -> list[str]:
        """All cached request keys, in file order; with ``since`` (a :meth:`mark`), only the keys
        recorded after it (a scan inside sqlite: memory grows with the answer, not the cache)."""
        with self._lock:
            conn = self._conn()
            return [] if conn is None else [k for (k,) in conn.execute(
                "SELECT key FROM responses WHERE offset >= ? ORDER BY offset", (since,))]

    def mark(self) -> int:
        """The indexed length of the file in bytes: ``keys(since=mark)`` later lists what was added
        in between (valid while the file only grows)."""
        self._sync()
        row = self._state()
        return 0 if row is None else int(row["size"])

    # -- writing -----------------------------------------------------------------------------
    def put(
        self,
        key: str,
        response: dict[str, Any],
        request: LLMRequest | None = None,
        source: str = "messages",
        extra: dict[str, Any] | None = None,
    ) -> bool:
        """Append one response record (and the system prompt if new); False if ``key`` was cached
        (by this or any other process).

        ``request`` may be None when only the key is known (a batch result collected after a
        restart whose request is not in the current run); the answer is still replayable by key.
        """
        record: dict[str, Any] = {"kind": "response", "key": key, "source": source, "response": response}
        system = None
        if request is not None:
            fields = request.hashed_fields()
            sha = system_sha256(fields.pop("system"))
            record["request"] = {**fields, "system_sha256": sha}
            system = {"kind": "system", "sha256": sha, "text": request.system}
        if extra:
            record.update(extra)
        with self._write() as conn:
            row = self._catch_up(warn=False)
            if conn.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None:
                self._save_row(conn, row)
                return False
            new = [record]
            if system is not None and conn.execute(
                    "SELECT 1 FROM systems WHERE sha256 = ?", (system["sha256"],)).fetchone() is None:
                new.insert(0, system)
            spans = self._append(conn, row, [_line(r) for r in new])
            self._index_items(conn, row, [(0, off, n, self._entry(r)) for (off, n), r in zip(spans, new)])
            self._save_row(conn, row)
        return True

    # -- export / import ---------------------------------------------------------------------
    def export_jsonl(self, dest: str | os.PathLike[str]) -> dict[str, int]:
        """Write every system prompt (by sha256) then every response (by key), one stored line
        each, byte for byte, to ``dest`` (written to a temporary file, then renamed). Duplicates and
        torn lines are left out, so the output is the cache's canonical form: exporting a cache that
        was filled by importing an export gives the same bytes. Returns the counts written."""
        dest = Path(dest)
        if dest.resolve() == self.path.resolve():
            raise ValueError(f"{dest}: cannot export a cache onto its own file")
        self._sync()
        counts = {"systems": 0, "responses": 0}
        tmp = dest.with_name(f".{dest.name}.tmp{os.getpid()}")
        try:
            with self._lock, open(tmp, "wb") as out:
                conn = self._conn()
                if conn is not None:
                    conn.execute("BEGIN")  # one consistent snapshot
                    try:
                        for kind, sql in (("systems", "SELECT offset, length FROM systems ORDER BY sha256"),
                                          ("responses", "SELECT offset, length FROM responses ORDER BY key")):
                            cursor = conn.execute(sql)
                            while rows := cursor.fetchmany(4096):
                                out.write(b"".join(self._pread(off, n) + b"\n" for off, n in rows))
                                counts[kind] += len(rows)
                    finally:
                        conn.execute("COMMIT")
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
        return counts

    def import_jsonl(self, source: str | os.PathLike[str]) -> dict[str, int]:
        """Append the records of the JSONL file ``source`` (an export or another cache's
        ``responses.jsonl``) whose key (or system sha256) this cache lacks, each line byte for byte,
        in the file's order, in one locked transaction. A damaged line raises ValueError naming
        ``source`` and the line, before anything is written. Returns counts of added and skipped
        records."""
        source = Path(source)
        if source.resolve() == self.path.resolve():
            raise ValueError(f"{source}: cannot import a cache into itself")
        counts = {"systems": 0, "responses": 0, "skipped": 0}
        with open(source, "rb") as fh:  # validate everything before writing anything
            for lineno, raw in enumerate(fh, start=1):
                if raw.strip():
                    try:
                        _check_cache_record(_parse(raw))
                    except ValueError as exc:
                        raise ValueError(f"{source}, line {lineno}: invalid cache record: {exc}") from exc
        with self._write() as conn, open(source, "rb") as fh:
            row = self._catch_up(warn=False)
            seen_keys: set[str] = set()
            seen_systems: set[str] = set()
            pending: list[tuple[bytes, dict[str, Any]]] = []
            size = 0

            def flush() -> None:
                spans = self._append(conn, row, [line for line, _ in pending])
                self._index_items(conn, row, [(0, off, n, e) for (off, n), (_, e) in zip(spans, pending)])
                pending.clear()

            for raw in fh:
                if not raw.strip():
                    continue
                record = _parse(raw)
                if record["kind"] == "system":
                    name, seen, table, column = record["sha256"], seen_systems, "systems", "sha256"
                else:
                    name, seen, table, column = record["key"], seen_keys, "responses", "key"
                if name in seen or conn.execute(f"SELECT 1 FROM {table} WHERE {column} = ?", (name,)).fetchone():
                    counts["skipped"] += 1
                    continue
                seen.add(name)
                pending.append((raw.rstrip(b"\r\n") + b"\n", self._entry(record)))
                counts[table] += 1
                size += len(raw)
                if size >= 64 << 20:
                    flush()
                    size = 0
            if pending:
                flush()
            self._save_row(conn, row)
        return counts


class BatchState(_IndexedLog):
    """Append-only log of submitted and collected batch ids (``batches.jsonl``), indexed by batch id
    in the cache folder's sqlite index, so ``pending`` reads only the open batches' lines."""

    _tables = ("batches",)
    _what = "batch state record"

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        super().__init__(directory, STATE_FILENAME, INDEX_FILENAME)

    def _check(self, record: dict[str, Any]) -> None:
        if record.get("event") in ("submitted", "collected") and not isinstance(record.get("batch_id"), str):
            raise ValueError("field 'batch_id' missing")
        if record.get("event") == "submitted" and not isinstance(record.get("keys"), list):
            raise ValueError("field 'keys' missing")

    def _entry(self, record: dict[str, Any]) -> tuple:
        return (record.get("event"), record.get("batch_id"))

    def _index_items(self, conn, row, items) -> None:
        for _, offset, length, (event, batch_id) in items:
            if event == "submitted":
                conn.execute("INSERT OR REPLACE INTO batches (batch_id, offset, length, collected) "
                             "VALUES (?, ?, ?, 0)", (batch_id, offset, length))
            elif event == "collected":
                conn.execute("UPDATE batches SET collected = 1 WHERE batch_id = ?", (batch_id,))
        row["records"] += len(items)

    def events(self) -> list[dict[str, Any]]:
        """All events in file order (a torn last line from a crash is skipped)."""
        if not self.path.exists():
            return []
        lines = self.path.read_text(encoding="utf-8").splitlines()
        events = []
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                events.append(json.loads(line))
            except ValueError as exc:
                if lineno == len(lines):
                    break
                raise ValueError(f"{self.path}, line {lineno}: invalid batch state record: {exc}") from exc
        return events

    def pending(self) -> dict[str, list[str]]:
        """Batch id -> request keys, for batches submitted but not yet collected (in submission order)."""
        with self._lock:
            self._sync()
            conn = self._conn()
            if conn is None:
                return {}
            rows = conn.execute("SELECT batch_id, offset, length FROM batches WHERE collected = 0 "
                                "ORDER BY offset").fetchall()
            return {batch_id: list(_parse(self._pread(off, n))["keys"]) for batch_id, off, n in rows}

    def append(self, event: dict[str, Any]) -> None:
        """Write one event, flushed and fsynced, and index it."""
        line = (json.dumps(event, sort_keys=True) + "\n").encode("utf-8")
        self._check(event)
        with self._write() as conn:
            row = self._catch_up(warn=False)
            [span] = self._append(conn, row, [line])
            self._index_items(conn, row, [(0, *span, self._entry(event))])
            self._save_row(conn, row)
