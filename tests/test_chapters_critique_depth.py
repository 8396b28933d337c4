"""Chapter 02's steps (``mechaudit.chapters.critique_depth``) on small hand-made Table 1s."""

from __future__ import annotations

import pandas as pd
import pytest

from mechaudit.chapters import critique_depth as ch
from mechaudit.errors import MechauditError
from mechaudit.paper import compare


def _table(rule: str = "reference", extra=(30.0, 35.0, 1.5), p=(1 / 126**4, 0.002, 0.4)) -> pd.DataFrame:
    comps = ["0 v 1", "0 v 5", "1 v 5"]
    return pd.DataFrame({"comparison": comps, "extra_pp": list(extra), "p_value": list(p), "n_partitions": 126,
                         "n_instances": 4, "max_extra_pp": [80.0, 75.0, 20.0],
                         "normalised": [e / m for e, m in zip(extra, (80.0, 75.0, 20.0))], "rule": rule})


def test_p_floor_text_names_the_floor_of_the_exact_test():
    assert ch.p_floor_text(126, 4) == "1/126⁴ ≈ 4.0 × 10⁻⁹"
    assert ch.p_floor_text(126, 1) == "1/126¹ ≈ 7.9 × 10⁻³"


def test_headline_reads_the_main_rule_and_survives_a_design_without_depth_5():
    main = _table().set_index("comparison")
    head = ch.headline(main)
    assert head["0 v 1"] == 30.0 and head["1 v 5"] == 1.5 and head["p 0 v 1"] == "<\u00a010⁻⁸, the smallest possible"
    small = main.loc[["0 v 1"]]
    assert ch.headline(small)["1 v 5"] == "not in this design"


def test_status_uses_the_book_vocabulary():
    assert ch.status("reference", "m") == "simulated (reference backend)"
    assert ch.status("replay", "claude-x") == "LLM (claude-x, replay)"


def test_add_truth_and_table1_view():
    table = pd.concat([_table("mechanism_key"), _table("reference")], ignore_index=True)
    truth = pd.DataFrame({"label": ["K=0", "0 v 1", "0 v 5", "1 v 5"], "truth_pp": [5.0, 31.0, 36.0, 1.0],
                          "truth_se_pp": [0.1, 0.2, 0.3, 0.4]})
    with_truth = ch.add_truth(table, truth)
    assert with_truth.truth_pp.tolist() == [31.0, 36.0, 1.0] * 2
    assert ch.add_truth(table, None) is table
    view = ch.table1(with_truth)
    assert view.index.names == ["rule", "comparison"] and len(view.columns) == 6
    assert view.loc[("reference", "0 v 1"), "exact p"] == pytest.approx(1 / 126**4)
    from mechaudit.tables import BookTable

    shown = BookTable(view)
    p_column = shown.header.index("Exact p")
    assert shown.rows[0][p_column].text == "<\u00a010⁻⁸" and "_" not in "".join(shown.header)


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
    shape = pd.DataFrame({"a": [30.0, 1.0], "b": [20.0, 9.0]}, index=["0 v 1", "1 v 5"])
    assert ch.shape_verdict(shape).startswith("the change spreads")
    assert ch.shape_verdict(shape.assign(b=[20.0, 2.5])).startswith("the shape changes little")


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
    assert len(compare(rows, backend="reference")) == len(rows)
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
    scan = pd.DataFrame({"p": [0.7, 0.8], "extra_0v1_pp": [30.123, 34.0], "objective": [4.5, 0.01],
                         "best": [False, True]})
    view = ch.scan_view(scan, ["p"])
    assert view.index.name == "p" and list(view.columns) == ["0 v 1 (pp)", "objective", "best"]
    assert view.loc[0.7, "0 v 1 (pp)"] == 30.12
