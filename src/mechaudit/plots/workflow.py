"""Figures of the critique-depth, engagement and measured-diversity chapters (02, 03, 04)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from mechaudit.plots.style import PALETTE, backend_caption, new_figure

_INSTANCE_MARKERS = "osD^vP*X"


def _rule_colour(rule: str) -> str:
    key = rule.lower().replace("-", "").replace(" ", "_")
    for name in ("mechanism_key", "reference", "tfidf", "embedding", "llm"):
        if key.startswith(name.split("_")[0]):
            return PALETTE[name]
    return PALETTE["accent"]


def critique_depth_figure(points: pd.DataFrame, backend: str, title: str = "",
                          truth: Mapping[str, float] | None = None,
                          paper: Mapping[str, float] | None = None):
    """Figure 2 analogue: same-depth divergence per depth (left) and extra divergence per comparison
    (right); points per instance, bars for the instance mean, in pp.

    ``points``: ``depth.per_instance_effects`` output for one rule. ``truth``: label -> true value
    (simulator), drawn as black ticks; ``paper``: comparison label -> paper's value, pink diamonds.
    """
    fig, axes = new_figure(ncols=2, width=8.0, height=3.4)
    instances = list(dict.fromkeys(points.instance))
    for ax, panel, xlabel in zip(axes, ("same-depth", "extra"), ("critique depth", "depth comparison")):
        sub = points[points.panel == panel]
        labels = list(dict.fromkeys(sub.label))
        x = np.arange(len(labels))
        means = sub.groupby("label", sort=False).value.mean().reindex(labels)
        ax.bar(x, means.to_numpy(), width=0.6, color=PALETTE["accent"], alpha=0.5, label="mean of instances")
        for k, inst in enumerate(instances):
            vals = sub[sub.instance == inst].set_index("label").value.reindex(labels)
            ax.scatter(x + (k - (len(instances) - 1) / 2) * 0.08, vals.to_numpy(), s=18, color="#333333",
                       marker=_INSTANCE_MARKERS[k % len(_INSTANCE_MARKERS)], label=f"instance {inst}", zorder=3)
        if truth:
            t = [truth.get(lbl, np.nan) for lbl in labels]
            ax.scatter(x, t, marker="_", s=400, color=PALETTE["truth"], linewidths=2, label="simulator truth",
                       zorder=4)
        if paper and panel == "extra":
            ax.scatter(x, [paper.get(lbl, np.nan) for lbl in labels], marker="D", s=30, color=PALETTE["paper"],
                       label="paper", zorder=4)
        ax.set_xticks(x, labels)
        ax.set_xlabel(xlabel)
        ax.axhline(0, color=PALETTE["muted"], linewidth=0.8)
    axes[0].set_ylabel("same-depth divergence (pp)")
    axes[1].set_ylabel("extra divergence (pp)")
    low, high = axes[1].get_ylim()
    axes[1].set_ylim(low, high + 0.3 * (high - low))
    axes[1].legend(fontsize=7, loc="upper right", ncols=2)
    if title:
        fig.suptitle(title)
    backend_caption(fig, backend)
    return fig


def rule_comparison_figure(table: pd.DataFrame, backend: str, truth: Mapping[str, float] | None = None,
                           paper: Mapping[str, float] | None = None):
    """Extra divergence per depth comparison under each rule (grouped bars, pp), with the simulator's
    truth (black ticks) and the paper's LLM-judge values (pink diamonds).

    ``table``: ``depth.rule_tables`` Table 1 (columns rule, comparison, extra_pp).
    """
    fig, ax = new_figure(width=7.0, height=3.4)
    rules = list(dict.fromkeys(table.rule))
    comps = list(dict.fromkeys(table.comparison))
    x = np.arange(len(comps))
    w = 0.8 / len(rules)
    for k, rule in enumerate(rules):
        vals = table[table.rule == rule].set_index("comparison").extra_pp.reindex(comps)
        ax.bar(x - 0.4 + w * (k + 0.5), vals.to_numpy(), width=w, color=_rule_colour(rule), label=rule)
    if truth:
        ax.scatter(x, [truth[c] for c in comps], marker="_", s=900, color=PALETTE["truth"], linewidths=2,
                   label="simulator truth", zorder=4)
    if paper:
        ax.scatter(x, [paper.get(c, np.nan) for c in comps], marker="D", s=30, color=PALETTE["paper"],
                   label="paper (LLM judge)", zorder=4)
    ax.set_xticks(x, comps)
    ax.set_xlabel("depth comparison")
    ax.set_ylabel("extra divergence (pp)")
    ax.axhline(0, color=PALETTE["muted"], linewidth=0.8)
    low, high = ax.get_ylim()
    ax.set_ylim(low, high + 0.35 * (high - low))  # room for the legend above the bars
    ax.legend(fontsize=7, ncols=3, loc="upper right")
    backend_caption(fig, backend)
    return fig


def validity_figure(summary: pd.DataFrame, null_summary: pd.DataFrame, backend: str, alpha: float = 0.05):
    """Left: estimator bias per rule and comparison (pp, +-2 Monte Carlo SE). Right: rejection rate
    at ``alpha`` under the null simulator per rule and comparison (+-2 SE), dashed line at ``alpha``."""
    fig, axes = new_figure(ncols=2, width=8.0, height=3.4)
    for ax, df, col, se, ylabel in ((axes[0], summary, "bias_pp", "bias_se_pp", "bias vs truth (pp)"),
                                    (axes[1], null_summary, "rejection_rate", "rejection_se",
                                     f"rejection rate at {alpha} (null)")):
        rules = list(dict.fromkeys(df.rule))
        comps = list(dict.fromkeys(df.comparison))
        x = np.arange(len(comps))
        w = 0.8 / len(rules)
        for k, rule in enumerate(rules):
            sub = df[df.rule == rule].set_index("comparison").reindex(comps)
            ax.bar(x - 0.4 + w * (k + 0.5), sub[col].to_numpy(), width=w, color=_rule_colour(rule),
                   yerr=2 * sub[se].to_numpy(), capsize=2, label=rule)
        ax.set_xticks(x, comps)
        ax.set_xlabel("depth comparison")
        ax.set_ylabel(ylabel)
    axes[0].axhline(0, color=PALETTE["muted"], linewidth=0.8)
    axes[1].axhline(alpha, color=PALETTE["truth"], linestyle="--", linewidth=1)
    axes[0].legend(fontsize=7)
    backend_caption(fig, backend)
    return fig


def engagement_figure(table: pd.DataFrame, paper: Mapping[str, float], backend: str,
                      by_round: pd.DataFrame | None = None, ours_label: str = "this run"):
    """Share of demands per engagement label, this run (``ours_label``) vs the paper (left); with
    ``by_round`` (``engagement_table(..., by="round")``), the shares per critique round (right)."""
    fig, axes = new_figure(ncols=2 if by_round is not None else 1, width=8.0 if by_round is not None else 5.0,
                           height=3.2)
    axes = np.atleast_1d(axes)
    labels = list(table.label)
    x = np.arange(len(labels))
    axes[0].bar(x - 0.2, table.pct.to_numpy(), width=0.4, color=PALETTE["reference"], label=ours_label)
    axes[0].bar(x + 0.2, [paper[lbl] for lbl in labels], width=0.4, color=PALETTE["paper"], label="paper")
    axes[0].set_xticks(x, labels)
    axes[0].set_ylabel("share of demands (%)")
    axes[0].legend(fontsize=8)
    if by_round is not None:
        ax = axes[1]
        for lbl, colour in zip(labels, ("#0072B2", "#E69F00", "#009E73", "#999999")):
            sub = by_round[by_round.label == lbl]
            ax.plot(sub["round"], sub.pct, marker="o", color=colour, label=lbl)
        ax.set_xlabel("critique round")
        ax.set_ylabel("share of demands (%)")
        ax.legend(fontsize=7)
    backend_caption(fig, backend)
    return fig


def cluster_count_figure(counts: pd.DataFrame, backend: str, value: str = "n_groups",
                         ylabel: str = "measured diversity (clusters)", rules: Sequence[str] | None = None):
    """Measured diversity per instance and depth under each rule: one panel per instance, x = depth,
    one line per rule (``counts``: columns instance, depth, rule, ``value``; averaged over runs)."""
    instances = list(dict.fromkeys(counts.instance))
    fig, axes = new_figure(ncols=len(instances), width=2.1 * len(instances) + 0.6, height=3.0, sharey=True)
    axes = np.atleast_1d(axes)
    rules = list(rules) if rules is not None else list(dict.fromkeys(counts.rule))
    for ax, inst in zip(axes, instances):
        sub = counts[counts.instance == inst]
        depths = sorted(sub.depth.unique())
        for rule in rules:
            vals = sub[sub.rule == rule].groupby("depth")[value].mean().reindex(depths)
            ax.plot(range(len(depths)), vals.to_numpy(), marker="o", color=_rule_colour(rule), label=rule)
        ax.set_xticks(range(len(depths)), [f"K={d}" for d in depths])
        ax.set_title(f"instance {inst}")
    axes[0].set_ylabel(ylabel)
    axes[-1].legend(fontsize=7)
    backend_caption(fig, backend)
    return fig
