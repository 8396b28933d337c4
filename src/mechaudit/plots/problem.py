"""Figures of chapter 01: the toy design's divergence matrices."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from mechaudit.deprecation import backend_argument
from mechaudit.plots.style import caption as draw_caption
from mechaudit.plots.style import new_figure
from mechaudit.report.labels import label


@backend_argument(3)  # the previous release's backend=, for one release
def divergence_heatmaps(matrices: Mapping[str, np.ndarray], labels: Sequence[str], n_a: int,
                        width: float = 6.0, height: float = 3.5, *, caption: str = ""):
    """One heatmap per equivalence rule (``matrices``: rule -> ``(n, n)`` divergence matrix, 0..1,
    over the runs named by ``labels``; the first ``n_a`` at depth a). A white line separates the
    depth blocks, and the axes name the blocks, not the runs (legible on a phone)."""
    fig, axes = new_figure(ncols=len(matrices), width=width, height=height)
    axes = np.atleast_1d(axes)
    n = len(labels)
    blocks = [((n_a - 1) / 2, f"depth {_depth(labels[0])}"), ((n_a + n - 1) / 2, f"depth {_depth(labels[-1])}")]
    for ax, (rule, D) in zip(axes, matrices.items()):
        shown = np.where(np.eye(n, dtype=bool), np.nan, D)
        im = ax.imshow(shown, vmin=0, vmax=1, cmap="viridis")
        ax.set_title(label(rule))
        ax.set_xticks([b[0] for b in blocks], [b[1] for b in blocks])
        ax.set_yticks([b[0] for b in blocks], [b[1] for b in blocks], rotation=90, va="center")
        ax.set_xticks(range(n), minor=True)
        ax.set_yticks(range(n), minor=True)
        ax.tick_params(which="major", length=0)
        ax.grid(False)
        ax.axhline(n_a - 0.5, color="white", lw=2)
        ax.axvline(n_a - 0.5, color="white", lw=2)
    fig.colorbar(im, ax=list(axes), shrink=0.85, label="Run divergence (share)")
    return draw_caption(fig, caption, "Toy design, no LLM")


def _depth(run_label: str) -> str:
    """The depth in a toy run label ("K1-r3" -> "1"); the label itself when it has no "K<depth>-"."""
    head = str(run_label).split("-", 1)[0]
    return head[1:] if head[:1] == "K" and head[1:].isdigit() else str(run_label)
