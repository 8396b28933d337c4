"""Run divergence, extra divergence and the exact permutation test (paper §3, App. A).

Vocabulary used throughout:

* A *run* is the sequence of hypotheses one workflow execution delivered. Only the attribute
  ``opening_id`` of a hypothesis is read here (the id of the fixed opening hypothesis it grew from).
* *Matched pairs* of two runs: every cross pair of delivered hypotheses (one from each run) that
  share an ``opening_id`` (``None`` never matches). All cross pairs count (2 x 3 hypotheses of one
  opening give 6 pairs): the book's assumption, since the paper reports 4,863 matched pairs over
  420 run pairs without saying how they were matched. The simulator draws several hypotheses per
  opening to land near that density; the LLM workflow develops one per opening (2,100 pairs).
* *Run divergence* of two runs: the fraction of their matched pairs that an equivalence rule judges
  to be different mechanisms (0 = all same, 1 = all different).
* *Divergence matrix* of one instance: the symmetric run-by-run matrix of run divergences (zero
  diagonal, ignored by every statistic here).
* *Extra divergence* of two depths a and b: mean cross-depth run divergence minus mean same-depth
  run divergence, where the within-a and within-b run pairs are pooled into one mean.
* *Counting as the paper does*: runs per instance and depth (4 x 3 x 5 = 60); run pairs are all
  unordered pairs of runs of one instance, across and within depths (4 x C(15, 2) = 420); matched
  pairs are summed over those run pairs.

The permutation test is exact: per instance every split of the runs into groups of ``n_a`` and
``n_b`` (unordered when equal, the statistic being symmetric: C(10, 5) / 2 = 126 for 5 + 5), and the
null distribution is every combination of per-instance splits (126**4 for four instances), counted
by a meet-in-the-middle convolution of the per-instance value distributions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from math import comb, prod
from typing import Any, NamedTuple, Protocol

import numpy as np
from tqdm import tqdm

__all__ = ["DesignCounts", "PermutationResult", "comparison_matrix", "design_counts", "divergence_matrix",
           "exact_test_feasible", "extra_divergence", "matched_pairs", "monte_carlo_permutation_test",
           "permutation_test", "run_divergence", "same_depth_divergence", "split_extras", "split_memberships"]

#: Largest number of distinct partial sums one half of the meet-in-the-middle may hold.
MAX_HALF_SIZE = 20_000_000


class HasOpening(Protocol):
    """Anything with the lineage attribute of a delivered hypothesis."""

    opening_id: str | None


Pair = tuple[Any, Any]


class PermutationResult(NamedTuple):
    """Result of :func:`permutation_test`: ``extra``, the observed mean over instances of extra
    divergence (a fraction; x100 for pp); ``p_value``, two-sided (ties within a relative tolerance
    count as at least as extreme); ``n_partitions``, splits per instance (126 for 5 + 5 runs)."""

    extra: float
    p_value: float
    n_partitions: int


class DesignCounts(NamedTuple):
    """Design size (paper App. A): runs, run pairs, matched hypothesis pairs (see the module doc)."""

    runs: int
    run_pairs: int
    matched_pairs: int


# --------------------------------------------------------------------------- matching and counts


def matched_pairs(run_a: Sequence[HasOpening], run_b: Sequence[HasOpening]) -> list[Pair]:
    """All cross pairs ``(h_a, h_b)`` of two runs whose hypotheses share an ``opening_id`` (module
    docstring), ordered by position in ``run_a``, then in ``run_b``."""
    by_opening: dict[str, list[Any]] = {}
    for h in run_b:
        if h.opening_id is not None:
            by_opening.setdefault(h.opening_id, []).append(h)
    return [(a, b) for a in run_a if a.opening_id is not None for b in by_opening.get(a.opening_id, [])]


def design_counts(runs_by_instance: Mapping[Any, Sequence[Sequence[HasOpening]]]) -> DesignCounts:
    """Count runs, run pairs and matched pairs as the paper does (module docstring);
    ``runs_by_instance`` maps an instance to all its runs (every depth)."""
    n_runs = n_run_pairs = n_matched = 0
    for runs in runs_by_instance.values():
        n_runs += len(runs)
        n_run_pairs += comb(len(runs), 2)
        n_matched += sum(len(matched_pairs(a, b)) for a, b in combinations(runs, 2))
    return DesignCounts(n_runs, n_run_pairs, n_matched)


# --------------------------------------------------------------------------- divergence


def run_divergence(same: np.ndarray) -> float:
    """Fraction of matched pairs judged different, from a 1-D array of same-mechanism verdicts
    (booleans or 0/1; an empty array or another value raises ``ValueError``)."""
    arr = np.asarray(same)
    if arr.ndim != 1:
        raise ValueError(f"same: expected a 1-D array of verdicts, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError("same: no matched pairs, run divergence is undefined")
    return float(1.0 - bool_verdicts(arr).mean())


def bool_verdicts(same: np.ndarray) -> np.ndarray:
    """Same-mechanism verdicts (any shape) as a bool array; a value other than 0/1 (or NaN) raises
    ``ValueError``."""
    arr = np.asarray(same)
    if arr.dtype != bool:
        if not np.isin(arr, (0, 1)).all():
            raise ValueError("same: verdicts must be boolean (or 0/1); found other values or NaN")
        arr = arr.astype(bool)
    return arr


def divergence_matrix(runs: Sequence[Sequence[HasOpening]], same_fn: Callable[[list[Pair]], np.ndarray] | Any,
                      progress: bool = False) -> np.ndarray:
    """Symmetric run-by-run divergence matrix of one instance, shape ``(n_runs, n_runs)``.

    ``same_fn``: an equivalence rule (with ``same(pairs)``) or a function ``pairs -> bool array``,
    called once on the matched pairs of all run pairs; a float verdict may be NaN (undecided: left
    out). A run pair without matched pairs raises ``ValueError``.
    """
    n = len(runs)
    index = list(combinations(range(n), 2))
    pairs: list[Pair] = []
    bounds = [0]
    for i, j in tqdm(index, disable=not progress, desc="matching runs"):
        found = matched_pairs(runs[i], runs[j])
        if not found:
            raise ValueError(f"runs {i} and {j} share no opening hypothesis: run divergence undefined")
        pairs.extend(found)
        bounds.append(len(pairs))
    if not callable(same_fn) and callable(getattr(same_fn, "same", None)):
        same_fn = same_fn.same  # a rule object
    verdicts = np.asarray(same_fn(pairs)) if pairs else np.zeros(0, bool)
    if verdicts.shape != (len(pairs),):
        raise ValueError(f"same_fn returned shape {verdicts.shape} for {len(pairs)} pairs")
    D = np.zeros((n, n))
    for (i, j), lo, hi in zip(index, bounds[:-1], bounds[1:]):
        v = verdicts[lo:hi]
        D[i, j] = D[j, i] = run_divergence(v[~np.isnan(v)] if v.dtype.kind == "f" else v)
    return D


def _check_instances(Ds: Sequence[np.ndarray]) -> None:
    if len(Ds) == 0:
        raise ValueError("Ds: no instance matrices")
    shapes = {np.shape(D) for D in Ds}
    if len(shapes) != 1:
        raise ValueError(f"Ds: all instance matrices must have one shape, got {sorted(shapes)}")


def _n_splits(n: int, n_a: int) -> int:
    """Distinct splits of ``n`` runs into ``n_a`` + ``n - n_a`` (unordered when the sizes are equal)."""
    return comb(n, n_a) // (2 if 2 * n_a == n else 1)


def _check_matrix(D: np.ndarray, n_a: int, name: str = "D") -> np.ndarray:
    """Validate one divergence matrix and the depth-a group size; return it as float array."""
    D = np.asarray(D, dtype=float)
    if D.ndim != 2 or D.shape[0] != D.shape[1]:
        raise ValueError(f"{name}: expected a square matrix, got shape {D.shape}")
    n = D.shape[0]
    if isinstance(n_a, bool) or not isinstance(n_a, (int, np.integer)):
        raise ValueError(f"n_a: expected an int, got {n_a!r}")
    if not 1 <= n_a <= n - 1:
        raise ValueError(f"n_a={n_a}: needs 1 <= n_a <= n - 1 = {n - 1} for {name} of shape {D.shape}")
    if comb(n_a, 2) + comb(n - n_a, 2) == 0:
        raise ValueError(f"{name}: no same-depth run pair for n_a={n_a}, n={n}")
    off = ~np.eye(n, dtype=bool)
    if not np.isfinite(D[off]).all():
        raise ValueError(f"{name}: off-diagonal entries must be finite (found NaN or inf)")
    if not np.allclose(D, D.T, rtol=0.0, atol=1e-12, equal_nan=True):
        raise ValueError(f"{name}: divergence matrix must be symmetric")
    return np.where(off, D, 0.0)


def extra_divergence(D: np.ndarray, n_a: int) -> float:
    """Extra divergence of one instance: mean cross-depth minus pooled mean same-depth divergence.

    ``D``: symmetric ``(n, n)`` run divergence matrix (fractions), the first ``n_a`` runs at depth a
    and the remaining ``n - n_a`` at depth b; diagonal ignored. Returns a fraction (x100 for pp).
    """
    D = _check_matrix(D, n_a)
    cross = D[:n_a, n_a:].mean()
    iu_a = np.triu_indices(n_a, 1)
    iu_b = np.triu_indices(D.shape[0] - n_a, 1)
    within = np.concatenate([D[:n_a, :n_a][iu_a], D[n_a:, n_a:][iu_b]])
    return float(cross - within.mean())


def _with_depths(D: np.ndarray, depths: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    D = np.asarray(D, dtype=float)
    depths = np.asarray(depths)
    if D.shape != (len(depths), len(depths)):
        raise ValueError(f"D shape {D.shape} does not match {len(depths)} depths")
    return D, depths


def same_depth_divergence(D: np.ndarray, depths: Sequence[Any]) -> dict[Any, float]:
    """Mean run divergence over same-depth run pairs, per depth (Fig. 2, left panel).

    ``D``: ``(n, n)`` divergence matrix of one instance; ``depths[i]`` the depth of run i. Depths with
    fewer than two runs are left out.
    """
    D, depths = _with_depths(D, depths)
    out: dict[Any, float] = {}
    for d in dict.fromkeys(depths.tolist()):
        idx = np.flatnonzero(depths == d)
        if len(idx) >= 2:
            sub = D[np.ix_(idx, idx)]
            out[d] = float(sub[np.triu_indices(len(idx), 1)].mean())
    return out


def comparison_matrix(D: np.ndarray, depths: Sequence[Any], a: Any, b: Any) -> tuple[np.ndarray, int]:
    """Sub-matrix of one depth comparison: runs at depth ``a`` first, then runs at depth ``b``.

    Returns ``(D_ab, n_a)`` ready for :func:`extra_divergence` and :func:`permutation_test`
    (e.g. a 15 x 15 matrix of depths {0, 1, 5} gives a 10 x 10 matrix and n_a = 5 for 0 vs 1).
    """
    D, depths = _with_depths(D, depths)
    idx_a, idx_b = np.flatnonzero(depths == a), np.flatnonzero(depths == b)
    if len(idx_a) == 0 or len(idx_b) == 0:
        raise ValueError(f"depth comparison {a} vs {b}: no runs at depth {a if len(idx_a) == 0 else b}")
    idx = np.concatenate([idx_a, idx_b])
    return D[np.ix_(idx, idx)], len(idx_a)


# --------------------------------------------------------------------------- permutation test


def split_memberships(n: int, n_a: int) -> np.ndarray:
    """All splits of ``n`` runs into groups of ``n_a`` and ``n - n_a``, shape ``(s, n)`` bool (row r:
    the group-a runs of split r; row 0 the observed split; equal sizes: run 0 always in group a)."""
    pool = range(1, n) if 2 * n_a == n else range(n)
    fixed = (0,) if 2 * n_a == n else ()
    chosen = [fixed + c for c in combinations(pool, n_a - len(fixed))]
    M = np.zeros((len(chosen), n), dtype=bool)
    rows = np.repeat(np.arange(len(chosen)), n_a)
    M[rows, np.asarray(chosen, dtype=int).ravel()] = True
    return M


def split_extras(D: np.ndarray, n_a: int) -> np.ndarray:
    """Extra divergence of every split of :func:`split_memberships` (same order), shape ``(s,)``.

    Vectorised: for a 0/1 membership vector m, the cross-group sum over run pairs is
    ``m @ rowsum(D) - m @ D @ m`` (zero diagonal).
    """
    D = _check_matrix(D, n_a)
    n = D.shape[0]
    n_b = n - n_a
    M = split_memberships(n, n_a).astype(float)
    cross = M @ D.sum(axis=1) - np.einsum("si,ij,sj->s", M, D, M)
    within = D.sum() / 2.0 - cross
    return cross / (n_a * n_b) - within / (comb(n_a, 2) + comb(n_b, 2))


def _distribution(values: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge equal values: sorted distinct values and their summed integer counts."""
    order = np.argsort(values, kind="stable")
    v, c = values[order], counts[order]
    start = np.flatnonzero(np.r_[True, v[1:] != v[:-1]])
    return v[start], np.add.reduceat(c, start)


def _convolve_all(dists: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Distribution of the sum of independent discrete values (counts multiply)."""
    v, c = np.zeros(1), np.ones(1, dtype=np.int64)
    for dv, dc in dists:
        if len(v) * len(dv) > MAX_HALF_SIZE:
            raise ValueError(f"exact null distribution too large ({len(v) * len(dv)} partial sums in one half); "
                             "use fewer instances per test")
        v, c = _distribution(np.add.outer(v, dv).ravel(), np.multiply.outer(c, dc).ravel())
    return v, c


def permutation_test(Ds: Sequence[np.ndarray], n_a: int, rtol: float = 1e-12) -> PermutationResult:
    """Exact two-sided permutation test of instance-averaged extra divergence (paper App. A).

    ``Ds``: one ``(n, n)`` divergence matrix per instance, all one shape, first ``n_a`` runs at depth
    a. The split values are convolved into two halves of partial sums; for each left sum the right
    sums with ``|left + right| >= |observed| - tol`` are counted with ``np.searchsorted``, where
    ``tol = rtol * max(1, sum_i max_s |extra_i(s)|)``.
    """
    _check_instances(Ds)
    per_instance = [split_extras(D, n_a) for D in Ds]
    observed_sum = float(sum(e[0] for e in per_instance))
    k = len(per_instance)
    n_partitions = len(per_instance[0])
    total = n_partitions**k

    tol = rtol * max(1.0, float(sum(np.abs(e).max() for e in per_instance)))
    threshold = abs(observed_sum) - tol
    if threshold <= 0:
        return PermutationResult(observed_sum / k, 1.0, n_partitions)

    dists = [_distribution(e, np.ones(len(e), dtype=np.int64)) for e in per_instance]
    sizes = [len(d[0]) for d in dists]
    cut = min(range(k + 1), key=lambda m: max(prod(sizes[:m]), prod(sizes[m:])))
    left_v, left_c = _convolve_all(dists[:cut])
    right_v, right_c = _convolve_all(dists[cut:])
    right_cum = np.concatenate([[0], np.cumsum(right_c)])
    n_upper = right_cum[-1] - right_cum[np.searchsorted(right_v, threshold - left_v, side="left")]
    n_lower = right_cum[np.searchsorted(right_v, -threshold - left_v, side="right")]
    hits = n_upper + n_lower
    if total >= 2**62:  # exact integer arithmetic beyond int64
        n_extreme = sum(int(a) * int(b) for a, b in zip(left_c, hits))
    else:
        n_extreme = int(np.dot(left_c, hits))
    return PermutationResult(observed_sum / k, n_extreme / total, n_partitions)


def exact_test_feasible(n: int, n_a: int, k: int, limit: int = MAX_HALF_SIZE) -> bool:
    """Whether :func:`permutation_test` counts ``k`` instances of ``n`` runs (``n_a`` at depth a) with
    at most ``limit`` partial sums per half: True for the paper's 4 x (5 + 5), False for 8 x (5 + 5)."""
    return _n_splits(n, n_a) ** ((k + 1) // 2) <= limit


def monte_carlo_permutation_test(Ds: Sequence[np.ndarray], n_a: int, n_resamples: int = 999,
                                 seed: int = 0, rtol: float = 1e-12, chunk: int = 2000) -> PermutationResult:
    """Monte Carlo version of :func:`permutation_test` for designs too large to count exactly.

    Same statistic and null, but ``n_resamples`` random split combinations drawn with
    ``numpy.random.default_rng(seed)``, ``chunk`` at a time (bounded memory). Two-sided
    ``p = (1 + hits) / (n_resamples + 1)``, ``hits`` counting resamples with ``|statistic| >=
    |observed| - tol``: with the observed split counted once, a valid test at every level.
    """
    _check_instances(Ds)
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or n_resamples < 1:
        raise ValueError(f"n_resamples: expected an int >= 1, got {n_resamples!r}")
    D = np.stack([_check_matrix(D, n_a, f"Ds[{i}]") for i, D in enumerate(Ds)])  # (k, n, n)
    k, n, _ = D.shape
    n_b = n - n_a
    row, total = D.sum(axis=2), D.sum(axis=(1, 2)) / 2.0  # (k, n), (k,)
    n_cross, n_within = n_a * n_b, comb(n_a, 2) + comb(n_b, 2)

    def extras(M: np.ndarray) -> np.ndarray:  # M: (k, r, n) 0/1 -> (k, r)
        cross = np.einsum("kri,ki->kr", M, row) - np.einsum("krj,krj->kr", np.matmul(M, D), M)
        return cross / n_cross - (total[:, None] - cross) / n_within

    observed = extras(np.broadcast_to((np.arange(n) < n_a).astype(float), (k, 1, n)))[:, 0]
    observed_sum = float(observed.sum())
    rng = np.random.default_rng(seed)
    stats = []
    for start in range(0, n_resamples, chunk):
        r = min(chunk, n_resamples - start)
        M = (rng.random((k, r, n)).argsort(axis=2) < n_a).astype(float)  # uniform random subsets
        stats.append(extras(M).sum(axis=0))
    sums = np.concatenate(stats)
    tol = rtol * max(1.0, float(np.abs(observed).sum()), float(np.abs(sums).max()))
    hits = int(np.count_nonzero(np.abs(sums) >= abs(observed_sum) - tol))
    return PermutationResult(observed_sum / k, (1 + hits) / (n_resamples + 1), _n_splits(n, n_a))
