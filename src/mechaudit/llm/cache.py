"""Content-addressed, append-only JSONL response cache.

One file (``responses.jsonl`` in the cache folder) holds two kinds of line:

- ``{"kind": "system", "sha256": ..., "text": ...}``: a system prompt, written once, so that long
  shared rubrics are not repeated in every record;
- ``{"kind": "response", "key": ..., "request": {...}, "response": {...}, "source": ...}``: one
  answer; ``request`` holds model, version, temperature, max_tokens, messages and the sha256 of
  the system prompt; ``response`` holds text, model, stop_reason, message id and usage.

Each record is one ``write`` of one line followed by flush and ``fsync``, under a lock, so threads
never interleave or duplicate records and a crash loses at most the line being written. A torn last
line is reported (warning), ignored on reading and cut off before the next append. No credentials
or HTTP headers are ever part of a record.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import warnings
from pathlib import Path
from typing import Any

from mechaudit.llm.request import LLMRequest

CACHE_FILENAME = "responses.jsonl"


class CacheRecoveryWarning(UserWarning):
    """The cache file ended in a partial line (a crash during a write); it was ignored."""


def system_sha256(text: str) -> str:
    """sha256 hex digest of a system prompt."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")


class ResponseCache:
    """Thread-safe response store keyed by :attr:`LLMRequest.key`.

    ``get`` is a dict lookup (no I/O); ``put`` appends and fsyncs one or two lines.
    """

    def __init__(self, directory: str | os.PathLike[str], filename: str = CACHE_FILENAME) -> None:
        self.directory = Path(directory)
        self.path = self.directory / filename
        self._lock = threading.Lock()
        self._responses: dict[str, dict[str, Any]] = {}
        self._systems: dict[str, str] = {}
        self._torn_at: int | None = None  # byte offset where a torn last line starts
        self._needs_newline = False
        self.duplicates = 0  # records whose key was already present (e.g. two processes)
        self._load()

    # -- reading -----------------------------------------------------------------------------
    def _load(self) -> None:
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        lines = data.split(b"\n")
        offset = 0
        for lineno, raw in enumerate(lines, start=1):
            start, offset = offset, offset + len(raw) + 1
            if not raw.strip():
                continue
            is_last = lineno == len(lines)  # no newline after it
            try:
                record = json.loads(raw)
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
                self._index(record, lineno)
            except ValueError as exc:
                if is_last:
                    self._torn_at = start
                    warnings.warn(
                        f"{self.path}: line {lineno} is incomplete (the process probably died "
                        f"while writing it); it is ignored and will be cut off before the next "
                        f"write ({exc})",
                        CacheRecoveryWarning,
                        stacklevel=3,
                    )
                    return
                raise ValueError(f"{self.path}, line {lineno}: invalid cache record: {exc}") from exc
        self._needs_newline = bool(data) and not data.endswith(b"\n")

    def _index(self, record: dict[str, Any], lineno: int) -> None:
        kind = record.get("kind")
        if kind == "system":
            self._systems[str(record["sha256"])] = str(record["text"])
        elif kind == "response":
            key = record.get("key")
            if not isinstance(key, str) or not isinstance(record.get("response"), dict):
                raise ValueError("field 'key' or 'response' missing")
            if key in self._responses:
                self.duplicates += 1
            else:
                self._responses[key] = record
        else:
            raise ValueError(f"field 'kind' is {kind!r}, expected 'response' or 'system'")

    def __contains__(self, key: object) -> bool:
        return key in self._responses

    def __len__(self) -> int:
        return len(self._responses)

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored ``response`` part for ``key`` (text, model, usage, ...) or None."""
        record = self._responses.get(key)
        return None if record is None else record["response"]

    def record(self, key: str) -> dict[str, Any] | None:
        """The full stored record for ``key`` (with its request fields) or None."""
        return self._responses.get(key)

    def system_text(self, sha256: str) -> str | None:
        """A stored system prompt by its sha256."""
        return self._systems.get(sha256)

    def keys(self) -> list[str]:
        """All cached request keys, in file order."""
        return list(self._responses)

    # -- writing -----------------------------------------------------------------------------
    def put(
        self,
        key: str,
        response: dict[str, Any],
        request: LLMRequest | None = None,
        source: str = "messages",
        extra: dict[str, Any] | None = None,
    ) -> bool:
        """Append one response record (and the system prompt if new); False if ``key`` was cached.

        ``request`` may be None when only the key is known (a batch result collected after a
        restart whose request is not in the current run); the answer is still replayable by key.
        """
        record: dict[str, Any] = {"kind": "response", "key": key, "source": source, "response": response}
        lines = []
        if request is not None:
            fields = request.hashed_fields()
            sha = system_sha256(fields.pop("system"))
            record["request"] = {**fields, "system_sha256": sha}
            if sha not in self._systems:
                lines.append(({"kind": "system", "sha256": sha, "text": request.system}, sha))
        if extra:
            record.update(extra)
        with self._lock:
            if key in self._responses:
                return False
            payload = b"".join(_line(r) for r, s in lines if s not in self._systems) + _line(record)
            self._append(payload)
            for r, s in lines:
                self._systems[s] = r["text"]
            self._responses[key] = record
        return True

    def _append(self, payload: bytes) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if self._torn_at is not None:
            os.truncate(self.path, self._torn_at)
            self._torn_at = None
        if self._needs_newline:
            payload = b"\n" + payload
            self._needs_newline = False
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            view = memoryview(payload)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
