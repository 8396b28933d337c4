"""Content-addressed response cache: an append-only JSONL file, indexed by sqlite.

A cache folder holds

- ``responses.jsonl`` (committed; the record of truth), two kinds of line:

  - ``{"kind": "system", "sha256": ..., "text": ...}``: a system prompt, written once, so that long
    shared rubrics are not repeated in every record;
  - ``{"kind": "response", "key": ..., "request": {...}, "response": {...}, "source": ...}``: one
    answer; ``request`` holds model, version, temperature, max_tokens, messages and the sha256 of
    the system prompt; ``response`` holds text, model, stop_reason, message id and usage;

- ``batches.jsonl``, the Message Batches log (:mod:`mechaudit.llm.batchstate`);
- the derived sqlite index of both (:mod:`mechaudit.llm.cacheindex`).

Reading, writing, freshness and crash repair are the log's (:mod:`mechaudit.llm.cachelog`). A lookup
reads its one line and checks the key in it (a stale index cannot return a wrong answer). No
credentials or HTTP headers are ever part of a record or of the index.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from mechaudit.llm.batchstate import BatchState  # noqa: F401 - re-exported: import paths from before the split
from mechaudit.llm.cacheindex import INDEX_FILENAME, log_row, save_log_row
from mechaudit.llm.cachelog import CacheRecoveryWarning, IndexedLog, json_line, parse  # noqa: F401 - re-exported
from mechaudit.llm.request import LLMRequest
from mechaudit.paths import cache_path

CACHE_FILENAME = "responses.jsonl"


def default_cache_dir() -> Path:
    """``llm_cache`` under the cache folder (``mechaudit.paths.cache_path``: ``data/llm_cache`` in a
    checkout, the user cache folder for an installed package, ``$MECHAUDIT_CACHE/llm_cache`` if set)."""
    return cache_path("llm_cache")


def system_sha256(text: str) -> str:
    """sha256 hex digest of a system prompt."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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


class ResponseCache(IndexedLog):
    """Thread- and process-safe response store keyed by :attr:`LLMRequest.key`: ``get`` is one indexed
    query and one ``pread``; ``put`` appends under the folder's write lock; of repeated keys (two
    branches' caches merged by git: ``duplicates``) the first line is used."""

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
            return None if conn is None else log_row(conn, self._name)

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
                    record = parse(raw)
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
        (by any process). ``request`` None: only the key is known (a batch result collected after
        a restart); the answer is still replayable by key."""
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
                save_log_row(conn, self._name, row)
                return False
            new = [record]
            if system is not None and conn.execute(
                    "SELECT 1 FROM systems WHERE sha256 = ?", (system["sha256"],)).fetchone() is None:
                new.insert(0, system)
            spans = self._append(conn, row, [json_line(r) for r in new])
            self._index_items(conn, row, [(0, off, n, self._entry(r)) for (off, n), r in zip(spans, new)])
            save_log_row(conn, self._name, row)
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
                        _check_cache_record(parse(raw))
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
                record = parse(raw)
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
            save_log_row(conn, self._name, row)
        return counts
