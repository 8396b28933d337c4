"""The book's table formatter (``mechaudit.report.tables``), its label map (``mechaudit.report.labels``) and the
``{book-table}`` directive that renders it (``mechaudit.sphinxext.table``)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from mechaudit.report.comparison import compare
from mechaudit.report.labels import LABELS, humanise, label, relabel_words
from mechaudit.report.tables import DASH, BookTable, Column, book_table, format_column, format_number
from mechaudit.sphinxext.table import build_table


def texts(cells):
    return [c.text for c in cells]


def test_labels_have_words_and_units():
    assert label("tfidf") == "TF-IDF" and label("extra_pp") == "Extra divergence (pp)"
    assert label("first_step_swapped") == "First step swapped"
    assert label("some_new_name") == "Some new name"  # unknown: words, never an underscore
    assert relabel_words("tfidf 0.25") == "TF-IDF 0.25"
    assert relabel_words("U-02 wording_only") == "U-02 wording only"
    assert humanise("MAE_of_x") == "MAE of x" and label(0.5) == "0.5"
    from mechaudit.report.labels import in_sentence

    assert in_sentence("paper_rates") == "paper-rate judge" and in_sentence("tfidf") == "TF-IDF"
    assert not [v for v in LABELS.values() if "_" in v], "a label in the map carries an underscore"


@pytest.mark.parametrize(("values", "header", "expected"), [
    ([34.4789, 1.3], "Extra divergence (pp)", ["34.5", "1.3"]),  # pp: one decimal
    ([21.0, 3.0, 83.33], "% saturated", ["21", "3", "83"]),  # whole percents
    ([5.6, 83.3], "Changed (%)", ["5.6", "83.3"]),  # a decimal below 10 matters
    ([0.4, 0.0], "Changed (%)", ["0.4", "0.0"]),  # a nonzero share would read as 0
    ([3.9e-9, 0.23, 0.0012], "Exact p", ["<\u00a010⁻⁸", "0.23", "0.0012"]),
    ([4863, 12], "Matched pairs", ["4,863", "12"]),  # counts with separators
    ([0.5712, 0.1], "Share of ceiling", ["0.57", "0.10"]),  # same decimals down the column
    ([3.04, 12.0], "Width", ["3", "12"]),  # three significant digits of the largest
    ([1000.0, 5.0], "Runs", ["1,000", "5"]),  # whole floats as integers
    ([5.4, 7.8, 4.8], "Groups", ["5.4", "7.8", "4.8"]),  # no more decimals than the values need
    ([0.05, 1.0, 10.0], "Threshold", ["0.05", "1.00", "10.00"]),  # the smallest keeps a digit
    ([1.6e-07, 0.5], "Cosine", ["0.0", "0.5"]),  # a column keeps its decimals
    ([1.6e-07, 3e-06], "Cosine", ["1.6e-07", "3e-06"]),  # unless all of it would read 0
    ([-0.022, 34.5], "Mean (pp)", ["0.0", "34.5"]),  # never "-0.0"
    ([np.nan, None, 1.5], "Tau", [DASH, DASH, "1.5"]),
    ([True, False], "Same", ["yes", "no"]),
    (["tfidf", "note text", "mechanism_key"], "Rule", ["TF-IDF", "note text", "Mechanism key"]),
    (["p_find = 0.71", "see simulator_null.yaml"], "Setting",
     ["find probability per round = 0.71", "see simulator_null.yaml"]),  # known names only
])
def test_format_column(values, header, expected):
    assert texts(format_column(values, header)) == expected


def test_numbers_are_flagged_numeric_and_text_is_not():
    cells = format_column([1.5, "0 v 1", "<\u00a010⁻⁴", True, np.nan], "x")
    assert [c.numeric for c in cells] == [True, False, True, False, False]


def test_format_number_rejects_nothing_and_keeps_text():
    assert format_number("already text") == "already text"
    assert format_number(float("inf")) == "∞"
    assert format_number(np.int64(12345)) == "12,345"


def test_index_becomes_labelled_row_columns_without_an_index_name_row():
    df = pd.DataFrame({"extra_pp": [34.47, 1.33, 20.0]},
                      index=pd.MultiIndex.from_tuples([("tfidf", "0 v 1"), ("tfidf", "1 v 5"), ("reference", "0 v 1")],
                                                      names=["rule", "comparison"]))
    t = BookTable(df)
    assert t.stub == 2 and t.header == ["Rule", "Depths", "Extra divergence (pp)"]
    assert [[c.text for c in r] for r in t.rows] == [["TF-IDF", "0 v 1", "34.5"], ["", "1 v 5", "1.3"],
                                                     ["Reference judge", "0 v 1", "20.0"]]


def test_a_plain_range_index_is_dropped_and_columns_name_heads_the_row_labels():
    assert BookTable(pd.DataFrame({"a_b": [1, 2]})).header == ["A b"]
    wide = pd.DataFrame([[1.0]], index=pd.Index(["tfidf"]), columns=pd.Index(["wording_only"], name="kind"))
    assert BookTable(wide).header == ["Kind", "Wording only"]


def test_no_header_of_a_shown_table_has_an_underscore():
    df = pd.DataFrame({"cache_read_input_tokens": [1], "p_find": [0.9], "brand_new_column": [2]},
                      index=pd.Index(["x"], name="index_name"))
    assert not [h for h in BookTable(df).header if "_" in h]


def test_markdown_is_a_book_table_directive_with_caption_and_name():
    t = book_table(pd.DataFrame({"extra_pp": [34.47]}), caption="Extra   divergence\nper rule.", name="tbl-ch02-x",
                   classes=["wide"])
    md = t._repr_markdown_()
    lines = md.splitlines()
    assert lines[:4] == ["```{book-table}", ":name: tbl-ch02-x", ":caption: Extra divergence per rule.", ":class: wide"]
    data = json.loads(lines[5])
    assert data == {"stub": 0, "header": ["Extra divergence (pp)"], "rows": [["34.5"]], "numeric": [[1]]}
    assert "<caption>Extra   divergence" in t._repr_html_() and "class=num" in t._repr_html_()
    assert repr(t).splitlines() == ["Extra   divergence\nper rule.".splitlines()[0], "per rule.",
                                    "Extra divergence (pp)", "                 34.5"]


def test_a_caption_needs_a_name():
    with pytest.raises(ValueError, match="needs a name"):
        book_table(pd.DataFrame({"a": [1]}), caption="x")


def test_backticks_in_cells_lengthen_the_fence():
    md = BookTable(pd.DataFrame({"a": ["```code```"]}))._repr_markdown_()
    assert md.startswith("````{book-table}") and md.rstrip().endswith("\n````")


def test_comparison_tables_keep_their_classes_and_stack_on_phones():
    t = BookTable(compare([("design.matched_pairs", 5192)], llm=False))
    assert t.classes == ["paper-compare", "stack-on-phone"]
    assert [c.text for c in t.rows[0]][1:3] == ["4,863", "5,192"] and "Provenance" in t.header


def test_directive_table_marks_numbers_stubs_and_labels():
    payload = BookTable(pd.DataFrame({"extra_pp": [34.47, 2.0], "note": ["a", "b"]},
                                     index=pd.Index(["tfidf", "reference"], name="rule"))).payload()
    table = build_table(payload, ["paper-compare"])
    html = table.pformat()
    assert "book-table colwidths-auto paper-compare" in html
    assert len(re.findall(r'<colspec colwidth="1" stub="1"', html)) == 1
    entries = list(table.findall(lambda n: n.tagname == "labelled_entry"))
    assert [e["label"] for e in entries[:3]] == ["Rule", "Extra divergence (pp)", "Note"]
    assert [e["classes"] for e in entries[:3]] == [[], ["num"], []]
    header = [e for e in table.findall(lambda n: n.tagname == "entry")]
    assert [e["classes"] for e in header] == [[], ["num"], []]  # an all-number column's header aligns too


def test_directive_rejects_ragged_rows():
    from mechaudit.errors import MechauditError

    with pytest.raises(MechauditError, match="rows do not match"):
        build_table({"stub": 0, "header": ["a", "b"], "rows": [["1"]], "numeric": [[1]]}, [])


def test_a_table_wide_unit_rounds_every_column_by_it():
    df = pd.DataFrame({"reference full": [86.21, 0.0], "reference none": [3.3, 100.0]})
    assert [[c.text for c in r] for r in BookTable(df, unit="%").rows] == [["86", "3.3"], ["0", "100.0"]]
    with pytest.raises(ValueError, match="unit must be"):
        BookTable(df, unit="percent")


def test_greek_letters_keep_their_case_and_float_row_labels_keep_their_digits():
    df = pd.DataFrame({"τ (grid)": [0.79]}, index=pd.Index([0.05], name="loss threshold"))
    t = BookTable(df)
    assert t.header == ["Loss threshold", "τ (grid)"] and t.rows[0][0].text == "0.05"


def test_by_row_rounds_each_quantity_on_its_own():
    df = pd.DataFrame({"with densify": [0.6123, 0.897, 19.2], "first round only": [0.8, 0.9, 25.0]},
                      index=["MAE", "Kish coverage", "% saturated"])
    rows = [[c.text for c in r] for r in BookTable(df, by_row=True).rows]
    assert rows == [["MAE (score points)", "0.61", "0.80"], ["Kish coverage", "0.9", "0.9"],
                    ["% saturated", "19", "25"]]


def test_a_text_arrow_becomes_one_character():
    assert [c.text for c in format_column(["I1 -> R1", "a->b"])] == ["I1 → R1", "a->b"]


# ---------------------------------------------------------------- one declaration per column


def test_a_declared_column_prints_its_unit_and_the_digits_the_prose_glues():
    from dataclasses import dataclass

    from mechaudit.report.facts import fact
    from mechaudit.report.tables import Column, with_columns

    @dataclass(frozen=True)
    class Facts:
        rate: float = fact(digits=3, doc="a rejection rate")
        agreement_pct: float = fact(unit="%", digits=1, doc="agreement")

    df = pd.DataFrame({"rate": [0.027, 0.0371, 0.0], "agreement": [0.554, 0.7952, 1.0], "mean": [-0.02, 0.1, 2.0],
                       "runs": [60.0, 4863.0, 5.0]})
    shown = with_columns(df, {"rate": Column.of(Facts, "rate"), "agreement": Column.of(Facts, "agreement_pct", 100),
                              "mean": Column("pp", 1), "runs": Column("count")})
    t = BookTable(shown)
    assert t.header == ["Rate", "Agreement (%)", "Mean (pp)", "Runs"]
    assert [[c.text for c in r] for r in t.rows] == [["0.027", "55.4", "0.0", "60"], ["0.037", "79.5", "0.1", "4,863"],
                                                     ["0.000", "100.0", "2.0", "5"]]
    assert BookTable(df, columns={"rate": Column(digits=1)}).rows[0][0].text == "0.0"  # declared: no tiny digits
    with pytest.raises(ValueError, match="unit"):
        Column("percent")
    with pytest.raises(ValueError, match="no such column"):
        with_columns(df, {"nope": Column()})
    with pytest.raises(KeyError, match="no fact field"):
        Column.of(Facts, "nope")


def test_a_table_of_nothing_but_not_run_is_one_sentence_and_a_captioned_frame_is_numbered():
    from mechaudit.report.tables import with_caption

    usage = BookTable(pd.DataFrame({"LLM usage": ["no LLM calls (backend 'reference' is offline)"]}))
    assert repr(usage) == "LLM usage: no LLM calls (backend 'reference' is offline)."
    assert usage._repr_markdown_().strip() == repr(usage) and usage._repr_html_().startswith("<p>")
    axis = pd.DataFrame({"status": ["not run: offline backend"]}, index=pd.Index(["judge models"], name="axis"))
    assert repr(BookTable(axis)) == "Judge models: not run (offline backend)."
    prompts = pd.DataFrame({"reversal changed": ["not run"] * 2}, index=pd.Index(["full", "step"], name="prompt"))
    assert repr(BookTable(prompts)) == "Reversal changed (Full, Step): not run."
    mixed = pd.DataFrame({"status": ["not run", "3"]})
    assert BookTable(mixed).sentence is None  # a table with one value stays a table
    captioned = with_caption(axis, "The judge-model axis.", "tbl-x")
    md = BookTable(captioned)._repr_markdown_()
    assert ":name: tbl-x" in md and "{book-table}" in md  # a captioned table is never collapsed


def test_hyphenated_names_stay_whole_and_captions_move_above_the_scroll_container():
    from docutils import nodes

    from mechaudit.sphinxext.table import caption_outside, unbreakable

    parts = unbreakable("TF-IDF v K0-r1, template-built, not -5 or a - b")
    assert [p.astext() for p in parts if isinstance(p, nodes.inline)] == ["TF-IDF", "K0-r1,"]
    assert "".join(p.astext() for p in parts) == "TF-IDF v K0-r1, template-built, not -5 or a - b"
    html = ('<div class="pst-scrollable-table-container">\n<table class="t" id="tbl-x">\n'
            '<caption><span class="caption-number">Table 1.1 </span>A caption.</caption><thead></thead></table></div>')
    moved = caption_outside(html)
    assert moved.startswith('<p class="table-caption"><span class="caption-number">Table 1.1 </span>A caption.</p>')
    assert "<caption>" not in moved and '<table class="t" id="tbl-x">' in moved


def _depths_table() -> pd.DataFrame:
    return pd.DataFrame({"extra_pp": [34.5, 1.25], "note": ["a<b", "x"]},
                        index=pd.Index(["0 v 1", "1 v 5"], name="comparison"))


def test_html_marks_row_labels_numbers_and_escapes_text():
    html = BookTable(_depths_table(), caption="Extra divergence", name="tbl-x")._repr_html_()
    assert html == ('<table class="book-table"><caption>Extra divergence</caption><thead><tr><th>Depths</th>'
                    "<th>Extra divergence (pp)</th><th>Note</th></tr></thead><tbody>"
                    "<tr><th>0 v 1</th><td class=num>34.5</td><td>a&lt;b</td></tr>"
                    "<tr><th>1 v 5</th><td class=num>1.2</td><td>x</td></tr></tbody></table>")


def test_text_form_right_aligns_numbers_and_left_aligns_labels_and_text():
    assert repr(BookTable(_depths_table(), caption="Extra divergence", name="tbl-x")).splitlines() == [
        "Extra divergence", "Depths  Extra divergence (pp)  Note", "0 v 1                    34.5  a<b",
        "1 v 5                     1.2  x"]


def test_an_unnamed_series_is_a_value_column_and_by_row_keeps_the_tables_unit():
    assert BookTable(pd.Series([1.5, 2.25], index=["a", "b"])).header == ["", "Value"]
    frame = pd.DataFrame({"x": [0.123, 12.5], "y": [3, 4]}, index=["r1", "r2"])
    assert [[c.text for c in row] for row in BookTable(frame, by_row=True, unit="pp").rows] == [
        ["R1", "0.1", "3.0"], ["R2", "12.5", "4.0"]]


def test_float_column_names_keep_their_digits():
    assert BookTable(pd.DataFrame({123456.7: [1], 0.125: [2]})).header == ["123,456.7", "0.125"]


def test_the_provenance_legend_follows_a_captioned_table_only():
    frame = pd.DataFrame({"value": [1.0], "provenance": ["measured"]})
    captioned = BookTable(frame, caption="Cap", name="tbl-p")
    assert captioned.legend and not BookTable(frame).legend
    assert ":caption: Cap Provenance: how each number relates to the paper's" in captioned._repr_markdown_()
    with pytest.raises(ValueError, match=r"^columns: no such column \['nope'\]$"):
        BookTable(frame, columns={"nope": Column(unit="%")})


def test_declared_counts_are_whole_and_a_p_of_one_is_a_p_value():
    assert [c.text for c in format_column([1234.6, 10.2], column=Column(unit="count"))] == ["1,235", "10"]
    assert [c.text for c in format_column([3.04, 1.5])] == ["3.04", "1.50"]  # three significant digits from 1 up
    assert format_number(1.0, kind="p") == format_number(1, kind="p") == "1"


def test_declared_digits_keep_a_tiny_value_at_them_and_undeclared_columns_give_it_two_digits():
    assert texts(format_column([0.001, 0.0], column=Column(digits=2))) == ["0.00", "0.00"]
    assert texts(format_column([1e-7, 3e-6], column=Column())) == ["1e-07", "3e-06"]
    assert texts(format_column([2.5, 3.25], column=Column(unit="count"))) == ["2", "3"]  # whole, as the prose glues


def test_text_in_a_scaled_or_declared_column_is_kept_as_written():
    assert texts(format_column(["not run", 0.125], column=Column(unit="%", scale=100))) == ["not run", "12"]
    assert texts(format_column(["n/a", 3.14159], column=Column(digits=2))) == ["n/a", "3.14"]


def test_format_number_defaults_to_two_decimals_and_a_p_kind_only_for_probabilities():
    assert format_number(3.14159) == "3.14" and format_number(-np.inf) == "-∞"
    assert format_number(1.5, kind="p") == "1.50" and format_number(0.5, kind="p") == "0.5"


def test_column_levels_are_joined_into_one_header_without_empty_parts():
    df = pd.DataFrame([[0.7, 0.5]], columns=pd.MultiIndex.from_tuples([("tfidf", "mean"), ("tfidf", "")]))
    assert BookTable(df).header == ["TF-IDF, Mean", "TF-IDF"]


def test_a_sentence_of_nothing_joins_different_reasons_and_leaves_out_generic_row_labels():
    from mechaudit.report.tables import nothing_sentence

    axis = pd.DataFrame({"judge models": ["not run: offline backend", "no LLM calls (replay)",
                                          "not run: offline backend"]})
    assert nothing_sentence(axis) == "Judge models: not run (offline backend); no LLM calls (replay)."
    assert nothing_sentence(pd.DataFrame({"x": ["not run"] * 2}, index=["value", "full"])) == "X (Full): not run."


def test_markdown_of_a_table_without_classes_has_no_class_option():
    assert BookTable(pd.DataFrame({"a": [1.5]}))._repr_markdown_() == (
        '```{book-table}\n\n{"stub": 0, "header": ["A"], "rows": [["1.5"]], "numeric": [[1]]}\n```\n')


def test_a_caption_without_a_name_or_a_name_without_a_caption_is_refused():
    from mechaudit.report.tables import with_caption

    for caption, name in (("A caption.", ""), ("", "tbl-x")):
        with pytest.raises(ValueError, match="needs a caption and a name"):
            with_caption(pd.DataFrame({"a": [1]}), caption, name)


def test_a_table_rounded_by_row_declares_no_columns():
    with pytest.raises(ValueError, match="^columns: a table rounded by row declares no columns$"):
        BookTable(pd.DataFrame({"a": [1.0]}), by_row=True, columns={"a": Column()})


def test_use_book_tables_shows_frames_and_series_as_book_tables(monkeypatch):
    import IPython

    from mechaudit.report.tables import use_book_tables

    class Formatter:
        def __init__(self):
            self.shown = {}

        def for_type(self, kind, fn):
            self.shown[kind] = fn

    class Shell:
        class display_formatter:  # noqa: N801 - IPython's attribute name
            formatters = {"text/markdown": Formatter(), "text/html": Formatter()}

    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    use_book_tables()  # outside IPython: nothing to do
    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell)
    use_book_tables()
    markdown, page = (Shell.display_formatter.formatters[k].shown for k in ("text/markdown", "text/html"))
    assert set(markdown) == set(page) == {pd.DataFrame, pd.Series}
    df = pd.DataFrame({"a": [1.5]})
    assert markdown[pd.DataFrame](df) == BookTable(df)._repr_markdown_()
    assert page[pd.Series](df["a"]) == BookTable(df["a"])._repr_html_()
