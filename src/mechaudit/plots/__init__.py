"""Every figure of the book, one function each, in one style (see ``mechaudit.plots.style``)."""

from mechaudit.plots.style import PALETTE, backend_caption, new_figure

__all__ = ["PALETTE", "backend_caption", "new_figure"]
