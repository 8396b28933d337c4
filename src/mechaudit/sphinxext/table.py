"""Sphinx extension: the ``{book-table}`` directive that renders a :class:`mechaudit.report.tables.BookTable`.

A chapter's table reaches the book as the ``text/markdown`` output of its cell (myst-nb parses
it as MyST, ``nb_render_markdown_format: myst``)::

    ```{book-table}
    :name: tbl-ch02-extra
    :caption: Extra divergence per rule and depth comparison.
    :class: paper-compare

    {"stub": 1, "header": [...], "rows": [[...]], "numeric": [[0, 1, ...]]}
    ```

The first ``stub`` columns are row labels (``<th>``); a numeric cell has the class ``num`` (one line,
right-aligned, as the header of an all-numeric column); a caption (MyST roles allowed) with a name
makes a numbered table ("Table 2.1") that ``{numref}`` cites. Every body cell carries its column's
header as ``data-label``, so a ``stack-on-phone`` table shows one block per row on a narrow screen.

For every table of the book, a name with a hyphen beside a capital or a digit ("TF-IDF", "K0-r1")
is kept whole (``nowrap``), and the caption is moved above the theme's scroll container, so a wide
table scrolls under a caption that stays on the screen (``_static/mechaudit-tables.js`` adds a cue).

``{book-table-from}`` shows on this page, numbered here, the table named by the argument that a cell
of the notebook ``:doc:`` shows (its ``text/markdown`` output in the committed ``.ipynb``): a
chapter's appendix shows tables its notebook computes and the chapter page leaves out::

    ```{book-table-from} tbl-ch02-scan
    :doc: ../notebooks/02_critique_depth.ipynb
    ```

Enabled from ``_config.yml`` (``sphinx.extra_extensions``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective

from mechaudit.errors import MechauditError


class labelled_entry(nodes.entry):
    """A table cell that knows its column's header (written as ``data-label`` in HTML)."""


def _visit_labelled_entry(self, node: labelled_entry) -> None:
    self.visit_entry(node)
    start = self.body[-1]
    tag = "<th" if start.startswith("<th") else "<td"
    self.body[-1] = start.replace(tag, f'{tag} data-label="{self.attval(node["label"])}"', 1)


def _depart_labelled_entry(self, node: labelled_entry) -> None:
    self.depart_entry(node)


def _row(cells: list[str], numeric: list[int], header: list[str] | None = None) -> nodes.row:
    """One table row; ``header`` (the column labels) for a body row, ``None`` for the header row."""
    row = nodes.row()
    for j, text in enumerate(cells):
        entry = nodes.entry() if header is None else labelled_entry(label=header[j])
        entry["classes"] = ["num"] if numeric[j] else []
        entry += nodes.paragraph(text, text)
        row += entry
    return row


def build_table(data: dict, classes: list[str]) -> nodes.table:
    """A docutils table from a :meth:`mechaudit.report.tables.BookTable.payload`."""
    header, rows, numeric, stub = data["header"], data["rows"], data["numeric"], int(data.get("stub", 0))
    if any(len(r) != len(header) for r in rows) or len(numeric) != len(rows):
        raise MechauditError(f"book-table: rows do not match the {len(header)} header cells", field="rows")
    table = nodes.table(classes=["book-table", "colwidths-auto", *classes])
    group = nodes.tgroup(cols=len(header))
    table += group
    for j in range(len(header)):
        group += nodes.colspec(colwidth=1, stub=int(j < stub))
    head = nodes.thead()
    numeric_columns = [int(bool(rows) and all(flags[j] or not cells[j] for cells, flags in zip(rows, numeric))
                           and any(flags[j] for flags in numeric)) for j in range(len(header))]
    head += _row(header, numeric_columns)
    group += head
    body = nodes.tbody()
    for cells, flags in zip(rows, numeric):
        body += _row(cells, flags, header)
    group += body
    return table


class BookTableDirective(SphinxDirective):
    """``{book-table}``: a table from a JSON payload, numbered when it has a caption and a name."""

    has_content = True
    option_spec = {"name": directives.unchanged, "caption": directives.unchanged,
                   "class": directives.class_option}

    def run(self) -> list[nodes.Node]:
        try:
            data = json.loads("\n".join(self.content))
        except json.JSONDecodeError as err:
            raise self.error(f"book-table: the content is not JSON ({err})") from None
        table = build_table(data, self.options.get("class", []))
        caption, messages = self.options.get("caption", "").strip(), []
        if caption:
            inline, messages = self.state.inline_text(caption, self.lineno)
            table.insert(0, nodes.title(caption, "", *inline))
        self.add_name(table)
        return [table, *messages]


#: a name with a hyphen beside a capital or a digit: "TF-IDF", "K0-r1", "NF-kappaB", "all-MiniLM-L6-v2"
#: (an ordinary compound such as "template-built" may still break after its hyphen)
_HYPHENATED = re.compile(r"\S*(?:[A-Z0-9]-\w|\w-[A-Z0-9])\S*")


def unbreakable(text: str) -> list[nodes.Node]:
    """``text`` as nodes in which every hyphenated name is one ``nowrap`` inline (the rest plain text)."""
    parts = re.split(f"({_HYPHENATED.pattern})", text)  # odd parts: the names
    return [nodes.inline(part, part, classes=["nowrap"]) if i % 2 else nodes.Text(part)
            for i, part in enumerate(parts) if part]


class KeepNamesWhole(SphinxPostTransform):
    """In every table cell (code and math aside), hyphenated names become unbreakable units; runs
    after glued values are pasted in, so those are covered too."""

    default_priority = 900

    def run(self, **kwargs) -> None:
        for table in list(self.document.findall(nodes.table)):
            for text in list(table.findall(nodes.Text)):
                parent = text.parent
                if (parent is None or isinstance(parent, (nodes.literal, nodes.math, nodes.literal_block))
                        or "nowrap" in parent.get("classes", []) or not _HYPHENATED.search(text.astext())):
                    continue
                parent.replace(text, unbreakable(text.astext()))


#: the theme's scroll container around a table whose first child is its caption
_CAPTION_INSIDE = re.compile(r'<div class="pst-scrollable-table-container">(\s*<table\b[^>]*>)\s*'
                             r'<caption>(.*?)</caption>', re.S)


def caption_outside(html: str) -> str:
    """``html`` with every table caption moved from inside the scroll container to just above it."""
    return _CAPTION_INSIDE.sub(r'<p class="table-caption">\2</p>\n'
                               r'<div class="pst-scrollable-table-container">\1', html)


def _move_captions(app, pagename, templatename, context, doctree) -> None:
    if "body" in context:
        context["body"] = caption_outside(context["body"])
def table_markdown(notebook: Path, name: str) -> str | None:
    """The ``text/markdown`` output (a ``{book-table}`` directive) named ``name`` in ``notebook``'s
    cells, or None when no cell shows a table of that name."""
    line = re.compile(rf"^:name:[ \t]*{re.escape(name)}[ \t]*$", re.M)
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        for output in cell.get("outputs", []):
            text = output.get("data", {}).get("text/markdown")
            text = "".join(text) if isinstance(text, list) else text
            if text and line.search(text):
                return text
    return None


class BookTableFromDirective(SphinxDirective):
    """``{book-table-from}``: the table named by the argument, as the notebook ``:doc:`` shows it."""

    required_arguments = 1
    option_spec = {"doc": directives.unchanged_required}

    def run(self) -> list[nodes.Node]:
        rel, path = self.env.relfn2path(self.options["doc"], self.env.docname)
        self.env.note_dependency(rel)
        text = table_markdown(Path(path), self.arguments[0]) if Path(path).is_file() else None
        if text is None:
            raise self.error(f"book-table-from: no cell of {self.options['doc']} shows a table named "
                             f"{self.arguments[0]!r}")
        container = nodes.Element()
        self.state.nested_parse(StringList(text.splitlines(), source=path), self.content_offset, container)
        return container.children


def setup(app):
    app.add_directive("book-table", BookTableDirective)
    app.add_directive("book-table-from", BookTableFromDirective)
    app.add_node(labelled_entry, html=(_visit_labelled_entry, _depart_labelled_entry))
    app.add_post_transform(KeepNamesWhole)
    app.connect("html-page-context", _move_captions)
    app.add_js_file("mechaudit-tables.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
