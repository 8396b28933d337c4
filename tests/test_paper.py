"""The paper's reported numbers and the "paper vs this run" table."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mechaudit import paper
from mechaudit.errors import MechauditError
from mechaudit.paths import REPO_ROOT
from mechaudit.report import comparison


def test_headline_numbers():
    assert paper.reported("critique_depth.extra_divergence_pp.k0_vs_k1") == 34.5
    assert paper.reported("critique_depth.extra_divergence_pp.k1_vs_k5") == 1.3
    assert paper.reported("perturbations.first_step_swapped_pct_different.llm") == 83
    assert paper.reported("rubric.first_step_swapped_pct_different.none") == 38
    assert paper.reported("design.matched_pairs") == 4863
    shares = [paper.reported(f"engagement.{k}_pct") for k in ("conceded", "answered", "partial", "dropped")]
    assert sum(shares) == 100


def test_every_entry_names_a_section_and_an_existing_chapter():
    for key, meta in paper.entries().items():
        assert meta.get("section"), key
        assert (REPO_ROOT / "notebooks" / f"{meta['chapter']}.py").exists(), f"{key}: no chapter {meta['chapter']}"


def test_compare_table_is_narrow_labelled_text():
    table = comparison.compare([
        ("critique_depth.extra_divergence_pp.k0_vs_k1", 12.34567, "simulator"),
        ("rubric.first_step_swapped_pct_different.step", None),
        ("design.runs", 60.0),
        ("sensitivity.kappa_low", np.float64(0.61234)),
        ("perturbations.first_step_swapped_pct_different.tfidf", 0.0),
        ("design.depths", [0, 1, 5]),
    ], llm=False)
    assert list(table.columns) == ["paper", "this run", "provenance", "verdict", "source", "note"]
    assert table.index[0] == "Extra divergence, 0 v 1 rounds (pp)"
    row = table.loc["Extra divergence, 0 v 1 rounds (pp)"]
    assert (row["paper"], row["this run"], row["source"], row["note"]) == ("34.5", "12.3", "§5.1, Table 1", "simulator")
    assert row["provenance"] == "fitted to the paper"
    assert table.loc["First step swapped, called different: step-by-step rubric (%)", "this run"] == "not run"
    assert table.loc["Workflow runs", "this run"] == "60"  # a whole number without ".0"
    assert table.loc["Cohen's κ between rules, lowest", "this run"] == "0.61"  # the paper's two decimals
    assert table.loc["First step swapped, called different: TF-IDF (%)", "this run"] == "0.0"  # a measured %
    assert table.loc["Critique depths (rounds)", "paper"] == "0, 1, 5"
    assert all(isinstance(v, str) for v in table.to_numpy().ravel())


def test_compare_shows_long_text_in_full_and_drops_an_empty_note():
    note = "offline; reference judge (not an LLM): 100.0, a note longer than fifty characters"
    table = comparison.compare([("rubric.first_step_swapped_pct_different.step", None, note)], llm=False)
    assert note in table._repr_html_() and "paper-compare" in table._repr_html_()
    assert "step-by-step rubric (%)" in repr(table)
    assert "note" not in comparison.compare([("design.runs", 60)], llm=False).columns
    assert isinstance(table.drop(columns="note"), comparison.ComparisonTable)


def test_compare_formats_p_values():
    smallest = 1 / 126**4
    table = comparison.compare([
        ("critique_depth.p_value_bound.k0_vs_k1", comparison.format_p(smallest, smallest=smallest)),
        ("critique_depth.p_value_bound.k0_vs_k5", "4e-09"),
    ], llm=False)
    assert list(table["paper"]) == ["<\u00a010⁻⁴", "<\u00a010⁻⁴"]
    assert list(table["this run"]) == ["<\u00a010⁻⁸, the smallest possible", "<\u00a010⁻⁸"]


@pytest.mark.parametrize(("p", "smallest", "text"), [
    (0.5, None, "0.5"), (0.032, None, "0.032"), (0.001, None, "0.001"), (0.00099, None, "<\u00a010⁻³"),
    (3.9e-9, None, "<\u00a010⁻⁸"), (0, None, "0"), (1, None, "1"),
    (1 / 1024, 1 / 1024, "<\u00a010⁻³, the smallest possible"), (1 / 252, 1 / 252, "0.004, the smallest possible"),
    (0.02, 1 / 126**4, "0.02"),
])
def test_format_p(p, smallest, text):
    assert comparison.format_p(p, smallest=smallest) == text


@pytest.mark.parametrize("bad", [-0.1, 1.5, "0.3", True, None])
def test_format_p_rejects_non_probabilities(bad):
    with pytest.raises(MechauditError, match="p-value"):
        comparison.format_p(bad)


def test_every_entry_has_a_label_with_its_unit():
    for key, meta in paper.entries().items():
        assert paper.label(key) == meta["label"]
        if meta["unit"] in ("%", "pp"):
            assert meta["label"].endswith(f"({meta['unit']})"), key
    labels = [meta["label"] for meta in paper.entries().values()]
    assert len(labels) == len(set(labels))  # one label, one number


def test_missing_label_is_an_error_naming_the_key(tmp_path):
    path = tmp_path / "reported.yaml"
    path.write_text('source: x\na:\n  ok: {label: "Fine", value: 1, unit: count}\n  bare: {value: 2, unit: count}\n')
    with pytest.raises(MechauditError, match="a.bare.*label"):
        paper.entries(path)


def test_unknown_key_names_close_keys():
    with pytest.raises(KeyError, match="critique_depth"):
        paper.reported("critique_depth.no_such_number")


def test_bad_row_shape():
    with pytest.raises(ValueError, match="expected"):
        comparison.compare([("design.runs", 60, "a", "b")], llm=False)


def test_agreement_with_the_paper_is_within_the_units_tolerance_and_decides_the_llm_verdict():
    key = "critique_depth.extra_divergence_pp.k0_vs_k1"  # the paper: 34.5 pp
    assert comparison.agrees(key, 34.5) is True and comparison.agrees(key, 20.0) is False
    assert comparison.agrees(key, 39.0) is True  # 4.5 pp off: within a pp quantity's 5 pp (not 10 %, 3.45)
    assert comparison.agrees(key, "not a number") is None and comparison.agrees("book.anything", 1.0) is None
    verdicts = [comparison.compare([(key, ours)], llm=True)["verdict"].iloc[0] for ours in (34.5, 20.0)]
    assert verdicts == ["reproduced", "qualified"]


def test_a_comparison_reads_the_reported_numbers_from_the_file_it_is_given(tmp_path):
    path = tmp_path / "reported.yaml"
    path.write_text("source: test\nx:\n  y: {value: 2.5, label: 'A made-up number', section: 'S1', chapter: c}\n")
    table = comparison.compare([("x.y", 2.5)], llm=False, path=path)
    assert list(table.index) == ["A made-up number"] and table["paper"].tolist() == ["2.5"]


def test_a_value_too_small_for_the_papers_decimals_keeps_two_digits():
    assert comparison._fmt(0.004, 1.25) == "0.004" and comparison._fmt(1.004, 1.25) == "1"
    with pytest.raises(MechauditError, match=r"^field 'p': a p-value is a number in \[0, 1\], not 1\.5$"):
        comparison.format_p(1.5)


def test_compare_paper_true_on_other_data_names_the_folder(tmp_path):
    import re

    with pytest.raises(MechauditError, match=r"^field 'compare_paper': compare_paper is true, but the data folder "
                                             rf"{re.escape(str(tmp_path))} is not the shipped benchmark .*shipped "
                                             "data only; leave"):
        comparison.compare_paper_default(True, tmp_path)
    assert comparison.compare_paper_default(None, None) is True
    assert comparison.compare_paper_default(None, tmp_path) is False


def test_an_unknown_key_lists_at_most_eight_keys_under_its_head_in_file_order(tmp_path):
    path = tmp_path / "reported.yaml"
    rows = "".join(f"  n{i}: {{value: {i}, label: 'Number {i}'}}\n" for i in range(10))
    path.write_text(f"source: test\nx:\n{rows}y:\n  z: {{value: 1, label: 'Other'}}\n")
    with pytest.raises(KeyError) as err:
        paper.entry("x.missing", path)
    near = [f"x.n{i}" for i in range(8)]
    assert err.value.args[0] == f"'x.missing' is not in reported.yaml; keys under 'x': {near}"


def test_a_true_or_text_value_is_shown_as_text_not_as_a_number():
    assert comparison._fmt(True, 1.0) == "True" and comparison._fmt("12 of 60", 1.0) == "12 of 60"


def test_a_value_exactly_at_the_tolerance_agrees():
    key = "critique_depth.extra_divergence_pp.k0_vs_k1"  # the paper: 34.5 pp, a pp quantity's tolerance 5 pp
    assert comparison.agrees(key, 39.5) is True and comparison.agrees(key, 29.5) is True
    assert comparison.agrees(key, 39.6) is False


def test_an_entry_without_a_section_has_an_empty_source(tmp_path):
    path = tmp_path / "reported.yaml"
    path.write_text("source: test\nx:\n  y: {value: 2.5, label: 'A made-up number', chapter: c}\n")
    assert comparison.compare([("x.y", 2.5)], llm=False, path=path)["source"].tolist() == [""]


def test_compare_paper_true_on_the_default_folder_names_that_folder(tmp_path, monkeypatch):
    from mechaudit import paths

    monkeypatch.setattr(paths, "DATA_DIR", tmp_path / "mine")
    with pytest.raises(MechauditError, match=rf"the data folder {re.escape(str(tmp_path / 'mine'))} is not"):
        comparison.compare_paper_default(True, None)


def test_a_p_of_zero_is_zero_even_when_the_smallest_possible_is_zero():
    assert comparison.format_p(0, smallest=0.0) == "0"
    assert comparison.format_p(1 / 126**4, smallest=1 / 126**4) == "<\u00a010⁻⁸, the smallest possible"


def test_a_paper_bound_is_a_power_of_ten_only_when_it_is_one():
    assert comparison._power_of_ten(1e-4) == "10⁻⁴" and comparison._power_of_ten(0.003) == "0.003"
    assert comparison._power_of_ten(0.0) == "0"
