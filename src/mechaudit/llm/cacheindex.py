"""The sqlite index of a cache folder: ``cache-index.sqlite`` (+ ``-wal``/``-shm``/``.lock``), derived
from the folder's JSONL logs, never committed, safe to delete when no process is using the folder.

It holds the line (offset, length) of every request key, system prompt and batch id, and per JSONL
file a log row (size, mtime, inode, hash of the indexed tail) that :func:`fresh` compares with the
file. WAL mode; an outdated or damaged index is rebuilt; a read-only folder's lives in the temporary
folder.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows: sqlite's busy timeout alone serializes writers
    fcntl = None  # type: ignore[assignment]

INDEX_FILENAME = "cache-index.sqlite"
BUSY_TIMEOUT_S = 120.0  # how long a writer waits for another process's write lock
_SCHEMA_VERSION = 1
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


def connect(path: Path) -> sqlite3.Connection:
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


def open_index(directory: Path, path: Path) -> sqlite3.Connection:
    """The index at ``path`` beside the logs in ``directory``; kept in the temporary folder when
    ``directory`` is read-only, deleted and rebuilt when it is not a database (damaged)."""
    wanted = path
    if not os.access(directory, os.W_OK):
        path = _fallback_path(directory, wanted.name)
    try:
        return connect(path)
    except sqlite3.OperationalError as exc:
        if path != wanted or not any(m in str(exc) for m in ("unable to open", "readonly")):
            raise
        path = _fallback_path(directory, wanted.name)
    except sqlite3.DatabaseError:  # the index is derived: rebuild it
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    return connect(path)


def _fallback_path(directory: Path, name: str) -> Path:
    folder = Path(tempfile.gettempdir()) / "mechaudit-cache-index"
    folder.mkdir(parents=True, exist_ok=True)
    tag = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:20]
    return folder / f"{tag}-{name}"


def close_handles(handles: dict[str, Any]) -> None:
    """Close the file descriptors (``fd``, ``lock``) and the connection (``conn``) in ``handles``."""
    for name in ("fd", "lock"):
        if handles.get(name) is not None:
            os.close(handles.pop(name))
    if handles.get("conn") is not None:
        handles.pop("conn").close()


@contextmanager
def write_transaction(conn: sqlite3.Connection, handles: dict[str, Any]) -> Iterator[sqlite3.Connection]:
    """A write transaction holding the lock of every process sharing the folder.

    Writers first queue on an ``flock`` beside the index (kept open in ``handles["lock"]``; handed
    over at once on release, where sqlite's busy handler would poll with sleeps of up to 100 ms),
    then take sqlite's own write lock, which also covers processes without ``fcntl``."""
    lock_fd = handles.get("lock")
    if lock_fd is None and fcntl is not None:
        index_file = conn.execute("PRAGMA database_list").fetchone()[2]  # beside the logs or the fallback
        lock_fd = handles["lock"] = os.open(f"{index_file}.lock", os.O_RDWR | os.O_CREAT, 0o644)
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


def log_row(conn: sqlite3.Connection, name: str) -> dict[str, Any] | None:
    """The log row of the JSONL file ``name`` (None if it was never indexed)."""
    row = conn.execute(f"SELECT {', '.join(_LOG_FIELDS)} FROM logs WHERE name = ?", (name,)).fetchone()
    return None if row is None else dict(zip(_LOG_FIELDS, row))


def save_log_row(conn: sqlite3.Connection, name: str, row: dict[str, Any]) -> None:
    conn.execute(
        f"INSERT OR REPLACE INTO logs (name, {', '.join(_LOG_FIELDS)}) VALUES (?{', ?' * len(_LOG_FIELDS)})",
        (name, *(row[f] for f in _LOG_FIELDS)),
    )


def fresh(row: dict[str, Any] | None, st: os.stat_result | None) -> bool:
    """Whether the log row still describes the file with stat ``st`` (None: no file)."""
    if st is None:
        return row is None or row["size"] == 0
    return (row is not None and row["size"] == st.st_size and row["mtime_ns"] == st.st_mtime_ns
            and row["inode"] == st.st_ino)


def reset(conn: sqlite3.Connection, name: str, tables: tuple[str, ...], tail: str, drop_row: bool) -> dict[str, Any]:
    """Empty ``tables`` (and delete the log row of ``name`` if ``drop_row``); returns the log row of
    an empty file whose tail hash is ``tail``."""
    for table in tables:
        conn.execute(f"DELETE FROM {table}")
    if drop_row:
        conn.execute("DELETE FROM logs WHERE name = ?", (name,))
    return dict(size=0, mtime_ns=0, inode=0, tail=tail, lines=0, records=0, duplicates=0, newline=1)
