"""Agreement between two sets of binary same/different decisions on the same pairs.

Inputs are 1-D arrays of equal length with one decision per pair (bool, 0/1, or float/object with
NaN/None for a missing decision, e.g. an LLM call whose JSON stayed invalid). Pairs where either
side is missing are dropped (never defaulted); ``paired_valid`` returns what is kept.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np
import pandas as pd


def paired_valid(a, b) -> tuple[np.ndarray, np.ndarray]:
    """The decisions of ``a`` and ``b`` where both are present, as two bool arrays."""
    a = pd.Series(np.asarray(a, dtype=object).ravel())
    b = pd.Series(np.asarray(b, dtype=object).ravel())
    if len(a) != len(b):
        raise ValueError(f"decision arrays differ in length: {len(a)} vs {len(b)}")
    keep = (a.notna() & b.notna()).to_numpy()
    out = []
    for name, s in (("a", a[keep]), ("b", b[keep])):
        values = s.to_numpy()
        bad = [v for v in values if not (isinstance(v, (bool, np.bool_)) or v in (0, 1))]
        if bad:
            raise ValueError(f"decisions {name} must be boolean or 0/1; found {bad[0]!r}")
        out.append(values.astype(bool))
    return out[0], out[1]


def raw_agreement(a, b) -> float:
    """Fraction of pairs with the same decision in ``a`` and ``b`` (NaN if no pair is left)."""
    x, y = paired_valid(a, b)
    return float(np.mean(x == y)) if x.size else float("nan")


def flip_rate(a, b) -> float:
    """Fraction of pairs whose decision changes from ``a`` to ``b`` (= 1 - raw agreement).

    Use with ``a`` = first "ab" call and ``b`` = the "ba" call for the order-reversal flip rate, or
    ``b`` = the repeated "ab" call for the repeat flip rate.
    """
    return 1.0 - raw_agreement(a, b)


def cohen_kappa(a, b) -> float:
    """Cohen's kappa for two binary raters: ``(p_o - p_e) / (1 - p_e)``.

    ``p_o`` is raw agreement, ``p_e = p_a p_b + (1 - p_a)(1 - p_b)`` with ``p_a``, ``p_b`` each
    rater's rate of "same". NaN when ``p_e = 1`` (both raters constant and equal: kappa undefined),
    as in scikit-learn.
    """
    x, y = paired_valid(a, b)
    if x.size == 0:
        return float("nan")
    p_o = np.mean(x == y)
    pa, pb = np.mean(x), np.mean(y)
    p_e = pa * pb + (1 - pa) * (1 - pb)
    return float("nan") if np.isclose(p_e, 1.0) else float((p_o - p_e) / (1 - p_e))


def agreement_table(decisions: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Raw agreement and kappa for every unordered pair of named decision arrays.

    Columns: method_a, method_b, n, raw_agreement, kappa (one row per pair of methods).
    """
    names = list(decisions)
    rows = []
    for i, m in enumerate(names):
        for n in names[i + 1 :]:
            x, _ = paired_valid(decisions[m], decisions[n])
            rows.append(
                {
                    "method_a": m,
                    "method_b": n,
                    "n": int(x.size),
                    "raw_agreement": raw_agreement(decisions[m], decisions[n]),
                    "kappa": cohen_kappa(decisions[m], decisions[n]),
                }
            )
    return pd.DataFrame(rows, columns=["method_a", "method_b", "n", "raw_agreement", "kappa"])


def threshold_sweep(
    similarity: np.ndarray, thresholds: Iterable[float], others: Mapping[str, np.ndarray]
) -> pd.DataFrame:
    """Agreement of a thresholded similarity rule with other methods' decisions, per threshold.

    ``similarity``: shape ``(n_pairs,)``; a pair is "same" iff similarity >= threshold.
    ``others``: name -> decisions on the same pairs. One row per (threshold, other): threshold,
    other, same_rate (of the thresholded rule), raw_agreement, kappa.
    """
    sim = np.asarray(similarity, dtype=float).ravel()
    rows = []
    for t in thresholds:
        same = sim >= float(t)
        for name, dec in others.items():
            rows.append(
                {
                    "threshold": float(t),
                    "other": name,
                    "same_rate": float(same.mean()) if same.size else float("nan"),
                    "raw_agreement": raw_agreement(same, dec),
                    "kappa": cohen_kappa(same, dec),
                }
            )
    return pd.DataFrame(rows, columns=["threshold", "other", "same_rate", "raw_agreement", "kappa"])


def complete_agreement_interval(similarity: np.ndarray, reference) -> tuple[float, float] | None:
    """Thresholds at which "similarity >= t" agrees with ``reference`` on every pair, or None.

    Complete agreement needs every pair the reference calls same to score above every pair it
    calls different; then every ``t`` in ``(max different, min same]`` works and the interval's
    ends are returned (``-inf``/``inf`` when one class is empty). Missing reference decisions are
    dropped. This is exact over all real thresholds, not only over a sweep grid.
    """
    sim = np.asarray(similarity, dtype=float).ravel()
    ref = pd.Series(np.asarray(reference, dtype=object).ravel())
    if len(ref) != len(sim):
        raise ValueError(f"similarity has {len(sim)} pairs, reference {len(ref)}")
    keep = ref.notna().to_numpy()
    _, same = paired_valid(np.ones(keep.sum(), dtype=bool), ref[keep])
    s = sim[keep]
    low = float(s[~same].max()) if (~same).any() else float("-inf")
    high = float(s[same].min()) if same.any() else float("inf")
    return (low, high) if low < high else None
