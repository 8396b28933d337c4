"""Chapter 02's steps (``mechaudit.book.ch02_critique_depth``) on small hand-made Table 1s."""

from __future__ import annotations

import functools

import pandas as pd
import pytest

from mechaudit.backends import Backend
from mechaudit.book import ch02_critique_depth as ch
from mechaudit.errors import MechauditError
from mechaudit.report.comparison import compare


def _table(rule: str = "reference", extra=(30.0, 35.0, 1.5), p=(1 / 126**4, 0.002, 0.4)) -> pd.DataFrame:
    comps = ["0 v 1", "0 v 5", "1 v 5"]
    return pd.DataFrame({"comparison": comps, "extra_pp": list(extra), "ci_low_pp": [e - 4 for e in extra],
                         "ci_high_pp": [e + 4 for e in extra], "p_value": list(p), "n_partitions": 126,
                         "n_instances": 4, "max_extra_pp": [80.0, 75.0, 20.0],
                         "normalised": [e / m for e, m in zip(extra, (80.0, 75.0, 20.0))], "rule": rule})


def test_p_floor_text_names_the_floor_of_the_exact_test():
    assert ch.p_floor_text(126, 4) == "1/126⁴ ≈ 4.0 × 10⁻⁹"
    assert ch.p_floor_text(126, 1) == "1/126¹ ≈ 7.9 × 10⁻³"


def test_headline_reads_the_main_rule_and_survives_a_design_without_depth_5():
    main = _table().set_index("comparison")
    head = ch.headline(main)
    assert head["0 v 1"] == 30.0 and head["1 v 5"] == 1.5 and head["p 0 v 1"] == "<\u00a010⁻⁸, the smallest possible"
    assert head["0 v 1 text"] == "30.0 (95 % interval 26.0 to 34.0)"
    small = main.loc[["0 v 1"]]
    assert ch.headline(small)["1 v 5"] == "not in this design" == ch.headline(small)["1 v 5 text"]


def _truth() -> pd.DataFrame:
    rows = []
    for measure, shift in (("mechanism_key", 0.0), ("paper_rates", -5.0)):
        rows += [{"measure": measure, "panel": "same-depth", "label": "K=0", "truth_pp": 5.0, "truth_se_pp": None,
                  "max_extra_pp": None}]
        extras = (("0 v 1", 31.0, 0.2), ("0 v 5", 36.0, 0.3), ("1 v 5", 6.0, 0.4))
        rows += [{"measure": measure, "panel": "extra", "label": lab, "truth_pp": t + shift, "truth_se_pp": se,
                  "max_extra_pp": 60.0} for lab, t, se in extras]
    return pd.DataFrame(rows)


def test_add_truth_and_table1_view():
    table = pd.concat([_table("mechanism_key"), _table("paper_rates"), _table("tfidf")], ignore_index=True)
    with_truth = ch.add_truth(table, _truth())
    assert with_truth.truth_pp.tolist() == [31.0, 36.0, 6.0, 26.0, 31.0, 1.0, 31.0, 36.0, 6.0]
    assert ch.add_truth(table, None) is table
    view = ch.table1(with_truth)
    assert view.index.names == ["rule", "comparison"] and len(view.columns) == 7
    assert view.loc[("paper_rates", "0 v 1"), "exact p"] == pytest.approx(1 / 126**4)
    from mechaudit.report.tables import BookTable

    shown = BookTable(view)
    p_column = shown.header.index("Exact p")
    assert shown.rows[0][p_column].text == "<\u00a010⁻⁸" and "_" not in "".join(shown.header)
    assert view.loc[("tfidf", "1 v 5"), "95 % interval (pp)"] == "-2.5 to 5.5"
    assert ch.interval_text(float("nan"), 1.0) == "not computed"
    assert ch.truth_map(_truth(), "paper_rates", "extra") == {"0 v 1": 26.0, "0 v 5": 31.0, "1 v 5": 1.0}
    view = ch.truth_table(_truth())
    assert list(view.columns) == ["mechanism_key", "paper_rates"]
    assert view.loc["extra 0 v 1 (pp)", "paper_rates"] == 26.0
    assert view.loc["same-depth K=0 (%)", "mechanism_key"] == 5.0


def test_sentences_about_the_paper_and_the_test():
    main = _table("paper_rates").set_index("comparison")  # intervals 26-34, 31-39, -2.5-5.5
    assert ch.inside_sentence(main, {"0 v 1": 34.5, "1 v 5": 1.3}) == (
        "the paper's 1 v 5 values lie inside this run's 95 % intervals, its 0 v 1 value outside")
    assert ch.inside_sentence(main, {"0 v 1": 30.0}).startswith("each of the paper's values lies inside")
    assert ch.test_note(main, {"1 v 5": 0.1}, "1 v 5") == "the exact test does not reject at 0.05"
    main.loc["1 v 5", "p_value"] = 0.003
    assert "false alarm" in ch.test_note(main, {"1 v 5": 0.1}, "1 v 5")
    assert ch.test_note(main, {"1 v 5": 4.0}, "1 v 5") == "the exact test rejects at 0.05"
    table = pd.concat([_table("paper_rates", extra=(31.0, 38.9, 3.5)), _table("mechanism_key")], ignore_index=True)
    assert ch.rule_pair_text(table, "paper_rates", "mechanism_key").startswith("0 v 1: 31.0 against 30.0 pp, 0 v 5")
    assert ch.rule_pair_text(table, "paper_rates", "llm") == "not run"


def test_main_rule_falls_back_where_it_cannot_run(capsys):
    assert ch.resolve_main_rule("paper_rates", Backend.REFERENCE, ["paper_rates", "tfidf"]) == "paper_rates"
    assert capsys.readouterr().out == ""
    assert ch.resolve_main_rule("paper_rates", Backend.REPLAY, ["paper_rates", "reference"]) == "llm"
    assert ch.resolve_main_rule("paper_rates", Backend.REFERENCE, ["mechanism_key", "tfidf"]) == "mechanism_key"
    assert "the headline uses 'mechanism_key'" in capsys.readouterr().out


def test_fitted_comparisons_read_the_calibration_targets():
    from mechaudit.workflow.calibrate import load_calibration

    assert ch.fitted_comparisons(load_calibration()) == (["0 v 1", "0 v 5"], ["1 v 5"])


def test_main_table_names_a_rule_that_was_not_run():
    table = _table("tfidf")
    assert list(ch.main_table(table, "tfidf").index) == ["0 v 1", "0 v 5", "1 v 5"]
    with pytest.raises(MechauditError, match="'reference' is not among the rules run \\(tfidf\\)"):
        ch.main_table(table, "reference")


def test_verdicts_follow_the_numbers():
    main = _table().set_index("comparison")  # normalised 0.375 v 0.075
    assert ch.norm_verdict(main) == "the contrast survives the normalisation"
    main.loc["1 v 5", "normalised"] = 0.3
    assert ch.norm_verdict(main) == "the normalisation removes most of the contrast"
    main.loc["0 v 1", "normalised"] = -0.002  # the null: no effect to normalise
    assert ch.norm_verdict(main).startswith("not even 0 v 1")
    assert ch.norm_verdict(main.loc[["0 v 1"]]).startswith("the design lacks")
    index = pd.MultiIndex.from_tuples([("paper_rates", "0 v 1"), ("paper_rates", "1 v 5")])
    settings = pd.DataFrame({"committed": [30.0, 1.0], "slow": [20.0, 9.0]}, index=index)
    assert ch.shape_verdict(settings, "slow").startswith("the change spreads")
    assert ch.shape_verdict(settings.assign(slow=[20.0, 2.5]), "slow").startswith("the shape changes little")


def test_pattern_sentence_names_the_rules_that_show_the_pattern():
    table = pd.concat([_table("reference"), _table("tfidf", extra=(2.0, 3.0, 1.5), p=(0.3, 0.2, 0.4))])
    assert ch.pattern_sentence(table) == "Under the rules reference (not the others) the pattern of the paper appears"
    assert ch.pattern_sentence(_table("reference")).startswith("Under every rule (reference)")
    assert ch.pattern_sentence(_table("tfidf", p=(0.3, 0.2, 0.4))).startswith("Under none")


def test_paper_rows_build_a_comparison_table_and_mark_missing_comparisons():
    main = _table().set_index("comparison")
    rows = ch.paper_rows(main, "reference", "simulator")
    assert [r[0] for r in rows][:3] == [ch.paper_key(a, b) for a, b in ch.PAPER_COMPARISONS]
    assert rows[0][1] == 30.0 and rows[-1] == ("design.partitions_per_instance", 126)
    assert len(compare(rows, llm=False)) == len(rows)
    partial = ch.paper_rows(main.loc[["0 v 1"]], "reference", "simulator")
    assert partial[1][1] is None and partial[4][1] is None  # 0 v 5 not run
    assert ch.paper_values([(0, 1), (2, 3)]) == {"0 v 1": 34.5}


def test_report_llm_judge_prints_only_with_the_llm_rule(capsys):
    class Judge:
        undecided_ = 3

    ch.report_llm_judge({"reference": object()})
    assert capsys.readouterr().out == ""
    ch.report_llm_judge({"llm": Judge()})
    assert "3 matched pairs undecided" in capsys.readouterr().out


def test_scan_view_indexes_the_grid():
    scan = pd.DataFrame({"p": [0.7, 0.8], "extra_0v1_pp": [30.123, 34.0], "extra_1v5_pp": [1.0, 2.0],
                         "se_0v1_pp": [0.21, 0.2], "se_1v5_pp": [0.03, 0.04], "objective": [4.5, 0.01],
                         "within_half_tolerance": [False, True], "consistent": [True, True], "best": [False, True]})
    view = ch.scan_view(scan, ["p"])
    assert view.index.name == "p"
    assert list(view.columns) == ["0 v 1 (pp)", "1 v 5 (pp)", "objective", "within half a tolerance",
                                  "consistent", "best"]
    assert view.loc[0.7, "0 v 1 (pp)"] == "30.1 ± 0.2" and view.loc[0.8, "1 v 5 (pp)"] == "2.0 ± 0.0"
    two = ch.scan_view(scan.assign(q=[1.0, 0.9]), ["p", "q"])
    assert two.index.names == ["p", "q"] and two.loc[(0.8, 0.9), "objective"] == 0.01


def test_exercise_facts_follow_the_simulator(bench):
    from mechaudit.workflow import Design, build_rules, load_simulator_params, null_params, rule_tables, simulate

    params = load_simulator_params()
    design = Design(instances=("A", "B"), depths=(0, 1), runs_per_depth=3)
    placeholders = ch.exercise_facts(bench, design, params, [], pd.DataFrame(), False, 0.25)
    assert set(vars(placeholders).values()) == {None}
    runs = simulate(bench, design, params, seed=2)
    _, table = rule_tables(runs, build_rules(["tfidf"]), [(0, 1)], seed=2)
    out = ch.exercise_facts(bench, design, params, runs, table, True, 0.25)  # the default seed, 0
    _, null = rule_tables(simulate(bench, design, null_params(params), seed=0, log=False),
                          build_rules(["mechanism_key"]), [(0, 1)], seed=0)
    assert out.ex1_mechanism_key_pp == null.extra_pp.iloc[0]
    assert out.ex3_default_pp == table.extra_pp.iloc[0]
    assert out.ex3_strict_same_pct == pytest.approx(100 - out.ex3_strict_max_pp)


def test_table1_facts_quote_the_main_rule_and_mark_a_missing_comparison():
    from mechaudit.workflow import Design
    from mechaudit.workflow.calibrate import load_calibration

    table = pd.concat([_table("paper_rates"), _table("mechanism_key", extra=(33.0, 36.0, 2.0)),
                       _table("tfidf", extra=(20.0, 22.0, 1.0))], ignore_index=True)
    design = Design(instances=("A", "B", "C", "D"), depths=(0, 1, 5), runs_per_depth=5)
    kw = {"level": 0.95, "status": "simulated", "llm": False, "show_paper": False}
    facts = ch.table1_facts(table, "paper_rates", design, load_calibration(), **kw)
    assert (facts.extra_0v1_pp, facts.ci_1v5, facts.key_0v1_pp, facts.partitions) == (30.0, "-2.5 to 5.5", 33.0, 126)
    assert facts.text_0v1 == "TF-IDF 20.0 pp" and facts.inside == "no comparison with published numbers"
    assert facts.norm_1v5 == pytest.approx(1.5 / 20.0) and facts.headline_0v1.startswith("30.0 (95 % interval")
    short = ch.table1_facts(table[table.comparison != "1 v 5"], "paper_rates", design, load_calibration(), **kw)
    assert short.extra_1v5_pp is None and short.p_1v5 == "not in this design"
    assert short.ceiling_reading == "the design lacks 1 v 5"


def test_truth_and_settings_facts_read_their_tables():
    from mechaudit.workflow import load_simulator_params

    truth = ch.truth_facts(_truth(), 7)
    assert (truth.key_K1, truth.rate_1v5, truth.rate_max_1v5, truth.runs) == (None, 1.0, 60.0, 7)
    assert ch.truth_facts(None, 7).rate_ceiling_reading == "(no simulator truth for LLM runs)"
    index = pd.MultiIndex.from_product([["mechanism_key", "paper_rates"], ["0 v 1", "0 v 5", "1 v 5"]])
    settings = pd.DataFrame({tag: [10.0 * i + j for j in range(6)] for i, tag in enumerate(ch.SETTING_TAGS)},
                            index=index)
    settings.columns = ["committed", "a", "b", "p_find = 0.5", "c"]
    facts = ch.settings_facts(settings, load_simulator_params(), contrast_p_find=0.5, compare_runs=40, profile=None)
    assert facts.set.committed_key_0v1 == 0.0 and facts.set.contrast_rate_1v5 == 35.0
    assert facts.set.keyfit_rate_0v1 == 43.0 and facts.first_changed_k1 is None


def test_fit_set_sentence_claims_pinning_only_for_one_point():
    from mechaudit.workflow.calibrate import load_calibration

    spec = load_calibration()
    scan = pd.DataFrame({"p_weak_supported": [0.9, 0.9, 0.925], "p_find": [0.975, 1.0, 1.0],
                         "within_half_tolerance": [False, False, False], "best": [False, True, False],
                         "extra_0v1_pp": [33.2, 34.6, 35.8], "se_0v1_pp": 0.2, "extra_0v5_pp": [39.2, 39.2, 40.6],
                         "se_0v5_pp": 0.21})
    assert ch.fit_set_sentence(scan, spec).startswith("no grid point's expected values")
    one = scan.assign(within_half_tolerance=[False, True, False])
    assert ch.fit_set_sentence(one, spec).startswith("only the best point's expected values")
    assert ch.fit_point_text(one, spec) == "(p_weak_supported 0.9, p_find 1): 34.6 ± 0.2 / 39.2 ± 0.2 pp"
    many = scan.assign(within_half_tolerance=True)
    text = ch.fit_set_sentence(many, spec)
    assert text.startswith("3 grid points have expected values within half a tolerance")
    assert "p_weak_supported 0.9 to 0.925, p_find 0.975 to 1" in text and "only to that set" in text
    assert ch.fit_point_text(many, spec, best_only=True) == ch.fit_point_text(one, spec)


def test_recheck_sentence_flags_a_stale_scan():
    from mechaudit.workflow.calibrate import load_calibration

    spec = load_calibration()
    scan = pd.DataFrame({"best": [True], "extra_0v1_pp": [34.6], "se_0v1_pp": [0.2], "extra_0v5_pp": [39.2],
                         "se_0v5_pp": [0.2]})
    truth = pd.DataFrame({"measure": "paper_rates", "panel": "extra", "label": ["0 v 1", "0 v 5"],
                          "truth_pp": [35.0, 38.9], "truth_se_pp": [0.6, 0.6]})
    assert ch.recheck_sentence(scan, truth, spec).endswith("every difference is within 3 combined standard errors")
    far = truth.assign(truth_pp=[37.0, 38.9])  # 2.4 pp off with a combined SE of 0.63
    assert ch.recheck_sentence(scan, far, spec).endswith("the committed scan may be stale")
    assert ch.recheck_sentence(scan, None, spec) == "(no simulator truth for LLM runs)"


def test_small_steps_keep_their_defaults_keys_and_names():
    from mechaudit.report.facts import FactSpec

    assert ch._truth_pp("a doc").metadata["mechaudit.fact"] == FactSpec(unit="pp", digits=1, doc="a doc",
                                                                         missing="not in this design")
    assert ch.ceiling_reading(3.0, 10.0) == "a large share of its ceiling, so the ceiling limits it"
    assert ch.ceiling_reading(2.5, 10.0).startswith("far below its ceiling")
    with pytest.raises(MechauditError) as err:
        ch.main_table(_table("tfidf"), "reference")
    assert err.value.field == "main_rule"
    main = _table(extra=(30.36, 35.0, 1.5)).set_index("comparison")
    assert ch.paper_rows(main, "reference", "simulator")[0][1] == 30.4
    assert ch.design_rows({"runs": 60, "run_pairs": 420, "matched_pairs": 4863}, "simulator") == [
        ("design.runs", 60), ("design.run_pairs", 420), ("design.matched_pairs", 4863, "simulator")]
    table = pd.concat([_table("mechanism_key"), _table("paper_rates")], ignore_index=True)
    view = ch.table1(ch.add_truth(table, _truth()))
    assert list(view.columns) == ["extra (pp)", "95 % interval (pp)", "exact p", "ceiling (pp)", "share of ceiling",
                                  "truth (pp)", "truth SE (pp)"]
    assert ch.truth_table(_truth()).index.name == "quantity"


def test_pattern_sentence_counts_a_p_at_alpha_and_lists_the_rules_in_table_order():
    table = pd.concat([_table("tfidf", p=(0.05, 0.2, 0.4)), _table("reference"),
                       _table("embedding", extra=(2.0, 3.0, 1.5), p=(0.3, 0.2, 0.4))])
    assert ch.pattern_sentence(table) == ("Under the rules tfidf, reference (not the others) the pattern of the paper "
                                          "appears")


def test_shape_verdict_needs_2_pp_and_three_times_the_committed_value():
    index = pd.MultiIndex.from_tuples([("paper_rates", "0 v 1"), ("paper_rates", "1 v 5")])
    settings = pd.DataFrame({"committed": [30.0, 1.0], "slow": [20.0, 3.5]}, index=index)
    assert ch.shape_verdict(settings, "slow").startswith("the change spreads")  # 3.5 > max(2, 3 x 1)
    assert ch.shape_verdict(settings.assign(slow=[20.0, 3.0]), "slow").startswith("the shape changes little")
    small = settings.assign(committed=[30.0, 0.5], slow=[20.0, 2.5])  # 2.5 > max(2, 1.5)
    assert ch.shape_verdict(small, "slow").startswith("the change spreads")


def test_truth_facts_read_both_measures_and_a_design_without_1_v_5():
    truth = ch.truth_facts(_truth(), 7)
    assert (truth.key_max_1v5, truth.rate_max_1v5, truth.rate_1v5) == (60.0, 60.0, 1.0)
    no_1v5 = _truth()[lambda t: t.label != "1 v 5"]
    assert ch.truth_facts(no_1v5, 7).rate_ceiling_reading == "the design lacks 1 v 5"


def test_settings_facts_carry_the_contrast_and_the_change_profile():
    from mechaudit.workflow import load_simulator_params

    index = pd.MultiIndex.from_product([["mechanism_key", "paper_rates"], ["0 v 1", "0 v 5", "1 v 5"]])
    settings = pd.DataFrame({tag: [10.0 * i + j for j in range(6)] for i, tag in enumerate(ch.SETTING_TAGS)},
                            index=index)
    settings.columns = ["committed", "a", "b", "p_find = 0.5", "c"]
    profile = pd.DataFrame({"initiating event changed (%)": [0.0, 42.0], "middle steps changed (%)": [0.0, 17.0]},
                           index=[0, 1])
    params = load_simulator_params()
    facts = ch.settings_facts(settings, params, contrast_p_find=0.5, compare_runs=40, profile=profile)
    assert (facts.contrast_p_find, facts.p_find, facts.compare_runs) == (0.5, params.p_find, 40)
    assert facts.shape_verdict == ch.shape_verdict(settings, "p_find = 0.5")
    assert (facts.first_changed_k1, facts.middle_changed_k1) == (42.0, 17.0)
    assert facts.set == ch.SettingTruths(0.0, 3.0, 5.0, 13.0, 15.0, 23.0, 25.0, 33.0, 34.0, 35.0, 40.0, 43.0)


def test_fit_point_text_lists_every_point_near_the_targets_by_default():
    from mechaudit.workflow.calibrate import load_calibration

    scan = pd.DataFrame({"p_weak_supported": [0.9, 0.925], "p_find": [1.0, 0.975], "within_half_tolerance": True,
                         "best": [True, False], "extra_0v1_pp": [34.6, 35.5], "se_0v1_pp": 0.2,
                         "extra_0v5_pp": [39.2, 40.6], "se_0v5_pp": 0.2})
    assert ch.fit_point_text(scan, load_calibration()) == (
        "(p_weak_supported 0.9, p_find 1): 34.6 ± 0.2 / 39.2 ± 0.2 pp; "
        "(p_weak_supported 0.925, p_find 0.975): 35.5 ± 0.2 / 40.6 ± 0.2 pp")


def test_table1_facts_quote_the_text_rules_p_values_and_the_provenance():
    from mechaudit.book.chapter import headline_provenance
    from mechaudit.workflow import Design
    from mechaudit.workflow.calibrate import load_calibration

    table = pd.concat([_table("paper_rates", p=(1 / 126**4, 0.002, 0.0123)), _table("mechanism_key"),
                       _table("tfidf", extra=(20.0, 22.0, 1.0)), _table("embedding", extra=(25.0, 26.0, 1.0))],
                      ignore_index=True)
    design = Design(instances=("A", "B", "C", "D"), depths=(0, 1, 5), runs_per_depth=5)
    facts = ch.table1_facts(table, "paper_rates", design, load_calibration(), level=0.9, status="simulated",
                            llm=False, show_paper=True)
    head = ch.headline(ch.main_table(table, "paper_rates"), 0.9)
    assert (facts.headline_provenance, facts.headline_verdict) == headline_provenance("ch02", False, head)
    assert facts.text_0v1 == "TF-IDF 20.0 pp, Embedding (MiniLM) 25.0 pp"
    assert facts.headline_p_0v1 == head["p 0 v 1"] == "<\u00a010⁻⁸, the smallest possible"
    assert facts.level_pct == "90" and facts.p_1v5 == "0.012"
    assert facts.norm_verdict == "the contrast survives the normalisation"
    assert facts.rate_vs_key == ch.rule_pair_text(table, "paper_rates", "mechanism_key") != "not run"
    main = ch.main_table(table, "paper_rates")
    assert facts.inside == ch.inside_sentence(main, ch.paper_values(design.comparisons()), 0.9)


@functools.cache
def _cal_setup():
    """``calibration_setup()`` at the shipped files (read only)."""
    from mechaudit.workflow.calibrate import calibration_setup

    return calibration_setup()


def _calibration_run(source: str = "computed now", weak=(60.0, 10.0, 5.0, 1.0), n_sound: int = 24):
    """A hand-made calibration at the shipped spec: three scan points (the first best, two near every
    target), 100 demands of which ``n_sound`` on sound links, a reply_sound of 0.05 / 0.7 / 0.2 / 0.05."""
    import numpy as np

    from mechaudit.workflow import load_simulator_params
    from mechaudit.workflow.calibrate import Calibration, Measured, paper_targets

    s = _cal_setup()
    scan = pd.DataFrame({"p_weak_supported": [0.925, 0.9, 1.0], "p_find": [1.0, 0.975, 0.8],
                         "extra_0v1_pp": [34.6, 35.5, 20.0], "se_0v1_pp": [0.2, 0.21, 0.3],
                         "extra_0v5_pp": [39.2, 40.6, 30.0], "se_0v5_pp": [0.2, 0.22, 0.25],
                         "extra_1v5_pp": [4.0, 4.5, 9.0], "se_1v5_pp": 0.1, "objective": [0.1, 0.2, 9.0],
                         "distance": [0.2, 0.3, 5.0], "within_half_tolerance": [True, True, False],
                         "consistent": [True, True, False], "best": [True, False, False]})
    committed_params = load_simulator_params()
    params = type(committed_params).model_validate(committed_params.model_dump() | {
        "p_weak_supported": 0.925, "reply_sound": {"conceded": 0.05, "answered": 0.7, "partial": 0.2, "dropped": 0.05}})
    measured = Measured({}, np.array(weak), n_sound, 11.5, 10)
    cal = Calibration(params, scan, measured, paper_targets(list(s.spec.targets)), 0.2609)
    return ch.CalibrationRun(s.bench, s.design, committed_params, s.spec, cal, source)


def test_calibration_facts_quote_the_scan_the_mixture_and_the_verdict():
    from dataclasses import replace

    from mechaudit.workflow.calibrate import fit_table

    run = _calibration_run()
    truth = pd.DataFrame({"measure": "paper_rates", "panel": "extra", "label": ["0 v 1", "0 v 5"],
                          "truth_pp": [35.0, 38.9], "truth_se_pp": [0.6, 0.6]})
    facts = ch.calibration_facts(run, fit_table(run.cal, run.committed, run.spec), truth)
    assert facts == ch.CalibrationFacts(
        p_exact=0.2609, p_extra=0.26, grid_name="p_weak_supported from 0.8 to 1 in 9 steps; p_find from 0.8 to 1 in "
                                                 "9 steps",
        n_points=3, runs=200, seeds=4, tol="3 pp for 0 v 1, 3 pp for 0 v 5", half_tol="1.5 pp, 1.5 pp", max_se=0.3,
        se_limit=pytest.approx(0.3), best="p_weak_supported = 0.925, p_find = 1",
        best_pp="34.6 pp (0 v 1), 39.2 pp (0 v 5)", fit_set=ch.fit_set_sentence(run.cal.scan, run.spec),
        n_consistent=2, level_pct="95", source="computed in this run (its settings differ from the committed file's)",
        mix_target="61 / 27 / 9 / 3", mix_achieved="61.2 / 26.8 / 9.8 / 2.2",
        mix_sentence="a match up to the rounding of reply_sound (largest gap 0.8 pp)",
        reply_sound="conceded / answered / partial / dropped = 0.05 / 0.7 / 0.2 / 0.05", demands=50.0, n_runs=60,
        verdict="the committed values of p_weak_supported and reply_sound differ from the calibration's",
        fit_points="(p_weak_supported 0.925, p_find 1): 34.6 ± 0.2 / 39.2 ± 0.2 pp; "
                   "(p_weak_supported 0.9, p_find 0.975): 35.5 ± 0.2 / 40.6 ± 0.2 pp",
        recheck=ch.recheck_sentence(run.cal.scan, truth, run.spec), targets="34.5 pp for 0 v 1, 39.8 pp for 0 v 5")
    assert facts.fit_set.startswith("2 grid points") and facts.recheck.startswith("0 v 1: 35.0 ± 0.6 against 34.6")
    misfit = _calibration_run("committed", weak=(70.0, 10.0, 5.0, 1.0), n_sound=14)  # 70 % conceded on weak links
    same = replace(misfit, committed=misfit.cal.params)
    facts = ch.calibration_facts(same, fit_table(same.cal, same.committed, same.spec), None)
    assert facts.mix_sentence == ("at the fitted point 86 % of the demands hit a weak link and are conceded at the "
                                  "chosen rate, so no reply to sound links reaches the paper's shares: the closest "
                                  "mixture misses a share by up to 9.7 pp, a misfit")
    assert facts.source == ("read from the committed file data/computed/calibration_scan.csv, which `mechaudit "
                            "calibrate` writes and the test suite re-checks")
    assert facts.verdict == "the committed file holds every calibrated value"
    assert facts.recheck == "(no simulator truth for LLM runs)"


def test_write_calibration_reports_the_scan_the_record_and_the_values(monkeypatch):
    from mechaudit.workflow import committed
    from mechaudit.workflow.calibrate import constrained_by_fit

    run = _calibration_run("committed")
    asked, records = [], []
    monkeypatch.setattr(ch, "run_calibration", lambda **kw: asked.append(kw) or run)
    monkeypatch.setattr(committed, "write_record", lambda name, record: records.append((name, record)) or False)
    text = ch.write_calibration()
    assert asked == [{"n_jobs": -1, "write": True, "force": False}]
    assert records == [("constrained_by_fit", constrained_by_fit(run.cal.scan, run.spec))] and records[0][1]
    assert text.splitlines() == [
        "data/computed/calibration_scan.csv (3 points): current, kept",
        f"constrained_by_fit.json (current, kept): {', '.join(records[0][1])}",
        "best point: (p_weak_supported 0.925, p_find 1): 34.6 ± 0.2 / 39.2 ± 0.2 pp",
        "within half a tolerance of every target: (p_weak_supported 0.925, p_find 1): 34.6 ± 0.2 / 39.2 ± 0.2 pp; "
        "(p_weak_supported 0.9, p_find 0.975): 35.5 ± 0.2 / 40.6 ± 0.2 pp",
        "calibrated values: p_extra_hypothesis = 0.26, p_weak_supported = 0.925, p_find = 1.0, reply_sound = "
        "{'conceded': 0.05, 'answered': 0.7, 'partial': 0.2, 'dropped': 0.05}",
        "params/simulator.yaml differs in p_weak_supported, reply_sound: copy the values above into it"]
    monkeypatch.setattr(committed, "write_record", lambda name, record: True)
    far = _calibration_run("computed now")
    far.cal.scan["within_half_tolerance"] = False
    monkeypatch.setattr(ch, "run_calibration", lambda **kw: asked.append(kw) or far)
    lines = ch.write_calibration(n_jobs=2, force=True).splitlines()
    assert asked[-1] == {"n_jobs": 2, "write": True, "force": True}
    assert lines[0].endswith("(3 points): written") and lines[1].startswith("constrained_by_fit.json (written): ")
    assert lines[3] == "within half a tolerance of every target: no point"


def test_run_calibration_reads_the_committed_scan_at_the_shipped_settings(monkeypatch):
    from committed_spy import CommittedSpy

    from mechaudit.workflow import committed

    spy = CommittedSpy()
    monkeypatch.setattr(committed, "cached", spy)
    seen = []
    monkeypatch.setattr(ch, "calibrate", lambda *a, **kw: seen.append((a, kw)) or "calibrated")
    run = ch.run_calibration()
    s = _cal_setup()
    assert (run.bench, run.design, run.committed, run.spec, run.cal, run.source) == (
        s.bench, s.design, s.base, s.spec, "calibrated", "committed")
    assert spy.flags() == {(False, False)} and list(spy.calls) == ["calibration_scan"]
    (args, kw), = seen
    assert args == (s.bench, s.design, s.base, s.spec) and list(kw) == ["table"]
    assert kw["table"].equals(committed.load("calibration_scan", spy.calls["calibration_scan"]["settings"]))


def test_run_calibration_computes_a_scan_whose_settings_differ(monkeypatch, tmp_path, capsys):
    from committed_spy import CommittedSpy

    from mechaudit.paths import PARAMS_DIR
    from mechaudit.workflow import committed
    from mechaudit.workflow.calibrate import calibration_setup, closed_form_base, paper_targets, scan_settings

    spec = tmp_path / "calibration.yaml"
    spec.write_text((PARAMS_DIR / "calibration.yaml").read_text(encoding="utf-8").replace("n_seeds: 4", "n_seeds: 2"),
                    encoding="utf-8")
    spy = CommittedSpy(compute=True)
    monkeypatch.setattr(committed, "cached", spy)
    scans, cals = [], []
    monkeypatch.setattr(ch, "scan", lambda *a, **kw: scans.append((a, kw)) or pd.DataFrame({"point": [1]}))
    monkeypatch.setattr(ch, "calibrate", lambda *a, **kw: cals.append((a, kw)) or "calibrated")
    run = ch.run_calibration(str(spec))
    s = calibration_setup(calibration_file=str(spec))
    params, _ = closed_form_base(s.base, s.spec, paper_targets(list(s.spec.targets)))
    assert capsys.readouterr().out == (
        "The committed calibration scan was computed with other settings: computing the scan now (`mechaudit "
        "calibrate` writes it to data/computed/).\n")
    assert scans == [((s.bench, s.design, params, s.spec), {"n_jobs": 1})]
    assert spy.calls["calibration_scan"]["settings"] == scan_settings(s.design, params, s.spec)
    assert run.source == "computed now" and run.spec.n_seeds == 2 and spy.flags() == {(False, False)}
    assert cals[0][1]["table"].point.tolist() == [1]
    ch.run_calibration(str(spec), n_jobs=3, write=True, force=True)
    assert capsys.readouterr().out == "" and scans[-1][1] == {"n_jobs": 3} and spy.flags() == {(True, True)}


def test_design_facts_quote_the_design_and_the_papers_numbers():
    from mechaudit.paper import reported
    from mechaudit.workflow import Design, load_simulator_params

    params = load_simulator_params()
    design = Design(instances=("A", "B"), depths=(0, 1, 5), runs_per_depth=2)
    facts = ch.design_facts(design, {"matched_pairs": 12345}, params)
    assert (facts.run_pairs_per_instance, facts.matched_pairs, facts.extra_max, facts.p_extra) == (
        design.n_run_pairs // 2, "12,345", params.extra_hypotheses_max, params.p_extra_hypothesis)
    assert facts.paper_density == pytest.approx(4863 / 420) and facts.paper_matched_pairs == "4,863"
    assert facts.paper_demands == reported("engagement.demands") == 332
    assert (facts.paper_0v1_pp, facts.paper_0v5_pp) == (34.5, 39.8)
    assert facts.paper_1v5_pp == reported(ch.paper_key(1, 5))
    for a, b in ch.PAPER_COMPARISONS:
        low, high = (reported(ch.judge_range_key(f"{a} v {b}", end)) for end in ("low", "high"))
        assert getattr(facts, f"paper_judges_{a}v{b}") == f"{low:g} to {high:g}" and low <= high


def test_simulator_truth_and_settings_table_use_seed_0_and_both_measures(bench):
    from mechaudit.workflow import Design, load_simulator_params, population_truth
    from mechaudit.workflow.depth import MEASURES

    params = load_simulator_params()
    design = Design(instances=("A",), depths=(0, 1), runs_per_depth=2)
    assert ch.simulator_truth(bench, design, params, True, 3) is None
    truth = ch.simulator_truth(bench, design, params, False, 3)
    expected = population_truth(bench, design, params, runs_per_depth=3, seed=0, measures=MEASURES)
    pd.testing.assert_frame_equal(truth, expected)
    table = ch.settings_table(bench, design, params, {"fast": {"p_find": 0.5}}, 3)
    assert list(table.columns) == ["committed", "fast"] and table.index.names == ["measure", "label"]
    assert table.committed.tolist() == expected.truth_pp.tolist()
    fast = population_truth(bench, design, params.model_copy(update={"p_find": 0.5}), runs_per_depth=3, seed=0,
                            measures=MEASURES)
    assert table.fast.tolist() == fast.truth_pp.tolist() != table.committed.tolist()


def test_paper_judge_ranges_give_the_papers_lowest_and_highest_judge():
    from mechaudit.paper import reported

    key = ch.judge_range_key("0 v 1", "low")
    assert key == "critique_depth.judge_range_pp.k0_vs_k1_low"
    assert ch.paper_judge_ranges(["0 v 1", "2 v 3"]) == {
        "0 v 1": (reported(key), reported("critique_depth.judge_range_pp.k0_vs_k1_high"))}
