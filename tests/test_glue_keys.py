"""Every glued key is cited, every cited key is glued: a static check (nothing is executed).

For each chapter in ``CONVERTED`` (those whose glued values are typed facts, ``mechaudit.report.facts``) the
keys it produces are the literal first arguments of its ``glue``/``glue_figure`` calls plus
``fact_keys`` of the records its ``glue_facts`` calls glue (the record class read from the code,
modules imported but nothing run); the keys cited are the ``{glue:...}`` roles and directives of its
own markdown and the ``{glue...}`` and ``glue-figure-from`` citations of that notebook in every other
notebook and in ``book/**/*.md``. A cited key no chapter produces breaks a sentence; a produced key no
page cites is dead weight. The other chapters follow as they are converted (add them to
``CONVERTED``); until then ``test_glue.py`` checks only the first direction for them.
"""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import pytest
from test_glue import _source_of, notebook_refs_and_glue, references

from mechaudit.paths import REPO_ROOT

#: chapters whose glued values are typed facts: no f-string keys, and every produced key is cited
CONVERTED = ("01_problem", "02_critique_depth", "02b_validity", "02c_robustness", "03_critique_engagement",
             "04_equivalence_rules", "05_perturbations", "06_rubric_sensitivity", "07_sensitivity",
             "08_tau_calibration", "09_your_data")

# ```{glue-figure-from} key   (+ a ":doc: path" option line): book_figure.py's directive
FIGURE_FROM = re.compile(r"^[ \t]*(?:`{3,}|:{3,})\{glue-figure-from\}[ \t]+(\S+)(?:\n[ \t]*:doc:[ \t]*(\S+))?",
                         re.M)


def cited_keys(source: Path, notebooks: list[Path], pages: list[Path]) -> set[str]:
    """Keys of ``source`` cited by its own markdown and, with a ``doc``, by other notebooks and pages."""
    keys: set[str] = set()
    for path in [*notebooks, *pages]:
        if path.suffix == ".py":
            text = "\n".join(c.source for c in jupytext.read(path).cells if c.cell_type == "markdown")
        else:
            text = path.read_text(encoding="utf-8")
        refs = [(r.key, r.doc) for r in references(text)]
        for m in FIGURE_FROM.finditer(text):
            doc, _, key = m.group(1).rpartition("::")
            refs.append((key, m.group(2) or doc or None))
        for key, doc in refs:
            if (doc is None and path == source) or (doc is not None and _source_of(doc, path) == source.resolve()):
                keys.add(key)
    return keys


def key_problems(source: Path, notebooks: list[Path], pages: list[Path]) -> list[str]:
    """What is wrong with a converted chapter's keys: unresolved glue calls, f-string keys, cited keys
    it does not produce, produced keys no page cites."""
    _, glued = notebook_refs_and_glue(source)
    cited = cited_keys(source, notebooks, pages)
    return ([f"{source.name}: {p}" for p in glued.problems]
            + [f"{source.name}: glue(f\"...\") key {p.pattern!r}: make it a field of a facts record"
               for p in glued.patterns]
            + [f"{source.name}: {k!r} is cited but not produced" for k in sorted(cited - glued.names)]
            + [f"{source.name}: {k!r} is produced but no page cites it" for k in sorted(glued.names - cited)])


@pytest.mark.parametrize("stem", CONVERTED)
def test_converted_chapter_produces_exactly_the_keys_its_pages_cite(stem):
    notebooks = sorted((REPO_ROOT / "notebooks").glob("*.py"))
    pages = sorted((REPO_ROOT / "book").glob("**/*.md"))
    assert key_problems(REPO_ROOT / "notebooks" / f"{stem}.py", notebooks, pages) == []


def test_the_check_finds_a_planted_key_in_either_direction(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "book").mkdir()
    source = tmp_path / "notebooks" / "09_x.py"
    source.write_text(
        "# %% [markdown]\n# {glue:text}`ch09_there` and {glue:text}`ch09_planted`; the record's "
        "{glue:text}`ch09_paper_conceded_pct`.\n\n"
        "# %%\nfrom mechaudit.book import ch03_critique_engagement as ch\n"
        "from mechaudit.report.facts import glue_facts\n"
        "from mechaudit.report.glue import glue\nglue('ch09_there', 1)\nglue('ch09_unread', 2)\n"
        "paper = ch.paper_engagement()\nglue_facts('ch09_paper', paper)\n"
    )
    page = tmp_path / "book" / "page.md"
    page.write_text("{glue:text}`../notebooks/09_x.ipynb::ch09_paper_dropped_pct`\n"
                    "```{glue-figure-from} ch09_fig\n:doc: ../notebooks/09_x.ipynb\n\nA caption.\n```\n")
    problems = key_problems(source, [source], [page])
    assert sorted(problems) == sorted([
        "09_x.py: 'ch09_planted' is cited but not produced",
        "09_x.py: 'ch09_fig' is cited but not produced",
        "09_x.py: 'ch09_unread' is produced but no page cites it",
    ] + [f"09_x.py: 'ch09_paper_{part}' is produced but no page cites it"
         for part in ("demands", "answered_pct", "partial_pct")])
