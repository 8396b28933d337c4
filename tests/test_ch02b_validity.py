"""Chapter 02b's tables and verdicts (``mechaudit.book.ch02b_validity``) on small hand-made summaries."""

from __future__ import annotations

import functools
import math

import numpy as np
import pandas as pd
import pytest

from mechaudit.backends import Backend
from mechaudit.book import ch02b_validity as validity
from mechaudit.book.chapter import simulation_only_note
from mechaudit.book.settings import ValiditySettings


def _summary(rule: str, rates: list[float], n: int = 300) -> pd.DataFrame:
    comps = ["0 v 1", "0 v 5", "1 v 5"][: len(rates)]
    return pd.DataFrame({"rule": rule, "comparison": comps, "n_reps": float(n), "truth_pp": [30.0] * len(rates),
                         "mean_pp": [31.0] * len(rates), "bias_pp": [1.0, -2.0, 0.5][: len(rates)],
                         "bias_se_pp": [0.5, 0.5, 0.5][: len(rates)], "rmse_pp": 3.0, "rejection_rate": rates,
                         "rejection_se": [math.sqrt(r * (1 - r) / n) for r in rates]})


def test_views_have_a_meaningful_index_human_headers_and_integer_counts():
    bias = validity.bias_view(_summary("mechanism_key", [0.9, 0.95]))
    assert bias.index.names == ["rule", "comparison"]
    assert list(bias.columns) == ["replications", "truth (pp)", "bias (pp)", "bias SE (pp)", "RMSE (pp)", "power"]
    assert bias["replications"].dtype.kind == "i" and bias["replications"].iloc[0] == 300
    size = validity.size_view(_summary("mechanism_key", [0.05]))
    assert list(size.columns) == ["replications", "mean (pp)", "rejection rate", "MC SE"]


def test_rates_text_and_coverage_verdict():
    bias = pd.concat([_summary("mechanism_key", [0.9, 0.9]).assign(coverage=[0.96, 0.99], sd_pp=[2.9, 2.5]),
                      _summary("paper_rates", [0.9, 0.9]).assign(coverage=[0.97, 0.98], sd_pp=[2.8, 2.4])])
    assert validity.rates_text(bias, "paper_rates") == "0.900 (0 v 1), 0.900 (0 v 5)"
    assert validity.coverage_verdict(bias, ["paper_rates"]).startswith("consistent with the nominal 95 %")
    assert "for mechanism_key 0 v 1" in validity.coverage_verdict(bias.assign(coverage=[0.80, 0.99, 0.97, 0.98]),
                                                                  ["mechanism_key", "paper_rates"])
    assert validity.coverage_verdict(bias.assign(coverage=np.nan), ["paper_rates"]) == "not computed"


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
    z = pd.Series  # the verdict reads z-scores (``workflow.validity.size_z``) only
    assert validity.size_verdict(z([0.0, 1.5, -1.9])).startswith("every rate lies within two")
    assert validity.size_verdict(z([0.0, 2.1])).startswith("at least one rate")
    assert validity.size_verdict(z([0.0, -2.5])).endswith("conservative here")


def test_the_simulation_only_note(capsys):
    simulation_only_note(Backend.REFERENCE)
    assert capsys.readouterr().out == ""
    simulation_only_note(Backend.REPLAY)
    assert "simulation-only" in capsys.readouterr().out


def test_validity_setup_loads_both_simulators_and_the_truth():
    setup = validity.validity_setup(ValiditySettings(truth_runs_per_depth=3))
    assert setup.null != setup.default
    assert {"0 v 1", "0 v 5", "1 v 5"} <= set(setup.truth.label)
    assert set(setup.truth.measure) == {"mechanism_key", "paper_rates"}
    view = validity.truth_view(setup.truth)
    assert list(view.columns) == ["truth", "SE", "ceiling (pp)"]
    assert view.index.names == ["measure", "quantity", "depths"]


def test_validity_facts_read_the_summaries_and_say_not_run_without_tfidf():
    from mechaudit.workflow import Design, validity_summary

    rng = np.random.default_rng(0)
    reps = pd.concat([pd.DataFrame({"rep": range(40), "rule": rule, "comparison": comp,
                                    "extra_pp": rng.normal(0, 2, 40), "p_value": rng.uniform(0, 1, 40)})
                      for rule in ("mechanism_key", "paper_rates") for comp in ("0 v 1", "1 v 5")])
    zero = {"0 v 1": 0.0, "1 v 5": 0.0}
    bias = validity_summary(reps, zero).assign(coverage=[0.9, 0.95, 0.96, 0.97])
    size = validity_summary(reps, zero, alpha=0.05)
    design = Design(instances=["A"], depths=[0, 1, 5], runs_per_depth=2)
    facts = validity.validity_facts(design, bias, size, reps, ValiditySettings(
        n_boot=9, n_replications=40, n_null_replications=40, truth_runs_per_depth=3))
    assert facts.coverage == "0.90 to 0.97" and facts.n_runs == design.n_runs
    assert facts.size_mean == pytest.approx(size[size.rule == "mechanism_key"].rejection_rate.mean())
    assert facts.se_01 == pytest.approx(math.sqrt(0.01 * 0.99 / 40))
    assert facts.size_rates_01 == validity.rates_text(validity_summary(reps, zero, alpha=0.01), "mechanism_key")
    assert facts.tfidf_bias_0v1_pp is None and facts.tfidf_null_n == 0
    assert validity.sampling_facts(pd.DataFrame({"recorded": [3.0], "measured": [2.694]}, index=["SD 0 v 1 (pp)"])
                                   ).tolerance_text == "SD 0 v 1 (pp): recorded 3, measured 2.69"


def test_size_verdict_counts_two_standard_errors_as_within_and_says_so_in_full():
    assert validity.size_verdict(pd.Series([2.0, -2.0])) == (
        "every rate lies within two Monte Carlo standard errors of alpha, consistent with a test whose size is at "
        "most alpha")
    assert validity.size_verdict(pd.Series([0.0, -2.5])) == (
        "no rate lies more than two Monte Carlo standard errors above alpha and some lie more than two below it: "
        "the test holds its size and is conservative here")


def test_validity_facts_read_the_tfidf_rows():
    from mechaudit.workflow import Design, validity_summary
    from mechaudit.workflow.validity import max_bias_z, size_z

    rng = np.random.default_rng(1)
    reps = pd.concat([pd.DataFrame({"rep": range(30), "rule": rule, "comparison": comp,
                                    "extra_pp": rng.normal(0, 2, 30), "p_value": rng.uniform(0, 1, 30)})
                      for rule in ("mechanism_key", "paper_rates", "tfidf") for comp in ("0 v 1", "1 v 5")])
    zero = {"0 v 1": 0.0, "1 v 5": 0.0}
    bias = validity_summary(reps, zero).assign(coverage=[0.95, 0.96, 0.5, 0.97, 0.9, 0.9])
    size = validity_summary(reps, zero, alpha=0.1)
    p = ValiditySettings(n_boot=9, n_replications=30, n_null_replications=30, truth_runs_per_depth=3, alpha=0.1)
    facts = validity.validity_facts(Design(instances=["A"], depths=[0, 1, 5], runs_per_depth=2), bias, size, reps, p)
    text_bias = bias[bias.rule == "tfidf"].iloc[0]
    assert (facts.tfidf_bias_0v1_pp, facts.tfidf_bias_se_0v1_pp) == (text_bias.bias_pp, text_bias.bias_se_pp)
    assert facts.tfidf_null_n == 30 and type(facts.tfidf_null_n) is int  # noqa: E721
    assert facts.tfidf_null_mean_0v1 == size[size.rule == "tfidf"].mean_pp.iloc[0]
    assert facts.coverage_verdict == validity.coverage_verdict(bias, ["mechanism_key", "paper_rates"])
    assert facts.coverage_verdict.endswith("for paper_rates 0 v 1")
    assert facts.key_max_bias_z == max_bias_z(bias, ["mechanism_key", "paper_rates"])
    assert facts.size_verdict == validity.size_verdict(size_z(size, 0.1, ["mechanism_key", "paper_rates"]))
    assert (facts.alpha, facts.n_boot, facts.truth_runs, facts.n_text_reps) == (0.1, 9, 3, 20)


@functools.cache
def _setup() -> validity.ValiditySetup:
    """The chapter's inputs at its default files, without the (slow) truth."""
    from mechaudit.paths import PARAMS_DIR
    from mechaudit.workflow import load_simulator_params
    from mechaudit.workflow.calibrate import load_calibration
    from mechaudit.workflow.simulator import load_simulation

    bench, design, default = load_simulation()
    return validity.ValiditySetup(bench, design, default, load_simulator_params(PARAMS_DIR / "simulator_null.yaml"),
                                  pd.DataFrame(), load_calibration())


def test_write_replications_reads_both_committed_tables_at_the_defaults(monkeypatch):
    from committed_spy import CommittedSpy

    from mechaudit.workflow import committed

    spy = CommittedSpy()
    monkeypatch.setattr(committed, "cached", spy)
    seen = []
    monkeypatch.setattr(validity, "validity_setup", lambda p: seen.append(p) or _setup())
    text = validity.write_replications()
    assert seen == [ValiditySettings(n_jobs=-1)] and spy.flags() == {(True, False)}
    n_default, n_null = (len(committed.load(n, spy.calls[n]["settings"]))
                         for n in ("validity_default", "validity_null"))
    assert text == (f"data/computed/validity_default.csv ({n_default} rows): current, kept\n"
                    f"data/computed/validity_null.csv ({n_null} rows): current, kept")
    validity.write_replications(n_jobs=1, force=True)
    assert seen[-1].n_jobs == 1 and spy.flags() == {(True, True)}


def test_replications_run_the_fast_rules_and_tfidf_with_the_chapters_settings(monkeypatch):
    from committed_spy import CommittedSpy

    from mechaudit.workflow import committed

    s = _setup()
    p = ValiditySettings(n_jobs=1, parallel_backend="threading", seed=3, n_replications=4, n_null_replications=5,
                         n_text_replications=2, n_boot=7, tfidf_threshold=0.4)
    calls = []

    def replicate(bench, design, simulator, rules, **kw):
        calls.append((bench, design, simulator, rules, kw))
        return pd.DataFrame({"n": [len(calls)]})

    monkeypatch.setattr(validity, "replicate", replicate)
    spy = CommittedSpy(compute=True)
    monkeypatch.setattr(committed, "cached", spy)
    r = validity.replications(s, p, level=0.9, write=True)
    assert r.default.n.tolist() == [1, 2] and r.null.n.tolist() == [3, 4]
    assert r.sources == {"validity_default": "computed now", "validity_null": "computed now"}
    assert spy.flags() == {(True, False)}
    jobs = {"n_jobs": 1, "parallel_backend": "threading"}
    for (bench, design, simulator, rules, kw), params, n_fast, seed, boot in zip(
            calls, (s.default, s.default, s.null, s.null), (4, None, 5, None), (4, 4, 5, 5), (7, None, 0, None)):
        assert (bench, design, simulator) == (s.bench, s.design, params)
        if n_fast is None:
            assert list(rules) == ["tfidf"] and rules["tfidf"].__self__.threshold == 0.4
            assert kw == {"n_reps": 2, "seed": seed, **jobs}
        else:
            assert list(rules) == ["mechanism_key", "paper_rates"]
            assert kw == {"n_reps": n_fast, "seed": seed, "n_boot": boot, "level": 0.9, **jobs}
    assert spy.calls["validity_null"]["settings"] == committed.with_benchmark({
        "design": s.design.model_dump(), "simulator": s.null.model_dump(),
        "fast_rules": ["mechanism_key", "paper_rates"],
        "tfidf_threshold": 0.4, "n_fast": 5, "n_text": 2, "seed": 5, "n_boot": 0, "level": 0.9})


def test_validity_setup_estimates_the_truth_with_the_chapters_runs_and_seed():
    from mechaudit.workflow import population_truth
    from mechaudit.workflow.depth import MEASURES

    p = ValiditySettings(truth_runs_per_depth=3, seed=2)
    setup = validity.validity_setup(p)
    expected = population_truth(setup.bench, setup.design, setup.default, runs_per_depth=3, seed=2, measures=MEASURES)
    pd.testing.assert_frame_equal(setup.truth, expected)
