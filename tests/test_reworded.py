"""The reworded perturbation suite (mechaudit.reworded): authored rewrites, validity, reproducibility,
and the acceptance measure that its swap variants are not template re-renders."""

from __future__ import annotations

import pytest

from mechaudit.model import DataError
from mechaudit.paths import data_path
from mechaudit.perturb import (
    KINDS,
    SWAP_KINDS,
    check_reason,
    load_suite,
    masked,
    rerender_share,
    rerendered_fields,
    suite_path,
    write_suite,
)
from mechaudit.reworded import load_rewrites, reworded_suite
from mechaudit.schema import load_benchmark


@pytest.fixture(scope="module")
def reworded():
    return load_suite(suite_path(None, "reworded"))


@pytest.fixture(scope="module")
def template():
    return load_suite(suite_path(None, "template"))


def test_committed_reworded_suite_is_built_from_its_authoring_file(tmp_path, bench):
    out = tmp_path / "s.jsonl"
    write_suite(reworded_suite(bench.hypotheses, load_rewrites(), bench.vocabulary, seed=0), out)
    assert out.read_bytes() == data_path("perturbations_reworded.jsonl").read_bytes()


def test_every_reworded_pair_passes_the_same_check_and_covers_every_hypothesis(reworded, bench):
    assert len(reworded) == 4 * len(bench.hypotheses)
    for p in reworded:
        assert p["valid"] and check_reason(p["original"], p["variant"], p["kind"], bench.vocabulary) is None, \
            (p["original"].id, p["kind"])
    for kind in KINDS:
        assert sorted(p["original"].id for p in reworded if p["kind"] == kind) == \
            sorted(h.id for h in bench.hypotheses)


@pytest.mark.parametrize("kind", SWAP_KINDS)
def test_acceptance_fewer_than_10_percent_of_swaps_equal_the_original_once_names_are_masked(kind, reworded, bench):
    share = rerender_share(reworded, bench.vocabulary)
    assert share[kind] < 10.0
    # stricter: no swap variant keeps even one of its two prose fields
    kept = [(p["original"].id, f) for p in reworded if p["kind"] == kind
            for f in rerendered_fields(p["original"], p["variant"], bench.vocabulary)]
    assert kept == []


def test_the_measure_flags_the_template_suite_as_re_rendered(template, bench):
    share = rerender_share(template, bench.vocabulary)
    assert share["first_step_swapped"] == share["middle_step_swapped"] == 100.0
    assert share["wording_only"] == share["wording_chain"] == 0.0


def test_no_reworded_explanation_is_a_phrasing_of_the_hypothesis_template(reworded, bench):
    by_id = {h.id: h for h in bench.hypotheses}
    for p in reworded:
        phrasings = {masked(e, bench.vocabulary) for e in by_id[p["original"].id].template.explanations}
        assert masked(p["variant"].explanation, bench.vocabulary) not in phrasings, (p["original"].id, p["kind"])


def test_the_two_suites_swap_the_same_step_for_the_same_entity(reworded, template):
    key = {(p["original"].id, p["kind"]): p["swap"] for p in template}
    for p in reworded:
        assert p["swap"] == key[(p["original"].id, p["kind"])]
        if p["kind"] in SWAP_KINDS:
            assert p["variant"].chain == next(q["variant"].chain for q in template
                                              if (q["original"].id, q["kind"]) == (p["original"].id, p["kind"]))


def test_wording_chain_uses_aliases_in_every_aliased_step(reworded, bench):
    for p in reworded:
        if p["kind"] != "wording_chain":
            continue
        for a, b in zip(p["original"].chain, p["variant"].chain):
            assert a.id == b.id
            if bench.vocabulary[a.id].aliases:
                assert a.text != b.text


def test_masking_ignores_which_name_an_entity_is_written_with(bench):
    vocab = bench.vocabulary
    assert masked("CagA activates NF-kappaB.", vocab) == masked("VacA  activates nuclear factor kappa B.", vocab)
    assert masked("CagA activates NF-kappaB.", vocab) != masked("CagA inhibits NF-kappaB.", vocab)


def write_rewrites(tmp_path, text: str):
    path = tmp_path / "rw.yaml"
    path.write_text(text)
    return path


def test_rewrites_missing_a_swap_field_name_file_line_and_field(tmp_path):
    path = write_rewrites(tmp_path, "A-01:\n  first_step_swapped:\n    to: VACA\n    explanation: x\n")
    with pytest.raises(DataError, match=r"rw\.yaml:3: field 'A-01\.first_step_swapped\.statement': missing"):
        load_rewrites(path)


def test_rewrites_reject_unknown_kinds_fields_and_hypotheses(tmp_path, bench):
    with pytest.raises(DataError, match="field 'A-01.wording'"):
        load_rewrites(write_rewrites(tmp_path, "A-01:\n  wording:\n    explanation: x\n"))
    with pytest.raises(DataError, match="field 'A-01.wording_only.to': not used by wording_only"):
        load_rewrites(write_rewrites(tmp_path, "A-01:\n  wording_only:\n    explanation: x\n    to: VACA\n"))
    with pytest.raises(DataError, match="field 'A-01.wording_only.colour'"):
        load_rewrites(write_rewrites(tmp_path, "A-01:\n  wording_only:\n    explanation: x\n    colour: red\n"))
    rw = load_rewrites(write_rewrites(tmp_path, "Z-99:\n  wording_only:\n    explanation: x\n"))
    with pytest.raises(DataError, match="field 'Z-99': no hypothesis with this id"):
        reworded_suite(bench.hypotheses, rw, bench.vocabulary)


@pytest.mark.parametrize("text, message", [
    ("- A-01\n", r"rw\.yaml:1: field '<yaml>': expected a mapping of hypothesis ids$"),
    ("A-01: 3\n", r"rw\.yaml: field 'A-01': expected a mapping of perturbation kinds$"),
    ("A-01:\n  wording_only: 3\n", r"rw\.yaml:2: field 'A-01\.wording_only\.<record>': "),
    ("A-01:\n  wording_only:\n    explanation: x\n    to: VACA\n",
     r"rw\.yaml:3: field 'A-01\.wording_only\.to': not used by wording_only$"),
    ("A-01:\n  first_step_swapped:\n    to: VACA\n    statement: s\n    explanation: x\n    position: 1\n",
     r"rw\.yaml:3: field 'A-01\.first_step_swapped\.position': not used by first_step_swapped$"),
])
def test_rewrite_errors_name_file_line_and_field_of_each_shape(tmp_path, text, message):
    with pytest.raises(DataError, match=message):
        load_rewrites(write_rewrites(tmp_path, text))


def test_a_first_step_swap_may_name_its_position_0(tmp_path):
    text = "A-01:\n  first_step_swapped:\n    to: VACA\n    statement: s\n    explanation: x\n    position: 0\n"
    assert load_rewrites(write_rewrites(tmp_path, text))["A-01"]["first_step_swapped"].position == 0


def test_a_rewrite_that_breaks_the_rules_is_kept_as_invalid_with_its_reason(tmp_path, bench):
    text = ("A-01:\n  first_step_swapped:\n    to: VACA\n    statement: VacA from Helicobacter pylori causes"
            " peptic ulcer disease.\n    explanation: x\n  wording_only:\n    explanation: CagA alone.\n")
    pairs = reworded_suite(bench.hypotheses, load_rewrites(write_rewrites(tmp_path, text)), bench.vocabulary)
    assert [p["kind"] for p in pairs] == ["wording_only", "first_step_swapped"]
    assert [p["valid"] for p in pairs] == [False, False]
    assert pairs[0]["reason"] == "explanation names a different set of entities"
    assert pairs[1]["reason"].startswith("statement: entity mentions are not the original's")
    assert pairs[1]["swap"] == {"position": 0, "from": "CAGA", "to": "VACA"}


def test_cli_builds_the_reworded_suite(tmp_path, capsys):
    from mechaudit.cli import main

    out = tmp_path / "rw.jsonl"
    assert main(["perturb", "--reworded", str(data_path("perturbations_reworded.yaml")), "--out", str(out)]) == 0
    assert out.read_bytes() == data_path("perturbations_reworded.jsonl").read_bytes()
    assert '"kept": 80' in capsys.readouterr().out


def test_the_example_folder_ships_a_reworded_suite_built_from_its_authoring_file(tmp_path):
    from mechaudit.paths import EXAMPLE_DIR

    example = load_benchmark(EXAMPLE_DIR)
    pairs = reworded_suite(example.hypotheses, load_rewrites(EXAMPLE_DIR / "perturbations_reworded.yaml"),
                        example.vocabulary)
    assert len(pairs) == 4 * len(example.hypotheses) and all(p["valid"] for p in pairs)
    assert rerender_share(pairs, example.vocabulary)[list(SWAP_KINDS)].max() < 10.0
    write_suite(pairs, tmp_path / "s.jsonl")
    assert (tmp_path / "s.jsonl").read_bytes() == (EXAMPLE_DIR / "perturbations_reworded.jsonl").read_bytes()


def test_a_swap_rewrite_naming_a_bad_position_or_entity_is_an_error(bench):
    from mechaudit.reworded import Rewrite, variant_of

    h = next(x for x in bench.hypotheses if x.id == "A-01")
    bad_position = Rewrite(statement="s", explanation="e", to="AP1", position=9)
    with pytest.raises(DataError, match=r"field 'A-01\.middle_step_swapped': cannot swap chain\[9\]"):
        variant_of(h, "middle_step_swapped", bad_position, bench.vocabulary)
    with pytest.raises(DataError, match="'NOT_AN_ID'"):
        variant_of(h, "first_step_swapped", Rewrite(statement="s", explanation="e", to="NOT_AN_ID"), bench.vocabulary)


def test_a_hypothesis_without_a_rewrite_is_skipped_and_later_ones_still_count(tmp_path, bench):
    first, second, third = (h.id for h in bench.hypotheses[:3])
    text = (f"{second}:\n  wording_only:\n    explanation: x\n"
            f"{third}:\n  wording_only:\n    explanation: y\n")
    pairs = reworded_suite(bench.hypotheses, load_rewrites(write_rewrites(tmp_path, text)), bench.vocabulary)
    assert [(p["original"].id, p["kind"]) for p in pairs] == [(second, "wording_only"), (third, "wording_only")]
    assert first not in {p["original"].id for p in pairs}


def test_a_variant_is_built_with_seed_0_by_default(bench):
    from mechaudit.reworded import Rewrite, variant_of

    rw = Rewrite(explanation="e")
    chains = {seed: [variant_of(h, "wording_chain", rw, bench.vocabulary, seed).chain for h in bench.hypotheses]
              for seed in (0, 1)}
    assert chains[0] != chains[1]  # the seed picks the aliases
    assert [variant_of(h, "wording_chain", rw, bench.vocabulary).chain for h in bench.hypotheses] == chains[0]
