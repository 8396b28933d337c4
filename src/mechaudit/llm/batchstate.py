"""The Message Batches log of a cache folder (``batches.jsonl``): ``submitted`` and ``collected``
events with batch ids, so a process that dies while a batch runs resumes polling it (see
:mod:`mechaudit.llm.batch`)."""

from __future__ import annotations

import json
import os
from typing import Any

from mechaudit.llm.cacheindex import INDEX_FILENAME, save_log_row
from mechaudit.llm.cachelog import IndexedLog, json_line, parse

STATE_FILENAME = "batches.jsonl"


class BatchState(IndexedLog):
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
            return {batch_id: list(parse(self._pread(off, n))["keys"]) for batch_id, off, n in rows}

    def append(self, event: dict[str, Any]) -> None:
        """Write one event, flushed and fsynced, and index it."""
        self._check(event)
        line = json_line(event)
        with self._write() as conn:
            row = self._catch_up(warn=False)
            [span] = self._append(conn, row, [line])
            self._index_items(conn, row, [(0, *span, self._entry(event))])
            save_log_row(conn, self._name, row)
