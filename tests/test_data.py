"""The committed benchmark data: validation, content requirements and the counts in the card."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from mechaudit.paths import REPO_ROOT, data_path
from mechaudit.perturb import KINDS, SWAP_KINDS, load_suite, phrasing_similarity, rerender_share
from mechaudit.render import find_mentions, placeholders, render
from mechaudit.schema import mechanism_key

SENTENCE_END = re.compile(r"[.!?](\s|$)")



def is_subsequence(short: list[str], long: list[str]) -> bool:
    it = iter(long)
    return all(x in it for x in short)


def card_counts() -> dict[str, float]:
    """The ``| quantity | value |`` rows of the Counts table in book/data.md."""
    text = (REPO_ROOT / "book" / "data.md").read_text()
    section = text.split("## Counts", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^\| ([^|]+?) \| ([0-9.]+) \|$", section, flags=re.M)}


def measured_counts(bench) -> dict[str, float]:
    vocab, hyps = bench.vocabulary, bench.hypotheses
    pairs = load_suite(data_path("perturbations.jsonl"))
    out = {
        "instances": len(bench.instances),
        "entities": len(vocab),
        "entity types": len(vocab.types),
        "entities with at least one alias": sum(bool(e.aliases) for e in vocab.entities.values()),
        "distinct chain step ids used": len({s.id for h in hyps for s in h.chain}),
        "base hypotheses": len(hyps),
        "opening hypotheses": sum(len(i.openings) for i in bench.instances),
        "mechanism labels": len({h.mechanism for h in hyps}),
        "distinct mechanism keys": len({(h.instance, mechanism_key(h)) for h in hyps}),
        "near-duplicate hypotheses": sum(h.near_duplicate_of is not None for h in hyps),
        "explanation phrasings": sum(len(h.template.explanations) for h in hyps),
        "median TF-IDF cosine between phrasings": round(float(np.median(phrasing_similarity(hyps, vocab))), 3),
    }
    for n in range(3, 7):
        out[f"chains with {n} steps"] = sum(len(h.chain) == n for h in hyps)
    for kind in KINDS:
        out[f"{kind} pairs kept"] = sum(p["kind"] == kind and p["valid"] for p in pairs)
        out[f"{kind} pairs excluded"] = sum(p["kind"] == kind and not p["valid"] for p in pairs)
    reworded = load_suite(data_path("perturbations_reworded.jsonl"))
    for kind in KINDS:
        out[f"reworded suite: {kind} pairs kept"] = sum(p["kind"] == kind and p["valid"] for p in reworded)
        out[f"reworded suite: {kind} pairs excluded"] = sum(p["kind"] == kind and not p["valid"] for p in reworded)
    for label, suite in (("template-built", pairs), ("reworded", reworded)):
        share = rerender_share(suite, vocab)
        for kind in SWAP_KINDS:
            out[f"{label} suite: {kind} variants re-rendered (%)"] = round(float(share[kind]), 1)
    return out


def test_counts_match_the_card(bench):
    measured = measured_counts(bench)
    for key, value in measured.items():
        print(f"{key}: {value}")
    assert card_counts() == measured


def test_instances(bench):
    assert [i.id for i in bench.instances] == ["A", "B", "C", "D"]
    for inst in bench.instances:
        assert 5 <= len(inst.evidence) <= 10
        assert len(inst.openings) == 5
        openings = bench.openings(inst.id)
        assert all(h.instance == inst.id and h.opening_id == h.id for h in openings)
        assert len({mechanism_key(h) for h in openings}) == 5
        assert len(bench.by_instance(inst.id)) >= 20


def test_vocabulary_coverage_and_swap_pools(bench):
    vocab, hyps = bench.vocabulary, bench.hypotheses
    with_alias = sum(bool(e.aliases) for e in vocab.entities.values())
    assert with_alias / len(vocab) >= 0.8
    for type_ in vocab.types:
        assert len(vocab.of_type(type_)) >= 3, type_
    for h in hyps:  # every step that can be swapped has a same-type alternative not mentioned
        mentioned = {i for t in (h.template.statement, *h.template.explanations, *h.template.chain)
                     for i in placeholders(t)}
        for s in h.chain[:-1]:
            assert set(vocab.of_type(vocab[s.id].type)) - mentioned, (h.id, s.id)


def test_hypothesis_shape(bench):
    names = bench.vocabulary.canonical_names()
    for h in bench.hypotheses:
        assert len(SENTENCE_END.findall(h.statement)) == 1, h.id
        assert 3 <= len(h.chain) <= 6, h.id
        assert len({s.id for s in h.chain}) == len(h.chain), h.id
        assert len(h.template.explanations) >= 2, h.id
        for e in h.template.explanations:
            assert 2 <= len(SENTENCE_END.findall(render(e, names))) <= 4, h.id


def test_marked_mentions_are_complete_under_any_naming(bench):
    """Rendering with canonical names or with any alias finds exactly the marked entities."""
    vocab = bench.vocabulary
    namings = [vocab.canonical_names()]
    for k in range(3):
        namings.append({i: e.names[min(k + 1, len(e.names) - 1)] for i, e in vocab.entities.items()})
    for h in bench.hypotheses:
        t = h.template
        for text in (t.statement, *t.explanations, *t.chain):
            for names in namings:
                assert find_mentions(render(text, names), vocab.index) == placeholders(text), (h.id, text)
        sets = {frozenset(placeholders(e)) for e in t.explanations}
        assert len(sets) == 1, h.id  # every phrasing names the same entities


def test_near_duplicates_differ_in_exactly_one_component(bench):
    by_id = {h.id: h for h in bench.hypotheses}
    pairs = [(h, by_id[h.near_duplicate_of]) for h in bench.hypotheses if h.near_duplicate_of]
    assert len(pairs) >= 2 * len(bench.instances)
    for h, base in pairs:
        a, b = [s.id for s in h.chain], [s.id for s in base.chain]
        assert len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == 1, h.id
        assert h.instance == base.instance and h.mechanism != base.mechanism
        v = TfidfVectorizer(sublinear_tf=True, stop_words="english").fit_transform(
            [h.statement, base.statement])
        assert (v[0] @ v[1].T).toarray()[0, 0] > 0.5, h.id  # shares most of the wording


def test_same_mechanism_at_different_levels_of_detail(bench):
    groups: dict[str, list] = {}
    for h in bench.hypotheses:
        groups.setdefault(h.mechanism, []).append(h)
    detail = [g for g in groups.values() if len(g) > 1]
    assert len(detail) >= 2 * len(bench.instances)
    for g in detail:
        chains = sorted(([s.id for s in h.chain] for h in g), key=len)
        assert len({len(c) for c in chains}) == len(chains)
        for short, long in zip(chains, chains[1:]):
            assert short[0] == long[0] and short[-1] == long[-1]
            assert is_subsequence(short, long)


def test_phrasings_are_real_rewrites(bench):
    sims = phrasing_similarity(bench.hypotheses, bench.vocabulary)
    print("median TF-IDF cosine between explanation phrasings:", round(float(np.median(sims)), 3))
    assert sims.shape == (len(bench.hypotheses),)
    assert np.median(sims) < 0.6 and sims.max() < 0.9


def test_step_templates_name_their_entity_first(bench):
    for h in bench.hypotheses:
        for s, t in zip(h.chain, h.template.chain):
            assert placeholders(t)[0] == s.id
    assert Counter(h.instance for h in bench.hypotheses) == {"A": 20, "B": 20, "C": 20, "D": 20}
