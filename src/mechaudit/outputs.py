"""Write a chapter's tables and figures to disk: ``save(name, table_or_figure, out_dir)``.

A chapter defines the parameter ``out_dir = None`` and calls ``save`` after each table or figure it
shows. ``mechaudit execute --out DIR`` sets ``out_dir`` to ``DIR/<chapter>`` (for chapters that
define it), so a run folder holds the executed notebook and, beside it, one CSV per table and a PNG
and an SVG per figure. With ``out_dir = None`` (the committed book) ``save`` writes nothing.

Files are reproducible and read by scripts: a CSV is the table as :func:`csv_table` puts it (every
column named, numeric columns holding numbers or empty cells, a status column saying why a value is
missing; floats as computed, index kept when it carries labels); figures are written at a fixed dpi
with no creation date or software stamp, from a copy, so saving never changes what the notebook shows.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mechaudit.errors import MechauditError

__all__ = ["FIGURE_DPI", "save", "csv_table", "STATUS_SUFFIX"]

#: resolution of the PNG copy of a figure (dots per inch)
FIGURE_DPI = 150
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
#: a cell that says why a value is missing rather than being one ("not run", "not run offline",
#: "undecided", "unknown (no price)")
_STATUS = re.compile(r"^(not run|undecided|unknown)\b")
#: the statuses that stand for a value in a column with no value at all (a "provenance" column saying
#: "not run offline (LLM only)" is a column of labels, not of missing numbers)
_BARE_STATUS = {"not run", "undecided"}
#: a number written as text, thousands separators allowed ("5,192", "0.25", "-3e-05")
_NUMBER = re.compile(r"^[-+]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?([eE][-+]?\d+)?$")
#: the name of the column beside ``<column>`` that says why a value of it is missing
STATUS_SUFFIX = " status"
#: the name an unnamed index level gets in a CSV
INDEX_NAME = "label"


def _cell(value: Any) -> tuple[str, Any]:
    """``("number", float)``, ``("status", text)``, ``("empty", None)`` or ``("other", value)``."""
    import numbers

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
    import pandas as pd

    return pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)


def csv_table(table) -> Any:
    """``table`` (a DataFrame or Series) as :func:`save` writes it, for scripts, with a RangeIndex:

    - an index that carries labels becomes the first columns; an unnamed level is named
      :data:`INDEX_NAME` (``label``, ``label 2``, ... when several are unnamed); levels of columns
      are joined with a space (``("tfidf", "mean")`` -> ``"tfidf mean"``); a Series' column is its
      name (``value`` without one);
    - numbers written as text ("5,192", "0.25") become numbers; a column of numbers in which some
      cells say why a value is missing ("not run", "undecided", "unknown ...") holds the numbers and
      empty cells, and a column ``<column> status`` beside it holds those words. A column of only
      "not run" or "undecided" is split the same way when the table has numeric columns (an LLM
      column of a table of percentages); a table of statuses only, and text columns (labels such
      as "not run offline (LLM only)" among them), are left as they are;
    - an empty kappa cell gets its reason in ``kappa status`` (``agreement.kappa_undefined``).
    """
    import pandas as pd

    from mechaudit.agreement import kappa_undefined

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
        csv_table(obj).to_csv(folder / f"{name}.csv", index=False)
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
