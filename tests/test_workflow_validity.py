"""Critique-depth tables, ground truth, jackknife and replication study on the simulator."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mechaudit.divergence import extra_divergence, permutation_test
from mechaudit.rules.paper_rates import PaperRateJudge
from mechaudit.workflow import (
    Design,
    MechanismKeyRule,
    depth_table,
    instance_matrices,
    load_design,
    load_simulator_params,
    null_params,
    population_truth,
    replicate,
    rule_tables,
    simulate,
    validity_summary,
)
from mechaudit.workflow.validity import coverage_range, jackknife_se, low_coverage, max_bias_z, mc_se, size_z


@pytest.fixture(scope="module")
def params():
    return load_simulator_params()


def test_jackknife_equals_brute_force():
    rng = np.random.default_rng(1)
    n, n_a = 9, 4
    A = rng.random((n, n))
    D = (A + A.T) / 2
    np.fill_diagonal(D, 0)
    loo_a, loo_b = [], []
    for i in range(n):
        keep = [j for j in range(n) if j != i]
        (loo_a if i < n_a else loo_b).append(extra_divergence(D[np.ix_(keep, keep)], n_a - (i < n_a)))
    var = sum((len(t) - 1) / len(t) * np.sum((np.array(t) - np.mean(t)) ** 2) for t in (loo_a, loo_b))
    assert jackknife_se(D, n_a) == pytest.approx(np.sqrt(var), rel=1e-12)
    with pytest.raises(ValueError, match=">= 3 runs"):
        jackknife_se(D[:5, :5], 2)


def test_default_simulator_large_first_round_small_later(bench, params):
    """The paper's pattern emerges from the weak-link mechanism (population values, pp)."""
    truth = population_truth(bench, load_design(), params, runs_per_depth=40)
    t = dict(zip(truth.label, truth.truth_pp))
    assert t["0 v 1"] > 20 and t["0 v 5"] > 20
    assert abs(t["1 v 5"]) < 3


def test_null_simulator_truth_is_zero(bench, params):
    truth = population_truth(bench, load_design(), null_params(params), runs_per_depth=40)
    extra = truth[truth.panel == "extra"]
    assert (extra.truth_pp.abs() < 4 * extra.truth_se_pp + 0.5).all()


def test_rule_tables_match_divergence_api(bench, params):
    design = Design(instances=("A", "C"), depths=(0, 1), runs_per_depth=5)
    runs = simulate(bench, design, params, seed=5)
    points, table = rule_tables(runs, {"fast": MechanismKeyRule(), "pairwise": MechanismKeyRule().same},
                                design.comparisons())
    fast, slow = table[table.rule == "fast"], table[table.rule == "pairwise"]
    np.testing.assert_allclose(fast.extra_pp.to_numpy(), slow.extra_pp.to_numpy(), atol=1e-9)
    mats = instance_matrices(runs, MechanismKeyRule())
    res = permutation_test([m.D for m in mats], 5)
    assert fast.extra_pp.iloc[0] == pytest.approx(100 * res.extra) and fast.p_value.iloc[0] == res.p_value
    per = points[(points.rule == "fast") & (points.panel == "extra")].value.mean()
    assert per == pytest.approx(fast.extra_pp.iloc[0])
    assert fast.n_partitions.iloc[0] == 126


def test_null_replications_hold_size(bench, params):
    """Small replication study (the chapter runs more): the exact test stays near or below alpha."""
    design = load_design()
    reps = replicate(bench, design, null_params(params), {"key": MechanismKeyRule()}, n_reps=40, seed=9)
    summary = validity_summary(reps, {c: 0.0 for c in reps.comparison.unique()})
    assert (summary.rejection_rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 40)).all()
    assert summary.n_reps.tolist() == [40, 40, 40]
    assert depth_table(instance_matrices(simulate(bench, design, params, seed=0), MechanismKeyRule()),
                       design.comparisons()).p_value.iloc[0] < 0.001


def test_replications_do_not_depend_on_the_number_of_workers(bench, params):
    from mechaudit.rules import TfidfRule

    design = Design(instances=tuple(i.id for i in bench.instances[:2]), depths=(0, 1), runs_per_depth=3)
    rules = {"key": MechanismKeyRule(), "tfidf": TfidfRule(threshold=0.25)}
    one = replicate(bench, design, params, rules, n_reps=3, seed=4)
    two = replicate(bench, design, params, rules, n_reps=3, seed=4, n_jobs=2)
    assert one.equals(two) and len(one) == 3 * 2 * 1
    with pytest.raises(ValueError, match="n_jobs"):
        replicate(bench, design, params, rules, n_reps=1, n_jobs=0)


def test_truth_under_both_measures_reads_the_same_runs(bench, params):
    both = population_truth(bench, load_design(), params, runs_per_depth=20, measures=("mechanism_key", "paper_rates"))
    key = population_truth(bench, load_design(), params, runs_per_depth=20)
    assert set(both.measure) == {"mechanism_key", "paper_rates"}
    np.testing.assert_allclose(both[both.measure == "mechanism_key"].truth_pp.to_numpy(), key.truth_pp.to_numpy())
    rate = both[both.measure == "paper_rates"].set_index("label").truth_pp
    same_key = both[(both.measure == "mechanism_key") & (both.panel == "same-depth")].truth_pp.to_numpy()
    # the judge misses most middle-step changes, so it calls fewer same-depth pairs different
    assert (rate[["K=0", "K=1", "K=5"]].to_numpy() < same_key).all()


def test_summary_compares_each_rule_with_its_own_truth_and_counts_coverage():
    reps = pd.DataFrame({"rep": [0, 1, 0, 1], "rule": ["paper_rates"] * 2 + ["tfidf"] * 2,
                         "comparison": ["0 v 1"] * 4, "extra_pp": [30.0, 32.0, 20.0, 22.0],
                         "ci_low_pp": [28.0, 31.5, 18.0, 21.0], "ci_high_pp": [33.0, 35.0, 23.0, 25.0],
                         "p_value": [0.01, 0.2, 0.01, 0.01]})
    truth = pd.DataFrame({"measure": ["mechanism_key", "paper_rates"], "panel": ["extra", "extra"],
                          "label": ["0 v 1", "0 v 1"], "truth_pp": [35.0, 31.0], "truth_se_pp": [0.0, 0.0]})
    out = validity_summary(reps, truth).set_index("rule")
    assert out.loc["paper_rates", "truth_pp"] == 31.0 and out.loc["tfidf", "truth_pp"] == 35.0
    assert out.loc["paper_rates", "coverage"] == 0.5 and out.loc["tfidf", "coverage"] == 0.0
    assert out.loc["paper_rates", "sd_pp"] == pytest.approx(np.std([30.0, 32.0], ddof=1))
    assert out.loc["paper_rates", "rejection_rate"] == 0.5


def test_replications_carry_intervals_that_cover_the_truth(bench, params):
    """The bootstrap interval's coverage over replications is near its level (a small check; chapter
    02b runs more)."""
    design = load_design()
    truth = population_truth(bench, design, params, runs_per_depth=60, measures=("paper_rates",))
    reps = replicate(bench, design, params, {"paper_rates": PaperRateJudge()}, n_reps=40, seed=3, n_boot=300)
    assert reps.ci_low_pp.notna().all() and (reps.ci_low_pp <= reps.ci_high_pp).all()
    cover = validity_summary(reps, truth).coverage
    assert (cover >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / 40)).all()


def _summary(rule: str, rates: list[float], n: int = 300, **columns) -> pd.DataFrame:
    """A hand-made ``validity_summary``: one row per rate, comparisons 0 v 1, 0 v 5, 1 v 5."""
    k = len(rates)
    return pd.DataFrame({"rule": rule, "comparison": ["0 v 1", "0 v 5", "1 v 5"][:k], "n_reps": n,
                         "bias_pp": [1.0, -2.0, 0.5][:k], "bias_se_pp": 0.5, "rejection_rate": rates, **columns})


def test_mc_se_is_the_binomial_formula_for_scalars_and_series():
    assert mc_se(0.05, 1900) == pytest.approx(math.sqrt(0.05 * 0.95 / 1900)) and isinstance(mc_se(0.5, 4), float)
    assert mc_se(0.5, 4) == 0.25 and mc_se(0.0, 10) == 0.0 and mc_se(1.0, 10) == 0.0
    # against the spread of simulated rates: the SD of many rates of n Bernoulli(p) draws
    rates = np.random.default_rng(0).binomial(200, 0.3, size=20000) / 200
    assert mc_se(0.3, 200) == pytest.approx(rates.std(), rel=0.02)
    n = pd.Series([100, 400], index=["a", "b"])
    se = mc_se(0.2, n)
    assert list(se.index) == ["a", "b"] and se.tolist() == pytest.approx([0.04, 0.02])


def test_summary_readers_in_monte_carlo_standard_errors():
    one = _summary("mechanism_key", [0.05, 0.12, 0.02])
    assert max_bias_z(one) == pytest.approx(4.0)  # |-2| / 0.5
    both = pd.concat([_summary("mechanism_key", [0.9]), _summary("paper_rates", [0.9, 0.9])])
    assert max_bias_z(both, ["mechanism_key", "paper_rates"]) == pytest.approx(4.0)
    assert max_bias_z(both, "mechanism_key") == pytest.approx(2.0)
    z = size_z(one, alpha=0.05)
    assert z.to_dict() == pytest.approx({c: (r - 0.05) / math.sqrt(0.05 * 0.95 / 300)
                                         for c, r in zip(["0 v 1", "0 v 5", "1 v 5"], [0.05, 0.12, 0.02])})
    two = size_z(pd.concat([_summary("a", [0.05, 0.06]), _summary("b", [0.04, 0.05])]), 0.05, ["a", "b"])
    assert two.index.names == ["rule", "comparison"] and len(two) == 4


def test_coverage_range_and_low_coverage():
    floor = 0.95 - 2 * math.sqrt(0.95 * 0.05 / 300)  # about 0.925
    bias = pd.concat([_summary("mechanism_key", [0.9, 0.9], coverage=[floor - 0.001, 0.99]),
                      _summary("paper_rates", [0.9, 0.9], coverage=[0.97, floor + 0.001]),
                      _summary("tfidf", [0.9], coverage=[np.nan])])
    assert coverage_range(bias, ["paper_rates"]) == (floor + 0.001, 0.97)
    assert coverage_range(bias, ["mechanism_key", "paper_rates"]) == (floor - 0.001, 0.99)
    assert all(math.isnan(x) for x in coverage_range(bias, ["tfidf"]))
    low = low_coverage(bias, ["mechanism_key", "paper_rates", "tfidf"])
    assert list(zip(low.rule, low.comparison)) == [("mechanism_key", "0 v 1")]
    assert low_coverage(bias, ["paper_rates"]).empty


def test_measure_of_names_the_truth_a_rule_is_compared_with():
    from mechaudit.workflow.depth import MEASURES, measure_of

    assert [measure_of(m) for m in MEASURES] == list(MEASURES)
    assert measure_of("tfidf") == measure_of("llm") == "mechanism_key"


def test_max_bias_z_is_nan_without_a_standard_error():
    single = _summary("mechanism_key", [0.9, 0.9]).assign(bias_se_pp=[0.5, np.nan])
    assert math.isnan(max_bias_z(single)) and math.isnan(max_bias_z(single, "absent"))



def test_summary_keeps_first_seen_order_and_adds_the_truths_error():
    """Rows in the order the rules and comparisons first appear; ``bias_se_pp`` adds the truth's SE in
    quadrature; coverage needs finite interval ends on every replication."""
    reps = pd.DataFrame({"rep": [0, 1, 0, 1], "rule": ["tfidf", "tfidf", "paper_rates", "paper_rates"],
                         "comparison": ["1 v 5", "1 v 5", "0 v 1", "0 v 1"], "extra_pp": [30.0, 34.0, 20.0, 22.0],
                         "ci_low_pp": [28.0, np.nan, 18.0, 21.0], "ci_high_pp": [33.0, 35.0, 23.0, 25.0],
                         "p_value": [0.01, 0.2, 0.05, 0.5]})
    truth = pd.DataFrame({"measure": ["mechanism_key", "paper_rates"], "panel": ["extra", "extra"],
                          "label": ["1 v 5", "0 v 1"], "truth_pp": [31.0, 21.0], "truth_se_pp": [3.0, 0.5]})
    out = validity_summary(reps, truth)
    assert list(out.columns) == ["rule", "measure", "comparison", "n_reps", "truth_pp", "mean_pp", "bias_pp",
                                 "bias_se_pp", "sd_pp", "rmse_pp", "coverage", "rejection_rate", "rejection_se"]
    assert out.rule.tolist() == ["tfidf", "paper_rates"] and out.comparison.tolist() == ["1 v 5", "0 v 1"]
    assert out.bias_se_pp.tolist() == pytest.approx([np.sqrt(8 / 2 + 9.0), np.sqrt(2 / 2 + 0.25)])
    assert np.isnan(out.coverage[0]) and out.coverage[1] == 1.0
    assert out.rejection_rate.tolist() == [0.5, 0.5]
    assert out.rejection_se.tolist() == pytest.approx([0.5 / np.sqrt(2)] * 2)
    bare = validity_summary(reps.drop(columns=["ci_low_pp", "ci_high_pp"]), {"1 v 5": 31.0, "0 v 1": 21.0})
    assert bare.coverage.isna().all() and bare.bias_se_pp.tolist() == pytest.approx([2.0, 1.0])


def test_validity_defaults(bench, params):
    from mechaudit.workflow.validity import replication_seed, truth_seed

    assert truth_seed(5) == replication_seed(5, 2**31 - 1) and truth_seed(5, 2) == replication_seed(5, 2**31 - 3)
    design = Design(instances=(bench.instances[0].id,), depths=(0, 1), runs_per_depth=3)
    default = population_truth(bench, design, params)
    pd.testing.assert_frame_equal(default, population_truth(bench, design, params, runs_per_depth=40))
    assert not default.equals(population_truth(bench, design, params, runs_per_depth=41))
    rules = {"mechanism_key": MechanismKeyRule(), "same": lambda pairs: np.ones(len(pairs), dtype=bool)}
    reps = replicate(bench, design, params, rules, n_reps=2)
    pd.testing.assert_frame_equal(reps, replicate(bench, design, params, rules, n_reps=2, seed=0))
    assert not reps.equals(replicate(bench, design, params, rules, n_reps=2, seed=1))
    assert reps.rule.tolist() == ["mechanism_key", "same"] * 2 and reps.rep.tolist() == [0, 0, 1, 1]
    assert (reps[reps.rule == "same"].extra_pp == 0).all()
