"""What every equivalence rule shares: pair validation and the unique texts of a list of pairs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from mechaudit.errors import MechauditError
from mechaudit.schema import Hypothesis, hypothesis_text

Pair = tuple[Hypothesis, Hypothesis]


class Rule(Protocol):
    """An equivalence rule: ``same(pairs)`` is one boolean per ``(Hypothesis, Hypothesis)`` pair. It may
    also offer ``divergence_matrix(runs)``, a faster ``divergence.divergence_matrix(runs, rule)``."""

    def same(self, pairs: Sequence[Pair]) -> np.ndarray: ...


def check_pairs(pairs: Sequence[Pair]) -> list[Pair]:
    """``pairs`` as a list, or ``ValueError`` naming the first item that is not two Hypotheses."""
    if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__len__"):
        raise ValueError(f"pairs must be a list of (Hypothesis, Hypothesis); got {type(pairs).__name__}")
    out = list(pairs)
    for i, pair in enumerate(out):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"pairs[{i}] must be a (Hypothesis, Hypothesis) tuple; got {type(pair).__name__}")
        for side, h in zip("ab", pair):
            if not isinstance(h, Hypothesis):
                raise ValueError(f"pairs[{i}] side {side} must be a Hypothesis; got {type(h).__name__}")
    return out


def check_hypotheses(hypotheses: Sequence[Hypothesis]) -> list[Hypothesis]:
    """``hypotheses`` as a list, or ``ValueError`` naming the first item that is not a Hypothesis."""
    out = list(hypotheses)
    for i, h in enumerate(out):
        if not isinstance(h, Hypothesis):
            raise ValueError(f"hypotheses[{i}] must be a Hypothesis; got {type(h).__name__}")
    return out


def unique_pair_texts(pairs: Sequence[Pair]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(texts, ia, ib)``: the distinct ``hypothesis_text`` of ``pairs`` and, per pair, the index of
    side a's and b's text (int arrays of shape ``(len(pairs),)``)."""
    pairs = check_pairs(pairs)
    index: dict[str, int] = {}
    ia = np.empty(len(pairs), dtype=np.int64)
    ib = np.empty(len(pairs), dtype=np.int64)
    for i, (a, b) in enumerate(pairs):
        ia[i] = index.setdefault(hypothesis_text(a), len(index))
        ib[i] = index.setdefault(hypothesis_text(b), len(index))
    return list(index), ia, ib


def check_threshold(threshold: float, name: str = "threshold", *, low: float | None = None,
                    high: float | None = None) -> float:
    """A finite float threshold in ``[low, high]`` (bounds optional), or ``MechauditError`` (a
    ``ValueError``) naming the field; a string or a boolean is not a number here."""
    if isinstance(threshold, (str, bytes, bool)):
        raise MechauditError(f"{name} must be a number; got {threshold!r}", field=name)
    try:
        value = float(threshold)
    except (TypeError, ValueError):
        raise MechauditError(f"{name} must be a number; got {threshold!r}", field=name) from None
    if not np.isfinite(value):
        raise MechauditError(f"{name} must be finite; got {threshold!r}", field=name)
    if (low is not None and value < low) or (high is not None and value > high):
        raise MechauditError(f"{name} must be in [{low:g}, {high:g}]; got {threshold!r}", field=name)
    return value
