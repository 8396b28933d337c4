"""Chapter tables: % different per kind, counts, sweeps, within-instance pairs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from rule_hypotheses import hyp

from mechaudit.rules import ReferenceJudge
from mechaudit.rules.audit import (
    decisions_table,
    percent_different,
    suite_counts,
    sweep_percent_different,
    within_instance_pairs,
)


def test_percent_different_skips_missing():
    dec = pd.DataFrame({
        "x": [True, False, False, True],
        "llm": pd.array([True, None, False, False], dtype="boolean"),
    })
    table = percent_different(dec, kinds=["k1", "k1", "k2", "k2"], order=["k2", "k1"])
    assert list(table.index) == ["k2", "k1"]
    assert table.loc["k1", "x"] == 50.0 and table.loc["k2", "x"] == 50.0
    assert table.loc["k1", "llm"] == 0.0  # the undecided pair is not in the denominator
    assert table.loc["k2", "llm"] == 100.0
    with pytest.raises(ValueError, match="kinds"):
        percent_different(dec, kinds=["k1"])


def test_counts_and_sweep():
    counts = suite_counts([True, False, True], kinds=["a", "a", "b"], order=["a", "b", "c"])
    assert counts.loc["a"].tolist() == [2, 1, 1] and counts.loc["c"].tolist() == [0, 0, 0]
    sim = np.array([0.1, 0.5, 0.9, 0.3])
    sweep = sweep_percent_different(sim, [0.2, 0.6], kinds=["a", "a", "b", "b"])
    got = sweep.set_index(["threshold", "kind"])["pct_different"]
    assert got[(0.2, "a")] == 50.0 and got[(0.6, "a")] == 100.0 and got[(0.6, "b")] == 50.0
    with pytest.raises(ValueError, match="kinds"):
        sweep_percent_different(sim, [0.5], kinds=["a"])
    from mechaudit import deprecation

    deprecation._warned.clear()  # it warns once per process
    with pytest.warns(FutureWarning, match="kinds=kinds"):  # kinds are keyword-only; positional is deprecated
        old = sweep_percent_different(sim, [0.2, 0.6], ["a", "a", "b", "b"])
    pd.testing.assert_frame_equal(old, sweep)
    with pytest.raises(TypeError, match="thresholds must be numbers"):  # kinds passed as thresholds
        sweep_percent_different(sim, ["a", "a", "b", "b"], kinds=[0.2, 0.6])


def test_decisions_and_within_instance_pairs():
    hs = [hyp("a", ["KRAS", "MEK", "PROLIF"]), hyp("b", ["EGFR", "MEK", "PROLIF"]),
          hyp("c", ["KRAS", "MEK", "PROLIF"], instance="I2"), hyp("d", ["KRAS", "MEK", "PROLIF"])]
    pairs = within_instance_pairs(hs)
    assert [(a.id, b.id) for a, b in pairs] == [("a", "b"), ("a", "d"), ("b", "d")]
    dec = decisions_table(pairs, {"full": ReferenceJudge("full"), "none": ReferenceJudge("none")})
    assert dec["full"].tolist() == [False, True, False] and dec["none"].tolist() == [True, True, True]


def test_paper_percent_different_pools_meaning_preserving():
    from mechaudit.paper import reported
    from mechaudit.rules.audit import paper_percent_different

    table = paper_percent_different({"mine": "llm", "t": "tfidf"})
    assert list(table.index) == ["wording_only", "wording_chain", "first_step_swapped", "middle_step_swapped"]
    assert (
        table.loc["first_step_swapped", "mine"] == reported("perturbations.first_step_swapped_pct_different.llm") == 83
    )
    assert table.loc["middle_step_swapped", "mine"] == 13
    assert table.loc["wording_chain", "t"] == reported("perturbations.meaning_preserving_pct_different.tfidf")


def test_subsample_pairs_is_seeded_ordered_and_bounded():
    from mechaudit.rules.audit import subsample_pairs

    pairs = [(i, i + 1) for i in range(50)]
    a, b = subsample_pairs(pairs, 10, seed=3), subsample_pairs(pairs, 10, seed=3)
    assert a == b and len(a) == 10 and a == sorted(a) and set(a) <= set(pairs)
    assert subsample_pairs(pairs, 10, seed=4) != a
    assert subsample_pairs(pairs, 500, seed=0) == pairs


def test_separation_table_matches_a_brute_force_count_and_the_exact_interval():
    from mechaudit.rules.audit import separation_table

    rng = np.random.default_rng(3)
    preserving = np.array([True] * 7 + [False] * 5)
    sim = np.round(rng.uniform(0.2, 0.9, 12), 2)
    sim[0] = sim[7]  # a tie between a rewording and a swap counts half
    table = separation_table({"r": sim, "sep": np.where(preserving, 0.9, 0.4)}, preserving)
    wins = [1.0 if a > b else 0.5 if a == b else 0.0 for a in sim[preserving] for b in sim[~preserving]]
    assert table.loc["r", "rewording more similar (%)"] == pytest.approx(round(100 * np.mean(wins), 1))
    assert table.loc["r", "lowest, meaning-preserving"] == sim[preserving].min()
    assert table.loc["r", "highest, swapped"] == sim[~preserving].max()
    assert table.loc["r", "separating thresholds"] == "none"
    assert table.loc["sep", "separating thresholds"] == "(0.400, 0.900]"
    assert table.loc["sep", "rewording more similar (%)"] == 100.0


def test_stack_suites_puts_the_suite_label_outermost():
    from mechaudit.rules.audit import stack_suites

    a = pd.DataFrame({"x": [1, 2]}, index=pd.Index(["k1", "k2"], name="kind"))
    out = stack_suites({"template": a, "reworded": a * 10}, {"template": "T"})
    assert out.index.names == ["suite", "kind"]
    assert out.loc[("T", "k2"), "x"] == 2 and out.loc[("reworded", "k1"), "x"] == 10


def test_a_judge_not_run_is_a_column_of_missing_decisions():
    from mechaudit.rules.audit import not_run

    column = not_run(3)
    assert column.dtype == "boolean" and len(column) == 3 and column.isna().all()


def test_a_sweep_without_kinds_is_a_type_error_not_an_old_call():
    with pytest.raises(TypeError, match="kinds"):
        sweep_percent_different(np.array([0.1, 0.5]), [0.2])


def test_separation_table_reads_cosines_given_as_text():
    from mechaudit.rules.audit import separation_table

    preserving = [True, False, False]
    text = separation_table({"r": ["0.9", "0.4", "0.5"]}, preserving)
    pd.testing.assert_frame_equal(text, separation_table({"r": [0.9, 0.4, 0.5]}, preserving))
    assert text.loc["r"].tolist() == ["(0.500, 0.900]", 0.9, 0.5, 100.0]
