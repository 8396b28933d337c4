"""The Anthropic Messages API as the tests fake it: one reply body, built in one place.

Tests never mock our own functions; they hand the SDK an ``httpx.MockTransport`` whose handler
answers with these bodies.
"""

from __future__ import annotations

import httpx


def message_json(text: str, model: str = "claude-opus-4-6", msg_id: str = "msg_0",
                 usage: dict[str, int] | None = None) -> dict:
    """A successful Messages API reply whose single text block is ``text``."""
    return {
        "id": msg_id, "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": usage if usage is not None else {"input_tokens": 1, "output_tokens": 1},
    }


def message_response(text: str, model: str = "claude-opus-4-6", msg_id: str = "msg_0",
                     usage: dict[str, int] | None = None) -> httpx.Response:
    """``message_json`` as an HTTP 200 response for a ``MockTransport`` handler."""
    return httpx.Response(200, json=message_json(text, model, msg_id, usage))
