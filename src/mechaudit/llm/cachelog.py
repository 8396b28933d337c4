"""The append-only JSONL log under a cache folder's sqlite index: the machinery the response cache
(:mod:`mechaudit.llm.cache`) and the batch log (:mod:`mechaudit.llm.batchstate`) share.

Opening compares the file with its log row in the index (:mod:`mechaudit.llm.cacheindex`): an
unchanged file costs a stat and a query, a grown one has its new lines indexed, any other change
rebuilds the index. Writes (any threads and processes) take the folder's write lock, index what
another writer appended, append with one ``write`` plus ``fsync`` and commit the index rows; a torn
last line left by a crash is reported (:class:`CacheRecoveryWarning`), ignored and cut off before
the next append.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import warnings
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tqdm import tqdm

from mechaudit.llm import cacheindex as index

_TAIL_BYTES = 4096  # the end of the indexed part of a file is fingerprinted by this many bytes
_CHUNK_BYTES = 8 << 20  # read size while indexing
_ROWS_PER_INSERT = 20_000  # executemany batch while indexing
_BIG_BYTES = 256 << 20  # indexing more than this shows a progress bar and uses a larger page cache
_BIG_CACHE_KIB = 128 << 10


class CacheRecoveryWarning(UserWarning):
    """The cache file ended in a partial line (a crash during a write); it was ignored."""


def json_line(record: dict[str, Any]) -> bytes:
    """``record`` as one canonical JSONL line (sorted keys, UTF-8, ending in a newline)."""
    return (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


def parse(raw: bytes) -> dict[str, Any]:
    """One line as a JSON object; ValueError for anything else."""
    record = json.loads(raw)
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    return record


class IndexedLog:
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
        weakref.finalize(self, index.close_handles, self._handles)
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
            conn = self._handles["conn"] = index.open_index(self.directory, self.index_path)
            if not create:
                self._catch_up_if_stale(conn)
        return conn

    def close(self) -> None:
        """Close the index connection and the file handle (reopened on next use)."""
        with self._lock:
            index.close_handles(self._handles)
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

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction on the index (:func:`~mechaudit.llm.cacheindex.write_transaction`)."""
        with self._lock:
            conn = self._conn(create=True)
            assert conn is not None
            with index.write_transaction(conn, self._handles):
                yield conn

    # -- indexing ----------------------------------------------------------------------------
    def _sync(self, force: bool = False) -> None:
        """Bring the index up to date with the file (a stat and a query when nothing changed)."""
        with self._lock:
            conn = self._conn()
            if conn is not None:
                self._catch_up_if_stale(conn, force)

    def _catch_up_if_stale(self, conn: sqlite3.Connection, force: bool = False) -> None:
        if force or not index.fresh(index.log_row(conn, self._name), self._stat()):
            with self._write():
                self._catch_up(force)

    def _catch_up(self, force: bool = False, warn: bool = True) -> dict[str, Any]:
        """Index what the file holds beyond the indexed part (inside a write transaction); returns
        the log row. Rebuilds from scratch when the indexed part itself changed. ``warn``: report
        a torn last line (writers, which cut it off, pass False)."""
        conn = self._handles["conn"]
        st, row = self._stat(), index.log_row(conn, self._name)
        self._refresh_fd(None if st is None else st.st_ino)
        if not force and index.fresh(row, st) and row is not None:
            return row
        if (force or row is None or st is None or st.st_size < row["size"]
                or self._tail_hash(row["size"]) != row["tail"]):
            row = index.reset(conn, self._name, self._tables, self._tail_hash(0), drop_row=st is None)
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
        index.save_log_row(conn, self._name, row)
        return row

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
            record = parse(raw)
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
            record = parse(raw)
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
