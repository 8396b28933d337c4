"""What each reviewer role compares. Changing any text here requires a new ``RUBRIC_VERSION``.

The wording is this project's own. The texts avoid every forbidden term (see
:data:`mechaudit.tau.cards.FORBIDDEN_TERMS`) even as a substring, so the blindness guard checks
only the cards and the model's rationales.
"""

from __future__ import annotations

RUBRIC_VERSION = "mechaudit_rubric_v1"
ROLES = ("Methodology", "Novelty", "Storyteller")

_RUBRICS = {
    "Methodology": (
        "Judge technical soundness. Prefer the card whose method fits its stated problem, whose "
        "steps are concrete enough to be carried out, whose assumptions are stated, and whose "
        "claims could be checked by an experiment. Penalise vague mechanisms and gaps between "
        "the method and the claimed contribution."
    ),
    "Novelty": (
        "Judge originality. Prefer the card whose problem framing or mechanism departs from the "
        "usual recipe in a meaningful way, rather than a routine combination of known parts or "
        "a change of dataset. Penalise claims of newness that the method does not support."
    ),
    "Storyteller": (
        "Judge clarity and motivation. Prefer the card whose problem is stated sharply, whose "
        "method follows from it, and whose contribution is easy to restate in one sentence. "
        "Penalise jargon, unclear stakes and contributions that do not connect to the problem."
    ),
}


def get_rubric(role: str) -> str:
    """Rubric text of ``role`` (one of :data:`ROLES`)."""
    if role not in _RUBRICS:
        raise ValueError(f"unknown role {role!r}; expected one of {ROLES}")
    return _RUBRICS[role]
