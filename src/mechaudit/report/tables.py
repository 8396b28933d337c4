"""The book's one table formatter: every table a chapter shows goes through :class:`BookTable`.

:class:`BookTable` turns a DataFrame into what a reader should see: labels from
:mod:`mechaudit.report.labels` (units in the headers), numbers rounded by what they are (whole
percents unless a decimal matters, pp to one decimal, p-values in the book's one style, counts with
thousands separators), the index as the first column(s), every cell text marked numeric or not. It
renders as a ``{book-table}`` directive (:mod:`mechaudit.sphinxext.table`), as HTML for Jupyter and
as aligned text for terminals and nbval.

:func:`use_book_tables` makes IPython show every DataFrame and Series this way, so a chapter calls
it once; :func:`book_table` gives one table a caption and a name.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mechaudit.report.comparison import format_p
from mechaudit.report.facts import spec_of
from mechaudit.report.labels import LABELS, label, relabel_words

__all__ = ["Cell", "Column", "with_columns", "with_caption", "nothing_sentence", "BookTable", "book_table",
           "use_book_tables", "format_column", "format_number", "DASH"]

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


#: the units a column can declare and how each writes its numbers
_COLUMN_KINDS = {"%": "percent", "pp": "pp", "p": "p", "share": "plain", "count": "plain", "": "plain"}


@dataclass(frozen=True)
class Column:
    """One column's declared unit and decimals, so the table prints what the prose glues (:meth:`of`).

    ``unit``: "%", "pp", "share" (0 to 1), "count" (whole, thousands separated), "p" or "" (plain).
    ``digits``: decimals (None: chosen from the values). ``scale``: factor applied before writing."""

    unit: str = ""
    digits: int | None = None
    scale: float = 1.0

    def __post_init__(self) -> None:
        if self.unit not in _COLUMN_KINDS:
            raise ValueError(f"Column: unit must be one of {sorted(_COLUMN_KINDS)}, not {self.unit!r}")

    @classmethod
    def of(cls, record: type, field: str, scale: float = 1.0) -> Column:
        """The column of the glued fact ``record.field`` (``report.facts.fact``): its unit ("%" and "pp"
        kept, any other unit plain) and digits."""
        spec = spec_of(record, field)
        return cls(unit=spec.unit if spec.unit in ("%", "pp") else "", digits=spec.digits, scale=scale)

    @property
    def kind(self) -> str:
        return _COLUMN_KINDS[self.unit]

    def header(self, text: str) -> str:
        """``text`` with the unit named once ("Agreement" -> "Agreement (%)")."""
        if self.unit in ("%", "pp") and self.unit not in text:
            return f"{text} ({self.unit})"
        return text


#: the ``DataFrame.attrs`` key under which :func:`with_columns` stores a frame's column declarations
COLUMNS_ATTR = "book_columns"


def with_columns(frame: pd.DataFrame, columns: Mapping[Hashable, Column]) -> pd.DataFrame:
    """``frame`` (a copy) carrying the :class:`Column` of each named column: a chapter module declares
    how its view prints where it builds the view, and every table of that view prints it so."""
    unknown = set(columns) - set(frame.columns)
    if unknown:
        raise ValueError(f"with_columns: no such column {sorted(map(str, unknown))}")
    out = frame.copy()
    out.attrs[COLUMNS_ATTR] = {**frame.attrs.get(COLUMNS_ATTR, {}), **columns}
    return out


#: the ``DataFrame.attrs`` key under which :func:`with_caption` stores a frame's caption and name
CAPTION_ATTR = "book_caption"


def with_caption(frame: pd.DataFrame, caption: str, name: str) -> pd.DataFrame:
    """``frame`` (a copy) that shows as a numbered table with ``caption`` and ``name`` wherever it is
    displayed: for a chapter module's table that a notebook shows as it is returned."""
    if not caption or not name:
        raise ValueError("with_caption: a numbered table needs a caption and a name")
    out = frame.copy()
    out.attrs[CAPTION_ATTR] = (caption, name)
    return out


#: a cell that says nothing was measured; a table of nothing else shows as one sentence
_NOTHING = re.compile(r"^(not run|no LLM calls)\b")
#: row or column labels that add nothing to such a sentence
_GENERIC = {"status", "value"}


def nothing_sentence(frame: pd.DataFrame) -> str | None:
    """One sentence for a table whose every cell says nothing was measured ("not run: offline
    backend", "no LLM calls ..."): "Judge models: not run (offline backend)."; None for any other
    table."""
    values = list(frame.to_numpy().ravel())
    if not values or not all(isinstance(v, str) and _NOTHING.match(v) for v in values):
        return None
    said = "; ".join(dict.fromkeys(re.sub(r"^not run: (.*)$", r"not run (\1)", v) for v in values))
    columns = [_header(c) for c in frame.columns if str(c).casefold() not in _GENERIC]
    rows = [] if isinstance(frame.index, pd.RangeIndex) else \
        [_header(r) for r in frame.index if str(r).casefold() not in _GENERIC]
    if columns and rows:
        subject = f"{', '.join(columns)} ({', '.join(rows)})"
    else:
        subject = ", ".join(columns or rows) or "This step"
    return f"{subject}: {said}."


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
    numbers keeps its decimals instead, so -0.02 stands as 0.0 beside 34.5); never "-0.0"."""
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
    text = f"{value:,.{decimals}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.,") else text  # never "-0.0"


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


def format_column(values: Sequence[Any] | pd.Series, header: str = "", unit: str | None = None,
                  column: Column | None = None) -> list[Cell]:
    """The cells of one column: numbers rounded together by the column's kind (``column``'s
    declared unit and digits if given, else ``unit``, else read from ``header``: see :func:`_kind`),
    text as written (identifiers the label map knows as their label)."""
    series = pd.Series(list(values), dtype=object)
    if column is not None:
        kind = column.kind
        series = series.map(lambda v: v * column.scale if _is_number(v) and column.scale != 1 else v)
        if column.unit == "count" or column.digits is not None:
            series = series.map(lambda v: _declared(v, column))
    else:
        kind = _UNIT_KINDS[unit] if unit else _kind(header)
    floats = np.array([v for v in series if isinstance(v, (float, np.floating)) and not _is_missing(v)], dtype=float)
    decimals = _column_decimals(floats, kind) if floats.size else 0
    if column is not None and column.digits is not None:
        decimals = column.digits
    # two significant digits only when the whole column would read 0 (e.g. 1e-7 and 3e-6), never
    # in a column whose digits are declared (it prints what the prose glues)
    tiny = (bool(floats.size) and bool(np.all(np.round(floats[np.isfinite(floats)], decimals) == 0))
            and (column is None or column.digits is None))
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


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_)) \
        and not _is_missing(value)


def _declared(value: Any, column: Column) -> Any:
    """A number of a declared column as the prose glues it: a count or 0 digits as an int, other
    digits as a float rounded to them."""
    if not _is_number(value) or not math.isfinite(float(value)):
        return value
    if column.unit == "count" or column.digits == 0:
        return int(round(float(value)))
    return round(float(value), column.digits)


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
    columns = [[Cell(f"{v:g}" if isinstance(v, float) else _header(v)) for v in level] for level in levels]
    rows = [list(cells) for cells in zip(*columns)]
    for i in range(len(rows) - 1, 0, -1):
        for j in range(index.nlevels - 1):
            if levels[j][i] == levels[j][i - 1] and all(levels[k][i] == levels[k][i - 1] for k in range(j)):
                rows[i][j] = Cell("")
    return names, rows


#: the caption's last sentence on a table with a provenance column (a "paper vs this run" table): in
#: the book a link to the glossary's definitions of every class and verdict, elsewhere plain text
PROVENANCE_LEGEND = ("Provenance: how each number relates to the paper's; verdict: whether it tests the paper "
                     "({term}`classes <Provenance>` and {term}`verdicts <Verdict>` in the glossary).")
PROVENANCE_LEGEND_PLAIN = ("Provenance: how each number relates to the paper's; verdict: whether it tests the paper "
                           "(both defined in the glossary).")


class BookTable:
    """A table as the book shows it (see the module docstring).

    ``frame``: the data (a Series becomes one column; the index becomes the row-label columns unless
    it is an unnamed ``0..n-1`` range). ``caption`` and ``name`` (``tbl-ch02-extra``, for
    ``{numref}``) make it numbered (:func:`with_caption` brings them). ``classes``: extra CSS classes.
    ``unit``: "%" or "pp" when every number of the table is one. ``by_row``: round each row together,
    for rows that are different quantities (a row's kind read from its label). ``columns``: a
    :class:`Column` per column name (:func:`with_columns` brings them). An uncaptioned table that
    only says nothing was measured shows as one sentence (:func:`nothing_sentence`).
    """

    def __init__(self, frame: pd.DataFrame | pd.Series, caption: str | None = None, name: str | None = None,
                 classes: Sequence[str] = (), unit: str | None = None, by_row: bool = False,
                 columns: Mapping[Hashable, Column] | None = None):
        if unit is not None and unit not in _UNIT_KINDS:
            raise ValueError(f"unit must be one of {sorted(_UNIT_KINDS)}, not {unit!r}")
        if isinstance(frame, pd.Series):
            frame = frame.to_frame(name=frame.name if frame.name is not None else "value")
        if caption is None and CAPTION_ATTR in frame.attrs:
            caption, name = frame.attrs[CAPTION_ATTR]
        #: shown instead of the table: one sentence when an uncaptioned table says only "not run"
        self.sentence = None if caption else nothing_sentence(frame)
        if caption and not name:
            raise ValueError("a table with a caption needs a name (e.g. 'tbl-ch02-extra') to be numbered")
        self.caption, self.name = caption, name
        self.legend = caption is not None and "provenance" in map(str, frame.columns)
        self.classes = [*getattr(frame, "book_classes", ()), *classes]
        columns = {**frame.attrs.get(COLUMNS_ATTR, {}), **(columns or {})}
        unknown = set(columns) - set(frame.columns)
        if unknown or (columns and by_row):
            raise ValueError(f"columns: no such column {sorted(map(str, unknown))}" if unknown
                             else "columns: a table rounded by row declares no columns")
        plain_index = isinstance(frame.index, pd.RangeIndex) and frame.index.name is None
        declared = [columns.get(c) for c in frame.columns]
        headers = [col.header(_header(c)) if col else _header(c) for c, col in zip(frame.columns, declared)]
        if by_row:
            rows = [format_column(frame.iloc[i].tolist(), _header(frame.index[i]), unit) for i in range(len(frame))]
        else:
            body = [format_column(frame.iloc[:, j].tolist(), headers[j], unit, declared[j])
                    for j in range(frame.shape[1])]
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
        if self.sentence:
            return self.sentence + "\n"
        body = json.dumps(self.payload(), ensure_ascii=False)
        fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", body)), default=0) + 1)
        options = [f":class: {' '.join(self.classes)}"] if self.classes else []
        if self.caption:
            caption = " ".join(self.caption.split()) + (" " + PROVENANCE_LEGEND if self.legend else "")
            options[:0] = [f":name: {self.name}", f":caption: {caption}"]
        return "\n".join([f"{fence}{{book-table}}", *options, "", body, fence]) + "\n"

    def _repr_html_(self) -> str:
        esc = html.escape
        if self.sentence:
            return f"<p>{esc(self.sentence)}</p>"
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
        if self.sentence:
            return self.sentence
        grid = [self.header] + [[c.text for c in row] for row in self.rows]
        widths = [max(len(r[j]) for r in grid) for j in range(len(self.header))]
        lines = ["  ".join(t.ljust(w) if j < self.stub or not (i and self.rows[i - 1][j].numeric) else t.rjust(w)
                           for j, (t, w) in enumerate(zip(r, widths))).rstrip() for i, r in enumerate(grid)]
        return "\n".join(([self._plain_caption()] if self.caption else []) + lines)

    def _plain_caption(self) -> str:
        return self.caption + (" " + PROVENANCE_LEGEND_PLAIN if self.legend else "")


#: ``book_table(frame, caption=None, name=None, ...)``: ``frame`` as the book shows it, with ``caption`` and
#: ``name`` a numbered table ("Table 2.1") that prose cites with ``{numref}`name``` (:class:`BookTable`)
book_table = BookTable


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
