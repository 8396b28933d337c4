"""Repository-wide pytest set-up: nbval compares text and numbers, never figure bytes.

A figure's PNG differs between CPUs in the last bits of anti-aliased line positions, while every
number drawn in it is identical. So for every notebook that nbval checks anywhere in this
repository (the committed chapters, or a run folder such as ``runs/try``), outputs whose MIME type
is an image are left out of the comparison: plain ``image/*`` and myst-nb's glued figures
(``application/papermill.record/image/*``). Tables, glued numbers and printed text are compared as
before, after the rules in ``tests/nbval_sanitize.cfg``; chapters in ``EXACT_NOTEBOOKS`` are
compared without its float rounding (their printed numbers must match to the last digit).

Under pytest-xdist, ``make test`` distributes whole files (``--dist loadfile``): the cells of one
notebook share one kernel, so they run on one worker, in order.
"""

from __future__ import annotations


def is_figure_mime(key: str) -> bool:
    """True for an output MIME type that holds figure bytes (``image/png``, a glued ``.../image/svg+xml``)."""
    return key.startswith("image/") or "/image/" in key


class _SkipFigures(tuple):
    """nbval's tuple of output keys to skip, extended to every figure MIME type."""

    def __contains__(self, key: object) -> bool:
        return tuple.__contains__(self, key) or (isinstance(key, str) and is_figure_mime(key))


#: chapters whose re-executed text outputs must equal the committed ones exactly
EXACT_NOTEBOOKS = ("01_problem", "03_critique_engagement")
#: the rule of ``tests/nbval_sanitize.cfg`` that rounds floats (not applied to ``EXACT_NOTEBOOKS``)
FLOAT_ROUNDING = r"(\d+\.\d{6})\d+"


def _exact(notebook) -> None:
    """Load the sanitize rules of ``notebook`` without ``FLOAT_ROUNDING`` (an error if rules were
    given but that one is not among them: it must not be kept by a changed spelling)."""
    load = notebook.setup_sanitize_files

    def setup_sanitize_files() -> None:
        load()
        given = bool(notebook.sanitize_patterns)
        if notebook.sanitize_patterns.pop(FLOAT_ROUNDING, None) is None and given:
            raise RuntimeError(f"tests/nbval_sanitize.cfg has no rule {FLOAT_ROUNDING!r} to leave out")

    notebook.setup_sanitize_files = setup_sanitize_files


def pytest_collection_modifyitems(items) -> None:
    notebooks = {item.parent for item in items if type(item.parent).__name__ == "IPyNbFile"}
    for notebook in notebooks:
        notebook.skip_compare = _SkipFigures(notebook.skip_compare)
        if notebook.path.stem in EXACT_NOTEBOOKS:
            _exact(notebook)
