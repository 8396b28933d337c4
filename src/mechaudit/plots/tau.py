"""Figures of chapter 08 (tau and score recovery, the loss band, ties, a misspecified judge); each
shows the simulated judge, so it adds :data:`SIM_NOTE` under the caller's ``caption``."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from mechaudit.deprecation import backend_argument
from mechaudit.plots.style import PALETTE, legend_outside, new_figure
from mechaudit.plots.style import caption as draw_caption
from mechaudit.report.labels import label as label_of

METHOD_COLOURS = {"grid": PALETTE["reference"], "mle": PALETTE["llm"]}
SIM_NOTE = "Simulated judge with known tau on a synthetic pool; not an LLM"


@backend_argument(1)  # the previous release's backend=, for one release
def tau_recovery_plot(recovery: pd.DataFrame, width: float = 6.4, height: float = 3.6, *, caption: str = ""):
    """Fitted vs true tau per method (one dot per repetition), with the identity and a +-10% band
    (``recovery``: :func:`mechaudit.tau.studies.tau_recovery`)."""
    fig, ax = new_figure(width=width, height=height)
    taus = np.sort(recovery["true_tau"].unique())
    line = np.linspace(taus.min() * 0.8, taus.max() * 1.15, 50)
    ax.fill_between(line, 0.9 * line, 1.1 * line, color=PALETTE["muted"], alpha=0.2, label="within 10%")
    ax.plot(line, line, color=PALETTE["truth"], lw=1, label="fitted = true")
    for k, (method, g) in enumerate(recovery.groupby("method", sort=True)):
        offset = (k - 0.5) * 0.02 * taus.max()
        ax.scatter(g["true_tau"] + offset, g["tau_hat"], s=14, alpha=0.7, color=METHOD_COLOURS.get(method),
                   label=f"fitted: {label_of(method).lower()}")
    ax.set_xlabel("true τ of the simulated judge (score points)")
    ax.set_ylabel("fitted τ (score points)")
    legend_outside(ax, "above")
    return draw_caption(fig, caption, SIM_NOTE)


@backend_argument(1)  # the previous release's backend=, for one release
def score_recovery_plot(reviews: pd.DataFrame, width: float = 6.4, height: float = 4.0, *, caption: str = ""):
    """Inferred vs true score with the loss + 1.92 band as error bars; saturated scores marked."""
    fig, ax = new_figure(width=width, height=height)
    ax.plot([1, 10], [1, 10], color=PALETTE["truth"], lw=1, label="inferred = true")
    for saturated, colour, label in ((False, PALETTE["reference"], "interior optimum"),
                                     (True, PALETTE["llm"], "optimum at a grid end")):
        g = reviews[reviews["saturated"] == saturated]
        err = np.vstack([g["score"] - g["ci_low"], g["ci_high"] - g["score"]])
        ax.errorbar(g["true_score"], g["score"], yerr=err, fmt="o", ms=3, lw=0.6, alpha=0.6,
                    color=colour, label=label)
    ax.set_xlabel("true score of the synthetic story (1-10 scale)")
    ax.set_ylabel("inferred score (1-10 scale)")
    ax.set_xlim(0.8, 10.4)
    ax.set_ylim(0.8, 10.4)
    legend_outside(ax, "above")
    return draw_caption(fig, caption, SIM_NOTE)


def _cut_at(values: np.ndarray, top: float) -> np.ndarray:
    """``values`` with everything above ``top`` blanked (NaN), so a curve ends where it leaves ``top``."""
    return np.where(values <= top, values, np.nan)


@backend_argument(1)  # the previous release's backend=, for one release
def loss_band_plot(profile: pd.DataFrame, width: float = 6.4, height: float = 3.8, *, caption: str = ""):
    """Excess loss over the score grid for several weight scales, with the 1.92 threshold and the
    scale-free (Kish-rescaled) curve. Curves stop at a loss of 8; each weight scale is labelled
    where its curve stops on the left, so the legend keeps three entries. ``profile`` from
    :func:`mechaudit.tau.studies.loss_profile`."""
    fig, ax = new_figure(width=width, height=height)
    scales = sorted(profile["scale"].unique())
    shades = np.linspace(0.35, 1.0, len(scales))
    top = 8.0
    for k, (scale, shade) in enumerate(zip(scales, shades)):
        g = profile[profile["scale"] == scale]
        x, y = g["S"].to_numpy(), _cut_at(g["excess_loss"].to_numpy(), top)
        ax.plot(x, y, color=PALETTE["reference"], alpha=shade, lw=1.2,
                label="loss, weights × factor" if k == len(scales) - 1 else None)
        shown = np.flatnonzero(~np.isnan(y))
        if len(shown) and shown[0] > 0:  # the curve leaves the top on the left: label it there
            ax.annotate(f"×{scale:g}", (x[shown[0]], top), xytext=(0, 3), textcoords="offset points",
                        ha="center", va="bottom", color=PALETTE["reference"])
        elif len(shown):  # a flat curve: label its left end
            ax.annotate(f"×{scale:g}", (x[0], y[0]), xytext=(2, 3), textcoords="offset points",
                        ha="left", va="bottom", color=PALETTE["reference"])
    g = profile[profile["scale"] == scales[0]]
    ax.plot(g["S"], _cut_at(g["profile_excess"].to_numpy(), top), color=PALETTE["llm"], lw=1.6, ls="--",
            label="Kish-rescaled (any factor)")
    ax.axhline(1.92, color=PALETTE["truth"], lw=0.8, ls=":", label="1.92 threshold")
    ax.set_ylim(0, top * 1.1)
    ax.set_yticks(range(0, int(top) + 1, 2))
    ax.set_xlabel("candidate score S (1-10 scale)")
    ax.set_ylabel("loss above its minimum\n(weighted cross-entropy)")
    legend_outside(ax, "above")
    return draw_caption(fig, caption, SIM_NOTE)


@backend_argument(1)  # the previous release's backend=, for one release
def weight_scale_plot(scale_effect: pd.DataFrame, width: float = 7.0, height: float = 3.6, *, caption: str = ""):
    """Interval width (top) and empirical coverage (bottom) vs the factor applied to all weights (log x
    axis); ``height`` is each panel's."""
    fig, (top, bottom) = new_figure(nrows=2, width=width, height=2 * height)
    for col, label, colour in (("band", "loss + 1.92 band", PALETTE["reference"]),
                               ("profile", "Kish-rescaled LR interval", PALETTE["llm"])):
        top.plot(scale_effect["scale"], scale_effect[f"{col}_width"], "o-", color=colour, label=label)
        bottom.plot(scale_effect["scale"], scale_effect[f"{col}_coverage"], "o-", color=colour, label=label)
    bottom.axhline(0.95, color=PALETTE["truth"], lw=0.8, ls=":", label="nominal 95%")
    scales = sorted(scale_effect["scale"].unique())
    for ax in (top, bottom):
        ax.set_xscale("log", base=2)
        ax.set_xticks(scales, [f"×{v:g}" for v in scales])  # plain numbers: a power's exponent is small text
        ax.minorticks_off()
        ax.set_xlabel("factor on all anchor weights (log scale)")
    top.set_xlabel("")
    top.set_ylabel("mean interval width\n(score points)")
    bottom.set_ylabel("share of intervals\nholding the true score")
    bottom.set_ylim(0, 1.05)
    legend_outside(bottom, "above", frameon=False)
    return draw_caption(fig, caption, SIM_NOTE)


@backend_argument(1)  # the previous release's backend=, for one release
def tie_effect_plot(ties: pd.DataFrame, width: float = 6.4, height: float = 3.4, *, caption: str = ""):
    """Fitted tau (mle) vs the observed share of ties, per tie mode of the simulated judge."""
    fig, ax = new_figure(width=width, height=height)
    colours = {"calibrated": PALETTE["reference"], "abstain": PALETTE["llm"]}
    for mode, g in ties.groupby("tie_mode", sort=False):
        ax.plot(100 * g["tie_share"], g["tau_mle"], "o-", color=colours.get(mode), label=f"ties: {mode}")
    ax.axhline(float(ties["true_tau"].iloc[0]), color=PALETTE["truth"], lw=0.8, ls=":", label="true τ")
    ax.set_xlabel("tie answers (% of all answers)")
    ax.set_ylabel("fitted τ, mle (score points)")
    legend_outside(ax, "above")
    return draw_caption(fig, caption, SIM_NOTE)


SOURCE_STYLES = {"score10": ("-", "judge sees the 1-10 score"), "quality": ("--", "judge sees latent quality")}
#: The two fits of the misspecification figure: colour and legend label.
MISSPEC_METHODS = {"mle": (PALETTE["llm"], "max. likelihood, strength weights"),
                   "mle_no_strength": (PALETTE["reference"], "max. likelihood, strengths ignored")}


@backend_argument(1)  # the previous release's backend=, for one release
def misspecified_tau_plot(mis: pd.DataFrame, width: float = 7.0, height: float = 3.8, *, caption: str = ""):
    """Mean fitted tau vs the judge's perception noise, one panel per true tau (black line): each fit
    (colour) per perception source (line style), and the noise-only approximation (grey dotted).
    ``mis``: :func:`mechaudit.tau.studies.tau_misspecification`."""
    taus = sorted(mis["true_tau"].unique())
    fig, axes = new_figure(nrows=len(taus), width=width, height=2.4 * len(taus) + 1.8, sharex=True)
    axes = np.atleast_1d(axes)
    mean = mis.groupby(["true_tau", "source", "method", "perception_noise"])[["tau_hat", "approx_tau"]].mean()
    present = set(mean.index.droplevel(3))
    for ax, tau in zip(axes, taus):
        for source, (ls, _) in SOURCE_STYLES.items():
            for method, (colour, _) in MISSPEC_METHODS.items():
                if (tau, source, method) in present:
                    g = mean.loc[(tau, source, method)]
                    ax.plot(g.index, g["tau_hat"], ls, marker="o", ms=3, color=colour)
        ax.axhline(tau, color=PALETTE["truth"], lw=0.8)
        if (tau, "score10", "mle") in present:
            approx = mean.loc[(tau, "score10", "mle")]["approx_tau"]
            ax.plot(approx.index, approx.to_numpy(), ":", color=PALETTE["muted"])
        ax.set_title(f"true τ {tau:g} (black line)")
    axes[-1].set_xlabel("perception noise of the judge (score points)")
    axes[len(axes) // 2].set_ylabel("mean fitted τ (score points)")
    # four legend entries: colour = fit, line style = what the judge sees
    handles = [Line2D([], [], color=c, marker="o", ms=3, label=label) for c, label in MISSPEC_METHODS.values()]
    handles += [Line2D([], [], color=PALETTE["muted"], ls=ls, label=label) for ls, label in SOURCE_STYLES.values()]
    fig.legend(handles=handles, loc="outside upper center", ncols=1, frameon=False)
    return draw_caption(fig, caption, SIM_NOTE)


@backend_argument(1)  # the previous release's backend=, for one release
def misspecified_score_plot(table: pd.DataFrame, width: float = 7.0, height: float = 3.4, *, caption: str = ""):
    """Score error (MAE, top) and the mean move from the well-specified scores (bottom) vs perception
    noise, per perception source; ``height`` is each panel's. ``table`` from
    :func:`mechaudit.tau.studies.score_misspecification_table`."""
    fig, (top, bottom) = new_figure(nrows=2, width=width, height=2 * height)
    for source, (ls, label) in SOURCE_STYLES.items():
        if source not in table.index.get_level_values(0):
            continue
        g = table.loc[source]
        colour = PALETTE["reference"] if source == "score10" else PALETTE["embedding"]
        top.plot(g.index, g["mae"], ls, marker="o", color=colour, label=label)
        bottom.plot(g.index, g["moved"], ls, marker="o", color=colour, label=label)
    top.set_ylabel("mean error against the\ntrue score (score points)")
    bottom.set_ylabel("mean move from the well-\nspecified score (score points)")
    for ax in (top, bottom):
        ax.set_ylim(bottom=0)
    bottom.set_xlabel("perception noise of the judge (score points)")
    legend_outside(top, "above", frameon=False)
    return draw_caption(fig, caption, SIM_NOTE)


#: Colour, line style and legend label per run of the densify comparison.
DENSIFY_STYLES = {"first round only": (PALETTE["muted"], "--", "first round only"),
                  "original": (PALETTE["reference"], "-", "original (default)"),
                  "fill": (PALETTE["embedding"], "-", "fill"),
                  "floor": (PALETTE["paper"], ":", "floor (book's first version)")}


@backend_argument(1)  # the previous release's backend=, for one release
def densify_plot(by_hint: pd.DataFrame, width: float = 7.0, height: float = 3.4, *, caption: str = ""):
    """Anchors densify adds per story (top) and % of scores on a grid end (bottom) against the band
    of the first round's mean score, one line per run; ``height`` is each panel's (``by_hint``:
    :func:`mechaudit.tau.studies.densify_by_hint`)."""
    fig, (top, bottom) = new_figure(nrows=2, width=width, height=2 * height)
    for run, g in by_hint.groupby("run", sort=False):
        colour, ls, label = DENSIFY_STYLES.get(str(run), (PALETTE["muted"], "-", str(run)))
        x = np.arange(len(g))
        top.plot(x, g["anchors_added"], ls, marker="o", ms=4, color=colour, label=label)
        bottom.plot(x, 100 * g["saturated_share"], ls, marker="o", ms=4, color=colour)
    bands = list(by_hint["band"].astype(str).unique())
    for ax in (top, bottom):
        ax.set_xticks(range(len(bands)), bands)
        ax.set_ylim(bottom=0)
    bottom.set_xlabel("first round's mean score (score points)")
    top.set_ylabel("anchors added per story")
    bottom.set_ylabel("scores stuck at 1 or 10 (%)")
    legend_outside(top, "above", frameon=False)
    return draw_caption(fig, caption, SIM_NOTE)
