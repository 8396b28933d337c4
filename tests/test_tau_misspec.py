"""A simulated judge whose perception differs from the inference model (chapter 08): perceived
values, the perceived-gap judge, tau drift under misspecification and the inferred scores."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechaudit.tau import (
    SimulatedJudge,
    build_paper_card,
    fit_tau,
    make_pool,
    perceived_values,
    sample_pairs,
    simulate_pairs,
    studies,
)
from mechaudit.tau.inference import infer_score
from mechaudit.tau.simulate import simulate_judgements

JUDGE = {"tie_rate": 0.3, "tie_width": 0.3}


@pytest.fixture(scope="module")
def pool():
    return make_pool(seed=0)


@pytest.fixture(scope="module")
def small_pool():
    return make_pool(n_patterns=4, papers_per_pattern=25, seed=1)


def test_zero_noise_score10_judge_is_todays_judge_exactly(pool):
    pairs = sample_pairs(pool.table(), 1000, seed=3)
    today = simulate_pairs(pairs, 0.8, seed=11, **JUDGE)
    same = simulate_pairs(pairs, 0.8, seed=11, perceived=perceived_values(pool, "Novelty", "score10", 0.0, seed=5),
                          **JUDGE)
    assert today.equals(same)
    # any perception noise changes some answers
    noisy = simulate_pairs(pairs, 0.8, seed=11, perceived=perceived_values(pool, "Novelty", "score10", 0.5), **JUDGE)
    assert (noisy["judgement"] != today["judgement"]).any()


def test_perceived_values_equal_the_simulated_judges_slow_path(pool):
    for source, noise, seed in (("quality", 0.7, 3), ("score10", 0.25, 0), ("quality", 0.0, 1)):
        judge = SimulatedJudge(pool.truth(source), seed=seed, perception_noise=noise)
        slow = {p["paper_id"]: judge.value(build_paper_card(p), "Methodology") for p in pool.papers}
        assert perceived_values(pool, "Methodology", source, noise, seed=seed) == slow
    zero = perceived_values(pool, "Novelty", "quality", 0.0)
    assert zero == {p["paper_id"]: p["quality"] for p in pool.papers}


def test_pool_truth_by_source(pool):
    by_key = {build_paper_card(p).key: p for p in pool.papers}
    for source in ("score10", "quality"):
        truth = pool.truth(source)
        assert all(truth[k]["Novelty"] == by_key[k][source] for k in truth)
    assert any(p["quality"] != p["score10"] for p in pool.papers)


def test_bad_perception_input(pool):
    with pytest.raises(ValueError, match="source must be one of"):
        pool.truth("rating")
    with pytest.raises(ValueError, match="source must be one of"):
        perceived_values(pool, "Novelty", "rating")
    with pytest.raises(ValueError, match="perception_noise must be >= 0"):
        perceived_values(pool, "Novelty", "score10", -0.1)
    pairs = sample_pairs(pool.table(), 50, seed=0)
    partial = perceived_values(pool, "Novelty")
    partial.pop(pairs["b"].iloc[7])
    with pytest.raises(KeyError, match="pair"):
        simulate_pairs(pairs, 0.8, perceived=partial)
    with pytest.raises(ValueError, match="sources must be among"):
        studies.tau_misspecification(pool, sources=["latent"], n_reps=1)


def test_noisy_judge_tau_formula():
    assert studies.noisy_judge_tau(0.8, 0.0) == pytest.approx(0.8)
    assert studies.noisy_judge_tau(0.8, 0.5) == pytest.approx(math.sqrt(0.64 + 2 * 0.25 / 1.702**2))
    out = studies.noisy_judge_tau(np.array([0.5, 0.5]), np.array([0.5, 1.0]))
    assert out.shape == (2,) and out[1] > out[0] > 0.5


def test_misspecification_baseline_reproduces_tau_recovery(small_pool):
    kw = dict(n_pairs=400, n_reps=2, seed=4, **JUDGE)
    rec = studies.tau_recovery(small_pool, (0.5, 1.2), **kw)
    mis = studies.tau_misspecification(small_pool, (0.5, 1.2), perception_noises=(0.0, 0.5), **kw)
    base = mis[(mis["source"] == "score10") & (mis["perception_noise"] == 0) & mis["method"].isin(["grid", "mle"])]
    assert base["tau_hat"].tolist() == rec["tau_hat"].tolist()
    assert len(mis) == 2 * 2 * 2 * 2 * 3  # reps x sources x noises x taus x methods
    assert mis.loc[mis["source"] == "quality", "approx_tau"].isna().all()


def test_perception_noise_inflates_tau_in_expectation(pool):
    """Over a few seeds: the unweighted fit grows with noise and follows the probit approximation;
    with strength weights a small tau still grows, monotonically."""
    mis = studies.tau_misspecification(pool, (0.5, 0.8), perception_noises=(0.0, 0.5, 1.0), sources=["score10"],
                                       n_pairs=2000, n_reps=3, seed=0, methods=("mle", studies.NO_STRENGTH), **JUDGE)
    mean = mis.groupby(["method", "true_tau", "perception_noise"])["tau_hat"].mean()
    for tau in (0.5, 0.8):
        plain = mean.loc[(studies.NO_STRENGTH, tau)]
        assert plain.is_monotonic_increasing and plain.iloc[-1] > 1.3 * tau
        for noise, value in plain.items():
            assert value == pytest.approx(studies.noisy_judge_tau(tau, noise), rel=0.10)
    weighted = mean.loc[("mle", 0.5)]
    assert weighted.is_monotonic_increasing and weighted.iloc[-1] > 1.3 * 0.5
    # strength weights follow the judge's noisy gap, so they pull the fit below the unweighted one
    assert (mean.loc[("mle", 0.8)].iloc[1:] < mean.loc[(studies.NO_STRENGTH, 0.8)].iloc[1:]).all()


def test_judge_seeing_latent_quality_inflates_tau(pool):
    mis = studies.tau_misspecification(pool, (0.5, 0.8), perception_noises=(0.0,), n_pairs=2000, n_reps=3,
                                       seed=0, methods=("grid", "mle"), **JUDGE)
    mean = mis.groupby(["source", "method", "true_tau"])["tau_hat"].mean()
    for method in ("grid", "mle"):
        for tau in (0.5, 0.8):
            drift = mean.loc[("quality", method, tau)] / mean.loc[("score10", method, tau)]
            assert 1.02 < drift < 1.35


def _rounds(pool, n_stories=12):
    judge = SimulatedJudge(pool.truth(), taus={"Methodology": 0.8, "Novelty": 1.2, "Storyteller": 1.0}, **JUDGE)
    return studies.simulated_reviews(pool, judge, n_stories=n_stories, seed=2, densify=False)[1], judge.taus


def test_score_misspecification_against_a_slow_loop(pool):
    rounds, taus = _rounds(pool)
    scores = studies.score_misspecification(pool, rounds, taus, perception_noises=(0.0, 1.0), sources=["quality"],
                                            n_pairs=600, seed=5, **JUDGE)
    # one round recomputed independently: anchors perceived through SimulatedJudge.value
    by_id = pool.by_id()
    i = 7
    r = rounds[i]
    judge = SimulatedJudge(pool.truth("quality"), seed=5, perception_noise=1.0)
    pairs = sample_pairs(pool.table(), 600, seed=5)
    k = list(taus).index(r["role"])
    slow_perceived = {pid: judge.value(build_paper_card(p), r["role"]) for pid, p in by_id.items()}
    fitted = fit_tau(simulate_pairs(pairs, taus[r["role"]], seed=5 + 1000 * (k + 1), perceived=slow_perceived,
                                    **JUDGE), "mle")
    rng = np.random.default_rng([5, i])
    seen = r["true_score"] + 1.0 * rng.standard_normal()
    gap = seen - np.array([slow_perceived[a["paper_id"]] for a in r["anchors"]])
    judgement, strength = simulate_judgements(gap, taus[r["role"]], rng, **JUDGE)
    comps = [{"anchor_id": a["anchor_id"], "judgement": str(j), "strength": str(s)}
             for a, j, s in zip(r["anchors"], judgement, strength)]
    score, _ = infer_score(r["anchors"], comps, fitted)
    row = scores[(scores["perception_noise"] == 1.0) & (scores["round"] == i)].iloc[0]
    assert row["score"] == score and row["fitted_tau"] == fitted


def test_score_misspecification_table_moves_from_the_well_specified_scores(pool):
    rounds, taus = _rounds(pool, n_stories=20)
    scores = studies.score_misspecification(pool, rounds, taus, perception_noises=(0.0, 1.5), n_pairs=800, seed=0,
                                            **JUDGE)
    table = studies.score_misspecification_table(scores)
    assert table.loc[("score10", 0.0), "moved"] == 0
    assert table.loc[("score10", 1.5), "moved"] > 0.3 and table.loc[("quality", 0.0), "moved"] > 0
    assert table.loc[("score10", 1.5), "mae"] > table.loc[("score10", 0.0), "mae"]
    assert len(scores) == 4 * len(rounds)
