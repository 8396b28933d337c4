"""The robustness map (mechaudit.workflow.robustness): factors, truths on a grid, conclusions, rule bias."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechaudit.schema import load_benchmark
from mechaudit.workflow import build_rules, load_design, load_simulator_params
from mechaudit.workflow.robustness import (
    consistent,
    diminishing_returns,
    grid,
    max_change_pp,
    pick,
    rule_bias,
    rule_gap,
    rule_grid,
    truth_grid,
    vary,
)
from mechaudit.workflow.validity import population_truth


@pytest.fixture(scope="module")
def setup():
    bench = load_benchmark()
    design = load_design(instances=[i.id for i in bench.instances])
    return bench, design, load_simulator_params()


def test_vary_sets_factors_and_keeps_reply_ratios(setup) -> None:
    _, _, base = setup
    p = vary(base, p_find=0.3, weak_scale=0.5, conceded=0.5, evidence_weight=2.0)
    assert p.p_find == 0.3 and p.evidence_weight == 2.0
    assert p.p_weak_unsupported == pytest.approx(base.p_weak_unsupported / 2)
    assert p.p_weak_supported == pytest.approx(base.p_weak_supported / 2)
    rw, rw0 = p.reply_weak, base.reply_weak
    assert rw.conceded == 0.5
    assert rw.answered + rw.partial + rw.dropped == pytest.approx(0.5)
    assert rw.answered / rw.dropped == pytest.approx(rw0.answered / rw0.dropped)
    assert p.reply_sound == base.reply_sound
    assert vary(base, weak_scale=10).p_weak_unsupported == 1.0  # capped
    assert vary(base).model_dump(exclude={"name"}) == base.model_dump(exclude={"name"})


@pytest.mark.parametrize("bad, match", [({"p_fnd": 0.3}, "unknown factor"), ({"p_find": 1.5}, "less than or equal"),
                                        ({"conceded": -0.1}, "conceded"), ({"weak_scale": -1}, "weak_scale")])
def test_vary_rejects_bad_factors(setup, bad, match) -> None:
    with pytest.raises(ValueError, match=match):
        vary(setup[2], **bad)


def test_grid_is_full_factorial() -> None:
    g = grid({"p_find": [0.3, 0.9], "conceded": [0.5, 0.6, 0.85]})
    assert list(g.columns) == ["p_find", "conceded"] and len(g) == 6
    assert set(map(tuple, g.to_numpy())) == {(a, b) for a in (0.3, 0.9) for b in (0.5, 0.6, 0.85)}
    with pytest.raises(ValueError, match="unknown factor"):
        grid({"nope": [1]})


@pytest.fixture(scope="module")
def tiny(setup):
    bench, design, base = setup
    points = grid({"p_find": [0.2, 0.5, 0.9]})
    return points, truth_grid(bench, design, base, points, runs_per_depth=12, seed=3)


def test_truth_equals_population_truth_at_the_same_point(setup, tiny) -> None:
    bench, design, base = setup
    _, table = tiny
    row = table.iloc[1]
    ref = population_truth(bench, design, vary(base, p_find=0.5), runs_per_depth=12, seed=3,
                           measures=("paper_rates",)).set_index("label")
    assert row.truth_0v1_pp == ref.loc["0 v 1", "truth_pp"]
    assert row.truth_1v5_pp == ref.loc["1 v 5", "truth_pp"]
    assert row.se_1v5_pp == ref.loc["1 v 5", "truth_se_pp"]
    assert row.same_K5_pp == ref.loc["K=5", "truth_pp"]
    # ceiling: 100 - mean of the two same-depth divergences; the truth never exceeds it
    assert row.max_1v5_pp == pytest.approx(100 - (ref.loc["K=1", "truth_pp"] + ref.loc["K=5", "truth_pp"]) / 2)
    if "max_extra_pp" in ref:  # depth.extra_ceiling, the same definition computed per instance
        assert row.max_1v5_pp == pytest.approx(ref.loc["1 v 5", "max_extra_pp"])
    assert row.norm_1v5 == pytest.approx(row.truth_1v5_pp / row.max_1v5_pp)
    assert (table.truth_0v1_pp <= table.max_0v1_pp).all() and (table.truth_1v5_pp <= table.max_1v5_pp).all()


def test_truths_move_the_way_the_model_says(tiny) -> None:
    """A critic that finds more weak links in round one: larger 0 v 1, smaller 1 v 5 (from 0.5 up),
    higher same-depth divergence after one round."""
    _, t = tiny
    assert t.truth_0v1_pp.is_monotonic_increasing
    assert t.same_K1_pp.is_monotonic_increasing
    assert t.truth_1v5_pp.iloc[2] < t.truth_1v5_pp.iloc[1] - 2
    assert t.truth_0v1_pp.iloc[2] > 20 and t.truth_1v5_pp.iloc[2] < 3


def test_diminishing_returns_classifies_by_margin() -> None:
    table = pd.DataFrame({
        "truth_0v1_pp": [30.0, 4.0, 8.0], "truth_1v5_pp": [1.0, 6.0, 2.2],
        "se_0v1_pp": [0.5, 0.5, 0.5], "se_1v5_pp": [0.3, 0.3, 0.3],
        "max_0v1_pp": [50.0, 70.0, 60.0], "max_1v5_pp": [8.0, 30.0, 20.0]})
    table["norm_0v1"] = table.truth_0v1_pp / table.max_0v1_pp
    table["norm_1v5"] = table.truth_1v5_pp / table.max_1v5_pp
    out = diminishing_returns(table, ratio=0.25, z=2.0)
    assert list(out.raw) == ["holds", "fails", "unclear"]
    assert out.raw_margin_pp.tolist() == pytest.approx([1 - 7.5, 6 - 1, 2.2 - 2])
    # normalised: 1/8 = 0.125 vs 0.6/4 = 0.15, margin -0.025 with se ~0.04: unclear
    assert out.normalised.iloc[0] == "unclear" and out.normalised.iloc[1] == "fails"
    with pytest.raises(ValueError, match="ratio"):
        diminishing_returns(table, ratio=1.5)


def test_conclusion_a_holds_at_the_default_and_fails_at_low_p_find(tiny) -> None:
    _, t = tiny
    out = diminishing_returns(t)
    assert out.raw.iloc[0] == "fails" and out.raw.iloc[2] == "holds"


def test_rule_grid_and_bias(setup) -> None:
    bench, design, base = setup
    points = grid({"p_find": [0.9]})
    truths = {m: truth_grid(bench, design, base, points, runs_per_depth=12, seed=0, measure=m)
              for m in ("mechanism_key", "paper_rates")}
    tfidf = build_rules(["tfidf"])["tfidf"]
    rules = {**build_rules(["mechanism_key", "paper_rates"]), "tfidf": tfidf}
    reps = rule_grid(bench, design, base, points, rules, n_reps=3, seed=1)
    assert len(reps) == 3 * 3 * 3 and set(reps.rule) == {"mechanism_key", "paper_rates", "tfidf"}
    # replication seeds are shared across rules and points: same draws, so re-running gives equal numbers
    again = rule_grid(bench, design, base, points, build_rules(["mechanism_key"]), n_reps=3, seed=1)
    pd.testing.assert_series_equal(again.extra_pp.reset_index(drop=True),
                                   reps[reps.rule == "mechanism_key"].extra_pp.reset_index(drop=True))
    bias = rule_bias(reps, truths).set_index(["rule", "comparison"])
    assert bias.loc[("paper_rates", "0 v 1"), "truth_pp"] == truths["paper_rates"].truth_0v1_pp.iloc[0]
    assert bias.loc[("tfidf", "0 v 1"), "truth_pp"] == truths["mechanism_key"].truth_0v1_pp.iloc[0]
    for rule in ("mechanism_key", "paper_rates"):
        row = bias.loc[(rule, "0 v 1")]
        assert abs(row.bias_pp) < 4 * row.bias_se_pp  # each on its own truth
    # a single truth table still works (every rule against it)
    assert (rule_bias(reps, truths["mechanism_key"]).truth_pp.iloc[0] == truths["mechanism_key"].truth_0v1_pp.iloc[0])


def test_consistent_marks_settings_near_the_observation() -> None:
    table = pd.DataFrame({"truth_0v1_pp": [10.0, 30.0, 34.5, 41.0], "truth_1v5_pp": [8.0, 2.0, 0.5, 0.1]})
    out = consistent(table, {"0 v 1": 34.5}, {"0 v 1": 3.0}, level=0.9545)  # one observation: |z| <= 2
    assert out.consistent.tolist() == [False, True, True, False]
    assert out.distance.tolist() == pytest.approx([8.1666667, 1.5, 0.0, 2.1666667])
    with pytest.raises(ValueError, match="sd > 0"):
        consistent(table, {"0 v 1": 34.5}, {"0 v 1": 0.0})
    with pytest.raises(ValueError, match="at least one"):
        consistent(table, {}, {})
    picked = pick(out[out.consistent], [0.0, 1.0])
    assert picked.truth_1v5_pp.tolist() == [0.5, 2.0]
    assert len(pick(out, [0.5, 0.5])) == 1
    with pytest.raises(ValueError, match="no rows"):
        pick(out.iloc[:0], [0.5])


def test_joint_consistency_against_scipy_mahalanobis() -> None:
    """Two correlated observations: the distance is scipy's Mahalanobis distance with the covariance
    built from the SDs and the correlation, and the cut is the chi-square quantile with 2 df; a setting
    inside both one-at-a-time windows can fail the joint test and vice versa."""
    from scipy.spatial.distance import mahalanobis
    from scipy.stats import chi2

    rng = np.random.default_rng(8)
    table = pd.DataFrame({"truth_0v1_pp": rng.normal(34.5, 6, 40), "truth_0v5_pp": rng.normal(39.8, 6, 40)})
    observed, sd, rho = {"0 v 1": 34.5, "0 v 5": 39.8}, {"0 v 1": 3.0, "0 v 5": 2.0}, 0.6
    out = consistent(table, observed, sd, correlation=rho, level=0.95)
    cov = np.array([[9.0, rho * 6.0], [rho * 6.0, 4.0]])
    vi = np.linalg.inv(cov)
    expected = [mahalanobis([a, b], [34.5, 39.8], vi) for a, b in zip(table.truth_0v1_pp, table.truth_0v5_pp)]
    assert out.distance.tolist() == pytest.approx(expected)
    assert out.consistent.tolist() == [d**2 <= chi2.ppf(0.95, 2) for d in expected]
    # both within 2 SDs one at a time, but in opposite directions against a positive correlation: not jointly
    opposite = consistent(pd.DataFrame({"truth_0v1_pp": [34.5 + 5.5], "truth_0v5_pp": [39.8 - 3.6]}), observed, sd,
                          correlation=rho)
    assert not opposite.consistent.iloc[0]
    same_side = consistent(pd.DataFrame({"truth_0v1_pp": [34.5 + 5.5], "truth_0v5_pp": [39.8 + 3.6]}), observed, sd,
                           correlation=rho)
    assert same_side.consistent.iloc[0]


def test_results_do_not_depend_on_n_jobs(setup) -> None:
    bench, design, base = setup
    points = grid({"p_find": [0.4, 0.8]})
    one = truth_grid(bench, design, base, points, runs_per_depth=6, seed=5, n_jobs=1)
    two = truth_grid(bench, design, base, points, runs_per_depth=6, seed=5, n_jobs=2)
    pd.testing.assert_frame_equal(one, two)
    assert not np.isnan(one.to_numpy(dtype=float)).any()


def test_max_change_and_rule_gap_on_hand_made_tables():
    alt = pd.DataFrame({"p_find": [0.3, 0.3, 0.9, 0.9], "a": [1.0, 1.5, 4.0, 4.1], "b": [0.0, 0.2, 9.0, 9.0]})
    # ranges within p_find 0.3: a 0.5, b 0.2; within 0.9: a 0.1, b 0
    assert max_change_pp(alt, "p_find", ["a", "b"]) == pytest.approx(0.5)
    assert max_change_pp(alt, "p_find", ["b"]) == pytest.approx(0.2)
    bias = pd.DataFrame({"point": [0, 0, 1, 1, 0, 0], "rule": ["tfidf", "paper_rates"] * 3,
                         "comparison": ["0 v 1"] * 4 + ["1 v 5"] * 2, "mean_pp": [25.0, 32.0, 21.0, 29.0, 0.0, 9.0]})
    assert rule_gap(bias, "0 v 1", "tfidf", "paper_rates") == (-8.0, -7.0)  # 25 - 32 and 21 - 29
    assert rule_gap(bias, "0 v 1", "paper_rates", "tfidf") == (7.0, 8.0)
    assert rule_gap(bias, "1 v 5", "tfidf", "paper_rates") == (-9.0, -9.0)



def test_vary_accepts_the_ends_of_conceded_and_fills_an_all_conceded_mixture_evenly(setup) -> None:
    base = setup[2]
    assert vary(base, conceded=0.0).reply_weak.conceded == 0.0
    everything = base.model_copy(update={"reply_weak": type(base.reply_weak).model_validate(
        {"conceded": 1.0, "answered": 0.0, "partial": 0.0, "dropped": 0.0})})
    rw = vary(everything, conceded=0.4).reply_weak
    assert (rw.answered, rw.partial, rw.dropped) == pytest.approx((0.2, 0.2, 0.2))


def test_pick_takes_the_row_nearest_each_quantile() -> None:
    table = pd.DataFrame({"truth_1v5_pp": [5.0, 1.0, 4.0, 2.0, 3.0]})
    assert pick(table, [0.0, 0.5, 1.0]).truth_1v5_pp.tolist() == [1.0, 3.0, 5.0]
    assert pick(table, [0.3]).truth_1v5_pp.tolist() == [2.0]  # round(0.3 * 4) = 1


def test_pick_keeps_the_first_of_tied_rows() -> None:
    """Forty rows of four tied values: the row taken at each quantile is the first of its ties in the
    table's order (a stable sort), whatever the sorting algorithm does with ties."""
    table = pd.DataFrame({"truth_1v5_pp": np.tile([3.0, 1.0, 2.0, 0.0], 10), "row": np.arange(40)})
    picked = pick(table, [0.0, 0.3, 0.6, 1.0])
    stable = table.iloc[np.argsort(table.truth_1v5_pp.to_numpy(), kind="stable")].reset_index(drop=True)
    assert picked.row.tolist() == stable.row.iloc[[0, 12, 23, 39]].tolist()


def test_consistent_refuses_a_level_of_one() -> None:
    table = pd.DataFrame({"truth_0v1_pp": [10.0]})
    with pytest.raises(ValueError, match="0 < level < 1"):
        consistent(table, {"0 v 1": 10.0}, {"0 v 1": 1.0}, level=1.0)


def test_normalised_margin_se_scales_the_first_effects_se_by_the_ratio() -> None:
    """n_se = sqrt((se_g / max_g)^2 + (ratio * se_f / max_f)^2) = 0.25 * 2 / 10 = 0.05 here, so a
    normalised margin of -0.05 is within z = 2 SEs: unclear (not "holds")."""
    table = pd.DataFrame({"truth_0v1_pp": [4.0], "truth_1v5_pp": [0.5], "se_0v1_pp": [2.0], "se_1v5_pp": [0.0],
                          "max_0v1_pp": [10.0], "max_1v5_pp": [10.0], "norm_0v1": [0.4], "norm_1v5": [0.05]})
    out = diminishing_returns(table, ratio=0.25, z=2.0)
    assert out.normalised_margin.iloc[0] == pytest.approx(-0.05) and out.normalised.iloc[0] == "unclear"
    assert diminishing_returns(table, ratio=0.25, z=0.9).normalised.iloc[0] == "holds"


def test_rule_bias_rows_name_their_point() -> None:
    reps = pd.DataFrame({"point": [1, 1, 0, 0], "rule": "tfidf", "comparison": "0 v 1",
                         "extra_pp": [2.0, 4.0, 1.0, 1.0]})
    truth = pd.DataFrame({"truth_0v1_pp": [1.0, 2.0], "se_0v1_pp": [0.0, 0.0]})
    out = rule_bias(reps, truth)
    assert out.point.tolist() == [1, 0] and out.truth_pp.tolist() == [2.0, 1.0]
    assert out.bias_pp.tolist() == [1.0, 0.0]
    assert out.bias_se_pp.iloc[0] == pytest.approx(np.std([2, 4], ddof=1) / np.sqrt(2))  # the mean's SE


def test_a_ceiling_below_one_pp_still_normalises(setup, monkeypatch) -> None:
    """``norm_*`` is the truth over its ceiling whenever the ceiling is positive, also below 1 pp."""
    import mechaudit.workflow.robustness as robustness

    bench, design, base = setup
    labels = [f"{a} v {b}" for a, b in design.comparisons()]
    fake = pd.DataFrame({"panel": "extra", "label": labels, "truth_pp": 0.2, "truth_se_pp": 0.1,
                         "max_extra_pp": 0.5})
    monkeypatch.setattr(robustness, "population_truth", lambda *args, **kwargs: fake)
    row = robustness._truth_row(bench, design, base, {"p_find": 0.9}, runs_per_depth=2, seed=0)
    assert row["norm_0v1"] == pytest.approx(0.4) and row["max_0v1_pp"] == 0.5


def test_truths_default_to_20_runs_seed_0_and_the_paper_rates_measure(setup, monkeypatch) -> None:
    """What the defaults of ``truth_grid`` and ``_truth_row`` hand to ``population_truth``."""
    import mechaudit.workflow.robustness as robustness

    bench, design, base = setup
    calls = []
    fake = pd.DataFrame({"panel": "extra", "label": [f"{a} v {b}" for a, b in design.comparisons()],
                         "truth_pp": 1.0, "truth_se_pp": 0.1, "max_extra_pp": 2.0})

    def record(*args, **kwargs):
        calls.append(kwargs)
        return fake

    monkeypatch.setattr(robustness, "population_truth", record)
    truth_grid(bench, design, base, grid({"p_find": [0.9]}))
    robustness._truth_row(bench, design, base, {"p_find": 0.9}, runs_per_depth=3, seed=4)
    assert calls == [{"runs_per_depth": 20, "seed": 0, "measures": ("paper_rates",), "n_seeds": 1},
                     {"runs_per_depth": 3, "seed": 4, "measures": ("paper_rates",), "n_seeds": 1}]


def test_rule_grid_seeds_from_0_by_default(setup, monkeypatch) -> None:
    import mechaudit.workflow.robustness as robustness

    bench, design, base = setup
    monkeypatch.setattr(robustness, "_rule_rep", lambda *task: [{"rep": task[6], "seed": task[7]}])
    reps = rule_grid(bench, design, base, grid({"p_find": [0.9]}), {}, n_reps=2)
    assert reps.to_dict("records") == [{"rep": 0, "seed": 0}, {"rep": 1, "seed": 0}]


def test_the_grids_pass_their_backend_on(setup) -> None:
    from mechaudit.errors import MechauditError

    bench, design, base = setup
    no_points = grid({"p_find": [0.9]}).iloc[:0]
    with pytest.raises(MechauditError, match="got 'nope'"):
        truth_grid(bench, design, base, no_points, parallel_backend="nope")
    with pytest.raises(MechauditError, match="got 'nope'"):
        rule_grid(bench, design, base, no_points, {}, n_reps=1, parallel_backend="nope")


def test_a_margin_on_the_boundary_is_unclear_and_bias_is_judged_at_two_ses(setup) -> None:
    table = pd.DataFrame({"truth_0v1_pp": [4.0], "truth_1v5_pp": [1.0], "se_0v1_pp": [0.0], "se_1v5_pp": [0.0],
                          "max_0v1_pp": [10.0], "max_1v5_pp": [10.0], "norm_0v1": [0.4], "norm_1v5": [0.1]})
    out = diminishing_returns(table, ratio=0.25)  # margin 1 - 0.25 x 4 = 0 with no SE: neither below nor above
    assert out.raw.iloc[0] == "unclear"
    reps = pd.DataFrame({"point": 0, "rule": "tfidf", "comparison": "0 v 1", "extra_pp": [1.0, 1.0]})
    truth = pd.DataFrame({"truth_0v1_pp": [0.0], "se_0v1_pp": [0.4]})  # bias 1 pp = 2.5 SEs
    assert rule_bias(reps, truth).direction.tolist() == ["over"]
    assert rule_bias(reps, truth, z=3.0).direction.tolist() == ["unbiased"]
    everything = vary(setup[2], conceded=1.0).reply_weak
    assert (everything.conceded, everything.answered, everything.partial, everything.dropped) == (1.0, 0.0, 0.0, 0.0)
