"""One look for every figure in the book: size, fonts, palette and the caption under a figure.

The book shows every figure at the column's width (:data:`DESKTOP_FIGURE_PX`, :data:`PHONE_FIGURE_PX`),
so text of ``s`` points in a figure ``w`` inches wide shows at ``s * display_px / (72 * w)`` px;
:func:`new_figure` scales the fonts of :data:`RC` by ``width / WIDTH`` so that text reads the same in
every figure. :func:`readability_problems` lists what breaks the book's rules (text size, legend
entries); the browser test measures the same sizes on the built pages.
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

#: displayed width (px) of a figure on a laptop: the column (672 px at 1280 px), capped at 36rem
DESKTOP_FIGURE_PX = 576
#: displayed width (px) of a figure on a phone: the column of a 390 px window
PHONE_FIGURE_PX = 342
#: the smallest text height (px, the font's em) a figure may show on a laptop
MIN_TEXT_PX = 11.0
#: the smallest text height (px) a figure may show on a phone
MIN_PHONE_TEXT_PX = 8.0
#: the most entries a legend may have; more series get direct labels
MAX_LEGEND_ENTRIES = 4
#: the width (inches) the font sizes of :data:`RC` are set for; a wider figure gets larger fonts
WIDTH = 6.0
#: the book's smallest font (points, at :data:`WIDTH` inches): ticks, legends, notes in the plot
FONT_PT = 11
#: titles and axis labels (points, at :data:`WIDTH` inches)
LABEL_PT = 12

RC = {
    "font.family": ["DejaVu Sans"],  # matplotlib's own font: the same on every machine, whatever it has installed
    "svg.hashsalt": "mechaudit",  # SVG element ids from a fixed salt, not a random one (byte-stable files,
    # with ``report.outputs.PNG_METADATA`` / ``SVG_METADATA``)
    "svg.fonttype": "path",  # text drawn as glyph outlines: the same letters in every browser
    "figure.dpi": 150,  # sharp on high-DPI screens; the book scales figures to the text column
    "savefig.dpi": 150,
    "font.size": FONT_PT,
    "axes.titlesize": LABEL_PT,
    "axes.labelsize": LABEL_PT,
    "figure.titlesize": LABEL_PT,
    "figure.labelsize": FONT_PT,
    "xtick.labelsize": FONT_PT,
    "ytick.labelsize": FONT_PT,
    "legend.fontsize": FONT_PT,
    "legend.title_fontsize": FONT_PT,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
}


def new_figure(ncols: int = 1, nrows: int = 1, width: float = WIDTH, height: float = 3.6, **kwargs):
    """A figure of ``width`` x ``height`` inches with the book's style; returns ``(fig, axes)``.

    Text added later takes its font from ``matplotlib.rcParams`` when it is created, so this call also
    sets the font, ``svg.*`` and the sizes of :data:`RC` (times ``width / WIDTH``) there for the rest
    of the session (in a chapter: only book figures)."""
    scale = width / WIDTH
    style = {name: value * scale if name.endswith("size") else value for name, value in RC.items()}
    plt.rcParams.update({name: value for name, value in style.items()
                         if name.endswith("size") or name == "font.family" or name.startswith("svg.")})
    with plt.rc_context(style):
        fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", **kwargs)
    for ax in np.atleast_1d(axes).ravel():
        for name, value in RC.items():
            if name.startswith("axes.spines."):
                ax.spines[name.rsplit(".", 1)[1]].set_visible(value)
        ax.grid(True, alpha=RC["grid.alpha"])
    return fig, axes


def caption(fig, text: str, note: str = ""):
    """Write the caller's ``text`` (``"Backend: reference"``) and then the figure's own ``note``
    (``"Toy design, no LLM"``), joined by ". ", in small grey text under the figure (nothing when both
    are empty); returns ``fig``, so a figure function ends with ``return caption(fig, ...)``."""
    joined = ". ".join(t for t in (text, note) if t)
    if joined:
        fig.supxlabel(joined, color=PALETTE["muted"], x=0.01, ha="left", wrap=True)
    return fig


def legend_outside(ax, where: str = "right", **kwargs):
    """Draw ``ax``'s legend outside the plotting area (``new_figure``'s layout makes room) and return
    it: ``"right"`` beside the axes, ``"below"`` under them in up to four columns, ``"above"`` a
    two-column figure legend over the panels (most room on a phone). ``kwargs`` go to ``legend``."""
    handles, labels = ax.get_legend_handles_labels()
    if where == "above":
        return ax.figure.legend(handles, labels, **{"loc": "outside upper center", "ncols": 2, **kwargs})
    if where == "right":
        place = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0}
    elif where == "below":
        place = {"loc": "upper center", "bbox_to_anchor": (0.5, -0.18), "ncols": min(4, max(1, len(handles)))}
    else:
        raise ValueError(f"where must be 'right', 'below' or 'above', not {where!r}")
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


def text_px(fig, display_px: float = DESKTOP_FIGURE_PX) -> float:
    """The smallest height (px) of any visible text of ``fig`` when the figure is shown ``display_px``
    wide (a laptop by default); ``inf`` for a figure without text."""
    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes) * display_px / (72 * fig.get_figwidth()) if sizes else float("inf")


def legend_sizes(fig) -> list[int]:
    """The number of entries of every legend of ``fig`` (figure legends and axes legends)."""
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    return [len(legend.get_texts()) for legend in legends]


def readability_problems(fig) -> list[str]:
    """What makes ``fig`` hard to read in the book: text below :data:`MIN_TEXT_PX` px on a laptop or
    :data:`MIN_PHONE_TEXT_PX` px on a phone, legends of more than :data:`MAX_LEGEND_ENTRIES` entries.
    Empty when it reads well."""
    problems = []
    for where, shown, least in (("a laptop", DESKTOP_FIGURE_PX, MIN_TEXT_PX), ("a phone", PHONE_FIGURE_PX,
                                                                               MIN_PHONE_TEXT_PX)):
        smallest = text_px(fig, shown)
        if smallest < least:
            problems.append(f"text of {smallest:.1f} px on {where} (at least {least:g})")
    problems += [f"a legend of {n} entries (at most {MAX_LEGEND_ENTRIES})"
                 for n in legend_sizes(fig) if n > MAX_LEGEND_ENTRIES]
    return problems
