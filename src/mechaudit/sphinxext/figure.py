"""Sphinx extension: every figure opens full size on a click; a figure glued in one notebook can be
shown with its own caption on another page.

Every image of a figure is given the column's width, and Sphinx's ``html_scaled_image_link`` (on by
default) then links it to its full-size file: one tap on a phone opens the SVG.

myst-nb's ``{glue:figure}`` reads only the current document's glue. ``{glue-figure-from}`` takes the
key as argument, the notebook as ``:doc:``, the caption as content and ``:figwidth:``; it reads the
glued SVG (or PNG) from the committed ``.ipynb`` and writes it beside myst-nb's own images, so the
figure needs no other page. Without ``:name:`` the figure gets no number (a page outside the numbered
chapters would show "Fig. 1"); with a ``fig-...`` name it is numbered and citable, as in a chapter's
appendix ("Fig. 8.5").

Enabled from ``_config.yml`` (``sphinx.extra_extensions``).
"""

from __future__ import annotations

import hashlib
import json
import os
from binascii import a2b_base64
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives as spec
from myst_nb.ext.glue import GLUE_PREFIX
from myst_nb.ext.glue.directives import PasteFigureDirective
from myst_nb.ext.glue.utils import glue_warning

#: glued image formats the directive reads, in order of preference, with their file suffixes
IMAGE_TYPES = (("image/svg+xml", ".svg"), ("image/png", ".png"))


def glued_image(notebook: Path, key: str) -> tuple[bytes, str] | None:
    """``(bytes, suffix)`` of the image (SVG preferred, else PNG) that ``notebook``'s cells glue under
    ``key`` (myst-nb ``glue``), or None."""
    for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]:
        for output in cell.get("outputs", []):
            if output.get("metadata", {}).get("scrapbook", {}).get("name") != key:
                continue
            for mime, suffix in IMAGE_TYPES:
                data = output.get("data", {}).get(f"{GLUE_PREFIX}{mime}")
                if data:
                    text = "".join(data) if isinstance(data, list) else data
                    return (text.encode("utf-8") if mime.endswith("xml") else a2b_base64(text)), suffix
            return None
    return None


class GlueFigureFromDirective(PasteFigureDirective):
    """``{glue:figure}`` for a key glued in the notebook named by ``:doc:`` (a path from this page)."""

    option_spec = {"figwidth": PasteFigureDirective.option_spec["figwidth"], "doc": spec.unchanged_required,
                   "name": spec.unchanged}

    def run(self) -> list[nodes.Node]:
        key, env = self.arguments[0], self.state.document.settings.env
        rel, path = env.relfn2path(self.options["doc"], env.docname)
        env.note_dependency(rel)
        found = glued_image(Path(path), key) if Path(path).is_file() else None
        if found is None:
            return [glue_warning(f"glue-figure-from: {self.options['doc']} glues no image named {key!r}",
                                 self.document, self.line)]
        data, suffix = found
        file = Path(env.mystnb_config.output_folder) / "glue-figures" / f"{hashlib.sha256(data).hexdigest()}{suffix}"
        if not file.exists():
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_bytes(data)
        uri = "/" + os.path.relpath(file.resolve(), env.srcdir)  # a path from the source folder, as myst-nb's
        figure = nodes.figure("", nodes.image(uri=uri, alt=key), unnumbered="name" not in self.options)
        self.set_source_info(figure)
        self.add_name(figure)
        if "figwidth" in self.options:
            figure["width"] = self.options["figwidth"]
        container = nodes.Element()
        self.state.nested_parse(self.content, self.content_offset, container)
        if not container.children or not isinstance(container[0], nodes.paragraph):
            return [glue_warning("glue-figure-from needs a caption paragraph", self.document, self.line)]
        first = container[0]
        figure += nodes.caption(first.rawsource, "", *first.children)
        return [figure]


def _finish_figures(app, doctree: nodes.document, docname: str) -> None:
    """Before the page is written: take the unnumbered figures out of its figure numbers, and draw
    each figure's image the column's width (Sphinx links a resized image to its full-size file)."""
    numbers = app.env.toc_fignumbers.get(docname, {}).get("figure", {})
    for figure in doctree.findall(nodes.figure):
        if figure.get("unnumbered"):
            for node_id in figure["ids"]:
                numbers.pop(node_id, None)
        for image in figure.findall(nodes.image):
            image.setdefault("width", "100%")


def setup(app):
    app.add_directive("glue-figure-from", GlueFigureFromDirective)
    app.connect("doctree-resolved", _finish_figures)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
