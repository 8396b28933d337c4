"""Calibration of the simulator (mechaudit.workflow.calibrate) and the ceiling of the extra divergence."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from mechaudit.divergence import comparison_matrix, extra_divergence
from mechaudit.paths import PARAMS_DIR
from mechaudit.workflow import Design, counts, depth_table, load_design, load_simulator_params, simulate
from mechaudit.workflow.calibrate import (
    Measured,
    calibrate,
    expected_density,
    load_calibration,
    matches,
    measure,
    p_extra_from_density,
    paper_targets,
    round_shares,
    solve_reply_sound,
)
from mechaudit.workflow.depth import InstanceMatrix, extra_ceiling
from mechaudit.workflow.records import LABELS


def test_p_extra_closed_form_matches_paper_density():
    t = paper_targets()
    density = t["matched_pairs"] / t["run_pairs"]
    p = p_extra_from_density(density, int(t["openings"]), 2)
    assert p == pytest.approx(0.2609, abs=1e-4)
    assert expected_density(p, 5, 2) == pytest.approx(density, rel=1e-12)
    # by simulation of the development step alone: E[n_a n_b] over independent runs
    rng = np.random.default_rng(0)
    n = 1 + rng.binomial(2, p, size=(2, 200_000, 5))
    assert (n[0] * n[1]).sum(axis=1).mean() == pytest.approx(density, rel=0.01)
    with pytest.raises(ValueError, match="out of reach"):
        p_extra_from_density(50.0, 5, 2)
    with pytest.raises(ValueError, match="out of reach"):
        p_extra_from_density(4.0, 5, 2)


def test_round_shares_sums_to_one():
    r = round_shares(np.array([1 / 3, 1 / 3, 1 / 3, 0.0]), 2)
    assert r.sum() == pytest.approx(1.0) and sorted(r.tolist()) == [0.0, 0.33, 0.33, 0.34]
    assert round_shares(np.array([0.614, 0.266, 0.09, 0.03]), 2).tolist() == [0.61, 0.27, 0.09, 0.03]


def test_measure_splits_weak_and_sound_demands_exactly(bench):
    """The two-run decomposition equals the counts read from the logged demands and replies."""
    params = load_simulator_params()
    design = Design(instances=tuple(i.id for i in bench.instances[:2]), depths=(0, 1, 5), runs_per_depth=2)
    m = measure(bench, design, params, runs_per_depth=3, seed=4)
    big = design.model_copy(update={"runs_per_depth": 3})
    weak, sound = np.zeros(len(LABELS)), 0
    for run in simulate(bench, big, params, seed=4):
        for demand, reply in zip(run.demands, run.replies):
            assert ((demand.hypothesis_id, demand.number, demand.round)
                    == (reply.hypothesis_id, reply.number, reply.round))
            if demand.weak_link:
                weak[LABELS.index(reply.label)] += 1
            else:
                sound += 1
    assert sound > 0 and weak.sum() > 0
    assert m.weak_labels.tolist() == weak.tolist() and m.n_sound == sound
    assert m.demands_per_runs(2) == pytest.approx((weak.sum() + sound) * 2 / 3)
    c = counts(simulate(bench, big, params, seed=4, log=False))
    assert m.pairs_per_run_pair == pytest.approx(c["matched_pairs"] / c["run_pairs"], rel=1e-12)
    with pytest.raises(ValueError, match="include 0 and 1"):
        measure(bench, design.model_copy(update={"depths": (0, 5)}), params, 2)


def test_solve_reply_sound_completes_the_mixture():
    m = Measured(30.0, np.array([500.0, 40.0, 30.0, 20.0]), 400, 11.6, 10)
    target = np.array([61.0, 27.0, 9.0, 3.0])
    reply = solve_reply_sound(m, target, digits=6)
    assert reply.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(m.shares(reply), target, atol=1e-3)
    # a share the weak-link demands alone already exceed cannot be reached
    with pytest.raises(ValueError, match="no reply_sound"):
        solve_reply_sound(m, np.array([40.0, 40.0, 10.0, 10.0]))


def test_bad_calibration_file(tmp_path):
    path = tmp_path / "cal.yaml"
    path.write_text("calibration:\n  runs_per_depth: 10\n  mixture_runs_per_depth: 10\n"
                    "  extra_tolerance_pp: 3\n  grid: {reply_sound: [0.1]}\n  fixed: {}\n")
    with pytest.raises(ValueError, match=r"cal.yaml:\d+: field 'calibration.grid'"):
        load_calibration(path)
    path.write_text("calibration: [1, 2]\n")
    with pytest.raises(ValueError, match="field 'calibration'"):
        load_calibration(path)


def test_scan_reproduces_committed_defaults(bench):
    """Acceptance: the calibration, on a small grid around the defaults, finds params/simulator.yaml."""
    spec = load_calibration()
    committed = load_simulator_params()
    small = spec.model_copy(update={"grid": {"p_weak_unsupported": [0.8, 0.85, 0.9, 0.95]}})
    cal = calibrate(bench, load_design(PARAMS_DIR / "paper.yaml", instances=[i.id for i in bench.instances]),
                    committed, small)
    assert matches(committed, cal.values()) == {k: True for k in cal.values()}


def test_scan_finds_a_planted_optimum(bench):
    """Take the 0 v 1 effect simulated at p_weak_unsupported = 0.7 as the target: the scan must
    return 0.7, and the mixture solved from the paper's shares must be reached."""
    spec = load_calibration().model_copy(update={"runs_per_depth": 10, "mixture_runs_per_depth": 20,
                                                 "grid": {"p_weak_unsupported": [0.5, 0.7, 0.9]}})
    design = Design(instances=tuple(i.id for i in bench.instances), depths=(0, 1, 5), runs_per_depth=5)
    base = load_simulator_params()
    targets = paper_targets()
    planted = measure(bench, design, base.model_copy(update={"p_weak_unsupported": 0.7}), 10, seed=spec.seed)
    targets["extra_0v1_pp"] = planted.extra_0v1_pp
    cal = calibrate(bench, design, base, spec, targets)
    assert cal.values()["p_weak_unsupported"] == 0.7
    assert cal.scan.objective.min() == pytest.approx(0.0, abs=1e-12)
    shares = cal.measured.shares(cal.params.reply_sound.as_array())
    np.testing.assert_allclose(shares, [targets[f"{x}_pct"] for x in LABELS], atol=1.0)


# --------------------------------------------------------------------------- ceiling


def _brute_ceiling(D: np.ndarray, n_a: int) -> float:
    """Extra divergence after setting every cross-depth run divergence to its maximum, 1."""
    n = len(D)
    E = D.copy()
    for i in range(n_a):
        for j in range(n_a, n):
            E[i, j] = E[j, i] = 1.0
    return extra_divergence(E, n_a)


def _brute_same(D: np.ndarray, n_a: int) -> float:
    vals = [D[i, j] for i, j in combinations(range(len(D)), 2) if (i < n_a) == (j < n_a)]
    return float(np.mean(vals))


def test_extra_ceiling_against_brute_force():
    rng = np.random.default_rng(3)
    for n, n_a in [(10, 5), (7, 3), (4, 2)]:
        A = rng.random((n, n))
        D = (A + A.T) / 2
        np.fill_diagonal(D, 0)
        c = extra_ceiling(D, n_a)
        assert c == pytest.approx(_brute_ceiling(D, n_a), abs=1e-12)
        assert c == pytest.approx(1 - _brute_same(D, n_a), abs=1e-12)
        assert extra_divergence(D, n_a) <= c + 1e-12
    with pytest.raises(ValueError, match="n_a"):
        extra_ceiling(np.zeros((4, 4)), 4)


def test_depth_table_ceiling_columns():
    rng = np.random.default_rng(5)
    depths = np.repeat([0, 1, 5], 4)
    mats = []
    for inst in "ab":
        A = rng.random((12, 12))
        D = (A + A.T) / 2
        np.fill_diagonal(D, 0)
        mats.append(InstanceMatrix(inst, D, depths))
    table = depth_table(mats, [(0, 1), (1, 5)]).set_index("comparison")
    for a, b in [(0, 1), (1, 5)]:
        subs = [comparison_matrix(m.D, m.depths, a, b) for m in mats]
        ceiling = 100 * np.mean([_brute_ceiling(D, n_a) for D, n_a in subs])
        extra = 100 * np.mean([extra_divergence(D, n_a) for D, n_a in subs])
        row = table.loc[f"{a} v {b}"]
        assert row.max_extra_pp == pytest.approx(ceiling, abs=1e-9)
        assert row.normalised == pytest.approx(extra / ceiling, abs=1e-9)
    # all-ones matrices: no room for extra divergence, normalised undefined
    ones = [InstanceMatrix("c", np.ones((12, 12)) - np.eye(12), depths)]
    row = depth_table(ones, [(0, 1)]).iloc[0]
    assert row.max_extra_pp == pytest.approx(0.0, abs=1e-12) and np.isnan(row.normalised)
