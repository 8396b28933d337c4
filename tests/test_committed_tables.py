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
from mechaudit.paths import NOTEBOOKS_DIR, PARAMS_DIR
from mechaudit.workflow import build_rules, instance_models, replication_seed
from mechaudit.workflow import robustness as robustness_module
from mechaudit.workflow import validity as validity_module
from mechaudit.workflow.calibrate import load_calibration
from mechaudit.workflow.robustness import grid, truth_grid


def _refuse(*args, **kwargs):
    raise AssertionError("a committed table is stale: run `mechaudit calibrate` and commit data/computed/")


@pytest.fixture(scope="module")
def p02b():
    return notebook_parameters(NOTEBOOKS_DIR / "02b_validity.py")


@pytest.fixture(scope="module")
def p02c():
    return notebook_parameters(NOTEBOOKS_DIR / "02c_robustness.py")


def _replications(p, setup):
    return ch02b.replications(setup, n_replications=p["n_replications"], n_null_replications=p["n_null_replications"],
                              n_text_replications=p["n_text_replications"], n_boot=p["n_boot"],
                              tfidf_threshold=p["tfidf_threshold"], seed=p["seed"])


def test_validity_replications_are_committed_and_re_evaluate(p02b, monkeypatch):
    setup = ch02b.validity_setup(design_file=p02b["design_file"], simulator_file=p02b["simulator_file"],
                                 null_simulator_file=p02b["null_simulator_file"], truth_runs_per_depth=3)
    monkeypatch.setattr(validity_module, "replicate", _refuse)
    monkeypatch.setattr("mechaudit.workflow.replicate", _refuse)
    runs = _replications(p02b, setup)
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
    s = ch02c.setup(None, p["design_file"], p["simulator_file"])
    spec = load_calibration(PARAMS_DIR / p["calibration_file"])
    if monkeypatch is not None:
        monkeypatch.setattr(robustness_module, "truth_grid", _refuse)
    t = ch02c.chapter_truths(s, spec, robust_axes=p["robust_axes"], alternatives_axes=p["alternatives_axes"],
                             pick_quantiles=p["pick_quantiles"], runs_per_depth=p["truth_runs_per_depth"],
                             n_seeds=p["truth_seeds"], seed=p["seed"], ratio=p["diminishing_ratio"], z=p["z"])
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
