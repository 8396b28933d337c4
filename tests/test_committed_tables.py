"""The expensive fixed computations committed under data/computed/ (``mechaudit calibrate``) are
current: the chapters at their default parameters read them without simulating anything, and rows
re-evaluated here equal the committed ones to the last digit. (The calibration scan is re-checked in
test_calibrate.py.)"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechaudit.book import ch02b_validity as ch02b
from mechaudit.book import ch02c_robustness as ch02c
from mechaudit.book.params import notebook_parameters
from mechaudit.book.settings import RobustnessSettings, ValiditySettings
from mechaudit.paths import NOTEBOOKS_DIR
from mechaudit.workflow import build_rules, instance_models, replication_seed
from mechaudit.workflow import robustness as robustness_module
from mechaudit.workflow import validity as validity_module
from mechaudit.workflow.calibrate import calibration_setup
from mechaudit.workflow.robustness import grid, truth_grid


def _refuse(*args, **kwargs):
    raise AssertionError("a committed table is stale: run `mechaudit calibrate` and commit data/computed/")


@pytest.fixture(scope="module")
def p02b():
    return notebook_parameters(NOTEBOOKS_DIR / "02b_validity.py")


@pytest.fixture(scope="module")
def p02c():
    return notebook_parameters(NOTEBOOKS_DIR / "02c_robustness.py")


def test_validity_replications_are_committed_and_re_evaluate(p02b, monkeypatch):
    setup = ch02b.validity_setup(ValiditySettings(truth_runs_per_depth=3))
    monkeypatch.setattr(validity_module, "replicate", _refuse)
    monkeypatch.setattr("mechaudit.workflow.replicate", _refuse)
    runs = ch02b.replications(setup, ValiditySettings(n_jobs=1, parallel_backend=None))
    monkeypatch.undo()
    assert set(runs.sources.values()) == {"committed"}
    assert runs.default.rep.nunique() == p02b["n_replications"]
    assert runs.null.rep.nunique() == p02b["n_null_replications"]
    # the last fast-rule replication of the default simulator, simulated again (bootstrap included)
    rep, seed = p02b["n_replications"] - 1, p02b["seed"] + 1
    again = validity_module._replicate_one(setup.bench, setup.design, setup.default, build_rules(list(ch02b.FAST)),
                                           rep, replication_seed(seed, rep),
                                           instance_models(setup.bench, setup.default.evidence_weight),
                                           0.95, p02b["n_boot"])
    committed = runs.default[(runs.default.rep == rep) & runs.default.rule.isin(ch02b.FAST)]
    columns = ["rule", "comparison", "extra_pp", "ci_low_pp", "ci_high_pp", "p_value"]
    pd.testing.assert_frame_equal(committed[columns].reset_index(drop=True), again[columns].reset_index(drop=True),
                                  check_exact=False, rtol=0, atol=1e-9)


def _truths(p, monkeypatch=None):
    s = calibration_setup(None, p["design_file"], p["simulator_file"], p["calibration_file"])
    if monkeypatch is not None:
        monkeypatch.setattr(robustness_module, "truth_grid", _refuse)
    t = ch02c.chapter_truths(s, RobustnessSettings(n_jobs=1, parallel_backend=None))
    return s, t


def test_robustness_tables_are_committed_and_re_evaluate(p02c, monkeypatch):
    s, t = _truths(p02c, monkeypatch)
    monkeypatch.undo()
    assert set(t.sources.values()) == {"committed"}
    assert len(t.map) == np.prod([len(v) for v in p02c["robust_axes"].values()])
    assert t.map.filter(like="se_").to_numpy().max() <= 0.3  # a tenth of the 3-pp tolerance
    # the picks' paper-rate truths are the map's own rows (same seeds, same settings)
    axes = list(p02c["robust_axes"])
    merged = t.pick_truths["paper_rates"].merge(t.map, on=axes, suffixes=("", "_map"))
    assert len(merged) == len(t.picks)
    np.testing.assert_allclose(merged.truth_1v5_pp, merged.truth_1v5_pp_map, rtol=0, atol=1e-12)
    # one point of the map, simulated again
    point = t.picks[axes].iloc[[-1]].reset_index(drop=True)
    again = truth_grid(s.bench, s.design, s.base, point, runs_per_depth=p02c["truth_runs_per_depth"],
                       seed=p02c["seed"], n_seeds=p02c["truth_seeds"])
    row = t.map.merge(point, on=axes)
    for column in again.columns:
        assert row[column].iloc[0] == pytest.approx(again[column].iloc[0], abs=1e-9), column
    assert len(t.alternatives) == len(grid(p02c["alternatives_axes"]))
