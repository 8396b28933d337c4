"""Static checks of the reader's and teacher's layer of every chapter source (no build, no browser).

Each chapter (``notebooks/*.py``, jupytext percent) keeps its visible code cells short, opens with
a "Question, answer and how we know" box named ``chNN-answer`` followed by its learning objectives,
has an ``## Exercises`` section of at least two exercises with matching solutions, ends with three
key takeaways, and gives every glued figure a name and a caption. Headings name no paper figure or
table by number (the book numbers its own), and glossary links name existing terms. In every
executed notebook, no cell whose code the book hides shows a bare value (a ``glue()`` return on its
last line) and no folded cell shows nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import jupytext
import pytest

from mechaudit.paths import REPO_ROOT

MAX_VISIBLE_LINES = 25
MAX_VISIBLE_COLUMNS = 76  # characters of a visible code line: 684 px at 1280 px, about 8.8 px each
HIDDEN_TAGS = {"hide-input", "remove-input", "remove-cell"}
CHAPTERS = sorted((REPO_ROOT / "notebooks").glob("[0-9]*.py"))
GLOSSARY = REPO_ROOT / "book" / "glossary.md"
NEW_TERMS = ["Percentage point (pp)", "Cohen's kappa (κ)", "Vendi score", "TF-IDF", "Complete linkage",
             "Exact p-value", "Weak link", "Engagement label", "1.92 band", "Kish effective sample size",
             "Same-depth divergence", "Ceiling", "Simulator", "Rubric variants", "LLM-as-a-judge"]

_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}\s*(?P<arg>.*)$")
_OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$")
_TERM = re.compile(r"\{term\}`(?:[^`<]*<(?P<target>[^>`]+)>|(?P<plain>[^`]+))`")


@dataclass
class Directive:
    """One MyST directive in a markdown text: name, argument, options and body (caption) lines."""

    name: str
    arg: str
    options: dict[str, str] = field(default_factory=dict)
    body: list[str] = field(default_factory=list)


def directives(text: str) -> list[Directive]:
    """Every fenced MyST directive in ``text``, nested ones included, in order of opening."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        m = _OPEN.match(line.strip())
        if not m:
            continue
        d = Directive(m["name"], m["arg"].strip())
        j = i + 1
        while j < len(lines) and (o := _OPTION.match(lines[j].strip())):
            d.options[o["key"]] = o["value"].strip()
            j += 1
        while j < len(lines) and lines[j].strip() != m["fence"]:
            d.body.append(lines[j])
            j += 1
        found.append(d)
    return found


def chapter_id(path: Path) -> str:
    """``notebooks/02b_validity.py`` -> ``ch02b``."""
    return "ch" + path.stem.split("_", 1)[0]


def cells(path: Path) -> list[dict]:
    return jupytext.read(path)["cells"]


def markdown(path: Path) -> str:
    return "\n\n".join(c["source"] for c in cells(path) if c["cell_type"] == "markdown")


def visible_code(path: Path) -> list[tuple[int, list[str]]]:
    """``(cell number, source lines)`` of each visible code cell (no hiding tag; the parameters cell
    counts)."""
    return [(n, c["source"].rstrip().splitlines()) for n, c in enumerate(cells(path))
            if c["cell_type"] == "code" and not set(c.get("metadata", {}).get("tags", [])) & HIDDEN_TAGS]


def long_visible_cells(path: Path, limit: int = MAX_VISIBLE_LINES) -> list[str]:
    """Visible code cells longer than ``limit`` lines."""
    return [f"cell {n} ({len(lines)} lines): {lines[0][:60]!r}" for n, lines in visible_code(path)
            if len(lines) > limit]


def wide_visible_lines(path: Path, limit: int = MAX_VISIBLE_COLUMNS) -> list[str]:
    """Lines of visible code cells wider than ``limit`` characters (the browser pass measures the
    same lines in pixels; this finds them without a build)."""
    return [f"cell {n}: {len(line)} columns: {line[:50]!r}" for n, lines in visible_code(path)
            for line in lines if len(line) > limit]


def glossary_terms() -> list[str]:
    (block,) = [d for d in directives(GLOSSARY.read_text(encoding="utf-8")) if d.name == "glossary"]
    return [line.strip() for line in block.body if line.strip() and not line[0].isspace()]


def _ids(paths):
    return [p.stem for p in paths]


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_visible_code_cells_are_short(path):
    long = long_visible_cells(path)
    assert not long, f"{path.name}: visible code cells over {MAX_VISIBLE_LINES} lines: {long} " \
        "(tag set-up and plotting cells hide-input or remove-cell)"


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_visible_code_lines_fit_the_column(path):
    wide = wide_visible_lines(path)
    assert not wide, f"{path.name}: visible code lines over {MAX_VISIBLE_COLUMNS} columns (the text column " \
        f"at 1280 px holds about 77): {wide}"


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_no_markdown_hidden_in_a_code_cell(path):
    """A code cell of comments only (e.g. ``# ## Try it``) renders as code, not as text (a removed
    cell renders nothing: the parameters cell, which holds only a note for the source's reader)."""
    comment_only = [c["source"].splitlines()[0] for c in cells(path) if c["cell_type"] == "code"
                    and "remove-cell" not in c.get("metadata", {}).get("tags", [])
                    and c["source"].strip() and all(s.strip().startswith("#") or not s.strip()
                                                     for s in c["source"].splitlines())]
    assert not comment_only, f"{path.name}: code cells holding only comments: {comment_only}"


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_chapter_opens_with_answer_box_then_objectives(path):
    found = directives(markdown(path))
    names = [d.arg for d in found if d.name == "admonition"]
    assert "Question, answer and how we know" in names and "Learning objectives" in names, \
        f"{path.name}: needs both the answer box and the learning objectives"
    assert names.index("Question, answer and how we know") < names.index("Learning objectives"), \
        f"{path.name}: the answer box comes first, the learning objectives after it"
    admonitions = {d.arg: d for d in found if d.name == "admonition"}
    assert "Learning objectives" in admonitions, f"{path.name}: no 'Learning objectives' admonition"
    assert any(line.strip().startswith("- ") for line in admonitions["Learning objectives"].body), \
        f"{path.name}: the learning objectives list no bullet"
    box = admonitions.get("Question, answer and how we know")
    assert box is not None, f"{path.name}: no 'Question, answer and how we know' admonition"
    assert box.options.get("name") == f"{chapter_id(path)}-answer", \
        f"{path.name}: the answer box has :name: {box.options.get('name')!r}, not {chapter_id(path)}-answer"
    text = "\n".join(box.body)
    for part in ("**Question.**", "**Answer.**", "**How we know.**"):
        assert part in text, f"{path.name}: the answer box lacks {part}"


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_chapter_has_exercises_with_solutions(path):
    text = markdown(path)
    has_section = re.search(r"^## Exercises\s*$", text, re.M) is not None
    assert has_section, f"{path.name}: no '## Exercises' section"
    found = directives(text.split("## Exercises", 1)[1])
    labels = [d.options.get("label", "") for d in found if d.name == "exercise"]
    solved = {d.arg for d in found if d.name == "solution"}
    assert len(labels) >= 2, f"{path.name}: {len(labels)} exercise(s) under '## Exercises', need >= 2"
    bad = [label for label in labels if not label.startswith(f"{chapter_id(path)}-ex")]
    assert not bad, f"{path.name}: exercise labels {bad} do not start with {chapter_id(path)}-ex"
    assert not set(labels) - solved, f"{path.name}: exercises without a solution: {sorted(set(labels) - solved)}"
    assert not solved - set(labels), f"{path.name}: solutions of no exercise: {sorted(solved - set(labels))}"


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_chapter_ends_with_three_key_takeaways(path):
    text = markdown(path).rstrip()
    heads = list(re.finditer(r"^## (.+)$", text, re.M))
    assert heads and heads[-1].group(1).strip() == "Key takeaways", \
        f"{path.name}: the last section is {heads[-1].group(1) if heads else None!r}, not 'Key takeaways'"
    items = re.findall(r"^\d\. \S", text[heads[-1].end():], re.M)
    assert len(items) == 3, f"{path.name}: {len(items)} numbered takeaways, need 3"


_PAPER_NUMBER = re.compile(r"^#+ .*\b(Figure|Fig\.|Table)\s+\d.*$", re.M)


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_no_heading_names_a_paper_figure_or_table_by_number(path):
    """"Table 1" in a heading would read as the book's own Table 1, which is "Table 2.1" here."""
    bad = [m.group(0) for m in _PAPER_NUMBER.finditer(markdown(path))]
    assert not bad, f"{path.name}: headings naming a figure or table by number: {bad}"


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_glued_figures_have_name_and_caption(path):
    figures = [d for d in directives(markdown(path)) if d.name == "glue:figure"]
    bad = [f"{d.arg}: " + ("no :name:" if not d.options.get("name") else "empty caption")
           for d in figures if not d.options.get("name") or not "".join(d.body).strip()]
    assert not bad, f"{path.name}: {bad}"


def test_glossary_has_the_teaching_terms():
    terms = glossary_terms()
    assert not set(NEW_TERMS) - set(terms), f"missing glossary terms: {sorted(set(NEW_TERMS) - set(terms))}"
    assert len(terms) == len(set(terms)), "a glossary term is defined twice"


def test_every_term_link_names_a_glossary_term():
    terms = set(glossary_terms())
    sources = CHAPTERS + sorted((REPO_ROOT / "book").glob("*.md"))
    unknown = {(p.name, m["target"] or m["plain"]) for p in sources
               for m in _TERM.finditer(p.read_text(encoding="utf-8"))
               if (m["target"] or m["plain"]).strip() not in terms}
    assert not unknown, f"{{term}} links to no glossary entry: {sorted(unknown)}"


def test_the_reading_order_checks_can_fail(tmp_path):
    """Objectives before the answer box, two takeaways and a heading naming "Table 1" are each
    reported."""
    bad = tmp_path / "09_order.py"
    bad.write_text("# %% [markdown]\n# # Bad\n#\n# ```{admonition} Learning objectives\n# - x\n# ```\n#\n"
                   "# ```{admonition} Question, answer and how we know\n# :name: ch09-answer\n# **Question.** q\n"
                   "# **Answer.** a\n# **How we know.** h\n# ```\n#\n# ## Table 1 per rule\n\n"
                   "# %% [markdown]\n# ## Key takeaways\n#\n# 1. one\n# 2. two\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="answer box comes first"):
        test_chapter_opens_with_answer_box_then_objectives(bad)
    with pytest.raises(AssertionError, match="2 numbered takeaways"):
        test_chapter_ends_with_three_key_takeaways(bad)
    with pytest.raises(AssertionError, match="Table 1 per rule"):
        test_no_heading_names_a_paper_figure_or_table_by_number(bad)


def test_the_checks_can_fail(tmp_path):
    """A chapter without the layer is reported by every check (the parser is not vacuous)."""
    bad = tmp_path / "09_bad.py"
    bad.write_text("# %% [markdown]\n# # Bad\n#\n# ```{glue:figure} ch09_fig_x\n# :figwidth: 100%\n# ```\n\n"
                   "# %%\n" + "x = 1\n" * 26 + "y = " + "1 + " * 20 + "1\n\n# %%\n# ## Try it\n",
                   encoding="utf-8")
    with pytest.raises(AssertionError, match="27 lines"):
        test_visible_code_cells_are_short(bad)
    with pytest.raises(AssertionError, match="85 columns"):
        test_visible_code_lines_fit_the_column(bad)
    with pytest.raises(AssertionError, match="only comments"):
        test_no_markdown_hidden_in_a_code_cell(bad)
    with pytest.raises(AssertionError, match="needs both the answer box"):
        test_chapter_opens_with_answer_box_then_objectives(bad)
    with pytest.raises(AssertionError, match="not 'Key takeaways'"):
        test_chapter_ends_with_three_key_takeaways(bad)
    with pytest.raises(AssertionError, match="Exercises"):
        test_chapter_has_exercises_with_solutions(bad)
    with pytest.raises(AssertionError, match="no :name:"):
        test_glued_figures_have_name_and_caption(bad)


# ------------------------------------------------------------------------------ executed outputs

def _glued(output: dict) -> bool:
    """A myst-nb ``glue`` output: stored for the prose, never shown where the cell is."""
    return "scrapbook" in output.get("metadata", {})


def _stray(output: dict) -> bool:
    """A bare return value (an execute result that is only plain text), e.g. a ``glue()`` call's value
    on a cell's last line; tables and figures carry HTML or an image beside their plain text."""
    return output.get("output_type") == "execute_result" and set(output.get("data", {})) == {"text/plain"}


def output_problems(notebook: dict) -> list[str]:
    """In an executed notebook: a cell whose code the book hides that shows a bare value, and a cell
    whose code is folded (``hide-input``) that shows nothing, so its toggle opens onto nothing (a
    glue-only cell is tagged ``remove-cell``)."""
    problems = []
    code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    for n, cell in enumerate(code, 1):
        tags = set(cell.get("metadata", {}).get("tags", []))
        if "remove-cell" in tags or not tags & HIDDEN_TAGS:
            continue
        shown = [o for o in cell.get("outputs", []) if not _glued(o)]
        if any(_stray(o) for o in shown):
            problems.append(f"code cell {n}: a bare value is shown: "
                            f"{''.join(next(o for o in shown if _stray(o))['data']['text/plain'])[:60]!r}")
        if "hide-input" in tags and not [o for o in shown if not _stray(o)]:
            problems.append(f"code cell {n}: its code toggle opens onto nothing (tag a glue-only cell remove-cell)")
    return problems


@pytest.mark.parametrize("path", CHAPTERS, ids=_ids(CHAPTERS))
def test_no_stray_value_and_no_empty_toggle(path):
    import json

    problems = output_problems(json.loads(path.with_suffix(".ipynb").read_text(encoding="utf-8")))
    assert not problems, f"{path.with_suffix('.ipynb').name}:\n  " + "\n  ".join(problems)


def test_the_output_checks_can_fail():
    glue = {"output_type": "display_data", "data": {"text/plain": "1"}, "metadata": {"scrapbook": {"name": "x"}}}
    bare = {"output_type": "execute_result", "data": {"text/plain": "0.35"}, "metadata": {}}
    table = {"output_type": "display_data", "data": {"text/html": "<table/>", "text/plain": "t"}, "metadata": {}}

    def notebook(*cells):
        return {"cells": [{"cell_type": "code", "metadata": {"tags": tags}, "outputs": outs} for tags, outs in cells]}

    assert output_problems(notebook((["hide-input"], [table, glue]), (["remove-cell"], [glue, bare]),
                                    ([], [bare]))) == []
    found = output_problems(notebook((["hide-input"], [glue]), (["remove-input"], [table, bare]),
                                     (["hide-input"], [glue, bare])))
    assert [p.split(":")[0] for p in found] == ["code cell 1", "code cell 2", "code cell 3", "code cell 3"]
    assert "opens onto nothing" in found[0] and "'0.35'" in found[1]
