"""The LLM layer's exceptions: a leaf module (imports only :mod:`mechaudit.llm.request`), so the
client, the batch runner and the planners can all raise and catch them without importing each other.
"""

from __future__ import annotations

from pathlib import Path

from mechaudit.llm.request import LLMRequest

API_KEY_ENV = "ANTHROPIC_API_KEY"


class MissingAPIKeyError(RuntimeError):
    """The anthropic backend needs ``ANTHROPIC_API_KEY`` in the environment."""


class ReplayMissError(LookupError):
    """The replay backend has no recorded answer for a request; ``key`` names it."""

    def __init__(self, request: LLMRequest, cache_path: Path) -> None:
        self.key = request.key
        super().__init__(f"no recorded response for request {request.key} in {cache_path} "
                         f"({request.summary()}). Replay answers only recorded requests: record it with "
                         f"backend='anthropic' (needs {API_KEY_ENV}), or check that model, prompt and version "
                         f"match the recording.")


class APIReplyError(RuntimeError):
    """The API answered HTTP 200 with a body that is not a Messages API reply; nothing was cached."""

    def __init__(self, request: LLMRequest, detail: str) -> None:
        self.key = request.key
        super().__init__(f"request {request.key} (model {request.model}): the API answered HTTP 200 but {detail}; "
                         "nothing was cached. Check the API address (ANTHROPIC_BASE_URL, a proxy) and run again.")


class BatchError(RuntimeError):
    """Some batch requests did not succeed; ``failed`` maps cache key -> result type/error."""

    def __init__(self, failed: dict[str, str]) -> None:
        self.failed = failed
        sample = "; ".join(f"{k[:16]}...: {v}" for k, v in list(failed.items())[:5])
        super().__init__(f"{len(failed)} batch request(s) did not succeed ({sample}). Succeeded results are "
                         "cached; run again to resubmit only the failed ones.")
