"""Figures read on a phone: text at least 8 px when the figure is 358 px wide, legends of at most
four entries (``mechaudit.plots.style``), for the shared style, the figures of chapters 01 and 06
and the per-kind bar chart of any rules (``perturbation_bars``)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from mechaudit.book.ch06_rubric_sensitivity import paper_figure_values  # noqa: E402
from mechaudit.perturb import KINDS  # noqa: E402
from mechaudit.plots.problem import divergence_heatmaps  # noqa: E402
from mechaudit.plots.rubric import rubric_bars  # noqa: E402
from mechaudit.plots.rules import perturbation_bars  # noqa: E402
from mechaudit.plots.style import (  # noqa: E402
    MIN_PHONE_TEXT_PX,
    PHONE_COLUMN_PX,
    legend_sizes,
    new_figure,
    phone_text_px,
    readability_problems,
)


def test_the_checks_can_fail():
    fig, ax = new_figure(width=7.0)
    for k in range(6):
        ax.plot([0, 1], [k, k], label=f"series {k}")
    ax.legend(fontsize=7)
    problems = readability_problems(fig)
    assert problems == [f"text of {7 * PHONE_COLUMN_PX / (72 * 7.0):.1f} px on a phone (at least 8)",
                        "a legend of 6 entries (at most 4)"]


def test_phone_text_px_is_the_smallest_text_scaled_to_the_phone_column():
    fig, ax = new_figure(width=6.0)
    ax.set_title("t", fontsize=20)
    ax.set_xlabel("x", fontsize=12)
    ax.tick_params(labelsize=12)
    assert phone_text_px(fig) == pytest.approx(12 * 358 / (72 * 6.0))
    assert phone_text_px(fig, display_px=688) == pytest.approx(12 * 688 / (72 * 6.0))


def test_the_book_style_sizes_text_created_after_the_figure():
    fig, ax = new_figure()
    ax.set_xlabel("a label")
    assert ax.xaxis.label.get_fontsize() == 11 and phone_text_px(fig) >= MIN_PHONE_TEXT_PX


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


def test_rubric_figure_has_a_panel_per_judge_that_ran_and_labels_axes_in_words():
    offline, llm = _rubric(False), _rubric(True)
    assert len(offline.axes) == 1 and len(llm.axes) == 2
    assert offline.axes[0].get_xlabel() == "Pairs judged different (%)"
    assert [t.get_text() for t in offline.axes[0].get_yticklabels()] == [
        "Wording only", "Wording and chain", "First step swapped", "Middle step swapped"]
    assert legend_sizes(offline) == [4]
    zero_labels = [t.get_text() for t in offline.axes[0].texts if t.get_text() == "0"]
    assert len(zero_labels) == 8  # a 0 % bar is a visible "0", not an empty slot
