"""mechaudit.perturb: variants, the validity check (including wrong mutations) and suites."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from mechaudit.paths import data_path
from mechaudit.perturb import (
    KINDS,
    PerturbationError,
    check,
    check_reason,
    describe_change,
    instance_entities,
    load_suite,
    make_suite,
    perturb,
    swap_candidates,
    template_of,
    text_changes,
    write_suite,
)
from mechaudit.schema import Step


@pytest.fixture(scope="module")
def vocab(bench):
    return bench.vocabulary


@pytest.fixture(scope="module")
def hyps(bench):
    return bench.hypotheses


@pytest.fixture(scope="module")
def h(hyps):
    return next(x for x in hyps if x.id == "A-01")


def ids(h):
    return [s.id for s in h.chain]


def with_chain(h, chain):
    return h.model_copy(update={"chain": chain})


@pytest.mark.parametrize("kind", KINDS)
def test_every_base_hypothesis_perturbs_validly(kind, hyps, vocab):
    rng = np.random.default_rng(0)
    for x in hyps:
        v = perturb(x, kind, rng, vocab)
        assert check_reason(x, v, kind, vocab) is None, (x.id, kind)
        assert v.id == f"{x.id}~{kind}" and v.instance == x.instance and v.template is None


def test_wording_only_shares_chain_and_rewrites_explanation(h, vocab):
    v = perturb(h, "wording_only", np.random.default_rng(0), vocab)
    assert v.chain == h.chain and v.statement == h.statement
    assert v.explanation != h.explanation
    assert v.mechanism == h.mechanism


def test_wording_chain_keeps_ids_and_uses_aliases(h, vocab):
    v = perturb(h, "wording_chain", np.random.default_rng(0), vocab)
    assert ids(v) == ids(h)
    assert [s.text for s in v.chain] != [s.text for s in h.chain]
    for a, b in zip(h.chain, v.chain):
        assert vocab.mentions(b.text)[0] == a.id
        if vocab[a.id].aliases:  # rendered with an alias, not the canonical name
            assert b.text != a.text
    assert v.statement == h.statement and v.explanation != h.explanation


@pytest.mark.parametrize("kind,positions", [("first_step_swapped", {0}),
                                            ("middle_step_swapped", {1, 2, 3})])
def test_swaps_change_one_designated_step_of_the_same_type(kind, positions, h, vocab):
    for seed in range(20):
        v = perturb(h, kind, np.random.default_rng(seed), vocab)
        changed = [j for j, (a, b) in enumerate(zip(ids(h), ids(v))) if a != b]
        assert len(changed) == 1 and changed[0] in positions
        p = changed[0]
        assert vocab[ids(v)[p]].type == vocab[ids(h)[p]].type
        assert ids(v)[p] in swap_candidates(h, p, vocab)
        assert vocab[ids(h)[p]].name not in v.statement + v.explanation
        assert v.mechanism is None and v.near_duplicate_of == h.id


# --- wrong mutations are rejected ---------------------------------------------------------------


def test_wording_only_rejects_changed_chain_text_or_same_explanation(h, vocab):
    v = perturb(h, "wording_only", np.random.default_rng(0), vocab)
    chain = [s.model_copy() for s in v.chain]
    chain[1] = Step(id=chain[1].id, text=chain[1].text + " strongly")
    assert check_reason(h, with_chain(v, chain), "wording_only", vocab) == "chain text changed"
    same = v.model_copy(update={"explanation": "  " + h.explanation.upper()})
    assert check_reason(h, same, "wording_only", vocab) == "explanation not rewritten"
    dropped = v.model_copy(update={"explanation": "Inflammation causes the ulcer. It is bad."})
    assert "different set of entities" in check_reason(h, dropped, "wording_only", vocab)
    stmt = v.model_copy(update={"statement": h.statement + " Really."})
    assert check_reason(h, stmt, "wording_only", vocab) == "statement changed"


def test_wording_chain_rejects_changed_id_and_unchanged_chain(h, vocab):
    v = perturb(h, "wording_chain", np.random.default_rng(0), vocab)
    chain = [s.model_copy() for s in v.chain]
    chain[2] = Step(id="TNF", text=chain[2].text)
    assert check_reason(h, with_chain(v, chain), "wording_chain", vocab) == "ordered step ids changed"
    untouched = with_chain(v, [s.model_copy() for s in h.chain])
    assert check_reason(h, untouched, "wording_chain", vocab) == "no chain step text rewritten"
    chain = [s.model_copy() for s in v.chain]
    chain[2] = Step(id=chain[2].id, text="TNF-alpha secretion rises")
    assert "does not name its entity" in check_reason(h, with_chain(v, chain), "wording_chain", vocab)
    assert not check(h, perturb(h, "first_step_swapped", np.random.default_rng(0), vocab),
                     "wording_chain", vocab)


def test_middle_swap_rejects_two_swaps_end_swaps_and_type_changes(h, vocab):
    rng = np.random.default_rng(0)
    v = perturb(h, "middle_step_swapped", rng, vocab)
    assert check(h, v, "middle_step_swapped", vocab)
    fss = perturb(h, "first_step_swapped", rng, vocab)
    assert "not an intermediate step" in check_reason(h, fss, "middle_step_swapped", vocab)
    # a second, independent middle swap on top of the first one
    p = next(j for j, (a, b) in enumerate(zip(ids(h), ids(v))) if a != b)
    q = next(j for j in range(1, len(h.chain) - 1) if j != p)
    old, new = ids(h)[q], swap_candidates(v, q, vocab)[0]
    chain = [Step(id=new, text=s.text.replace(vocab[old].name, vocab[new].name)) if j == q else s
             for j, s in enumerate(v.chain)]
    two = with_chain(v, chain)
    assert check_reason(h, two, "middle_step_swapped", vocab) == "2 step ids changed; exactly one must change"
    # replacement of another type (a cytokine for the transcription factor NF-kappaB)
    assert ids(h)[1] == "NFKB"
    wrong_type = perturb(h, "middle_step_swapped", rng, vocab)
    chain = [Step(id="IL17", text="IL-17A is activated in the epithelium") if j == 1 else s
             for j, s in enumerate(h.chain)]
    assert "type changed" in check_reason(h, with_chain(wrong_type, chain), "middle_step_swapped", vocab)


def test_middle_swap_rejects_a_swap_of_the_terminal_step(h, vocab):
    """A swap of chain[-1] changes the finding, not the route: it is no middle-step swap."""
    last = len(h.chain) - 1
    old, new = ids(h)[last], swap_candidates(h, last, vocab)[0]
    swapped = [Step(id=new, text=s.text.replace(vocab[old].name, vocab[new].name)) if j == last else s
               for j, s in enumerate(h.chain)]
    variant = with_chain(h, swapped)
    assert check_reason(h, variant, "middle_step_swapped", vocab) == f"changed step is chain[{last}], " \
        "not an intermediate step"
    assert not check(h, variant, "middle_step_swapped", vocab)


def test_first_swap_rejects_leftover_old_name_reworded_steps_and_no_change(h, vocab):
    v = perturb(h, "first_step_swapped", np.random.default_rng(0), vocab)
    assert check(h, v, "first_step_swapped", vocab)
    old, new = h.chain[0].id, v.chain[0].id
    leftover = v.model_copy(update={"explanation": v.explanation + f" {vocab[old].name} helps."})
    assert "explanation: entity mentions" in check_reason(h, leftover, "first_step_swapped", vocab)
    chain = [s.model_copy() for s in v.chain]
    chain[3] = Step(id=chain[3].id, text="neutrophils pour into the gastric mucosa")
    assert check_reason(h, with_chain(v, chain), "first_step_swapped", vocab) == \
        "chain[3].text reworded beyond the swap"
    assert "0 step ids changed" in check_reason(h, h, "first_step_swapped", vocab)
    mss = perturb(h, "middle_step_swapped", np.random.default_rng(0), vocab)
    assert "not the initiating step" in check_reason(h, mss, "first_step_swapped", vocab)
    assert new != old


def test_swap_to_an_entity_the_original_mentions_is_rejected(hyps, vocab):
    a06 = next(x for x in hyps if x.id == "A-06")  # VACA -> BAX -> CYTOCHROME_C -> CASP3 -> ...
    assert ids(a06)[1:4] == ["BAX", "CYTOCHROME_C", "CASP3"]
    v = perturb(a06, "middle_step_swapped", np.random.default_rng(0), vocab)
    assert check(a06, v, "middle_step_swapped", vocab)
    assert "CASP3" not in swap_candidates(a06, 1, vocab)
    chain = [Step(id="CASP3", text="caspase-3 is activated at mitochondria") if j == 1 else s
             for j, s in enumerate(a06.chain)]
    assert "already appears" in check_reason(a06, with_chain(a06, chain), "middle_step_swapped", vocab)


def test_unknown_kind_and_impossible_perturbations(h, vocab):
    with pytest.raises(ValueError, match="unknown perturbation kind"):
        perturb(h, "shuffle", np.random.default_rng(0), vocab)
    one = h.model_copy(update={"template": h.template.model_copy(
        update={"explanations": h.template.explanations[:1]})})
    with pytest.raises(PerturbationError, match="only one explanation phrasing"):
        perturb(one, "wording_only", np.random.default_rng(0), vocab)


def test_template_is_derived_when_missing(h, vocab):
    bare = h.model_copy(update={"template": None})
    t = template_of(bare, vocab)
    assert t.chain[0].startswith("{CAGA}") and t.statement.startswith("{CAGA}")
    v = perturb(bare, "first_step_swapped", np.random.default_rng(0), vocab)
    assert check(bare, v, "first_step_swapped", vocab)


# --- suites --------------------------------------------------------------------------------------


def test_committed_suite_passes_check_and_covers_every_hypothesis(hyps, vocab):
    pairs = load_suite(data_path("perturbations.jsonl"))
    counts = Counter((p["kind"], p["valid"]) for p in pairs)
    print({k: (counts[(k, True)], counts[(k, False)]) for k in KINDS})
    for p in pairs:
        if p["variant"] is not None:
            assert check(p["original"], p["variant"], p["kind"], vocab) == p["valid"]
    assert all(p["valid"] for p in pairs)
    for kind in KINDS:
        assert sorted(p["original"].id for p in pairs if p["kind"] == kind) == sorted(x.id for x in hyps)


def test_committed_suite_is_reproducible(tmp_path, hyps, vocab):
    out = tmp_path / "suite.jsonl"
    write_suite(make_suite(hyps, seed=0, vocabulary=vocab), out)
    assert out.read_bytes() == data_path("perturbations.jsonl").read_bytes()


def test_different_seed_gives_different_swaps(hyps, vocab):
    a = make_suite(hyps, kinds=("first_step_swapped", "middle_step_swapped"), seed=0, vocabulary=vocab)
    b = make_suite(hyps, kinds=("first_step_swapped", "middle_step_swapped"), seed=1, vocabulary=vocab)
    differ = sum(x["swap"] != y["swap"] for x, y in zip(a, b))
    assert differ > len(a) // 3
    assert all(p["valid"] for p in b)


def test_suite_of_one_kind_matches_the_full_suite(hyps, vocab):
    full = make_suite(hyps, seed=7, vocabulary=vocab)
    sub = make_suite(hyps, kinds=("middle_step_swapped",), seed=7, vocabulary=vocab)
    full_mss = [p["swap"] for p in full if p["kind"] == "middle_step_swapped"]
    assert full_mss == [p["swap"] for p in sub]


def test_swaps_prefer_entities_of_the_same_instance(hyps, vocab):
    pairs = load_suite(data_path("perturbations.jsonl"))
    context = instance_entities(hyps, vocab)
    n_inside = 0
    for p in pairs:
        if p["swap"] is None:
            continue
        ctx = context[p["original"].instance]
        full = swap_candidates(hyps_by_id(hyps)[p["original"].id], p["swap"]["position"], vocab)
        assert p["swap"]["to"] in full
        if set(full) & ctx:  # a same-instance candidate exists, so it must have been chosen
            assert p["swap"]["to"] in ctx
            n_inside += 1
    assert n_inside > len(pairs) // 4


def hyps_by_id(hyps):
    return {x.id: x for x in hyps}


def test_load_suite_errors_name_file_line_and_field(tmp_path):
    lines = data_path("perturbations.jsonl").read_text().splitlines()[:2]
    bad = json.loads(lines[1])
    del bad["variant"]["statement"]
    path = tmp_path / "s.jsonl"
    path.write_text(lines[0] + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match=r"s\.jsonl:2: field 'variant\.statement'"):
        load_suite(path)


def test_load_suite_valid_only_drops_every_invalid_pair(tmp_path):
    """A user's suite with excluded pairs: ``valid_only=True`` keeps exactly the valid ones, in order."""
    lines = data_path("perturbations.jsonl").read_text().splitlines()[:5]
    records = [json.loads(line) for line in lines]
    for k in (1, 3):  # two of five pairs were excluded by the validity check
        records[k]["valid"] = False
        records[k]["reason"] = "excluded for this test"
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    every = load_suite(path)
    valid = load_suite(path, valid_only=True)
    assert [p["valid"] for p in every] == [True, False, True, False, True]
    assert [p["variant"].id for p in valid] == [records[k]["variant"]["id"] for k in (0, 2, 4)]
    assert all(p["valid"] for p in valid) and len(valid) == 3


def test_cli_writes_suite_and_prints_counts(tmp_path, capsys):
    from mechaudit.cli import main

    out = tmp_path / "s.jsonl"
    assert main(["perturb", "--kinds", "wording_only", "first_step_swapped", "--seed", "0",
                 "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {"wording_only": {"kept": 80, "excluded": 0},
                                "first_step_swapped": {"kept": 80, "excluded": 0}}
    assert len(out.read_text().splitlines()) == 160


def test_text_changes_and_description_show_what_each_kind_edited(h, vocab):
    """The wording-only variant's chain equals the original's, so only the explanation can show it."""
    rng = np.random.default_rng(0)
    reworded = perturb(h, "wording_only", rng, vocab)
    assert {f for f, _, _ in text_changes(h, reworded)} == {"explanation"}
    line = describe_change(h, reworded, width=400)
    assert line.startswith('explanation reworded: "') and reworded.explanation[:40] in line
    old_id = h.chain[0].id
    swapped = perturb(h, "first_step_swapped", rng, vocab)
    old, new = vocab[old_id].name, vocab[swapped.chain[0].id].name
    assert describe_change(h, swapped) == f"{old} -> {new} (statement, explanation, chain step 1)"
    assert describe_change(h, h) == "" and text_changes(h, h) == []
    assert len(describe_change(h, reworded, width=60)) <= 60


def test_text_changes_keeps_context_for_insertions_and_groups_repeats(h):
    a = h.model_copy(update={"statement": "X binds Y.", "explanation": "It acts on Z. Z then fails."})
    b = a.model_copy(update={"statement": "X strongly binds Y.", "explanation": "It acts on W. W then fails."})
    assert text_changes(a, b) == [("statement", "X", "X strongly"), ("explanation", "Z", "W"),
                                  ("explanation", "Z", "W")]
    assert describe_change(a, b) == "X -> X strongly (statement); Z -> W (explanation)"


# --------------------------------------------------------------------------- guards found by mutation testing


def _suite_lines(n: int = 2) -> list[dict]:
    return [json.loads(line) for line in data_path("perturbations.jsonl").read_text().splitlines()[:n]]


@pytest.mark.parametrize("edit, message", [
    (lambda r: r.pop("valid"), r"s\.jsonl:2: field 'valid': missing required field"),
    (lambda r: r.update(kind="shuffle"), r"s\.jsonl:2: field 'kind': unknown kind 'shuffle'"),
    (lambda r: r.update(valid="yes"), r"s\.jsonl:2: field 'valid': must be true or false \(a JSON boolean\), "
                                      r"got 'yes'"),
])
def test_load_suite_errors_name_file_line_field_and_value(tmp_path, edit, message):
    records = _suite_lines()
    edit(records[1])
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(ValueError, match=message):
        load_suite(path)


def test_suite_round_trip_keeps_reason_and_swap(tmp_path, hyps, vocab):
    pairs = make_suite(hyps[:2], kinds=["wording_only", "middle_step_swapped"], seed=0, vocabulary=vocab)
    assert all(p["swap"] is None for p in pairs if p["kind"] == "wording_only")
    assert all(p["swap"]["position"] > 0 for p in pairs if p["kind"] == "middle_step_swapped")
    pairs[0] = {**pairs[0], "valid": False, "reason": "excluded by hand"}
    write_suite(pairs, tmp_path / "s.jsonl")
    back = load_suite(tmp_path / "s.jsonl")
    assert [(p["reason"], p["swap"]) for p in back] == [(p["reason"], p["swap"]) for p in pairs]
    assert back[0]["reason"] == "excluded by hand"


def test_make_suite_checks_the_seed_and_names_the_vocabulary_that_lacks_an_entity(hyps, vocab):
    with pytest.raises(ValueError, match="field 'seed'"):
        make_suite(hyps[:1], seed=-1, vocabulary=vocab)
    odd = hyps[0].model_copy(update={"chain": [Step(id="NOT_AN_ENTITY", text="x"), *hyps[0].chain[1:]]})
    with pytest.raises(ValueError, match=r"'NOT_AN_ENTITY', which the given vocabulary does not have: pass your "
                                         r"vocabulary \(vocabulary=\.\.\., --vocabulary FILE\)"):
        make_suite([odd], vocabulary=vocab)
    with pytest.raises(ValueError, match="which the shipped .default. vocabulary does not have"):
        make_suite([odd])


def test_phrasing_similarity_is_the_cosine_of_each_further_phrasing_to_the_first(hyps, vocab):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    from mechaudit.perturb import phrasing_similarity
    from mechaudit.render import render

    chosen = [h for h in hyps if h.template is not None and len(h.template.explanations) >= 2][:3]
    assert len(chosen) == 3
    names = vocab.canonical_names()
    texts, pairs = [], []
    for h in chosen:
        first = len(texts)
        texts += [render(e, names) for e in h.template.explanations]
        pairs += [(first, j) for j in range(first + 1, len(texts))]
    C = cosine_similarity(TfidfVectorizer(sublinear_tf=True, stop_words="english").fit_transform(texts))
    np.testing.assert_allclose(phrasing_similarity(chosen, vocab), [C[i, j] for i, j in pairs], atol=1e-12)
    no_template = [h.model_copy(update={"template": None}) for h in chosen]
    assert phrasing_similarity(no_template, vocab).shape == (0,)


def test_check_reason_names_the_one_unknown_step_id(h, vocab):
    chain = [Step(id="NO_SUCH_ID", text=h.chain[1].text) if j == 1 else s for j, s in enumerate(h.chain)]
    assert check_reason(h, with_chain(h, chain), "middle_step_swapped", vocab) == \
        "step id 'NO_SUCH_ID' is not in the vocabulary"


def test_swap_without_a_position_names_the_hypothesis_and_kind(h, vocab):
    """A two-step chain has no middle step: the error says which hypothesis and which kind."""
    short = h.model_copy(update={"chain": h.chain[:2]})
    with pytest.raises(PerturbationError, match=r"^A-01: no same-type entity available for middle_step_swapped$"):
        perturb(short, "middle_step_swapped", np.random.default_rng(0), vocab)


# --- a tiny vocabulary of its own: every function must use the one it is given --------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from tiny_data import VOCAB

    from mechaudit.schema import load_vocabulary

    path = tmp_path_factory.mktemp("tiny") / "vocabulary.yaml"
    path.write_text(VOCAB)
    return load_vocabulary(path)


def tiny_hypothesis(hid: str = "h1", **over):
    from mechaudit.schema import Hypothesis

    rec = {"id": hid, "instance": "A", "statement": "kinase one acts.",
           "explanation": "kinase one drives outcome one.",
           "chain": [{"id": "K1", "text": "kinase one"}, {"id": "K2", "text": "kinase two rises"},
                     {"id": "O1", "text": "outcome one"}]}
    return Hypothesis(**{**rec, **over})


def test_a_given_vocabulary_is_used_by_masking_templates_swaps_and_aliases(tiny):
    from mechaudit.perturb import alias_chain, masked

    h = tiny_hypothesis()
    assert masked("Kinase one  and K-2 rise", tiny) == "{} and {} rise"
    assert masked("Kinase one  and K-2 rise", tiny, keep_ids=True) == "{K1} and {K2} rise"
    assert instance_entities([h, tiny_hypothesis("h2", instance="B")], tiny) == {"A": {"K1", "K2", "O1"},
                                                                                "B": {"K1", "K2", "O1"}}
    v = perturb(h, "first_step_swapped", np.random.default_rng(0), tiny)
    assert [s.text for s in v.chain] == ["kinase three", "kinase two rises", "outcome one"]
    assert v.statement == "kinase three acts." and check_reason(h, v, "first_step_swapped", tiny) is None
    assert alias_chain(h, tiny, np.random.default_rng(0)) == [
        Step(id="K1", text="K-1"), Step(id="K2", text="K-2 rises"), Step(id="O1", text="outcome one")]


def test_make_suite_keeps_a_built_variant_that_fails_the_check_with_its_reason(tiny):
    from mechaudit.schema import Template

    same = Template(statement="{K1} acts.", explanations=["{K1} drives {O1}.", "{K1}  DRIVES {O1}."],
                    chain=["{K1}", "{K2} rises", "{O1}"])
    pairs = make_suite([tiny_hypothesis(template=same)], kinds=["wording_only"], vocabulary=tiny)
    assert pairs[0]["variant"].explanation == "kinase one  DRIVES outcome one."
    assert (pairs[0]["valid"], pairs[0]["reason"]) == (False, "explanation not rewritten")
    with pytest.raises(ValueError, match=r"^field 'seed': must be an integer in \[0, inf\], got 1\.5$"):
        make_suite([tiny_hypothesis()], seed=1.5, vocabulary=tiny)


def test_make_suite_seeds_with_0_by_default(hyps, vocab):
    kinds = ("middle_step_swapped",)
    swaps = {seed: [p["swap"] for p in make_suite(hyps[:3], kinds=kinds, seed=seed, vocabulary=vocab)]
             for seed in (0, 1)}
    assert swaps[0] != swaps[1]
    assert [p["swap"] for p in make_suite(hyps[:3], kinds=kinds, vocabulary=vocab)] == swaps[0]


def test_describe_change_counts_several_chain_steps_and_is_110_characters_by_default(h):
    import textwrap

    chain = [Step(id=s.id, text=f"{s.text} via X") for s in h.chain]
    a = with_chain(h, chain)
    b = with_chain(h, [Step(id=s.id, text=s.text.replace(" via X", " via Y") if j in (0, 2) else s.text)
                       for j, s in enumerate(chain)])
    assert describe_change(a, b) == "X -> Y (chain steps 1, 3)"
    long = h.model_copy(update={"explanation": "ab " + " ".join("a" * 200)})
    full = describe_change(h, long, width=1000)
    assert len(full) > 120 and textwrap.shorten(full, 110, placeholder=" ...") != \
        textwrap.shorten(full, 111, placeholder=" ...")
    assert describe_change(h, long) == textwrap.shorten(full, 110, placeholder=" ...")


def test_text_changes_does_not_treat_frequent_words_as_junk(h):
    """difflib's autojunk would drop a word making up over 1 % of a text of 200 words or more."""
    a = h.model_copy(update={"statement": " ".join(["x"] * 210)})
    b = a.model_copy(update={"statement": "w " + a.statement})
    assert text_changes(a, b) == [("statement", "", "w")]


def test_rerendered_fields_and_share_per_kind(tiny):
    from mechaudit.perturb import rerender_share, rerendered_fields

    h = tiny_hypothesis()
    swapped = perturb(h, "first_step_swapped", np.random.default_rng(0), tiny)
    reworded = h.model_copy(update={"explanation": "outcome one follows from kinase one."})
    restated = h.model_copy(update={"statement": "kinase one is active."})
    assert rerendered_fields(h, swapped, tiny) == ["statement", "explanation"]
    assert rerendered_fields(h, reworded, tiny) == ["statement"]
    assert rerendered_fields(h, restated, tiny) == ["explanation"]
    pairs = [{"kind": "middle_step_swapped", "original": h, "variant": swapped},
             {"kind": "wording_only", "original": h, "variant": reworded},
             {"kind": "middle_step_swapped", "original": h, "variant": reworded},
             {"kind": "first_step_swapped", "original": h, "variant": swapped},
             {"kind": "wording_chain", "original": h, "variant": None}]
    share = rerender_share(pairs, tiny)
    assert share.name == "% re-rendered"
    assert share.to_dict() == {"wording_only": 0.0, "first_step_swapped": 100.0, "middle_step_swapped": 50.0}
    assert list(share.index) == ["wording_only", "first_step_swapped", "middle_step_swapped"]


def test_write_suite_keeps_non_ascii_text_as_is(tmp_path, tiny):
    h = tiny_hypothesis(explanation="kinase one drives outcome one via the β-cell.")
    out = tmp_path / "s.jsonl"
    write_suite(make_suite([h], kinds=["first_step_swapped"], vocabulary=tiny), out)
    assert "via the β-cell." in out.read_text(encoding="utf-8") and "\\u03b2" not in out.read_text(encoding="utf-8")


def test_suite_files_paths_and_rebuild_commands(tmp_path, tiny):
    from mechaudit.perturb import available_suites, load_pairs, rebuild_command, suite_path

    assert suite_path() == data_path("perturbations.jsonl")
    assert suite_path(tmp_path) == tmp_path / "perturbations.jsonl"
    assert suite_path(tmp_path, "reworded") == tmp_path / "perturbations_reworded.jsonl"
    assert available_suites(tmp_path) == []
    pairs = make_suite([tiny_hypothesis()], kinds=["first_step_swapped", "middle_step_swapped"], vocabulary=tiny)
    write_suite(pairs[1:], tmp_path / "perturbations_reworded.jsonl")
    assert available_suites(tmp_path) == ["reworded"]
    assert available_suites() == ["template", "reworded"]
    pairs[1] = {**pairs[1], "valid": False, "reason": "excluded by hand"}
    write_suite(pairs, tmp_path / "perturbations.jsonl")
    assert available_suites(tmp_path) == ["template", "reworded"]
    kept, kinds = load_pairs(tmp_path)
    assert kinds == ["first_step_swapped"] and kept == [(pairs[0]["original"], pairs[0]["variant"])]
    kept, kinds = load_pairs(tmp_path, "reworded")
    assert kinds == ["middle_step_swapped"] and kept[0][1].chain[1].id == "K3"
    d = tmp_path
    assert rebuild_command(d / "perturbations.jsonl") == (
        f"mechaudit perturb --hypotheses {d}/hypotheses.jsonl --vocabulary {d}/vocabulary.yaml "
        f"--out {d}/perturbations.jsonl")
    assert rebuild_command(str(d / "perturbations_reworded.jsonl")) == (
        f"mechaudit perturb --hypotheses {d}/hypotheses.jsonl --vocabulary {d}/vocabulary.yaml "
        f"--reworded {d}/perturbations_reworded.yaml --out {d}/perturbations_reworded.jsonl")


def test_a_stale_suite_names_the_reason_and_the_command_that_rebuilds_it(tmp_path, tiny):
    from mechaudit.perturb import hypotheses_sha256, rebuild_command, stale_reason
    from mechaudit.schema import dump_hypotheses

    h = tiny_hypothesis()
    pairs = make_suite([h], kinds=["first_step_swapped"], vocabulary=tiny)
    assert stale_reason(pairs, [h]) is None
    assert pairs[0]["hypotheses_sha256"] == hypotheses_sha256([h])
    other = [{**pairs[0], "hypotheses_sha256": "0" * 64}]
    assert stale_reason(other, [h]) == (0, "it was built from other hypotheses (hypotheses_sha256 differs: one was "
                                           "added, dropped or re-templated)")
    assert stale_reason([{**pairs[0], "hypotheses_sha256": None}], [h]) is None
    path = tmp_path / "perturbations.jsonl"
    write_suite(pairs, path)
    dump_hypotheses([h.model_copy(update={"statement": "kinase one acts twice."})], tmp_path / "hypotheses.jsonl")
    with pytest.raises(ValueError) as err:
        load_suite(path)
    assert str(err.value) == (f"{path}:1: field 'original': stale perturbation suite: hypothesis 'h1' was edited after "
                              f"the suite was built ({tmp_path / 'hypotheses.jsonl'}); rebuild it with "
                              f"`{rebuild_command(path)}`")
