"""One look for every figure in the book: size, fonts, palette and the backend caption."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

#: Colour per role in the book, colour-blind safe (Okabe-Ito).
PALETTE = {
    "truth": "#000000",
    "mechanism_key": "#000000",
    "reference": "#0072B2",
    "llm": "#D55E00",
    "tfidf": "#E69F00",
    "embedding": "#009E73",
    "paper": "#CC79A7",
    "accent": "#56B4E9",
    "muted": "#999999",
}

RC = {
    "figure.dpi": 150,  # sharp on high-DPI screens; the book scales figures to the text column
    "savefig.dpi": 150,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
}


def new_figure(ncols: int = 1, nrows: int = 1, width: float = 6.4, height: float = 3.6, **kwargs):
    """A figure of ``width`` x ``height`` inches with the book's style; returns ``(fig, axes)``."""
    with plt.rc_context(RC):
        fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", **kwargs)
    for ax in np.atleast_1d(axes).ravel():
        for name, value in RC.items():
            if name.startswith("axes.spines."):
                ax.spines[name.rsplit(".", 1)[1]].set_visible(value)
        ax.grid(True, alpha=RC["grid.alpha"])
    return fig, axes


def backend_caption(fig, backend: str, extra: str = "") -> None:
    """Write "Backend: <backend>" (and ``extra``) in small grey text under the figure."""
    text = f"Backend: {backend}" + (f". {extra}" if extra else "")
    fig.supxlabel(text, fontsize=8, color=PALETTE["muted"], x=0.01, ha="left")


def legend_outside(ax, where: str = "right", **kwargs):
    """Draw ``ax``'s legend outside the plotting area, so it never covers data; returns the legend.

    ``where="right"`` puts it beside the axes (top-aligned), ``"below"`` under them in up to four
    columns. Keyword arguments go to ``Axes.legend``. Use with ``new_figure`` (constrained layout
    makes room for the legend).
    """
    if where == "right":
        place = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0}
    elif where == "below":
        handles, _ = ax.get_legend_handles_labels()
        place = {"loc": "upper center", "bbox_to_anchor": (0.5, -0.18), "ncols": min(4, max(1, len(handles)))}
    else:
        raise ValueError(f"where must be 'right' or 'below', not {where!r}")
    return ax.legend(**{**place, **kwargs})


#: colours for series that are not one of the book's roles (cycled), colour-blind safe
EXTRA_COLOURS = ["#56B4E9", "#999999", "#000000", "#F0E442"]


def colour_of(name: str, k: int = 0) -> str:
    """The palette colour of a rule or method, by its name's prefix (``mechanism_key``, ``tfidf``,
    ``embedding``, ``reference``, ``llm``; case, spaces and hyphens ignored); any other name gets
    ``EXTRA_COLOURS[k]`` (cycled), so ``k``-th unknown series still differ."""
    key = name.lower().replace("-", "").replace(" ", "_")
    if key.startswith("mechanism"):
        return PALETTE["mechanism_key"]
    for role in ("tfidf", "embedding", "reference", "llm"):
        if key.startswith(role):
            return PALETTE[role]
    return EXTRA_COLOURS[k % len(EXTRA_COLOURS)]
