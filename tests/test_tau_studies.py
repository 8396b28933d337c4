"""Chapter 08's studies (:mod:`mechaudit.tau.studies`) and their summaries (:mod:`mechaudit.tau.summaries`) on
small pools: the exact columns of every frame, values recomputed from the functions they combine, tables
on hand-made frames, and the large defaults (60 stories, 2000 pairs) checked where they are passed on,
without running a study that size."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechaudit.tau import SimulatedJudge, fit_tau_detailed, make_pool, sample_pairs, simulate_pairs, studies, summaries
from mechaudit.tau.critic import densify_reasons
from mechaudit.tau.inference import effective_tau, infer_score, kish_scale, loss_curve, observations, score_grid


@pytest.fixture(scope="module")
def pool():
    return make_pool(n_patterns=3, papers_per_pattern=15, seed=1)


@pytest.fixture(scope="module")
def rounds(pool):
    """The final rounds of two stories without densify (six rounds, one per story and role)."""
    return studies.simulated_reviews(pool, SimulatedJudge(pool.truth()), n_stories=2, seed=0, densify=False)[1]


class Stop(Exception):
    """Raised by a stand-in to end a study once it has received the argument under test."""


def test_large_defaults_reach_the_pair_sampler_and_the_story_maker(pool, monkeypatch):
    pairs_asked, stories_asked = [], []

    def sampler(table, n_pairs, seed=42):
        pairs_asked.append(n_pairs)
        raise Stop

    def stories(pool, n_stories, score_range, seed):
        stories_asked.append((n_stories, score_range, seed))
        raise Stop

    monkeypatch.setattr(studies, "sample_pairs", sampler)
    monkeypatch.setattr(studies, "_synthetic_stories", stories)
    judge = SimulatedJudge(pool.truth())
    for run in (studies.tau_recovery, studies.tie_effect, studies.tau_misspecification,
                lambda p: studies.score_misspecification(p, [], {"Novelty": 1.0}),
                lambda p: studies.simulated_reviews(p, judge), lambda p: studies.densify_comparison(p, judge)):
        with pytest.raises(Stop):
            run(pool)
    assert pairs_asked == [2000] * 4
    assert stories_asked == [(60, (1.5, 10.0), 0)] * 2


def test_review_table_and_rounds(pool):
    judge = SimulatedJudge(pool.truth())
    table, rounds = studies.simulated_reviews(pool, judge, n_stories=2, seed=0, densify=False)
    assert list(table.columns) == [
        "story", "pattern_id", "role", "tau", "true_score", "score", "error", "ci_low", "ci_high", "profile_ci_low",
        "profile_ci_high", "covered", "profile_covered", "saturated", "saturated_at", "n_anchors", "max_anchor",
        "min_anchor", "densified", "score_hint", "n_extra", "loss", "monotonic_violations", "avg_strength"]
    assert list(table["story"]) == [0, 0, 0, 1, 1, 1]
    truths = np.random.default_rng(0).uniform(1.5, 10.0, size=2)
    assert list(table["true_score"]) == list(np.repeat(truths, 3))
    assert np.allclose(table["error"], table["score"] - table["true_score"])
    covered = (table["ci_low"] <= table["true_score"]) & (table["true_score"] <= table["ci_high"])
    assert list(table["covered"]) == list(covered)
    assert table["score_hint"].dtype == float and table["score_hint"].isna().all()  # no second round: no hint
    assert not table["densified"].any() and (table["n_extra"] == 0).all()
    assert [sorted(r) for r in rounds] == [["anchors", "comparisons", "role", "story", "tau", "true_score"]] * 6
    assert [(r["story"], r["role"]) for r in rounds] == list(zip(table["story"], table["role"]))
    for r, (_, row) in zip(rounds, table.iterrows()):
        scores = [a["score10"] for a in r["anchors"]]
        assert (row["max_anchor"], row["min_anchor"], row["n_anchors"]) == (max(scores), min(scores), len(scores))
        assert [a["anchor_id"] for a in r["anchors"]] == [f"A{k + 1}" for k in range(len(scores))]
        score, diag = infer_score(r["anchors"], r["comparisons"], r["tau"])
        assert (row["score"], row["loss"]) == (score, diag["loss"])
        at = diag["saturated_at"]
        assert row["saturated_at"] == at or (pd.isna(row["saturated_at"]) and at is None)


def test_tau_recovery_rows_are_the_fits_of_the_simulated_answers(pool):
    rec = studies.tau_recovery(pool, (0.8, 1.5), n_pairs=60, n_reps=1, seed=3)
    assert list(rec.columns) == ["true_tau", "rep", "method", "tau_hat", "se", "se_robust", "rel_error", "n_pairs"]
    pairs = sample_pairs(pool.table(), 60, seed=3)
    for k, tau in enumerate((0.8, 1.5)):
        judged = simulate_pairs(pairs, tau, seed=3 + 1000 * (k + 1))
        for method in ("grid", "mle"):
            fit = fit_tau_detailed(judged, method)
            row = rec[(rec["true_tau"] == tau) & (rec["method"] == method)].iloc[0]
            assert (row["tau_hat"], row["n_pairs"], row["rep"]) == (fit.tau, fit.n_pairs, 0)
            assert row["se_robust"] == fit.se_robust or (np.isnan(fit.se_robust) and np.isnan(row["se_robust"]))
            assert row["rel_error"] == pytest.approx(fit.tau / tau - 1)


def test_tie_effect_fits_each_tie_setting_on_the_same_pairs(pool):
    ties = studies.tie_effect(pool, tie_rates=(0.0, 0.6), tie_modes=("abstain",), n_pairs=60, seed=2)
    assert list(ties.columns) == ["tie_mode", "tie_rate", "tie_share", "tau_grid", "tau_mle", "true_tau"]
    assert list(ties["tie_rate"]) == [0.0, 0.6] and (ties["true_tau"] == 0.8).all()
    pairs = sample_pairs(pool.table(), 60, seed=2)
    for _, row in ties.iterrows():
        judged = simulate_pairs(pairs, 0.8, seed=9, tie_rate=row["tie_rate"], tie_width=0.6, tie_mode="abstain")
        assert row["tie_share"] == (judged["judgement"] == "tie").mean()
        assert (row["tau_grid"], row["tau_mle"]) == (fit_tau_detailed(judged).tau, fit_tau_detailed(judged, "mle").tau)


def test_misspecification_rows_carry_the_noise_approximation_for_score10_only(pool):
    mis = studies.tau_misspecification(pool, (0.8,), perception_noises=(0.0, 0.5), n_pairs=60, n_reps=1,
                                       methods=("mle",))
    assert list(mis.columns) == ["source", "perception_noise", "true_tau", "rep", "method", "tau_hat", "rel_error",
                                 "approx_tau"]
    score10 = mis[mis["source"] == "score10"]
    assert list(score10["approx_tau"]) == [studies.noisy_judge_tau(0.8, 0.0), studies.noisy_judge_tau(0.8, 0.5)]
    assert mis.loc[mis["source"] == "quality", "approx_tau"].isna().all() and (mis["rep"] == 0).all()


def test_score_misspecification_table_by_hand():
    rows = []
    for source, shift in (("score10", 0.0), ("quality", 1.0)):
        per_role = (("Novelty", 1.0, 1.5, 1.0), ("Storyteller", 2.0, 2.0, -2.0))
        for i, (role, true_tau, fitted, error) in enumerate(per_role):
            rows.append({"source": source, "perception_noise": 0.0, "round": i, "story": 0, "role": role,
                         "true_tau": true_tau, "fitted_tau": fitted + shift, "true_score": 5.0,
                         "score": 5.0 + error + shift, "error": error + shift, "profile_covered": i == 0,
                         "saturated": source == "quality"})
    table = studies.score_misspecification_table(pd.DataFrame(rows))
    base = table.loc[("score10", 0.0)]
    assert base["tau_ratio"] == pytest.approx((1.5 / 1.0 + 2.0 / 2.0) / 2)
    assert (base["bias"], base["mae"], base["moved"]) == (-0.5, 1.5, 0.0)
    assert base["rmse"] == pytest.approx(np.sqrt((1 + 4) / 2))
    shifted = table.loc[("quality", 0.0)]
    assert shifted["tau_ratio"] == pytest.approx((2.5 / 1.0 + 3.0 / 2.0) / 2)
    assert (shifted["moved"], shifted["rmse"], shifted["saturated_share"]) == (1.0, pytest.approx(np.sqrt(2.5)), 1.0)
    assert shifted["profile_coverage"] == 0.5


def test_recovery_table_columns_and_strict_tolerance():
    recovery = pd.DataFrame({"true_tau": 1.0, "method": "mle", "tau_hat": [1.1, 1.0], "rel_error": [0.1, 0.0],
                             "se": [0.1, 0.3], "se_robust": [0.2, 0.4]})
    table = studies.recovery_table(recovery)
    assert list(table.columns) == ["mean_tau", "sd_tau", "mean_rel_error", "within_tolerance", "mean_se",
                                   "mean_se_robust", "reps"]
    row = table.loc[(1.0, "mle")]
    assert (row["mean_rel_error"], row["within_tolerance"], row["reps"]) == (pytest.approx(0.05), 0.5, 2)


def test_saturation_table_by_hand():
    reviews = pd.DataFrame({"true_score": [3.0, 4.0, 8.7, 9.5, 9.9], "max_anchor": [5.0, 6.0, 8.0, 8.0, 8.0],
                            "score": [3.5, 4.5, 9.0, 10.0, 10.0], "saturated_at": [None, None, None, "high", "low"],
                            "covered": [True, False, True, False, True]})
    table = studies.saturation_table(reviews)
    assert table.index.name == "true score - highest anchor"
    assert list(table.index) == ["(-10.0, -1.0]", "(0.5, 1.0]", "(1.0, 10.0]"]  # empty bins are left out
    assert list(table.columns) == ["n", "saturated_high", "mean_true", "mean_score", "band_coverage"]
    assert list(table["n"]) == [2, 1, 2] and list(table["saturated_high"]) == [0.0, 0.0, 0.5]
    assert list(table["mean_true"]) == [3.5, 8.7, 9.7] and list(table["mean_score"]) == [4.0, 9.0, 10.0]
    assert list(table["band_coverage"]) == [0.5, 1.0, 0.5]


def _at_band_ends(rounds, grid_step):
    """The rounds with the true score moved onto the upper end of the band (even rounds) or of the profile
    interval (odd rounds), where coverage is decided by the closed end."""
    out = []
    for k, r in enumerate(rounds):
        d = infer_score(r["anchors"], r["comparisons"], r["tau"], grid_step)[1]
        out.append({**r, "true_score": d["ci_high"] if k % 2 == 0 else d["profile_ci_high"]})
    return out


def test_weight_scale_effect_against_each_round_reinferred(rounds):
    moved = _at_band_ends(rounds, 0.05)
    table = studies.weight_scale_effect(moved, scales=(1, 3), grid_step=0.05)
    assert list(table.columns) == ["scale", "band_width", "band_coverage", "profile_width", "profile_coverage",
                                   "score_changed"]
    for _, row in table.iterrows():
        diags = [infer_score([{**a, "weight": a["weight"] * row["scale"]} for a in r["anchors"]], r["comparisons"],
                             r["tau"], 0.05)[1] for r in moved]
        assert row["band_width"] == pytest.approx(np.mean([d["ci_high"] - d["ci_low"] for d in diags]))
        assert row["profile_width"] == pytest.approx(np.mean([d["profile_ci_high"] - d["profile_ci_low"]
                                                              for d in diags]))
        assert row["score_changed"] == 0.0  # the optimum does not depend on the weights' scale
        true = [r["true_score"] for r in moved]
        assert row["band_coverage"] == np.mean([d["ci_low"] <= t <= d["ci_high"] for d, t in zip(diags, true)])
        assert row["profile_coverage"] == np.mean([d["profile_ci_low"] <= t <= d["profile_ci_high"]
                                                   for d, t in zip(diags, true)])
    at_one = table.iloc[0]
    assert at_one["band_coverage"] >= 0.5 and at_one["profile_coverage"] >= 0.5  # closed at the upper end
    assert list(studies.weight_scale_effect(rounds[:1])["scale"]) == [0.25, 0.5, 1, 2, 4]
    pd.testing.assert_frame_equal(studies.weight_scale_effect(rounds, scales=(2,)),
                                  studies.weight_scale_effect(rounds, scales=(2,), grid_step=0.01))


def test_trigger_rates_are_the_shares_of_rounds_each_trigger_fires_on(rounds):
    rates = studies.densify_trigger_rates(rounds, (0.05, 50.0))
    assert list(rates.columns) == ["loss_threshold", "loss", "monotonic", "strength", "any"]
    for _, row in rates.iterrows():
        fired = [densify_reasons(infer_score(r["anchors"], r["comparisons"], r["tau"])[1], row["loss_threshold"])
                 for r in rounds]
        for reason in ("loss", "monotonic", "strength"):
            assert row[reason] == np.mean([reason in f for f in fired])
        assert row["any"] == np.mean([bool(f) for f in fired])
    assert list(rates["loss"]) == [1.0, 0.0]


def test_loss_profile_is_the_weighted_loss_above_its_minimum(rounds):
    r = rounds[0]
    profile = studies.loss_profile(r["anchors"], r["comparisons"], r["tau"], scales=(1.0, 2.0))
    assert list(profile.columns) == ["scale", "S", "excess_loss", "profile_excess"]
    grid = score_grid(0.01)
    score10, y, sw, aw = observations(r["anchors"], r["comparisons"])
    for scale in (1.0, 2.0):
        part = profile[profile["scale"] == scale]
        loss = loss_curve(score10, y, aw * sw * scale, effective_tau(r["tau"]), grid)
        assert list(part["S"]) == list(grid) and len(part) == 901
        assert np.allclose(part["excess_loss"], loss - loss.min())
        assert np.allclose(part["profile_excess"], (loss - loss.min()) * kish_scale(aw * sw * scale))
    one, two = (profile.loc[profile["scale"] == s, "excess_loss"].to_numpy() for s in (1.0, 2.0))
    assert np.allclose(two, 2 * one)  # the loss is linear in the weights
    default = studies.loss_profile(r["anchors"], r["comparisons"], r["tau"])
    pd.testing.assert_frame_equal(default, profile[profile["scale"] == 1.0])


def test_densify_by_hint_bands_are_closed_on_the_left():
    runs = {}
    for run in (studies.FIRST_ROUND, "original"):
        runs[run] = pd.DataFrame({"story": [0, 1], "score": [7.0, 4.0], "error": [1.0, -1.0],
                                  "saturated": [False, False], "n_extra": [0, 2]})
    table = studies.densify_by_hint(runs, edges=(1.0, 7.0, 10.0))
    first = table[table["run"] == studies.FIRST_ROUND].set_index("band")
    assert list(first["stories"]) == [1, 1]  # a hint of exactly 7 opens the band 7-10
    assert first.loc["7-10", "anchors_added"] == 0 and table.set_index(["run", "band"]).loc[
        ("original", "1-7"), "anchors_added"] == 2


def _run(story_rows):
    """A review table from ``(story, role score, true score, saturated, n_extra)`` rows, three roles each."""
    rows = []
    for story, score, true, saturated, extra in story_rows:
        for role in ("Methodology", "Novelty", "Storyteller"):
            rows.append({"story": story, "role": role, "score": score, "true_score": true, "error": score - true,
                         "covered": not saturated, "ci_low": score - 1, "ci_high": score + 1,
                         "profile_covered": True, "profile_ci_low": score - 2, "profile_ci_high": score + 2,
                         "saturated": saturated, "n_extra": extra})
    return pd.DataFrame(rows)


def test_densify_effect_rows_and_their_axis_name():
    runs = {studies.FIRST_ROUND: _run([(0, 5.0, 6.0, False, 0), (1, 10.0, 8.0, True, 0)]),
            "fill": _run([(0, 5.5, 6.0, False, 3), (1, 9.0, 8.0, False, 3)])}
    effect = summaries.densify_effect(runs, 9.75, labels={"fill": "fill mode"})
    assert effect.index.name == "all roles" and list(effect.columns) == [studies.FIRST_ROUND, "fill mode"]
    assert list(effect.index) == ["MAE (score points)", "RMSE (score points)", "1.92 band coverage", "Kish coverage",
                                  "% saturated", "anchors added per story", "% saturated, first round ≥ 9.75",
                                  "anchors added, first round ≥ 9.75"]
    assert effect[studies.FIRST_ROUND].tolist() == pytest.approx([1.5, np.sqrt(2.5), 0.5, 1.0, 50.0, 0.0, 100.0, 0.0])
    assert effect["fill mode"].tolist() == pytest.approx([0.75, np.sqrt(0.625), 1.0, 1.0, 0.0, 3.0, 0.0, 3.0])

