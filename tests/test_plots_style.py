"""The figure helpers of ``mechaudit.plots`` by value: colours by role, legend placement, the book's
style on a new figure, text sizes as shown, and the small helpers of the figure modules."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from mechaudit.plots import problem, robustness, style, tau  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_style():
    """matplotlib's defaults first (``new_figure`` sets process-wide rcParams, which an earlier figure in
    this process, or in the process a mutant run was forked from, would have set already)."""
    plt.rcdefaults()
    yield
    plt.close("all")


@pytest.mark.parametrize("name, k, colour", [
    ("TF-IDF", 0, style.PALETTE["tfidf"]), ("tfidf_0.3", 5, style.PALETTE["tfidf"]),
    ("Embedding (MiniLM)", 0, style.PALETTE["embedding"]), ("reference rule", 0, style.PALETTE["reference"]),
    ("LLM judge", 0, style.PALETTE["llm"]), ("Mechanism key", 0, style.PALETTE["mechanism_key"]),
    ("other", 0, style.EXTRA_COLOURS[0]), ("other", 1, style.EXTRA_COLOURS[1]), ("other", 5, style.EXTRA_COLOURS[1]),
])
def test_colour_of_a_role_whatever_its_case_and_of_others_by_their_index(name, k, colour):
    assert style.colour_of(name, k) == colour
    if k == 0:
        assert style.colour_of(name) == colour  # the first unknown series takes the first extra colour


def _plotted(n: int):
    fig, ax = style.new_figure()
    for i in range(n):
        ax.plot([0, 1], [i, i], label=f"s{i}")
    return fig, ax


def test_legends_beside_below_and_above():
    fig, ax = _plotted(6)
    right = style.legend_outside(ax)
    assert right is ax.get_legend() and right._loc == 2  # "upper left" of the box beside the axes
    assert tuple(right.get_bbox_to_anchor()._bbox.bounds[:2]) == (1.01, 1.0) and right.borderaxespad == 0.0
    below = style.legend_outside(ax, "below")
    assert below._loc == 9 and below._ncols == 4  # "upper center", at most four columns
    assert tuple(below.get_bbox_to_anchor()._bbox.bounds[:2]) == (0.5, -0.18)
    fig2, ax2 = _plotted(2)
    assert style.legend_outside(ax2, "below")._ncols == 2
    above = style.legend_outside(ax2, "above")
    assert above in fig2.legends and above._ncols == 2 and (above._loc, above._outside_loc) == (9, "upper")
    assert style.legend_outside(ax2, "above", ncols=1)._ncols == 1
    with pytest.raises(ValueError, match="where must be 'right', 'below' or 'above', not 'left'"):
        style.legend_outside(ax2, "left")


def test_a_new_figure_has_the_book_style_and_scales_its_fonts_with_its_width():
    fig, ax = style.new_figure(width=9.0, height=3.0)
    assert tuple(fig.get_size_inches()) == (9.0, 3.0)
    assert not ax.spines["top"].get_visible() and not ax.spines["right"].get_visible()
    assert ax.spines["left"].get_visible()
    assert ax.xaxis.get_gridlines()[0].get_visible() and ax.xaxis.get_gridlines()[0].get_alpha() == 0.3
    assert plt.rcParams["font.size"] == style.FONT_PT * 1.5 and plt.rcParams["axes.labelsize"] == style.LABEL_PT * 1.5
    assert plt.rcParams["font.family"] == ["DejaVu Sans"] and plt.rcParams["svg.hashsalt"] == "mechaudit"


def test_text_size_as_shown_and_the_readability_limits():
    fig, ax = style.new_figure(width=6.0)
    assert style.text_px(fig) == float("inf")  # no text yet
    ax.set_title("at 12 pt")
    ax.text(0.5, 0.5, "x", fontsize=8)
    ax.text(0.5, 0.5, "hidden", fontsize=2).set_visible(False)
    assert style.text_px(fig, 576) == pytest.approx(8 * 576 / (72 * 6.0))  # the smallest visible text
    assert style.readability_problems(fig) == ["text of 10.7 px on a laptop (at least 11)",
                                               "text of 6.3 px on a phone (at least 8)"]
    fig2, ax2 = style.new_figure(width=6.0)
    ax2.text(0.5, 0.5, "x", fontsize=11 * 72 * 6.0 / 576)  # exactly 11 px on a laptop: allowed there
    assert style.readability_problems(fig2) == ["text of 6.5 px on a phone (at least 8)"]
    fig3, ax3 = style.new_figure(width=6.0)
    ax3.text(0.5, 0.5, "x", fontsize=8 * 72 * 6.0 / 342)  # exactly 8 px on a phone (13.5 on a laptop)
    assert style.text_px(fig3, 342) == 8.0 and style.readability_problems(fig3) == []


def test_the_figure_modules_small_helpers():
    assert [problem._depth(x) for x in ("K1-r3", "K12-r1", "Kx-r1", "run-2")] == ["1", "12", "Kx-r1", "run-2"]
    assert np.array_equal(tau._cut_at(np.array([0.5, 1.0, 1.5]), 1.0), [0.5, 1.0, np.nan], equal_nan=True)
    table = pd.DataFrame({"a": [1, 2, 1, 2, 1, 2], "b": [0.1, 0.1, 0.2, 0.2, 0.3, 0.3], "f": [0, 0, 0, 1, 1, 1]})
    xs, ys, fs, fig, axes = robustness._panels(table, "a", "b", "f")
    assert (xs, ys, fs) == ([1, 2], [0.1, 0.2, 0.3], [0, 1]) and len(axes) == 2
    assert tuple(fig.get_size_inches()) == pytest.approx((6.0, (0.4 * 3 + 0.9) * 2 + 1.6))
    assert axes[0].get_shared_x_axes().joined(axes[0], axes[1])
    robustness._ticks(axes[1], xs, ys, "a", "unnamed_factor", "f", 1.0, last=True)
    assert not any(g.get_visible() for g in axes[1].xaxis.get_gridlines())
    assert axes[1].get_ylabel() == "unnamed_factor" and axes[1].get_xlabel() == robustness.FACTOR_LABELS.get("a", "a")
    assert [t.get_text() for t in axes[1].get_yticklabels()] == ["0.1", "0.2", "0.3"]


def test_the_caption_is_grey_text_under_the_figure_from_its_left_edge():
    fig, _ = style.new_figure()
    assert style.caption(fig, "Backend: reference", "Toy design") is fig
    label = fig._supxlabel
    assert label.get_text() == "Backend: reference. Toy design" and label.get_color() == style.PALETTE["muted"]
    assert (label.get_position()[0], label.get_ha(), label.get_wrap()) == (0.01, "left", True)
    fig2, _ = style.new_figure()
    assert style.caption(fig2, "", "") is fig2 and fig2._supxlabel is None
