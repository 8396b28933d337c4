"""Structured output: find the JSON object in a reply, validate it, and phrase a repair request."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from mechaudit.llm.request import LLMRequest, LLMResponse

M = TypeVar("M", bound=BaseModel)
ERROR_CHARS = 1500
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)


class InvalidJSONError(ValueError):
    """Strict mode: the reply was still not valid JSON for the schema after all repair attempts."""


@dataclass(frozen=True)
class JSONResult(Generic[M]):
    """Outcome of a structured call: the validated ``value`` (None when ``invalid``: analyses exclude
    and count it, never default it), the last ``error`` and ``response``, and ``attempts`` (1 + repairs).
    """

    value: M | None
    invalid: bool
    error: str | None
    response: LLMResponse
    attempts: int = 1


def extract_json(text: str) -> Any:
    """The JSON value in a reply: the whole text, else a fenced ```json block, else the first
    ``{...}`` object in it. Raises ``ValueError`` naming what was tried."""
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except ValueError:
        pass
    for block in _FENCE.findall(text):
        try:
            return json.loads(block)
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
            return value
        except ValueError:
            continue
    raise ValueError("no JSON object found in the reply (tried the whole text, ```json blocks, {...})")


def parse_reply(text: str, schema: type[M]) -> M:
    """Validate the JSON in ``text`` against ``schema``; ``ValueError`` (incl. pydantic's
    ``ValidationError``) on failure."""
    return schema.model_validate(extract_json(text))


def describe_error(exc: Exception) -> str:
    """A compact, quotable error message (pydantic errors without documentation URLs)."""
    if isinstance(exc, ValidationError):
        parts = [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']} (got {e.get('input')!r})"
                 for e in exc.errors(include_url=False)]
        message = "validation failed: " + "; ".join(parts)
    else:
        message = str(exc)
    return message[:ERROR_CHARS]


def repair_request(request: LLMRequest, reply: str, error: str, schema: type[BaseModel]) -> LLMRequest:
    """The follow-up request asking the model to fix its reply; it quotes the error and the schema."""
    instruction = (
        "Your previous reply could not be used. The error was:\n"
        f"{error}\n"
        "Reply again with only one JSON object, without any other text, that satisfies this JSON "
        f"schema:\n{json.dumps(schema.model_json_schema(), sort_keys=True)}"
    )
    return request.with_turns({"role": "assistant", "content": reply.strip() or "(empty reply)"},
                              {"role": "user", "content": instruction})
