"""Write a chapter's tables and figures to disk: ``save(name, table_or_figure, out_dir)``.

A chapter defines the parameter ``out_dir = None`` and calls ``save`` after each table or figure it
shows. ``mechaudit execute --out DIR`` sets ``out_dir`` to ``DIR/<chapter>`` (for chapters that
define it), so a run folder holds the executed notebook and, beside it, one CSV per table and a PNG
and an SVG per figure. With ``out_dir = None`` (the committed book) ``save`` writes nothing.

Files are reproducible: a CSV is pandas' ``to_csv`` (floats as computed, index kept when it carries
labels); figures are written at a fixed dpi with no creation date or software stamp, from a copy,
so saving never changes the figure the notebook shows.

Drawing a figure twice (PNG and SVG) costs more than most computations of a chapter, so
``mechaudit execute`` has it done beside the chapter, on another core: it marks the chapter's output
folder with :data:`DEFER_MARK`, and ``save`` then only stores the figure (pickled, with the
matplotlib settings in force) as ``.NAME.figure``; a process the runner starts
(``python -m mechaudit.outputs FOLDER``, :func:`write_pending_figures`) draws each into ``NAME.png``
and ``NAME.svg`` with the same code, so the files are the same bytes either way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mechaudit.errors import MechauditError

__all__ = ["DEFER_MARK", "FIGURE_DPI", "save", "write_pending_figures"]

#: resolution of the PNG copy of a figure (dots per inch)
FIGURE_DPI = 150
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: a file in an output folder asking ``save`` to store figures for :func:`write_pending_figures`
DEFER_MARK = ".mechaudit-defer-figures"
#: suffix of a stored figure (``.NAME.figure``) and of one claimed for drawing
_PENDING, _CLAIMED = ".figure", ".figure-drawing"
#: matplotlib settings that are not drawing settings (a stored figure is drawn under the others)
_NOT_DRAWING = ("backend", "backend_fallback")


def _is_figure(obj: Any) -> bool:
    from matplotlib.figure import Figure

    return isinstance(obj, Figure)


def save(name: str, obj: Any, out_dir: str | Path | None) -> Any:
    """Write ``obj`` under ``out_dir`` (nothing when ``out_dir`` is None) and return ``obj``, so one
    line saves and shows a table: ``save("rates", table, out_dir)`` as a cell's last expression.

    ``obj`` is a pandas DataFrame or Series (-> ``name.csv``) or a matplotlib Figure (->
    ``name.png`` and ``name.svg``). ``name`` is a file stem: letters, digits, ``_``, ``.``, ``-``.
    The folder is created if needed; an existing file of the same name is replaced.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise MechauditError(f"{name!r} is not a file stem (letters, digits, _ . -)", field="name")
    import pandas as pd

    if not isinstance(obj, (pd.DataFrame, pd.Series)) and not _is_figure(obj):
        raise MechauditError(f"cannot save a {type(obj).__name__}: expected a pandas DataFrame or Series "
                             "or a matplotlib Figure", field=name)
    if out_dir is None:
        return obj
    folder = Path(out_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise MechauditError(f"cannot create the folder: {err.strerror or err}", file=folder, field="out_dir") from None
    if isinstance(obj, (pd.DataFrame, pd.Series)):
        path = folder / f"{name}.csv"
        labelled = not isinstance(obj.index, pd.RangeIndex) or any(n is not None for n in obj.index.names)
        obj.to_csv(path, index=labelled)
        return obj
    import pickle

    import matplotlib

    stored = pickle.dumps(obj)
    if (folder / DEFER_MARK).exists():
        settings = {k: v for k, v in matplotlib.rcParams.items() if k not in _NOT_DRAWING}
        part = folder / f".{name}{_PENDING}.part"
        part.write_bytes(pickle.dumps((stored, settings)))
        part.replace(folder / f".{name}{_PENDING}")  # whole or not at all for the process that draws it
        return obj
    _draw(folder, name, stored)
    return obj


def _draw(folder: Path, name: str, stored: bytes) -> None:
    """``name.png`` and ``name.svg`` from a pickled figure, each drawn from its own copy (drawing
    lays a figure out again: a copy keeps the figure a notebook shows, and each file, as if drawn
    first)."""
    import pickle

    import matplotlib
    import matplotlib.pyplot as plt

    for path, kwargs in ((folder / f"{name}.png", {"dpi": FIGURE_DPI, "metadata": {"Software": None}}),
                         (folder / f"{name}.svg", {"metadata": {"Date": None, "Creator": None}})):
        copy = pickle.loads(stored)
        with matplotlib.rc_context({"svg.hashsalt": name}):  # stable SVG element ids across runs
            copy.savefig(path, **kwargs)
        plt.close(copy)


def write_pending_figures(folder: str | Path) -> list[str]:
    """Draw every figure ``save`` stored in ``folder`` (see :data:`DEFER_MARK`) into its PNG and SVG,
    under the matplotlib settings it was saved with, and remove the stored file; returns the names
    drawn. A figure stored again under the same name meanwhile is drawn on the next call."""
    import pickle

    import matplotlib

    folder = Path(folder)
    drawn = []
    for pending in sorted(folder.glob(f".*{_PENDING}")):
        name = pending.name[1:-len(_PENDING)]
        claimed = pending.with_suffix(_CLAIMED)
        pending.replace(claimed)
        stored, settings = pickle.loads(claimed.read_bytes())
        with matplotlib.rc_context(settings):
            _draw(folder, name, stored)
        claimed.unlink()
        drawn.append(name)
    return drawn


def _serve(folder: Path) -> int:
    """Draw the figures stored in ``folder`` as they come until standard input closes, then the rest:
    the loop of ``python -m mechaudit.outputs FOLDER``. On a failure: one line on stderr, status 1."""
    import sys
    import threading

    closed = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), closed.set()), daemon=True).start()
    try:
        while True:
            last = closed.is_set()
            write_pending_figures(folder)
            if last:
                return 0
            closed.wait(0.05)
    except Exception as err:  # noqa: BLE001 - reported to the runner in one line
        print(f"{type(err).__name__}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    import sys

    sys.exit(_serve(Path(sys.argv[1])))
