"""Reference judges: the three rubrics applied literally to the structured causal chain.

The offline stand-in for the LLM judge: they read only step ids (``mechaudit.schema.mechanism_key``),
never wording, and are symmetric in (A, B).

Components of a pair (``chain = (initiating, *route, terminal)`` of step ids): ``initiating`` (equal
ids), ``route`` (one route an ordered subsequence of the other: added detail is allowed, a replaced
or reordered step is not), ``terminal`` (equal, or the shorter chain's terminal occurs in the longer;
of two chains of equal length, either one's terminal in the other).

Rubrics: ``"full"``: equal initiating events and the shorter chain an ordered subsequence of the
longer; ``"step"``: all three components same; ``"none"`` (no mechanism definition): the Jaccard
index of the two sets of step ids is >= ``jaccard_threshold`` (default 0.5).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from mechaudit.rules.base import Pair, check_pairs, check_threshold
from mechaudit.schema import Hypothesis, mechanism_key

RUBRICS = ("full", "step", "none")


def is_subsequence(short: Sequence[str], long: Sequence[str]) -> bool:
    """True iff ``short`` occurs in ``long`` in order (not necessarily contiguously)."""
    it = iter(long)
    return all(any(x == y for y in it) for x in short)


def chain_ids(h: Hypothesis) -> tuple[str, ...]:
    """Ordered step ids ``(initiating, *route, terminal)`` from ``mechanism_key``."""
    initiating, route, terminal = mechanism_key(h)
    return (initiating, *route, terminal)


def nested(a: Sequence[str], b: Sequence[str]) -> bool:
    """The shorter of ``a`` and ``b`` is an ordered subsequence of the longer (symmetric)."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    return is_subsequence(short, long)


def pair_components(a: Hypothesis, b: Hypothesis) -> dict[str, float | bool]:
    """Component judgements of one pair: initiating, route, terminal (bool) and jaccard (float)."""
    init_a, route_a, term_a = mechanism_key(a)
    init_b, route_b, term_b = mechanism_key(b)
    ids_a, ids_b = chain_ids(a), chain_ids(b)
    union = set(ids_a) | set(ids_b)
    # chains of equal length are each "the shorter": either terminal may occur in the other chain
    truncated = ((len(ids_a) <= len(ids_b) and term_a in ids_b)
                 or (len(ids_b) <= len(ids_a) and term_b in ids_a))
    return {
        "initiating": init_a == init_b,
        "route": nested(route_a, route_b),
        "terminal": term_a == term_b or truncated,
        "chain_nested": nested(ids_a, ids_b),
        "jaccard": len(set(ids_a) & set(ids_b)) / len(union) if union else 1.0,
    }


class ReferenceJudge:
    """Deterministic judge applying ``rubric`` ("full", "step" or "none") to step ids; see module doc."""

    def __init__(self, rubric: str = "full", *, jaccard_threshold: float = 0.5):
        if rubric not in RUBRICS:
            raise ValueError(f"rubric must be one of {RUBRICS}; got {rubric!r}")
        self.rubric = rubric
        self.jaccard_threshold = check_threshold(jaccard_threshold, "jaccard_threshold", low=0.0, high=1.0)

    def __repr__(self) -> str:
        extra = f", jaccard_threshold={self.jaccard_threshold}" if self.rubric == "none" else ""
        return f"ReferenceJudge(rubric={self.rubric!r}{extra})"

    def components(self, pairs: Sequence[Pair]) -> pd.DataFrame:
        """One row per pair: initiating, route, terminal, chain_nested, jaccard and ``same`` (the verdict)."""
        rows = [pair_components(a, b) for a, b in check_pairs(pairs)]
        df = pd.DataFrame(rows, columns=["initiating", "route", "terminal", "chain_nested", "jaccard"])
        df = df.astype({"initiating": bool, "route": bool, "terminal": bool, "chain_nested": bool, "jaccard": float})
        if self.rubric == "full":
            df["same"] = df["initiating"] & df["chain_nested"]
        elif self.rubric == "step":
            df["same"] = df["initiating"] & df["route"] & df["terminal"]
        else:
            df["same"] = df["jaccard"] >= self.jaccard_threshold
        return df

    def same(self, pairs: Sequence[Pair]) -> np.ndarray:
        """Overall verdict per pair, bool array of shape ``(len(pairs),)``."""
        return self.components(pairs)["same"].to_numpy(dtype=bool)
