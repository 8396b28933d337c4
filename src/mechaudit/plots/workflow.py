"""Figures of the critique-depth, engagement and measured-diversity chapters (02, 03, 04).

Each takes the caller's ``caption`` (words under the figure); ``rule_comparison_figure`` adds what its
error bars are and ``judge_model_figure`` "one series per judge model".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from mechaudit.deprecation import backend_argument
from mechaudit.plots.style import PALETTE, colour_of, legend_outside, new_figure
from mechaudit.plots.style import caption as draw_caption
from mechaudit.report.labels import label as label_of


@backend_argument(1)  # the previous release's backend=, for one release
def critique_depth_figure(points: pd.DataFrame, title: str = "",
                          truth: Mapping[str, float] | None = None,
                          paper: Mapping[str, float] | None = None,
                          intervals: Mapping[str, tuple[float, float]] | None = None,
                          level: float = 0.95, *, caption: str = ""):
    """Figure 2 analogue: same-depth divergence per depth (top, %) and extra divergence per
    comparison (bottom, pp) of one rule (``points``: ``depth.per_instance_effects``); grey points per
    instance, bars for their mean. ``truth`` (label -> value): black ticks; ``paper`` (comparison ->
    value): pink diamonds; ``intervals`` (comparison -> (low, high) pp at ``level``): error bars.
    """
    fig, axes = new_figure(nrows=2, width=6.0, height=6.6)
    instances = list(dict.fromkeys(points.instance))
    for ax, panel, xlabel in zip(axes, ("same-depth", "extra"), ("critique depth (rounds)", "depth comparison")):
        sub = points[points.panel == panel]
        labels = list(dict.fromkeys(sub.label))
        x = np.arange(len(labels))
        means = sub.groupby("label", sort=False).value.mean().reindex(labels)
        err = None
        if intervals and panel == "extra":
            bounds = np.array([intervals.get(lbl, (np.nan, np.nan)) for lbl in labels], dtype=float)
            err = np.vstack([means.to_numpy() - bounds[:, 0], bounds[:, 1] - means.to_numpy()])
        bar_label = "mean of instances" + (f" ({100 * level:g} % interval)" if err is not None else "")
        ax.bar(x, means.to_numpy(), width=0.6, color=PALETTE["accent"], alpha=0.5, label=bar_label,
               yerr=err, capsize=4, ecolor="#333333")
        if truth:
            t = [truth.get(lbl, np.nan) for lbl in labels]
            ax.scatter(x, t, marker="_", s=500, color=PALETTE["truth"], linewidths=2, label="simulator truth",
                       zorder=4)
        for k, inst in enumerate(instances):
            vals = sub[sub.instance == inst].set_index("label").value.reindex(labels)
            ax.scatter(x + (k - (len(instances) - 1) / 2) * 0.08, vals.to_numpy(), s=14, color="#555555",
                       marker="o", label="one instance" if k == 0 else None, zorder=5)
        if paper and panel == "extra":
            ax.scatter(x + 0.38, [paper.get(lbl, np.nan) for lbl in labels], marker="D", s=30,
                       color=PALETTE["paper"], label="paper", zorder=5)
        ax.set_xticks(x, labels)
        ax.set_xlabel(xlabel)
        ax.axhline(0, color=PALETTE["muted"], linewidth=0.8)
    axes[0].set_ylabel("same-depth divergence (%)")
    axes[1].set_ylabel("extra divergence (pp)")
    legend_outside(axes[1], "above", frameon=False)
    if title:  # over the top panel: a figure title would share the top edge with the legend
        axes[0].set_title(title)
    return draw_caption(fig, caption)


@backend_argument(1)  # the previous release's backend=, for one release
def rule_comparison_figure(table: pd.DataFrame,
                           truth: Mapping[str, Mapping[str, float]] | None = None,
                           paper: Mapping[str, float] | None = None, level: float = 0.95, *,
                           caption: str = ""):
    """Extra divergence (pp) per depth comparison under each rule (``table``: columns rule,
    comparison, extra_pp[, ci_low_pp, ci_high_pp at ``level``]) as grouped bars with their intervals;
    ``truth`` (rule -> label -> pp): black ticks; ``paper``: the paper's LLM-judge values, diamonds."""
    fig, ax = new_figure(width=6.0, height=4.6)
    rules = list(dict.fromkeys(table.rule))
    comps = list(dict.fromkeys(table.comparison))
    x = np.arange(len(comps))
    w = 0.8 / len(rules)
    for k, rule in enumerate(rules):
        sub = table[table.rule == rule].set_index("comparison").reindex(comps)
        err = (np.vstack([sub.extra_pp - sub.ci_low_pp, sub.ci_high_pp - sub.extra_pp])
               if "ci_low_pp" in sub else None)
        xs = x - 0.4 + w * (k + 0.5)
        ax.bar(xs, sub.extra_pp.to_numpy(), width=w, color=colour_of(rule), label=label_of(rule), edgecolor="white",
               linewidth=0.5, yerr=err, capsize=2, ecolor="#555555")
        if truth and rule in truth:
            ax.scatter(xs, [truth[rule].get(c, np.nan) for c in comps], marker="_", s=120, color=PALETTE["truth"],
                       linewidths=2, zorder=4, label="simulator truth" if k == 0 else None)
    if paper:
        ax.scatter(x + 0.46, [paper.get(c, np.nan) for c in comps], marker="D", s=30, color=PALETTE["paper"],
                   label="paper (LLM judge)", zorder=4)
    ax.set_xticks(x, comps)
    ax.set_xlabel("depth comparison")
    ax.set_ylabel("extra divergence (pp)")
    ax.axhline(0, color=PALETTE["muted"], linewidth=0.8)
    legend_outside(ax, where="above", markerscale=0.6)
    return draw_caption(fig, caption, f"error bars: {100 * level:g} % bootstrap intervals")


@backend_argument(2)  # the previous release's backend=, for one release
def validity_figure(summary: pd.DataFrame, null_summary: pd.DataFrame, alpha: float = 0.05, *,
                    caption: str = ""):
    """Top: estimator bias per rule and comparison (pp). Bottom: rejection rate at ``alpha`` under the
    null simulator per rule and comparison, dashed line at ``alpha``. Error bars: ±2 Monte Carlo
    standard errors (``bias_se_pp``, ``rejection_se``; grey). Panels stacked, rules by their labels in
    the legend above them."""
    fig, axes = new_figure(nrows=2, width=6.0, height=6.4)
    for ax, df, col, se, ylabel in ((axes[0], summary, "bias_pp", "bias_se_pp", "bias vs truth (pp)"),
                                    (axes[1], null_summary, "rejection_rate", "rejection_se",
                                     f"rejection rate at {alpha:g} (null)")):
        rules = list(dict.fromkeys(df.rule))
        comps = list(dict.fromkeys(df.comparison))
        x = np.arange(len(comps))
        w = 0.8 / len(rules)
        for k, rule in enumerate(rules):
            sub = df[df.rule == rule].set_index("comparison").reindex(comps)
            ax.bar(x - 0.4 + w * (k + 0.5), sub[col].to_numpy(), width=w, color=colour_of(rule),
                   yerr=2 * sub[se].to_numpy(), capsize=2, ecolor="#777777", label=label_of(rule))
        ax.set_xticks(x, comps)
        ax.set_xlabel("depth comparison")
        ax.set_ylabel(ylabel)
    axes[0].axhline(0, color=PALETTE["muted"], linewidth=0.8)
    axes[1].axhline(alpha, color=PALETTE["truth"], linestyle="--", linewidth=1, label=f"alpha = {alpha:g}")
    legend_outside(axes[1], where="above")
    return draw_caption(fig, caption)


_LABEL_STYLE = {"conceded": ("#0072B2", "o", "-"), "answered": ("#E69F00", "s", "--"),
                "partial": ("#009E73", "^", "-."), "dropped": ("#999999", "D", ":")}


@backend_argument(2)  # the previous release's backend=, for one release
def engagement_figure(table: pd.DataFrame, paper: Mapping[str, float] | None,
                      by_round: pd.DataFrame | None = None, ours_label: str = "this run", *,
                      caption: str = ""):
    """Share of demands per engagement label, this run (``ours_label``) beside the paper's shares
    (top; ``paper`` None: this run only); with ``by_round`` (``engagement_table(..., by="round")``),
    the shares per critique round, the round's number of demands under each tick (below). One
    legend above the panels; no error bars (the shares are of every demand of the run)."""
    fig, axes = new_figure(nrows=2 if by_round is not None else 1, width=6.0,
                           height=6.8 if by_round is not None else 3.6)
    axes = np.atleast_1d(axes)
    labels = list(table.label)
    x = np.arange(len(labels))
    width = 0.4 if paper is not None else 0.6
    axes[0].bar(x - (0.2 if paper is not None else 0), table.pct.to_numpy(), width=width,
                color=PALETTE["reference"], label=ours_label)
    if paper is not None:
        axes[0].bar(x + 0.2, [paper[lbl] for lbl in labels], width=width, color=PALETTE["paper"], label="paper")
    axes[0].set_xticks(x, [label_of(lbl) for lbl in labels])
    axes[0].set_ylabel("share of demands (%)")
    if by_round is not None:
        ax = axes[1]
        rounds = sorted(by_round["round"].unique())
        for lbl in labels:
            colour, marker, style = _LABEL_STYLE.get(lbl, (PALETTE["accent"], "o", "-"))
            sub = by_round[by_round.label == lbl].set_index("round").pct.reindex(rounds)
            ax.plot(rounds, sub.to_numpy(), marker=marker, linestyle=style, color=colour, label=label_of(lbl))
        n = by_round.groupby("round")["count"].sum().reindex(rounds)
        ax.set_xticks(rounds, [f"{r:g}\nn={int(k)}" for r, k in n.items()])
        ax.set_xlabel("critique round (n: demands)")
        ax.set_ylabel("share of demands (%)")
    handles = [h for ax in axes for h in ax.get_legend_handles_labels()[0]]
    fig.legend(handles=handles, loc="outside upper center", ncols=3, frameon=False)
    return draw_caption(fig, caption)


_RULE_MARKERS = {"mechanism_key": ("o", "-", 7.5), "reference": ("x", "--", 6.0), "tfidf": ("s", "-", 5.0),
                 "embedding": ("^", "-.", 5.5), "llm": ("D", ":", 5.0)}


@backend_argument(1)  # the previous release's backend=, for one release
def cluster_count_figure(counts: pd.DataFrame, value: str = "n_groups",
                         ylabel: str = "measured diversity (clusters)", rules: Sequence[str] | None = None, *,
                         caption: str = ""):
    """Measured diversity per instance and depth under each rule: one panel per instance, x = depth,
    one line per rule (``counts``: columns instance, depth, rule, ``value``, one row per run).

    Points: mean over the runs; error bars: ±1 standard error. Each rule has its own marker, line style
    and a small horizontal offset, so rules that coincide stay visible."""
    instances = list(dict.fromkeys(counts.instance))
    ncols = 2 if len(instances) == 4 else min(len(instances), 3)
    nrows = -(-len(instances) // ncols)
    fig, axes = new_figure(ncols=ncols, nrows=nrows, width=6.0, height=2.6 * nrows + 1.4, sharey=True,
                           squeeze=False)
    rules = list(rules) if rules is not None else list(dict.fromkeys(counts.rule))
    offsets = (np.arange(len(rules)) - (len(rules) - 1) / 2) * 0.07
    for ax, inst in zip(axes.ravel(), instances):
        sub = counts[counts.instance == inst]
        depths = sorted(sub.depth.unique())
        for rule, dx in zip(rules, offsets):
            stats = sub[sub.rule == rule].groupby("depth")[value].agg(["mean", "sem"]).reindex(depths)
            marker, style, size = _RULE_MARKERS.get(rule, ("o", "-", 5.0))
            ax.errorbar(np.arange(len(depths)) + dx, stats["mean"].to_numpy(), yerr=stats["sem"].fillna(0).to_numpy(),
                        marker=marker, markersize=size, linestyle=style, capsize=2, color=colour_of(rule),
                        markerfacecolor="none" if rule == "mechanism_key" else colour_of(rule),
                        zorder=2 if rule == "mechanism_key" else 3, label=label_of(rule))
        ax.set_xticks(range(len(depths)), [f"K={d}" for d in depths])
        ax.set_title(f"instance {inst}")
    for ax in axes.ravel()[len(instances):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel)
    legend_outside(axes[0, 0], "above", ncols=min(len(rules), 3), frameon=False)
    return draw_caption(fig, caption)


@backend_argument(1)  # the previous release's backend=, for one release
def judge_model_figure(per_model: pd.DataFrame, paper: Mapping[str, tuple[float, float]] | None = None, *,
                       caption: str = ""):
    """Extra divergence (pp) per depth comparison, one series per judge model (``per_model``: models x
    comparisons), as the paper's Figure 5; ``paper`` (comparison -> (low, high)): its range as a bar."""
    fig, ax = new_figure(width=6.0, height=4.0)
    comps = list(per_model.columns)
    x = np.arange(len(comps))
    if paper:
        for i, comp in enumerate(comps):
            if comp in paper:
                low, high = paper[comp]
                ax.bar(i, high - low, bottom=low, width=0.5, color=PALETTE["paper"], alpha=0.35,
                       label="paper: range over its judges" if i == 0 else None, zorder=1)
    markers = ("o", "s", "^", "D", "v", "P")
    for k, (model, row) in enumerate(per_model.iterrows()):
        ax.plot(x, row.to_numpy(dtype=float), marker=markers[k % len(markers)], linewidth=1.2, label=str(model),
                zorder=3)
    ax.set_xticks(x, comps)
    ax.set_xlabel("depth comparison")
    ax.set_ylabel("extra divergence (pp)")
    ax.axhline(0, color=PALETTE["muted"], linewidth=0.8)
    legend_outside(ax, where="above")
    return draw_caption(fig, caption, "one series per judge model")
