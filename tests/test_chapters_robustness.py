"""Chapter 02c's steps (``mechaudit.chapters.robustness``): grid look-ups and readable summaries."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from mechaudit.chapters import robustness as ch
from mechaudit.errors import MechauditError

AXES = ["p_find", "weak_scale"]
FACTORS = {"p_find": 0.9, "weak_scale": 1.0}


def _truths() -> pd.DataFrame:
    """A 3 x 2 grid: fails everywhere at p_find 0.1, holds at 0.9 only with weak_scale 1."""
    rows = [(0.1, 0.5, "fails", "fails", 1.0), (0.1, 1.0, "fails", "unclear", 2.0),
            (0.5, 0.5, "fails", "fails", 6.0), (0.5, 1.0, "unclear", "fails", 5.0),
            (0.9, 0.5, "unclear", "unclear", 0.5), (0.9, 1.0, "holds", "unclear", 0.8)]
    return pd.DataFrame([{"p_find": p, "weak_scale": w, "raw": r, "normalised": n, "truth_1v5_pp": t}
                         for p, w, r, n, t in rows])


def test_conclusion_counts_are_ints_per_criterion():
    counts = ch.conclusion_counts(_truths())
    assert counts.index.tolist() == ["raw", "ceiling-aware"] and counts.index.name == "criterion"
    assert list(counts.columns) == ["holds", "unclear", "fails"]
    assert counts.loc["raw"].tolist() == [1, 2, 3] and counts.loc["ceiling-aware"].tolist() == [0, 3, 3]
    assert counts.dtypes.map(lambda t: t.kind == "i").all()


def test_grid_lookups():
    truths = _truths()
    assert ch.grid_cell(truths, FACTORS, AXES).truth_1v5_pp == 0.8
    assert ch.grid_cell(truths, FACTORS, AXES, p_find=0.5).raw == "unclear"
    assert ch.grid_cell(truths, FACTORS, AXES, p_find=0.3) is None
    assert ch.fail_pfind_max(truths) == 0.1 and ch.hold_pfind_min(truths) == 0.9
    assert ch.peak_along(truths, FACTORS, AXES).p_find == 0.5  # weak_scale 1: 2.0, 5.0, 0.8
    assert math.isnan(ch.hold_pfind_min(truths.assign(raw="fails")))


def test_max_change_and_bias_summary():
    alt = pd.DataFrame({"p_find": [0.3, 0.3, 0.9, 0.9], "a": [1.0, 1.5, 4.0, 4.1], "b": [0.0, 0.2, 9.0, 9.0]})
    assert ch.max_change_pp(alt, "p_find", ["a", "b"]) == pytest.approx(0.5)
    bias = pd.DataFrame({"rule": ["tfidf"] * 4 + ["mechanism_key"], "comparison": ["0 v 1", "0 v 1", "1 v 5", "0 v 5",
                                                                                   "0 v 1"],
                         "direction": ["under", "unbiased", "over", "under", "under"],
                         "bias_pp": [-10.0, -0.5, 1.5, -20.0, -9.0], "truth_pp": [30.0, 2.0, 1.0, 40.0, 30.0]})
    out = ch.bias_summary(bias, "tfidf")
    assert out["0v1"] == {"under": 1, "over": 0, "bias_min": -10.0, "bias_max": -0.5, "other_truth_max": 2.0}
    assert out["1v5"]["over"] == 1 and out["0v5"]["other_truth_max"] is None


def _power() -> pd.DataFrame:
    rows = [(2.0, 2.1, 4, 5, 0.3, 0.03), (2.0, 2.1, 4, 10, 0.9, 0.02), (2.0, 2.1, 8, 5, 0.6, 0.03)]
    designs = pd.DataFrame([{"role": "design", "target_pp": t, "truth_pp": tr, "n_instances": k, "runs_per_depth": r,
                             "power": p, "power_se": se} for t, tr, k, r, p, se in rows])
    return pd.concat([designs, designs.assign(role="ladder")], ignore_index=True)


def test_power_tables():
    table = ch.design_powers(_power())
    assert table.index.names == ["true 1 v 5 (pp)", "design"]
    assert table.loc[(2.1, "4 x 10"), "power"] == 0.9 and len(table) == 3
    assert ch.runs_vs_instances(_power(), 2.0) == "more runs helped more"
    assert ch.runs_vs_instances(_power(), 5.0) == "n/a"
    settings = [SimpleNamespace(target_pp=2.0, factors={"p_find": 0.7104}, truth_pp=2.015, truth_se_pp=0.134)]
    st = ch.settings_table(settings)
    assert st.loc[2.0, "setting"] == "p_find = 0.71" and st.loc[2.0, "true 1 v 5 (pp)"] == 2.02


def test_needed_table_writes_runs_as_ints_or_text():
    needed = pd.DataFrame({"target_pp": [2.0, 5.0], "truth_pp": [2.04, 5.3], "n_instances": [4, 4],
                           "runs_needed": [10.0, float("nan")], "power_there": [0.88, float("nan")],
                           "largest_tried": [10, 20]})
    table = ch.needed_table(needed)
    assert table["runs per depth needed"].tolist() == [10, "more than 20"]
    assert table.index.tolist() == [2.0, 5.3]


def test_setup_and_defaults():
    s = ch.setup()
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


def test_power_settings_leave_out_unbracketed_targets(monkeypatch, capsys):
    def fake(bench, instances, base, target_pp, **kwargs):
        if target_pp > 5:
            raise ValueError(f"target {target_pp} pp not bracketed: p_find=0.15 gives 13.48 pp")
        return SimpleNamespace(target_pp=target_pp)

    monkeypatch.setattr(ch, "find_setting", fake)
    targets = [{"target_pp": t, "factor": "p_find", "bracket": [0.3, 0.9], "fixed": {}} for t in (2.0, 10.0)]
    out = ch.power_settings(None, [], None, targets, runs_per_depth=1, check_runs_per_depth=1, seed=0)
    assert [s.target_pp for s in out] == [2.0]
    assert "target 10.0 pp not bracketed" in capsys.readouterr().out
    with pytest.raises(MechauditError, match="no power target"):
        ch.power_settings(None, [], None, targets[1:], runs_per_depth=1, check_runs_per_depth=1, seed=0)
