"""Chapter 02b's tables and verdicts (``mechaudit.book.ch02b_validity``) on small hand-made summaries."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mechaudit.backends import Backend
from mechaudit.book import ch02b_validity as validity
from mechaudit.book.chapter import simulation_only_note


def _summary(rule: str, rates: list[float], n: int = 300) -> pd.DataFrame:
    comps = ["0 v 1", "0 v 5", "1 v 5"][: len(rates)]
    return pd.DataFrame({"rule": rule, "comparison": comps, "n_reps": float(n), "truth_pp": [30.0] * len(rates),
                         "mean_pp": [31.0] * len(rates), "bias_pp": [1.0, -2.0, 0.5][: len(rates)],
                         "bias_se_pp": [0.5, 0.5, 0.5][: len(rates)], "rmse_pp": 3.0, "rejection_rate": rates,
                         "rejection_se": [validity.mc_se(r, n) for r in rates]})


def test_views_have_a_meaningful_index_human_headers_and_integer_counts():
    bias = validity.bias_view(_summary("mechanism_key", [0.9, 0.95]))
    assert bias.index.names == ["rule", "comparison"]
    assert list(bias.columns) == ["replications", "truth (pp)", "bias (pp)", "bias SE (pp)", "RMSE (pp)", "power"]
    assert bias["replications"].dtype.kind == "i" and bias["replications"].iloc[0] == 300
    size = validity.size_view(_summary("mechanism_key", [0.05]))
    assert list(size.columns) == ["replications", "mean (pp)", "rejection rate", "MC SE"]


def test_max_bias_z_is_the_largest_bias_in_standard_errors():
    assert validity.max_bias_z(_summary("mechanism_key", [0.9, 0.9, 0.9])) == pytest.approx(4.0)
    both = pd.concat([_summary("mechanism_key", [0.9]), _summary("paper_rates", [0.9, 0.9])])
    assert validity.max_bias_z(both, ["mechanism_key", "paper_rates"]) == pytest.approx(4.0)
    assert validity.max_bias_z(both, "mechanism_key") == pytest.approx(2.0)


def test_coverage_rates_and_tolerance_readers():
    bias = pd.concat([_summary("mechanism_key", [0.9, 0.9]).assign(coverage=[0.96, 0.99], sd_pp=[2.9, 2.5]),
                      _summary("paper_rates", [0.9, 0.9]).assign(coverage=[0.97, 0.98], sd_pp=[2.8, 2.4])])
    assert validity.coverage_range(bias, ["paper_rates"]) == (0.97, 0.98)
    assert validity.rates_text(bias, "paper_rates") == "0.900 (0 v 1), 0.900 (0 v 5)"
    assert validity.coverage_verdict(bias, ["paper_rates"]).startswith("consistent with the nominal 95 %")
    assert "for mechanism_key 0 v 1" in validity.coverage_verdict(bias.assign(coverage=[0.80, 0.99, 0.97, 0.98]),
                                                                  ["mechanism_key", "paper_rates"])



def test_sampling_check_sets_recorded_beside_measured():
    from mechaudit.workflow.calibrate import load_calibration

    spec = load_calibration()
    rng = np.random.default_rng(3)
    a, b, c = rng.normal(34, 3, 50), rng.normal(39, 2, 50), rng.normal(0.2, 1.3, 50)
    reps = pd.concat([pd.DataFrame({"rep": range(50), "rule": rule, "comparison": comp, "extra_pp": x})
                      for rule in ("paper_rates", "tfidf") for comp, x in (("0 v 1", a), ("0 v 5", b), ("1 v 5", c))])
    check = validity.sampling_check(reps, spec)
    assert list(check.index) == ["SD 0 v 1 (pp)", "SD 0 v 5 (pp)", "SD 1 v 5 (pp)", "correlation 0 v 1, 0 v 5"]
    assert check.loc["SD 0 v 5 (pp)"].tolist() == [3.0, round(float(np.std(b, ddof=1)), 2)]
    assert check.loc["correlation 0 v 1, 0 v 5", "measured"] == round(float(np.corrcoef(a, b)[0, 1]), 2)
    assert check.loc["correlation 0 v 1, 0 v 5", "recorded"] == spec.target_correlation


def test_size_verdict_flags_a_rate_far_from_alpha():
    ok = validity.size_z(_summary("mechanism_key", [0.05, 0.06, 0.04]), alpha=0.05)
    assert validity.size_verdict(ok).startswith("every rate lies within two")
    far = validity.size_z(_summary("mechanism_key", [0.05, 0.12]), alpha=0.05)
    assert far["0 v 5"] == pytest.approx(0.07 / math.sqrt(0.05 * 0.95 / 300))
    assert validity.size_verdict(far).startswith("at least one rate")
    low = validity.size_z(_summary("mechanism_key", [0.05, 0.02]), alpha=0.05)
    assert validity.size_verdict(low).endswith("conservative here")
    two = validity.size_z(pd.concat([_summary("a", [0.05, 0.06]), _summary("b", [0.04, 0.05])]), 0.05, ["a", "b"])
    assert len(two) == 4 and validity.size_verdict(two).startswith("every rate")


def test_mc_se_and_the_simulation_only_note(capsys):
    assert validity.mc_se(0.05, 1900) == pytest.approx(0.005, rel=1e-3)
    simulation_only_note(Backend.REFERENCE)
    assert capsys.readouterr().out == ""
    simulation_only_note(Backend.REPLAY)
    assert "simulation-only" in capsys.readouterr().out


def test_validity_setup_loads_both_simulators_and_the_truth():
    setup = validity.validity_setup(truth_runs_per_depth=3, seed=0)
    assert setup.null != setup.default
    assert {"0 v 1", "0 v 5", "1 v 5"} <= set(setup.truth.label)
    assert set(setup.truth.measure) == {"mechanism_key", "paper_rates"}
    view = validity.truth_view(setup.truth)
    assert list(view.columns) == ["truth", "SE", "ceiling (pp)"]
    assert view.index.names == ["measure", "quantity", "depths"]
