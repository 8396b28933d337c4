"""The paper-rate judge (mechaudit.rules.paper_rates): hand-computed verdict probabilities, the fast
divergence matrix against a pairwise computation, drawn verdicts, the registry and the backends."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
from rule_hypotheses import hyp

from mechaudit import rules
from mechaudit.divergence import matched_pairs
from mechaudit.errors import MechauditError
from mechaudit.rules.paper_rates import PaperRateJudge, paper_rates
from mechaudit.workflow import rules_for
from mechaudit.workflow.depth import keys_function, measure_function

BASE = ["KRAS", "MEK", "ERK", "MYC", "PROLIF"]


def test_rates_come_from_the_paper_file():
    assert paper_rates() == {"first_step": pytest.approx(0.83), "middle_step": pytest.approx(0.13)}
    judge = PaperRateJudge()
    assert judge.position_rates(5).tolist() == pytest.approx([0.83, 0.13, 0.13, 0.13, 1.0])
    assert "first_step=0.83" in repr(judge)


@pytest.mark.parametrize("changed, expected", [
    ((), 0.0),
    ((0,), 0.83),
    ((2,), 0.13),
    ((1, 3), 1 - 0.87**2),
    ((0, 2), 1 - 0.17 * 0.87),
    ((4,), 1.0),
])
def test_probability_per_kind_of_change(changed, expected):
    other = ["EGFR", "PI3K", "CRP", "PI3K", "EGFR"]
    ids = [other[j] if j in changed else BASE[j] for j in range(5)]
    a, b = hyp("a", BASE), hyp("b", ids, statement="Reworded entirely.", explanation="Other words.")
    assert PaperRateJudge().p_different([(a, b)])[0] == pytest.approx(expected, abs=1e-12)


def test_custom_rates_and_bad_input():
    judge = PaperRateJudge(first_step=0.5, middle_step=0.0)
    a, b = hyp("a", BASE), hyp("b", ["EGFR", "PI3K", "ERK", "MYC", "PROLIF"])
    assert judge.p_different([(a, b)])[0] == pytest.approx(0.5)
    with pytest.raises(ValueError, match="unequal length"):
        judge.p_different([(a, hyp("c", ["KRAS", "ERK", "PROLIF"]))])
    with pytest.raises(MechauditError, match="middle_step must be in"):
        PaperRateJudge(middle_step=1.5).p_different([(a, b)])
    with pytest.raises(ValueError, match="initiating event and a terminal"):
        judge.position_rates(1)
    assert judge.chain_probabilities([]).shape == (0, 0)


def _runs():
    """Three runs of two openings, several hypotheses per opening, chains varying step by step."""
    rng = np.random.default_rng(2)
    alt = {0: "EGFR", 1: "PI3K", 2: "CRP", 3: "MEK"}
    runs = []
    for r in range(4):
        run = []
        for opening in ("o1", "o2"):
            for k in range(1 + r % 2 + (opening == "o2")):
                ids = [alt[j] if j < 4 and rng.random() < 0.4 else BASE[j] for j in range(5)]
                if len(set(ids)) < 5:  # keep the ids of one chain distinct
                    ids = BASE
                h = hyp(f"{r}-{opening}-{k}", ids).model_copy(update={"opening_id": opening, "run": str(r)})
                run.append(h)
        runs.append(run)
    return runs


def test_fast_matrix_equals_the_pairwise_mean_of_probabilities():
    judge = PaperRateJudge()
    runs = _runs()
    D = judge.divergence_matrix(runs)
    for i, j in product(range(len(runs)), repeat=2):
        if i == j:
            assert D[i, j] == 0.0
            continue
        pairs = matched_pairs(runs[i], runs[j])
        assert D[i, j] == pytest.approx(float(np.mean(judge.p_different(pairs))), abs=1e-12)
    assert np.allclose(D, D.T)


def test_drawn_verdicts_average_to_the_probabilities():
    a, b = hyp("a", BASE), hyp("b", ["EGFR", "MEK", "ERK", "MYC", "PROLIF"])
    judge = PaperRateJudge(seed=3)
    same = judge.same([(a, b)] * 4000)
    assert np.array_equal(same, PaperRateJudge(seed=3).same([(a, b)] * 4000))  # reproducible
    assert 1 - same.mean() == pytest.approx(0.83, abs=3 * np.sqrt(0.83 * 0.17 / 4000))
    assert judge.same([(a, a)]).tolist() == [True]


def test_registry_fast_path_and_backends():
    judge = rules.build("paper_rates")
    assert isinstance(judge, PaperRateJudge) and "paper_rates" in rules.NAMES
    assert keys_function(judge) == judge.keys_divergence_matrix
    assert measure_function("paper_rates") is not None
    with pytest.raises(ValueError, match="unknown measure"):
        measure_function("tfidf")
    assert rules_for(["paper_rates", "reference"], llm=False) == ["paper_rates", "reference"]
    assert rules_for(["paper_rates", "mechanism_key", "reference"], llm=True) == ["reference", "llm"]


def test_one_matched_pair_per_run_pair_gives_its_probability():
    """Each run delivers one hypothesis of one opening: every run pair has exactly one matched pair, and
    its divergence is that pair's P(different) (0.83 for a changed first step)."""
    a = hyp("a", BASE).model_copy(update={"opening_id": "o1"})
    b = hyp("b", ["EGFR", *BASE[1:]]).model_copy(update={"opening_id": "o1"})
    D = PaperRateJudge().divergence_matrix([[a], [b], [a]])
    np.testing.assert_allclose(D, [[0.0, 0.83, 0.0], [0.83, 0.0, 0.83], [0.0, 0.83, 0.0]], atol=1e-12)


def test_chain_probabilities_use_the_rates_given():
    judge = PaperRateJudge()
    P = judge.chain_probabilities([("a", "b", "c"), ("x", "b", "c"), ("a", "b", "y")], np.array([0.5, 0.2, 0.25]))
    np.testing.assert_allclose(P, [[0.0, 0.5, 0.25], [0.5, 0.0, 1 - 0.5 * 0.75], [0.25, 1 - 0.5 * 0.75, 0.0]])


def test_a_two_step_chain_has_a_first_and_a_terminal_rate():
    assert PaperRateJudge().position_rates(2).tolist() == pytest.approx([0.83, 1.0])
