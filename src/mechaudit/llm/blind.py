"""Blindness guard: refuse prompts that mention identifiers or scores the judge must not see."""

from __future__ import annotations

import re
from collections.abc import Iterable

from mechaudit.llm.request import LLMRequest


class BlindnessError(ValueError):
    """A prompt contains a forbidden term; ``term`` is the term that was found."""

    def __init__(self, term: str, where: str = "text") -> None:
        self.term = term
        self.where = where
        super().__init__(f"forbidden term {term!r} found in {where}; the prompt was not sent")


def _pattern(term: str) -> re.Pattern[str]:
    # Word boundaries that also work for terms starting or ending with punctuation ("#3", "run-2").
    return re.compile(rf"(?<!\w){re.escape(term)}(?!\w)", re.IGNORECASE)


def check_blind(text: str, forbidden_terms: Iterable[str], where: str = "text") -> None:
    """Raise :class:`BlindnessError` naming the first forbidden term that occurs in ``text``.

    Matching is case-insensitive and whole-word: ``"run"`` matches ``"Run 3"`` but not ``"rerun"``.
    Empty or whitespace-only terms are rejected with ``ValueError``.
    """
    for term in forbidden_terms:
        if not term.strip():
            raise ValueError("forbidden_terms contains an empty term")
        if _pattern(term).search(text):
            raise BlindnessError(term, where)


def check_request_blind(request: LLMRequest) -> None:
    """Apply :func:`check_blind` with ``request.forbidden_terms`` to its system prompt and turns."""
    if not request.forbidden_terms:
        return
    check_blind(request.system, request.forbidden_terms, where="the system prompt")
    for i, message in enumerate(request.messages):
        check_blind(message.text(), request.forbidden_terms, where=f"message {i} ({message.role})")
