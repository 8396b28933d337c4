"""Figures of chapter 01: the toy design's divergence matrices."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from mechaudit.plots.style import backend_caption, new_figure


def divergence_heatmaps(matrices: Mapping[str, np.ndarray], labels: Sequence[str], n_a: int,
                        backend: str, width: float = 7.0, height: float = 3.6):
    """One heatmap per equivalence rule of a run-by-run divergence matrix (values 0..1).

    ``matrices`` maps a rule name to its ``(n, n)`` matrix; ``labels`` names the n runs; the first
    ``n_a`` runs are at depth a, and a line separates the depth blocks.
    """
    fig, axes = new_figure(ncols=len(matrices), width=width, height=height)
    axes = np.atleast_1d(axes)
    n = len(labels)
    for ax, (rule, D) in zip(axes, matrices.items()):
        shown = np.where(np.eye(n, dtype=bool), np.nan, D)
        im = ax.imshow(shown, vmin=0, vmax=1, cmap="viridis")
        ax.set_title(f"rule: {rule}")
        ax.set_xticks(range(n), labels, rotation=90, fontsize=7)
        ax.set_yticks(range(n), labels, fontsize=7)
        ax.grid(False)
        for pos in (n_a - 0.5,):
            ax.axhline(pos, color="white", lw=1.5)
            ax.axvline(pos, color="white", lw=1.5)
    fig.colorbar(im, ax=list(axes), shrink=0.8, label="run divergence")
    backend_caption(fig, backend, "Toy design, no LLM involved")
    return fig
