"""Figures read on a laptop and a phone: text at least 11 px when the figure is shown 576 px wide and
8 px at 342 px, legends of at most four entries (``mechaudit.plots.style``), for the shared style
and every figure function of ``mechaudit.plots`` (the cases of ``test_plots_caption``), legends and
titles in the reader's words. The browser test measures the same sizes on the built pages."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import re  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from test_plots_caption import MAKERS  # noqa: E402

from mechaudit.book.ch06_rubric_sensitivity import paper_figure_values  # noqa: E402
from mechaudit.perturb import KINDS  # noqa: E402
from mechaudit.plots.problem import divergence_heatmaps  # noqa: E402
from mechaudit.plots.rubric import rubric_bars  # noqa: E402
from mechaudit.plots.rules import perturbation_bars  # noqa: E402
from mechaudit.plots.style import (  # noqa: E402
    DESKTOP_FIGURE_PX,
    MIN_PHONE_TEXT_PX,
    MIN_TEXT_PX,
    PHONE_FIGURE_PX,
    legend_sizes,
    new_figure,
    readability_problems,
    text_px,
)


def test_the_checks_can_fail():
    fig, ax = new_figure(width=7.0)
    for k in range(6):
        ax.plot([0, 1], [k, k], label=f"series {k}")
    ax.legend(fontsize=7)
    problems = readability_problems(fig)
    assert problems == [f"text of {7 * DESKTOP_FIGURE_PX / (72 * 7.0):.1f} px on a laptop (at least 11)",
                        f"text of {7 * PHONE_FIGURE_PX / (72 * 7.0):.1f} px on a phone (at least 8)",
                        "a legend of 6 entries (at most 4)"]


def test_text_px_is_the_smallest_text_scaled_to_the_shown_width():
    fig, ax = new_figure(width=6.0)
    ax.set_title("t", fontsize=20)
    ax.set_xlabel("x", fontsize=12)
    ax.tick_params(labelsize=12)
    assert text_px(fig) == pytest.approx(12 * 576 / (72 * 6.0))
    assert text_px(fig, PHONE_FIGURE_PX) == pytest.approx(12 * 342 / (72 * 6.0))
    assert text_px(fig, display_px=688) == pytest.approx(12 * 688 / (72 * 6.0))


@pytest.mark.parametrize("width", [4.0, 6.0, 9.0])
def test_the_book_style_sizes_text_for_the_shown_width(width):
    """Text created after ``new_figure`` shows at the same size whatever the figure's width in inches."""
    fig, ax = new_figure(width=width)
    ax.set_xlabel("a label")
    ax.legend(handles=ax.plot([0, 1], [0, 1], label="a line"))
    assert ax.xaxis.label.get_fontsize() == pytest.approx(12 * width / 6.0)
    assert text_px(fig) == pytest.approx(11 * 576 / 432) and text_px(fig) >= MIN_TEXT_PX
    assert text_px(fig, PHONE_FIGURE_PX) >= MIN_PHONE_TEXT_PX


def _heatmaps():
    labels = [f"K{d}-r{i}" for d in (0, 1) for i in range(1, 6)]
    D = np.random.default_rng(0).random((10, 10))
    return divergence_heatmaps({"exact": (D + D.T) / 2, "initiator": (D + D.T) / 4}, labels, n_a=5,
                               caption="Backend: reference")


def _rubric(llm: bool):
    run = [0.0, 0.0, 100.0, 100.0]
    pct = pd.DataFrame({"reference full": run, "reference step": run, "reference none": [0.0] * 4,
                        "llm full": [0.0, 1.0, 83.0, 10.0] if llm else [np.nan] * 4,
                        "llm step": [np.nan] * 4, "llm none": [np.nan] * 4}, index=list(KINDS))
    return rubric_bars(pct, paper_figure_values(["full", "step", "none"]), caption="Backend: reference. offline")


def _perturbation_bars():
    pct = pd.DataFrame({"mechanism_key": [0.0, 0.0, 100.0, 100.0], "reference": [0.0, 0.0, 100.0, 100.0],
                        "tfidf": [0.0] * 4, "embedding": [0.0, 2.0, 8.0, 0.0], "llm": [np.nan] * 4},
                       index=list(KINDS))
    paper = pd.DataFrame({"llm": [0.0, 0.0, 83.0, 13.0], "tfidf": [np.nan, np.nan, 0.0, 0.0]}, index=list(KINDS))
    return perturbation_bars(pct, paper, caption="Backend: reference")


@pytest.mark.parametrize("make", [_heatmaps, lambda: _rubric(False), lambda: _rubric(True), _perturbation_bars],
                         ids=["ch01-heatmaps", "ch06-rubrics-offline", "ch06-rubrics-llm", "perturbation-bars"])
def test_chapter_figures_read_on_a_phone(make):
    fig = make()
    assert readability_problems(fig) == []


#: an identifier as code writes it: lower-case words joined by "_" ("paper_rates", "mechanism_key")
CODE_NAME = re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b")


def _reader_text(fig) -> list[str]:
    """The titles, legend entries and axis labels of ``fig``."""
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [t for t in ([fig.get_suptitle()] + [ax.get_title() for ax in fig.axes]
                        + [ax.get_xlabel() for ax in fig.axes] + [ax.get_ylabel() for ax in fig.axes]
                        + [t.get_text() for legend in legends for t in legend.get_texts()]) if t]


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_every_figure_reads_on_a_laptop_and_a_phone_in_the_readers_words(name):
    make, _ = MAKERS[name]
    fig = make("Backend: reference")
    assert readability_problems(fig) == []
    assert [t for t in _reader_text(fig) if CODE_NAME.search(t)] == []
    plt.close(fig)


def test_the_code_name_check_can_fail():
    fig, ax = new_figure()
    ax.plot([0, 1], [0, 1], label="paper_rates")
    ax.legend()
    ax.set_title("Rule: mechanism_key")
    assert [t for t in _reader_text(fig) if CODE_NAME.search(t)] == ["Rule: mechanism_key", "paper_rates"]
    plt.close(fig)


def test_rubric_figure_has_a_panel_per_judge_that_ran_and_labels_axes_in_words():
    offline, llm = _rubric(False), _rubric(True)
    assert len(offline.axes) == 1 and len(llm.axes) == 2
    assert offline.axes[0].get_xlabel() == "Pairs judged different (%)"
    assert [t.get_text() for t in offline.axes[0].get_yticklabels()] == [
        "Wording only", "Wording and chain", "First step swapped", "Middle step swapped"]
    assert legend_sizes(offline) == [4]
    zero_labels = [t.get_text() for t in offline.axes[0].texts if t.get_text() == "0"]
    assert len(zero_labels) == 8  # a 0 % bar is a visible "0", not an empty slot
