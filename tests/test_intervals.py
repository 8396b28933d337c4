"""Bootstrap intervals of the extra divergence (mechaudit.workflow.intervals) against a loop
implementation with the same random draws, and on cases whose answer is known."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from mechaudit.divergence import extra_divergence
from mechaudit.workflow.intervals import bootstrap_extras, bootstrap_interval


def _matrix(rng, n):
    A = rng.random((n, n))
    D = (A + A.T) / 2
    np.fill_diagonal(D, 0)
    return D


def _loop_extra(D, ia, ib):
    """Extra divergence of one resample by explicit loops: cross pairs all, same-depth pairs only
    between distinct original runs."""
    cross = np.mean([D[i, j] for i in ia for j in ib])
    same = [D[x, y] for group in (ia, ib) for x, y in combinations(group, 2) if x != y]
    return cross - np.mean(same)


def test_resamples_equal_a_loop_with_the_same_draws():
    rng = np.random.default_rng(0)
    Ds, n_a, n_boot = [_matrix(rng, 10), _matrix(rng, 10)], 5, 50
    fast = bootstrap_extras(Ds, n_a, n_boot=n_boot, seed=11)
    draw = np.random.default_rng(11)
    per = []
    for D in Ds:
        ia = draw.integers(0, n_a, size=(n_boot, n_a))
        ib = n_a + draw.integers(0, 10 - n_a, size=(n_boot, 10 - n_a))
        per.append([_loop_extra(D, a, b) for a, b in zip(ia, ib)])
    np.testing.assert_allclose(fast, np.mean(per, axis=0), atol=1e-12)


def test_interval_brackets_the_estimate_and_narrows_with_less_noise():
    rng = np.random.default_rng(1)
    D = _matrix(rng, 12) * 0.2
    D[:6, 6:] += 0.5
    D[6:, :6] += 0.5
    low, high = bootstrap_interval([D], 6, level=0.9, n_boot=2000, seed=2)
    assert low < extra_divergence(D, 6) < high
    quiet = D.copy()
    quiet[:6, :6] = quiet[6:, 6:] = 0.1
    np.fill_diagonal(quiet, 0)
    q_low, q_high = bootstrap_interval([quiet], 6, level=0.9, n_boot=2000, seed=2)
    assert q_high - q_low < high - low


def test_constant_divergences_give_a_point_interval():
    D = np.full((8, 8), 0.3)
    D[:4, 4:] = D[4:, :4] = 0.9
    np.fill_diagonal(D, 0)
    low, high = bootstrap_interval([D, D], 4, n_boot=200)
    assert low == pytest.approx(0.6) and high == pytest.approx(0.6)


def test_bad_input():
    D = np.zeros((6, 6))
    with pytest.raises(ValueError, match=">= 2 runs per depth"):
        bootstrap_extras([D], 1)
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_extras([D], 3, n_boot=0)
    with pytest.raises(ValueError, match="level"):
        bootstrap_interval([D], 3, level=1.0)
