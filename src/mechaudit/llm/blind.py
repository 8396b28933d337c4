"""Blindness guard: refuse prompts that mention identifiers or scores the judge must not see."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from mechaudit.llm.request import LLMRequest


class BlindnessError(ValueError):
    """A prompt contains a forbidden term; ``term`` is the term that was found."""

    def __init__(self, term: str, where: str = "text") -> None:
        self.term = term
        self.where = where
        super().__init__(f"forbidden term {term!r} found in {where}; the prompt was not sent")


#: The non-ASCII characters that a case-insensitive regex matches to an ASCII letter (Python's
#: extra case rules), mapped to that letter; a test recomputes the set over every code point.
ASCII_CASE_EXTRAS = {"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"}
_FOLD = str.maketrans(ASCII_CASE_EXTRAS)


@lru_cache(maxsize=4096)
def _pattern(term: str) -> re.Pattern[str]:
    # Word boundaries that also work for terms starting or ending with punctuation ("#3", "run-2").
    return re.compile(rf"(?<!\w){re.escape(term)}(?!\w)", re.IGNORECASE)


def fold(text: str) -> str:
    """``text`` lower-cased with ``ASCII_CASE_EXTRAS`` applied: every case-insensitive regex match
    of an ASCII term in ``text`` is a plain substring of ``fold(text)``."""
    return text.lower() if text.isascii() else text.translate(_FOLD).lower()


def find_forbidden(text: str, forbidden_terms: Iterable[str]) -> str | None:
    """The first term (in the given order) that occurs in ``text`` as a whole word, ignoring case (a
    substring prefilter on ``fold(text)`` first, then the word-boundary regex: the regex's answer)."""
    folded = None
    for term in forbidden_terms:
        if not term.strip():
            raise ValueError("forbidden_terms contains an empty term")
        if term.isascii():
            folded = fold(text) if folded is None else folded
            if term.lower() not in folded:
                continue
        if _pattern(term).search(text):
            return term
    return None


def check_blind(text: str, forbidden_terms: Iterable[str], where: str = "text") -> None:
    """Raise :class:`BlindnessError` naming the first forbidden term in ``text`` (case-insensitive,
    whole words: ``"run"`` matches ``"Run 3"``, not ``"rerun"``); an empty term is a ``ValueError``."""
    term = find_forbidden(text, forbidden_terms)
    if term is not None:
        raise BlindnessError(term, where)


def check_request_blind(request: LLMRequest) -> None:
    """Apply :func:`check_blind` with ``request.forbidden_terms`` to its system prompt and turns."""
    if not request.forbidden_terms:
        return
    check_blind(request.system, request.forbidden_terms, where="the system prompt")
    for i, message in enumerate(request.messages):
        check_blind(message.text(), request.forbidden_terms, where=f"message {i} ({message.role})")
