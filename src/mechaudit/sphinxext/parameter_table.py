"""Sphinx extension: ``{parameter-table} 01_problem`` renders one chapter's parameters from its model
(``mechaudit.book.settings``), so the re-run page cannot drift from the checks ``mechaudit execute``
makes. Enabled from ``_config.yml`` (``sphinx.extra_extensions``).
"""

from __future__ import annotations

from typing import Any

import yaml
from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from mechaudit.book.settings import CHAPTERS, allowed, defaults
from mechaudit.sphinxext.table import build_table

HEADER = ["parameter", "default", "allowed", "meaning"]


def as_yaml(value: Any) -> str:
    """``value`` as one would write it after ``-p NAME`` (YAML flow style: ``[ab, ab, ba]``, ``null``)."""
    return yaml.safe_dump(value, default_flow_style=True, width=10_000).removesuffix("...\n").strip()


def parameter_rows(stem: str) -> list[list[str]]:
    """One row per parameter of chapter ``stem``: name, default, what is allowed, meaning."""
    model = CHAPTERS[stem]
    props = model.model_json_schema()["properties"]
    return [[name, as_yaml(value), allowed(props[name]), model.model_fields[name].description or ""]
            for name, value in defaults(stem).items()]


class ParameterTableDirective(SphinxDirective):
    """``{parameter-table} STEM``: the parameters of chapter ``STEM``."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        stem = self.arguments[0]
        if stem not in CHAPTERS:
            raise self.error(f"parameter-table: no chapter {stem!r} (one of {', '.join(CHAPTERS)})")
        rows = parameter_rows(stem)
        table = build_table({"header": HEADER, "rows": rows, "numeric": [[0] * len(HEADER)] * len(rows)},
                            ["parameter-table", "stack-on-phone"])
        for row, entries in zip(rows, list(table.findall(nodes.row))[1:]):
            if " " not in row[1]:  # one token ("claude-opus-4-6"): never broken at a hyphen
                entries.children[1]["classes"].append("nowrap")
        return [table]


def setup(app):
    app.add_directive("parameter-table", ParameterTableDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
