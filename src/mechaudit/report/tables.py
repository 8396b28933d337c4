"""The book's one table formatter: every table a chapter shows goes through :class:`BookTable`.

A pandas DataFrame holds code names (``tfidf``, ``extra_pp``), full-precision floats and an index
whose name pandas prints on a row of its own. :class:`BookTable` turns it into what a reader should
see: human labels from :mod:`mechaudit.report.labels` (units in the headers), numbers rounded by what they
are (whole percents unless a decimal matters, pp to one decimal, p-values in the book's one style,
counts with thousands separators), the index as the first column(s) with no extra header row and no
``0, 1, 2`` index, and every cell as text marked numeric or not.

It renders three ways from the same cells:

* ``text/markdown``: a MyST ``{book-table}`` directive (:mod:`mechaudit.sphinxext.table`) that the book
  turns into a real table, numbered per chapter ("Table 2.1") when it has a caption and a name,
  with numeric cells that never wrap;
* ``text/html``: a plain HTML table for Jupyter;
* ``text/plain``: aligned text for terminals and nbval.

:func:`use_book_tables` makes IPython show every DataFrame and Series this way, so a chapter calls
it once; :func:`book_table` gives one table a caption and a name.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mechaudit.report.comparison import format_p
from mechaudit.report.labels import LABELS, label, relabel_words

__all__ = ["Cell", "BookTable", "book_table", "use_book_tables", "format_column", "format_number", "DASH"]

#: shown for a missing value (NaN, None)
DASH = "–"
_SUP = "⁰¹²³⁴⁵⁶⁷⁸⁹⁻"
_NUMBER = r"[+\-−]?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?"
#: a cell that is one number: "4,863", "-0.2", "34.5 %", "< 10⁻⁸", "4.0 × 10⁻⁹", "1.6e-07"
_NUMERIC = re.compile(rf"^(?:[<>≈~±]\s?)?(?:{_NUMBER}(?:\s?×\s?10[{_SUP}]+)?|10[{_SUP}]+)\s?(?:%|pp)?$", re.I)
_P_HEADER = re.compile(r"(^|[\s(])(exact\s+)?p(-value)?($|[\s)])|^p\b", re.I)
_DATA_WORDS = {key for key in LABELS if "_" in key or key == "tfidf"}


@dataclass(frozen=True)
class Cell:
    """One displayed cell: its text and whether it is a number (numbers never wrap)."""

    text: str
    numeric: bool = False


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def _decimals_needed(values: np.ndarray, most: int) -> int:
    """Fewest decimals (up to ``most``) that write every value exactly to ``most`` decimals."""
    for d in range(most + 1):
        if np.allclose(np.round(values, d), np.round(values, most), rtol=0, atol=10.0 ** -(most + 1)):
            return d
    return most


def _kind(header: str) -> str:
    """How a column's numbers are written, from its displayed header: p, percent, pp or plain."""
    if _P_HEADER.search(header) and "%" not in header:
        return "p"
    if "(%)" in header or header.startswith("%") or " % " in f" {header} ":
        return "percent"
    if "(pp)" in header:
        return "pp"
    return "plain"


def _column_decimals(values: np.ndarray, kind: str) -> int:
    """Decimals for one column of floats (NaN removed) written as ``kind``."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return 0
    if kind == "percent":
        # whole percents, unless a value below 10 has a decimal that matters or a nonzero one would read 0
        small = finite[(np.abs(finite) < 10) & (finite != 0)]
        return 1 if small.size and _decimals_needed(small, 1) else 0
    if kind == "pp":
        return 1
    if np.all(finite == np.round(finite)):
        return 0
    largest = float(np.max(np.abs(finite)))
    smallest = float(np.min(np.abs(finite[finite != 0])))
    # three significant digits of the largest value from 1 up (3.04, 34.5, 345), two below (0.88,
    # 0.072), and at least one of the smallest nonzero value (0.05 beside 10); at most 3 decimals,
    # and no more than the values need (5.4, not 5.40); the same decimals for the whole column, so
    # 0.60 stands under 0.38
    significant = max((2 if largest >= 1 else 1) - math.floor(math.log10(largest)),
                      -math.floor(math.log10(smallest)))
    return _decimals_needed(finite, min(max(significant, 0), 3))


def format_number(value: Any, decimals: int = 2, kind: str = "plain", tiny: bool = True) -> str:
    """One number as the book writes it: ``kind`` "p" through :func:`mechaudit.report.comparison.format_p`,
    integers with thousands separators, floats to ``decimals``; missing values are :data:`DASH`.
    ``tiny``: a nonzero value that would read as 0 gets two significant digits (a column of
    numbers keeps its decimals instead, so -0.02 stands as -0.0 beside 34.5)."""
    if _is_missing(value):
        return DASH
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, np.generic):
        value = value.item()
    if kind == "p" and isinstance(value, (int, float)) and 0 <= value <= 1:
        return format_p(float(value))
    if isinstance(value, int):
        return f"{value:,}"
    if not isinstance(value, float):
        return str(value)
    if not math.isfinite(value):
        return "∞" if value > 0 else "-∞"
    if tiny and value != 0 and round(value, decimals) == 0:
        return f"{value:.2g}"
    return f"{value:,.{decimals}f}"


def _text_cell(value: Any) -> Cell:
    """A text cell: an identifier the label map knows becomes its label ("first_step_swapped" ->
    "First step swapped"; inside a longer text, "p_find = 0.71" -> "find probability per round =
    0.71"), and " -> " an arrow; any other text is kept as written."""
    text = str(value).replace(" -> ", " → ")  # an arrow never breaks into "-" and ">"
    if text in _DATA_WORDS:
        text = label(text)
    elif "_" in text:
        text = relabel_words(text, unknown=False)
    return Cell(text, bool(_NUMERIC.match(text.strip())))


#: the number kind of a table-wide unit (``BookTable(..., unit="%")``)
_UNIT_KINDS = {"%": "percent", "pp": "pp", "p": "p"}


def format_column(values: Sequence[Any] | pd.Series, header: str = "", unit: str | None = None) -> list[Cell]:
    """The cells of one column: numbers rounded together by the column's kind (``unit`` if given,
    else read from ``header``: see :func:`_kind`), text as written (identifiers the label map knows
    as their label)."""
    series = pd.Series(list(values), dtype=object)
    kind = _UNIT_KINDS[unit] if unit else _kind(header)
    floats = np.array([v for v in series if isinstance(v, (float, np.floating)) and not _is_missing(v)], dtype=float)
    decimals = _column_decimals(floats, kind) if floats.size else 0
    # two significant digits only when the whole column would read 0 (e.g. 1e-7 and 3e-6)
    tiny = bool(floats.size) and bool(np.all(np.round(floats[np.isfinite(floats)], decimals) == 0))
    out = []
    for value in series:
        if isinstance(value, str):
            out.append(_text_cell(value))
        elif isinstance(value, (bool, np.bool_)):
            out.append(Cell(format_number(value)))
        elif _is_missing(value) or isinstance(value, (int, float, np.number)):
            out.append(Cell(format_number(value, decimals, kind, tiny=tiny), not _is_missing(value)))
        else:
            out.append(_text_cell(value))
    return out


def _header(name: Hashable) -> str:
    if isinstance(name, tuple):
        return ", ".join(label(part) for part in name if str(part) != "")
    if isinstance(name, float):
        return format_number(name, _decimals_needed(np.array([name]), 3))
    return label(name)


def _index_cells(index: pd.Index) -> tuple[list[str], list[list[Cell]]]:
    """Header and cells of the row-label columns; repeated leading labels are left blank (as pandas
    prints a MultiIndex)."""
    names = [_header(n) if n is not None else "" for n in index.names]
    levels = [index.get_level_values(i) for i in range(index.nlevels)]
    columns = []
    for level in levels:
        columns.append([Cell(f"{v:g}" if isinstance(v, float) else _header(v)) for v in level])
    rows = [list(cells) for cells in zip(*columns)]
    for i in range(len(rows) - 1, 0, -1):
        for j in range(index.nlevels - 1):
            if levels[j][i] == levels[j][i - 1] and all(levels[k][i] == levels[k][i - 1] for k in range(j)):
                rows[i][j] = Cell("")
    return names, rows


#: the caption's last sentence on a table with a provenance column (a "paper vs this run" table): in
#: the book a link to the glossary's definitions of every class and verdict, elsewhere plain text
PROVENANCE_LEGEND = ("Provenance: how each number relates to the paper's, one of five classes "
                     "({term}`defined in the glossary <Provenance>`).")
PROVENANCE_LEGEND_PLAIN = "Provenance: how each number relates to the paper's, one of five classes (see the glossary)."


class BookTable:
    """A table as the book shows it (see the module docstring).

    ``frame``: the data (a Series becomes one column). ``caption`` and ``name`` (a label such as
    ``tbl-ch02-extra``, for ``{numref}``) make it a numbered table; a caption needs a name.
    ``classes``: extra CSS classes. ``unit``: "%" or "pp" when every number of the table is one
    (the caption then names the unit, and the headers need not). ``by_row``: round each row
    together instead of each column, for a table whose rows are different quantities (MAE,
    coverage, % saturated) and whose columns are conditions; a row's kind is read from its label.
    The index becomes the row-label column(s) unless it is a plain ``0..n-1`` range without a name.
    """

    def __init__(self, frame: pd.DataFrame | pd.Series, caption: str | None = None, name: str | None = None,
                 classes: Sequence[str] = (), unit: str | None = None, by_row: bool = False):
        if unit is not None and unit not in _UNIT_KINDS:
            raise ValueError(f"unit must be one of {sorted(_UNIT_KINDS)}, not {unit!r}")
        if isinstance(frame, pd.Series):
            frame = frame.to_frame(name=frame.name if frame.name is not None else "value")
        if caption and not name:
            raise ValueError("a table with a caption needs a name (e.g. 'tbl-ch02-extra') to be numbered")
        self.caption, self.name = caption, name
        self.legend = caption is not None and "provenance" in map(str, frame.columns)
        self.classes = [*getattr(frame, "book_classes", ()), *classes]
        plain_index = isinstance(frame.index, pd.RangeIndex) and frame.index.name is None
        headers = [_header(c) for c in frame.columns]
        if by_row:
            rows = [format_column(frame.iloc[i].tolist(), _header(frame.index[i]), unit) for i in range(len(frame))]
        else:
            body = [format_column(frame.iloc[:, j].tolist(), headers[j], unit) for j in range(frame.shape[1])]
            rows = [list(cells) for cells in zip(*body)] if body else [[] for _ in range(len(frame))]
        if plain_index:
            self.stub, self.header, self.rows = 0, headers, rows
        else:
            names, labels = _index_cells(frame.index)
            if not any(names) and frame.columns.name is not None:
                names[0] = _header(frame.columns.name)
            self.stub, self.header = len(names), names + headers
            self.rows = [lab + row for lab, row in zip(labels, rows)]

    def payload(self) -> dict[str, Any]:
        """The cells as JSON-ready data (what the ``{book-table}`` directive reads)."""
        return {"stub": self.stub, "header": self.header,
                "rows": [[c.text for c in row] for row in self.rows],
                "numeric": [[int(c.numeric) for c in row] for row in self.rows]}

    def _repr_markdown_(self) -> str:
        body = json.dumps(self.payload(), ensure_ascii=False)
        fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", body)), default=0) + 1)
        options = [f":class: {' '.join(self.classes)}"] if self.classes else []
        if self.caption:
            caption = " ".join(self.caption.split()) + (" " + PROVENANCE_LEGEND if self.legend else "")
            options[:0] = [f":name: {self.name}", f":caption: {caption}"]
        return "\n".join([f"{fence}{{book-table}}", *options, "", body, fence]) + "\n"

    def _repr_html_(self) -> str:
        esc = html.escape
        cls = " ".join(["book-table", *self.classes])
        out = [f'<table class="{cls}">']
        if self.caption:
            out.append(f"<caption>{esc(self._plain_caption())}</caption>")
        out.append("<thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in self.header) + "</tr></thead><tbody>")
        for row in self.rows:
            cells = [f'<{"th" if j < self.stub else "td"}{" class=num" if c.numeric else ""}>{esc(c.text)}'
                     f'</{"th" if j < self.stub else "td"}>' for j, c in enumerate(row)]
            out.append("<tr>" + "".join(cells) + "</tr>")
        return "".join(out) + "</tbody></table>"

    def __repr__(self) -> str:
        grid = [self.header] + [[c.text for c in row] for row in self.rows]
        widths = [max(len(r[j]) for r in grid) for j in range(len(self.header))]
        lines = ["  ".join(t.ljust(w) if j < self.stub or not (i and self.rows[i - 1][j].numeric) else t.rjust(w)
                           for j, (t, w) in enumerate(zip(r, widths))).rstrip() for i, r in enumerate(grid)]
        return "\n".join(([self._plain_caption()] if self.caption else []) + lines)

    def _plain_caption(self) -> str:
        return self.caption + (" " + PROVENANCE_LEGEND_PLAIN if self.legend else "")


def book_table(frame: pd.DataFrame | pd.Series, caption: str | None = None, name: str | None = None,
               classes: Sequence[str] = (), unit: str | None = None, by_row: bool = False) -> BookTable:
    """``frame`` as the book shows it; with ``caption`` and ``name`` a numbered table ("Table 2.1")
    that prose cites with ``{numref}`name```; ``unit`` and ``by_row`` as in :class:`BookTable`."""
    return BookTable(frame, caption=caption, name=name, classes=classes, unit=unit, by_row=by_row)


def use_book_tables() -> None:
    """Show every DataFrame and Series of this IPython session through :class:`BookTable`
    (Markdown for the book, HTML for Jupyter). Does nothing outside IPython."""
    try:
        from IPython import get_ipython  # defers IPython
    except ImportError:  # pragma: no cover - IPython is a dependency of the notebooks only
        return
    shell = get_ipython()
    if shell is None:
        return
    formatters = shell.display_formatter.formatters
    for kind in (pd.DataFrame, pd.Series):
        formatters["text/markdown"].for_type(kind, lambda obj: BookTable(obj)._repr_markdown_())
        formatters["text/html"].for_type(kind, lambda obj: BookTable(obj)._repr_html_())
