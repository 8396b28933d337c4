"""A number the prose glues and the table cell that shows the same quantity agree, digit for digit.

A chapter module declares the link in ``CITED_CELLS``: glue key -> cells, each ``(table label, row
labels as shown, column header as shown)``. The numbers of the glued text (parenthesised parts such as
"(0 v 1)" left out) must equal the numbers of those cells, in order, units and thousands separators
aside. Read from the committed notebooks; nothing is executed.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

import pytest

from mechaudit.paths import NOTEBOOKS_DIR

#: chapter module -> its executed notebook
LINKED = {"ch01_problem": "01_problem", "ch02_critique_depth": "02_critique_depth", "ch02b_validity": "02b_validity",
          "ch03_critique_engagement": "03_critique_engagement", "ch07_sensitivity": "07_sensitivity",
          "ch08_tau_calibration": "08_tau_calibration"}
_NUMBER = re.compile(r"[-−]?\d[\d,]*(?:\.\d+)?")


def numbers(text: str) -> list[str]:
    """The numbers of ``text`` as written (commas dropped, "−" as "-"), parenthesised parts left out."""
    return [n.replace(",", "").replace("−", "-") for n in _NUMBER.findall(re.sub(r"\([^)]*\)", "", text))]


def glued_and_tables(path: Path) -> tuple[dict[str, str], dict[str, dict]]:
    """The glued texts (key -> text as the page shows it) and the book tables (label -> payload with
    the row labels filled down) of an executed notebook."""
    glued, tables = {}, {}
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            text = data.get("application/papermill.record/text/plain")
            if name and text is not None:
                value = ast.literal_eval(text) if text[:1] in "'\"" else text
                glued[name] = str(value)
            markdown = "".join(data.get("text/markdown", ""))
            label = re.search(r"^:name: (\S+)$", markdown, re.M)
            if "{book-table}" in markdown and label:
                body = markdown.split("\n\n", 1)[1].rsplit("\n", 2)[0]
                tables[label.group(1)] = json.loads(body)
    return glued, tables


def cell_text(table: dict, row: tuple[str, ...], column: str) -> str | None:
    """The text of the cell at ``row`` (the stub labels, blank repeats filled down) and ``column``."""
    stub, last = table["stub"], [""] * table["stub"]
    for cells in table["rows"]:
        last = [c or last[j] for j, c in enumerate(cells[:stub])]
        if tuple(last) == tuple(row) and column in table["header"]:
            return cells[table["header"].index(column)]
    return None


def mismatches(links: dict, glued: dict[str, str], tables: dict[str, dict]) -> list[str]:
    """Each declared link whose glued numbers differ from its cells' (or whose key or cell is missing)."""
    bad = []
    for key, cells in links.items():
        if key not in glued:
            bad.append(f"{key}: not glued")
            continue
        shown = []
        for label, row, column in cells:
            text = cell_text(tables[label], row, column) if label in tables else None
            if text is None:
                bad.append(f"{key}: no cell {label} {row} / {column!r}")
            else:
                shown.append((label, text))
        if len({label for label, _ in shown}) == 1 or len(cells) == 1:
            groups = [[t for _, t in shown]]
        else:  # each table restates the whole glued value
            groups = [[t] for _, t in shown]
        for texts in groups:
            if texts and numbers(glued[key]) != [n for t in texts for n in numbers(t)]:
                bad.append(f"{key}: prose {glued[key]!r}, table {texts}")
    return bad


@pytest.mark.parametrize("module", list(LINKED))
def test_glued_numbers_equal_the_table_cells_they_restate(module):
    links = importlib.import_module(f"mechaudit.book.{module}").CITED_CELLS
    glued, tables = glued_and_tables(NOTEBOOKS_DIR / f"{LINKED[module]}.ipynb")
    bad = mismatches(links, glued, tables)
    assert not bad, f"{module}: " + "; ".join(bad)


def test_a_disagreeing_cell_is_reported():
    """The check can fail: a table that rounds differently from the prose, a missing cell and a key
    nothing glues are each reported; agreeing cells are not."""
    table = {"stub": 2, "header": ["Rule", "Depths", "Rate", "Mean (pp)"],
             "rows": [["Key", "0 v 1", "0.03", "-0.0"], ["", "0 v 5", "0.037", "1,234.5"]]}
    links = {"rates": (("t", ("Key", "0 v 1"), "Rate"), ("t", ("Key", "0 v 5"), "Rate")),
             "mean": (("t", ("Key", "0 v 5"), "Mean (pp)"),),
             "gone": (("t", ("Key", "0 v 9"), "Rate"),), "unglued": (("t", ("Key", "0 v 1"), "Rate"),)}
    glued = {"rates": "0.027 (0 v 1), 0.037 (0 v 5)", "mean": "1234.5", "gone": "1"}
    assert mismatches(links, glued, {"t": table}) == [
        "rates: prose '0.027 (0 v 1), 0.037 (0 v 5)', table ['0.03', '0.037']",
        "gone: no cell t ('Key', '0 v 9') / 'Rate'", "unglued: not glued"]
