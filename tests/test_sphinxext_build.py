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

An unnumbered figure.
```
"""
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


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> tuple[str, str, Path, dict]:
    """The built page's HTML, the build's warnings, the output folder and the final html_context."""
    from sphinx.application import Sphinx

    src = tmp_path_factory.mktemp("sphinxext")
    (src / "conf.py").write_text(CONF.format(src=str(src)), encoding="utf-8")
    (src / "demo.py").write_text(DEMO, encoding="utf-8")
    (src / "index.md").write_text(PAGE, encoding="utf-8")
    (src / "nb.ipynb").write_text(json.dumps({"cells": [
        {"cell_type": "code", "outputs": [{"data": {"text/plain": "x"}}]},
        {"cell_type": "code", "outputs": [{"data": {"text/markdown": NOTEBOOK_TABLE.splitlines(True)}}]},
        {"cell_type": "code", "outputs": [{"metadata": {"scrapbook": {"name": "fig-key"}},
                                           "data": {"application/papermill.record/image/png": "AAAA",
                                                    "application/papermill.record/image/svg+xml": SVG}}]}]}),
        encoding="utf-8")
    warnings = StringIO()
    app = Sphinx(str(src), str(src), str(src / "_build"), str(src / "_doctrees"), "html",
                 status=None, warning=warnings, freshenv=True)
    app.build()
    # a second Sphinx in one process (another test file's build) re-registers docutils nodes: not this page's
    problems = [line for line in warnings.getvalue().splitlines() if "is already registered" not in line]
    return ((src / "_build" / "index.html").read_text(encoding="utf-8"), "\n".join(problems), src / "_build",
            dict(app.config.html_context))


def _tables(html: str) -> list[str]:
    return re.findall(r"<table\b.*?</table>", html, re.S)


def test_the_book_table_is_numbered_labelled_and_keeps_names_whole(page):
    html, warnings, _, _ = page
    assert "WARNING" not in warnings and "ERROR" not in warnings
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


def test_book_table_from_shows_the_notebooks_table_numbered_on_this_page(page):
    html, _, _, _ = page
    second = _tables(html)[1]
    assert second.startswith('<table class="book-table docutils align-default" id="tbl-nb">')
    assert '<span class="caption-number">Table 2 </span><span class="caption-text">From the notebook.' in second
    assert re.findall(r'<td data-label="x"><p>(.*?)</p>', second) == ["seven"]


def test_the_parameter_table_lists_the_chapters_defaults_and_keeps_one_word_values_whole(page):
    html, _, _, _ = page
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

    (tmp_path / "conf.py").write_text("extensions = ['mechaudit.sphinxext.table', "
                                      "'mechaudit.sphinxext.parameter_table']\nexclude_patterns = ['nb.ipynb']\n",
                                      encoding="utf-8")
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": []}), encoding="utf-8")
    (tmp_path / "index.rst").write_text("X\n=\n\n.. parameter-table:: 99_nothing\n\n.. book-table-from:: tbl-gone\n"
                                        "   :doc: nb.ipynb\n\n.. book-table::\n\n   not json\n", encoding="utf-8")
    warnings = StringIO()
    Sphinx(str(tmp_path), str(tmp_path), str(tmp_path / "_b"), str(tmp_path / "_d"), "html", status=None,
           warning=warnings, freshenv=True).build()
    text = warnings.getvalue()
    assert "parameter-table: no chapter '99_nothing' (one of 01_problem" in text
    assert "book-table-from: no cell of nb.ipynb shows a table named 'tbl-gone'" in text
    assert "book-table: the content is not JSON (Expecting value" in text
    assert Path(tmp_path / "_b" / "index.html").is_file()


def test_signatures_read_without_annotated_metadata_or_module_paths(page):
    html = page[0]
    sig = re.search(r'<dt class="sig sig-object py" id="demo.shaped">(.*?)</dt>', html, re.S).group(1)
    text = re.sub(r"\s+", " ", html_unescape(re.sub(r"<[^>]+>", "", sig))).replace("¶", "").strip()
    assert text == "demo.shaped(x: int, where: Path = 'a.b') → OrderedDict"


def test_the_offline_book_copies_mathjax_drops_thebe_and_defaults_to_light(page):
    html, _, out, context = page
    assert (out / "_static" / "mathjax" / "tex-mml-chtml.js").stat().st_size > 100_000
    assert any((out / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))
    assert re.search(r'<script[^>]*src="_static/mathjax/tex-mml-chtml.js', html)
    assert "cdn" not in "".join(re.findall(r"<script[^>]*mathjax[^>]*>", html)).lower()
    assert '_static/keep.js' in html and '_static/keep.css' in html
    assert "thebe" not in html.lower() and "x.js" not in html
    assert context["default_mode"] == "light"


def test_a_figure_glued_in_a_notebook_is_shown_with_this_pages_caption(page):
    html, _, out, _ = page
    figures = re.findall(r"<figure\b.*?</figure>", html, re.S)
    assert len(figures) == 2
    named, unnamed = figures
    assert 'id="fig-demo"' in named and 'style="width: 50%"' in named
    assert re.search(r'<span class="caption-number">Fig\. 1 </span><span class="caption-text">The <em>glued</em> '
                     r"caption\.</span>", named)
    assert "caption-number" not in unnamed and "An unnumbered figure." in unnamed
    images = re.findall(r'<img alt="fig-key" src="([^"]+)" style="width: 100%;" />', html)
    digest = hashlib.sha256(SVG.encode("utf-8")).hexdigest()
    assert len(images) == 2 and all(src.endswith(f"{digest}.svg") for src in images)  # the SVG, not the PNG
    assert (out / images[0]).read_text(encoding="utf-8") == SVG
