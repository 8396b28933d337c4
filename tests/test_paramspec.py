"""Every chapter parameter is declared once (``mechaudit.book.paramspec``) and checked before a kernel starts."""

from __future__ import annotations

import math

import pytest

from mechaudit.book import paramspec
from mechaudit.book.params import ParameterError, check_value, notebook_parameters, toc_chapters

CHAPTERS = {c.stem: notebook_parameters(c.source) for c in toc_chapters()}


def test_every_chapter_parameter_is_declared_and_its_default_passes():
    missing, failing = [], []
    for stem, defined in CHAPTERS.items():
        for name, default in defined.items():
            spec = paramspec.spec_for(stem, name)
            if spec is None:
                missing.append(f"{stem}.{name}")
            elif paramspec.problem(default, spec) is not None:
                failing.append(f"{stem}.{name}: {paramspec.problem(default, spec)}")
    assert not missing, f"declare these in mechaudit.book.paramspec: {missing}"
    assert not failing, failing


def test_declarations_name_only_existing_parameters():
    """No stale declaration: every chapter section names parameters that chapter defines."""
    for stem, specs in paramspec.CHAPTERS.items():
        assert stem in CHAPTERS, stem
        assert set(specs) <= set(CHAPTERS[stem]), set(specs) - set(CHAPTERS[stem])
    used = {name for defined in CHAPTERS.values() for name in defined}
    assert set(paramspec.SHARED) <= used, set(paramspec.SHARED) - used


def test_choice_lists_are_the_libraries_own():
    from mechaudit.backends import CHOICES
    from mechaudit.rules import NAMES, RUBRICS
    from mechaudit.rules.llm_judge import ORDERS

    assert paramspec.RULE_NAMES == NAMES and paramspec.RUBRIC_NAMES == RUBRICS
    from mechaudit.tau.anchors import DENSIFY_MODES

    assert paramspec.ORDER_NAMES == ORDERS and paramspec.SHARED["backend"].choices == CHOICES
    assert paramspec.DENSIFY_NAMES == DENSIFY_MODES


@pytest.mark.parametrize(("stem", "name", "value", "expected"), [
    ("01_problem", "n_runs", 0, "must be an integer in [2, 1000], got 0"),
    ("01_problem", "n_runs", 1, "must be an integer in [2, 1000], got 1"),
    ("09_your_data", "reference_rubric", "ful",
     "must be one of 'full', 'step', 'none', got 'ful'; did you mean 'full'?"),
    ("06_rubric_sensitivity", "rubrics", ["full", "stepp"], "item 1: must be one of 'full', 'step', 'none'"),
    ("05_perturbations", "judge_models", ["claude-opus-4-6", 3], "must be a list of strings, got 3 at position 1"),
    ("05_perturbations", "judge_model", " ", "must not be empty"),
    ("05_perturbations", "judge_orders", [], "must be a list of at least 1 item"),
    ("05_perturbations", "max_usd", -1, "must be a number > 0, got -1"),
    ("05_perturbations", "max_usd", 0, "must be a number > 0, got 0"),
    ("05_perturbations", "max_usd", math.nan, "must be a finite number, got nan"),
    ("05_perturbations", "max_usd", math.inf, "must be a finite number, got inf"),
    ("05_perturbations", "backend", "antropic", "did you mean 'anthropic'?"),
    ("04_equivalence_rules", "rules", ["tfidf", "cosine"], "item 1: must be one of 'mechanism_key'"),
    ("02b_validity", "alpha", 0, "must be a number > 0 and <= 1, got 0"),
    ("08_tau_calibration", "true_taus", [0.5, -1], "item 1: must be a number > 0, got -1"),
    ("07_sensitivity", "stability_pairs", True, "must be an integer like the default 180, got True"),
])
def test_bad_values_are_one_clause_naming_what_is_allowed(stem, name, value, expected):
    with pytest.raises(ParameterError) as info:
        check_value(name, value, CHAPTERS[stem][name], file="-p", stem=stem)
    assert expected in str(info.value)
    assert str(info.value).startswith(f"-p: field '{name}': ")


def test_good_values_pass():
    check_value("max_usd", 2, None, stem="05_perturbations")
    check_value("max_usd", None, None, stem="05_perturbations")
    check_value("judge_models", ["claude-opus-4-6", "openai:qwen2.5:7b"], [], stem="05_perturbations")
    check_value("compare_paper", False, None, stem="05_perturbations")
    check_value("tfidf_threshold", 1, 0.25, stem="05_perturbations")  # an int is a number


def test_an_undeclared_notebook_falls_back_to_its_default_type():
    check_value("my_own", 3, 1, stem="my_notebook")
    with pytest.raises(ParameterError, match="must be an integer like the default 1"):
        check_value("my_own", "x", 1, stem="my_notebook")
