"""Figures of the equivalence-rule chapters (05 perturbations, 06 rubrics, 07 sensitivity)."""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from mechaudit.plots.style import PALETTE, backend_caption, new_figure

#: Colour per kind of perturbation (Okabe-Ito, distinct from the method colours' meaning).
KIND_COLOURS = ["#009E73", "#56B4E9", "#D55E00", "#CC79A7", "#E69F00", "#0072B2"]
_EXTRA = ["#56B4E9", "#999999", "#000000", "#F0E442"]


def method_colour(name: str, k: int) -> str:
    """Palette colour for a method name (by its prefix: tfidf, embedding, reference, llm)."""
    for key in ("tfidf", "embedding", "reference", "llm"):
        if name.lower().startswith(key):
            return PALETTE[key]
    return _EXTRA[k % len(_EXTRA)]


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
        colour = method_colour(method, k)
        hatch = hatch_of(method) if hatch_of else None
        run = ~np.isnan(values)
        if run.any():
            ax.bar(pos[run], values[run], width=width * 0.95, color=colour, label=method,
                   hatch=hatch, edgecolor="white" if hatch else None, alpha=0.9)
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
    ax.set_ylim(0, 105)
    ax.set_ylabel("% of valid pairs judged different")
    return ax.get_legend_handles_labels()[0] + not_run


def perturbation_bars(pct: pd.DataFrame, paper: pd.DataFrame | None, backend: str, extra: str = ""):
    """% judged different per perturbation kind (rows) and rule (columns); paper values as diamonds.

    ``pct``: DataFrame indexed by kind, one column per rule, values in percent (NaN = not run).
    ``paper``: the paper's values in the same layout (columns it has), or None.
    """
    fig, ax = new_figure(width=8.0, height=3.8)
    handles = _grouped_bars(ax, pct, paper, hatch_of=lambda m: "//" if "matched" in m else None)
    ax.set_title("Pairs judged 'different mechanism' per perturbation kind")
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    backend_caption(fig, backend, extra)
    return fig


def rubric_bars(pct: pd.DataFrame, paper: pd.DataFrame | None, backend: str, extra: str = ""):
    """% judged different per perturbation kind (rows) and rubric (columns, e.g. "reference full").

    Paper values (LLM judge, First Step Swapped only) are drawn as diamonds over the matching rubric.
    """
    fig, ax = new_figure(width=8.0, height=3.8)
    hatches = {"full": None, "step": "//", "none": ".."}

    def hatch_of(method: str):
        return hatches.get(method.split()[-1])

    handles = _grouped_bars(ax, pct, paper, hatch_of=hatch_of)
    ax.set_title("Pairs judged 'different mechanism' per rubric")
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    backend_caption(fig, backend, extra)
    return fig


def threshold_sweep_lines(sweep: pd.DataFrame, paper_thresholds: dict[str, float], backend: str, extra: str = ""):
    """% judged different vs threshold, one panel per rule, one line per perturbation kind.

    ``sweep``: long DataFrame with columns rule, threshold, kind, pct_different.
    ``paper_thresholds``: rule -> the paper's threshold (dashed vertical line).
    """
    rules = list(dict.fromkeys(sweep["rule"]))
    fig, axes = new_figure(ncols=len(rules), width=3.6 * len(rules), height=3.4, sharey=True)
    axes = np.atleast_1d(axes)
    for ax, rule in zip(axes, rules):
        part = sweep[sweep["rule"] == rule]
        for k, kind in enumerate(dict.fromkeys(part["kind"])):
            line = part[part["kind"] == kind]
            ax.plot(line["threshold"], line["pct_different"], marker="o", ms=3,
                    color=KIND_COLOURS[k % len(KIND_COLOURS)], label=str(kind).replace("_", " "))
        if rule in paper_thresholds:
            ax.axvline(paper_thresholds[rule], color=PALETTE["paper"], ls="--", lw=1, label="paper threshold")
        ax.set_title(rule)
        ax.set_xlabel("threshold (cosine)")
        ax.set_ylim(-3, 103)
    axes[0].set_ylabel("% judged different")
    axes[-1].legend(fontsize=8, loc="upper left")
    backend_caption(fig, backend, extra)
    return fig


def agreement_vs_threshold(sweep: pd.DataFrame, paper_thresholds: dict[str, float], backend: str, extra: str = ""):
    """Raw agreement and Cohen's kappa with each other method vs threshold.

    ``sweep``: long DataFrame with columns rule, threshold, other, raw_agreement, kappa; one row of
    panels per rule (raw agreement left, kappa right), one line per other method.
    """
    rules = list(dict.fromkeys(sweep["rule"]))
    fig, axes = new_figure(ncols=2, nrows=len(rules), width=7.2, height=2.8 * len(rules), sharex="row")
    axes = np.atleast_2d(axes)
    for row, rule in zip(axes, rules):
        part = sweep[sweep["rule"] == rule]
        for k, other in enumerate(dict.fromkeys(part["other"])):
            line = part[part["other"] == other]
            colour = method_colour(other, k)
            row[0].plot(line["threshold"], line["raw_agreement"], color=colour, label=other)
            row[1].plot(line["threshold"], line["kappa"], color=colour, label=other)
        for ax, what in zip(row, ("raw agreement", "Cohen's kappa")):
            if rule in paper_thresholds:
                ax.axvline(paper_thresholds[rule], color=PALETTE["paper"], ls="--", lw=1)
            ax.set_title(f"{rule}: {what}")
            ax.set_ylim(-0.05 if what == "raw agreement" else -0.5, 1.05)
        row[1].axhline(0, color=PALETTE["muted"], lw=0.8)
        row[1].legend(fontsize=8, loc="lower right", title="vs", title_fontsize=8)
        row[0].set_ylabel("value")
    for ax in axes[-1]:
        ax.set_xlabel("threshold (cosine)")
    backend_caption(fig, backend, extra)
    return fig
