"""The book's Sphinx directives in a one-page Sphinx build (about a second, no book build): a
``{book-table}`` with a caption and a name, ``{book-table-from}`` of a notebook's table and
``{parameter-table}``, read back from the written HTML."""

from __future__ import annotations

import hashlib
import json
import re
from html import escape as html_escape
from html import unescape as html_unescape
from io import StringIO
from pathlib import Path

import pytest

from mechaudit.book.settings import defaults
from mechaudit.sphinxext.parameter_table import as_yaml

PAYLOAD = {"stub": 1, "header": ["Rule", "K0-r1 share", "Note"],
           "rows": [["TF-IDF", "12.5", "plain words"], ["reference", "", "a-b"]],
           "numeric": [[0, 1, 0], [0, 0, 0]]}
NOTEBOOK_TABLE = ("```{book-table}\n:name: tbl-nb\n:caption: From the notebook.\n\n"
                  + json.dumps({"header": ["x"], "rows": [["seven"]], "numeric": [[0]]}) + "\n```\n")
PAGE = f"""# Demo

```{{book-table}}
:name: tbl-demo
:caption: Shares per *rule*.
:class: stack-on-phone

{json.dumps(PAYLOAD)}
```

See {{numref}}`tbl-demo`.

```{{book-table-from}} tbl-nb
:doc: nb.ipynb
```

```{{parameter-table}} 04_equivalence_rules
```

Math: {{math}}`x^2`.

```{{eval-rst}}
.. autofunction:: demo.shaped
```

```{{glue-figure-from}} fig-key
:doc: nb.ipynb
:name: fig-demo
:figwidth: 50%

The *glued* caption.
```

```{{glue-figure-from}} fig-key
:doc: nb.ipynb

*Unnumbered* figure.
```

```{{eval-rst}}
.. role:: nowrap

.. list-table::

   * - :nowrap:`K9-x1` kept, K8-y2 wrapped
```

```{{glue-figure-from}} fig-png
:doc: nb.ipynb

A PNG.
```

```{{glue-figure-from}} fig-none
:doc: nb.ipynb

Nothing glued.
```

```{{glue-figure-from}} fig-key
:doc: nb.ipynb
```

```{{book-table}}

{json.dumps({"header": ["plain"], "rows": [["no caption"]], "numeric": [[0]]})}
```
"""
#: the build's only warnings: the two figures above that cannot be shown
GLUE_WARNINGS = ["glue-figure-from: nb.ipynb glues no image named 'fig-none'",
                 "glue-figure-from needs a caption paragraph"]
SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="4" height="4"/></svg>'

DEMO = """import collections, pathlib, typing


def shaped(x: typing.Annotated[int, "meta"], where: pathlib.Path = "a.b") -> collections.OrderedDict:
    \"\"\"A demo.\"\"\"
"""
CONF = """import sys
sys.path.insert(0, {src!r})
extensions = ['myst_nb', 'mechaudit.sphinxext.table', 'mechaudit.sphinxext.parameter_table',
              'mechaudit.sphinxext.api', 'mechaudit.sphinxext.offline', 'mechaudit.sphinxext.figure']
numfig = True
exclude_patterns = ['nb.ipynb', '_build']
nb_execution_mode = 'off'

html_js_files = ['keep.js', 'sphinx-thebe.js', ('x.js', {{'body': 'THEBE'}})]
html_css_files = ['keep.css', 'sphinx-thebe.css']
"""


def build_page(src: Path) -> tuple[str, str, Path, dict]:
    """Build :data:`PAGE` in ``src``: the HTML, the build's warnings, the output folder and the final
    html_context. Inside ``docutils_namespace``: Sphinx registers directives, roles and nodes in
    docutils' process-wide tables, and without it a later build in this process (or a process forked
    from it, as mutmut's mutant runs are) would find them registered whatever its own setup did."""
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace

    (src / "conf.py").write_text(CONF.format(src=str(src)), encoding="utf-8")
    (src / "demo.py").write_text(DEMO, encoding="utf-8")
    (src / "index.md").write_text(PAGE, encoding="utf-8")
    (src / "nb.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "code", "outputs": [{"data": {"text/plain": "x"}}]},
        {"cell_type": "code", "outputs": [{"data": {"text/markdown": NOTEBOOK_TABLE.splitlines(True)}}]},
        {"cell_type": "code", "outputs": [{"metadata": {"scrapbook": {"name": "fig-key"}},
                                           "data": {"application/papermill.record/image/png": "AAAA",
                                                    "application/papermill.record/image/svg+xml": SVG}}]},
        {"cell_type": "code", "outputs": [{"metadata": {"scrapbook": {"name": "fig-png"}},
                                           "data": {"application/papermill.record/image/png": ["iVBO", "Rw=="]}}]}]}),
        encoding="utf-8")
    warnings = StringIO()
    with docutils_namespace():
        app = Sphinx(str(src), str(src), str(src / "_build"), str(src / "_doctrees"), "html",
                     status=None, warning=warnings, freshenv=True)
        app.build()
    safe = {name: (ext.parallel_read_safe, ext.parallel_write_safe) for name, ext in app.extensions.items()
            if name.startswith("mechaudit.")}
    return ((src / "_build" / "index.html").read_text(encoding="utf-8"), warnings.getvalue(), src / "_build",
            {**app.config.html_context, "parallel safe": safe})


def test_one_page_shows_every_directive_as_the_book_does(tmp_path, monkeypatch):
    """One build checked whole: mutmut runs, for a mutant, only the tests that called its function,
    and a build shared by several tests is called by the first one only. Run from another folder (paths
    are the source folder's, not the working folder's), with pybtex's run-time plugins as at start."""
    import pybtex.plugin

    monkeypatch.setattr(pybtex.plugin, "_RUNTIME_PLUGINS", {})
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path)
    html, warnings, out, context = build_page(tmp_path / "src")
    problems = [line for line in warnings.splitlines() if "WARNING" in line or "ERROR" in line]
    assert [next((w for w in GLUE_WARNINGS if w in line), line) for line in problems] == GLUE_WARNINGS
    assert context["parallel safe"] == {f"mechaudit.sphinxext.{n}": (True, True)
                                        for n in ("table", "parameter_table", "api", "offline", "figure")}
    check_book_table(html)
    check_book_table_from(html)
    check_parameter_table(html)
    check_signature(html)
    check_offline(html, out, context)
    check_glued_figure(html, out)


def _tables(html: str) -> list[str]:
    return re.findall(r"<table\b.*?</table>", html, re.S)


def check_book_table(html: str) -> None:
    """Numbered, captioned, one stub column, numbers marked, every body cell labelled, names kept whole."""
    first = _tables(html)[0]
    assert first.startswith('<table class="book-table stack-on-phone docutils align-default" id="tbl-demo">')
    assert re.search(r'<caption><span class="caption-number">Table 1 </span><span class="caption-text">'
                     r"Shares per <em>rule</em>.</span>", first)
    assert re.search(r'href="#tbl-demo"><span class="std std-numref">Table 1</span>', html)  # the numref
    assert re.findall(r'data-label="([^"]*)"', first) == ["Rule", "K0-r1 share", "Note"] * 2
    body = re.findall(r"<(t[hd])([^>]*)>", first.split("<tbody>")[1])
    assert [tag for tag, _ in body] == ["th", "td", "td"] * 2  # one stub column
    assert [re.search(r'class="([^"]*)"', attrs).group(1) if "class" in attrs else "" for _, attrs in body] == \
        ["stub", "num", "", "stub", "", ""]  # the empty number cell is no "num"
    head = re.findall(r'<th class="([^"]*)"', first.split("<tbody>")[0])
    assert head == ["head stub", "head num", "head"]  # numbers (or empty) in every row: a "num" header
    assert '<p><span class="nowrap">TF-IDF</span></p>' in first
    assert '<p><span class="nowrap">K0-r1</span> share</p>' in first
    assert "<p>plain words</p>" in first and "<p>a-b</p>" in first  # lower-case compounds may break
    assert '<script defer="defer" src="_static/mechaudit-tables.js"></script>' in html
    # a cell of any table; a name already kept whole is left as it is
    assert '<p><span class="nowrap">K9-x1</span> kept, <span class="nowrap">K8-y2</span> wrapped</p>' in html
    last = _tables(html)[-1]
    assert last.startswith('<table class="book-table docutils align-default">') and "<caption" not in last
    assert '<td data-label="plain"><p>no caption</p></td>' in last


def check_book_table_from(html: str) -> None:
    """The notebook's table, numbered on this page."""
    second = _tables(html)[1]
    assert second.startswith('<table class="book-table docutils align-default" id="tbl-nb">')
    assert '<span class="caption-number">Table 2 </span><span class="caption-text">From the notebook.' in second
    assert re.findall(r'<td data-label="x"><p>(.*?)</p>', second) == ["seven"]


def check_parameter_table(html: str) -> None:
    """The chapter's parameters with their defaults; a one-word default is kept whole."""
    table = _tables(html)[2]
    assert table.startswith('<table class="book-table parameter-table stack-on-phone docutils align-default">')
    assert re.findall(r'<th class="head"><p>(.*?)</p>', table) == ["parameter", "default", "allowed", "meaning"]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table.split("<tbody>")[1], re.S)
    stated = defaults("04_equivalence_rules")
    assert [re.search(r'<td data-label="parameter"><p>(.*?)</p>', r).group(1) for r in rows] == list(stated)
    one_word = {name: " " not in as_yaml(value) for name, value in stated.items()}
    assert sorted(n for n, whole in one_word.items() if not whole) == ["rules"]
    for name, row in zip(stated, rows):
        default = re.search(r'<td data-label="default"( class="nowrap")?><p>(.*?)</p>', row)
        assert bool(default.group(1)) == one_word[name], name
        assert re.sub(r"<[^>]+>", "", default.group(2)) == html_escape(as_yaml(stated[name]), quote=False)
    seed = rows[list(stated).index("seed")]
    assert '<td data-label="allowed"><p>an integer in [0, inf]</p>' in seed


def test_an_unknown_chapter_and_a_missing_notebook_table_are_build_errors(tmp_path):
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace

    (tmp_path / "conf.py").write_text("extensions = ['mechaudit.sphinxext.table', "
                                      "'mechaudit.sphinxext.parameter_table']\nexclude_patterns = ['nb.ipynb']\n",
                                      encoding="utf-8")
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": []}), encoding="utf-8")
    (tmp_path / "index.rst").write_text("X\n=\n\n.. parameter-table:: 99_nothing\n\n.. book-table-from:: tbl-gone\n"
                                        "   :doc: nb.ipynb\n\n.. book-table-from:: tbl-x\n   :doc: missing.ipynb\n\n"
                                        ".. book-table::\n\n   not json\n", encoding="utf-8")
    warnings = StringIO()
    with docutils_namespace():
        Sphinx(str(tmp_path), str(tmp_path), str(tmp_path / "_b"), str(tmp_path / "_d"), "html", status=None,
               warning=warnings, freshenv=True).build()
    text = warnings.getvalue()
    assert "parameter-table: no chapter '99_nothing' (one of 01_problem" in text
    assert "book-table-from: no cell of nb.ipynb shows a table named 'tbl-gone'" in text
    assert "book-table-from: no cell of missing.ipynb shows a table named 'tbl-x'" in text
    assert "book-table: the content is not JSON (Expecting value" in text
    assert Path(tmp_path / "_b" / "index.html").is_file()


def check_signature(html: str) -> None:
    """Without ``Annotated`` metadata and module paths."""
    sig = re.search(r'<dt class="sig sig-object py" id="demo.shaped">(.*?)</dt>', html, re.S).group(1)
    text = re.sub(r"\s+", " ", html_unescape(re.sub(r"<[^>]+>", "", sig))).replace("¶", "").strip()
    assert text == "demo.shaped(x: int, where: Path = 'a.b') → OrderedDict"


def check_offline(html: str, out: Path, context: dict) -> None:
    """MathJax copied and loaded from the book, thebe's files dropped, the theme's mode light."""
    assert (out / "_static" / "mathjax" / "tex-mml-chtml.js").stat().st_size > 100_000
    assert any((out / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))
    assert re.search(r'<script[^>]*src="_static/mathjax/tex-mml-chtml.js', html)
    assert "cdn" not in "".join(re.findall(r"<script[^>]*mathjax[^>]*>", html)).lower()
    assert '_static/keep.js' in html and '_static/keep.css' in html
    assert "thebe" not in html.lower() and "x.js" not in html
    assert context["default_mode"] == "light"
    from pybtex.plugin import find_plugin

    from mechaudit.sphinxext.offline import AuthorYearStyle
    assert find_plugin("pybtex.style.formatting", "authoryear") is AuthorYearStyle


def check_glued_figure(html: str, out: Path) -> None:
    """Numbered with a name, unnumbered without; the SVG (not the PNG), drawn the column's width."""
    figures = re.findall(r"<figure\b.*?</figure>", html, re.S)
    assert len(figures) == 3
    named, unnamed, png = figures
    assert 'id="fig-demo"' in named and 'style="width: 50%"' in named
    assert re.search(r'<span class="caption-number">Fig\. 1 </span><span class="caption-text">The <em>glued</em> '
                     r"caption\.</span>", named)
    assert "caption-number" not in unnamed
    assert '<span class="caption-text"><em>Unnumbered</em> figure.</span>' in unnamed
    images = re.findall(r'<img alt="fig-key" src="([^"]+)" style="width: 100%;" />', html)
    digest = hashlib.sha256(SVG.encode("utf-8")).hexdigest()
    assert images == [f"_images/{digest}.svg"] * 2  # the SVG, not the PNG, copied once
    assert (out / images[0]).read_text(encoding="utf-8") == SVG
    png_bytes = bytes.fromhex("89504e47")  # the base64 text "iVBORw==" glued in two pieces
    (png_src,) = re.findall(r'<img alt="fig-png" src="([^"]+)"', png)
    assert png_src == f"_images/{hashlib.sha256(png_bytes).hexdigest()}.png"
    assert (out / png_src).read_bytes() == png_bytes and "A PNG." in png


def test_captions_move_above_the_scroll_container_and_unnumbered_figures_lose_their_number():
    from docutils import nodes

    from mechaudit.sphinxext.figure import _finish_figures
    from mechaudit.sphinxext.table import _move_captions

    context = {"body": '<div class="pst-scrollable-table-container"><table class="t"><caption>Cap</caption>'}
    _move_captions(None, "page", "page.html", context, None)
    assert context["body"] == ('<p class="table-caption">Cap</p>\n<div class="pst-scrollable-table-container">'
                               '<table class="t">')
    numbers = {"figure": {"fig-a": (1,), "fig-b": (2,)}}
    app = type("App", (), {"env": type("Env", (), {"toc_fignumbers": {"doc": numbers}})()})()
    doctree = nodes.document(None, None)
    doctree += nodes.figure("", nodes.image(uri="a.svg"), ids=["fig-a"], unnumbered=True)
    doctree += nodes.figure("", nodes.image(uri="b.svg", width="40%"), ids=["fig-b"])
    _finish_figures(app, doctree, "doc")
    assert numbers == {"figure": {"fig-b": (2,)}}
    assert [i["width"] for i in doctree.findall(nodes.image)] == ["100%", "40%"]


def test_a_ragged_table_and_a_label_without_authors():
    from mechaudit.errors import MechauditError
    from mechaudit.sphinxext.offline import author_year_label
    from mechaudit.sphinxext.table import build_table

    message = r"^field 'rows': book-table: rows do not match the 2 header cells$"
    with pytest.raises(MechauditError, match=message) as err:
        build_table({"header": ["a", "b"], "rows": [["1"]], "numeric": [[0]]}, [])
    assert err.value.field == "rows"
    assert author_year_label([], "2020") == "Anonymous, 2020" and author_year_label([], "") == "Anonymous"


def test_only_an_html_build_gets_the_mathjax_bundle(tmp_path):
    from sphinx.application import Sphinx
    from sphinx.util.docutils import docutils_namespace

    (tmp_path / "conf.py").write_text("extensions = ['mechaudit.sphinxext.offline']\n", encoding="utf-8")
    (tmp_path / "index.rst").write_text("X\n=\n\nText.\n", encoding="utf-8")
    with docutils_namespace():
        Sphinx(str(tmp_path), str(tmp_path), str(tmp_path / "_b"), str(tmp_path / "_d"), "text", status=None,
               warning=StringIO(), freshenv=True).build()
    assert (tmp_path / "_b" / "index.txt").read_text(encoding="utf-8").startswith("X\n*")
    assert not (tmp_path / "_b" / "_static").exists()
