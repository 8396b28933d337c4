"""Figures of the equivalence-rule chapters (05 perturbations, 07 sensitivity; 06 in ``plots.rubric``)."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from mechaudit.plots.style import PALETTE, backend_caption, colour_of, legend_outside, new_figure

#: Colour per kind of perturbation (Okabe-Ito, distinct from the method colours' meaning).
KIND_COLOURS = ["#009E73", "#56B4E9", "#D55E00", "#CC79A7", "#E69F00", "#0072B2"]
#: Marker, line style and marker size per series, so lines that coincide stay visible (the later
#: series is drawn smaller on top of the earlier one).
SERIES_STYLES = [("o", "-", 7), ("s", "--", 5.5), ("^", "-.", 4.5), ("v", ":", 3.5), ("D", "-", 3), ("x", "--", 3)]


def _grouped_bars(ax, pct: pd.DataFrame, paper: pd.DataFrame | None, hatch_of=None) -> list:
    """Bars of ``pct`` (rows = groups on x, columns = methods, values in %; NaN = not run, drawn
    as a "not run" label), paper values as diamonds over the column of the same name. Returns the
    legend handles (including one "not run" patch per method without values)."""
    n_groups, n_methods = pct.shape
    width = 0.8 / max(n_methods, 1)
    x = np.arange(n_groups)
    paper_labelled = False
    not_run = []
    for k, method in enumerate(pct.columns):
        pos = x - 0.4 + width * (k + 0.5)
        values = pct[method].to_numpy(dtype=float)
        colour = colour_of(method, k)
        hatch = hatch_of(method) if hatch_of else None
        run = ~np.isnan(values)
        if run.any():
            ax.bar(pos[run], values[run], width=width * 0.95, color=colour, label=method,
                   hatch=hatch, edgecolor="white" if hatch else None, alpha=0.9)
            zero = run & (values == 0)  # a 0 % bar has no height: mark it with a tick at 0
            ax.scatter(pos[zero], values[zero], marker="_", s=(60 * width) ** 2 / 4, color=colour,
                       linewidths=2.5, zorder=4, clip_on=False)  # above a paper diamond at 0
        else:
            not_run.append(Patch(facecolor="white", edgecolor=colour, hatch=hatch, label=f"{method}: not run"))
        for p in pos[~run]:  # a method that was not run gets no bar (a 0 bar would read as 0 %)
            ax.text(p, 2, "not run", rotation=90, ha="center", va="bottom", fontsize=7,
                    color=PALETTE["muted"])
        if paper is not None and method in paper.columns:
            ref = paper[method].reindex(pct.index).to_numpy(dtype=float)
            keep = ~np.isnan(ref)
            if keep.any():
                ax.scatter(pos[keep], ref[keep], marker="D", s=28, color=PALETTE["paper"],
                           edgecolor="black", linewidth=0.6, zorder=3,
                           label=None if paper_labelled else "paper")
                paper_labelled = True
    ax.set_xticks(x, [textwrap.fill(str(i).replace("_", " "), 12) for i in pct.index])
    ax.set_xlim(-0.5, n_groups - 0.5)
    ax.set_ylim(-3, 105)
    ax.set_ylabel("% of valid pairs judged different")
    return ax.get_legend_handles_labels()[0] + not_run


def perturbation_bars(pct: pd.DataFrame, paper: pd.DataFrame | None, backend: str, extra: str = ""):
    """% judged different per perturbation kind (rows) and rule (columns); paper values as diamonds.

    ``pct``: DataFrame indexed by kind, one column per rule, values in percent (NaN = not run).
    ``paper``: the paper's values in the same layout (columns it has), or None.
    """
    fig, ax = new_figure(width=7.0, height=4.0)
    handles = _grouped_bars(ax, pct, paper, hatch_of=lambda m: "//" if "matched" in m else None)
    legend_outside(ax, where="below", handles=handles, fontsize=8, ncols=3)
    backend_caption(fig, backend, extra)
    return fig


def threshold_sweep_lines(sweep: pd.DataFrame, paper_thresholds: dict[str, float], backend: str, extra: str = ""):
    """% judged different vs threshold, one panel per rule, one line per perturbation kind.

    ``sweep``: long DataFrame with columns rule, threshold, kind, pct_different.
    ``paper_thresholds``: rule -> the threshold in use, by default the paper's (dashed vertical line).
    """
    rules = list(dict.fromkeys(sweep["rule"]))
    fig, axes = new_figure(ncols=len(rules), width=min(7.0, 3.0 * len(rules) + 1.4), height=3.4, sharey=True)
    axes = np.atleast_1d(axes)
    for ax, rule in zip(axes, rules):
        part = sweep[sweep["rule"] == rule]
        for k, kind in enumerate(dict.fromkeys(part["kind"])):
            line = part[part["kind"] == kind]
            marker, style, size = SERIES_STYLES[k % len(SERIES_STYLES)]
            ax.plot(line["threshold"], line["pct_different"], marker=marker, ls=style, ms=size, lw=1.2,
                    color=KIND_COLOURS[k % len(KIND_COLOURS)], label=str(kind).replace("_", " "), zorder=2 + k)
        if rule in paper_thresholds:
            ax.axvline(paper_thresholds[rule], color=PALETTE["paper"], ls="--", lw=1, label="threshold in use")
        ax.set_title(rule)
        ax.set_xlabel("threshold (cosine)")
        ax.set_ylim(-3, 103)
    axes[0].set_ylabel("% judged different")
    legend_outside(axes[-1], where="right", fontsize=8)
    backend_caption(fig, backend, extra)
    return fig


def agreement_vs_threshold(sweep: pd.DataFrame, paper_thresholds: dict[str, float], backend: str, extra: str = ""):
    """Raw agreement and Cohen's kappa with each other method vs threshold.

    ``sweep``: long DataFrame with columns rule, threshold, other, raw_agreement, kappa; one row of
    panels per rule (raw agreement left, kappa right), one line per other method.
    """
    rules = list(dict.fromkeys(sweep["rule"]))
    fig, axes = new_figure(ncols=2, nrows=len(rules), width=7.0, height=2.6 * len(rules) + 0.8, sharex="row")
    axes = np.atleast_2d(axes)
    for row, rule in zip(axes, rules):
        part = sweep[sweep["rule"] == rule]
        for k, other in enumerate(dict.fromkeys(part["other"])):
            line = part[part["other"] == other]
            colour = colour_of(other, k)
            marker, style, size = SERIES_STYLES[k % len(SERIES_STYLES)]
            for ax, column in zip(row, ("raw_agreement", "kappa")):
                ax.plot(line["threshold"], line[column], color=colour, label=other, marker=marker, ls=style,
                        ms=size * 0.6, lw=1.2, zorder=2 + k)
        for ax, what in zip(row, ("raw agreement", "Cohen's kappa")):
            if rule in paper_thresholds:
                ax.axvline(paper_thresholds[rule], color=PALETTE["paper"], ls="--", lw=1)
            ax.set_title(f"{rule}: {what}")
            ax.set_ylim(-0.05 if what == "raw agreement" else -0.5, 1.05)
        row[1].axhline(0, color=PALETTE["muted"], lw=0.8)
        legend_outside(row[1], where="right", fontsize=8, title="vs", title_fontsize=8)
        row[0].set_ylabel("value")
    for ax in axes[-1]:
        ax.set_xlabel("threshold (cosine)")
    backend_caption(fig, backend, extra)
    return fig
