"""Write a chapter's tables and figures to disk: ``save(name, table_or_figure, out_dir)``.

A chapter defines the parameter ``out_dir = None`` and calls ``save`` after each table or figure it
shows. ``mechaudit execute --out DIR`` sets ``out_dir`` to ``DIR/<chapter>`` (for chapters that
define it), so a run folder holds the executed notebook and, beside it, one CSV per table and a PNG
and an SVG per figure. With ``out_dir = None`` (the committed book) ``save`` writes nothing.

Files are reproducible: a CSV is pandas' ``to_csv`` (floats as computed, index kept when it carries
labels); figures are written at a fixed dpi with no creation date or software stamp, from a copy,
so saving never changes the figure the notebook shows.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mechaudit.errors import MechauditError

__all__ = ["FIGURE_DPI", "save"]

#: resolution of the PNG copy of a figure (dots per inch)
FIGURE_DPI = 150
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


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
    import matplotlib.pyplot as plt

    from mechaudit.plots.style import PNG_METADATA, SVG_METADATA

    png, svg = folder / f"{name}.png", folder / f"{name}.svg"
    for path, kwargs in ((png, {"dpi": FIGURE_DPI, "metadata": PNG_METADATA}), (svg, {"metadata": SVG_METADATA})):
        # drawing lays the figure out again: draw a copy, so what the notebook shows is unchanged
        copy = pickle.loads(pickle.dumps(obj))
        with matplotlib.rc_context({"svg.hashsalt": name}):  # stable SVG element ids across runs
            copy.savefig(path, **kwargs)
        plt.close(copy)
    return obj
