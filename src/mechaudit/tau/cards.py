"""Blind cards: the only information about a paper or story a judge may see.

Three fields, each flattened and cut to its ``FIELD_CAPS`` length (so longer texts cannot win by
length); identifiers, titles, links and scores never enter, and any forbidden term is masked, so a
card never trips the blindness guard. Changing fields, caps or mapping needs a new ``CARD_VERSION``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict

CARD_VERSION = "blind_card_v2_minimal"
FIELD_CAPS = {"problem": 220, "method": 280, "contrib": 320}
#: Terms that must never occur in a judge prompt or a judge rationale.
FORBIDDEN_TERMS = ("score", "score10", "paper_id", "title", "author", "link", "doi", "arxiv", "pattern_id",
                   "url")
MASK = "[masked]"
ELLIPSIS = "\u2026"
#: Story fields feeding each card field (first non-empty wins).
STORY_FIELDS = {
    "problem": ("problem_framing", "problem", "abstract"),
    "method": ("method_skeleton", "method"),
    "contrib": ("innovation_claims", "contrib", "contributions"),
}
PAPER_FIELDS = {
    "problem": ("problem", "abstract"),
    "method": ("method",),
    "contrib": ("contrib", "contributions"),
}
_FORBIDDEN_RE = re.compile(
    "|".join(rf"(?<!\w){re.escape(t)}(?!\w)" for t in sorted(FORBIDDEN_TERMS, key=len, reverse=True)),
    re.IGNORECASE,
)


class Card(BaseModel):
    """A blind card; ``key`` identifies its content (used by the simulated judge's lookup)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    problem: str
    method: str
    contrib: str
    card_version: str = CARD_VERSION

    def render(self) -> str:
        """The card as it appears in a prompt (three labelled lines)."""
        return f"Problem: {self.problem}\nMethod: {self.method}\nContribution: {self.contrib}"

    @cached_property
    def key(self) -> str:
        """First 16 hex digits of the SHA-256 of :meth:`render` (computed once per card)."""
        return hashlib.sha256(self.render().encode("utf-8")).hexdigest()[:16]


def _card(source: Mapping[str, Any], fields: Mapping[str, tuple[str, ...]]) -> Card:
    """Each card field from the first non-empty of its ``fields`` keys (a list joined by "; "): whitespace
    flattened, every forbidden term (whole word, any case) masked, cut to its cap (with an ellipsis)."""
    values = {}
    for name, keys in fields.items():
        text = next((source[k] for k in keys if source.get(k)), "")
        if isinstance(text, (list, tuple)):
            text = "; ".join(map(str, text))
        flat, cap = " ".join(_FORBIDDEN_RE.sub(MASK, str(text or "")).split()), FIELD_CAPS[name]
        values[name] = flat if len(flat) <= cap else flat[: cap - 1].rstrip() + ELLIPSIS
    return Card(**values)


def build_story_card(story: Mapping[str, Any]) -> Card:
    """Card of a story under review (problem_framing, method_skeleton, innovation_claims)."""
    return _card(story, STORY_FIELDS)


def build_paper_card(paper: Mapping[str, Any]) -> Card:
    """Card of an anchor paper (problem, method, contrib); ids, titles and stats are dropped."""
    return _card(paper, PAPER_FIELDS)
