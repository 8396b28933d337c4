"""Repository-wide pytest set-up: nbval compares text and numbers, never figure bytes.

A figure's PNG differs between CPUs in the last bits of anti-aliased line positions, while every
number drawn in it is identical. So for every notebook that nbval checks anywhere in this
repository (the committed chapters, or a run folder such as ``runs/try``), outputs whose MIME type
is an image are left out of the comparison: plain ``image/*`` and myst-nb's glued figures
(``application/papermill.record/image/*``). Tables, glued numbers and printed text are compared as
before, after the rules in ``tests/nbval_sanitize.cfg``.
"""

from __future__ import annotations


def is_figure_mime(key: str) -> bool:
    """True for an output MIME type that holds figure bytes (``image/png``, a glued ``.../image/svg+xml``)."""
    return key.startswith("image/") or "/image/" in key


class _SkipFigures(tuple):
    """nbval's tuple of output keys to skip, extended to every figure MIME type."""

    def __contains__(self, key: object) -> bool:
        return tuple.__contains__(self, key) or (isinstance(key, str) and is_figure_mime(key))


def pytest_collection_modifyitems(items) -> None:
    for notebook in {item.parent for item in items if type(item.parent).__name__ == "IPyNbFile"}:
        notebook.skip_compare = _SkipFigures(notebook.skip_compare)
