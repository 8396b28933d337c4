"""Every chapter parameter is declared once (``mechaudit.book.settings``): the notebooks read it from
their context and declare none, and a bad value is one clause naming what is allowed, before a kernel
starts (and again in the kernel, for a value injected by papermill itself)."""

from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import get_args

import jupytext
import pytest

from mechaudit.book import settings
from mechaudit.book.params import (
    ParameterError,
    check_value,
    notebook_parameters,
    resolve_chapter,
    resolve_parameters,
    toc_chapters,
)

CHAPTERS = {c.stem: notebook_parameters(c.source) for c in toc_chapters()}


def second_declarations(source: Path, stem: str) -> list[str]:
    """What in chapter ``source`` declares a parameter besides its model: a cell tagged
    ``more-parameters``, a ``parameters`` cell that is not the one removed cell or that assigns a
    value, a variable named like a parameter (a set-up cell run again would read it as one), or a
    context not opened on the chapter's own model."""
    cells = jupytext.read(source).cells
    tagged = [c for c in cells if {"parameters", "more-parameters"} & set(c.metadata.get("tags", []))]
    found = [] if [c.metadata["tags"] for c in tagged] == [["parameters", "remove-cell"]] else \
        [f"parameters cells tagged {[c.metadata['tags'] for c in tagged]}"]
    found += [f"assigns in {c.metadata['tags']}" for c in tagged if ast.parse(c.source).body]
    bound = {n.id for c in cells if c.cell_type == "code" for n in ast.walk(ast.parse(c.source))
             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    found += [f"binds {name}" for name in settings.CHAPTERS[stem].model_fields if name in bound]
    if f'ChapterContext.open(globals(), "{stem}")' not in source.read_text(encoding="utf-8"):
        found.append(f"no context opened on {stem}'s model")
    return found


def test_every_chapter_has_a_model_and_declares_no_parameter_besides_it():
    """A run starts from the model's defaults; the chapter's one parameters cell (papermill needs it)
    assigns nothing and the notebook reads its parameters from a context opened on its own model."""
    assert set(settings.CHAPTERS) == set(CHAPTERS)
    for chapter in toc_chapters():
        assert CHAPTERS[chapter.stem] == settings.defaults(chapter.stem)
        assert list(CHAPTERS[chapter.stem]) == list(settings.CHAPTERS[chapter.stem].model_fields)
        assert second_declarations(chapter.source, chapter.stem) == [], chapter.stem


def test_a_second_declaration_is_found(tmp_path):
    source = tmp_path / "01_problem.py"
    source.write_text('# %% tags=["more-parameters", "remove-cell"]\nbackend = "reference"\n\n'
                      '# %% tags=["parameters"]\nseed = 0\n\n# %%\nctx = ChapterContext.open(globals())\n')
    assert second_declarations(source, "01_problem") == [
        "parameters cells tagged [['more-parameters', 'remove-cell'], ['parameters']]",
        "assigns in ['more-parameters', 'remove-cell']", "assigns in ['parameters']", "binds backend",
        "binds seed", "no context opened on 01_problem's model"]


def _run_until_the_context(params: dict) -> dict:
    """The globals of chapter 01 executed with ``params`` injected by papermill (after the cell
    tagged ``parameters``), up to the cell that opens its context."""
    from papermill.parameterize import parameterize_notebook

    from mechaudit import paper
    from mechaudit.book.execute import source_notebook

    nb = source_notebook(resolve_chapter("01_problem"))
    nb.metadata["papermill"] = {}
    for cell in nb.cells:
        cell.metadata.setdefault("tags", [])
    namespace: dict = {}
    shown = paper.shown()
    try:
        for cell in parameterize_notebook(nb, params).cells:
            if cell.cell_type == "code":
                exec(cell.source, namespace)
            if "ctx" in namespace:
                return namespace
    finally:
        paper.show(shown)
    raise AssertionError("no cell opened the context")


def test_a_value_papermill_injects_reaches_the_settings_and_a_bad_one_fails_in_the_kernel():
    namespace = _run_until_the_context({"seed": 7, "n_runs": 3})
    assert namespace["p"] is namespace["ctx"].settings
    assert (namespace["p"].seed, namespace["p"].n_runs, namespace["p"].n_openings) == (7, 3, 5)
    with pytest.raises(ParameterError, match=r"^field 'n_runs': must be an integer in \[2, 1000\], got 1$"):
        _run_until_the_context({"n_runs": 1})  # papermill run by hand: no check before the kernel


def test_an_unknown_name_is_an_error_before_any_kernel():
    with pytest.raises(ParameterError, match=r"^-p: field 'sed': unknown parameter: 01_problem does not define "
                                             r"it; did you mean 'seed'\?"):
        resolve_parameters(resolve_chapter("01_problem"), None, {"sed": 7})


def test_every_field_has_a_description_and_run_settings_are_shared():
    for stem, model in settings.CHAPTERS.items():
        assert issubclass(model, settings.RunSettings)
        blank = [name for name, f in model.model_fields.items() if not (f.description or "").strip()]
        assert not blank, f"{stem}: no description for {blank}"


def test_choice_lists_are_the_libraries_own():
    from mechaudit.backends import CHOICES
    from mechaudit.rules import NAMES, RUBRICS
    from mechaudit.rules.llm_judge import ORDERS
    from mechaudit.tau.anchors import DENSIFY_MODES

    assert get_args(settings.RuleName) == NAMES and get_args(settings.Rubric) == RUBRICS
    assert get_args(settings.Order) == ORDERS and get_args(settings.Backend) == CHOICES
    densify = settings.TauSettings.model_fields["densify_mode"].annotation
    assert get_args(densify) == DENSIFY_MODES


@pytest.mark.parametrize(("stem", "name", "value", "expected"), [
    ("01_problem", "n_runs", 0, "must be an integer in [2, 1000], got 0"),
    ("01_problem", "n_runs", 1001, "must be an integer in [2, 1000], got 1001"),
    ("01_problem", "seed", -1, "must be an integer in [0, inf], got -1"),
    ("09_your_data", "reference_rubric", "ful",
     "must be one of 'full', 'step', 'none', got 'ful'; did you mean 'full'?"),
    ("06_rubric_sensitivity", "rubrics", ["full", "stepp"], "item 1: must be one of 'full', 'step', 'none'"),
    ("05_perturbations", "judge_models", ["claude-opus-4-6", 3], "item 1: must be a string, got 3"),
    ("05_perturbations", "judge_model", " ", "must not be empty"),
    ("05_perturbations", "judge_orders", [], "must be a list of at least 1 item, got []"),
    ("05_perturbations", "max_usd", -1, "must be a number in [0, inf], got -1"),
    ("05_perturbations", "max_usd", math.nan, "must be a finite number, got nan"),
    ("05_perturbations", "max_usd", math.inf, "must be a finite number, got inf"),
    ("05_perturbations", "backend", "antropic", "did you mean 'anthropic'?"),
    ("05_perturbations", "tfidf_threshold", 2, "must be a number in [0, 1], got 2"),
    ("04_equivalence_rules", "rules", ["tfidf", "cosine"], "item 1: must be one of 'mechanism_key'"),
    ("04_equivalence_rules", "rules", "tfidf", "must be a list like the default"),
    ("02b_validity", "alpha", 0, "must be a number > 0 and <= 1, got 0"),
    ("02b_validity", "n_boot", 10**12, "must be an integer in [1, 100000], got 1000000000000"),
    ("02c_robustness", "power_designs", [[4, 5], [4, 1]], "item 1: item 1: must be an integer in [2, 2000], got 1"),
    ("02c_robustness", "power_designs", [[4, 5, 6]], "item 0: must be a list of exactly 2 items, got [4, 5, 6]"),
    ("07_sensitivity", "embedding_sweep", [0.5, 0.98], "item 2: is missing"),
    ("07_sensitivity", "embedding_sweep", [0.5, 1.5, 25], "item 1: must be a number in [0, 1], got 1.5"),
    ("08_tau_calibration", "true_taus", [0.5, -1], "item 1: must be a number > 0, got -1"),
    ("08_tau_calibration", "role_taus", {"Novelty": "x"}, "item Novelty: must be a number, got 'x'"),
    ("07_sensitivity", "stability_pairs", True, "must be an integer like the default 180, got True"),
    ("07_sensitivity", "stability_pairs", 2.0, "must be an integer like the default 180, got 2.0"),
    ("01_problem", "compare_paper", "yes", "must be a boolean (true/false), got 'yes'"),
])
def test_bad_values_are_one_clause_naming_what_is_allowed(stem, name, value, expected):
    with pytest.raises(ParameterError) as info:
        check_value(name, value, CHAPTERS[stem][name], file="-p", stem=stem)
    assert expected in str(info.value)
    assert str(info.value).startswith(f"-p: field '{name}': ")


def test_good_values_pass():
    check_value("max_usd", 2, None, stem="05_perturbations")
    check_value("max_usd", None, None, stem="05_perturbations")
    check_value("max_usd", 0, None, stem="05_perturbations")  # cached answers only (a spent run budget)
    check_value("judge_models", ["claude-opus-4-6", "openai:qwen2.5:7b"], [], stem="05_perturbations")
    check_value("compare_paper", False, None, stem="05_perturbations")
    check_value("tfidf_threshold", 1, 0.25, stem="05_perturbations")  # an int is a number
    check_value("tfidf_sweep", [0.1, 0.9, 9], None, stem="07_sensitivity")  # YAML lists for fixed-length items
    check_value("power_designs", [[2, 3]], None, stem="02c_robustness")


def test_an_undeclared_notebook_falls_back_to_its_default_type():
    check_value("my_own", 3, 1, stem="my_notebook")
    with pytest.raises(ParameterError, match="must be an integer like the default 1"):
        check_value("my_own", "x", 1, stem="my_notebook")


def test_the_parameter_tables_show_each_models_defaults_ranges_and_meaning():
    from mechaudit.sphinxext.parameter_table import parameter_rows

    rows = {row[0]: row[1:] for row in parameter_rows("01_problem")}
    assert list(rows) == list(settings.CHAPTERS["01_problem"].model_fields)
    assert rows["n_runs"] == ["5", "an integer in [2, 1000]", "re-runs of the toy workflow"]
    assert rows["instance_id"][:2] == ["null", "a string or null"]
    sweep = {row[0]: row for row in parameter_rows("07_sensitivity")}["tfidf_sweep"]
    assert sweep[1:3] == ["[0.05, 0.95, 19]",
                          "a list [a number in [0, 1], a number in [0, 1], an integer in [2, 10000]]"]
    budget = {row[0]: row for row in parameter_rows("05_perturbations")}["max_usd"]
    assert budget[2] == "a number in [0, inf] or null"
    judges = {row[0]: row for row in parameter_rows("05_perturbations")}["judge_orders"]
    assert judges[1] == "[ab, ab, ba]"  # as written after -p


def test_the_rerun_page_has_a_parameter_table_for_every_chapter():
    from mechaudit.paths import REPO_ROOT

    page = (REPO_ROOT / "book" / "rerun.md").read_text(encoding="utf-8")
    assert [line.split()[-1] for line in page.splitlines() if line.startswith("```{parameter-table}")] == \
        list(settings.CHAPTERS)


def test_allowed_words_for_choices_lists_and_mappings_without_item_schemas():
    assert settings.allowed({"enum": ["ab", "ba"]}) == "one of 'ab', 'ba'"
    assert settings.allowed({"type": "array"}) == "a list of (anything)"
    assert settings.allowed({"type": "array", "items": {"type": "string"}, "minItems": 1}) == \
        "a list of (a string, at least 1)"
    assert settings.allowed({"type": "object"}) == "a mapping of names to anything"


def test_schema_at_skips_the_null_branch_and_items_without_a_schema():
    assert settings.schema_at({"anyOf": [{"type": "null"}, {"type": "integer"}]}, []) == {"type": "integer"}
    assert settings.schema_at({"type": "array"}, [0]) == {}
    assert settings.schema_at({"type": "object", "additionalProperties": {"type": "number"}}, ["x"]) == {
        "type": "number"}


def test_size_and_doc_declare_bounds_and_descriptions():
    from pydantic import BaseModel, ValidationError

    class Model(BaseModel):
        n: settings.size(2, 5) = 2
        x: settings.doc(int, "what x counts", ge=1) = 1

    assert Model.model_fields["x"].description == "what x counts"
    assert Model(n=5, x=1).n == 5
    for bad in ({"n": 1}, {"n": 6}, {"x": 0}):
        with pytest.raises(ValidationError):
            Model(**bad)


def test_defaults_are_plain_data_with_lists_for_tuples():
    found = settings.defaults("07_sensitivity")
    assert found["tfidf_sweep"] == [0.05, 0.95, 19] and type(found["tfidf_sweep"]) is list
    assert settings.defaults("02c_robustness")["power_designs"] == [[4, 5], [4, 10], [8, 5]]
