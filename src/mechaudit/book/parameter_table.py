"""Sphinx extension: ``{parameter-table} 01_problem`` renders one chapter's parameters from its model
(``mechaudit.book.settings``): name, default, what is allowed, meaning. The re-run page lists every
chapter's this way, so the book's tables cannot drift from the checks ``mechaudit execute`` makes.

Enabled from ``_config.yml`` (``sphinx.extra_extensions``); the table is built by
``mechaudit.book_table.build_table``.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from mechaudit.book.settings import CHAPTERS, parameter_rows
from mechaudit.book_table import build_table

HEADER = ["parameter", "default", "allowed", "meaning"]


class ParameterTableDirective(SphinxDirective):
    """``{parameter-table} STEM``: the parameters of chapter ``STEM``."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        stem = self.arguments[0]
        if stem not in CHAPTERS:
            raise self.error(f"parameter-table: no chapter {stem!r} (one of {', '.join(CHAPTERS)})")
        rows = parameter_rows(stem)
        data = {"stub": 1, "header": HEADER, "rows": rows, "numeric": [[0] * len(HEADER)] * len(rows)}
        return [build_table(data, ["parameter-table"])]


def setup(app):
    app.add_directive("parameter-table", ParameterTableDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
