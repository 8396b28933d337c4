"""Write a chapter's tables and figures to disk: ``save(name, table_or_figure, out_dir)``.

A chapter defines the parameter ``out_dir = None`` and calls ``save`` after each table or figure it
shows. ``mechaudit execute --out DIR`` sets ``out_dir`` to ``DIR/<chapter>`` (for chapters that
define it), so a run folder holds the executed notebook and, beside it, one CSV per table and a PNG
and an SVG per figure. With ``out_dir = None`` (the committed book) ``save`` writes nothing.

Files are reproducible and read by scripts: a CSV is :func:`csv_table`'s form of the table; figures
are drawn from a copy at a fixed dpi without date or software stamp. Drawing costs more than most
computations of a chapter, so ``mechaudit execute`` marks the output folder with :data:`DEFER_MARK`:
``save`` then only stores the figure (``.NAME.figure``) and a process beside the chapter
(``python -m mechaudit.report.outputs FOLDER``) draws it with the same code and bytes.
"""

from __future__ import annotations

import numbers
import pickle
import re
import sys
import threading
from pathlib import Path
from typing import Any

from mechaudit.errors import MechauditError

__all__ = ["DEFER_MARK", "FIGURE_DPI", "save", "csv_table", "STATUS_SUFFIX", "write_pending_figures"]

#: resolution of the PNG copy of a figure (dots per inch)
FIGURE_DPI = 150
#: file metadata that would change between runs or machines, left out (with ``plots.style.RC``'s fixed
#: font and SVG hash salt, the same figure gives the same bytes at every run)
PNG_METADATA = {"Software": None}
SVG_METADATA = {"Date": None, "Creator": None}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: a cell that says why a value is missing ("not run", "undecided", "unknown (no price)")
_STATUS = re.compile(r"^(not run|undecided|unknown)\b")
#: the statuses that stand for a value in a column with no value at all (not a "provenance" label)
_BARE_STATUS = {"not run", "undecided"}
#: a number written as text, thousands separators allowed ("5,192", "0.25", "-3e-05")
_NUMBER = re.compile(r"^[-+]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?([eE][-+]?\d+)?$")
#: the name of the column beside ``<column>`` that says why a value of it is missing
STATUS_SUFFIX = " status"
#: the name an unnamed index level gets in a CSV
INDEX_NAME = "label"
#: a file in an output folder asking ``save`` to store figures for :func:`write_pending_figures`
DEFER_MARK = ".mechaudit-defer-figures"
#: suffix of a stored figure (``.NAME.figure``) and of one claimed for drawing
_PENDING, _CLAIMED = ".figure", ".figure-drawing"
#: matplotlib settings that are not drawing settings (a stored figure is drawn under the others)
_NOT_DRAWING = ("backend", "backend_fallback")


def _cell(value: Any) -> tuple[str, Any]:
    """``("number", float)``, ``("status", text)``, ``("empty", None)`` or ``("other", value)``."""
    if value is None or (isinstance(value, float) and value != value):
        return "empty", None
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return "number", value
    if isinstance(value, str):
        if _STATUS.match(value):
            return "status", value
        if value and _NUMBER.match(value) and any(c.isdigit() for c in value):
            text = value.replace(",", "")
            return "number", float(text) if any(c in text for c in ".eE") else int(text)
    return "other", value


def _is_numeric(column) -> bool:
    import pandas as pd  # defers pandas: fast `mechaudit --help`

    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def csv_table(table) -> Any:
    """``table`` (a DataFrame or Series) as :func:`save` writes it, for scripts, with a RangeIndex:

    - a labelled index becomes the first columns (unnamed levels: :data:`INDEX_NAME`); column levels
      are joined with a space; a Series' column is its name (``value`` without one);
    - numbers written as text ("5,192") become numbers; in a numeric column, cells saying why a value
      is missing ("not run", "undecided", "unknown ...") become empty and their words go to a column
      ``<column> status`` (also a column of only such words, in a table with numeric columns);
    - an empty kappa cell gets its reason in ``kappa status`` (``agreement.kappa_undefined``).
    """
    import pandas as pd  # defers pandas: fast `mechaudit --help`

    from mechaudit.agreement import kappa_undefined  # defers pandas: fast `mechaudit --help`

    frame = table.to_frame("value" if table.name is None else table.name) if isinstance(table, pd.Series) else table
    frame = frame.copy()
    if isinstance(frame.columns, pd.MultiIndex):
        frame.columns = [" ".join(str(p) for p in parts if str(p) != "") for parts in frame.columns]
    labelled = not isinstance(frame.index, pd.RangeIndex) or any(n is not None for n in frame.index.names)
    if labelled:
        unnamed = [i for i, n in enumerate(frame.index.names) if n is None]
        names = {i: INDEX_NAME if len(unnamed) == 1 else f"{INDEX_NAME} {k + 1}" for k, i in enumerate(unnamed)}
        frame.index = frame.index.set_names([names.get(i, n) for i, n in enumerate(frame.index.names)])
        frame = frame.reset_index()
    cells = {name: [] if _is_numeric(frame[name]) or pd.api.types.is_bool_dtype(frame[name])
             else [_cell(v) for v in frame[name]] for name in frame.columns}
    kinds = {name: {kind for kind, _ in column} for name, column in cells.items()}
    numbers = {name for name in frame.columns if _is_numeric(frame[name]) or kinds[name] in ({"number"},
                                                                                            {"number", "empty"})}
    out = {}
    for name in frame.columns:
        column, kinds_here = frame[name], kinds[name]
        bare = {v for k, v in cells[name] if k == "status"} <= _BARE_STATUS
        if "status" in kinds_here and "other" not in kinds_here and ("number" in kinds_here or (numbers and bare)):
            out[name] = pd.to_numeric(pd.Series([v if k == "number" else None for k, v in cells[name]], dtype=object))
            out[f"{name}{STATUS_SUFFIX}"] = pd.Series([v if k == "status" else None for k, v in cells[name]],
                                                      dtype=object)
            continue
        if name in numbers and cells[name]:  # numbers, some written as text: numbers
            column = pd.to_numeric(pd.Series([v for _, v in cells[name]], dtype=object))
        out[name] = column.reset_index(drop=True)
        if "kappa" in str(name).lower() and _is_numeric(column) and column.isna().any():
            pairs = next((frame[c] for c in ("n", "pairs") if c in frame.columns), None)
            out[f"{name}{STATUS_SUFFIX}"] = pd.Series(
                [kappa_undefined(None if pairs is None else pairs.iloc[i]) if pd.isna(v) else None
                 for i, v in enumerate(column)], dtype=object)
    return pd.DataFrame(out)


def save(name: str, obj: Any, out_dir: str | Path | None) -> Any:
    """Write ``obj`` under ``out_dir`` (nothing when it is None) and return it: a DataFrame or Series
    as ``name.csv``, a matplotlib Figure as ``name.png`` and ``name.svg`` (``name``: letters,
    digits, ``_``, ``.``, ``-``); the folder is created, an existing file replaced."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise MechauditError(f"{name!r} is not a file stem (letters, digits, _ . -)", field="name")
    import pandas as pd  # defers pandas: fast `mechaudit --help`
    from matplotlib.figure import Figure  # defers matplotlib: fast `mechaudit --help`

    if not isinstance(obj, (pd.DataFrame, pd.Series, Figure)):
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
        csv_table(obj).to_csv(folder / f"{name}.csv", index=False)
        return obj

    import matplotlib  # defers matplotlib: fast `mechaudit --help`

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
    import matplotlib  # defers matplotlib: fast `mechaudit --help`
    import matplotlib.pyplot as plt  # defers matplotlib: fast `mechaudit --help`

    for path, kwargs in ((folder / f"{name}.png", {"dpi": FIGURE_DPI, "metadata": PNG_METADATA}),
                         (folder / f"{name}.svg", {"metadata": SVG_METADATA})):
        copy = pickle.loads(stored)
        with matplotlib.rc_context({"svg.hashsalt": name}):  # stable SVG element ids across runs
            copy.savefig(path, **kwargs)
        plt.close(copy)


def write_pending_figures(folder: str | Path) -> list[str]:
    """Draw every figure ``save`` stored in ``folder`` (see :data:`DEFER_MARK`) into its PNG and SVG,
    under the matplotlib settings it was saved with, and remove the stored file; returns the names
    drawn. A figure stored again under the same name meanwhile is drawn on the next call."""
    import matplotlib  # defers matplotlib: fast `mechaudit --help`

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
    the loop of ``python -m mechaudit.report.outputs FOLDER``. On a failure: one line on stderr, status 1."""
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
    sys.exit(_serve(Path(sys.argv[1])))
