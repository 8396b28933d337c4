"""Figures of the robustness and power chapter (02c): heatmaps over simulator factors, rule bias, power."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from mechaudit.plots.style import PALETTE, backend_caption, legend_outside, new_figure

#: Colour per conclusion status (Okabe-Ito blue / vermillion, grey for undecided).
STATUS_COLOURS = {"holds": "#0072B2", "unclear": "#DDDDDD", "fails": "#D55E00"}
_EFFECT_COLOURS = ("#56B4E9", "#009E73", "#D55E00", "#E69F00", "#0072B2")  # no pink: that is the paper's
_LINESTYLES = ("-", "--", ":", "-.")
_RULE_MARKERS = ("o", "s", "^", "D")


def _decorate_cell(ax, xs, ys, x: str, y: str, row_label: str, title: str, first_row: bool, last_row: bool,
                   first_col: bool) -> None:
    """Ticks of one grid panel; the facet title on the top row, axis names on the outer panels."""
    ax.set_xticks(range(len(xs)), [f"{v:g}" for v in xs], fontsize=8)
    ax.set_yticks(range(len(ys)), [f"{v:g}" for v in ys], fontsize=8)
    ax.grid(False)
    if first_row:
        ax.set_title(title, fontsize=9)
    if last_row:
        ax.set_xlabel(x)
    if first_col:
        ax.set_ylabel(f"{row_label}\n{y}", fontsize=9)


def _axis_values(table: pd.DataFrame, name: str) -> list[float]:
    return sorted(table[name].unique())


def _cell_grid(sub: pd.DataFrame, x: str, y: str, column: str, xs: list, ys: list) -> np.ndarray:
    wide = sub.pivot_table(index=y, columns=x, values=column, aggfunc="first")
    return wide.reindex(index=ys, columns=xs).to_numpy()


def truth_heatmaps_figure(table: pd.DataFrame, quantities: Mapping[str, str], x: str, y: str, facet: str,
                          backend: str, fmt: str = "{:.1f}"):
    """Small multiples of heatmaps: one row per quantity (``quantities``: column -> row label), one
    column per value of ``facet``; cells over ``x`` (horizontal) and ``y`` (vertical), annotated.

    ``table``: ``robustness.truth_grid`` output. Colour scale (viridis, colour-blind safe) shared
    within a row.
    """
    xs, ys, fs = _axis_values(table, x), _axis_values(table, y), _axis_values(table, facet)
    fig, axes = new_figure(ncols=len(fs), nrows=len(quantities), width=min(7.0, 2.0 * len(fs) + 1.0),
                           height=2.0 * len(quantities) + 0.4, squeeze=False)
    for r, (column, label) in enumerate(quantities.items()):
        lo, hi = float(table[column].min()), float(table[column].max())
        for c, f in enumerate(fs):
            ax = axes[r, c]
            Z = _cell_grid(table[table[facet] == f], x, y, column, xs, ys)
            im = ax.imshow(Z, origin="lower", aspect="auto", cmap="viridis", vmin=lo, vmax=hi)
            for (i, j), v in np.ndenumerate(Z):
                if np.isfinite(v):
                    shade = (v - lo) / (hi - lo) if hi > lo else 0.5
                    ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=6,
                            color="black" if shade > 0.55 else "white")
            _decorate_cell(ax, xs, ys, x, y, row_label=label, title=f"{facet} = {f:g}",
                           first_row=r == 0, last_row=r == len(quantities) - 1, first_col=c == 0)
        fig.colorbar(im, ax=axes[r, :].tolist(), shrink=0.9, pad=0.02)
    backend_caption(fig, backend)
    return fig


def conclusion_map_figure(table: pd.DataFrame, criteria: Mapping[str, str], x: str, y: str, facet: str,
                          backend: str, annotate: str | None = None, annotate_label: str | None = None):
    """Where a conclusion holds: one row per criterion (``criteria``: status column -> row label),
    one column per ``facet`` value, cells coloured holds (blue) / unclear (grey) / fails (vermillion).

    ``annotate``: a numeric column printed in each cell (e.g. the 1 v 5 truth), named in the caption
    as ``annotate_label`` (default: the column name).
    """
    xs, ys, fs = _axis_values(table, x), _axis_values(table, y), _axis_values(table, facet)
    codes = {s: i for i, s in enumerate(STATUS_COLOURS)}
    cmap = mcolors.ListedColormap(list(STATUS_COLOURS.values()))
    fig, axes = new_figure(ncols=len(fs), nrows=len(criteria), width=min(7.0, 2.1 * len(fs) + 0.4),
                           height=2.0 * len(criteria) + 0.7, squeeze=False)
    for r, (column, label) in enumerate(criteria.items()):
        for c, f in enumerate(fs):
            ax = axes[r, c]
            sub = table[table[facet] == f]
            sub = sub.assign(_code=sub[column].map(codes))
            Z = _cell_grid(sub, x, y, "_code", xs, ys)
            ax.imshow(Z, origin="lower", aspect="auto", cmap=cmap, vmin=-0.5, vmax=len(codes) - 0.5)
            if annotate:
                A = _cell_grid(sub, x, y, annotate, xs, ys)
                for (i, j), v in np.ndenumerate(A):
                    if np.isfinite(v):
                        dark = Z[i, j] != codes["unclear"]
                        ax.text(j, i, f"{v:.1f}", ha="center", va="center", fontsize=6,
                                color="white" if dark else "black")
            _decorate_cell(ax, xs, ys, x, y, row_label=label, title=f"{facet} = {f:g}",
                           first_row=r == 0, last_row=r == len(criteria) - 1, first_col=c == 0)
    handles = [Patch(color=col, label=s) for s, col in STATUS_COLOURS.items()]
    fig.legend(handles=handles, loc="outside upper center", ncols=3, fontsize=8)
    backend_caption(fig, backend, f"cell text: {annotate_label or annotate}" if annotate else "")
    return fig


def rule_bias_figure(
    bias: pd.DataFrame, x: str, line: str, backend: str, rule_colours: Mapping[str, str] | None = None
):
    """Each rule's mean estimate against the truth, one panel per depth comparison, over ``x``, one
    line style per value of ``line``; error bars: 2 Monte Carlo standard errors of the estimate.

    ``bias``: ``robustness.rule_bias`` output. The truth is a black line without markers, drawn on
    top; each rule has its own marker and a small sideways offset, so a rule that sits on the truth
    (the mechanism key) stays visible. One legend above the panels.
    """
    colours = dict(rule_colours or {})
    comps = list(dict.fromkeys(bias.comparison))
    rules = list(dict.fromkeys(bias.rule))
    xs = _axis_values(bias, x)
    step = 0.04 * (xs[-1] - xs[0]) if len(xs) > 1 else 0.04
    fig, axes = new_figure(ncols=len(comps), width=7.0, height=3.3, squeeze=False, sharey=True)
    for ax, comp in zip(axes[0], comps):
        sub = bias[bias.comparison == comp]
        for s, value in enumerate(_axis_values(sub, line)):
            style = _LINESTYLES[s % len(_LINESTYLES)]
            part = sub[sub[line] == value]
            t = part.drop_duplicates("point").sort_values(x)
            ax.plot(t[x], t.truth_pp, color=PALETTE["truth"], linestyle=style, linewidth=1.2, zorder=4,
                    label=f"truth, {line}={value:g}")
            for k, rule in enumerate(rules):
                g = part[part.rule == rule].sort_values(x)
                se = (g.bias_se_pp ** 2).clip(lower=0) ** 0.5
                ax.errorbar(g[x] + (k - (len(rules) - 1) / 2) * step, g.mean_pp, yerr=2 * se,
                            color=colours.get(rule, PALETTE["accent"]), linestyle=style,
                            marker=_RULE_MARKERS[k % len(_RULE_MARKERS)], markersize=4, capsize=2, linewidth=1,
                            label=f"{rule}, {line}={value:g}")
        ax.axhline(0, color=PALETTE["muted"], linewidth=0.8)
        ax.set_title(comp)
        ax.set_xlabel(x)
    axes[0, 0].set_ylabel("extra divergence (pp)")
    handles, names = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside upper center", ncols=3, fontsize=7, frameon=False)
    backend_caption(fig, backend)
    return fig


def power_figure(table: pd.DataFrame, backend: str, level: float = 0.8, paper_runs: int | None = None):
    """Power against runs per depth, one line per target effect (ladder rows of ``power.power_table``),
    error bars 2 Monte Carlo standard errors; designs with more instances as open squares (shifted
    sideways a little per effect, so equal powers stay visible); the
    ``level`` as a dashed line; ``paper_runs``: a dotted vertical line at the paper's runs per depth.
    The legend sits below the axes."""
    fig, ax = new_figure(width=6.4, height=4.0)
    for i, (_, g) in enumerate(table.groupby("target_pp", sort=True)):
        colour = _EFFECT_COLOURS[i % len(_EFFECT_COLOURS)]
        k0 = int(g.n_instances.min())
        lad = g[(g.role == "ladder")].sort_values("runs_per_depth")
        ax.errorbar(lad.runs_per_depth, lad.power, yerr=2 * lad.power_se, color=colour, marker="o", markersize=4,
                    capsize=2, label=f"true effect {g.truth_pp.iloc[0]:.1f} pp, {k0} instances")
        more = g[(g.role == "design") & (g.n_instances > k0)]
        if len(more):
            dodge = (i - 1) * 0.12  # squares of different effects can share a power of 1: shift them apart
            ax.errorbar(more.runs_per_depth + dodge, more.power, yerr=2 * more.power_se, color=colour, marker="s",
                        markerfacecolor="none", linestyle="none", capsize=2,
                        label=f"true effect {g.truth_pp.iloc[0]:.1f} pp, {int(more.n_instances.iloc[0])} instances")
    ax.axhline(level, color=PALETTE["muted"], linestyle="--", linewidth=1, label=f"{level:.0%} power")
    if paper_runs is not None:
        ax.axvline(paper_runs, color=PALETTE["paper"], linestyle=":", linewidth=1.5, label="paper's runs per depth")
    ax.set_xlabel("runs per depth and instance")
    ax.set_ylabel("power (1 v 5)")
    ax.set_ylim(0, 1.05)
    legend_outside(ax, where="below", fontsize=7, ncols=2)
    backend_caption(fig, backend)
    return fig
