"""Intervals for the extra divergence: a bootstrap over runs within instances.

The quantity is the instance-averaged extra divergence of one design. With the instances fixed, a
re-execution draws other runs at every depth; the bootstrap resamples each instance's runs of each
depth with replacement and reports the percentile interval. A run paired with its own copy is left
out of the same-depth mean. Instances are not resampled (with four, that would measure how these
questions differ): the interval says how far a re-execution of *this* benchmark could move the
estimate. Chapter 02b checks its coverage against the simulator's truth.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _group_sums(D: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sum and count of the distinct-run pairs among the resampled runs ``idx`` (shape (B, k)) of one
    depth: ``D[i, j]`` over positions i < j whose runs differ; shapes (B,), (B,)."""
    W = D[idx[:, :, None], idx[:, None, :]]
    valid = idx[:, :, None] != idx[:, None, :]
    return (W * valid).sum(axis=(1, 2)) / 2, valid.sum(axis=(1, 2)) / 2


def bootstrap_extras(Ds: Sequence[np.ndarray], n_a: int, n_boot: int = 2000, seed: int = 0) -> np.ndarray:
    """Instance-averaged extra divergence of ``n_boot`` stratified resamples, shape ``(<= n_boot,)``
    (one without a same-depth pair of distinct runs is dropped). ``Ds``: as in ``permutation_test``."""
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    rng = np.random.default_rng(seed)
    per_instance = []
    for D in Ds:
        D = np.asarray(D, dtype=float)
        n = D.shape[0]
        if D.shape != (n, n) or not 2 <= n_a <= n - 2:
            raise ValueError(f"need a square matrix with >= 2 runs per depth; got shape {D.shape}, n_a={n_a}")
        ia = rng.integers(0, n_a, size=(n_boot, n_a))
        ib = n_a + rng.integers(0, n - n_a, size=(n_boot, n - n_a))
        cross = D[ia[:, :, None], ib[:, None, :]].mean(axis=(1, 2))
        (sa, ca), (sb, cb) = _group_sums(D, ia), _group_sums(D, ib)
        count = ca + cb
        same = np.divide(sa + sb, count, out=np.full(n_boot, np.nan), where=count > 0)
        per_instance.append(cross - same)
    extras = np.mean(per_instance, axis=0)
    return extras[np.isfinite(extras)]


def bootstrap_interval(Ds: Sequence[np.ndarray], n_a: int, level: float = 0.95, n_boot: int = 2000,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile interval (fractions) of ``bootstrap_extras`` at ``level`` (e.g. 0.95)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    values = bootstrap_extras(Ds, n_a, n_boot, seed)
    low, high = np.quantile(values, [(1 - level) / 2, (1 + level) / 2])
    return float(low), float(high)


__all__ = ["bootstrap_extras", "bootstrap_interval"]
