"""Sphinx extension: a figure glued in one notebook, shown with its own caption on another page.

myst-nb's ``{glue:figure}`` reads only the current document's glue; ``{glue}`` with ``:doc:`` reads
another document's but adds no figure or caption. ``{glue-figure-from}`` takes both: the key as
argument, the notebook as ``:doc:``, the caption as content, and ``:figwidth:`` as a figure has.
Without ``:name:`` the figure gets no number: the book numbers figures per chapter ("Fig. 5.1"), and
a page outside the numbered chapters would otherwise show "Fig. 1". The book's data card uses it to
show chapter 5's cosine strips, captioned, without a second copy of the plot. With ``:name:`` (a
``fig-...`` label) the figure is numbered and citable: a chapter's appendix, a page of the chapter,
shows figures its notebook glues with the chapter's numbers ("Fig. 8.5").

Enabled from ``_config.yml`` (``sphinx.extra_extensions``).
"""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives as spec
from myst_nb.ext.glue.directives import PasteFigureDirective
from myst_nb.ext.glue.utils import PendingGlueReferenceError, create_pending_glue_ref, glue_warning


class GlueFigureFromDirective(PasteFigureDirective):
    """``{glue:figure}`` for a key glued in the notebook named by ``:doc:`` (a path from this page)."""

    option_spec = {"figwidth": PasteFigureDirective.option_spec["figwidth"], "doc": spec.unchanged_required,
                   "name": spec.unchanged}

    def run(self) -> list[nodes.Node]:
        try:
            ref = create_pending_glue_ref(self.document, self.source, self.line, self.options["doc"],
                                          self.arguments[0])
        except PendingGlueReferenceError as exc:
            return [glue_warning(str(exc), self.document, self.line)]
        figure = nodes.figure("", ref, unnumbered="name" not in self.options)
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


def _drop_numbers(app, doctree: nodes.document, docname: str) -> None:
    """Take the unnumbered figures out of the page's figure numbers before the page is written."""
    numbers = app.env.toc_fignumbers.get(docname, {}).get("figure", {})
    for figure in doctree.findall(nodes.figure):
        if figure.get("unnumbered"):
            for node_id in figure["ids"]:
                numbers.pop(node_id, None)


def setup(app):
    app.add_directive("glue-figure-from", GlueFigureFromDirective)
    app.connect("doctree-resolved", _drop_numbers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
