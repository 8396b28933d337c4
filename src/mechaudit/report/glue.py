"""Numbers in a chapter's prose come from its cells: ``glue`` them, cite them with ``{glue:text}``.

A chapter calls ``glue("name", value, digits=1)`` and its markdown says ``{glue:text}`name` ``: the
sentence shows the number the cell computed, rounded before it is stored (stable under nbval).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mechaudit import paper
from mechaudit.errors import MechauditError
from mechaudit.report.outputs import SVG_METADATA


def glue(name: str, value: Any, digits: int | None = None) -> Any:
    """Store ``value`` under ``name`` for the book (myst-nb ``glue``, not displayed) and return it.

    ``digits``: round a number to this many decimals first (0 gives an ``int``; NaN or infinity is
    refused: a chapter says in words what it does not know); ``None`` stores the value as is. A
    string is stored quoted, so that ``{glue:text}`` (``ast.literal_eval``) reads "4,863" back as
    text, not as the tuple ``(4, 863)``. A key that names the paper is stored only while the
    chapter shows the paper's numbers (``mechaudit.paper.shown``).
    """
    from myst_nb import glue as _glue  # the book's renderer; imported only where a chapter runs

    if isinstance(value, (np.integer, np.floating, np.bool_)):
        value = value.item()
    if digits is not None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"glue {name!r}: digits given for a non-number {value!r}")
        if not math.isfinite(value):
            raise MechauditError(f"glue {name!r}: {value} cannot be rounded into a sentence; glue a "
                                 "text that says the value is unknown instead")
        value = int(round(value)) if digits == 0 else round(float(value), digits)
    if not paper.shown() and paper.names_paper(name):
        return value  # the paper's numbers are off in this chapter: nothing stored
    _glue(name, str(value) if isinstance(value, str) else value, display=False)
    return value


def glue_figure(name: str, fig: Any) -> Any:
    """Store a matplotlib figure under ``name`` for a numbered, captioned ``{glue:figure}`` (the cell
    shows nothing; :class:`StoredFigure` keeps the bytes stable), close it and return it."""
    import matplotlib.pyplot as plt  # defers matplotlib
    from myst_nb import glue as _glue  # defers myst_nb: imported only where a chapter runs

    _glue(name, StoredFigure(fig), display=False)
    plt.close(fig)
    return fig


class StoredFigure:
    """A figure as a notebook stores it: its ``repr`` as text, and the SVG IPython's inline backend
    draws (``print_figure``: a tight bounding box) without a date or the matplotlib version
    (``report.outputs.SVG_METADATA``)."""

    def __init__(self, figure: Any):
        self.figure = figure

    def __repr__(self) -> str:
        return repr(self.figure)

    def _repr_svg_(self) -> str | None:
        from IPython.core.pylabtools import print_figure  # defers IPython

        return print_figure(self.figure, "svg", metadata=SVG_METADATA)


def span_text(low: float, high: float, digits: int = 2, unit: str = "") -> str:
    """A range as a sentence needs it: "between 2.98 and 3.04" or, when both ends round to the same
    number, "at 3.04" (never "between 3.04 and 3.04"). ``unit`` follows each number ("5 %")."""
    a, b = round(float(low), digits), round(float(high), digits)
    fmt = (lambda x: f"{x:.{digits}f}{unit}") if digits else (lambda x: f"{int(x)}{unit}")
    return f"at {fmt(a)}" if a == b else f"between {fmt(min(a, b))} and {fmt(max(a, b))}"


def at_most_text(value: float, digits: int = 3, what: str = "differ") -> str:
    """"differ by at most 0.012", or "do not differ" when ``value`` rounds to 0 (never "at most 0.0")."""
    rounded = round(float(value), digits)
    return f"do not {what}" if rounded == 0 else f"{what} by at most {rounded:.{digits}f}"
