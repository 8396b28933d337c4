"""Figures of chapter 08: tau recovery, score recovery, the loss band, the tie effect and a
misspecified judge (fitted tau and inferred scores)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mechaudit.plots.style import PALETTE, backend_caption, legend_outside, new_figure

METHOD_COLOURS = {"grid": PALETTE["reference"], "mle": PALETTE["llm"]}
SIM_NOTE = "Simulated judge with known tau on a synthetic pool; not an LLM"


def tau_recovery_plot(recovery: pd.DataFrame, backend: str, width: float = 6.4, height: float = 3.6):
    """Fitted vs true tau per method (one dot per repetition), with the identity and a +-10% band.

    ``recovery``: columns true_tau, method, tau_hat (from :func:`mechaudit.tau.studies.tau_recovery`).
    """
    fig, ax = new_figure(width=width, height=height)
    taus = np.sort(recovery["true_tau"].unique())
    line = np.linspace(taus.min() * 0.8, taus.max() * 1.15, 50)
    ax.fill_between(line, 0.9 * line, 1.1 * line, color=PALETTE["muted"], alpha=0.2, label="within 10%")
    ax.plot(line, line, color=PALETTE["truth"], lw=1, label="fitted = true")
    for k, (method, g) in enumerate(recovery.groupby("method", sort=True)):
        offset = (k - 0.5) * 0.02 * taus.max()
        ax.scatter(g["true_tau"] + offset, g["tau_hat"], s=14, alpha=0.7, color=METHOD_COLOURS.get(method),
                   label=f"fitted ({method})")
    ax.set_xlabel("true tau of the simulated judge")
    ax.set_ylabel("fitted tau")
    legend_outside(ax, "right", fontsize=8, frameon=False)
    backend_caption(fig, backend, SIM_NOTE)
    return fig


def score_recovery_plot(reviews: pd.DataFrame, backend: str, width: float = 6.4, height: float = 4.0):
    """Inferred vs true score with the loss + 1.92 band as error bars; saturated scores marked."""
    fig, ax = new_figure(width=width, height=height)
    ax.plot([1, 10], [1, 10], color=PALETTE["truth"], lw=1, label="inferred = true")
    for saturated, colour, label in ((False, PALETTE["reference"], "interior optimum"),
                                     (True, PALETTE["llm"], "optimum at a grid end")):
        g = reviews[reviews["saturated"] == saturated]
        err = np.vstack([g["score"] - g["ci_low"], g["ci_high"] - g["score"]])
        ax.errorbar(g["true_score"], g["score"], yerr=err, fmt="o", ms=3, lw=0.6, alpha=0.6,
                    color=colour, label=label)
    ax.set_xlabel("true score of the synthetic story")
    ax.set_ylabel("inferred score (1-10 grid)")
    ax.set_xlim(0.8, 10.4)
    ax.set_ylim(0.8, 10.4)
    legend_outside(ax, "right", fontsize=8, frameon=False)
    backend_caption(fig, backend, SIM_NOTE)
    return fig


def loss_band_plot(profile: pd.DataFrame, backend: str, width: float = 6.4, height: float = 3.6):
    """Excess loss over the score grid for several weight scales, with the 1.92 threshold, and the
    scale-free (Kish-rescaled) curve. ``profile`` from :func:`mechaudit.tau.studies.loss_profile`."""
    fig, ax = new_figure(width=width, height=height)
    scales = sorted(profile["scale"].unique())
    shades = np.linspace(0.35, 1.0, len(scales))
    for scale, shade in zip(scales, shades):
        g = profile[profile["scale"] == scale]
        ax.plot(g["S"], g["excess_loss"], color=PALETTE["reference"], alpha=shade, lw=1.2,
                label=f"weights x {scale:g}")
    g = profile[profile["scale"] == scales[0]]
    ax.plot(g["S"], g["profile_excess"], color=PALETTE["llm"], lw=1.6, ls="--", label="Kish-rescaled (any scale)")
    ax.axhline(1.92, color=PALETTE["truth"], lw=0.8, ls=":", label="1.92 band threshold")
    ax.set_ylim(0, 8)
    ax.set_xlabel("score S")
    ax.set_ylabel("loss(S) - min loss")
    legend_outside(ax, "right", fontsize=8, frameon=False)
    backend_caption(fig, backend, SIM_NOTE)
    return fig


def weight_scale_plot(scale_effect: pd.DataFrame, backend: str, width: float = 7.0, height: float = 3.6):
    """Interval width and empirical coverage vs the factor applied to all weights (log x axis)."""
    fig, (left, right) = new_figure(ncols=2, width=width, height=height)
    for col, label, colour in (("band", "loss + 1.92 band", PALETTE["reference"]),
                               ("profile", "Kish-rescaled LR interval", PALETTE["llm"])):
        left.plot(scale_effect["scale"], scale_effect[f"{col}_width"], "o-", color=colour, label=label)
        right.plot(scale_effect["scale"], scale_effect[f"{col}_coverage"], "o-", color=colour, label=label)
    right.axhline(0.95, color=PALETTE["truth"], lw=0.8, ls=":", label="nominal 95%")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("factor on all weights")
    left.set_ylabel("mean interval width (score points)")
    right.set_ylabel("empirical coverage")
    right.set_ylim(0, 1.05)
    handles, labels = right.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=3, fontsize=8, frameon=False)
    backend_caption(fig, backend, SIM_NOTE)
    return fig


def tie_effect_plot(ties: pd.DataFrame, backend: str, width: float = 6.4, height: float = 3.4):
    """Fitted tau (mle) vs the observed share of ties, per tie mode of the simulated judge."""
    fig, ax = new_figure(width=width, height=height)
    colours = {"calibrated": PALETTE["reference"], "abstain": PALETTE["llm"]}
    for mode, g in ties.groupby("tie_mode", sort=False):
        ax.plot(g["tie_share"], g["tau_mle"], "o-", color=colours.get(mode), label=f"ties: {mode}")
    ax.axhline(float(ties["true_tau"].iloc[0]), color=PALETTE["truth"], lw=0.8, ls=":", label="true tau")
    ax.set_xlabel("share of tie answers")
    ax.set_ylabel("fitted tau (mle)")
    legend_outside(ax, "right", fontsize=8, frameon=False)
    backend_caption(fig, backend, SIM_NOTE)
    return fig


SOURCE_STYLES = {"score10": ("-", "judge sees score10"), "quality": ("--", "judge sees latent quality")}


def misspecified_tau_plot(mis: pd.DataFrame, backend: str, width: float = 7.0, height: float = 3.6):
    """Mean fitted tau vs the judge's perception noise, one panel per true tau: mle for each
    perception source, the mle that ignores strengths, and the noise-only approximation.

    ``mis``: columns source, perception_noise, true_tau, method, tau_hat, approx_tau (from
    :func:`mechaudit.tau.studies.tau_misspecification`).
    """
    taus = sorted(mis["true_tau"].unique())
    fig, axes = new_figure(ncols=len(taus), width=width, height=height, sharey=False)
    axes = np.atleast_1d(axes)
    mean = mis.groupby(["true_tau", "source", "method", "perception_noise"])[["tau_hat", "approx_tau"]].mean()
    for ax, tau in zip(axes, taus):
        for source, (ls, label) in SOURCE_STYLES.items():
            for method, colour, suffix in (("mle", PALETTE["llm"], ""),
                                           ("mle_no_strength", PALETTE["reference"], ", strengths ignored")):
                if (tau, source, method) not in mean.index.droplevel(3):
                    continue
                g = mean.loc[(tau, source, method)]
                ax.plot(g.index, g["tau_hat"], ls, marker="o", ms=3, color=colour, label=label + suffix)
        approx = mean.loc[(tau, "score10", "mle")] if (tau, "score10", "mle") in mean.index.droplevel(3) else None
        if approx is not None:
            ax.plot(approx.index, approx["approx_tau"], ":", color=PALETTE["muted"],
                    label="noise-only approximation")
        ax.axhline(tau, color=PALETTE["truth"], lw=0.8, label="true tau")
        ax.set_title(f"true tau {tau:g}", fontsize=10)
    axes[len(axes) // 2].set_xlabel("perception noise of the judge (score points)")
    axes[0].set_ylabel("mean fitted tau")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=3, fontsize=8, frameon=False)
    backend_caption(fig, backend, SIM_NOTE)
    return fig


def misspecified_score_plot(table: pd.DataFrame, backend: str, width: float = 7.0, height: float = 3.4):
    """Score error (MAE) and the mean move from the well-specified scores vs perception noise, per
    perception source. ``table`` from :func:`mechaudit.tau.studies.score_misspecification_table`."""
    fig, (left, right) = new_figure(ncols=2, width=width, height=height)
    for source, (ls, label) in SOURCE_STYLES.items():
        if source not in table.index.get_level_values(0):
            continue
        g = table.loc[source]
        colour = PALETTE["reference"] if source == "score10" else PALETTE["embedding"]
        left.plot(g.index, g["mae"], ls, marker="o", color=colour, label=label)
        right.plot(g.index, g["moved"], ls, marker="o", color=colour, label=label)
    left.set_ylabel("mean |inferred - true score|")
    right.set_ylabel("mean |score - well-specified score|")
    for ax in (left, right):
        ax.set_xlabel("perception noise (score points)")
        ax.set_ylim(bottom=0)
    handles, labels = left.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center", ncols=2, fontsize=8, frameon=False)
    backend_caption(fig, backend, SIM_NOTE)
    return fig
