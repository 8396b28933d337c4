"""Figure of chapter 06: the share of pairs each rubric calls different, per perturbation kind."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from mechaudit.deprecation import backend_argument
from mechaudit.errors import MechauditError
from mechaudit.plots.style import PALETTE, new_figure
from mechaudit.plots.style import caption as draw_caption
from mechaudit.report.labels import label

#: colour per rubric: the two that define "same mechanism" in blues, the one without a definition grey
RUBRIC_COLOURS = {"full": "#0072B2", "step": "#56B4E9", "none": "#999999"}
RUBRIC_NAMES = {"full": "Full rubric", "step": "Step-by-step rubric", "none": "No rubric"}
JUDGE_NAMES = {"reference": "Reference judge (reads the causal chain)", "llm": "LLM judge",
               "selfserved": "Self-served small LLM (recorded answers)"}


def _split(column: str) -> tuple[str, str]:
    """"reference full" -> ("reference", "full")."""
    judge, _, rubric = column.rpartition(" ")
    return judge, rubric


def _check_columns(columns) -> None:
    """A one-line ``MechauditError`` for the first column that is not ``"<judge> <rubric>"`` with a
    judge of :data:`JUDGE_NAMES` and a rubric of :data:`RUBRIC_NAMES` (it has no panel or bar)."""
    for column in columns:
        judge, rubric = _split(str(column))
        if judge not in JUDGE_NAMES or rubric not in RUBRIC_NAMES:
            raise MechauditError(f"rubric_bars cannot place column {column!r}: its columns are '<judge> <rubric>' "
                                 f"with judge {' or '.join(JUDGE_NAMES)} and rubric {', '.join(RUBRIC_NAMES)}; "
                                 "draw other rules with perturbation_bars", field="pct")


@backend_argument(2, extra=True)  # the previous release's backend=, for one release
def rubric_bars(pct: pd.DataFrame, paper: pd.DataFrame | None, *, caption: str = ""):
    """% of valid pairs judged different per perturbation kind (rows of ``pct``) and rubric (columns
    ``"<judge> <rubric>"``, NaN: not run; other columns are refused: ``perturbation_bars`` draws
    rules). One panel per judge that ran, bars labelled with their values; ``paper`` (columns ``llm
    <rubric>``) as diamonds on the LLM panel (else the self-served judge's, else the first).
    """
    _check_columns(pct.columns)
    judges = [j for j in dict.fromkeys(_split(c)[0] for c in pct.columns)
              if pct[[c for c in pct.columns if _split(c)[0] == j]].notna().any().any()]
    judges = judges or [_split(pct.columns[0])[0]]
    rubrics = list(dict.fromkeys(_split(c)[1] for c in pct.columns))
    kinds = list(pct.index)
    fig, axes = new_figure(nrows=len(judges), width=6.0, height=1.0 + 2.3 * len(judges), sharex=True, squeeze=False)
    y = np.arange(len(kinds))[::-1]
    height = 0.8 / max(len(rubrics), 1)
    paper_judge = next((j for j in ("llm", "selfserved") if j in judges), judges[0])
    for ax, judge in zip(axes[:, 0], judges):
        for k, rubric in enumerate(rubrics):
            values = pct.get(f"{judge} {rubric}", pd.Series(np.nan, index=kinds)).to_numpy(dtype=float)
            pos = y + 0.4 - height * (k + 0.5)
            ax.barh(pos, np.nan_to_num(values), height=height * 0.9, color=RUBRIC_COLOURS.get(rubric, "#000000"))
            for p, v in zip(pos, values):
                ax.text(1.5 if np.isnan(v) else v + 1.5, p, "not run" if np.isnan(v) else f"{v:.0f}",
                        va="center", ha="left", color="#333333")
            if paper is not None and judge == paper_judge and f"llm {rubric}" in paper.columns:
                ref = paper[f"llm {rubric}"].reindex(kinds).to_numpy(dtype=float)
                keep = ~np.isnan(ref)
                ax.scatter(ref[keep], pos[keep], marker="D", s=40, color=PALETTE["paper"], edgecolor="black",
                           linewidth=0.6, zorder=3)
        ax.set_yticks(y, [label(k) for k in kinds])
        ax.set_title(JUDGE_NAMES.get(judge, label(judge)), loc="left")
        ax.set_xlim(0, 112)
        ax.grid(axis="y", visible=False)
    axes[-1, 0].set_xlabel("Pairs judged different (%)")
    handles = [Patch(color=RUBRIC_COLOURS.get(r, "#000000"), label=RUBRIC_NAMES.get(r, label(r))) for r in rubrics]
    if paper is not None:
        handles.append(Line2D([], [], marker="D", ls="", color=PALETTE["paper"], markeredgecolor="black",
                              label="Paper (LLM judge)"))
    fig.legend(handles=handles, loc="outside upper center", ncols=2, frameon=False)
    return draw_caption(fig, caption)
