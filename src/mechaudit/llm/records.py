"""SDK ``Message`` -> cache record helpers: a leaf module shared by the client and the batch runner."""

from __future__ import annotations

from typing import Any

from mechaudit.llm.errors import APIReplyError
from mechaudit.llm.request import LLMRequest, Usage


def check_message(message: Any, request: LLMRequest) -> None:
    """Raise :class:`APIReplyError` unless ``message`` looks like an SDK ``Message`` (content
    blocks and usage); the SDK returns a plain string for a non-JSON body."""
    if isinstance(message, (str, bytes)):
        text = " ".join((message.decode(errors="replace") if isinstance(message, bytes) else message).split())
        raise APIReplyError(request, f"the body is not JSON (starts {text[:80]!r})")
    missing = [f for f in ("content", "usage", "model") if getattr(message, f, None) is None]
    if missing or not isinstance(message.content, list):
        raise APIReplyError(request, f"the JSON body lacks the Messages fields {missing or ['content']}")


def message_text(message: Any) -> str:
    """Concatenated text blocks of an SDK ``Message``."""
    return "".join(getattr(block, "text", "") for block in message.content if block.type == "text")


def message_record(message: Any) -> dict[str, Any]:
    """The cache's ``response`` part for an SDK ``Message`` (no headers, no credentials)."""
    return {"text": message_text(message), "model": message.model, "stop_reason": message.stop_reason,
            "id": message.id, "usage": {name: getattr(message.usage, name) or 0 for name in Usage.model_fields}}
