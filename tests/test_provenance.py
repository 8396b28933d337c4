"""Provenance per row: the closed vocabulary, derived from params/calibration.yaml and the declared
by-construction results; the check that a fitted parameter cannot be added without its rows
labelled; the intro's provenance and verdict cells."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from mechaudit import paper
from mechaudit.backends import BackendError
from mechaudit.book import chapter as status
from mechaudit.errors import MechauditError
from mechaudit.paths import PARAMS_DIR, REPO_ROOT
from mechaudit.report import comparison, provenance
from mechaudit.report.provenance import BY_CONSTRUCTION, CONSTRAINED, FITTED, INDEPENDENT, NOT_RUN
from mechaudit.workflow.calibrate import SOLVED, load_calibration
from mechaudit.workflow.simulator import SimulatorParams

K01 = "critique_depth.extra_divergence_pp.k0_vs_k1"
K05 = "critique_depth.extra_divergence_pp.k0_vs_k5"
K15 = "critique_depth.extra_divergence_pp.k1_vs_k5"
FSS = "perturbations.first_step_swapped_pct_different"


@pytest.fixture
def calibration(tmp_path):
    """A calibration file whose ``fitted`` section fits only the 0 v 1 effect and the mixture."""
    doc = yaml.safe_load((PARAMS_DIR / "calibration.yaml").read_text())
    doc["calibration"]["fitted"] = {"p_weak_unsupported": [K01], "reply_sound": ["engagement.conceded_pct"]}
    path = tmp_path / "calibration.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


P01 = "critique_depth.p_value_bound.k0_vs_k1"


@pytest.fixture
def constrained(tmp_path):
    """A record of what the fit constrains that names only the 1 v 5 effect."""
    path = tmp_path / "constrained_by_fit.json"
    path.write_text(json.dumps({K15: "it barely moves over the consistent settings"}))
    return path


@pytest.mark.parametrize(("key", "offline", "llm"), [
    (K01, FITTED, INDEPENDENT),  # the simulator was set to match it; an LLM run measures it
    (K15, CONSTRAINED, INDEPENDENT),  # decided by the fit offline; an LLM run measures it
    (P01, INDEPENDENT, INDEPENDENT),  # not in this test's record
    ("engagement.conceded_pct", FITTED, INDEPENDENT),
    ("engagement.demands", INDEPENDENT, INDEPENDENT),
    (f"{FSS}.llm", NOT_RUN, INDEPENDENT),
    (f"{FSS}.tfidf", BY_CONSTRUCTION, BY_CONSTRUCTION),  # template-built swaps, whatever the backend
    ("perturbations.meaning_preserving_pct_different.tfidf", INDEPENDENT, INDEPENDENT),
    ("rubric.first_step_swapped_pct_different.none", NOT_RUN, INDEPENDENT),
    ("critique_depth.judge_range_pp.k0_vs_k1_low", NOT_RUN, INDEPENDENT),
    ("design.runs", BY_CONSTRUCTION, BY_CONSTRUCTION),
    ("design.partitions_per_instance", BY_CONSTRUCTION, BY_CONSTRUCTION),
    ("sensitivity.stability_pairs", BY_CONSTRUCTION, BY_CONSTRUCTION),  # a setting; the offline rules judge them
    ("sensitivity.kappa_low", INDEPENDENT, INDEPENDENT),
    ("book.tau.recovery", BY_CONSTRUCTION, BY_CONSTRUCTION),
])
def test_provenance_per_key_and_backend(calibration, constrained, key, offline, llm):
    assert provenance.of(key, False, calibration, constrained=constrained) == offline
    assert provenance.of(key, True, calibration, constrained=constrained) == llm


def test_the_committed_record_constrains_the_1v5_effect_and_the_exact_p():
    """The committed data/computed/constrained_by_fit.json (re-derived by test_calibrate) names the
    1 v 5 effect and both exact p-values; offline those rows read "constrained by the fit"."""
    record = provenance.constrained_keys()
    assert set(record) == {K15, P01, "critique_depth.p_value_bound.k0_vs_k5"}
    assert all("consistent with the paper's 0 v 1 and 0 v 5" in reason for reason in record.values())
    assert provenance.of(K15, False) == CONSTRAINED and provenance.of(K15, True) == INDEPENDENT
    assert provenance.of(K01, False) == FITTED  # fitted wins over constrained
    assert provenance.constrained_keys(REPO_ROOT / "no_such_file.json") == {}


def test_a_bad_record_names_the_file(tmp_path):
    path = tmp_path / "constrained_by_fit.json"
    path.write_text('["critique_depth"]')
    with pytest.raises(MechauditError, match="constrained_by_fit.json"):
        provenance.of(K15, False, constrained=path)


def test_text_rules_on_swaps_are_built_in_only_on_the_template_suite():
    from mechaudit.perturb import SUITE_FILES

    assert set(provenance.SUITE_CONSTRUCTIONS) <= set(SUITE_FILES) and provenance.DEFAULT_SUITE in SUITE_FILES
    for llm in (False, True):
        assert provenance.of(f"{FSS}.embedding", llm, suite="template") == BY_CONSTRUCTION
        assert provenance.of(f"{FSS}.embedding", llm) == BY_CONSTRUCTION  # the default suite
        assert provenance.of(f"{FSS}.embedding", llm, suite="reworded") == INDEPENDENT
    assert provenance.of(f"{FSS}.llm", False, suite="reworded") == NOT_RUN
    assert provenance.of("design.runs", False, suite="reworded") == BY_CONSTRUCTION


def test_every_reported_number_has_a_value_from_the_vocabulary():
    for key in paper.entries():
        for llm in (False, True):
            assert provenance.of(key, llm) in provenance.VOCABULARY, key


def test_declarations_name_known_results_with_a_reason():
    known = set(paper.entries()) | set(provenance.BOOK_RESULTS)
    suite_keys = [k for keys in provenance.SUITE_CONSTRUCTIONS.values() for k in keys]
    for pattern in (*provenance.LLM_ONLY, *provenance.CONSTRUCTIONS, *suite_keys):
        assert any(re.fullmatch(pattern.replace(".", r"\.").replace("*", ".*"), k) for k in known), pattern
    reasons = [*provenance.CONSTRUCTIONS.values(), *(r for c in provenance.SUITE_CONSTRUCTIONS.values()
                                                      for r in c.values())]
    assert all(reason.strip() for reason in reasons)
    for parts in status.HEADLINE_PARTS.values():
        assert all(part.key in known for part in parts), parts


def test_unknown_backend_is_an_error_where_parameters_are_parsed():
    with pytest.raises(MechauditError, match="field 'backend': must be one of 'reference', 'anthropic', 'replay', "
                                             "got 'gpt'"):
        status.chapter_settings({"backend": "gpt"}, "05_perturbations")


# -- a fitted parameter cannot be added without its rows labelled ------------------------------


def committed_fits() -> set[str]:
    """Every parameter the committed files fit: FITTED marks in simulator.yaml, the calibration
    grid and the closed-form solutions of ``workflow.calibrate``."""
    return set(provenance.fitted_marks()) | set(load_calibration().grid) | set(SOLVED)


def test_every_fitted_parameter_labels_its_rows():
    fits = committed_fits()
    assert {"p_weak_supported", "p_find", "p_extra_hypothesis", "reply_sound"} <= fits
    assert provenance.unlabelled(fits, paper.entries()) == []
    assert set(provenance.fitted_targets()) <= set(SimulatorParams.model_fields)
    labelled = provenance.fitted_keys()
    assert {K01, K05, "design.matched_pairs", "engagement.conceded_pct", "engagement.dropped_pct"} <= labelled
    assert K15 not in labelled  # the 1 v 5 effect is not a calibration target
    assert all(provenance.of(key, False) == FITTED for key in labelled)


def test_a_new_fitted_mark_without_labels_fails(tmp_path):
    sim = tmp_path / "simulator.yaml"
    text = (PARAMS_DIR / "simulator.yaml").read_text()
    sim.write_text(re.sub(r"(?m)^(  p_challenge_sound: .*)$", r"  # FITTED to the 1 v 5 effect\n\1", text))
    assert "p_challenge_sound" in provenance.fitted_marks(sim)
    assert "p_challenge_sound" not in provenance.fitted_marks()  # the committed file does not mark it
    found = set(provenance.fitted_marks(sim)) | set(load_calibration().grid) | set(SOLVED)
    assert provenance.unlabelled(found, paper.entries()) == ["p_challenge_sound"]
    inline = tmp_path / "inline.yaml"
    inline.write_text(re.sub(r"(?m)^(  evidence_weight: \S+).*$", r"\1  # FITTED", text))
    assert "evidence_weight" in provenance.fitted_marks(inline)


def test_a_new_grid_parameter_or_a_wrong_key_fails(tmp_path):
    doc = yaml.safe_load((PARAMS_DIR / "calibration.yaml").read_text())
    doc["calibration"]["grid"]["p_challenge_sound"] = [0.1, 0.2]
    path = tmp_path / "calibration.yaml"
    path.write_text(yaml.safe_dump(doc))
    fits = set(provenance.fitted_marks()) | set(load_calibration(path).grid) | set(SOLVED)
    assert provenance.unlabelled(fits, paper.entries(), path) == ["p_challenge_sound"]
    doc["calibration"]["fitted"]["p_challenge_sound"] = ["critique_depth.no_such_number"]
    path.write_text(yaml.safe_dump(doc))
    assert provenance.unlabelled(fits, paper.entries(), path) == ["p_challenge_sound"]
    doc["calibration"]["fitted"]["p_challenge_sound"] = [K01, K05]
    path.write_text(yaml.safe_dump(doc))
    assert provenance.unlabelled(fits, paper.entries(), path) == []
    assert provenance.of(K05, False, path) == FITTED


def test_bad_fitted_section_names_the_field(tmp_path):
    path = tmp_path / "calibration.yaml"
    doc = yaml.safe_load((PARAMS_DIR / "calibration.yaml").read_text())
    doc["calibration"]["fitted"] = {"p_find": "critique_depth"}  # a string, not a list
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(MechauditError, match="calibration.fitted"):
        provenance.of(K01, False, path)


# -- tables, summaries and verdicts -------------------------------------------------------------


def test_compare_fills_the_provenance_column_from_the_backend():
    rows = [(K01, 37.7), (f"{FSS}.llm", None, "reference judge: 100"), (f"{FSS}.tfidf", 0.0), ("design.runs", 60)]
    offline = comparison.compare(rows, llm=False)
    assert list(offline.columns) == ["paper", "this run", "provenance", "verdict", "source", "note"]
    assert offline["provenance"].tolist() == [FITTED, NOT_RUN, BY_CONSTRUCTION, BY_CONSTRUCTION]
    assert offline["verdict"].tolist() == [provenance.FITTED_NOT_A_TEST, provenance.NOT_TESTABLE,
                                           provenance.BUILT_IN_NOT_A_TEST, provenance.BUILT_IN_NOT_A_TEST]
    online = comparison.compare(rows, llm=True)
    assert online["provenance"].tolist() == [INDEPENDENT, INDEPENDENT, BY_CONSTRUCTION, BY_CONSTRUCTION]
    # 37.7 lies within 5 pp of the paper's 34.5: reproduced; an LLM row that did not run is qualified
    assert online["verdict"].tolist() == [provenance.REPRODUCED, provenance.QUALIFIED,
                                          provenance.BUILT_IN_NOT_A_TEST, provenance.BUILT_IN_NOT_A_TEST]
    assert offline.index.name == "quantity"
    with pytest.raises(TypeError):
        comparison.compare(rows)  # llm is required: no silent default


def test_summary_groups_values_in_vocabulary_order(calibration, constrained):
    values = [(name, provenance.of(key, False, calibration, constrained=constrained))
              for name, key in (("p", P01), ("1 v 5", K15), ("0 v 1", K01))]
    assert provenance.summary(values) == ("fitted to the paper: 0 v 1; constrained by the fit: 1 v 5; "
                                          "independent computation: p")
    assert provenance.summary([("a", INDEPENDENT), ("b", INDEPENDENT)]) == INDEPENDENT
    with pytest.raises(ValueError, match="among"):
        provenance.summary([("a", "simulated")])


@pytest.mark.parametrize(("values", "llm", "agrees", "expected"), [
    ([FITTED, BY_CONSTRUCTION], False, None, "fitted, not a test"),
    ([CONSTRAINED], False, None, "fitted, not a test"),
    ([FITTED, CONSTRAINED], False, None, "fitted, not a test"),
    ([CONSTRAINED, INDEPENDENT], False, None, "qualified"),
    ([BY_CONSTRUCTION], False, None, "built in, not a test"),
    ([NOT_RUN, BY_CONSTRUCTION], False, None, "not testable offline"),
    ([FITTED, INDEPENDENT], False, None, "qualified"),
    ([INDEPENDENT], False, True, "qualified"),  # offline numbers never reproduce the paper's
    ([INDEPENDENT], True, True, "reproduced"),
    ([INDEPENDENT], True, False, "qualified"),
    ([INDEPENDENT, BY_CONSTRUCTION], True, True, "qualified"),
])
def test_verdict(values, llm, agrees, expected):
    assert provenance.verdict(values, llm, agrees) == expected


def test_verdict_rejects_values_outside_the_vocabulary():
    with pytest.raises(ValueError, match="among"):
        provenance.verdict(["simulated"], False)


def test_intro_rows():
    assert status.headline_provenance("ch06", False) == (
        "true by construction: reference judges; not run offline (LLM only): none, full, step", "not testable offline")
    assert status.headline_provenance("ch06", True) == (INDEPENDENT, "qualified")
    assert status.headline_provenance("ch06", True, {"none": 40, "full": 80.5, "step": 96}) == (
        INDEPENDENT, "reproduced")
    assert status.headline_provenance("ch06", True, {"none": 10, "full": 83, "step": 96})[1] == "qualified"
    assert status.headline_provenance("ch08", False) == (BY_CONSTRUCTION, "built in, not a test")
    assert status.headline_provenance("ch05", False) == (
        "true by construction: reference judge, text rules on the template-built suite; not run offline (LLM only): "
        "LLM judge; independent computation: text rules on the reworded suite", "qualified")
    assert status.headline_provenance("ch02b", False) == (INDEPENDENT, "qualified")
    assert status.agrees("sensitivity.kappa_low", 0.65) and not status.agrees("sensitivity.kappa_low", 0.75)
    assert status.agrees("book.power", 0.5) is None and status.agrees(K01, "not run") is None


def test_intro_and_readme_state_the_trust_level():
    intro = (REPO_ROOT / "book" / "intro.md").read_text()
    for chapter in status.HEADLINE_PARTS:
        for cell in ("provenance", "verdict"):
            assert f"::{chapter}_headline_{cell}:s`" in intro, (chapter, cell)
    first_screen = intro.split("## What the paper asks")[0]
    assert "offline, every number is simulated or rule-based" in first_screen.lower()
    readme_first = (REPO_ROOT / "README.md").read_text().split("\n\n")[1]
    assert "simulated or rule-based" in readme_first and "reproduces" not in readme_first


def test_headline_status_uses_the_book_vocabulary():
    """One status function for every chapter: the LLM and backend, else the chapter's offline word."""
    from mechaudit.book.settings import RunSettings

    offline, replay, live = (status.ChapterContext(RunSettings(backend=b))
                             for b in ("reference", "replay", "anthropic"))
    assert offline.status("m", status.SIMULATED) == "simulated (reference backend)"
    assert offline.status("m", status.LOCAL) == "computed locally (no LLM)"
    assert offline.status("m", status.REFERENCE_JUDGE) == "reference judge (not an LLM)"
    assert replay.status("claude-x", status.SIMULATED) == "LLM (claude-x, replay)"
    assert live.status("m", status.LOCAL) == "LLM (m, anthropic)"
    with pytest.raises(BackendError, match="'refrence' is not a backend"):
        status.backend_of({"backend": "refrence"})


def test_the_glossary_defines_every_class_and_verdict():
    """Every provenance class and verdict is a term of book/glossary.md (a reader meets them in every
    paper-vs-run table, whose caption links the glossary)."""
    from mechaudit.report.tables import PROVENANCE_LEGEND

    text = (REPO_ROOT / "book" / "glossary.md").read_text(encoding="utf-8")
    terms = {line.strip().lower() for line in text.splitlines() if line and not line.startswith((" ", "#", "`", ":"))}
    for name in (*provenance.VOCABULARY, *provenance.VERDICTS, "provenance", "verdict", "paper-rate judge",
                 "null simulator"):
        assert name.lower() in terms, name
    assert "<Provenance>" in PROVENANCE_LEGEND and "<Verdict>" in PROVENANCE_LEGEND


def test_fitted_marks_by_hand(tmp_path):
    """A FITTED comment block marks the next parameter only; FITTED in a parameter's own comment
    (after its first "#") marks it; a plain line between block and parameter clears the mark; the
    header above ``simulator:`` is not read."""
    sim = tmp_path / "simulator.yaml"
    sim.write_text("# FITTED header text is not a mark\nhead:\n  h: 1  # FITTED\nsimulator:\n"
                   "  # FITTED: set to the paper\n  a: 1\n  b: 2\n"
                   "  c: 3  # FITTED # more\n  d: 4  # chosen # FITTED later\n  e: FITTED  # a value, not a mark\n"
                   "  # FITTED\n  # its reason\n\n  f: {x: 1}\n"
                   "  # FITTED\nnot_a_param\n  g: 5\n", encoding="utf-8")
    assert provenance.fitted_marks(sim) == ["a", "c", "d", "f"]
    no_section = tmp_path / "none.yaml"
    no_section.write_text("  # FITTED\n  a: 1\n", encoding="utf-8")
    assert provenance.fitted_marks(no_section) == []


def test_calibration_and_constrained_files_with_the_wrong_shape_are_named(tmp_path):
    bad = tmp_path / "calibration.yaml"
    bad.write_text("calibration:\n  fitted:\n    p: []\n", encoding="utf-8")
    with pytest.raises(MechauditError) as err:
        provenance.fitted_keys(bad)
    assert (err.value.message, err.value.file, err.value.field) == (
        "must map each fitted simulator parameter to a non-empty list of paper keys", str(bad), "calibration.fitted")
    for text in ('{"a": 1}', '{"1": "why", "b": 2}', '["a"]'):
        found = tmp_path / "constrained.json"
        found.write_text(text, encoding="utf-8")
        with pytest.raises(MechauditError) as err:
            provenance.constrained_keys(found)
        assert (err.value.message, err.value.file) == ("must map paper keys to reasons (text)", str(found))


def test_unlabelled_accepts_targets_equal_to_the_known_keys(tmp_path):
    cal = tmp_path / "calibration.yaml"
    cal.write_text("calibration:\n  fitted:\n    p: [k1, k2]\n    q: [k3]\n", encoding="utf-8")
    assert provenance.unlabelled(["p", "q", "r"], ["k1", "k2", "k3"], calibration=cal) == ["r"]
    assert provenance.unlabelled(["p", "q"], ["k1", "k2"], calibration=cal) == ["q"]


def test_provenance_files_are_read_as_utf8_whatever_the_locale(tmp_path, ascii_locale):
    calibration = tmp_path / "calibration.yaml"
    calibration.write_text("# ajust\u00e9\ncalibration:\n  fitted:\n    p_x: [\"cl\u00e9.a\"]\n", encoding="utf-8")
    assert provenance.fitted_targets(calibration) == {"p_x": ("cl\u00e9.a",)}
    record = tmp_path / "constrained_by_fit.json"
    record.write_text(json.dumps({"cl\u00e9.b": "fix\u00e9 par l'ajustement"}, ensure_ascii=False), encoding="utf-8")
    assert provenance.constrained_keys(record) == {"cl\u00e9.b": "fix\u00e9 par l'ajustement"}
    simulator = tmp_path / "simulator.yaml"
    simulator.write_text("# param\u00e8tres\nsimulator:\n  # FITTED \u00e0 l'effet 1 v 5\n  p_a: 0.5\n"
                         "  p_b: 0.2  # r\u00e9glage FITTED\n  p_c: 0.1  # libre \u2014 non ajust\u00e9\n",
                         encoding="utf-8")
    assert provenance.fitted_marks(simulator) == ["p_a", "p_b"]
