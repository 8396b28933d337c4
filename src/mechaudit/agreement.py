"""Agreement between two sets of binary same/different decisions on the same pairs.

Inputs are 1-D arrays of equal length with one decision per pair (bool, 0/1, or float/object with
NaN/None for a missing decision, e.g. an LLM call whose JSON stayed invalid). Pairs where either
side is missing are dropped (never defaulted); ``paired_valid`` returns what is kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd


def _check_binary(values, who: str) -> None:
    """Raise ``ValueError`` naming ``who`` unless every present value is a boolean or 0/1."""
    bad = [v for v in values if not (isinstance(v, (bool, np.bool_)) or v in (0, 1))]
    if bad:
        raise ValueError(f"{who} must be boolean or 0/1; found {bad[0]!r}")


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
        _check_binary(values, f"decisions {name}")
        out.append(values.astype(bool))
    return out[0], out[1]


def raw_agreement(a, b) -> float:
    """Fraction of pairs with the same decision in ``a`` and ``b`` (NaN if no pair is left)."""
    x, y = paired_valid(a, b)
    return float(np.mean(x == y)) if x.size else float("nan")


def flip_rate(a, b) -> float:
    """Fraction of pairs whose decision changes from ``a`` to ``b`` (= 1 - raw agreement), e.g. from
    the "ab" call to the "ba" call (order reversal) or to a repeated "ab" call."""
    return 1.0 - raw_agreement(a, b)


def cohen_kappa(a, b) -> float:
    """Cohen's kappa for two binary raters, ``(p_o - p_e) / (1 - p_e)``; NaN when chance agreement
    ``p_e`` is 1 (both raters constant and equal), as in scikit-learn."""
    x, y = paired_valid(a, b)
    if x.size == 0:
        return float("nan")
    p_o = np.mean(x == y)
    pa, pb = np.mean(x), np.mean(y)
    p_e = pa * pb + (1 - pa) * (1 - pb)
    return float("nan") if np.isclose(p_e, 1.0) else float((p_o - p_e) / (1 - p_e))


def kappa_undefined(pairs: int | None = None) -> str:
    """Why :func:`cohen_kappa` gave NaN, in words: no pair decided by both raters (``pairs`` 0), or
    both gave one and the same verdict for every pair (chance agreement 1); ``pairs`` None when the
    count is not known."""
    if pairs is not None and pairs == 0:
        return "undefined: no pair was decided by both"
    both = "both gave one and the same verdict for every pair (chance agreement 1)"
    return f"undefined: {both}" if pairs is not None else f"undefined: no pair decided by both, or {both}"


def agreement_table(decisions: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Raw agreement and kappa for every unordered pair of named decision arrays: one row per pair,
    columns method_a, method_b, n, raw_agreement, kappa."""
    names = list(decisions)
    rows = []
    for i, m in enumerate(names):
        for n in names[i + 1 :]:
            x, _ = paired_valid(decisions[m], decisions[n])
            rows.append({"method_a": m, "method_b": n, "n": int(x.size),
                         "raw_agreement": raw_agreement(decisions[m], decisions[n]),
                         "kappa": cohen_kappa(decisions[m], decisions[n])})
    return pd.DataFrame(rows, columns=["method_a", "method_b", "n", "raw_agreement", "kappa"])


def threshold_sweep(similarity: np.ndarray, thresholds: Iterable[float], others: Mapping[str, np.ndarray]
                    ) -> pd.DataFrame:
    """Agreement of "similarity >= threshold" (``similarity``: shape ``(n_pairs,)``) with each of
    ``others`` (name -> decisions on the same pairs): one row per (threshold, other) with the
    thresholded rule's same_rate, raw_agreement and kappa."""
    sim = np.asarray(similarity, dtype=float).ravel()
    rows = []
    for t in thresholds:
        same = sim >= float(t)
        for name, dec in others.items():
            rows.append({"threshold": float(t), "other": name,
                         "same_rate": float(same.mean()) if same.size else float("nan"),
                         "raw_agreement": raw_agreement(same, dec), "kappa": cohen_kappa(same, dec)})
    return pd.DataFrame(rows, columns=["threshold", "other", "same_rate", "raw_agreement", "kappa"])


def complete_agreement_interval(similarity: np.ndarray, reference) -> tuple[float, float] | None:
    """The thresholds ``(max different, min same]`` at which "similarity >= t" agrees with
    ``reference`` on every pair (``-inf``/``inf`` for an empty class; missing reference decisions
    dropped), or None when no real threshold does."""
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


# -- judge-model axis -------------------------------------------------------------------------


def verdict_matrix(decisions: Mapping[str, object]) -> pd.DataFrame:
    """Decisions of several judges on the same pairs (name -> per-pair bool, 0/1 or None/NaN for
    undecided, all of one length) as a judges x pairs DataFrame of nullable booleans."""
    rows = {}
    n = None
    for name, values in decisions.items():
        s = pd.Series(np.asarray(values, dtype=object).ravel())
        if n is None:
            n = len(s)
        elif len(s) != n:
            raise ValueError(f"judge {name!r} has {len(s)} decisions, the first judge {n}")
        _check_binary(s[s.notna()], f"judge {name!r}: decisions")
        rows[str(name)] = pd.array([None if pd.isna(v) else bool(v) for v in s], dtype="boolean")
    if not rows:
        raise ValueError("no judges given")
    return pd.DataFrame.from_dict(rows, orient="index").astype("boolean")


def model_agreement(verdicts: pd.DataFrame | Mapping[str, object]) -> pd.DataFrame:
    """:func:`agreement_table` of judges (the paper's App. D table), columns model_a and model_b;
    ``verdicts``: a :func:`verdict_matrix` or a mapping accepted by it."""
    matrix = verdicts if isinstance(verdicts, pd.DataFrame) else verdict_matrix(verdicts)
    if len(matrix) < 2:
        raise ValueError(f"agreement needs two or more judges; got {list(matrix.index)}")
    table = agreement_table({name: matrix.loc[name].to_numpy(dtype=object) for name in matrix.index})
    return table.rename(columns={"method_a": "model_a", "method_b": "model_b"})


def agreement_range(table: pd.DataFrame) -> dict[str, float]:
    """Lowest and highest raw agreement (%) and kappa of an agreement table (NaN rows ignored):
    keys raw_agreement_pct_low/high, kappa_low/high."""
    raw, kappa = 100 * table["raw_agreement"].astype(float), table["kappa"].astype(float)
    return {"raw_agreement_pct_low": float(raw.min()), "raw_agreement_pct_high": float(raw.max()),
            "kappa_low": float(kappa.min()), "kappa_high": float(kappa.max())}


def estimate_range(estimates: pd.DataFrame) -> pd.DataFrame:
    """How far an estimate moves with the judge (Fig. 5): per quantity (column of the models x
    quantities ``estimates``; NaN ignored) its low, high, spread, n_models with a value, and the
    first model at each extreme (model_low, model_high)."""
    values = estimates.apply(pd.to_numeric, errors="raise").astype(float)
    rows = []
    for quantity in values.columns:
        col = values[quantity].dropna()
        low, high = (float(col.min()), float(col.max())) if len(col) else (float("nan"), float("nan"))
        rows.append({"quantity": quantity, "low": low, "high": high, "spread": high - low, "n_models": len(col),
                     "model_low": col.idxmin() if len(col) else None, "model_high": col.idxmax() if len(col) else None})
    return pd.DataFrame(rows, columns=["quantity", "low", "high", "spread", "n_models", "model_low", "model_high"]
                        ).set_index("quantity")


__all__ = ["paired_valid", "raw_agreement", "flip_rate", "cohen_kappa", "kappa_undefined", "agreement_table",
           "threshold_sweep", "complete_agreement_interval", "verdict_matrix", "model_agreement", "agreement_range",
           "estimate_range"]
