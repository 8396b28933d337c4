"""One look for every figure in the book: size, fonts, palette and the caption under a figure.

A figure is shown as wide as the text column: about 688 px on a laptop, about 358 px on a phone
(a 390 px window). Text that reads well at 688 px can shrink below legibility at 358 px, so sizes
are chosen for the phone: a figure of ``width`` inches shows text of ``s`` points at
``s * 358 / (72 * width)`` px on a phone. The defaults (6 in wide, 11 pt labels, 10 pt ticks) give
about 9 and 8 px; :func:`phone_text_px` measures a figure and :func:`readability_problems` lists
what breaks the book's two rules: text at least :data:`MIN_PHONE_TEXT_PX` px on a phone, legends of
at most :data:`MAX_LEGEND_ENTRIES` entries (more series get direct labels instead).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.text import Text

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

#: width of the text column on a phone (px): a 390 px window minus the page's padding
PHONE_COLUMN_PX = 358
#: the smallest text height (px) a figure may show on a phone
MIN_PHONE_TEXT_PX = 8.0
#: the most entries a legend may have; more series get direct labels
MAX_LEGEND_ENTRIES = 4
#: default figure width (inches): wide enough for two panels, narrow enough for phone-size text
WIDTH = 6.0

RC = {
    "font.family": ["DejaVu Sans"],  # matplotlib's own font: the same on every machine, whatever it has installed
    "svg.hashsalt": "mechaudit",  # SVG element ids from a fixed salt, not a random one (byte-stable files,
    # with ``report.outputs.PNG_METADATA`` / ``SVG_METADATA``)
    "figure.dpi": 150,  # sharp on high-DPI screens; the book scales figures to the text column
    "savefig.dpi": 150,
    "font.size": 11,
    "axes.titlesize": 11,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
}


def new_figure(ncols: int = 1, nrows: int = 1, width: float = WIDTH, height: float = 3.6, **kwargs):
    """A figure of ``width`` x ``height`` inches with the book's style; returns ``(fig, axes)``.

    Titles, labels, ticks and legends added after this call take their font when they are created,
    from ``matplotlib.rcParams``: so this call also sets the book's font and its sizes there (the
    ``font.family`` and ``*size`` entries of :data:`RC`) and the SVG hash salt, for the rest of the
    session, which in a chapter holds only book figures.
    """
    plt.rcParams.update({name: value for name, value in RC.items()
                         if name.endswith("size") or name in ("font.family", "svg.hashsalt")})
    with plt.rc_context(RC):
        fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", **kwargs)
    for ax in np.atleast_1d(axes).ravel():
        for name, value in RC.items():
            if name.startswith("axes.spines."):
                ax.spines[name.rsplit(".", 1)[1]].set_visible(value)
        ax.grid(True, alpha=RC["grid.alpha"])
    return fig, axes


def caption(fig, text: str, note: str = "") -> None:
    """Write ``text`` and then the figure's own ``note`` (joined by ". ", empty parts left out) in
    small grey text under the figure; draw nothing when both are empty.

    ``text`` is the caller's words, e.g. ``"Backend: reference"`` from a chapter's context; ``note``
    is what the figure always says about itself (``"Toy design, no LLM"``).
    """
    joined = ". ".join(t for t in (text, note) if t)
    if joined:
        fig.supxlabel(joined, fontsize=10, color=PALETTE["muted"], x=0.01, ha="left", wrap=True)


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


def phone_text_px(fig, display_px: float = PHONE_COLUMN_PX) -> float:
    """The smallest height (px) of any visible text of ``fig`` when the figure is shown
    ``display_px`` wide (the phone column by default); ``inf`` for a figure without text."""
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes) * display_px / (72 * fig.get_figwidth()) if sizes else float("inf")


def legend_sizes(fig) -> list[int]:
    """The number of entries of every legend of ``fig`` (figure legends and axes legends)."""
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [len(legend.get_texts()) for legend in legends]


def readability_problems(fig, display_px: float = PHONE_COLUMN_PX) -> list[str]:
    """What makes ``fig`` hard to read in the book: text below :data:`MIN_PHONE_TEXT_PX` px on a
    phone, legends of more than :data:`MAX_LEGEND_ENTRIES` entries. Empty when it reads well."""
    problems = []
    smallest = phone_text_px(fig, display_px)
    if smallest < MIN_PHONE_TEXT_PX:
        problems.append(f"text of {smallest:.1f} px on a phone (at least {MIN_PHONE_TEXT_PX:g})")
    problems += [f"a legend of {n} entries (at most {MAX_LEGEND_ENTRIES})"
                 for n in legend_sizes(fig) if n > MAX_LEGEND_ENTRIES]
    return problems
