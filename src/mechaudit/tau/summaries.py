"""Summary statistics of chapter 08's studies (frames of :mod:`mechaudit.tau.studies`), as plain
numbers: percentages in %, taus and scores in their own units. The chapter only presents them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from mechaudit.tau import studies
from mechaudit.tau.simulate import SyntheticPool


def pool_summary(pool: SyntheticPool) -> dict[str, float]:
    """Papers, patterns, papers of the largest pattern, and the root-mean-square gap between anchor
    score and latent quality (score points)."""
    table = pool.table()
    per_pattern = table.groupby("pattern_id").size()
    return {"n_papers": len(table), "n_patterns": len(per_pattern), "papers_per_pattern": int(per_pattern.max()),
            "score10_quality_rmse": float(((table["score10"] - table["quality"]) ** 2).mean() ** 0.5)}


def within_tolerance_pct(recovery: pd.DataFrame, tolerance: float) -> float:
    """% of the fits of a ``tau_recovery`` frame within ``tolerance`` (relative) of the true tau."""
    return 100 * float((recovery["rel_error"].abs() < tolerance).mean())


def grid_mle_gap(fits: pd.DataFrame, conditions: Sequence[str]) -> float:
    """Largest |grid - mle| fitted tau over the ``conditions`` (columns of ``fits``, with ``rep``)."""
    both = fits.pivot_table(index=[*conditions, "rep"], columns="method", values="tau_hat")
    return float((both["grid"] - both["mle"]).abs().max())


def recovery_summary(recovery: pd.DataFrame, tolerance: float) -> dict[str, Any]:
    """Of a ``tau_recovery`` frame: fits and % within ``tolerance``, the grid-mle gap, the smallest and
    largest true tau with the mle's sd there, the mle's reported SEs over its observed sd (mean over
    the true taus) and its mean |relative error| in %."""
    mle = studies.recovery_table(recovery, tolerance).xs("mle", level="method")
    return {"within10_pct": within_tolerance_pct(recovery, tolerance), "n_fits": len(recovery),
            "grid_mle_gap": grid_mle_gap(recovery, ["true_tau"]),
            "tau_small": float(mle.index.min()), "tau_large": float(mle.index.max()),
            "sd_small": float(mle["sd_tau"].iloc[0]), "sd_large": float(mle["sd_tau"].iloc[-1]),
            "se_over_sd": float((mle["mean_se"] / mle["sd_tau"]).mean()),
            "se_robust_over_sd": float((mle["mean_se_robust"] / mle["sd_tau"]).mean()),
            "mean_error_pct": 100 * float(recovery.loc[recovery["method"] == "mle", "rel_error"].abs().mean())}


def review_summary(reviews: pd.DataFrame) -> dict[str, float]:
    """Of a reviews frame (``error``, ``saturated``, ``saturated_at``): MAE and count of the scores with
    an interior optimum, % on a grid end, scores stuck at 1, all scores."""
    interior = reviews[~reviews["saturated"]]
    return {"interior_mae": float(interior["error"].abs().mean()), "interior_n": len(interior),
            "saturated_pct": 100 * float(reviews["saturated"].mean()),
            "saturated_low_n": int((reviews["saturated_at"] == "low").sum()), "n_scores": len(reviews)}


def densify_effect(runs: Mapping[str, pd.DataFrame], top_hint: float,
                   labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One column per run of ``studies.densify_comparison`` (tables only; named by ``labels``): MAE and
    RMSE (score points), coverage of both intervals, % saturated, anchors added per story, and for the
    stories whose first-round mean score is at least ``top_hint`` their % saturated and anchors added."""
    hints = studies.first_round_hints(runs[studies.FIRST_ROUND])
    top = set(hints.index[hints >= top_hint])
    columns = {}
    for run, table in runs.items():
        summary = studies.recovery_summary(table).loc["all"]
        added = table.groupby("story")["n_extra"].first()
        at_top = table[table["story"].isin(top)]
        columns[(labels or {}).get(run, run)] = {
            "MAE (score points)": summary["mae"], "RMSE (score points)": summary["rmse"],
            "1.92 band coverage": summary["band_coverage"], "Kish coverage": summary["profile_coverage"],
            "% saturated": 100 * summary["saturated_share"], "anchors added per story": added.mean(),
            f"% saturated, first round ≥ {top_hint:g}": 100 * at_top["saturated"].mean(),
            f"anchors added, first round ≥ {top_hint:g}": added.loc[sorted(top)].mean(),
        }
    return pd.DataFrame(columns).rename_axis("all roles")


def misspec_summary(misspec: pd.DataFrame) -> dict[str, Any]:
    """Mean fitted tau of a ``tau_misspecification`` frame (needs perception noise 0) at the smallest
    (``lo``), middle (``mid``) and largest (``hi``) true tau: the judge that sees latent quality (mle,
    with its range over the repetitions), the well-specified judge (``base``), the noisiest judge
    (``noisy``; ``_plain``: strengths ignored) and its noise-only approximation (``approx``); the
    largest noise and the grid-mle gap."""
    mean_tau = studies.misspecification_table(misspec)["mean_tau"]
    taus = sorted(misspec["true_tau"].unique())
    t = {"lo": taus[0], "mid": taus[len(taus) // 2], "hi": taus[-1]}
    noise_max = float(misspec["perception_noise"].max())
    q_runs = misspec[(misspec["source"] == "quality") & (misspec["perception_noise"] == 0)
                     & (misspec["method"] == "mle")]
    out: dict[str, Any] = {"noise_max": f"{noise_max:g}", "tau_hi": float(t["hi"])}
    for name in ("lo", "mid"):
        fits = q_runs.loc[q_runs["true_tau"] == t[name], "tau_hat"]
        out |= {f"tau_{name}": float(t[name]), f"quality_{name}": float(mean_tau[("quality", 0.0, t[name], "mle")]),
                f"quality_{name}_min": float(fits.min()), f"quality_{name}_max": float(fits.max())}
    for name in ("lo", "mid", "hi"):
        out[f"base_{name}"] = float(mean_tau[("score10", 0.0, t[name], "mle")])
    for name in ("lo", "hi"):
        out |= {f"noisy_{name}": float(mean_tau[("score10", noise_max, t[name], "mle")]),
                f"noisy_{name}_plain": float(mean_tau[("score10", noise_max, t[name], studies.NO_STRENGTH)]),
                f"approx_{name}": float(studies.noisy_judge_tau(t[name], noise_max))}
    out["grid_mle_maxdiff"] = grid_mle_gap(misspec, ["source", "perception_noise", "true_tau"])
    return out
