"""Typed LLM requests and responses, and the content address (cache key) of a request.

The key is the sha256 of the canonical JSON of exactly the fields that change what the model is
asked (:meth:`LLMRequest.hashed_fields`); bookkeeping (``metadata``, ``forbidden_terms``,
``cache_system``) is not hashed, so adding it never invalidates recorded answers.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mechaudit.llm.routing import canonical_model

SUMMARY_CHARS = 200


class Message(BaseModel):
    """One conversation turn; ``content`` is plain text or a list of Messages-API content blocks."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["user", "assistant"]
    content: str | list[dict[str, Any]]

    def text(self) -> str:
        """All text of the turn (text blocks joined by newlines)."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(str(b.get("text", "")) for b in self.content if b.get("type") == "text")


class LLMRequest(BaseModel):
    """One Messages-API call.

    ``temperature=None`` sends no temperature (the API default); ``version`` names the prompt/rubric
    version. ``endpoint``: the OpenAI-compatible server the request goes to (set by
    :func:`mechaudit.llm.providers.with_endpoint`; None for a vendor's API); ``json_schema``: the
    expected reply's schema, sent and hashed only for such a server. ``forbidden_terms``: every
    client refuses a request whose prompt contains one (:func:`mechaudit.llm.check_blind`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1)
    system: str = ""
    messages: list[Message] = Field(min_length=1)
    temperature: float | None = Field(default=0.0, ge=0.0, le=1.0)
    max_tokens: int = Field(default=1024, gt=0)
    version: str = "v1"
    metadata: dict[str, Any] = Field(default_factory=dict)
    forbidden_terms: tuple[str, ...] = ()
    cache_system: bool = True
    endpoint: str | None = None
    json_schema: dict[str, Any] | None = None

    @field_validator("model")
    @classmethod
    def _canonical_model(cls, value: str) -> str:
        """Drop a provider prefix that routing infers anyway (one cache key per model)."""
        return canonical_model(value)

    def hashed_fields(self) -> dict[str, Any]:
        """The fields the cache key covers, as plain JSON-able data: ``endpoint`` and ``json_schema``
        only for a custom server, so requests to the vendors' APIs keep their keys."""
        fields = {
            "model": self.model,
            "system": self.system,
            "messages": [m.model_dump() for m in self.messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "version": self.version,
        }
        if self.endpoint is not None:
            fields["endpoint"] = self.endpoint
            if self.json_schema is not None:
                fields["json_schema"] = self.json_schema
        return fields

    @cached_property
    def key(self) -> str:
        """sha256 hex digest (64 chars) of the canonical JSON of :meth:`hashed_fields`."""
        canonical = json.dumps(self.hashed_fields(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def last_user_text(self) -> str:
        """Text of the last user turn ('' if there is none)."""
        users = [m for m in self.messages if m.role == "user"]
        return users[-1].text() if users else ""

    def summary(self, chars: int = SUMMARY_CHARS) -> str:
        """One readable line: model, version, sampling and the start of the last user message."""
        text = " ".join(self.last_user_text().split())
        if len(text) > chars:
            text = text[:chars] + "..."
        return (f"model={self.model}, version={self.version}, temperature={self.temperature}, "
                f"max_tokens={self.max_tokens}, turns={len(self.messages)}, last user message: {text!r}")

    def with_turns(self, *turns: dict[str, Any]) -> LLMRequest:
        """A copy with extra turns appended (validated like the original)."""
        data = self.model_dump()
        data["messages"] = [*data["messages"], *turns]
        return LLMRequest.model_validate(data)


class Usage(BaseModel):
    """Token counts of one API call (Messages API usage fields; missing counts are 0)."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


class LLMResponse(BaseModel):
    """The answer to one request. ``cached`` is True when it came from the response cache."""

    model_config = ConfigDict(frozen=True)

    text: str
    key: str
    model: str
    usage: Usage
    cached: bool
    backend: str
    stop_reason: str | None = None
