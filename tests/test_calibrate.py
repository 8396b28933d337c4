"""Calibration of the simulator (mechaudit.workflow.calibrate) and the ceiling of the extra divergence."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from mechaudit.divergence import comparison_matrix, extra_divergence
from mechaudit.paths import PARAMS_DIR
from mechaudit.workflow import Design, committed, counts, depth_table, load_design, load_simulator_params, simulate
from mechaudit.workflow.calibrate import (
    EXTRA_KEY,
    SCAN_NAME,
    Measured,
    calibrate,
    closed_form_base,
    comparison_of,
    constrained_by_fit,
    expected_density,
    expected_extras,
    fit_table,
    load_calibration,
    matches,
    measure,
    mixture_reachable,
    p_extra_from_density,
    paper_targets,
    project_simplex,
    round_shares,
    scan_settings,
    score,
    solve_reply_sound,
)
from mechaudit.workflow.depth import InstanceMatrix, extra_ceiling
from mechaudit.workflow.records import LABELS
from mechaudit.workflow.validity import population_truth


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
    m = Measured({"0 v 1": 30.0}, np.array([500.0, 40.0, 30.0, 20.0]), 400, 11.6, 10)
    target = np.array([61.0, 27.0, 9.0, 3.0])
    reply = solve_reply_sound(m, target, digits=6)
    assert reply.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(m.shares(reply), target, atol=1e-3)
    with pytest.raises(ValueError, match="not identified"):
        solve_reply_sound(Measured({}, np.ones(4), 0, 11.6, 10), target)


def test_unreachable_mixture_gets_the_closest_reply_in_least_squares():
    """Weak-link demands alone exceed the conceded target: the solution is the probability vector
    whose mixture is nearest the target, checked against a constrained optimiser."""
    from scipy.optimize import minimize

    m = Measured({}, np.array([700.0, 40.0, 30.0, 20.0]), 210, 11.6, 10)
    target = np.array([61.0, 27.0, 9.0, 3.0])
    reply = solve_reply_sound(m, target, digits=6)
    res = minimize(lambda r: np.sum((m.shares(r) - target) ** 2), np.full(4, 0.25), method="SLSQP",
                   bounds=[(0, 1)] * 4, constraints=[{"type": "eq", "fun": lambda r: r.sum() - 1}], tol=1e-12)
    np.testing.assert_allclose(reply, res.x, atol=1e-4)
    assert reply[0] == 0.0 and m.shares(reply)[0] > 61.0
    assert not mixture_reachable(m, target)
    assert mixture_reachable(Measured({}, np.array([500.0, 40.0, 30.0, 20.0]), 400, 11.6, 10), target)


def test_project_simplex_against_brute_force():
    rng = np.random.default_rng(4)
    steps = np.linspace(0, 1, 21)
    grid = np.array([(a, b, c, 1 - a - b - c) for a in steps for b in steps for c in steps if a + b + c <= 1 + 1e-12])
    for _ in range(20):
        v = rng.normal(0, 1, 4)
        x = project_simplex(v)
        assert x.min() >= 0 and x.sum() == pytest.approx(1.0)
        assert np.sum((x - v) ** 2) <= np.min(np.sum((grid - v) ** 2, axis=1)) + 1e-12  # no grid point is closer
    assert project_simplex(np.array([0.2, 0.3, 0.5])).tolist() == pytest.approx([0.2, 0.3, 0.5])


def test_comparison_keys():
    assert comparison_of(EXTRA_KEY + "k0_vs_k5") == (0, 5)
    with pytest.raises(ValueError, match="extra-divergence key"):
        comparison_of("engagement.demands")
    assert paper_targets([EXTRA_KEY + "k0_vs_k5"])[EXTRA_KEY + "k0_vs_k5"] == 39.8


def _spec_text(grid: str, fitted: str = "", targets: str = "{critique_depth.extra_divergence_pp.k0_vs_k1: 3}") -> str:
    return ("calibration:\n  runs_per_depth: 10\n  mixture_runs_per_depth: 10\n"
            f"  targets: {targets}\n  grid: {grid}\n  fixed: {{}}\n" + fitted)


def test_bad_calibration_file(tmp_path):
    path = tmp_path / "cal.yaml"
    path.write_text(_spec_text("{reply_sound: [0.1]}"))
    with pytest.raises(ValueError, match=r"cal.yaml:\d+: field 'calibration.grid'"):
        load_calibration(path)
    path.write_text(_spec_text("{p_find: [0.9]}", targets="{engagement.demands: 3}"))
    with pytest.raises(ValueError, match="extra-divergence key"):
        load_calibration(path)
    path.write_text(_spec_text("{p_find: [0.9]}") + "  measure: tfidf\n")
    with pytest.raises(ValueError, match="unknown measure"):
        load_calibration(path)
    path.write_text("calibration: [1, 2]\n")
    with pytest.raises(ValueError, match="field 'calibration'"):
        load_calibration(path)


def test_fitted_section_must_name_what_is_fitted(tmp_path):
    """The provenance section ``fitted`` lists every fitted parameter with its targets: the committed
    file does; a grid parameter listed with other targets, or a parameter both fitted and assumed, is
    an error (a missing one is reported by mechaudit.report.provenance.unlabelled, tested there)."""
    from mechaudit import paper
    from mechaudit.report import provenance
    from mechaudit.workflow.calibrate import SOLVED

    spec = load_calibration()
    assert set(spec.fitted) == set(spec.grid) | set(SOLVED) | set(spec.chosen)
    assert set(spec.chosen) == {"reply_weak"} and not set(spec.chosen) & set(spec.fixed)
    assert all(sorted(spec.fitted[k]) == sorted(spec.targets) for k in spec.grid)
    assert provenance.unlabelled(set(spec.grid) | set(SOLVED), paper.entries()) == []
    path = tmp_path / "cal.yaml"
    fitted = ("  fitted:\n    p_find: [critique_depth.extra_divergence_pp.k0_vs_k1]\n"
              "    p_extra_hypothesis: [design.matched_pairs]\n"
              "    reply_sound: [engagement.conceded_pct, engagement.answered_pct, engagement.partial_pct, "
              "engagement.dropped_pct]\n")
    path.write_text(_spec_text("{p_find: [0.9]}", fitted))
    assert load_calibration(path).fitted["p_find"] == [EXTRA_KEY + "k0_vs_k1"]
    path.write_text(_spec_text("{p_find: [0.9]}", fitted.replace("k0_vs_k1]", "k1_vs_k5]")))
    with pytest.raises(ValueError, match="wrong paper keys for \\['p_find'\\]"):
        load_calibration(path)
    path.write_text(_spec_text("{p_find: [0.9]}", fitted).replace("fixed: {}", "fixed: {p_find: assumed}"))
    with pytest.raises(ValueError, match="both as fitted and as assumptions"):
        load_calibration(path)
    path.write_text(_spec_text("{p_find: [0.9]}", fitted) + "  chosen: {reply_weak: by hand}\n")
    with pytest.raises(ValueError, match="chosen explains \\['reply_weak'\\], which fitted does not list"):
        load_calibration(path)
    path.write_text(_spec_text("{p_find: [0.9]}", fitted) + "  untargeted_sd: {engagement.demands: 1}\n")
    with pytest.raises(ValueError, match="extra-divergence key"):
        load_calibration(path)
    path.write_text(_spec_text("{p_find: [0.9]}", fitted) + "  target_correlation: 1.0\n")
    with pytest.raises(ValueError, match="target_correlation"):
        load_calibration(path)


def committed_scan(design, base, spec):
    """The committed scan if it was computed with exactly these settings (``run_calibration``'s
    lookup), else None."""
    params, _ = closed_form_base(base, spec, paper_targets(list(spec.targets)))
    return committed.load(SCAN_NAME, scan_settings(design, params, spec))


def _committed_inputs(bench):
    spec = load_calibration()
    design = load_design(PARAMS_DIR / "paper.yaml", instances=[i.id for i in bench.instances])
    return spec, design, load_simulator_params()


def test_committed_scan_matches_the_committed_settings(bench):
    """data/computed/calibration_scan.csv was computed from today's calibration.yaml, design, data
    and fixed simulator parameters; every expected value's Monte Carlo SE is within the limit."""
    spec, design, base = _committed_inputs(bench)
    table = committed_scan(design, base, spec)
    assert table is not None, "stale data/computed/calibration_scan.csv: run `mechaudit calibrate --only scan`"
    assert len(table) == np.prod([len(v) for v in spec.grid.values()]) and table.se_ok.all()
    assert table.best.sum() == 1 and table.within_half_tolerance.any()
    # another spec (one seed fewer) does not match the committed file
    assert committed_scan(design, base, spec.model_copy(update={"n_seeds": spec.n_seeds - 1})) is None


def test_committed_point_fits_the_targets_on_expected_values(bench):
    """Acceptance: at params/simulator.yaml the expected 0 v 1 and 0 v 5 (population_truth under the
    paper-rate measure, 200 runs per depth, several seeds) lie within half the tolerance of the paper's,
    each with a Monte Carlo SE at most a tenth of it; and the re-evaluation equals the committed row."""
    spec, design, base = _committed_inputs(bench)
    assert spec.runs_per_depth >= 200 and spec.n_seeds >= 3
    truth = population_truth(bench, design, base, runs_per_depth=spec.runs_per_depth, seed=spec.seed,
                             measures=(spec.measure,), n_seeds=spec.n_seeds).set_index("label")
    targets = paper_targets(list(spec.targets))
    for key, tol in spec.targets.items():
        a, b = comparison_of(key)
        value, se = truth.truth_pp[f"{a} v {b}"], truth.truth_se_pp[f"{a} v {b}"]
        assert abs(value - targets[key]) <= tol / 2, (key, value)
        assert se <= spec.max_se_share * tol, (key, se)
    best = committed_scan(design, base, spec).query("best").iloc[0]
    assert {k: best[k] for k in spec.grid} == {k: getattr(base, k) for k in spec.grid}
    for label in ("0 v 1", "0 v 5", "1 v 5"):
        tag = label.replace(" ", "")
        assert best[f"extra_{tag}_pp"] == pytest.approx(truth.truth_pp[label], abs=1e-9)
        assert best[f"se_{tag}_pp"] == pytest.approx(truth.truth_se_pp[label], abs=1e-9)


def test_another_committed_row_re_evaluates_exactly(bench):
    """A point far from the best, simulated again, gives the committed row to the last digit."""
    spec, design, base = _committed_inputs(bench)
    row = committed_scan(design, base, spec).iloc[0]
    params = closed_form_base(base, spec, paper_targets(list(spec.targets)))[0]
    again = expected_extras(bench, design, params.model_copy(update={k: float(row[k]) for k in spec.grid}), spec)
    for label, (value, se) in again.items():
        tag = label.replace(" ", "")
        assert (row[f"extra_{tag}_pp"], row[f"se_{tag}_pp"]) == (pytest.approx(value, abs=1e-9),
                                                                   pytest.approx(se, abs=1e-9))


def test_committed_values_are_the_calibration(bench):
    """params/simulator.yaml holds exactly what the calibration gives from the committed scan (the
    best point and the closed-form values), and the record of what the fit constrains re-derives."""
    from mechaudit.report import provenance

    spec, design, base = _committed_inputs(bench)
    cal = calibrate(bench, design, base, spec, table=committed_scan(design, base, spec))
    assert matches(base, cal.values()) == {k: True for k in cal.values()}
    assert constrained_by_fit(cal.scan, spec) == provenance.constrained_keys()


def test_scan_finds_a_planted_optimum(bench):
    """Take the expected effects at p_weak_supported = 0.7, p_find = 0.9 (same seeds and sizes as the
    scan) as the targets: the scan must return that point with objective 0, and the mixture must be
    the one solve_reply_sound gives there."""
    spec = load_calibration().model_copy(update={"runs_per_depth": 10, "n_seeds": 2, "mixture_runs_per_depth": 10,
                                                 "grid": {"p_weak_supported": [0.5, 0.7, 0.9],
                                                          "p_find": [0.6, 0.9]}})
    design = Design(instances=tuple(i.id for i in bench.instances), depths=(0, 1, 5), runs_per_depth=5)
    base = load_simulator_params()
    targets = paper_targets(list(spec.targets))
    params, _ = closed_form_base(base, spec, targets)
    planted = expected_extras(bench, design, params.model_copy(update={"p_weak_supported": 0.7, "p_find": 0.9}), spec)
    for key in spec.targets:
        a, b = comparison_of(key)
        targets[key] = planted[f"{a} v {b}"][0]
    cal = calibrate(bench, design, base, spec, targets, n_jobs=2)
    assert cal.values()["p_weak_supported"] == 0.7 and cal.values()["p_find"] == 0.9
    assert cal.scan.objective.min() == pytest.approx(0.0, abs=1e-12)
    best_row = cal.scan[cal.scan.best].iloc[0]
    assert best_row.within_half_tolerance and best_row.consistent and best_row.distance == pytest.approx(0, abs=1e-9)
    # re-scoring the same table (the committed-file path) gives the same result without simulating
    again = calibrate(bench, design, base, spec, targets, table=cal.scan)
    assert again.values() == cal.values()
    with pytest.raises(ValueError, match="grid points"):
        calibrate(bench, design, base, spec, targets, table=cal.scan.iloc[::-1])
    shares = cal.measured.shares(cal.params.reply_sound.as_array())
    best = solve_reply_sound(cal.measured, np.array([targets[f"{x}_pct"] for x in LABELS]), digits=6)
    np.testing.assert_allclose(shares, cal.measured.shares(best), atol=1.0)
    # the fit table: fitted rows first (density, each grid parameter, the mixture), then the values chosen
    # by hand, then each assumption
    table = fit_table(cal, base, spec).set_index("parameter")
    assert list(table.index) == ["p_extra_hypothesis", "p_weak_supported", "p_find", "reply_sound", *spec.chosen,
                                 *spec.fixed]
    row = table.loc["p_find"]
    assert (row.calibrated, row.committed) == ("0.9", f"{base.p_find:g}")
    assert row["target value"] == " / ".join(f"{targets[k]:g}" for k in spec.targets)
    tags = [f"{comparison_of(k)[0]}v{comparison_of(k)[1]}" for k in spec.targets]
    assert row.achieved == " / ".join(f"{best_row[f'extra_{t}_pp']:.1f} ± {best_row[f'se_{t}_pp']:.1f}" for t in tags)
    density = table.loc["p_extra_hypothesis"]
    assert density["target value"] == f"{targets['matched_pairs'] / targets['run_pairs']:.2f}"
    expected = expected_density(cal.params.p_extra_hypothesis, int(targets["openings"]),
                                cal.params.extra_hypotheses_max)
    assert density.achieved.startswith(f"{expected:.2f} expected")
    assert table.loc["reply_sound", "achieved"] == " / ".join(f"{x:.1f}" for x in shares)
    assert table.loc["reply_sound", "target"] == "demand shares c / a / p / d, % (closed form)"
    assert density.target == "matched pairs per run pair (closed form)"
    chosen = table.loc["reply_weak"]
    assert chosen.calibrated == "(chosen)" and chosen.target.startswith("chosen: by hand")
    assert chosen["target value"] == "61 / 27 / 9 / 3" and chosen.achieved == table.loc["reply_sound", "achieved"]
    assumed = table.loc[list(spec.fixed)]
    assert (assumed.calibrated == "(assumed)").all() and (assumed.achieved == "").all()
    assert (assumed["target value"] == "").all()
    assert [t.removeprefix("assumption: ") for t in assumed.target] == list(spec.fixed.values())


def test_score_against_a_hand_computation():
    """objective, max |z|, the half-tolerance flag and the SE check from their definitions."""
    spec = load_calibration()
    table = pd.DataFrame({"p_weak_supported": [0.8, 0.9], "p_find": [1.0, 1.0],
                          "extra_0v1_pp": [34.5 + 1.5, 34.5 - 1.6], "extra_0v5_pp": [39.8, 39.8 + 3.0],
                          "se_0v1_pp": [0.3, 0.31], "se_0v5_pp": [0.1, 0.1]})
    out = score(table, spec, paper_targets(list(spec.targets)))
    assert out.objective.tolist() == pytest.approx([0.25, (1.6 / 3) ** 2 + 1.0])
    assert out.max_abs_z.tolist() == pytest.approx([0.5, 1.0])
    assert out.within_half_tolerance.tolist() == [True, False]  # at exactly half a tolerance: inside
    assert out.se_ok.tolist() == [True, False]  # 0.3 is a tenth of 3; 0.31 is not
    assert out.best.tolist() == [True, False]


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
    assert list(table.columns) == ["extra_pp", "ci_low_pp", "ci_high_pp", "p_value", "n_partitions", "n_instances",
                                   "max_extra_pp", "normalised"]
    assert ((table.ci_low_pp <= table.extra_pp) & (table.extra_pp <= table.ci_high_pp)).all()
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


def test_an_untargeted_effect_is_constrained_only_when_its_span_is_below_z_sds():
    """Spans of exactly, and just under, z = 1.96 sampling SDs over the consistent settings (an
    inconsistent setting far off is ignored); targets without a p bound add nothing."""
    from scipy.stats import norm

    spec = load_calibration().model_copy(update={"targets": {}, "untargeted_sd": {
        "critique_depth.extra_divergence_pp.k1_vs_k5": 1.0}})
    z = float(norm.ppf(0.975))

    def table(high):
        return pd.DataFrame({"consistent": [True, True, False], "extra_1v5_pp": [0.0, high, 50.0]})

    assert constrained_by_fit(table(z), spec) == {}
    out = constrained_by_fit(table(np.nextafter(z, 0)), spec)
    assert list(out) == ["critique_depth.extra_divergence_pp.k1_vs_k5"]
    assert "ranges from 0.0 to 2.0 pp" in out["critique_depth.extra_divergence_pp.k1_vs_k5"]
    assert constrained_by_fit(table(0.0).assign(consistent=False), spec) == {}


def test_parameter_files_whose_section_is_not_a_mapping_say_what_it_should_be(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("calibration: 3\nsimulator: 3\n")
    with pytest.raises(ValueError, match=r"p\.yaml: field 'calibration': expected a mapping of scan settings$"):
        load_calibration(path)
    with pytest.raises(ValueError, match=r"p\.yaml: field 'simulator': expected a mapping of simulator parameters$"):
        load_simulator_params(path)


def test_calibration_setup_reads_the_benchmark_of_its_data_folder():
    from mechaudit.paths import REPO_ROOT
    from mechaudit.workflow.calibrate import calibration_setup

    setup = calibration_setup(REPO_ROOT / "data" / "examples" / "urate_nitrate")
    assert [i.id for i in setup.bench.instances] == list(setup.design.instances)
    assert setup.bench.instances[0].id == "U"


def test_pairs_per_run_pair_counts_an_opening_a_run_lacks_as_zero():
    """Instance A: runs with openings {o1, o2} and {o1}: one matched pair (o1); instance B: two runs of
    two o3 hypotheses each: four. The mean over instances is 2.5."""
    from types import SimpleNamespace

    from mechaudit.workflow.calibrate import pairs_per_run_pair

    def run(instance, *openings):
        return SimpleNamespace(instance=instance, keys=tuple((op, ("X",)) for op in openings))

    outcomes = [run("A", "o1", "o2"), run("A", "o1"), run("B", "o3", "o3"), run("B", "o3", "o3")]
    assert pairs_per_run_pair(outcomes) == 2.5


def test_load_simulation_reads_the_design_file_it_is_given(tmp_path):
    from mechaudit.workflow.simulator import load_simulation

    path = tmp_path / "small.yaml"
    path.write_text("design:\n  instances: all\n  depths: [0, 1]\n  runs_per_depth: 3\n")
    bench, design, _ = load_simulation(design_file=str(path))  # an absolute path wins over params/
    assert (design.depths, design.runs_per_depth) == ((0, 1), 3)
    assert list(design.instances) == [i.id for i in bench.instances]


# --------------------------------------------------------------------------- defaults and small parts


def test_measure_defaults_to_seed_zero_and_the_given_instance_models(bench):
    from mechaudit.workflow.simulator import instance_models

    params = load_simulator_params()
    design = Design(instances=(bench.instances[0].id,), depths=(0, 1), runs_per_depth=2)

    def key(m):
        return m.extras_pp, m.weak_labels.tolist(), m.n_sound, m.pairs_per_run_pair

    default = measure(bench, design, params, 3)
    assert key(default) == key(measure(bench, design, params, 3, seed=0))
    assert key(default) != key(measure(bench, design, params, 3, seed=1))
    assert default.weak_labels.dtype == float and default.runs_per_depth == 3
    heavy = instance_models(bench, 50.0)  # other swap weights: other runs
    assert key(measure(bench, design, params, 3, models=heavy)) != key(default)
    assert key(measure(bench, design, params, 3, models=instance_models(bench, params.evidence_weight))) == key(default)


def test_weak_share_is_the_weak_link_share_of_all_demands():
    m = Measured({}, np.array([3.0, 2.0, 1.0, 0.0]), 4, 11.6, 10)
    assert m.weak_share() == 0.6
    assert Measured({}, np.zeros(4), 5, 1.0, 1).weak_share() == 0.0


def test_p_extra_needs_an_opening_and_an_extra_hypothesis():
    for openings, extra_max in ((0, 2), (5, 0), (0, 0)):
        with pytest.raises(ValueError, match=rf"^need openings >= 1 and extra_max >= 1, got {openings}, {extra_max}$"):
            p_extra_from_density(6.0, openings, extra_max)


def test_solve_reply_sound_rounds_to_two_digits_by_default():
    m = Measured({}, np.array([500.0, 40.0, 30.0, 20.0]), 400, 11.6, 10)
    target = np.array([61.0, 27.0, 9.0, 3.0])
    reply = solve_reply_sound(m, target)
    np.testing.assert_array_equal(reply, round_shares(solve_reply_sound(m, target, digits=6), 2))
    assert np.allclose(reply * 100, np.round(reply * 100)) and not np.allclose(reply * 10, np.round(reply * 10))


def test_matches_tolerates_only_a_rounding_error_by_default():
    params = load_simulator_params()
    reply = params.reply_sound.model_dump()
    assert matches(params, {"p_find": params.p_find + 5e-10, "reply_sound": reply}) == {"p_find": True,
                                                                                         "reply_sound": True}
    assert matches(params, {"p_find": params.p_find + 2e-9}) == {"p_find": False}
    assert matches(params, {"p_find": params.p_find + 2e-9}, atol=1e-8) == {"p_find": True}
    off = dict(reply, conceded=reply["conceded"] + 1e-6)
    assert matches(params, {"reply_sound": off}) == {"reply_sound": False}


def test_fmt_writes_reply_vectors_in_label_order():
    from mechaudit.workflow.calibrate import _fmt

    params = load_simulator_params()
    r = params.reply_sound
    assert _fmt(r) == " / ".join(f"{getattr(r, lab):g}" for lab in LABELS)
    assert _fmt(r.model_dump()) == _fmt(r) and _fmt(0.25) == "0.25" and _fmt(3) == "3"


class _Stop(Exception):
    pass


def test_calibrate_and_scan_pass_the_parallel_engine_on(bench, monkeypatch):
    import mechaudit.workflow.calibrate as cal

    spec = load_calibration()
    design = Design(instances=(bench.instances[0].id,), depths=(0, 1), runs_per_depth=2)
    base = load_simulator_params()
    seen = []

    def stop(*args, **kwargs):
        seen.append((args[2:], kwargs))
        raise _Stop

    monkeypatch.setattr(cal, "parallel_map", stop)
    for kwargs in ({}, {"n_jobs": 3, "parallel_backend": "threading"}):
        with pytest.raises(_Stop):
            cal.scan(bench, design, base, spec, **kwargs)
    assert seen == [((1, None), {}), ((3, "threading"), {})]
    monkeypatch.setattr(cal, "scan", stop)
    seen.clear()
    for kwargs in ({}, {"n_jobs": 3, "parallel_backend": "threading"}):
        with pytest.raises(_Stop):
            cal.calibrate(bench, design, base, spec, **kwargs)
    assert [k for _, k in seen] == [{"n_jobs": 1, "parallel_backend": None},
                                    {"n_jobs": 3, "parallel_backend": "threading"}]


def test_a_p_bound_is_constrained_only_beyond_its_quantile_plus_two_sds():
    """The 0 v 1 target with its paper p bound: constrained when every consistent point's effect is at
    least the bound's two-sided normal quantile plus ``margin_sd`` (default 2) sampling SDs."""
    from scipy.stats import norm

    from mechaudit.paper import reported
    from mechaudit.workflow.calibrate import P_BOUND_KEY

    spec = load_calibration().model_copy(update={"targets": {EXTRA_KEY + "k0_vs_k1": 1.0}, "untargeted_sd": {}})
    bound = P_BOUND_KEY + "k0_vs_k1"
    q = float(norm.ppf(1 - reported(bound) / 2))

    def table(low):
        return pd.DataFrame({"consistent": [True, True, False], "extra_0v1_pp": [low, low + 5, 0.0]})

    assert list(constrained_by_fit(table(q + 2.0), spec)) == [bound]
    assert constrained_by_fit(table(q + 1.9), spec) == {}
    assert list(constrained_by_fit(table(q + 1.0), spec, margin_sd=1.0)) == [bound]
    assert constrained_by_fit(table(q - 1.0), spec) == {}
