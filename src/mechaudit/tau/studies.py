"""The experiments of chapter 08, on the synthetic pool with the simulated judge (offline only).

Each function returns a tidy ``pandas.DataFrame``; the chapter only tabulates and plots them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from mechaudit.tau.anchors import DENSIFY_MODES
from mechaudit.tau.critic import MultiAgentCritic, densify_reasons
from mechaudit.tau.fitting import fit_tau_detailed, fit_taus, sample_pairs
from mechaudit.tau.inference import effective_tau, infer_score, kish_scale, loss_curve, observations, score_grid
from mechaudit.tau.judge import BlindJudge
from mechaudit.tau.simulate import (
    PERCEPTION_SOURCES,
    SimulatedJudge,
    SyntheticPool,
    make_story,
    perceived_values,
    simulate_judgements,
    simulate_pairs,
)


def tau_recovery(
    pool: SyntheticPool,
    true_taus: Sequence[float] = (0.5, 0.8, 1.5),
    n_pairs: int = 2000,
    n_reps: int = 5,
    seed: int = 0,
    methods: Sequence[str] = ("grid", "mle"),
    progress: bool = False,
    **judge_model: Any,
) -> pd.DataFrame:
    """Fitted tau on simulated judgements (``judge_model``: :func:`simulate_judgements`'s settings)
    per true tau and repetition: true_tau, rep, method, tau_hat, se, se_robust, rel_error, n_pairs.
    """
    rows = []
    table = pool.table()
    for rep in tqdm(range(n_reps), disable=not progress, desc="tau recovery"):
        pairs = sample_pairs(table, n_pairs, seed=seed + rep)
        judged = [simulate_pairs(pairs, tau, seed=seed + 1000 * (k + 1) + rep, **judge_model)
                  for k, tau in enumerate(true_taus)]
        for tau, fits in zip(true_taus, fit_taus(judged, methods)):
            for method in methods:
                fit = fits[method]
                rows.append({"true_tau": tau, "rep": rep, "method": method, "tau_hat": fit.tau,
                             "se": fit.se, "se_robust": fit.se_robust,
                             "rel_error": fit.tau / tau - 1, "n_pairs": fit.n_pairs})
    return pd.DataFrame(rows)


def tie_effect(
    pool: SyntheticPool,
    tau: float = 0.8,
    tie_rates: Sequence[float] = (0.0, 0.3, 0.6, 0.9),
    tie_modes: Sequence[str] = ("calibrated", "abstain"),
    tie_width: float = 0.6,
    n_pairs: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Fitted tau per tie mode and rate: tie_mode, tie_rate, tie_share (observed), tau_grid, tau_mle, true_tau."""
    pairs = sample_pairs(pool.table(), n_pairs, seed=seed)
    settings = [(mode, rate) for mode in tie_modes for rate in tie_rates]
    judged = [simulate_pairs(pairs, tau, seed=seed + 7, tie_rate=rate, tie_width=tie_width, tie_mode=mode)
              for mode, rate in settings]
    return pd.DataFrame([{"tie_mode": mode, "tie_rate": rate,
                          "tie_share": float((answers["judgement"] == "tie").mean()),
                          "tau_grid": fits["grid"].tau, "tau_mle": fits["mle"].tau, "true_tau": tau}
                         for (mode, rate), answers, fits in zip(settings, judged, fit_taus(judged, ("grid", "mle")))])


#: Method label of the misspecification study for an mle fit that ignores the strengths.
NO_STRENGTH = "mle_no_strength"
#: logistic(x) is close to Phi(x / PROBIT_SCALE) (the usual probit approximation of the logit).
PROBIT_SCALE = 1.702


def noisy_judge_tau(tau: float | np.ndarray, perception_noise: float | np.ndarray) -> float | np.ndarray:
    """Approximate tau fitted when the judge answers with ``tau`` on gaps perceived with an
    ``N(0, perception_noise)`` offset per paper: ``sqrt(tau^2 + 2 sigma^2 / PROBIT_SCALE^2)``, from
    ``E[Phi((d + e) / s)] = Phi(d / sqrt(s^2 + 2 sigma^2))`` (a guide: the strengths are ignored).
    """
    tau, sigma = np.asarray(tau, dtype=float), np.asarray(perception_noise, dtype=float)
    out = np.sqrt(tau**2 + 2 * sigma**2 / PROBIT_SCALE**2)
    return float(out) if out.ndim == 0 else out


def tau_misspecification(
    pool: SyntheticPool,
    true_taus: Sequence[float] = (0.5, 0.8, 1.5),
    perception_noises: Sequence[float] = (0.0, 0.5, 1.0),
    sources: Sequence[str] = PERCEPTION_SOURCES,
    n_pairs: int = 2000,
    n_reps: int = 3,
    seed: int = 0,
    methods: Sequence[str] = ("grid", "mle", NO_STRENGTH),
    role: str = "Novelty",
    progress: bool = False,
    **judge_model: Any,
) -> pd.DataFrame:
    """Fitted tau when the judge perceives each paper at its ``source`` value ("score10" or
    "quality") plus ``perception_noise`` times a fixed normal draw, while the fitter sees score10.

    Seeds as in :func:`tau_recovery` (condition (score10, 0) reproduces its rows; conditions share
    the draws). ``NO_STRENGTH``: "mle" with every strength weighing 1. Columns: source,
    perception_noise, true_tau, rep, method, tau_hat, rel_error, approx_tau (:func:`noisy_judge_tau`
    for score10, NaN for quality).
    """
    bad = [s for s in sources if s not in PERCEPTION_SOURCES]
    if bad:
        raise ValueError(f"sources must be among {PERCEPTION_SOURCES}, got {bad}")
    rows = []
    table = pool.table()
    fitted = [m for m in methods if m != NO_STRENGTH]
    for rep in tqdm(range(n_reps), disable=not progress, desc="tau misspecification"):
        pairs = sample_pairs(table, n_pairs, seed=seed + rep)
        conditions, judged = [], []
        for source in sources:
            for noise in perception_noises:
                perceived = perceived_values(pool, role, source, noise, seed=seed + rep)
                for k, tau in enumerate(true_taus):
                    conditions.append((source, noise, tau))
                    judged.append(simulate_pairs(pairs, tau, seed=seed + 1000 * (k + 1) + rep, perceived=perceived,
                                                 **judge_model))
        fits = fit_taus(judged, fitted)
        if NO_STRENGTH in methods:  # the same answers, every strength weighing 1
            for f, plain in zip(fits, fit_taus([j.drop(columns="strength") for j in judged], ("mle",))):
                f[NO_STRENGTH] = plain["mle"]
        for (source, noise, tau), f in zip(conditions, fits):
            approx = noisy_judge_tau(tau, noise) if source == "score10" else float("nan")
            for method in methods:
                rows.append({"source": source, "perception_noise": noise, "true_tau": tau, "rep": rep,
                             "method": method, "tau_hat": f[method].tau, "rel_error": f[method].tau / tau - 1,
                             "approx_tau": approx})
    return pd.DataFrame(rows)


def misspecification_table(mis: pd.DataFrame) -> pd.DataFrame:
    """Per condition and method: mean and sd of tau, mean relative error and ``approx_tau``."""
    return mis.groupby(["source", "perception_noise", "true_tau", "method"], sort=False).agg(
        mean_tau=("tau_hat", "mean"), sd_tau=("tau_hat", "std"), mean_rel_error=("rel_error", "mean"),
        approx_tau=("approx_tau", "first"), reps=("tau_hat", "size"))


def score_misspecification(
    pool: SyntheticPool,
    rounds: Sequence[Mapping[str, Any]],
    role_taus: Mapping[str, float],
    perception_noises: Sequence[float] = (0.0, 0.5, 1.0),
    sources: Sequence[str] = PERCEPTION_SOURCES,
    n_pairs: int = 2000,
    seed: int = 0,
    grid_step: float = 0.01,
    **judge_model: Any,
) -> pd.DataFrame:
    """Inferred scores under a misspecified judge (conditions as in :func:`tau_misspecification`):
    tau is fitted (mle) per role on ``n_pairs`` pairs that judge answers, then each stored round of
    :func:`simulated_reviews` is judged again and its score inferred with that tau; all draws are
    shared across conditions. Columns: source, perception_noise, round, story, role, true_tau,
    fitted_tau, true_score, score, error, profile_covered, saturated.
    """
    table = pool.table()
    pairs = sample_pairs(table, n_pairs, seed=seed)
    rows = []
    for source in sources:
        for noise in perception_noises:
            perceived = {role: perceived_values(pool, role, source, noise, seed=seed) for role in role_taus}
            fitted = {}
            for k, (role, tau) in enumerate(role_taus.items()):
                judged = simulate_pairs(pairs, tau, seed=seed + 1000 * (k + 1), perceived=perceived[role],
                                        **judge_model)
                fitted[role] = fit_tau_detailed(judged, "mle").tau
            for i, r in enumerate(rounds):
                role = r["role"]
                rng = np.random.default_rng([seed, i])
                seen = float(r["true_score"]) + noise * rng.standard_normal()
                gap = seen - np.array([perceived[role][a["paper_id"]] for a in r["anchors"]])
                judgement, strength = simulate_judgements(gap, role_taus[role], rng, **judge_model)
                comparisons = [{"anchor_id": a["anchor_id"], "judgement": str(j), "strength": str(st)}
                               for a, j, st in zip(r["anchors"], judgement, strength)]
                score, diag = infer_score(r["anchors"], comparisons, fitted[role], grid_step)
                true = float(r["true_score"])
                rows.append({"source": source, "perception_noise": noise, "round": i, "story": r.get("story"),
                             "role": role, "true_tau": role_taus[role], "fitted_tau": fitted[role],
                             "true_score": true, "score": score, "error": score - true,
                             "profile_covered": diag["profile_ci_low"] <= true <= diag["profile_ci_high"],
                             "saturated": diag["saturated"]})
    return pd.DataFrame(rows)


def score_misspecification_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Per source and perception noise: fitted/true tau, bias, MAE, RMSE, mean move from the
    (score10, 0) condition, profile coverage and saturated share."""
    base = scores[(scores["source"] == "score10") & (scores["perception_noise"] == 0)].set_index("round")["score"]

    def one(g: pd.DataFrame) -> pd.Series:
        taus = g.groupby("role")[["fitted_tau", "true_tau"]].first()
        moved = (g.set_index("round")["score"] - base).abs().mean() if len(base) else float("nan")
        return pd.Series({"tau_ratio": float((taus["fitted_tau"] / taus["true_tau"]).mean()),
                          "bias": g["error"].mean(), "mae": g["error"].abs().mean(),
                          "rmse": float(np.sqrt((g["error"] ** 2).mean())), "moved": moved,
                          "profile_coverage": g["profile_covered"].mean(), "saturated_share": g["saturated"].mean()})

    return scores.groupby(["source", "perception_noise"], sort=False).apply(one, include_groups=False)


def _synthetic_stories(pool: SyntheticPool, n_stories: int, score_range: tuple[float, float],
                       seed: int) -> tuple[np.ndarray, np.ndarray, list[dict[str, Any]], dict[str, Any]]:
    """``(true scores, patterns, stories, their ground truth)`` of :func:`simulated_reviews`."""
    rng = np.random.default_rng(seed)
    truths = rng.uniform(*score_range, size=n_stories)
    story_patterns = rng.choice(sorted(pool.exemplars), size=n_stories)
    stories, extra = [], {}
    for i, true in enumerate(truths):
        story, truth = make_story(float(true), seed=seed * 100_000 + i)
        stories.append(story)
        extra |= truth
    return truths, story_patterns, stories, extra


def _review_row(i: int, pattern: Any, true: float, role: str, d: Mapping[str, Any],
                out: Mapping[str, Any]) -> dict[str, Any]:
    a_scores = [a["score10"] for a in out["audit"]["anchors"]]
    densify = out["audit"]["densify"]
    return {
        "story": i, "pattern_id": pattern, "role": role, "tau": d["tau"],
        "true_score": true, "score": d["score"], "error": d["score"] - true,
        "ci_low": d["ci_low"], "ci_high": d["ci_high"],
        "profile_ci_low": d["profile_ci_low"], "profile_ci_high": d["profile_ci_high"],
        "covered": d["ci_low"] <= true <= d["ci_high"],
        "profile_covered": d["profile_ci_low"] <= true <= d["profile_ci_high"],
        "saturated": d["saturated"], "saturated_at": d["saturated_at"],
        "n_anchors": d["n_anchors"], "max_anchor": max(a_scores), "min_anchor": min(a_scores),
        "densified": densify["triggered"], "score_hint": densify.get("score_hint", float("nan")),
        "n_extra": len(densify["extra_anchor_ids"]), "loss": d["loss"],
        "monotonic_violations": d["monotonic_violations"], "avg_strength": d["avg_strength"],
    }


def _review_all(critic: MultiAgentCritic, stories: Sequence[Mapping[str, Any]], truths: np.ndarray,
                patterns: np.ndarray, progress: bool) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Run ``critic`` on every story; the table and rounds of :func:`simulated_reviews`."""
    rows, rounds = [], []
    for i in tqdm(range(len(stories)), disable=not progress, desc="simulated reviews"):
        out = critic.review(stories[i], {"pattern_id": patterns[i]})
        anchors = out["audit"]["anchors"]
        for role, d in out["audit"]["role_details"].items():
            true = float(truths[i])
            rows.append(_review_row(i, patterns[i], true, role, d, out))
            rounds.append({"anchors": [{"anchor_id": f"A{k + 1}", **a} for k, a in enumerate(anchors)],
                           "comparisons": d["comparisons"], "tau": d["tau"], "true_score": true,
                           "story": i, "role": role})
    return pd.DataFrame(rows), rounds


def simulated_reviews(
    pool: SyntheticPool,
    judge: SimulatedJudge,
    n_stories: int = 60,
    score_range: tuple[float, float] = (1.5, 10.0),
    seed: int = 0,
    densify: bool = True,
    progress: bool = False,
    densify_mode: str = "original",
) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Review ``n_stories`` synthetic stories (true score uniform on ``score_range`` for every role,
    random pattern) with :class:`MultiAgentCritic` at the judge's true taus.

    Returns ``(table, rounds)``: a row per (story, role) (true and inferred score, error, intervals and
    their coverage, saturation, anchors, densify, loss diagnostics) and its final round (anchors,
    comparisons, tau, true score, story, role) for re-analysis.
    """
    truths, patterns, stories, extra = _synthetic_stories(pool, n_stories, score_range, seed)
    critic = MultiAgentCritic(pool.papers, BlindJudge(simulator=judge.with_truth(extra)),
                              pool.exemplars, taus=judge.taus, densify=densify, densify_mode=densify_mode)
    return _review_all(critic, stories, truths, patterns, progress)


#: Key of :func:`densify_comparison`'s run without a second round.
FIRST_ROUND = "first round only"


def densify_comparison(
    pool: SyntheticPool,
    judge: SimulatedJudge,
    n_stories: int = 60,
    score_range: tuple[float, float] = (1.5, 10.0),
    seed: int = 0,
    modes: Sequence[str] = DENSIFY_MODES,
    progress: bool = False,
) -> dict[str, tuple[pd.DataFrame, list[dict[str, Any]]]]:
    """:func:`simulated_reviews` without densify (key :data:`FIRST_ROUND`) and with each of ``modes``."""
    truths, patterns, stories, extra = _synthetic_stories(pool, n_stories, score_range, seed)
    blind = BlindJudge(simulator=judge.with_truth(extra))
    runs = {}
    for mode in (FIRST_ROUND, *modes):
        critic = MultiAgentCritic(pool.papers, blind, pool.exemplars, taus=judge.taus, densify=mode != FIRST_ROUND,
                                  densify_mode="original" if mode == FIRST_ROUND else mode)
        runs[mode] = _review_all(critic, stories, truths, patterns, progress)
    return runs


def recovery_summary(reviews: pd.DataFrame) -> pd.DataFrame:
    """Per role and overall: n, bias, MAE, RMSE, band and profile coverage and widths, saturation."""
    def one(g: pd.DataFrame) -> pd.Series:
        return pd.Series({
            "n": len(g), "bias": g["error"].mean(), "mae": g["error"].abs().mean(),
            "rmse": float(np.sqrt((g["error"] ** 2).mean())),
            "band_coverage": g["covered"].mean(), "band_width": (g["ci_high"] - g["ci_low"]).mean(),
            "profile_coverage": g["profile_covered"].mean(),
            "profile_width": (g["profile_ci_high"] - g["profile_ci_low"]).mean(),
            "saturated_share": g["saturated"].mean(),
        })
    per_role = reviews.groupby("role", sort=False).apply(one, include_groups=False)
    per_role.loc["all"] = one(reviews)
    return per_role


def saturation_table(reviews: pd.DataFrame, edges: Sequence[float] = (-10, -1, -0.5, 0, 0.5, 1, 10)) -> pd.DataFrame:
    """Share of scores stuck at 10 by how far the true score lies above the highest anchor."""
    gap = reviews["true_score"] - reviews["max_anchor"]
    binned = pd.cut(gap, list(edges))
    table = reviews.assign(gap_bin=binned).groupby("gap_bin", observed=True).agg(
        n=("score", "size"), saturated_high=("saturated_at", lambda s: float((s == "high").mean())),
        mean_true=("true_score", "mean"), mean_score=("score", "mean"), band_coverage=("covered", "mean"))
    table.index = table.index.astype(str)
    table.index.name = "true score - highest anchor"
    return table


def weight_scale_effect(rounds: Sequence[Mapping[str, Any]], scales: Sequence[float] = (0.25, 0.5, 1, 2, 4),
                        grid_step: float = 0.01) -> pd.DataFrame:
    """Re-infer every stored round with the anchor weights times ``scale``: band and profile width
    and coverage, and score_changed (never expected: the optimum is scale-free)."""
    rows = []
    bases = [infer_score(r["anchors"], r["comparisons"], r["tau"], grid_step)[0] for r in rounds]
    for scale in scales:
        per_round = []
        for r, base in zip(rounds, bases):
            anchors = [{**a, "weight": a["weight"] * scale} for a in r["anchors"]]
            score, d = infer_score(anchors, r["comparisons"], r["tau"], grid_step)
            true = r["true_score"]
            per_round.append({"band_width": d["ci_high"] - d["ci_low"],
                              "band_coverage": d["ci_low"] <= true <= d["ci_high"],
                              "profile_width": d["profile_ci_high"] - d["profile_ci_low"],
                              "profile_coverage": d["profile_ci_low"] <= true <= d["profile_ci_high"],
                              "score_changed": score != base})
        rows.append({"scale": scale, **{k: np.mean([x[k] for x in per_round]) for k in per_round[0]}})
    return pd.DataFrame(rows)


#: Bands of the first round's mean score for :func:`densify_by_hint`; the last holds the hints
#: whose bucket is centred on 10.
HINT_EDGES = (1.0, 4.0, 7.0, 9.0, 9.75, 10.0)


def first_round_hints(first: pd.DataFrame) -> pd.Series:
    """Per story, the mean of its :data:`FIRST_ROUND` role scores (the densify hint ``S_hint``)."""
    return first.groupby("story")["score"].mean()


def densify_by_hint(runs: Mapping[str, pd.DataFrame], edges: Sequence[float] = HINT_EDGES) -> pd.DataFrame:
    """Per run of :func:`densify_comparison` (its tables) and band of the first round's mean score
    (left-closed, the last closed): run, band, stories, anchors_added, saturated_share, mae."""
    hints = first_round_hints(runs[FIRST_ROUND])
    cut = pd.cut(hints.clip(upper=np.nextafter(edges[-1], -np.inf)), list(edges), right=False,
                 labels=[f"{lo:g}-{hi:g}" for lo, hi in zip(edges[:-1], edges[1:])])
    frames = []
    for run, table in runs.items():
        g = table.assign(band=table["story"].map(cut), abs_error=table["error"].abs()).groupby("band", observed=False)
        frames.append(pd.DataFrame({
            "run": run, "stories": g["story"].nunique(),
            "anchors_added": g.apply(lambda x: x.groupby("story")["n_extra"].first().mean(), include_groups=False),
            "saturated_share": g["saturated"].mean(), "mae": g["abs_error"].mean()}).reset_index())
    return pd.concat(frames, ignore_index=True)[["run", "band", "stories", "anchors_added", "saturated_share", "mae"]]


def densify_trigger_rates(
    reviews_rounds: Sequence[Mapping[str, Any]], loss_thresholds: Sequence[float] = (0.05,)
) -> pd.DataFrame:
    """Share of first rounds (:func:`simulated_reviews` with ``densify=False``) on which each densify
    trigger fires, per loss threshold: loss_threshold, loss, monotonic, strength, any."""
    rows = []
    diags = [infer_score(r["anchors"], r["comparisons"], r["tau"])[1] for r in reviews_rounds]
    for threshold in loss_thresholds:
        fired = [densify_reasons(diag, loss_threshold=threshold) for diag in diags]
        rows.append({"loss_threshold": threshold,
                     **{reason: np.mean([reason in f for f in fired]) for reason in ("loss", "monotonic", "strength")},
                     "any": np.mean([bool(f) for f in fired])})
    return pd.DataFrame(rows)


def loss_profile(anchors: Sequence[Mapping[str, Any]], comparisons: Sequence[Mapping[str, Any]], tau: float,
                 scales: Sequence[float] = (1.0,), grid_step: float = 0.01) -> pd.DataFrame:
    """Loss curve minus its minimum per weight scale: scale, S, excess_loss, profile_excess (Kish)."""
    grid = score_grid(grid_step)
    score10, y, sw, aw = observations(anchors, comparisons)
    frames = []
    for scale in scales:
        w = aw * sw * scale
        loss = loss_curve(score10, y, w, effective_tau(tau), grid)
        frames.append(pd.DataFrame({"scale": scale, "S": grid, "excess_loss": loss - loss.min(),
                                    "profile_excess": (loss - loss.min()) * kish_scale(w)}))
    return pd.concat(frames, ignore_index=True)


def recovery_table(recovery: pd.DataFrame, tolerance: float = 0.10) -> pd.DataFrame:
    """Per true tau and method: mean and sd of tau, relative error, share within ``tolerance``, SEs."""
    return recovery.groupby(["true_tau", "method"]).agg(
        mean_tau=("tau_hat", "mean"), sd_tau=("tau_hat", "std"), mean_rel_error=("rel_error", "mean"),
        within_tolerance=("rel_error", lambda e: float((e.abs() < tolerance).mean())),
        mean_se=("se", "mean"), mean_se_robust=("se_robust", "mean"), reps=("tau_hat", "size"))


def original_vs_this_run(settings: Mapping[str, tuple[Any, Any, str]]) -> pd.DataFrame:
    """The original method's settings beside this run's: quantity -> ``(original, this run, note)``."""
    return pd.DataFrame([{"quantity": k, "original method": o, "this run": t, "note": n}
                         for k, (o, t, n) in settings.items()])
