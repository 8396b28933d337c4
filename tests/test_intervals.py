"""Bootstrap intervals of the extra divergence (mechaudit.workflow.intervals) against a loop
implementation with the same random draws, and on cases whose answer is known."""

from __future__ import annotations

import warnings
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


def _draws(Ds, n_a, n_boot, seed):
    """The resampled run indices of ``bootstrap_extras``: per instance (ia, ib), shapes (B, n_a), (B, n - n_a)."""
    rng = np.random.default_rng(seed)
    out = []
    for D in Ds:
        n = len(D)
        ia = rng.integers(0, n_a, size=(n_boot, n_a))
        out.append((ia, n_a + rng.integers(0, n - n_a, size=(n_boot, n - n_a))))
    return out


def test_resamples_without_a_same_depth_pair_are_dropped_silently():
    """Two runs per depth: a quarter of the resamples copy one run at both depths (no same-depth
    pair, dropped), others keep one pair; the kept values equal the loop, and numpy warns nothing."""
    rng = np.random.default_rng(3)
    Ds, n_a, n_boot = [_matrix(rng, 4), _matrix(rng, 4)], 2, 400
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fast = bootstrap_extras(Ds, n_a, n_boot=n_boot, seed=5)
    per = []
    for D, (ia, ib) in zip(Ds, _draws(Ds, n_a, n_boot, 5)):
        per.append([_loop_extra(D, a, b) if len(set(a)) > 1 or len(set(b)) > 1 else np.nan for a, b in zip(ia, ib)])
    expected = np.mean(per, axis=0)
    expected = expected[np.isfinite(expected)]
    one_pair = sum(len(set(a)) + len(set(b)) == 3 for a, b in zip(*_draws(Ds, n_a, n_boot, 5)[0]))
    assert 0.3 * n_boot < len(expected) < 0.8 * n_boot and one_pair > 0  # both cases occur
    np.testing.assert_allclose(fast, expected, atol=1e-12)


def test_defaults_are_2000_resamples_with_seed_0_and_any_count_from_one_works():
    rng = np.random.default_rng(4)
    Ds = [_matrix(rng, 8)]
    extras = bootstrap_extras(Ds, 4)
    assert extras.shape == (2000,)
    np.testing.assert_array_equal(extras, bootstrap_extras(Ds, 4, n_boot=2000, seed=0))
    assert bootstrap_interval(Ds, 4) == bootstrap_interval(Ds, 4, 0.95, n_boot=2000, seed=0)
    assert bootstrap_interval(Ds, 4) != bootstrap_interval(Ds, 4, 0.95, n_boot=2001, seed=0)
    assert bootstrap_extras(Ds, 4, n_boot=1).shape == (1,)


def test_two_runs_per_depth_is_the_limit_on_either_side():
    rng = np.random.default_rng(6)
    assert bootstrap_extras([_matrix(rng, 4)], 2, n_boot=5).shape[0] <= 5  # 2 + 2 runs
    assert bootstrap_extras([_matrix(rng, 5)], 3, n_boot=5).shape[0] <= 5  # 3 + 2 runs
    for n, n_a in ((5, 1), (5, 4), (6, 5)):
        with pytest.raises(ValueError, match=">= 2 runs per depth"):
            bootstrap_extras([_matrix(rng, n)], n_a, n_boot=5)


def test_single_precision_divergences_are_averaged_in_double_precision():
    rng = np.random.default_rng(7)
    D32 = _matrix(rng, 10).astype(np.float32)
    np.testing.assert_array_equal(bootstrap_extras([D32], 5, n_boot=50, seed=1),
                                  bootstrap_extras([D32.astype(float)], 5, n_boot=50, seed=1))
