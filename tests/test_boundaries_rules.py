"""The equivalence rules' thresholds, the agreement interval, the bootstrap interval's level and the
data model's chain checks, each at, just below and just above its boundary.

A similarity exactly at a rule's threshold is "same" (the paper: same iff cosine >= threshold). The
similarity that sits on the threshold is computed by the same code path the rule thresholds, so the
comparison is exact; one ulp either side moves the verdict.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from rule_hypotheses import NAMES, hyp

from mechaudit.agreement import complete_agreement_interval
from mechaudit.model import MIN_CHAIN
from mechaudit.rules import EmbeddingRule, ReferenceJudge, TfidfRule
from mechaudit.rules.embedding import matched_threshold, model_id, store_path, text_key, write_store
from mechaudit.rules.llm_judge import majority
from mechaudit.rules.paper_rates import PaperRateJudge, paper_rates
from mechaudit.schema import Hypothesis, Step, Template, hypothesis_text
from mechaudit.workflow.intervals import bootstrap_extras, bootstrap_interval

UP, DOWN = np.inf, -np.inf


# ---------------------------------------------------------------- TF-IDF: same iff cosine >= threshold

A = hyp("a", ["KRAS", "MEK", "ERK", "PROLIF"])
B = hyp("b", ["KRAS", "PI3K", "MYC", "PROLIF"])
C = hyp("c", ["EGFR", "MEK", "ERK", "CRP"])


def _graph_cosine(rule_threshold: float, hyps, i: int, j: int, corpus) -> bool:
    rule = TfidfRule(threshold=rule_threshold, fit_on=corpus).fit()
    return bool(rule.same_graph(hyps)[i, j])


def test_tfidf_pair_at_the_threshold_is_the_same_mechanism():
    corpus = [A, B, C]
    probe = TfidfRule(threshold=1e-9, fit_on=corpus).fit()
    s = probe.similarity_graph(corpus)[0, 1]  # the cosine exactly as the graph computes it
    assert 0 < s < 1
    assert _graph_cosine(s, corpus, 0, 1, corpus)  # at: same
    assert _graph_cosine(float(np.nextafter(s, DOWN)), corpus, 0, 1, corpus)  # just below the cosine: same
    assert not _graph_cosine(float(np.nextafter(s, UP)), corpus, 0, 1, corpus)  # just above: different
    # the pairwise route agrees at the boundary
    pair_s = probe.similarity([(A, B)])[0]
    assert TfidfRule(threshold=pair_s, fit_on=corpus).fit().same([(A, B)])[0]
    assert not TfidfRule(threshold=float(np.nextafter(pair_s, UP)), fit_on=corpus).fit().same([(A, B)])[0]


def test_tfidf_components_keep_an_edge_at_the_threshold():
    corpus = [A, B, C]
    s = TfidfRule(threshold=1e-9, fit_on=corpus).fit().similarity_graph(corpus)[0, 1]
    at = TfidfRule(threshold=s, fit_on=corpus).fit().components(corpus)
    above = TfidfRule(threshold=float(np.nextafter(s, UP)), fit_on=corpus).fit().components(corpus)
    assert at[0] == at[1]
    assert above[0] != above[1]


# ---------------------------------------------------------------- embeddings: a stored vector per text


def _embedding_rule(tmp_path, threshold, vectors):
    """An embedding rule whose vectors come from a disk store written here (no model is loaded)."""
    model = "boundary-test-model"
    texts = [hypothesis_text(h) for h in (A, B)]
    write_store(store_path(tmp_path, model), {text_key(model_id(model), t): np.asarray(v, dtype=np.float32)
                                              for t, v in zip(texts, vectors)})
    return EmbeddingRule(model=model, threshold=threshold, cache_dir=tmp_path)


def test_embedding_pair_at_the_threshold_is_the_same_mechanism(tmp_path):
    vectors = [[1.0, 0.0], [0.5, np.sqrt(0.75)]]  # cosine 0.5, exact in float32 and float64
    assert _embedding_rule(tmp_path, 0.5, vectors).similarity([(A, B)])[0] == 0.5
    assert _embedding_rule(tmp_path, 0.5, vectors).same([(A, B)])[0]
    assert not _embedding_rule(tmp_path, float(np.nextafter(0.5, UP)), vectors).same([(A, B)])[0]
    assert _embedding_rule(tmp_path, float(np.nextafter(0.5, DOWN)), vectors).same([(A, B)])[0]
    # verdicts from similarities already computed (the workflow's measured runs) keep the tie too
    at = _embedding_rule(tmp_path, 0.5, vectors)
    assert list(at.same_from_similarity([0.5, float(np.nextafter(0.5, DOWN))])) == [True, False]
    # the block-wise route (components) keeps the edge at the threshold too
    assert len(set(_embedding_rule(tmp_path, 0.5, vectors).components([A, B]))) == 1
    assert len(set(_embedding_rule(tmp_path, float(np.nextafter(0.5, UP)), vectors).components([A, B]))) == 2


@pytest.mark.parametrize(("rate", "expected"), [
    (0.0, np.nextafter(0.9, UP)),  # k = 0: just above the largest, nothing is the same
    (0.1, np.nextafter(0.9, UP)),  # k = round(0.5) = 0 (half to even): nothing is the same
    (0.2, 0.9),   # k = 1
    (0.3, 0.7),   # k = round(1.5) = 2 (half to even; truncation would give 1 and 0.9)
    (0.35, 0.7),  # k = round(1.75) = 2
    (0.4, 0.7),   # k = 2: the second largest
    (0.5, 0.7),   # k = round(2.5) = 2 (half to even)
    (0.7, 0.5),   # k = round(3.5) = 4 -> the fourth largest (ties with the third)
    (1.0, 0.1),   # k = 5: the smallest, everything is the same
])
def test_matched_threshold_rounds_the_count_and_keeps_ties(rate, expected):
    s = np.array([0.5, 0.9, 0.1, 0.7, 0.5])  # sorted: 0.9 0.7 0.5 0.5 0.1
    t = matched_threshold(s, rate)
    assert t == expected
    k = int(np.sum(s >= t))
    assert k == {0.0: 0, 0.1: 0, 0.2: 1, 0.3: 2, 0.35: 2, 0.4: 2, 0.5: 2, 0.7: 4, 1.0: 5}[rate]


# ---------------------------------------------------------------- reference judge without rubric: Jaccard >= 0.5


@pytest.mark.parametrize(("ids_b", "jaccard", "same"), [
    (["KRAS", "MEK", "ERK", "PROLIF"], 1.0, True),
    (["KRAS", "MEK", "MYC", "PROLIF"], 3 / 5, True),
    (["KRAS", "PI3K", "MYC", "PROLIF"], 2 / 6, False),
    (["KRAS", "MEK", "PROLIF"], 3 / 4, True),
])
def test_no_rubric_judge_jaccard_threshold(ids_b, jaccard, same):
    judge = ReferenceJudge("none")
    comp = judge.components([(A, hyp("x", ids_b))])
    assert comp["jaccard"].iloc[0] == pytest.approx(jaccard)
    assert judge.same([(A, hyp("x", ids_b))])[0] is np.bool_(same)


def test_no_rubric_judge_at_exactly_half_is_the_same():
    a, b = hyp("a", ["KRAS", "MEK", "PROLIF"]), hyp("b", ["KRAS", "ERK", "PROLIF"])  # 2 shared of 4
    assert ReferenceJudge("none").components([(a, b)])["jaccard"].iloc[0] == 0.5
    assert ReferenceJudge("none").same([(a, b)])[0]
    assert not ReferenceJudge("none", jaccard_threshold=float(np.nextafter(0.5, UP))).same([(a, b)])[0]


# ---------------------------------------------------------------- LLM judge majority


@pytest.mark.parametrize(("verdicts", "same"), [
    (["same", "same", "different"], True),
    (["same", "different", "different"], False),
    (["same", "different"], None),  # a tie is undecided, never a default
    (["same", "invalid", "different"], None),
    (["same", "invalid", "invalid"], True),
])
def test_majority_of_valid_verdicts(verdicts, same):
    calls = pd.DataFrame({"pair": 0, "invalid": [v == "invalid" for v in verdicts],
                          "verdict": [None if v == "invalid" else v for v in verdicts]})
    got = majority(calls, 1)["same"].iloc[0]
    assert (got is pd.NA) if same is None else (bool(got) is same)


# ---------------------------------------------------------------- paper-rate judge: a rate of 0 is 0


@pytest.mark.parametrize("kind", ["first_step", "middle_step"])
def test_paper_rate_judge_keeps_an_explicit_zero_rate(kind):
    judge = PaperRateJudge(**{kind: 0.0})
    assert judge.rates_[kind] == 0.0  # not the paper's 0.83 / 0.13
    other = "middle_step" if kind == "first_step" else "first_step"
    assert judge.rates_[other] == paper_rates()[other]
    position = 0 if kind == "first_step" else 1
    ids = ["KRAS", "MEK", "ERK", "PROLIF"]
    swapped = list(ids)
    swapped[position] = "EGFR" if position == 0 else "PI3K"
    assert judge.p_different([(hyp("a", ids), hyp("b", swapped))])[0] == 0.0


def test_paper_rate_judge_rates_at_their_bounds():
    assert PaperRateJudge(first_step=1.0, middle_step=0.0).rates_ == {"first_step": 1.0, "middle_step": 0.0,
                                                                      "terminal_step": 1.0}
    with pytest.raises(ValueError, match=r"first_step must be in \[0, 1\]"):
        _ = PaperRateJudge(first_step=float(np.nextafter(1.0, 2.0))).rates_
    with pytest.raises(ValueError, match=r"middle_step must be in \[0, 1\]"):
        _ = PaperRateJudge(middle_step=-1e-12).rates_


# ---------------------------------------------------------------- agreement interval (max different, min same]


@pytest.mark.parametrize(("sim", "ref", "expected"), [
    ([0.2, 0.4, 0.6, 0.8], [False, False, True, True], (0.4, 0.6)),
    ([0.2, 0.5, 0.5, 0.8], [False, False, True, True], None),  # max different == min same: no threshold
    ([0.2, float(np.nextafter(0.5, DOWN)), 0.5, 0.8], [False, False, True, True],
     (float(np.nextafter(0.5, DOWN)), 0.5)),  # one ulp apart: exactly one threshold, 0.5
    ([0.2, 0.6, 0.5, 0.8], [False, False, True, True], None),  # overlap
    ([0.2, 0.4], [True, True], (float("-inf"), 0.2)),
    ([0.2, 0.4], [False, False], (0.4, float("inf"))),
])
def test_complete_agreement_interval_bounds(sim, ref, expected):
    got = complete_agreement_interval(np.array(sim), np.array(ref))
    assert got == expected
    if got is not None:
        low, high = got
        s, r = np.array(sim), np.array(ref)
        assert np.array_equal(s >= high, r)  # the upper end agrees on every pair
        assert not np.array_equal(s >= low, r) or low == float("-inf")  # the lower end does not


# ---------------------------------------------------------------- bootstrap interval: level is two-sided


def _matrices(seed: int = 0, n_inst: int = 3, n: int = 10) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_inst):
        X = rng.random((n, n))
        D = (X + X.T) / 2
        D[: n // 2, n // 2:] += 0.3
        D[n // 2:, : n // 2] += 0.3
        np.fill_diagonal(D, 0.0)
        out.append(D)
    return out


@pytest.mark.parametrize("level", [0.5, 0.8, 0.9, 0.95, 0.99])
def test_bootstrap_interval_is_the_central_percentile_interval(level):
    Ds = _matrices()
    values = bootstrap_extras(Ds, 5, n_boot=4000, seed=3)
    low, high = bootstrap_interval(Ds, 5, level=level, n_boot=4000, seed=3)
    # independent: the order statistics of the same resamples, by hand
    ordered = np.sort(values)
    m = len(ordered)
    lo_pos, hi_pos = (1 - level) / 2 * (m - 1), (1 + level) / 2 * (m - 1)
    by_hand = [np.interp(p, np.arange(m), ordered) for p in (lo_pos, hi_pos)]
    assert (low, high) == pytest.approx(by_hand, abs=1e-12)
    # the share of resamples inside is the level, split evenly between the two tails
    inside = np.mean((values >= low) & (values <= high))
    assert inside == pytest.approx(level, abs=2 / m + 1e-3)
    assert np.mean(values < low) == pytest.approx((1 - level) / 2, abs=2 / m + 1e-3)


def test_a_95_interval_is_wider_than_a_90_interval():
    Ds = _matrices(seed=1)
    l95, h95 = bootstrap_interval(Ds, 5, level=0.95, n_boot=3000, seed=0)
    l90, h90 = bootstrap_interval(Ds, 5, level=0.90, n_boot=3000, seed=0)
    assert l95 < l90 < h90 < h95


def test_table1_intervals_are_95_percent_by_default_and_follow_the_chosen_level(bench):
    from mechaudit.workflow import Design, MechanismKeyRule, load_simulator_params, rule_tables, simulate
    from mechaudit.workflow.depth import comparison_matrix, depth_table, instance_matrices

    design = Design(instances=("A", "C"), depths=(0, 1), runs_per_depth=4)
    runs = simulate(bench, design, load_simulator_params(), seed=5, log=False)
    mats = instance_matrices(runs, MechanismKeyRule())
    subs = [comparison_matrix(m.D, m.depths, 0, 1) for m in mats]

    def by_hand(level):  # the percentile interval of the same resamples, in pp
        values = bootstrap_extras([D for D, _ in subs], 4, n_boot=2000, seed=2)
        return list(100 * np.quantile(values, [(1 - level) / 2, (1 + level) / 2]))

    def interval(table):
        return list(table[["ci_low_pp", "ci_high_pp"]].iloc[0])

    rule = {"key": MechanismKeyRule()}
    assert interval(rule_tables(runs, rule, [(0, 1)], seed=2)[1]) == pytest.approx(by_hand(0.95), abs=1e-9)
    assert interval(depth_table(mats, [(0, 1)], seed=2)) == pytest.approx(by_hand(0.95), abs=1e-9)
    assert interval(rule_tables(runs, rule, [(0, 1)], seed=2, level=0.9)[1]) == pytest.approx(by_hand(0.9), abs=1e-9)
    assert by_hand(0.9) != pytest.approx(by_hand(0.95))


@pytest.mark.parametrize("level", [0.0, 1.0, -0.1, 1.5])
def test_bootstrap_level_outside_the_open_unit_interval_is_refused(level):
    with pytest.raises(ValueError, match=r"level must be in \(0, 1\)"):
        bootstrap_interval(_matrices(), 5, level=level, n_boot=10)


# ---------------------------------------------------------------- the data model: chain lengths


def _steps(n: int) -> list[Step]:
    ids = list(NAMES)[:n]
    return [Step(id=i, text=NAMES[i]) for i in ids]


@pytest.mark.parametrize("n", [MIN_CHAIN - 1, MIN_CHAIN, MIN_CHAIN + 1])
def test_a_chain_needs_at_least_min_chain_steps(n):
    assert MIN_CHAIN == 3  # initiating event, one intermediate step, terminal finding
    fields = dict(id="h", instance="I", statement="s", explanation="e", chain=_steps(n))
    if n < MIN_CHAIN:
        with pytest.raises(ValidationError, match=f"chain has {n} steps; at least 3"):
            Hypothesis(**fields)
    else:
        assert len(Hypothesis(**fields).chain) == n


@pytest.mark.parametrize("t_len", [3, 4, 5])
def test_template_chain_must_match_the_chain_length(t_len):
    chain = _steps(4)
    template = Template(statement="s", explanations=["e"], chain=[f"{{{s.id}}}" for s in _steps(t_len)])
    fields = dict(id="h", instance="I", statement="s", explanation="e", chain=chain, template=template)
    if t_len == 4:
        assert Hypothesis(**fields).template.chain == template.chain
    else:
        with pytest.raises(ValidationError, match=f"template.chain has {t_len} steps, chain has 4"):
            Hypothesis(**fields)


def test_a_template_of_the_wrong_length_in_a_file_names_its_line(tmp_path):
    from mechaudit.schema import DataError, load_hypotheses

    good = Hypothesis(id="h1", instance="I", statement="s", explanation="e", chain=_steps(3))
    bad = good.model_dump(mode="json") | {"id": "h2", "template": {"statement": "s", "explanations": ["e"],
                                                                   "chain": ["{KRAS}", "{EGFR}"]}}
    path = tmp_path / "h.jsonl"
    path.write_text(good.model_dump_json() + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"h\.jsonl:2: .*template.chain has 2 steps, chain has 3"):
        load_hypotheses(path)
