"""CSV files for scripts (``mechaudit.report.outputs.csv_table``, what ``save`` writes): every column named,
numeric columns hold numbers or empty cells with a ``<column> status`` column saying why a value is
missing, and an empty kappa cell says why kappa is undefined. The shown table is never changed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechaudit.agreement import agreement_table, cohen_kappa, kappa_undefined
from mechaudit.report.outputs import csv_table, save


def test_a_not_run_column_of_a_numeric_table_is_split_into_numbers_and_status(tmp_path):
    # chapter 05's percent_different offline: the LLM judge column says "not run"
    shown = pd.DataFrame({"pairs": [80, 80], "tfidf": [0.0, 1.2], "llm judge": ["not run", "not run"]},
                         index=pd.Index(["wording_only", "first_step_swapped"], name="kind"))
    before = shown.copy()
    assert save("percent_different", shown, tmp_path) is shown
    pd.testing.assert_frame_equal(shown, before)  # what the notebook shows is unchanged
    back = pd.read_csv(tmp_path / "percent_different.csv")
    assert list(back.columns) == ["kind", "pairs", "tfidf", "llm judge", "llm judge status"]
    assert back["llm judge"].isna().all() and back["llm judge status"].tolist() == ["not run", "not run"]
    assert pd.api.types.is_float_dtype(back["llm judge"]) and back["tfidf"].tolist() == [0.0, 1.2]


def test_numbers_written_as_text_and_statuses_are_separated():
    # a paper comparison's "this run" column: formatted numbers and "not run"
    shown = pd.DataFrame({"paper": ["4,863", "83"], "this run": ["5,192", "not run"], "source": ["App. A", "§5.2"]},
                         index=["Matched hypothesis pairs", "First step swapped, LLM judge (%)"])
    out = csv_table(shown)
    assert list(out.columns) == ["label", "paper", "this run", "this run status", "source"]
    assert out["this run"].tolist()[0] == 5192.0 and np.isnan(out["this run"].tolist()[1])
    assert out["this run status"].tolist() == [None, "not run"]
    assert out["paper"].tolist() == [4863, 83]  # numbers written as text are numbers
    ids = csv_table(pd.DataFrame({"opening": ["A-01", "A-05"], "route": ["x > y", "z"]}))
    assert ids["opening"].tolist() == ["A-01", "A-05"]  # text stays text
    # chapter 06 offline: the paper's numbers as text and "this run" not run at all
    llm_only = csv_table(pd.DataFrame({"paper": ["96", "83"], "this run": ["not run", "not run"],
                                       "provenance": ["not run offline (LLM only)"] * 2}))
    assert llm_only["paper"].tolist() == [96, 83] and llm_only["this run"].isna().all()
    assert llm_only["this run status"].tolist() == ["not run", "not run"]
    assert list(llm_only.columns) == ["paper", "this run", "this run status", "provenance"]  # a label column
    undecided = csv_table(pd.DataFrame({"llm": [12.5, "undecided"], "tfidf": [0.0, 0.0]}))
    assert undecided["llm"].tolist()[0] == 12.5 and undecided["llm status"].tolist() == [None, "undecided"]


@pytest.mark.parametrize("table", [
    pd.DataFrame({"status": ["not run: offline backend"]}, index=pd.Index(["judge models"], name="axis")),
    pd.DataFrame({"provenance": ["independent computation", "not run offline (LLM only)"], "x": [1, 2]}),
    pd.DataFrame({"value": ["< 10⁻⁴", "not run"], "n": [1, 2]}),
])
def test_status_tables_and_text_columns_stay_as_they_are(table):
    out = csv_table(table)
    assert not [c for c in out.columns if c.endswith(" status") and c != "status"]
    assert out[table.columns[0]].tolist() == table[table.columns[0]].tolist()


def test_every_column_is_named():
    # chapter 09's decisions: (suite, unnamed pair label); chapter 05's similarity summary: two column levels
    decisions = pd.concat({"template": pd.DataFrame({"TF-IDF": [True, False]}, index=["U-02 wording_only", "U-03 x"])},
                          names=["suite"])
    out = csv_table(decisions)
    assert list(out.columns) == ["suite", "label", "TF-IDF"] and out["TF-IDF"].tolist() == [True, False]
    summary = pd.DataFrame([[0.7, 0.5]], columns=pd.MultiIndex.from_tuples([("tfidf", "mean"), ("tfidf", "min")]),
                           index=pd.MultiIndex.from_tuples([("template", "wording_only")], names=["suite", "kind"]))
    assert list(csv_table(summary).columns) == ["suite", "kind", "tfidf mean", "tfidf min"]
    both = pd.DataFrame({"x": [1]}, index=pd.MultiIndex.from_tuples([("a", "b")]))
    assert list(csv_table(both).columns) == ["label 1", "label 2", "x"]
    assert list(csv_table(pd.Series([1, 2])).columns) == ["value"]
    plain = pd.DataFrame({"kind": ["a"], "pct": [1.0]})
    pd.testing.assert_frame_equal(csv_table(plain), plain)  # nothing to do: unchanged


def test_an_undefined_kappa_gets_its_reason(tmp_path):
    constant = np.ones(6, dtype=bool)
    table = agreement_table({"a": constant, "b": constant, "c": np.array([1, 0, 1, 0, 1, 1], dtype=bool)})
    assert np.isnan(cohen_kappa(constant, constant))
    save("agreement", table, tmp_path)
    back = pd.read_csv(tmp_path / "agreement.csv")
    assert list(back.columns) == ["method_a", "method_b", "n", "raw_agreement", "kappa", "kappa status"]
    first = back.iloc[0]
    assert np.isnan(first["kappa"]) and first["kappa status"] == kappa_undefined(6)
    assert kappa_undefined(6) == "undefined: both gave one and the same verdict for every pair (chance agreement 1)"
    assert back["kappa status"].iloc[1:].isna().all() and back["kappa"].iloc[1:].notna().all()
    assert kappa_undefined(0) == "undefined: no pair was decided by both"
    no_count = csv_table(pd.DataFrame({"kappa": [np.nan, 0.4]}))
    assert no_count["kappa status"].tolist() == [kappa_undefined(None), None]


def test_whole_numbers_written_as_text_stay_integers_and_an_empty_cell_stays_empty():
    this_run = pd.Series(["5,192", None], dtype=object)  # None itself, as a list of cells holds it
    out = csv_table(pd.DataFrame({"paper": ["4,863", "83"], "this run": this_run, "p": ["1e-3", "0.5"]}))
    assert out["paper"].dtype == np.int64 and out["paper"].tolist() == [4863, 83]
    assert pd.api.types.is_float_dtype(out["this run"]) and out["this run"].iloc[0] == 5192.0
    assert np.isnan(out["this run"].iloc[1]) and "this run status" not in out
    assert out["p"].tolist() == [0.001, 0.5]
