"""Chapter 02's steps (``mechaudit.book.ch02_critique_depth``) on small hand-made Table 1s."""

from __future__ import annotations

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
    out = ch.exercise_facts(bench, design, params, runs, table, True, 0.25, seed=2)
    _, null = rule_tables(simulate(bench, design, null_params(params), seed=2, log=False),
                          build_rules(["mechanism_key"]), [(0, 1)], seed=2)
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
