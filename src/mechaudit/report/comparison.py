"""The "paper vs this run" table and the book's number formats for it: every compared row gets
the paper's value, this run's, and its provenance; ``compare_paper_default`` decides whether a
chapter compares at all (only on the shipped benchmark)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mechaudit import paths
from mechaudit.errors import MechauditError
from mechaudit.paper import REPORTED_PATH, entry
from mechaudit.report import provenance

COMPARE_COLUMNS = ["paper", "this run", "provenance", "verdict", "source", "note"]
#: how far an LLM-backend number may lie from the paper's and still agree, by unit (else 10 % of it)
TOLERANCE = {"pp": 5.0, "%": 5.0, "kappa": 0.1}


class ComparisonTable(pd.DataFrame):
    """A "paper vs this run" table: shown in full (pandas would cut labels and notes after 50
    characters with "..."), and in HTML with the class ``paper-compare`` for the book's style sheet.
    In the book (:mod:`mechaudit.report.tables`) it also gets ``stack-on-phone``: one block per row on a
    narrow screen."""

    #: CSS classes :class:`mechaudit.report.tables.BookTable` gives this table
    book_classes = ("paper-compare", "stack-on-phone")

    @property
    def _constructor(self):
        return ComparisonTable

    def __repr__(self) -> str:
        with pd.option_context("display.max_colwidth", None):
            return super().__repr__()

    def _repr_html_(self) -> str | None:
        with pd.option_context("display.max_colwidth", None):
            html = super()._repr_html_()
        return None if html is None else html.replace('class="dataframe"', 'class="dataframe paper-compare"', 1)


def agrees(key: str, value: Any) -> bool | None:
    """Whether ``value`` lies within ``TOLERANCE`` of the paper's number under ``key``; None when
    either is not a number (a book result, text, not run)."""
    if key.startswith("book."):
        return None
    meta = entry(key)
    paper, unit = meta["value"], meta.get("unit")
    numbers = [v for v in (paper, value) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) < 2:
        return None
    return abs(float(value) - float(paper)) <= TOLERANCE.get(unit, 0.1 * abs(float(paper)))


def compare(rows: Iterable[tuple], *, llm: bool, suite: str | None = None,
            path: Path = REPORTED_PATH) -> ComparisonTable:
    """The "paper vs this run" table, narrow enough for the book's text column.

    ``rows`` holds ``(key, ours)`` or ``(key, ours, note)``; ``ours`` None is "not run". ``llm``:
    whether an LLM backend produced ``ours``; ``suite``: the perturbation suite measured, if any.
    Index "quantity": the entry's label. Columns ``COMPARE_COLUMNS`` (note left out when no row has
    one), every cell text: numbers as :func:`_fmt` writes them, p-values through :func:`format_p`.
    """
    labels, out = [], []
    for row in rows:
        key, ours, *rest = row
        if len(rest) > 1:
            raise ValueError(f"row for {key!r} has {len(row)} items; expected (key, ours[, note])")
        meta = entry(key, path)
        is_p = meta.get("unit") == "p <"
        labels.append(meta["label"])
        origin = provenance.of(key, llm, suite=suite)
        out.append({
            "paper": f"<{NBSP}{_power_of_ten(meta['value'])}" if is_p else _fmt(meta["value"], meta["value"]),
            "this run": _fmt_p(ours) if is_p else _fmt(ours, meta["value"], meta.get("unit")),
            "provenance": origin,
            "verdict": provenance.verdict([origin], llm, agrees(key, ours) if llm else None),
            "source": meta.get("section", ""),
            "note": str(rest[0]) if rest and rest[0] is not None else "",
        })
    table = ComparisonTable(out, index=pd.Index(labels, name="quantity"), columns=COMPARE_COLUMNS, dtype=object)
    if not table["note"].astype(bool).any():
        table = table.drop(columns="note")
    return table


#: superscript digits for powers of ten ("10⁻⁸")
_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
#: a no-break space: "< 10⁻⁸" never breaks after "<"
NBSP = "\u00a0"


def power_of_ten(exponent: int) -> str:
    """``10⁻⁸`` for -8: a power of ten as a reader writes it."""
    return "10" + str(exponent).translate(_SUPERSCRIPT)


def format_p(p: float, smallest: float | None = None) -> str:
    """A p-value in the book's one style: two significant digits from 0.001 up ("0.032"), below that
    an upper bound by a power of ten ("< 10⁻⁸" for 3.9e-09, a no-break space after "<"), "0" for 0.
    ``smallest``: the smallest p the test can give (``1 / 126**4`` for the exact test of the
    paper's design); ``p`` equal to it reads "< 10⁻⁸, the smallest possible"."""
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
        raise MechauditError(f"a p-value is a number in [0, 1], not {p!r}", field="p")
    if p == 0:
        text = "0"
    elif p >= 1e-3:
        text = f"{p:.2g}"
    else:
        text = f"<{NBSP}{power_of_ten(math.floor(math.log10(p)) + 1)}"
    if smallest is not None and p > 0 and math.isclose(p, smallest, rel_tol=1e-6):
        text += ", the smallest possible"
    return text


def _power_of_ten(x: float) -> str:
    """``10⁻⁴`` for 0.0001; any other number with two significant digits."""
    exponent = round(math.log10(x)) if x > 0 else None
    return power_of_ten(exponent) if exponent is not None and math.isclose(x, 10.0 ** exponent) else f"{x:.2g}"


def _fmt_p(ours: Any) -> str:
    """This run's p: a number (or its text) through ``format_p``; other text (already formatted) as is."""
    if ours is None:
        return "not run"
    try:
        return format_p(float(ours))
    except (TypeError, ValueError):
        return str(ours)


def _fmt(value: Any, paper_value: Any, unit: str | None = None) -> str:
    """One cell as text: ints as ints, floats to the paper's decimals (>= 1), lists joined. A whole
    float is an int ("60" runs), except a measured share or difference (``unit`` "%" or "pp"),
    which keeps its decimals as the prose glues it ("29.0")."""
    if value is None:
        return "not run"
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (list, tuple)):
        return ", ".join(_fmt(v, v) for v in value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and math.isnan(value):
        return "n/a"
    digits = _decimals(paper_value)
    rounded = round(float(value), digits)
    if value != 0 and rounded == 0:  # too small for the paper's decimals: keep two digits
        return f"{value:.2g}"
    whole = rounded.is_integer() and not (isinstance(value, float) and unit in ("%", "pp"))
    return f"{int(rounded):,}" if whole else f"{rounded:,.{digits}f}"


def _decimals(paper_value: Any) -> int:
    """Decimals the paper prints for ``paper_value`` (1 to 3; 1 for integers and text)."""
    if isinstance(paper_value, float) and not paper_value.is_integer():
        return min(max(len(repr(paper_value).split(".")[-1]), 1), 3)
    return 1


def compare_paper_default(compare_paper: bool | None, data_dir: Any) -> bool:
    """Whether a chapter shows the paper's numbers (comparison tables, markers, calibration):
    only on the shipped benchmark, recognised by content (``paths.is_shipped_benchmark``), whatever
    route selected the data (``data_dir``, ``MECHAUDIT_DATA``). ``compare_paper`` None follows the
    data; false switches the comparison off; true on other data raises ``MechauditError``, since
    the paper's numbers mean nothing there."""
    if compare_paper is not None and not isinstance(compare_paper, bool):
        raise TypeError(f"compare_paper must be true, false or null, not {compare_paper!r}")
    shipped = paths.is_shipped_benchmark(data_dir)
    if compare_paper and not shipped:
        folder = data_dir if data_dir is not None else paths.DATA_DIR
        raise MechauditError(f"compare_paper is true, but the data folder {folder} is not the shipped benchmark "
                             "(its files differ from data/benchmark.sha256): the paper's numbers belong to the "
                             "shipped data only; leave compare_paper unset or false", field="compare_paper")
    return shipped if compare_paper is None else compare_paper


__all__ = ["ComparisonTable", "compare", "agrees", "TOLERANCE", "format_p", "power_of_ten", "compare_paper_default"]
