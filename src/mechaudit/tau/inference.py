"""Deterministic score inference from blind comparisons against anchors (the Score Layer).

A judge says, for each anchor ``i`` with a known score ``score10_i`` (1-10 scale), whether the
item under review is better, tied or worse, with a strength. The score ``S`` is the grid point
that minimises the weighted, clipped cross-entropy of the logistic model

    p_i(S) = sigmoid((S - score10_i) / tau),    loss(S) = sum_i w_i * CE(y_i, p_i(S)),

with ``y`` = 1 / 0.5 / 0 for better / tie / worse and ``w_i`` = anchor weight x strength weight
(weak 1, medium 2, strong 3). The semantics follow the original Idea2Paper reviewer exactly
(first minimum on a 1..10 grid, the "loss <= min + 1.92" band as interval, monotonic violations,
average strength); the grid is built from integers and rounded, so 10.0 is a grid point.

Two additions never change the default numbers: a likelihood-ratio interval on weights rescaled
to Kish's effective sample size (``profile_ci_low``/``profile_ci_high``; unchanged when all
weights are multiplied by a constant, unlike the 1.92 band) and a saturation flag.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.special import expit

from mechaudit.errors import MechauditError

#: Soft label per judgement; any other value is a tie (0.5).
LABELS = {"better": 1.0, "worse": 0.0}
TIE_LABEL = 0.5
#: Weight multiplier per strength; any other value weighs 1.
STRENGTH_WEIGHTS = {"weak": 1.0, "medium": 2.0, "strong": 3.0}
#: Probabilities are clipped to [EPS, 1 - EPS] before the logarithm.
EPS = 1e-9
#: The band "loss <= min loss + CI_DELTA" is the original interval (half the chi2(1) 95% point).
CI_DELTA = 1.92
#: Half the chi2(1) 0.95 quantile, used by the scale-free likelihood-ratio interval.
LR_DELTA_95 = 3.841458820694124 / 2
#: Defaults the original applied to missing anchor fields and to an unusable tau.
DEFAULT_SCORE10 = 5.0
DEFAULT_ANCHOR_WEIGHT = 1.0
DEFAULT_TAU = 1.0
GRID_LOW, GRID_HIGH = 1.0, 10.0


def label_of(judgement: Any) -> float:
    """Soft label of a judgement: better 1.0, worse 0.0, anything else (tie, missing) 0.5."""
    return LABELS.get(str(judgement).strip().lower(), TIE_LABEL) if judgement is not None else TIE_LABEL


def strength_weight(strength: Any) -> float:
    """Weight multiplier of a strength: weak 1, medium 2, strong 3; anything else 1."""
    return STRENGTH_WEIGHTS.get(str(strength).strip().lower(), 1.0) if strength is not None else 1.0


def effective_tau(tau: float | None) -> float:
    """``tau`` if it is a positive number, else the original's fallback 1.0."""
    try:
        value = float(tau)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return DEFAULT_TAU
    return value if np.isfinite(value) and value > 0 else DEFAULT_TAU


def score_grid(grid_step: float = 0.01, low: float = GRID_LOW, high: float = GRID_HIGH) -> np.ndarray:
    """The rounded grid ``low, low + step, ..., high`` (901 points for step 0.01)."""
    if not grid_step > 0:
        raise ValueError(f"grid_step must be positive, got {grid_step!r}")
    n = int(round((high - low) / grid_step)) + 1
    return np.round(low + grid_step * np.arange(n), 10)


@functools.lru_cache(maxsize=16)
def _score_grid(grid_step: float) -> np.ndarray:
    """:func:`score_grid` of ``grid_step``, computed once (read-only)."""
    grid = score_grid(grid_step)
    grid.flags.writeable = False
    return grid


def clipped_ce(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Elementwise cross-entropy ``-(y log p + (1 - y) log(1 - p))`` with p clipped to [EPS, 1-EPS]."""
    p = np.clip(p, EPS, 1.0 - EPS)
    return -(y * np.log(p) + (1.0 - y) * np.log1p(-p))


def _number(value: Any, default: float, i: int, name: str) -> float:
    """``value`` of ``anchors[i].name`` as a float (``default`` when missing)."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise MechauditError(f"must be a number, got {value!r}", field=f"anchors[{i}].{name}")
    return float(value)


def unrecognised(comparisons: Sequence[Mapping[str, Any]], anchor_ids: Sequence[str]) -> dict[str, list[int]]:
    """Indices of comparisons whose ``anchor_id`` is not one of ``anchor_ids`` (``unknown_anchor_id``),
    whose ``judgement`` is not better/tie/worse (``judgement``; a missing one included) or whose
    ``strength`` is given but not weak/medium/strong (``strength``)."""
    known = set(anchor_ids)
    out: dict[str, list[int]] = {"unknown_anchor_id": [], "judgement": [], "strength": []}
    for j, c in enumerate(comparisons):
        if str(c.get("anchor_id")) not in known:
            out["unknown_anchor_id"].append(j)
        if str(c.get("judgement")).strip().lower() not in (*LABELS, "tie"):
            out["judgement"].append(j)
        if c.get("strength") is not None and str(c["strength"]).strip().lower() not in STRENGTH_WEIGHTS:
            out["strength"].append(j)
    return out


def observations(
    anchors: Sequence[Mapping[str, Any]], comparisons: Sequence[Mapping[str, Any]], strict: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Align comparisons to anchors by ``anchor_id`` (default ``A1..An`` in anchor order).

    Returns ``(score10, y, strength_w, anchor_w)``, each of shape (n_anchors,). An anchor without a
    comparison counts as tie / weak (the last comparison wins when an id repeats). Missing score10
    is 5.0, missing weight 1.0. An anchor or comparison that is not a mapping, or a score10/weight
    that is not a number, raises ``MechauditError`` naming the field (``anchors[2].score10``).
    With ``strict`` a comparison for an unknown anchor id, a judgement other than
    better/tie/worse or an unknown strength raises too; without, they are ignored / count as a
    tie / weigh 1 (the original's behaviour).
    """
    for name, items in (("anchors", anchors), ("comparisons", comparisons)):
        for i, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise MechauditError(f"must be a mapping (JSON object), got {item!r}", field=f"{name}[{i}]")
    ids = [str(a.get("anchor_id") or f"A{i + 1}") for i, a in enumerate(anchors)]
    if strict:
        bad = unrecognised(comparisons, ids)
        for key, what in (("unknown_anchor_id", "anchor_id"), ("judgement", "judgement"), ("strength", "strength")):
            if bad[key]:
                j = bad[key][0]
                value = comparisons[j].get(what)
                expected = {"anchor_id": f"one of the anchors' ids {', '.join(ids)}",
                            "judgement": "better, tie or worse", "strength": "weak, medium or strong"}[what]
                raise MechauditError(
                    f"{value!r} is not {expected} (strict=False counts it as "
                    f"{'ignored' if what == 'anchor_id' else 'a tie' if what == 'judgement' else 'weight 1'})",
                    field=f"comparisons[{j}].{what}",
                )
    by_id = {str(c.get("anchor_id")): c for c in comparisons}
    rows = []
    for i, anchor in enumerate(anchors):
        comp = by_id.get(ids[i], {})
        rows.append((_number(anchor.get("score10"), DEFAULT_SCORE10, i, "score10"), label_of(comp.get("judgement")),
                     strength_weight(comp.get("strength")),
                     _number(anchor.get("weight"), DEFAULT_ANCHOR_WEIGHT, i, "weight")))
    score10, y, sw, aw = np.array(rows, dtype=float).reshape(len(anchors), 4).T.copy()
    return score10, y, sw, aw


def loss_curve(score10: np.ndarray, y: np.ndarray, w: np.ndarray, tau: float, grid: np.ndarray) -> np.ndarray:
    """Weighted clipped cross-entropy at every grid point; shape (len(grid),)."""
    p = expit((grid[:, None] - score10[None, :]) / tau)
    return clipped_ce(y[None, :], p) @ w


@functools.lru_cache(maxsize=2048)
def _grid_column(score10: float, y: float, tau: float, grid_step: float) -> np.ndarray:
    """One anchor's column of :func:`loss_curve`'s matrix on ``score_grid(grid_step)``, element by
    element the same computation; read-only. Cached (at most 2048 columns, about 15 MB at step
    0.01): a study scores the same anchors, with the same answer and tau, over and over."""
    column = clipped_ce(np.float64(y), expit((_score_grid(grid_step) - score10) / tau))
    column.flags.writeable = False
    return column


def _grid_loss(score10: np.ndarray, y: np.ndarray, w: np.ndarray, tau: float, grid_step: float) -> np.ndarray:
    """``loss_curve(score10, y, w, tau, score_grid(grid_step))`` to the last bit (the same matrix,
    assembled from cached columns, times ``w``)."""
    return np.column_stack([_grid_column(float(s), float(v), tau, grid_step) for s, v in zip(score10, y)]) @ w


def band(grid: np.ndarray, loss: np.ndarray, delta: float) -> tuple[float, float]:
    """Lowest and highest grid point with ``loss <= min(loss) + delta``."""
    inside = grid[loss <= loss.min() + delta]
    return float(inside.min()), float(inside.max())


def monotonic_violations(score10: np.ndarray, y: np.ndarray) -> int:
    """Adjacent steps, after a stable sort by anchor score, where ``y`` rises by more than 0.1."""
    order = np.argsort(score10, kind="stable")
    ys = y[order]
    return int(np.sum(ys[1:] > ys[:-1] + 0.1))


def kish_scale(w: np.ndarray) -> float:
    """Factor that rescales weights to sum to Kish's effective sample size ``(sum w)^2 / sum w^2``."""
    total, square = float(w.sum()), float((w**2).sum())
    return total / square if square > 0 else 1.0


def infer_score(
    anchors: Sequence[Mapping[str, Any]],
    comparisons: Sequence[Mapping[str, Any]],
    tau: float | None,
    grid_step: float = 0.01,
    *,
    strict: bool = True,
) -> tuple[float, dict[str, Any]]:
    """Infer the 1-10 score from blind comparisons; returns ``(score, diagnostics)``.

    ``anchors``: mappings with ``score10`` (1-10), ``weight`` (>= 0) and optionally ``anchor_id``.
    ``comparisons``: mappings with ``anchor_id``, ``judgement`` (better/tie/worse) and ``strength``
    (weak/medium/strong). ``tau`` <= 0 or missing means 1.0.

    Diagnostics (original keys): ``loss`` (minimum weighted loss, nats), ``avg_strength``
    (mean strength weight, 1..3), ``monotonic_violations``, ``ci_low``/``ci_high`` (the
    loss + 1.92 band). Extras: ``tau`` (used), ``n_anchors``, ``saturated`` (True when the optimum
    sits on a grid end), ``saturated_at`` ("low", "high" or None), ``profile_ci_low``/
    ``profile_ci_high`` (95% likelihood-ratio interval with Kish-rescaled weights, independent of
    the overall weight scale).

    ``strict`` (default): a comparison naming an unknown anchor id, a judgement other than
    better/tie/worse (``"beter"``) or an unknown strength raises ``MechauditError`` (a
    ``ValueError``) naming the field, e.g. ``comparisons[1].judgement``. ``strict=False`` keeps the
    original's behaviour (ignored / tie / weight 1) and reports the counts in the diagnostics:
    ``n_unknown_anchor_ids``, ``n_unrecognised_judgements``, ``n_unrecognised_strengths``.
    """
    if len(anchors) == 0:
        raise ValueError("infer_score needs at least one anchor; got none")
    tau_used = effective_tau(tau)
    grid = _score_grid(grid_step)
    score10, y, sw, aw = observations(anchors, comparisons, strict=strict)
    w = aw * sw
    if np.any(w < 0) or not np.all(np.isfinite(w)) or not np.all(np.isfinite(score10)):
        raise ValueError("anchor weights must be finite and >= 0 and score10 finite")
    loss = _grid_loss(score10, y, w, tau_used, grid_step)
    best = int(np.argmin(loss))  # first minimum: ties keep the lower score
    score = float(grid[best])
    ci_low, ci_high = band(grid, loss, CI_DELTA)
    p_low, p_high = band(grid, loss * kish_scale(w), LR_DELTA_95)
    at = "low" if best == 0 else "high" if best == len(grid) - 1 else None
    diag = {
        "loss": float(loss[best]),
        "avg_strength": float(sw.mean()),
        "monotonic_violations": monotonic_violations(score10, y),
        "ci_low": ci_low,
        "ci_high": ci_high,
        "tau": tau_used,
        "n_anchors": len(anchors),
        "saturated": at is not None,
        "saturated_at": at,
        "profile_ci_low": p_low,
        "profile_ci_high": p_high,
    }
    if not strict:
        bad = unrecognised(comparisons, [str(a.get("anchor_id") or f"A{i + 1}") for i, a in enumerate(anchors)])
        diag.update(n_unknown_anchor_ids=len(bad["unknown_anchor_id"]),
                    n_unrecognised_judgements=len(bad["judgement"]),
                    n_unrecognised_strengths=len(bad["strength"]))
    return score, diag
