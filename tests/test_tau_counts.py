"""Counts that decide a tau result: the pass rule's "at least 2 roles at q75" and the sampler's
quotas when the pairs do not divide evenly over the bins. Each fixture is chosen so that the count
itself decides (an off-by-one in the count changes the answer)."""

from __future__ import annotations

import pytest

from mechaudit.tau import make_pool, sample_pairs
from mechaudit.tau.anchors import passes

THRESHOLDS = {"q50": 5.0, "q75": 7.0}


@pytest.mark.parametrize("scores, expected", [
    ([7.0, 7.0, 3.0], True),    # exactly 2 roles at q75 (ties count), mean 5.67 >= q50
    ([7.0, 6.99, 3.0], False),  # only 1 role at q75 although the mean 5.66 is above q50
    ([9.0, 9.0, 9.0], True),    # 3 roles at q75
    ([7.0, 7.0, 1.0], True),    # mean exactly q50
    ([7.0, 7.0, 0.9], False),   # 2 roles at q75 but the mean 4.97 is below q50
])
def test_pass_rule_needs_at_least_two_roles_at_q75_and_the_mean_at_q50(scores, expected):
    assert passes(scores, THRESHOLDS) is expected


@pytest.mark.parametrize("n_pairs", [10, 203])
def test_sampler_spreads_a_remainder_over_the_first_bins(n_pairs):
    """203 pairs over 4 bins: 51, 51, 51, 50 (not 50 each); 80 % of each bin within one pattern,
    rounded per bin; every quota is filled, so the total is exactly ``n_pairs``."""
    pairs = sample_pairs(make_pool(seed=0).table(), n_pairs, seed=1)
    per_bin, extra = divmod(n_pairs, 4)
    sizes = [per_bin + (b < extra) for b in range(4)]
    counts = pairs.groupby("bin").size().reindex(range(4), fill_value=0).tolist()
    assert counts == sizes and len(pairs) == n_pairs
    same = pairs.groupby("bin")["same_pattern"].sum().reindex(range(4), fill_value=0).tolist()
    assert same == [round(0.8 * s) for s in sizes]
