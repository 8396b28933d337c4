"""Glued numbers: every ``{glue:text}`key``` a chapter's prose cites is glued by that chapter.

A static check of the jupytext sources (markdown roles and directives against the ``glue(...)``
calls of the code cells, read with ``ast``), a check of the committed executed notebooks (the key
really was glued, once, in the offline run), and book-wide rules: names carry the chapter prefix
(``ch01_``, ``ch02b_``, ...) and no name is glued by two chapters. Cross-document references
(``{glue:text}`../notebooks/02_critique_depth.ipynb::ch02_x``` in ``book/*.md``) are checked
against the named chapter.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import re
import typing
from dataclasses import dataclass, field
from pathlib import Path
from unittest import mock

import jupytext
import nbformat
import numpy as np
import pytest

from mechaudit.paths import REPO_ROOT

SOURCES = sorted((REPO_ROOT / "notebooks").glob("*.py"))
PAGES = sorted((REPO_ROOT / "book").glob("*.md"))

# {glue}`key`, {glue:}`key`, {glue:any}`key`, {glue:text}`key:.1f`, {glue:md}`key:inline`
ROLE = re.compile(r"\{glue(?::(?:any|text|md)?)?\}`([^`]+)`")
# ```{glue:figure} key   /   :::{glue:md} key   /   ```{glue} key + a ":doc: path" option line
DIRECTIVE = re.compile(r"^[ \t]*(?:`{3,}|:{3,})\{glue(?::(?:any|figure|math|md)?)?\}[ \t]+(\S+)"
                       r"(?:\n[ \t]*:doc:[ \t]*(\S+))?", re.M)


@dataclass
class Reference:
    key: str
    doc: str | None  # None: this notebook; else the path before "::", relative to the page


@dataclass
class Glued:
    names: set[str] = field(default_factory=set)  # literal names
    patterns: list[re.Pattern] = field(default_factory=list)  # f-string names
    problems: list[str] = field(default_factory=list)

    def covers(self, key: str) -> bool:
        return key in self.names or any(p.fullmatch(key) for p in self.patterns)


def references(markdown: str) -> list[Reference]:
    """Glue keys cited by a markdown text (roles and directives), with their document if any."""
    out = []
    for text in [m.group(1) for m in ROLE.finditer(markdown)]:
        doc, _, rest = text.rpartition("::")
        out.append(Reference(key=rest.split(":")[0].strip(), doc=doc or None))
    for m in DIRECTIVE.finditer(markdown):
        doc, _, rest = m.group(1).rpartition("::")
        out.append(Reference(key=rest.split(":")[0].strip(), doc=m.group(2) or doc or None))
    return out


def _parse(code: str) -> ast.Module:
    """A code cell as Python; IPython magics and shell escapes are blanked first."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines()]
    return ast.parse("\n".join(lines))


def _imported(tree: ast.Module) -> dict[str, str]:
    """Local name -> dotted path of what it names, for the imports of a code text."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names |= {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.asname or a.name.split(".")[0]: a.name if a.asname else a.name.split(".")[0]
                      for a in node.names}
    return names


def _named(expr: ast.expr, imported: dict[str, str]):
    """The object an imported name or an attribute of one refers to (modules are imported, not run)."""
    if isinstance(expr, ast.Attribute):
        return getattr(_named(expr.value, imported), expr.attr)
    if isinstance(expr, ast.Name) and expr.id in imported:
        path = imported[expr.id]
        try:
            return importlib.import_module(path)
        except ImportError:
            module, _, name = path.rpartition(".")
            return getattr(importlib.import_module(module), name)
    raise LookupError(f"{ast.unparse(expr)} is not an imported name")


def record_class(expr: ast.expr, tree: ast.Module) -> type:
    """The facts record class an expression of a code text evaluates to, read without running it: a
    record class called, a function called (its return annotation), or a name assigned one of these."""
    if isinstance(expr, ast.Name):
        values = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign) and len(n.targets) == 1
                  and isinstance(n.targets[0], ast.Name) and n.targets[0].id == expr.id]
        if len(values) != 1:
            raise LookupError(f"{expr.id} is assigned {len(values)} times, not once")
        return record_class(values[0], tree)
    if isinstance(expr, ast.Call):
        made = _named(expr.func, _imported(tree))
        if isinstance(made, type) and dataclasses.is_dataclass(made):
            return made
        record = typing.get_type_hints(made).get("return")
        if isinstance(record, type) and dataclasses.is_dataclass(record):
            return record
        raise LookupError(f"{ast.unparse(expr.func)} is annotated to return {record!r}, not a facts record")
    raise LookupError(f"{ast.unparse(expr)} is neither a call nor a name")


def glued_names(code: str) -> Glued:
    """Names glued by ``glue(...)`` and ``glue_figure(...)`` calls (any ``*.glue`` too) and by a
    ``glue_as=`` keyword (``ctx.figure``) in a code text, and the keys of the records
    ``glue_facts(prefix, record)`` glues (``fact_keys`` of their class)."""
    from mechaudit.report.facts import fact_keys

    found = Glued()
    tree = _parse(code)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)) == "glue_facts":
            prefix_arg = node.args[0] if node.args else None
            if not (isinstance(prefix_arg, ast.Constant) and isinstance(prefix_arg.value, str)) or len(node.args) != 2:
                found.problems.append(f"line {node.lineno}: glue_facts needs a literal prefix and a record")
                continue
            try:
                found.names |= set(fact_keys(prefix_arg.value, record_class(node.args[1], tree)))
            except (LookupError, AttributeError, TypeError) as err:
                found.problems.append(f"line {node.lineno}: the record glue_facts glues is unknown: {err}")
            continue
        glue_as = next((k.value for k in node.keywords if k.arg == "glue_as"), None)  # ctx.figure(..., glue_as=)
        if glue_as is None and not (isinstance(func, ast.Name) and func.id in ("glue", "glue_figure")) and not (
            isinstance(func, ast.Attribute) and func.attr in ("glue", "glue_figure")
        ):
            continue
        arg = glue_as or (node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "name"),
                                                              None))
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            found.names.add(arg.value)
        elif isinstance(arg, ast.JoinedStr):
            parts = [re.escape(v.value) if isinstance(v, ast.Constant) else ".+" for v in arg.values]
            found.patterns.append(re.compile("".join(parts)))
        else:
            found.problems.append(
                f"line {node.lineno}: glue name {ast.unparse(arg) if arg else '(missing)'} is not a string "
                "literal or an f-string, so no test can check it"
            )
    return found


def notebook_refs_and_glue(source: Path) -> tuple[list[Reference], Glued]:
    nb = jupytext.read(source)
    refs = [r for c in nb.cells if c.cell_type == "markdown" for r in references(c.source)]
    # one text: a glue_facts call may glue a record a cell above made
    glued = glued_names("\n\n".join(c.source for c in nb.cells if c.cell_type == "code"))
    return refs, glued


@functools.cache
def chapter_glue(source: Path) -> Glued:
    """What a committed chapter source glues (``notebook_refs_and_glue``), read once per session: the
    pages and chapters cite dozens of keys of the same chapter. Callers must not change it."""
    return notebook_refs_and_glue(source)[1]


def prefix(source: Path) -> str:
    """The chapter's glue-name prefix: ``01_problem`` -> ``ch01_``, ``02b_validity`` -> ``ch02b_``."""
    return f"ch{source.stem.split('_')[0]}_"


def glued_texts(ipynb: Path) -> dict[str, str]:
    """Glue name -> the stored text a ``{glue:text}`` shows, for every value an executed notebook glued."""
    nb = nbformat.read(ipynb, as_version=4)
    return {out["metadata"]["scrapbook"]["name"]: out["data"]["application/papermill.record/text/plain"]
            for cell in nb.cells if cell.cell_type == "code" for out in cell.get("outputs", [])
            if "scrapbook" in out.get("metadata", {})
            and "application/papermill.record/text/plain" in out.get("data", {})}


def executed_glue(ipynb: Path) -> list[str]:
    """Names glued in an executed notebook's outputs (myst-nb stores them in ``scrapbook`` metadata)."""
    nb = nbformat.read(ipynb, as_version=4)
    return [
        out["metadata"]["scrapbook"]["name"]
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if "scrapbook" in out.get("metadata", {})
    ]


def _source_of(doc: str, page: Path) -> Path:
    target = (page.parent / doc).resolve()
    return target.with_suffix(".py")


# ---------------------------------------------------------------------------------------------
# the checker itself can fail


def test_checker_reads_roles_directives_and_calls():
    md = (
        "A {glue:text}`ch09_a` and {glue:text}`ch09_b:.1f` and {glue}`ch09_c` and "
        "{glue:text}`../notebooks/01_problem.ipynb::ch01_n_runs`.\n"
        "```{glue:figure} ch09_fig\n:name: f\n```\n"
        "```{glue} ch05_fig\n:doc: ../notebooks/05_perturbations.ipynb\n```\n"
    )
    refs = references(md)
    assert [(r.key, r.doc) for r in refs] == [
        ("ch09_a", None), ("ch09_b", None), ("ch09_c", None),
        ("ch01_n_runs", "../notebooks/01_problem.ipynb"), ("ch09_fig", None),
        ("ch05_fig", "../notebooks/05_perturbations.ipynb"),
    ]
    code = (
        "%matplotlib inline\nfrom mechaudit.report.glue import glue\nglue('ch09_a', 1)\n"
        "mechaudit.report.glue.glue(name='ch09_b', value=2.0, digits=1)\n"
        "for r in rules:\n    glue(f'ch09_extra_{r}', 3)\nglue(name_var, 4)\n"
        "fig = ctx.figure('heatmaps', fig, glue_as='ch09_fig')\nctx.figure('plain', fig)\n"
    )
    found = glued_names(code)
    assert found.names == {"ch09_a", "ch09_b", "ch09_fig"}
    assert found.covers("ch09_extra_tfidf") and not found.covers("ch09_c") and not found.covers("ch09_extra_")
    assert len(found.problems) == 1 and "name_var" in found.problems[0]


def test_checker_finds_a_key_that_no_cell_glues(tmp_path):
    source = tmp_path / "09_x.py"
    source.write_text(
        "# %% [markdown]\n# It is {glue:text}`ch09_missing` and {glue:text}`ch09_there`.\n\n"
        "# %%\nfrom mechaudit.report.glue import glue\nglue('ch09_there', 1)\n"
    )
    refs, glued = notebook_refs_and_glue(source)
    assert [r.key for r in refs if not glued.covers(r.key)] == ["ch09_missing"]


# ---------------------------------------------------------------------------------------------
# the book


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_every_cited_key_is_glued_by_the_same_chapter(source):
    refs, glued = notebook_refs_and_glue(source)
    assert not glued.problems, f"{source.name}: " + "; ".join(glued.problems)
    for ref in refs:
        if ref.doc is None:
            assert glued.covers(ref.key), f"{source.name} cites {{glue:text}}`{ref.key}` but no cell glues it"
        else:
            other = _source_of(ref.doc, source)
            assert other.exists(), f"{source.name} cites {ref.doc}::{ref.key}: no such chapter"
            assert chapter_glue(other).covers(ref.key), f"{other.name} does not glue {ref.key!r}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_pages_cite_keys_their_chapter_glues(page):
    for ref in references(page.read_text(encoding="utf-8")):
        assert ref.doc is not None, f"{page.name}: {ref.key!r} needs 'path/to/chapter.ipynb::key' on a page"
        other = _source_of(ref.doc, page)
        assert other.exists(), f"{page.name} cites {ref.doc}::{ref.key}: no such chapter"
        assert chapter_glue(other).covers(ref.key), f"{other.name} does not glue {ref.key!r}"


def test_glue_names_carry_the_chapter_prefix_and_are_unique_book_wide():
    owner: dict[str, str] = {}
    for source in SOURCES:
        _, glued = notebook_refs_and_glue(source)
        want = prefix(source)
        for name in glued.names:
            assert name.startswith(want), f"{source.name} glues {name!r}: names start with {want!r}"
            assert name not in owner, f"{name!r} is glued by {owner[name]} and {source.name}"
            owner[name] = source.name
        for pattern in glued.patterns:
            if pattern.pattern.startswith(".+"):
                continue  # the prefix is itself a variable: checked on the executed notebook below
            assert pattern.pattern.startswith(re.escape(want)), (
                f"{source.name} glues f-string names {pattern.pattern!r}: they start with {want!r}"
            )


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_committed_notebook_glued_every_cited_key_once(source):
    """In the committed (offline) run every cited key was glued exactly once (myst-nb warns on twice)."""
    refs, _ = notebook_refs_and_glue(source)
    names = executed_glue(source.with_suffix(".ipynb"))
    twice = sorted({n for n in names if names.count(n) > 1})
    assert not twice, f"{source.stem}.ipynb glues {twice} more than once"
    missing = sorted({r.key for r in refs if r.doc is None} - set(names))
    assert not missing, (
        f"{source.stem}.ipynb does not glue {missing} (not re-executed since the prose changed, or the "
        "glue call sits in a branch the offline run skips)"
    )
    unprefixed = sorted(n for n in names if not n.startswith(prefix(source)))
    assert not unprefixed, f"{source.stem}.ipynb glues {unprefixed}: names start with {prefix(source)!r}"


def test_committed_glue_names_are_unique_book_wide():
    owner: dict[str, str] = {}
    for source in SOURCES:
        ipynb = source.with_suffix(".ipynb")
        if not ipynb.exists():
            continue  # test_notebooks reports the missing notebook
        for name in set(executed_glue(ipynb)):
            assert name not in owner, f"{name!r} is glued by {owner[name]} and {ipynb.name}"
            owner[name] = ipynb.name


# ---------------------------------------------------------------------------------------------
# what a glued value renders as: never a tuple, never a quoted string


def rendered(text_plain: str) -> str:
    """What ``{glue:text}`key``` shows for a stored ``text/plain`` (myst-nb's own formatting)."""
    from myst_nb.core.variables import format_plain_text

    return format_plain_text(text_plain, "s")


def looks_wrong(text: str) -> str | None:
    """Why a rendered glue text is broken ("a tuple", "quoted"), or ``None``."""
    if re.fullmatch(r"\(.*,.*\)", text):
        return "a tuple"
    if re.fullmatch(r"(['\"]).*\1", text, re.S):
        return "quoted"
    return None


def stored_text(value) -> str:
    """The ``text/plain`` that :func:`mechaudit.report.glue.glue` stores for ``value`` (myst-nb glue is
    replaced by a recorder; IPython's formatter makes the text, as in a kernel)."""
    from unittest import mock

    from IPython.core.formatters import format_display_data

    from mechaudit.report.glue import glue

    seen = {}
    with mock.patch("myst_nb.glue", lambda name, v, display=False: seen.setdefault("v", v)):
        glue("ch00_x", value)
    return format_display_data(seen["v"])[0]["text/plain"]


@pytest.mark.parametrize("value", ["4,863", "5,192", "1e-4", "1_000", "True", "(1, 2)", "not run", "it's",
                                   "<\u00a010⁻⁸, the smallest possible", "'quoted'"])
def test_a_glued_string_renders_as_itself(value):
    assert rendered(stored_text(value)) == value


@pytest.mark.parametrize("value, shown", [(4863, "4863"), (34.5, "34.5"), (0, "0")])
def test_a_glued_number_renders_as_the_number(value, shown):
    assert rendered(stored_text(value)) == shown


def test_the_tuple_and_quote_check_can_fail():
    assert looks_wrong(rendered("4,863")) == "a tuple"  # the old, unquoted storage of a formatted count
    assert looks_wrong("'not run'") == "quoted" and looks_wrong("4,863") is None


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_no_committed_glue_renders_as_a_tuple_or_a_quoted_string(source):
    bad = [f"{name} renders {rendered(text)!r} ({why})"
           for name, text in glued_texts(source.with_suffix(".ipynb")).items()
           if (why := looks_wrong(rendered(text)))]
    assert not bad, f"{source.stem}.ipynb: " + "; ".join(bad)


def test_span_and_at_most_texts_never_read_as_templates():
    from mechaudit.report.glue import at_most_text, span_text

    assert span_text(3.041, 3.039) == "at 3.04"
    assert span_text(3.1, 2.98) == "between 2.98 and 3.10"
    assert span_text(5, 12, digits=0, unit=" %") == "between 5 % and 12 %"
    assert at_most_text(0.0004) == "do not differ" and at_most_text(0.0123) == "differ by at most 0.012"


@pytest.mark.parametrize("value", [float("nan"), np.nan, float("inf"), -np.inf])
@pytest.mark.parametrize("digits", [0, 1])
def test_glue_refuses_to_round_a_value_that_is_not_finite(value, digits):
    from mechaudit.errors import MechauditError
    from mechaudit.report.glue import glue

    with mock.patch("myst_nb.glue") as stored, pytest.raises(MechauditError, match=r"^glue 'ch00_x': .*unknown"):
        glue("ch00_x", value, digits=digits)
    stored.assert_not_called()


def test_glue_rounds_a_finite_number_before_storing_it():
    from mechaudit.report.glue import glue

    with mock.patch("myst_nb.glue") as stored:
        assert glue("ch00_x", 2.345, digits=1) == 2.3 and glue("ch00_y", 7.6, digits=0) == 8
    assert [c.args[:2] for c in stored.call_args_list] == [("ch00_x", 2.3), ("ch00_y", 8)]


def test_glue_stores_without_displaying():
    from mechaudit.report.glue import glue

    with mock.patch("myst_nb.glue") as stored:
        glue("ch00_x", "4,863")
        glue("ch00_y", 3)
    assert [(c.args, c.kwargs) for c in stored.call_args_list] == [(("ch00_x", "4,863"), {"display": False}),
                                                                   (("ch00_y", 3), {"display": False})]


def test_a_glued_figure_is_stored_as_its_svg_and_closed():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mechaudit.report.glue import StoredFigure, glue_figure

    fig, ax = plt.subplots(figsize=(1, 1))
    ax.plot([0, 1], [0, 1])
    with mock.patch("myst_nb.glue") as stored:
        assert glue_figure("ch00_fig", fig) is fig
    ((name, kept), kwargs), = [(c.args, c.kwargs) for c in stored.call_args_list]
    assert name == "ch00_fig" and kwargs == {"display": False}
    assert isinstance(kept, StoredFigure) and kept.figure is fig and repr(kept) == repr(fig)
    assert not plt.fignum_exists(fig.number)
    svg = kept._repr_svg_()
    assert "<svg" in svg and "<dc:date>" not in svg and "Matplotlib" not in svg
