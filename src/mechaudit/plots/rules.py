"""Figures of the equivalence-rule chapters (05 perturbations, 07 sensitivity; 06 in ``plots.rubric``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mechaudit.deprecation import backend_argument
from mechaudit.plots.style import PALETTE, colour_of, new_figure
from mechaudit.plots.style import caption as draw_caption
from mechaudit.report.labels import label as label_of

#: Colour per kind of perturbation (Okabe-Ito, distinct from the method colours' meaning).
KIND_COLOURS = ["#009E73", "#56B4E9", "#D55E00", "#CC79A7", "#E69F00", "#0072B2"]
#: Marker, line style and marker size per series, so lines that coincide stay visible (the later
#: series is drawn smaller on top of the earlier one).
SERIES_STYLES = [("o", "-", 7), ("s", "--", 5.5), ("^", "-.", 4.5), ("v", ":", 3.5), ("D", "-", 3), ("x", "--", 3)]


@backend_argument(2, extra=True)  # the previous release's backend=, for one release
def perturbation_bars(pct: pd.DataFrame, paper: pd.DataFrame | None = None, *, caption: str = ""):
    """% of valid pairs judged different per perturbation kind (rows of ``pct``) and rule (columns):
    horizontal bars in the rules' colours, each labelled with its rule and value (no legend); NaN
    reads "not run". ``paper`` (same layout, NaN where it reports nothing): diamonds on the bars.
    """
    kinds, rules = list(pct.index), list(pct.columns)
    height = 0.8 / max(len(rules), 1)
    fig, ax = new_figure(width=6.0, height=1.0 + 0.28 * len(kinds) * max(len(rules), 2))
    y = np.arange(len(kinds))[::-1]
    paper_label = "Paper"  # one legend entry, on the first diamonds drawn
    for k, rule in enumerate(rules):
        values = pct[rule].to_numpy(dtype=float)
        pos = y + 0.4 - height * (k + 0.5)
        ax.barh(pos, np.nan_to_num(values), height=height * 0.9, color=colour_of(str(rule), k))
        for p, v in zip(pos, values):
            ax.text(1.5 if np.isnan(v) else v + 1.5, p, f"{label_of(rule)}: {'not run' if np.isnan(v) else f'{v:.0f}'}",
                    va="center", ha="left", color="#333333")
        if paper is not None and rule in paper.columns:
            ref = paper[rule].reindex(kinds).to_numpy(dtype=float)
            keep = ~np.isnan(ref)
            if keep.any():
                ax.scatter(ref[keep], pos[keep], marker="D", s=40, color=PALETTE["paper"], edgecolor="black",
                           linewidth=0.6, zorder=3, label=paper_label)
                paper_label = None
    ax.set_yticks(y, [label_of(k) for k in kinds])
    ax.set_xlim(0, 160)  # room for the labels right of a 100 % bar
    ax.set_xticks([0, 25, 50, 75, 100])
    ax.set_xlabel("Pairs judged different (%)")
    ax.grid(axis="y", visible=False)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", frameon=False)
    return draw_caption(fig, caption)


#: Kinds of perturbation in words, for axis labels (the first two keep the mechanism).
KIND_LABELS = {"wording_only": "wording only", "wording_chain": "wording + chain",
               "first_step_swapped": "first step swapped", "middle_step_swapped": "middle step swapped"}
#: Similarity rules in words, for panel titles and axis labels.
RULE_LABELS = {"tfidf": "TF-IDF", "embedding": "embeddings (all-MiniLM-L6-v2)"}
#: Colour and marker per perturbation suite (at most two suites per figure).
SUITE_STYLES = [("#0072B2", "o"), ("#D55E00", "D")]
#: Line style per threshold of one rule (the first is the paper's value).
THRESHOLD_STYLES = ["--", ":"]


@backend_argument(2, extra=True)  # the previous release's backend=, for one release
def cosine_strips(sims: pd.DataFrame, thresholds: dict[str, dict[str, float]], seed: int = 0, *,
                  caption: str = ""):
    """Cosine of every perturbation pair per kind (rows) and suite (colour), one stacked panel per
    rule, each strip's median a short black bar, the rule's thresholds (``thresholds``: rule ->
    {label: value}, at most two) as labelled vertical lines. ``sims``: columns suite, kind, rule,
    cosine; points jittered with ``default_rng(seed)``.
    """
    rules = [r for r in RULE_LABELS if r in set(sims["rule"])]
    suites = list(dict.fromkeys(sims["suite"]))[:len(SUITE_STYLES)]
    kinds = [k for k in KIND_LABELS if k in set(sims["kind"])]
    fig, axes = new_figure(nrows=len(rules), width=6.0, height=1.2 + (0.6 * len(kinds) + 1.1) * len(rules))
    axes = np.atleast_1d(axes)
    rng = np.random.default_rng(seed)
    offsets = np.linspace(-0.18, 0.18, len(suites)) if len(suites) > 1 else np.zeros(1)
    for ax, rule in zip(axes, rules):
        part = sims[sims["rule"] == rule]
        for (colour, marker), suite, dy in zip(SUITE_STYLES, suites, offsets):
            for row, kind in enumerate(kinds):
                x = part.loc[(part["suite"] == suite) & (part["kind"] == kind), "cosine"].to_numpy()
                ax.scatter(x, row + dy + rng.uniform(-0.07, 0.07, len(x)), s=9, color=colour, marker=marker,
                           alpha=0.55, linewidths=0, label=suite if (row == 0 and ax is axes[0]) else None)
                if len(x):
                    ax.plot([np.median(x)] * 2, [row + dy - 0.13, row + dy + 0.13], color="black", lw=1.5)
        lines = thresholds.get(rule, {})
        for k, (style, (label, value)) in enumerate(zip(THRESHOLD_STYLES, lines.items())):
            ax.axvline(value, color=PALETTE["paper"], ls=style, lw=1.2)
            ax.annotate(label, xy=(value, 1.0), xycoords=("data", "axes fraction"), xytext=(-3 if k == 0 else 3, 2),
                        textcoords="offset points", ha="right" if k == 0 else "left", va="bottom",
                        color=PALETTE["paper"])
        n_kept = sum(k in ("wording_only", "wording_chain") for k in kinds)
        if 0 < n_kept < len(kinds):  # a line between the kinds that keep and those that change the mechanism
            ax.axhline(n_kept - 0.5, color=PALETTE["muted"], lw=0.8)
        low = min([float(part["cosine"].min()), *lines.values()])
        ax.set_xlim(max(0.0, low - 0.05) if rule == "embedding" else 0.0, 1.0)
        ax.set_title(RULE_LABELS[rule], pad=16)
        ax.set_yticks(range(len(kinds)), [KIND_LABELS[k] for k in kinds])
        ax.set_ylim(len(kinds) - 0.5, -0.5)
    axes[-1].set_xlabel("cosine similarity to the original")
    fig.legend(loc="outside upper center", ncols=len(suites), markerscale=2)
    return draw_caption(fig, caption)


@backend_argument(2, extra=True)  # the previous release's backend=, for one release
def threshold_sweep_lines(sweep: pd.DataFrame, paper_thresholds: dict[str, float], *, caption: str = ""):
    """% judged different vs threshold, one line per perturbation kind, one panel per rule (columns)
    and suite (rows, when ``sweep`` has a ``suite`` column). ``sweep``: columns rule, threshold,
    kind, pct_different; ``paper_thresholds``: rule -> the threshold in use (dashed line).
    """
    if "suite" not in sweep.columns:
        sweep = sweep.assign(suite="")
    rules = list(dict.fromkeys(sweep["rule"]))
    suites = list(dict.fromkeys(sweep["suite"]))
    fig, axes = new_figure(ncols=len(rules), nrows=len(suites), width=6.0,
                           height=1.6 + 2.8 * len(suites), sharey=True, squeeze=False)
    for row, suite in zip(axes, suites):
        for ax, rule in zip(row, rules):
            part = sweep[(sweep["rule"] == rule) & (sweep["suite"] == suite)]
            for k, kind in enumerate(dict.fromkeys(part["kind"])):
                line = part[part["kind"] == kind]
                marker, style, size = SERIES_STYLES[k % len(SERIES_STYLES)]
                ax.plot(line["threshold"], line["pct_different"], marker=marker, ls=style, ms=size, lw=1.2,
                        color=KIND_COLOURS[k % len(KIND_COLOURS)], zorder=2 + k,
                        label=KIND_LABELS.get(kind, str(kind)) if ax is axes[0, 0] else None)
            if rule in paper_thresholds:
                ax.axvline(paper_thresholds[rule], color=PALETTE["paper"], ls="--", lw=1)
            ax.set_title("\n".join(t for t in (RULE_LABELS.get(rule, rule).split(" (")[0], suite) if t))
            ax.set_xlabel("threshold (cosine)")
            ax.set_ylim(-3, 103)
        row[0].set_ylabel("% judged different")
    fig.legend(loc="outside upper center", ncols=2)
    return draw_caption(fig, caption)


@backend_argument(2, extra=True)  # the previous release's backend=, for one release
def agreement_vs_threshold(sweep: pd.DataFrame, paper_thresholds: dict[str, float], *, caption: str = ""):
    """Raw agreement (left) and Cohen's kappa (right) with each other method vs threshold, one row of
    panels per rule. ``sweep``: columns rule, threshold, other, raw_agreement, kappa."""
    rules = list(dict.fromkeys(sweep["rule"]))
    fig, axes = new_figure(ncols=2, nrows=len(rules), width=6.0, height=2.6 * len(rules) + 1.6, sharex="row")
    axes = np.atleast_2d(axes)
    for row, rule in zip(axes, rules):
        part = sweep[sweep["rule"] == rule]
        for k, other in enumerate(dict.fromkeys(part["other"])):
            line = part[part["other"] == other]
            colour = colour_of(other, k)
            marker, style, size = SERIES_STYLES[k % len(SERIES_STYLES)]
            for ax, column in zip(row, ("raw_agreement", "kappa")):
                ax.plot(line["threshold"], line[column], color=colour, label=label_of(other), marker=marker, ls=style,
                        ms=size * 0.6, lw=1.2, zorder=2 + k)
        for ax, what in zip(row, ("raw agreement", "Cohen's κ")):
            if rule in paper_thresholds:
                ax.axvline(paper_thresholds[rule], color=PALETTE["paper"], ls="--", lw=1)
            ax.set_title(what)
            ax.set_ylim(-0.05 if what == "raw agreement" else -0.5, 1.05)
        row[1].axhline(0, color=PALETTE["muted"], lw=0.8)
        row[0].set_ylabel(label_of(rule))
    for ax in axes[-1]:
        ax.set_xlabel("threshold (cosine)")
    series = {name: h for ax in axes[:, 0] for h, name in zip(*ax.get_legend_handles_labels())}
    fig.legend(list(series.values()), [f"vs {name}" for name in series], loc="outside upper center", ncols=2,
               frameon=False)
    return draw_caption(fig, caption)
