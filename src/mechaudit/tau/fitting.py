"""Calibrating the logistic scale tau from judged paper pairs, and the stratified pair sampler.

A pair (a, b) has ``delta = score10_a - score10_b``, a judgement of a against b (y = 1 / 0.5 / 0
for better / tie / worse) and a weight (mean of the two papers' anchor weights) times the strength
weight. tau minimises the weighted clipped cross-entropy of ``y`` against ``sigmoid(delta / tau)``:

* ``method="grid"`` (the original): tau in 0.10, 0.11, ..., 3.00, first minimum.
* ``method="mle"``: bounded continuous minimisation on the same interval, with a standard error
  from the observed information (second derivative of the weighted NLL) and a sandwich standard
  error that does not depend on the overall weight scale.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar
from scipy.special import expit

from mechaudit.tau.inference import EPS, clipped_ce, label_of, strength_weight

TAU_LOW, TAU_HIGH, TAU_STEP = 0.10, 3.00, 0.01
#: |delta| bins of the original sampler; pairs with |delta| >= 3 are dropped.
DELTA_BINS = (0.0, 0.25, 0.75, 1.5, 3.0)


@dataclass(frozen=True)
class TauFit:
    """Result of :func:`fit_tau_detailed`. ``se``/``se_robust`` are NaN for the grid method."""

    tau: float
    method: str
    loss: float
    n_pairs: int
    se: float
    se_robust: float
    at_bound: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tau_grid(low: float = TAU_LOW, high: float = TAU_HIGH, step: float = TAU_STEP) -> np.ndarray:
    """Rounded tau grid (291 points for the defaults)."""
    n = int(round((high - low) / step)) + 1
    return np.round(low + step * np.arange(n), 10)


def pair_arrays(pairs: pd.DataFrame | Iterable[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(delta, y, w)`` from pairs with ``delta``, ``y`` (else ``judgement``), ``strength`` and
    ``weight`` (missing: 1); ``ValueError`` naming the pair and field of an unusable value."""
    if isinstance(pairs, pd.DataFrame):
        fast = _frame_arrays(pairs)
        if fast is not None:
            return fast
    rows = pairs.to_dict("records") if isinstance(pairs, pd.DataFrame) else list(pairs)
    n = len(rows)
    delta, y, w = np.empty(n), np.empty(n), np.empty(n)
    for i, row in enumerate(rows):
        if row.get("delta") is None or not np.isfinite(float(row["delta"])):
            raise ValueError(f"pair {i}: field 'delta' is missing or not finite")
        delta[i] = float(row["delta"])
        if row.get("y") is not None and not (isinstance(row["y"], float) and np.isnan(row["y"])):
            y[i] = float(row["y"])
            if not 0.0 <= y[i] <= 1.0:
                raise ValueError(f"pair {i}: field 'y' must be in [0, 1], got {row['y']!r}")
        elif "judgement" in row:
            y[i] = label_of(row["judgement"])
        else:
            raise ValueError(f"pair {i}: needs field 'y' or 'judgement'")
        weight = 1.0 if row.get("weight") is None else float(row["weight"])
        weight = 1.0 if np.isnan(weight) else weight  # missing, whatever its type (NumPy's float32, text)
        if weight < 0:
            raise ValueError(f"pair {i}: field 'weight' must be >= 0, got {weight}")
        w[i] = weight * strength_weight(row.get("strength"))
    if n == 0:
        raise ValueError("fit_tau needs at least one pair")
    return delta, y, w


def _frame_arrays(pairs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Vectorised :func:`pair_arrays` (exactly its arrays) for a clean frame; ``None`` otherwise, so
    the row loop raises its precise error."""
    n = len(pairs)
    if n == 0 or "delta" not in pairs.columns:
        return None
    numeric = pd.api.types.is_numeric_dtype
    if not numeric(pairs["delta"]) or any(c in pairs.columns and not numeric(pairs[c]) for c in ("y", "weight")):
        return None
    delta = pairs["delta"].to_numpy(dtype=float)
    if not np.isfinite(delta).all():
        return None
    y = pairs["y"].to_numpy(dtype=float, copy=True) if "y" in pairs.columns else np.full(n, np.nan)
    missing = np.isnan(y)
    if missing.any():
        if "judgement" not in pairs.columns:
            return None
        y[missing] = _mapped(pairs["judgement"].to_numpy()[missing], label_of)
    if ((y < 0) | (y > 1)).any():
        return None
    weight = pairs["weight"].to_numpy(dtype=float, copy=True) if "weight" in pairs.columns else np.ones(n)
    weight = np.where(np.isnan(weight), 1.0, weight)
    if (weight < 0).any():
        return None
    strength = (pairs["strength"].to_numpy() if "strength" in pairs.columns else np.full(n, None, dtype=object))
    return delta, y, weight * _mapped(strength, strength_weight)


def _mapped(values: np.ndarray, fn: Any) -> np.ndarray:
    """``fn`` applied elementwise, once per distinct ``str(value)`` (``fn`` depends only on it)."""
    codes, inverse = np.unique(np.asarray(values, dtype=object).astype(str), return_inverse=True)
    first = np.zeros(len(codes), dtype=int)
    first[inverse[::-1]] = np.arange(len(values))[::-1]
    return np.array([fn(values[i]) for i in first], dtype=float)[inverse]


def pair_nll(tau: float | np.ndarray, delta: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted clipped NLL at each tau; shape ``np.shape(tau)``."""
    taus = np.atleast_1d(np.asarray(tau, dtype=float))
    if len(taus) == 1:  # the mle's objective
        return (clipped_ce(y[None, :], expit(delta[None, :] / taus[:, None])) @ w).reshape(np.shape(tau))
    return _grid_nll(_logistic_logs(delta, taus), y, w).reshape(np.shape(tau))


def _logistic_logs(delta: np.ndarray, taus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(log p, log1p(-p))``, ``p = expit(delta / tau)`` clipped as :func:`clipped_ce`, per tau (rows)
    and pair (columns); answer sets of the same pairs share them (:func:`fit_taus`)."""
    p = np.clip(expit(delta[None, :] / taus[:, None]), EPS, 1.0 - EPS)
    return np.log(p), np.log1p(-p)


def _grid_nll(logs: tuple[np.ndarray, np.ndarray], y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted clipped NLL per row of :func:`_logistic_logs` (:func:`clipped_ce`'s numbers to the last
    bit), summed by ``einsum``: a BLAS product's sums change with its thread count."""
    log_p, log_q = logs
    return np.einsum("ij,j->i", -(y * log_p + (1.0 - y) * log_q), w)


def _derivatives(tau: float, delta: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float]:
    """Per-pair score contributions dL_i/dtau (weighted) and the total second derivative."""
    p = expit(delta / tau)
    g = w * (p - y) * (-delta / tau**2)
    h = float(np.sum(w * (p * (1 - p) * (delta / tau**2) ** 2 + (p - y) * 2 * delta / tau**3)))
    return g, h


def _grid_fit(grid: np.ndarray, logs: tuple[np.ndarray, np.ndarray], n: int, y: np.ndarray,
              w: np.ndarray) -> TauFit:
    losses = _grid_nll(logs, y, w)
    best = int(np.argmin(losses))
    return TauFit(float(grid[best]), "grid", float(losses[best]), n, float("nan"), float("nan"),
                  best in (0, len(grid) - 1))


def _mle_fit(delta: np.ndarray, y: np.ndarray, w: np.ndarray, low: float, high: float) -> TauFit:
    res = minimize_scalar(lambda t: float(pair_nll(t, delta, y, w)), bounds=(low, high),
                          method="bounded", options={"xatol": 1e-9})
    tau = float(res.x)
    g, h = _derivatives(tau, delta, y, w)
    se = float(1 / np.sqrt(h)) if h > 0 else float("nan")
    se_robust = float(np.sqrt(np.sum(g**2)) / h) if h > 0 else float("nan")
    at_bound = bool(min(tau - low, high - tau) < 1e-4)
    return TauFit(tau, "mle", float(res.fun), len(delta), se, se_robust, at_bound)


def _check_methods(methods: Sequence[str]) -> None:
    for method in methods:
        if method not in ("grid", "mle"):
            raise ValueError(f"unknown method {method!r}; use 'grid' or 'mle'")


def _fit_arrays(delta: np.ndarray, y: np.ndarray, w: np.ndarray, methods: Sequence[str],
                bounds: tuple[float, float], logs: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, TauFit]:
    """``{method: TauFit}`` of one answer set; ``logs``: its :func:`_logistic_logs`, if known."""
    low, high = bounds
    grid = tau_grid(low, high)
    fits = {}
    for method in methods:
        if method == "grid":
            fits[method] = _grid_fit(grid, _logistic_logs(delta, grid) if logs is None else logs, len(delta), y, w)
        else:
            fits[method] = _mle_fit(delta, y, w, low, high)
    return fits


def fit_taus(
    pair_sets: Iterable[pd.DataFrame | Iterable[Mapping[str, Any]]],
    methods: Sequence[str] = ("grid",),
    bounds: tuple[float, float] = (TAU_LOW, TAU_HIGH),
) -> list[dict[str, TauFit]]:
    """``[{method: TauFit}, ...]``: :func:`fit_tau_detailed` of every pair set by every method,
    faster for consecutive answer sets of the same pairs (they share the grid's logarithms)."""
    _check_methods(methods)
    shared: tuple[bytes, tuple[np.ndarray, np.ndarray]] | None = None
    out = []
    for pairs in pair_sets:
        delta, y, w = pair_arrays(pairs)
        if "grid" in methods and (shared is None or shared[0] != delta.tobytes()):
            shared = (delta.tobytes(), _logistic_logs(delta, tau_grid(*bounds)))
        out.append(_fit_arrays(delta, y, w, methods, bounds, shared[1] if shared else None))
    return out


def fit_tau_detailed(
    pairs: pd.DataFrame | Iterable[Mapping[str, Any]],
    method: str = "grid",
    bounds: tuple[float, float] = (TAU_LOW, TAU_HIGH),
) -> TauFit:
    """Fit tau by ``method`` ("grid" or "mle") and return a :class:`TauFit`."""
    delta, y, w = pair_arrays(pairs)
    _check_methods((method,))
    return _fit_arrays(delta, y, w, (method,), bounds)[method]


def fit_tau(pairs: pd.DataFrame | Iterable[Mapping[str, Any]], method: str = "grid") -> float:
    """Calibrated tau from judged pairs (see :func:`fit_tau_detailed` for the standard errors)."""
    return fit_tau_detailed(pairs, method).tau


def _quotas(n_pairs: int, n_bins: int, same_pattern_share: float) -> dict[tuple[int, bool], int]:
    """Pairs wanted per ``(bin, same pattern)``: even over the bins (the first take the remainder),
    ``same_pattern_share`` of each within one pattern."""
    per_bin, extra = divmod(n_pairs, n_bins)
    quota = {}
    for b in range(n_bins):
        size = per_bin + (1 if b < extra else 0)
        same = int(round(same_pattern_share * size))
        quota[(b, True)], quota[(b, False)] = same, size - same
    return quota


def _candidates(rng: np.random.Generator, multi: list[np.ndarray], n: int,
                batch: int) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs ``(a, b)``: ``batch`` within multi-paper patterns, then ``batch`` over all ``n``."""
    if multi:
        pick = rng.integers(len(multi), size=batch)
        sizes = np.array([len(m) for m in multi])[pick]
        i1 = rng.integers(sizes)
        i2 = (i1 + 1 + rng.integers(sizes - 1)) % sizes
        members = np.zeros((len(multi), max(len(m) for m in multi)), dtype=int)
        for k, m in enumerate(multi):
            members[k, :len(m)] = m
        same = (members[pick, i1], members[pick, i2])
    else:
        same = (np.empty(0, dtype=int), np.empty(0, dtype=int))
    return (np.concatenate([same[0], rng.integers(n, size=batch)]),
            np.concatenate([same[1], rng.integers(n, size=batch)]))


def _accepted(code: np.ndarray, stratum: np.ndarray, usable: np.ndarray, left: np.ndarray,
              seen: np.ndarray) -> list[np.ndarray]:
    """Per stratum, the candidate indices a one-by-one pass would take: usable, new (not in ``seen``
    nor earlier in the batch), while the stratum has room (``left``). A full stratum stays full, so
    first occurrences cut to ``left`` per stratum are the same choice."""
    idx = np.flatnonzero(usable & ~np.isin(code, seen))
    _, first = np.unique(code[idx], return_index=True)
    idx = np.sort(idx[first])
    return [idx[stratum[idx] == s][:room] for s, room in enumerate(left)]


def sample_pairs(
    papers: pd.DataFrame,
    n_pairs: int = 2000,
    seed: int = 42,
    same_pattern_share: float = 0.8,
    bins: Sequence[float] = DELTA_BINS,
    max_rounds: int = 200,
) -> pd.DataFrame:
    """Stratified random pairs of papers (columns ``paper_id``, ``pattern_id``, ``score10``,
    ``weight``), as the original tau fitter drew them.

    Equal numbers per ``|delta|`` bin, ``same_pattern_share`` of each within one pattern; distinct
    unordered pairs in random order (signed ``delta``). Columns ``a``, ``b``, ``delta``, ``bin``,
    ``same_pattern``, ``weight`` (mean of the two); fewer rows if ``max_rounds`` batches of candidates
    cannot fill a quota.
    """
    for col in ("paper_id", "pattern_id", "score10", "weight"):
        if col not in papers.columns:
            raise ValueError(f"papers table lacks column {col!r}")
    rng = np.random.default_rng(seed)
    ids = papers["paper_id"].to_numpy()
    score = papers["score10"].to_numpy(dtype=float)
    weight = papers["weight"].to_numpy(dtype=float)
    pattern = papers["pattern_id"].to_numpy()
    multi = [m for m in (np.flatnonzero(pattern == p) for p in pd.unique(pattern)) if len(m) > 1]
    edges = np.asarray(bins, dtype=float)
    n_bins = len(edges) - 1
    quota = _quotas(n_pairs, n_bins, same_pattern_share)  # strata in order: (bin 0, same), (bin 0, other), ...
    left = np.array(list(quota.values()))
    taken: list[list[np.ndarray]] = [[] for _ in quota]
    seen = np.empty(0, dtype=np.int64)
    for _ in range(max_rounds):
        if not left.any():
            break
        a, b = _candidates(rng, multi, len(ids), max(4 * n_pairs, 1000))
        which = np.searchsorted(edges, np.abs(score[a] - score[b]), side="right") - 1
        code = np.minimum(a, b).astype(np.int64) * len(ids) + np.maximum(a, b)
        stratum = 2 * which + ~(pattern[a] == pattern[b])
        for s, chosen in enumerate(_accepted(code, stratum, (a != b) & (which >= 0) & (which < n_bins), left, seen)):
            taken[s].append(np.stack([a[chosen], b[chosen]]))
            left[s] -= len(chosen)
            seen = np.concatenate([seen, code[chosen]])
    chosen = [np.concatenate(parts, axis=1) if parts else np.empty((2, 0), dtype=int) for parts in taken]
    if not any(c.shape[1] for c in chosen):
        return pd.DataFrame([], columns=["a", "b", "delta", "bin", "same_pattern", "weight"])
    a, b = np.concatenate(chosen, axis=1)
    stratum = np.repeat(np.arange(len(chosen)), [c.shape[1] for c in chosen])
    flip = rng.random(len(a)) < 0.5  # each pair's order, drawn in the order the pairs were taken
    a, b = np.where(flip, b, a), np.where(flip, a, b)
    return pd.DataFrame({"a": ids[a], "b": ids[b], "delta": score[a] - score[b], "bin": stratum // 2,
                         "same_pattern": stratum % 2 == 0, "weight": (weight[a] + weight[b]) / 2})
