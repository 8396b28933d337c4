"""Sphinx extension: every figure opens full size on a click; a figure glued in one notebook can be
shown with its own caption on another page.

Every image of a figure is drawn the column's width (at most 36rem, ``_static/mechaudit.css``) and is
a link to its own file, so a reader on a phone opens the full-size SVG with one tap: the handler gives
each such image a width, and Sphinx's ``html_scaled_image_link`` (on by default) then wraps a resized
image in a link to the copied file.

myst-nb's ``{glue:figure}`` reads only the current document's glue; ``{glue}`` with ``:doc:`` reads
another document's but adds no figure or caption. ``{glue-figure-from}`` takes both: the key as
argument, the notebook as ``:doc:``, the caption as content, and ``:figwidth:`` as a figure has; an
SVG figure (the book's figures are SVG) is resolved here, since myst-nb's own resolver shows only
raster images from another notebook.
The figure gets no number: the book numbers figures per chapter ("Fig. 5.1"), and a page outside
the numbered chapters would otherwise show "Fig. 1". The book's data card uses it to show chapter
5's cosine strips, captioned, without a second copy of the plot.

Enabled from ``_config.yml`` (``sphinx.extra_extensions``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives as spec
from myst_nb.ext.glue.crossref import read_glue_cache
from myst_nb.ext.glue.directives import PasteFigureDirective
from myst_nb.ext.glue.utils import (
    PendingGlueReference,
    PendingGlueReferenceError,
    create_pending_glue_ref,
    glue_warning,
)
from sphinx.transforms.post_transforms import SphinxPostTransform


class GlueFigureFromDirective(PasteFigureDirective):
    """``{glue:figure}`` for a key glued in the notebook named by ``:doc:`` (a path from this page)."""

    option_spec = {"figwidth": PasteFigureDirective.option_spec["figwidth"], "doc": spec.unchanged_required}

    def run(self) -> list[nodes.Node]:
        try:
            ref = create_pending_glue_ref(self.document, self.source, self.line, self.options["doc"],
                                          self.arguments[0])
        except PendingGlueReferenceError as exc:
            return [glue_warning(str(exc), self.document, self.line)]
        figure = nodes.figure("", ref, unnumbered=True)
        self.set_source_info(figure)
        if "figwidth" in self.options:
            figure["width"] = self.options["figwidth"]
        container = nodes.Element()
        self.state.nested_parse(self.content, self.content_offset, container)
        if not container.children or not isinstance(container[0], nodes.paragraph):
            return [glue_warning("glue-figure-from needs a caption paragraph", self.document, self.line)]
        first = container[0]
        figure += nodes.caption(first.rawsource, "", *first.children)
        return [figure]


class ResolveSvgGlue(SphinxPostTransform):
    """Another notebook's glued SVG figure as an image of the file its own page wrote: myst-nb's
    cross-document resolver (priority 5, after this one) knows only raster images. The file name is
    the one myst-nb gives the SVG on its own page (the SHA-256 of its text)."""

    default_priority = 4

    def apply(self, **kwargs) -> None:
        builder = self.app.builder
        folder = self.env.mystnb_config.output_folder
        page_dir = (Path(builder.outdir) / self.env.docname).parent
        for node in list(self.document.findall(PendingGlueReference)):
            svg = read_glue_cache(folder, node.refdoc).get(node.key, {}).get("data", {}).get("image/svg+xml")
            if node.gtype == "text" or svg is None:
                continue
            text = "".join(svg) if isinstance(svg, list) else svg
            name = hashlib.sha256(os.linesep.join(text.splitlines()).encode("utf-8")).hexdigest()
            uri = os.path.relpath(Path(builder.outdir) / builder.imagedir / f"{name}.svg", page_dir)
            node.replace_self(nodes.image(uri=uri, candidates={"*": uri}))


def _drop_numbers(app, doctree: nodes.document, docname: str) -> None:
    """Take the unnumbered figures out of the page's figure numbers before the page is written."""
    numbers = app.env.toc_fignumbers.get(docname, {}).get("figure", {})
    for figure in doctree.findall(nodes.figure):
        if figure.get("unnumbered"):
            for node_id in figure["ids"]:
                numbers.pop(node_id, None)


def _link_full_size(app, doctree: nodes.document, docname: str) -> None:
    """Draw each figure's image the column's width; Sphinx links a resized image to its full-size file."""
    for figure in doctree.findall(nodes.figure):
        for image in figure.findall(nodes.image):
            image.setdefault("width", "100%")


def setup(app):
    app.add_directive("glue-figure-from", GlueFigureFromDirective)
    app.add_post_transform(ResolveSvgGlue)
    app.connect("doctree-resolved", _drop_numbers)
    app.connect("doctree-resolved", _link_full_size)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
