"""The paper's reported numbers and the "paper vs this run" table."""

from __future__ import annotations

import pytest

from mechaudit import paper
from mechaudit.paths import REPO_ROOT


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


def test_compare_table():
    table = paper.compare([
        ("critique_depth.extra_divergence_pp.k0_vs_k1", 12.34567, "simulator"),
        ("rubric.first_step_swapped_pct_different.step", None),
    ])
    assert list(table.columns) == ["quantity", "unit", "paper", "this run", "paper section", "note"]
    assert table.loc[0, "paper"] == 34.5 and table.loc[0, "this run"] == 12.346
    assert table.loc[0, "note"] == "simulator"
    assert table.loc[1, "this run"] == "not run"


def test_unknown_key_names_close_keys():
    with pytest.raises(KeyError, match="critique_depth"):
        paper.reported("critique_depth.no_such_number")


def test_bad_row_shape():
    with pytest.raises(ValueError, match="expected"):
        paper.compare([("design.runs", 60, "a", "b")])
