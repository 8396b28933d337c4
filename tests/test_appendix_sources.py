"""A chapter's appendix page shows tables and figures its notebook computes: ``{book-table-from}`` finds a
table by name and ``{glue-figure-from}`` a glued SVG or PNG by key in the committed ``.ipynb`` (no build)."""

from __future__ import annotations

import json
from base64 import b64encode

import yaml

from mechaudit.paths import REPO_ROOT
from mechaudit.report.tables import book_table
from mechaudit.sphinxext.figure import glued_image
from mechaudit.sphinxext.table import table_markdown

PNG = b"\x89PNG\r\n\x1a\n-not-really"


def _notebook(tmp_path, outputs):
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "", "outputs": outputs}]}))
    return path


SVG = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"></svg>'


def test_a_named_table_and_a_glued_image_are_found_and_others_are_not(tmp_path):
    import pandas as pd

    markdown = book_table(pd.DataFrame({"a": [1]}), caption="A table.", name="tbl-ch09-x")._repr_markdown_()
    glued = {"output_type": "display_data", "metadata": {"scrapbook": {"name": "ch09_fig", "mime_prefix": ""}},
             "data": {"application/papermill.record/image/png": b64encode(PNG).decode()}}
    path = _notebook(tmp_path, [{"output_type": "display_data", "metadata": {},
                                 "data": {"text/markdown": markdown.splitlines(keepends=True)}}, glued,
                                {**glued, "metadata": {"scrapbook": {"name": "ch09_svg", "mime_prefix": ""}},
                                 "data": {"application/papermill.record/image/svg+xml": SVG,
                                          "application/papermill.record/image/png": b64encode(PNG).decode()}}])
    assert table_markdown(path, "tbl-ch09-x") == markdown
    assert table_markdown(path, "tbl-ch09") is None  # a prefix of a name is not the name
    assert glued_image(path, "ch09_fig") == (PNG, ".png")
    assert glued_image(path, "ch09_svg") == (SVG.encode(), ".svg")  # the SVG is preferred
    assert glued_image(path, "ch09_other") is None


def _sections(node, found):
    """``{chapter file: [its section files]}`` of a parsed ``_toc.yml`` (every level)."""
    if isinstance(node, dict):
        if isinstance(node.get("file"), str):
            found[node["file"]] = [s["file"] for s in node.get("sections", [])]
        for value in node.values():
            _sections(value, found)
    elif isinstance(node, list):
        for item in node:
            _sections(item, found)
    return found


def test_every_appendix_is_a_section_of_its_chapter():
    """``book/chNN_appendix`` is listed among chapter NN's sections, so it carries chapter NN's numbers."""
    sections = _sections(yaml.safe_load((REPO_ROOT / "_toc.yml").read_text(encoding="utf-8")), {})
    appendices = sorted((REPO_ROOT / "book").glob("ch*_appendix.md"))
    assert appendices
    for appendix in appendices:
        stem = appendix.stem.split("_")[0][2:]
        chapter = next(f for f in sections if f.startswith(f"notebooks/{stem}_"))
        assert f"book/{appendix.stem}" in sections[chapter], f"{appendix.name} is not a section of {chapter}"
