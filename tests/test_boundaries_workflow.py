"""Boundaries of the workflow's fits and maps, written against the public functions of
``mechaudit.workflow.calibrate``, ``robustness`` and ``power`` as they stand (kept apart from the
other boundary tests so that they can follow a rewrite of those modules): largest-remainder rounding
of shares, "within tolerance" as the largest |z|, the rule-bias standard error as SD / sqrt(n), and
the power ladder stopping at the first rung whose power reaches the level (``>=``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechaudit.schema import load_benchmark
from mechaudit.workflow import load_design, load_simulator_params
from mechaudit.workflow.calibrate import CalibrationSpec, round_shares, scan, score
from mechaudit.workflow.power import EffectSetting, power_table, runs_needed
from mechaudit.workflow.robustness import rule_bias, vary

K01 = "critique_depth.extra_divergence_pp.k0_vs_k1"
K05 = "critique_depth.extra_divergence_pp.k0_vs_k5"


@pytest.fixture(scope="module")
def sim():
    bench = load_benchmark()
    instances = [i.id for i in bench.instances]
    return bench, instances, load_design(instances=instances), load_simulator_params()


# ---------------------------------------------------------------- shares: largest remainder, not round


@pytest.mark.parametrize(("shares", "digits", "expected"), [
    # 1.55 1.55 6.9 -> floors 1 1 6 (8 of 10), the two largest remainders (0.9, then the first 0.55)
    # get one more: 2 1 7 (rounding each would give 2 2 7 = 11 tenths)
    ([0.155, 0.155, 0.69], 1, [0.2, 0.1, 0.7]),
    ([1 / 3, 1 / 3, 1 / 3], 2, [0.34, 0.33, 0.33]),  # one hundredth to the first of equal remainders
    ([0.125, 0.375, 0.5], 1, [0.1, 0.4, 0.5]),
    ([0.29, 0.71], 2, [0.29, 0.71]),  # 0.29 * 100 = 28.999...: not floored to 28
    ([0.61, 0.27, 0.09, 0.03], 2, [0.61, 0.27, 0.09, 0.03]),
    ([0.0, 1.0], 3, [0.0, 1.0]),
])
def test_round_shares_is_largest_remainder(shares, digits, expected):
    got = round_shares(np.array(shares), digits)
    assert got.tolist() == pytest.approx(expected, abs=1e-12)
    assert got.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(np.abs(got - np.array(shares)) < 10.0 ** -digits)  # never more than one unit off


# ------------------------------------------------------------ calibration scan: every target within half a tolerance


@pytest.fixture(scope="module")
def tiny_scan(sim):
    """A one-point scan of the committed simulator on a small design, and its expected extra divergences."""
    bench, _, design, base = sim
    spec = CalibrationSpec(runs_per_depth=3, mixture_runs_per_depth=3, targets={K01: 2.0, K05: 2.0},
                           grid={"p_find": [base.p_find]}, fixed={})
    first = scan(bench, design, base, spec, targets={K01: 0.0, K05: 0.0})
    return lambda targets: score(first, spec, targets), first


@pytest.mark.parametrize(("z01", "z05", "within"), [
    (0.125, -0.625, False),  # mean |z| 0.375 but one target 0.625 tolerances away
    (0.505, 0.0, False),     # just outside on one target
    (0.495, -0.495, True),   # just inside on both
    (0.5, -0.5, True),       # exactly half a tolerance away on both: within (|z| <= 0.5)
    (0.0, 0.0, True),
])
def test_within_half_tolerance_uses_the_largest_z(tiny_scan, z01, z05, within):
    run, first = tiny_scan
    e01, e05 = float(first["extra_0v1_pp"].iloc[0]), float(first["extra_0v5_pp"].iloc[0])
    targets = {K01: e01 - 2.0 * z01, K05: e05 - 2.0 * z05}
    z = ((e01 - targets[K01]) / 2.0, (e05 - targets[K05]) / 2.0)
    assert z == pytest.approx((z01, z05), abs=1e-12)
    if abs(z01) == 0.5:
        assert z == (z01, z05)  # the boundary case is exact in floating point
    out = run(targets)
    assert bool(out["within_half_tolerance"].iloc[0]) is within
    assert out["max_abs_z"].iloc[0] == pytest.approx(max(abs(z01), abs(z05)), abs=1e-12)
    assert out["objective"].iloc[0] == pytest.approx(z01**2 + z05**2, abs=1e-9)


# ---------------------------------------------------------------- rule bias: SE of a mean is SD / sqrt(n)


def _bias_inputs(values, truth=2.0, truth_se=0.05):
    reps = pd.DataFrame({"point": 0, "rule": "r", "comparison": "1 v 5", "extra_pp": values})
    truths = pd.DataFrame({"truth_1v5_pp": [truth], "se_1v5_pp": [truth_se]})
    return reps, truths


def test_rule_bias_standard_error_against_its_formula():
    rng = np.random.default_rng(7)
    values = 3.0 + rng.standard_normal(16)
    reps, truths = _bias_inputs(values)
    row = rule_bias(reps, truths).iloc[0]
    se_mean = np.std(values, ddof=1) / np.sqrt(len(values))
    assert row.n_reps == 16
    assert row.mean_pp == pytest.approx(values.mean())
    assert row.bias_pp == pytest.approx(values.mean() - 2.0)
    assert row.bias_se_pp == pytest.approx(np.hypot(se_mean, 0.05))


@pytest.mark.parametrize(("shift", "direction"), [(1.0, "over"), (-1.0, "under"), (0.2, "unbiased")])
def test_rule_bias_direction_with_sixteen_replications(shift, direction):
    # 16 values with SD 1 around truth + shift: SE of the mean 0.25, combined with 0.05 -> 0.255;
    # |bias| 1.0 > 2 x 0.255 is a bias, 0.2 is not (with SD instead of SE every shift would be "unbiased")
    values = 2.0 + shift + np.array([-1.0, 1.0] * 8) * np.sqrt(15 / 16)
    reps, truths = _bias_inputs(values)
    row = rule_bias(reps, truths, z=2.0).iloc[0]
    assert np.std(values, ddof=1) == pytest.approx(1.0)
    assert row.bias_se_pp == pytest.approx(np.hypot(0.25, 0.05))
    assert row.direction == direction


def test_rule_bias_of_a_single_replication_has_no_standard_error():
    reps, truths = _bias_inputs([5.0])
    row = rule_bias(reps, truths).iloc[0]
    assert np.isnan(row.bias_se_pp) and row.direction == "unbiased"


# ---------------------------------------------------------------- power ladder: stop at power >= level


def _ladder(sim, level, ladder=(3, 6)):
    bench, instances, _, base = sim
    setting = EffectSetting(5.0, {"p_find": 0.5}, vary(base, p_find=0.5), 5.0, 0.3)
    table = power_table(bench, instances, [setting], designs=[], n_reps=12, ladder=list(ladder), level=level,
                        pool_runs_per_depth=12, seed=0, n_pools=1, n_resamples=49)
    return table[table.role == "ladder"]


def test_the_ladder_stops_at_a_rung_whose_power_equals_the_level(sim):
    first = float(_ladder(sim, level=1.0, ladder=(3,)).power.iloc[0])
    assert 0.0 < first < 1.0  # an informative rung
    at = _ladder(sim, level=first)
    assert list(at.runs_per_depth) == [3]  # power == level: reached, the rest is skipped
    above = _ladder(sim, level=float(np.nextafter(first, 1.0)))
    assert list(above.runs_per_depth) == [3, 6]
    assert float(above.power.iloc[0]) == first  # common random numbers: the same rung, the same power
    need = runs_needed(at, level=first).iloc[0]
    assert need.runs_needed == 3 and need.power_there == first


@pytest.mark.parametrize(("level", "needed"), [(0.79, 10), (0.8, 10), (0.81, 20), (0.95, None)])
def test_runs_needed_counts_a_rung_at_the_level(level, needed):
    table = pd.DataFrame({"target_pp": 2.0, "truth_pp": 2.1, "n_instances": 4, "runs_per_depth": [5, 10, 20],
                          "power": [0.4, 0.8, 0.9], "role": "ladder"})
    out = runs_needed(table, level=level).iloc[0]
    if needed is None:
        assert np.isnan(out.runs_needed) and out.power_at_largest == 0.9
    else:
        assert out.runs_needed == needed
