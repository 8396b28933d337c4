"""Chapter 02c's steps (``mechaudit.book.ch02c_robustness``): grid look-ups and readable summaries."""

from __future__ import annotations

import functools
from types import SimpleNamespace

import pandas as pd
import pytest

from mechaudit.book import ch02c_robustness as ch
from mechaudit.errors import MechauditError
from mechaudit.workflow.calibrate import calibration_setup

AXES = ["p_find", "weak_scale"]
FACTORS = {"p_find": 0.9, "weak_scale": 1.0}


def _truths() -> pd.DataFrame:
    """A 3 x 2 grid: fails at p_find 0.1, holds at 0.9; consistent only at p_find 0.5 and 0.9."""
    rows = [(0.1, 0.5, "fails", "fails", 1.0, 4.0, False), (0.1, 1.0, "fails", "unclear", 2.0, 6.0, False),
            (0.5, 0.5, "unclear", "fails", 6.0, 30.0, True), (0.5, 1.0, "unclear", "fails", 5.0, 33.0, True),
            (0.9, 0.5, "holds", "unclear", 0.5, 36.0, True), (0.9, 1.0, "holds", "unclear", 0.8, 50.0, False)]
    return pd.DataFrame([{"p_find": p, "weak_scale": w, "raw": r, "normalised": n, "truth_1v5_pp": t,
                          "truth_0v1_pp": t01, "consistent": c} for p, w, r, n, t, t01, c in rows])


def test_sentences_speak_only_of_consistent_settings():
    truths = _truths()
    assert ch.status_sentence(truths) == ("is unclear at the consistent settings with p_find 0.5 "
                                          "and holds at those with p_find 0.9")
    assert ch.status_sentence(truths.assign(raw="holds")) == "holds at every consistent setting of the grid"
    assert ch.status_sentence(truths.assign(consistent=False)).startswith("cannot be read")
    three = truths.assign(raw=["fails", "fails", "fails", "unclear", "holds", "holds"])
    assert ch.status_sentence(three) == ("fails at the consistent settings with p_find 0.5, is unclear at those "
                                         "with p_find 0.5 and holds at those with p_find 0.9")
    assert ch.fails_outside(truths) == 6.0 and ch.fails_outside(truths.assign(raw="holds")) is None
    assert ch.span(truths, "p_find") == "0.1 to 0.9" and ch.span(truths.iloc[:1], "p_find") == "0.1"


def test_grid_lookups():
    truths = _truths()
    assert ch.grid_cell(truths, FACTORS, AXES).truth_1v5_pp == 0.8
    assert ch.grid_cell(truths, FACTORS, AXES, p_find=0.5).raw == "unclear"
    assert ch.grid_cell(truths, FACTORS, AXES, p_find=0.3) is None
    assert ch.fail_pfind_max(truths) == 0.1
    assert ch.fail_pfind_text(truths).startswith("every point with p_find at or below 0.1 fails, because")
    nowhere = truths.assign(raw="holds")  # no p_find at which every point fails: no number, no "nan"
    assert ch.fail_pfind_max(nowhere) is None
    assert ch.fail_pfind_text(nowhere) == ("in this grid, though, no value of p_find makes conclusion (a) fail at "
                                           "every point")


def test_observed_values_and_their_sds_come_from_the_calibration():
    from mechaudit.workflow.calibrate import load_calibration

    spec = load_calibration()
    observed, sd = ch.observed_and_sd(spec)
    assert observed == {"0 v 1": 34.5, "0 v 5": 39.8}
    assert sd == {"0 v 1": spec.targets["critique_depth.extra_divergence_pp.k0_vs_k1"],
                  "0 v 5": spec.targets["critique_depth.extra_divergence_pp.k0_vs_k5"]}
    table = pd.DataFrame({"truth_0v1_pp": [34.5, 34.5], "truth_0v5_pp": [39.8, 51.0]})
    assert ch.with_consistency(table, spec).consistent.tolist() == [True, False]  # 0 v 5 rules the second out


def test_rule_summaries():
    bias = pd.DataFrame({"point": [0, 0, 1, 1], "rule": ["tfidf", "paper_rates"] * 2, "comparison": "0 v 1",
                         "n_reps": 10, "mean_pp": [25.0, 32.0, 21.0, 29.0], "truth_pp": [36.0, 30.0, 36.0, 29.0],
                         "bias_pp": [-11.0, 2.0, -15.0, 0.0], "bias_se_pp": [1.0, 1.0, 1.0, 1.0]})
    picks = pd.DataFrame({"p_find": [0.85, 1.0], "conceded": [1.0, 0.7]})
    labels = ch.setting_labels(picks, ["p_find", "conceded"])
    assert labels == ["S1 (p_find 0.85, conceded 1)", "S2 (p_find 1, conceded 0.7)"]
    view = ch.rule_view(bias, labels)
    assert view.index.names == ["setting", "rule", "comparison"]
    assert view.loc[(labels[1], "tfidf", "0 v 1"), "bias (pp)"] == -15.0 and view["replications"].dtype.kind == "i"


def _power() -> pd.DataFrame:
    rows = [(2.0, 2.1, 4, 5, 0.3, 0.03), (2.0, 2.1, 4, 10, 0.9, 0.02), (2.0, 2.1, 8, 5, 0.6, 0.03)]
    designs = pd.DataFrame([{"role": "design", "target_pp": t, "truth_pp": tr, "n_instances": k, "runs_per_depth": r,
                             "power": p, "power_se": se, "binomial_se": se / 2} for t, tr, k, r, p, se in rows])
    return pd.concat([designs, designs.assign(role="ladder")], ignore_index=True)


def test_power_tables():
    table = ch.design_powers(_power())
    assert table.index.names == ["true 1 v 5 (pp)", "design"]
    assert table.loc[(2.1, "4 x 10"), "power"] == 0.9 and len(table) == 3
    assert ch.runs_vs_instances(_power(), 2.0) == "more runs helped more"
    assert ch.runs_vs_instances(_power(), 5.0) == "n/a"
    settings = [SimpleNamespace(target_pp=2.0, factors={"p_find": 0.7104}, truth_pp=2.015, truth_se_pp=0.134)]
    st = ch.settings_table(settings)
    assert st.index.name == "grid 1 v 5 (pp)"
    assert st.loc[2.0, "setting"] == "p_find = 0.71" and st.loc[2.0, "true 1 v 5 (pp)"] == 2.02
    assert list(table.columns) == ["power", "MC s.e. (pools)", "binomial s.e."]


def test_facts_records_read_the_map_and_the_power_table():
    truths = _truths().assign(max_1v5_pp=9.0, truth_0v5_pp=40.0, same_K1_pp=66.0, norm_1v5=0.0237)
    spans = ch.consistent_spans(truths, AXES)
    assert (spans.consistent_p_find, spans.consistent_weak_scale) == ("0.5 to 0.9", "0.5 to 1")
    assert spans.consistent_1v5 == "0.5 to 6" and spans.consistent_0v1 == "30 to 36"
    assert spans.consistent_conceded == "not varied"  # not an axis of this grid
    assert spans.outside_sentence == ch.outside_sentence(truths) and spans.ceiling_sentence
    assert ch.consistent_spans(truths.assign(consistent=False), AXES).consistent_0v5 == "none"
    cell = ch.default_cell(truths, FACTORS, AXES)
    assert (cell.truth_1v5_pp, cell.max_1v5_pp, cell.norm_1v5) == (0.8, 9.0, 0.0237)
    assert ch.default_cell(truths, {"p_find": 0.3, "weak_scale": 1.0}, AXES) == ch.DefaultCell(None, None, None)
    at = SimpleNamespace(target_pp=2.0, truth_pp=2.1)
    top = ch.top_power(_power(), at)
    assert (top.truth, top.power_4x5, top.power_4x10, top.power_se_4x10, top.power_8x5) == (2.1, 0.3, 0.9, 0.02, 0.6)
    assert ch.top_power(_power()[lambda d: d.n_instances == 4], at).power_8x5 is None  # a design not studied
    facts = ch.power_facts(_power(), [at], ["p_find = 0.71"], 200, 4)
    assert facts.top == top and (facts.headline_truth, facts.headline_power) == (2.1, 0.3)
    assert (facts.n_power_reps, facts.n_pools, facts.headline_status) == (200, 4, "simulated (reference backend)")


def test_needed_table_writes_runs_as_ints_or_text():
    needed = pd.DataFrame({"target_pp": [2.0, 5.0], "truth_pp": [2.04, 5.3], "n_instances": [4, 4],
                           "runs_needed": [10.0, float("nan")], "power_there": [0.88, float("nan")],
                           "largest_tried": [10, 20]})
    table = ch.needed_table(needed)
    assert table["runs per depth needed"].tolist() == [10, "more than 20"]
    assert table.index.tolist() == [2.0, 5.3]


def test_setup_and_defaults():
    s = calibration_setup()
    assert s.instances == [i.id for i in s.bench.instances] and s.design.runs_per_depth >= 1
    d = ch.defaults(s.base)
    assert d["weak_scale"] == 1.0 and d["p_find"] == s.base.p_find


def test_alternatives_table_is_indexed_by_the_axes():
    alt = pd.DataFrame({"p_find": [0.3, 0.9], "evidence_weight": [1.0, 8.0], "truth_0v1_pp": [8.561, 34.0],
                        "truth_1v5_pp": [9.0, 0.8], "same_K1_pp": [67.0, 90.7], "max_1v5_pp": [20.0, 8.6],
                        "other": [1, 2]})
    table = ch.alternatives_table(alt, ["p_find", "evidence_weight"])
    assert table.index.names == ["p_find", "evidence_weight"]
    assert list(table.columns) == ["0 v 1 (pp)", "1 v 5 (pp)", "same-depth K=1 (%)", "1 v 5 ceiling (pp)"]
    assert table.loc[(0.3, 1.0), "0 v 1 (pp)"] == 8.6


def test_power_settings_come_from_the_map_rows():
    from mechaudit.workflow import load_simulator_params
    from mechaudit.workflow.robustness import vary

    base = load_simulator_params()
    picks = pd.DataFrame({"p_find": [0.85, 1.0], "conceded": [1.0, 0.7], "truth_1v5_pp": [1.234, 3.456],
                          "se_1v5_pp": [0.05, 0.07]})
    out = ch.power_settings(base, picks, ["p_find", "conceded"])
    assert [s.target_pp for s in out] == [1.23, 3.46] and [s.truth_pp for s in out] == [1.234, 3.456]
    assert [s.truth_se_pp for s in out] == [0.05, 0.07]
    assert out[0].factors == {"p_find": 0.85, "conceded": 1.0}
    assert out[1].params == vary(base, p_find=1.0, conceded=0.7)
    with pytest.raises(MechauditError, match="no consistent grid setting"):
        ch.power_settings(base, picks.iloc[:0], ["p_find"])


def test_choose_settings_falls_back_to_the_nearest(capsys):
    truths = _truths().assign(distance=[9.0, 8.0, 1.5, 0.5, 0.5, 5.0])
    assert ch.choose_settings(truths, [0.0, 1.0]).truth_1v5_pp.tolist() == [0.5, 6.0]
    assert capsys.readouterr().out == ""
    none = ch.choose_settings(truths.assign(consistent=False), [0.0, 1.0])
    assert sorted(none.distance.tolist()) == [0.5, 0.5]
    assert capsys.readouterr().out == (
        "no grid setting is consistent with the observed effects; the settings nearest to them are studied instead "
        "(their conclusions say little about the workflow that was observed)\n")


def test_max_bias_text_in_standard_errors_or_says_there_are_none():
    bias = pd.DataFrame({"rule": ["mechanism_key", "paper_rates", "tfidf"], "bias_pp": [-0.6, 0.2, 9.0],
                         "bias_se_pp": [0.4, 0.5, 0.1]})
    assert ch.max_bias_text(bias) == "1.5 Monte Carlo standard errors"  # |-0.6| / 0.4; TF-IDF left out
    single = bias.assign(bias_se_pp=[float("nan"), 0.5, 0.1])  # one replication: no standard error
    assert ch.max_bias_text(single).startswith("not measured in standard errors")
    assert ch.max_bias_text(bias.assign(bias_se_pp=0.0, bias_pp=0.0)).startswith("not measured")


def test_outside_and_ceiling_sentences_follow_the_map():
    truths = _truths()
    assert ch.outside_sentence(truths) == (
        "Conclusion (a) fails at 2 of the grid's 6 settings, none of them consistent with the paper's estimates "
        "(their 0 v 1 truth is at most 6.0 pp): every point with p_find at or below 0.1 fails, because one round "
        "leaves most weak links open and rounds two to five keep changing mechanisms.")
    inside_fail = truths.assign(raw=["holds", "holds", "fails", "holds", "holds", "holds"])
    assert "1 of them consistent with the paper's estimates (their 0 v 1 truth is at most 30.0 pp)" in (
        ch.outside_sentence(inside_fail))
    assert ch.outside_sentence(truths.assign(raw="holds")) == "Conclusion (a) fails at no setting of the grid."
    norm = truths.assign(norm_1v5=[0.9, 0.9, 0.1, 0.2, 0.05, 0.9])  # the consistent rows: 0.1, 0.2, 0.05
    assert ch.ceiling_sentence(norm).startswith("no 1 v 5 truth there uses more than 0.20 of its ceiling")
    assert ch.ceiling_sentence(norm.assign(norm_1v5=0.3)).startswith("some 1 v 5 truths there use 0.30")
    assert ch.ceiling_sentence(norm.assign(consistent=False)).startswith("no setting is consistent")


def test_power_range_verdict_and_the_paper_value():
    power = pd.DataFrame({"role": "design", "n_instances": [4, 4, 4, 8], "runs_per_depth": [5, 5, 10, 5],
                          "target_pp": [0.2, 1.5, 1.5, 1.5], "truth_pp": [0.21, 1.48, 1.48, 1.48],
                          "power": [0.06, 0.31, 0.55, 0.6]})
    settings = [SimpleNamespace(target_pp=0.2, truth_pp=0.21), SimpleNamespace(target_pp=1.5, truth_pp=1.48)]
    labels = ["S1 (p_find 1)", "S2 (p_find 0.85)"]
    assert ch.power_range_text(power, settings, labels) == (
        "from 0.06 at S1 (p_find 1; true 1 v 5 0.2 pp) to 0.31 at S2 (p_find 0.85; true 1 v 5 1.5 pp)")
    assert ch.power_range_text(power, settings[:1], labels[:1]) == "0.06 at S1 (p_find 1; true 1 v 5 0.2 pp)"
    assert ch.power_range_text(power, settings, labels, design=(6, 5)) == "not computed for this design"
    assert ch.power_verdict(power).startswith("no 1 v 5 effect the consistent settings allow reaches power 0.8 "
                                              "at that design (the highest is 0.31, at 1.5 pp)")
    strong = power.assign(power=[0.06, 0.85, 0.9, 0.9])
    assert ch.power_verdict(strong).startswith("the largest effect the consistent settings allow (1.5 pp) reaches "
                                               "power 0.85, the smallest (0.2 pp) 0.06")
    assert ch.paper_inside(1.3, settings) == "between the studied settings' 0.2 and 1.5 pp"
    assert ch.paper_inside(2.0, settings).startswith("above") and ch.paper_inside(0.1, settings).startswith("below")


def test_consistent_view_keeps_the_grid_values():
    inside = pd.DataFrame({"p_find": [0.85], "weak_scale": [1.05], "truth_0v1_pp": [30.04], "truth_0v5_pp": [39.96],
                           "truth_1v5_pp": [1.56], "max_1v5_pp": [40.0], "raw": ["holds"], "normalised": ["holds"]})
    view = ch.consistent_view(inside, ["p_find", "weak_scale"])
    assert view.index.tolist() == [(0.85, 1.05)]  # not rounded to 0.8 / 1.0
    assert view.iloc[0].tolist() == [30.0, 40.0, 1.6, 40.0, "holds", "holds"]


def test_texts_never_print_a_negative_zero():
    table = pd.DataFrame({"x": [-0.02, 1.73]})
    assert ch.span(table, "x", 1) == "0 to 1.7"
    settings = [SimpleNamespace(target_pp=-0.02, truth_pp=-0.02), SimpleNamespace(target_pp=1.73, truth_pp=1.73)]
    assert ch.paper_inside(1.3, settings) == "between the studied settings' -0.02 and 1.7 pp"
    needed = pd.DataFrame({"truth_pp": [-0.02, 1.73], "runs_needed": [float("nan"), 10.0], "largest_tried": [20, 20]})
    assert ch.needed_text(needed) == "-0.02 pp: more than 20; 1.7 pp: 10"


def test_small_views_keep_their_headers_digits_and_keys():
    from mechaudit.workflow import load_simulator_params

    base = load_simulator_params()
    assert ch.defaults(base) == {"p_find": base.p_find, "weak_scale": 1.0, "conceded": base.reply_weak.conceded,
                                 "evidence_weight": base.evidence_weight,
                                 "p_challenge_sound": base.p_challenge_sound}
    inside = pd.DataFrame({"p_find": [0.85], "truth_0v1_pp": [30.0], "truth_0v5_pp": [40.0], "truth_1v5_pp": [1.5],
                           "max_1v5_pp": [40.0], "raw": ["holds"], "normalised": ["holds"]})
    assert list(ch.consistent_view(inside, ["p_find"]).columns) == [
        "0 v 1 (pp)", "0 v 5 (pp)", "1 v 5 (pp)", "1 v 5 ceiling (pp)", "(a) raw", "(a) ceiling-aware"]
    bias = pd.DataFrame({"point": [0], "rule": ["tfidf"], "comparison": ["0 v 1"], "n_reps": [3], "mean_pp": [1.0],
                         "truth_pp": [1.0], "bias_pp": [0.0], "bias_se_pp": [0.1]})
    assert list(ch.rule_view(bias, ["S1"]).columns) == ["replications", "mean (pp)", "truth (pp)", "bias (pp)",
                                                         "bias SE (pp)"]
    assert ch.design_powers(_power())["binomial s.e."].tolist() == [0.02, 0.01, 0.02]  # 0.015 to 2 decimals
    settings = [SimpleNamespace(target_pp=2.0, factors={"p_find": 0.7}, truth_pp=2.015, truth_se_pp=0.1349)]
    assert ch.settings_table(settings).loc[2.0].tolist() == ["p_find = 0.7", 2.02, 0.13]
    assert ch.span(pd.DataFrame({"x": [0.1234, 0.5678]}), "x") == "0.12 to 0.57"
    assert ch.status_sentence(_truths().assign(raw="unclear")) == (
        "is unclear at the consistent settings with p_find 0.5 to 0.9")
    assert (ch.targets_name(True), ch.targets_name(False)) == ("the paper's", "the calibration's target")
    top = ch.top_power(_power(), SimpleNamespace(target_pp=2.0, truth_pp=2.1))
    assert top.power_se_8x5 == 0.03
    facts = ch.power_facts(_power(), [SimpleNamespace(target_pp=2.0, truth_pp=2.1, factors={})], ["S1 (p_find 1)"],
                           200, 4)
    assert facts.runs_vs_instances == "more runs helped more"
    assert facts.power_range == "0.30 at S1 (p_find 1; true 1 v 5 2.1 pp)"


def test_power_facts_are_shown_as_probabilities_to_two_decimals():
    from mechaudit.report.facts import FactSpec

    assert ch._power("a doc").metadata["mechaudit.fact"] == FactSpec(unit="probability", digits=2, doc="a doc",
                                                                      missing="not in this design")


def test_grid_rule_needed_and_alternatives_facts():
    from mechaudit.paper import reported
    from mechaudit.workflow.calibrate import load_calibration
    from mechaudit.workflow.robustness import max_change_pp

    spec = load_calibration()
    truths = _truths().assign(se_0v1_pp=0.2, se_1v5_pp=[0.1, 0.1, 0.3, 0.1, 0.1, 0.1])
    facts = ch.grid_facts(truths, spec, {"p_find": 0.9, "conceded": 0.8}, 200, 4)
    assert facts == ch.GridFacts("34.5 pp for 0 v 1 and 39.8 pp for 0 v 5", "3 pp and 3 pp", spec.target_correlation,
                                 "95", 0.9, 0.8, 200, 4, 0.3, 3, 6, ch.status_sentence(truths),
                                 "fails at the consistent settings with p_find 0.5 and is unclear at those with "
                                 "p_find 0.9")
    bias = pd.DataFrame({"point": [0, 0, 0, 1, 1, 1], "rule": ["tfidf", "paper_rates", "mechanism_key"] * 2,
                         "comparison": "0 v 1", "mean_pp": [20.0, 30.0, 33.0, 21.0, 25.0, 31.0],
                         "bias_pp": [0.0, 0.5, -0.8, 0.0, 0.1, 0.2], "bias_se_pp": 0.4})
    assert ch.rule_facts(bias, 7) == ch.RuleFacts(7, "-10.0 to -4.0", "+3.0 to +6.0", "2 Monte Carlo standard errors")
    same = bias.assign(mean_pp=[20.0, 30.0, 33.0, 21.0, 31.0, 31.0])  # TF-IDF always 10 pp below
    assert ch.rule_facts(same, 7).tfidf_minus_rate_0v1 == "-10.0"
    needed = pd.DataFrame({"truth_pp": [0.21, 1.48], "runs_needed": [float("nan"), 10.0], "largest_tried": [20, 20]})
    power = pd.DataFrame({"role": "design", "n_instances": 4, "runs_per_depth": 5, "target_pp": [0.2, 1.5],
                          "truth_pp": [0.21, 1.48], "power": [0.06, 0.31]})
    settings = [SimpleNamespace(target_pp=0.2, truth_pp=0.21), SimpleNamespace(target_pp=1.5, truth_pp=1.48)]
    paper = reported("critique_depth.extra_divergence_pp.k1_vs_k5")
    assert ch.needed_facts(needed, power, settings, [3, 20, 5], 0.5) == ch.NeededFacts(
        paper, "0.2 pp: more than 20; 1.5 pp: 10", 20, ch.paper_inside(paper, settings), ch.power_verdict(power, 0.5))
    alt = pd.DataFrame({"p_find": [0.85, 0.85, 1.0, 1.0], "truth_0v1_pp": [25.0, 27.0, 30.0, 30.5],
                        "truth_1v5_pp": [1.0, 4.0, 0.5, 0.6], "same_K1_pp": [70.0, 75.5, 80.0, 80.0],
                        "max_1v5_pp": [20.0, 20.5, 10.0, 19.0]})
    assert ch.alternatives_facts(alt) == ch.AlternativesFacts(3.0, 5.5, 9.0)
    assert max_change_pp(alt, "p_find", ["max_1v5_pp"]) == 9.0


def test_exercise_facts_read_the_map_at_the_stricter_ratio():
    from mechaudit.workflow.robustness import diminishing_returns

    truths = _truths().assign(se_0v1_pp=0.1, se_1v5_pp=0.1, norm_0v1=0.5, norm_1v5=0.1, max_1v5_pp=9.0,
                              max_0v1_pp=60.0, truth_1v5_pp=[1.0, 2.0, 3.1, 1.0, 3.7, 0.5],
                              truth_0v1_pp=[4.0, 6.0, 30.0, 33.0, 36.0, 50.0])
    strict = diminishing_returns(truths, ratio=0.1, z=2.0)
    assert strict.raw.tolist() == ["fails", "fails", "unclear", "holds", "unclear", "holds"]
    facts = ch.exercise_facts(truths, FACTORS, AXES, 2.0)
    assert facts == ch.ExerciseFacts(ch.status_sentence(strict), 6.0, ch.DefaultCell(0.5, 9.0, 0.1))
    assert facts.ex1_status == ("is unclear at the consistent settings with p_find 0.5 to 0.9 and holds at those "
                                "with p_find 0.5")
    holds = truths.assign(truth_1v5_pp=0.0)
    assert ch.exercise_facts(holds, FACTORS, AXES, 2.0).ex1_fails_0v1_max == 0.0


@functools.cache
def _robustness_setup():
    """The chapter's inputs at its default settings (read only)."""
    from mechaudit.book.settings import RobustnessSettings

    p = RobustnessSettings()
    return calibration_setup(p.data_dir, p.design_file, p.simulator_file, p.calibration_file), p


def test_chapter_steps_read_every_committed_table_at_the_default_settings(monkeypatch):
    from committed_spy import CommittedSpy

    from mechaudit.workflow import committed

    s, p = _robustness_setup()
    spy = CommittedSpy()
    monkeypatch.setattr(committed, "cached", spy)
    truths = ch.chapter_truths(s, p)
    studies = ch.chapter_studies(s, truths, p)
    assert set(spy.calls) == {"robustness_map", "robustness_alternatives", "robustness_picks_mechanism_key",
                              "robustness_picks_paper_rates", "robustness_rules", "robustness_power"}
    assert spy.flags() == {(False, False)}
    assert studies.sources == {"robustness_rules": "committed", "robustness_power": "committed"}
    assert studies.settings == ch.power_settings(s.base, truths.picks, list(p.robust_axes))
    assert len(studies.rule_reps) == len(committed.load("robustness_rules", spy.calls["robustness_rules"]["settings"]))
    assert studies.power.equals(committed.load("robustness_power", spy.calls["robustness_power"]["settings"]))


def test_write_maps_writes_every_table_only_when_stale(monkeypatch):
    from committed_spy import CommittedSpy

    from mechaudit.workflow import committed

    spy = CommittedSpy()
    monkeypatch.setattr(committed, "cached", spy)
    files = []
    monkeypatch.setattr(ch, "calibration_setup", lambda *a: files.append(a) or _robustness_setup()[0])
    text = ch.write_maps()
    assert files == [(None, "paper.yaml", "simulator.yaml", "calibration.yaml")]
    assert spy.flags() == {(True, False)} and len(spy.calls) == 6
    lines = text.splitlines()
    names = ("robustness_map", "robustness_alternatives", "robustness_picks_mechanism_key",
             "robustness_picks_paper_rates", "robustness_rules", "robustness_power")
    assert [line.split(" ")[0] for line in lines] == [f"data/computed/{n}.csv" for n in names]
    assert all(line.endswith("rows): current, kept") for line in lines)
    ch.write_maps(force=True)
    assert spy.flags() == {(True, True)}


def test_chapter_studies_compute_with_the_chapters_settings(monkeypatch):
    from committed_spy import CommittedSpy

    from mechaudit.book.settings import RobustnessSettings
    from mechaudit.workflow import committed

    s, _ = _robustness_setup()
    p = RobustnessSettings(robust_axes={"p_find": [0.9, 1.0], "conceded": [0.8]}, n_jobs=1,
                           parallel_backend="threading", seed=5, n_text_replications=3, tfidf_threshold=0.4,
                           power_designs=[[4, 5]], power_ladder=[3, 7], n_power_replications=9, n_pools=2,
                           pool_runs_per_depth=6, n_resamples=19, power_level=0.7, alpha=0.01)
    picks = pd.DataFrame({"p_find": [0.9, 1.0], "conceded": [0.8, 0.8], "weak_scale": 1.0,
                          "truth_1v5_pp": [1.234, 0.5], "se_1v5_pp": [0.1, 0.2]}, index=[7, 3])
    truths = ch.Truths(pd.DataFrame(), pd.DataFrame(), picks, {}, {})
    seen = {}
    monkeypatch.setattr(ch, "rule_grid",
                        lambda *a, **kw: seen.setdefault("rules", (a, kw)) and pd.DataFrame({"r": [1]}))
    monkeypatch.setattr(ch, "power_table",
                        lambda *a, **kw: seen.setdefault("power", (a, kw)) and pd.DataFrame({"p": [2]}))
    spy = CommittedSpy(compute=True)
    monkeypatch.setattr(committed, "cached", spy)
    studies = ch.chapter_studies(s, truths, p, write=True, force=True)
    assert spy.flags() == {(True, True)} and studies.sources == dict.fromkeys(("robustness_rules", "robustness_power"),
                                                                             "computed now")
    assert studies.rule_reps.r.tolist() == [1] and studies.power.p.tolist() == [2]
    args, kw = seen["rules"]
    assert args[:3] == (s.bench, s.design, s.base)
    assert args[3].equals(picks[["p_find", "conceded"]].reset_index(drop=True))
    assert list(args[4]) == ["mechanism_key", "paper_rates", "tfidf"] and args[4]["tfidf"].threshold == 0.4
    assert kw == {"n_reps": 3, "seed": 6, "n_jobs": 1, "parallel_backend": "threading"}
    rules = spy.calls["robustness_rules"]["settings"]
    assert rules == committed.with_benchmark({
        "design": s.design.model_dump(), "simulator": s.base.model_dump(),
        "points": [{"p_find": 0.9, "conceded": 0.8}, {"p_find": 1.0, "conceded": 0.8}],
        "rules": ["mechanism_key", "paper_rates", "tfidf"], "tfidf_threshold": 0.4, "n_reps": 3, "seed": 6})
    args, kw = seen["power"]
    assert args == (s.bench, s.instances, studies.settings, [(4, 5)])
    assert studies.settings == ch.power_settings(s.base, picks, ["p_find", "conceded"])
    study = {"n_reps": 9, "alpha": 0.01, "ladder": [3, 7], "level": 0.7, "pool_runs_per_depth": 6, "seed": 8,
             "n_resamples": 19, "n_pools": 2}
    assert kw == {**study, "n_jobs": 1, "parallel_backend": "threading"}
    assert spy.calls["robustness_power"]["settings"] == committed.with_benchmark({
        "instances": s.instances, "settings": [{"target_pp": st.target_pp, "truth_pp": st.truth_pp,
                                                "truth_se_pp": st.truth_se_pp, "params": st.params.model_dump()}
                                               for st in studies.settings], "designs": [(4, 5)], **study})


def test_chapter_truths_compute_every_grid_with_the_chapters_sizes(monkeypatch):
    from committed_spy import CommittedSpy

    from mechaudit.book.settings import RobustnessSettings
    from mechaudit.workflow import committed

    s, _ = _robustness_setup()
    p = RobustnessSettings(robust_axes={"p_find": [0.9, 1.0]}, alternatives_axes={"evidence_weight": [1.0, 8.0]},
                           truth_runs_per_depth=3, truth_seeds=2, seed=4, n_jobs=1, parallel_backend="threading")
    calls = []

    def truth_grid(bench, design, base, points, **kw):
        calls.append((bench, design, base, points, kw))
        return points.assign(truth_0v1_pp=34.5, truth_0v5_pp=39.8, truth_1v5_pp=[1.0, 9.0][:len(points)],
                             se_0v1_pp=0.1, se_0v5_pp=0.1, se_1v5_pp=0.1, norm_0v1=0.5, norm_1v5=0.05, max_0v1_pp=60.0,
                             max_1v5_pp=20.0)

    monkeypatch.setattr(ch, "truth_grid", truth_grid)
    spy = CommittedSpy(compute=True)
    monkeypatch.setattr(committed, "cached", spy)
    truths = ch.chapter_truths(s, p, write=True)
    assert list(spy.calls) == ["robustness_map", "robustness_alternatives", "robustness_picks_mechanism_key",
                               "robustness_picks_paper_rates"] and spy.flags() == {(True, False)}
    assert [c[3].columns.tolist() for c in calls] == [["p_find"], ["evidence_weight"], ["p_find"], ["p_find"]]
    for (bench, design, base, _, kw), measure in zip(calls, ("paper_rates", "paper_rates", "mechanism_key",
                                                             "paper_rates")):
        assert (bench, design, base) == (s.bench, s.design, s.base)
        assert kw == {"runs_per_depth": 3, "seed": 4, "n_jobs": 1, "parallel_backend": "threading",
                      "measure": measure, "n_seeds": 2}
    assert truths.map.consistent.all() and truths.map.raw.tolist() == ["holds", "fails"]  # 9 > 0.25 x 34.5
    assert truths.picks.truth_1v5_pp.tolist() == [1.0, 9.0] and set(truths.pick_truths) == {"mechanism_key",
                                                                                           "paper_rates"}
    assert spy.calls["robustness_map"]["settings"] == committed.with_benchmark({
        "design": s.design.model_dump(), "simulator": s.base.model_dump(), "points": [{"p_find": 0.9}, {"p_find": 1.0}],
        "runs_per_depth": 3, "n_seeds": 2, "seed": 4, "measure": "paper_rates"})
