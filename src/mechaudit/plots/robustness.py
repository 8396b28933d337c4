"""Figures of the robustness and power chapter (02c): maps over simulator factors, rule estimates, power.

Axis names come from ``FACTOR_LABELS`` (words with units); the panels of a map are stacked, so each
is the figure's full width.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
from matplotlib.patches import Patch, Rectangle

from mechaudit.deprecation import backend_argument
from mechaudit.paper import shown
from mechaudit.plots.style import PALETTE, colour_of, legend_outside, new_figure
from mechaudit.plots.style import caption as draw_caption

#: Colour per conclusion status (Okabe-Ito blue / vermillion, grey for undecided).
STATUS_COLOURS = {"holds": "#0072B2", "unclear": "#BBBBBB", "fails": "#D55E00"}
#: Cells outside the settings consistent with the paper's observation.
OUTSIDE_COLOUR = "#F2F2F2"
#: Short names of the factors for panel titles.
FACTOR_SHORT = {"p_find": "finds a weak link", "weak_scale": "weak links", "conceded": "conceded share",
                "evidence_weight": "evidence weight", "p_challenge_sound": "challenges a sound link"}
#: Axis names of the simulator factors, in words with units.
FACTOR_LABELS = {
    "p_find": "critic finds an open weak link\n(chance per round)",
    "weak_scale": "weak links per hypothesis\n(x the default)",
    "conceded": "weak-link demands conceded",
    "evidence_weight": "repairs favour the evidence pack\n(weight)",
    "p_challenge_sound": "critic challenges a sound link\n(chance per round)",
}
_EFFECT_COLOURS = ("#56B4E9", "#009E73", "#E69F00", "#0072B2")  # no pink: that is the paper's
_RULE_MARKERS = ("o", "s", "^", "D")


def _cell_grid(sub: pd.DataFrame, x: str, y: str, column: str, xs: list, ys: list) -> np.ndarray:
    wide = sub.pivot_table(index=y, columns=x, values=column, aggfunc="first")
    return wide.reindex(index=ys, columns=xs).to_numpy()


def _panels(table: pd.DataFrame, x: str, y: str, facet: str):
    """Axis values and a column of panels (one per ``facet`` value, stacked), each the figure's width."""
    xs, ys, fs = (sorted(table[name].unique()) for name in (x, y, facet))
    fig, axes = new_figure(nrows=len(fs), width=6.0, height=(0.4 * len(ys) + 0.9) * len(fs) + 1.6, squeeze=False,
                           sharex=True)
    return xs, ys, fs, fig, axes[:, 0]


def _ticks(ax, xs, ys, x: str, y: str, facet: str, f: float, last: bool) -> None:
    ax.set_xticks(range(len(xs)), [f"{v:g}" for v in xs])
    ax.set_yticks(range(len(ys)), [f"{v:g}" for v in ys])
    ax.grid(False)
    ax.set_title(f"{FACTOR_SHORT.get(facet, facet)} {f:g}")
    ax.set_ylabel(FACTOR_LABELS.get(y, y))
    if last:
        ax.set_xlabel(FACTOR_LABELS.get(x, x))


@backend_argument(4)  # the previous release's backend=, for one release
def consistency_figure(table: pd.DataFrame, x: str, y: str, facet: str, observed: float,
                       column: str = "truth_0v1_pp", label: str = "true 0 v 1 extra divergence (pp)", *,
                       caption: str = "", legend: str | None = None):
    """Heatmaps of ``column`` over ``x`` and ``y``, one panel per ``facet`` value, the value written in
    each cell; cells with ``consistent`` true framed in black (legend: one entry). One colour bar
    (viridis) for all panels. ``observed``: the paper's value, named in the legend ("consistent with the
    paper's 34.5 pp"); ``legend``: the legend's whole text instead (e.g. for a joint test of several
    values)."""
    xs, ys, fs, fig, axes = _panels(table, x, y, facet)
    lo, hi = float(table[column].min()), float(table[column].max())
    for c, (ax, f) in enumerate(zip(axes, fs)):
        sub = table[table[facet] == f]
        Z = _cell_grid(sub, x, y, column, xs, ys)
        im = ax.imshow(Z, origin="lower", aspect="auto", cmap="viridis", vmin=lo, vmax=hi)
        for (i, j), v in np.ndenumerate(Z):
            if np.isfinite(v):
                shade = (v - lo) / (hi - lo) if hi > lo else 0.5
                ax.text(j, i, f"{v:.0f}", ha="center", va="center",
                        color="black" if shade > 0.55 else "white")
        consistent = _cell_grid(sub.assign(_c=sub.consistent.astype(float)), x, y, "_c", xs, ys) == 1
        for i, j in zip(*np.nonzero(consistent)):  # a thick black frame around each consistent cell
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.2))
        _ticks(ax, xs, ys, x, y, facet, f, c == len(fs) - 1)
    fig.colorbar(im, ax=list(axes), shrink=0.9, pad=0.02, label=label, location="bottom")
    if legend is None:  # the observed value is the paper's: named only where the paper is shown
        legend = f"consistent with the paper's {observed:g} pp" if shown() else "consistent with the targets"
    handle = Patch(facecolor="none", edgecolor="black", linewidth=2.2, label=legend)
    fig.legend(handles=[handle], loc="outside upper center", frameon=False)
    return draw_caption(fig, caption)


@backend_argument(4)  # the previous release's backend=, for one release
def conclusion_figure(table: pd.DataFrame, x: str, y: str, facet: str, status: str = "raw",
                      annotate: str = "truth_1v5_pp", *, caption: str = ""):
    """Where conclusion (a) holds among the consistent settings: consistent cells coloured by
    ``status`` (holds blue, unclear grey, fails vermillion), every other cell pale ("not consistent");
    each cell shows ``annotate`` (the 1 v 5 truth, pp). Legend: four entries."""
    xs, ys, fs, fig, axes = _panels(table, x, y, facet)
    names = [*STATUS_COLOURS, "not consistent"]
    cmap = mcolors.ListedColormap([*STATUS_COLOURS.values(), OUTSIDE_COLOUR])
    for c, (ax, f) in enumerate(zip(axes, fs)):
        sub = table[table[facet] == f]
        code = np.where(sub.consistent, sub[status].map({s: i for i, s in enumerate(names)}), len(names) - 1)
        Z = _cell_grid(sub.assign(_code=code), x, y, "_code", xs, ys)
        ax.imshow(Z, origin="lower", aspect="auto", cmap=cmap, vmin=-0.5, vmax=len(names) - 0.5)
        A = _cell_grid(sub, x, y, annotate, xs, ys)
        for (i, j), v in np.ndenumerate(A):
            if np.isfinite(v):
                dark = Z[i, j] in (names.index("holds"), names.index("fails"))
                ax.text(j, i, f"{v:.1f}", ha="center", va="center",
                        color="white" if dark else "#555555")
        _ticks(ax, xs, ys, x, y, facet, f, c == len(fs) - 1)
    handles = [Patch(facecolor=col, edgecolor="#999999", label=name)
               for name, col in zip(names, [*STATUS_COLOURS.values(), OUTSIDE_COLOUR])]
    fig.legend(handles=handles, loc="outside upper center", ncols=2, frameon=False)
    return draw_caption(fig, caption, "cell text: true 1 v 5 extra divergence (pp)")


@backend_argument(2)  # the previous release's backend=, for one release
def rule_estimates_figure(bias: pd.DataFrame, labels: Sequence[str], rules: Mapping[str, str],
                          comparisons: Sequence[str] = ("0 v 1", "1 v 5"), *, caption: str = ""):
    """Each rule's mean estimate (pp; error bars 2 Monte Carlo SE) at each chosen setting, one panel per
    comparison; the truth of the quantity each rule estimates as a black tick at the rule's position.
    ``rules``: rule name -> its label (at most three, so the legend keeps four entries). Panels stacked."""
    fig, axes = new_figure(nrows=len(comparisons), width=6.0, height=2.8 * len(comparisons) + 1.2, squeeze=False)
    names = list(rules)
    x = np.arange(len(labels))
    for ax, comp in zip(axes[:, 0], comparisons):
        sub = bias[bias.comparison == comp]
        for k, rule in enumerate(names):
            g = sub[sub.rule == rule].sort_values("point")
            xs = x[g.point.astype(int).to_numpy()] + (k - (len(names) - 1) / 2) * 0.22
            ax.errorbar(xs, g.mean_pp, yerr=2 * g.bias_se_pp, color=colour_of(rule), linestyle="none",
                        marker=_RULE_MARKERS[k % len(_RULE_MARKERS)], markersize=6, capsize=2, label=rules[rule])
            ax.scatter(xs, g.truth_pp, marker="_", s=220, color=PALETTE["truth"], linewidths=2, zorder=4,
                       label="truth of the rule's quantity" if k == 0 else None)
        ax.set_xticks(x, [lab.split(" ")[0] for lab in labels])
        ax.set_title(comp)
        ax.set_ylabel("extra divergence (pp)")
        ax.axhline(0, color=PALETTE["muted"], linewidth=0.8)
    axes[-1, 0].set_xlabel("setting consistent with the paper" if shown() else "setting consistent with the targets")
    legend_outside(axes[0, 0], "above", frameon=False)
    return draw_caption(fig, caption)


@backend_argument(1)  # the previous release's backend=, for one release
def power_figure(table: pd.DataFrame, level: float = 0.8, paper_runs: int | None = None, *, caption: str = ""):
    """Power against runs per depth, one line per setting (ladder rows of ``power.power_table``), error
    bars 2 Monte Carlo SE (over independent pools); designs with more instances as open squares of the
    same colour (not in the legend); the ``level`` as a dashed line; ``paper_runs``: a dotted vertical
    line labelled on the plot. Legend above the axes, at most four entries."""
    fig, ax = new_figure(width=6.0, height=4.4)
    for i, (_, g) in enumerate(table.groupby("target_pp", sort=True)):
        colour = _EFFECT_COLOURS[i % len(_EFFECT_COLOURS)]
        k0 = int(g.n_instances.min())
        lad = g[(g.role == "ladder")].sort_values("runs_per_depth")
        ax.errorbar(lad.runs_per_depth, lad.power, yerr=2 * lad.power_se, color=colour, marker="o", markersize=4,
                    capsize=2, label=f"true 1 v 5 effect {g.truth_pp.iloc[0]:.1f} pp")
        more = g[(g.role == "design") & (g.n_instances > k0)]
        if len(more):
            ax.errorbar(more.runs_per_depth + (i - 1) * 0.15, more.power, yerr=2 * more.power_se, color=colour,
                        marker="s", markerfacecolor="none", linestyle="none", capsize=2)
    ax.axhline(level, color=PALETTE["muted"], linestyle="--", linewidth=1, label=f"{level:.0%} power")
    if paper_runs is not None:
        ax.axvline(paper_runs, color=PALETTE["paper"], linestyle=":", linewidth=1.5)
        ax.text(paper_runs, 1.02, " paper's design", color=PALETTE["paper"], va="bottom")
    ax.set_xlabel("runs per depth and instance")
    ax.set_ylabel("power of the 1 v 5 test")
    ax.set_ylim(0, 1.1)
    legend_outside(ax, where="above", ncols=1)
    return draw_caption(fig, caption, "open squares: twice the instances")
