"""Reference judges on hand-made chains: each rubric literally, symmetry, components, bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from rule_hypotheses import hyp

from mechaudit.rules import ReferenceJudge
from mechaudit.rules.reference import is_subsequence

BASE = ["KRAS", "MEK", "ERK", "PROLIF"]
CASES = {
    # name: (chain of B, expected same under full, step, none(jaccard 0.5))
    "identical": (BASE, True, True, True),
    "reworded": (BASE, True, True, True),
    "added_detail": (["KRAS", "MEK", "MYC", "ERK", "PROLIF"], True, True, True),
    "downstream_biomarker": (["KRAS", "MEK", "ERK", "PROLIF", "CRP"], True, True, True),
    "first_step_swapped": (["EGFR", "MEK", "ERK", "PROLIF"], False, False, True),  # J = 3/5
    "middle_step_swapped": (["KRAS", "PI3K", "ERK", "PROLIF"], False, False, True),  # J = 3/5
    "reordered_route": (["KRAS", "ERK", "MEK", "PROLIF"], False, False, True),  # J = 1
    "two_swapped": (["EGFR", "PI3K", "ERK", "PROLIF"], False, False, False),  # J = 2/6
    "other_terminal": (["KRAS", "MEK", "ERK", "CRP"], False, False, True),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("rubric", ["full", "step", "none"])
def test_rubrics_on_hand_made_chains(name, rubric):
    chain_b, *expected = CASES[name]
    a = hyp("a", BASE)
    b = hyp("b", chain_b, explanation="A differently worded account." if name == "reworded" else None)
    want = dict(zip(["full", "step", "none"], expected))[rubric]
    judge = ReferenceJudge(rubric)
    assert judge.same([(a, b)])[0] == want
    assert judge.same([(b, a)])[0] == want  # order-invariant


def test_step_components():
    a = hyp("a", BASE)
    pairs = [(a, hyp("b", c)) for c, *_ in CASES.values()]
    comp = ReferenceJudge("step").components(pairs)
    assert list(comp.columns) == ["initiating", "route", "terminal", "chain_nested", "jaccard", "same"]
    rows = dict(zip(CASES, comp.to_dict("records")))
    assert not rows["first_step_swapped"]["initiating"]
    assert rows["first_step_swapped"]["route"] and rows["first_step_swapped"]["terminal"]
    assert rows["middle_step_swapped"]["initiating"] and not rows["middle_step_swapped"]["route"]
    assert rows["other_terminal"]["initiating"] and rows["other_terminal"]["route"]
    assert not rows["other_terminal"]["terminal"]
    assert rows["downstream_biomarker"]["terminal"]
    assert rows["first_step_swapped"]["jaccard"] == pytest.approx(3 / 5)
    np.testing.assert_array_equal(comp["same"], comp["initiating"] & comp["route"] & comp["terminal"])


def test_order_invariance_on_all_pairs_of_cases():
    hs = [hyp(f"h{i}", c) for i, (c, *_) in enumerate(CASES.values())]
    pairs = list(itertools.combinations(hs, 2))
    for rubric in ("full", "step", "none"):
        judge = ReferenceJudge(rubric)
        np.testing.assert_array_equal(judge.same(pairs), judge.same([(b, a) for a, b in pairs]))


def test_components_are_symmetric_on_every_pair_of_short_chains():
    """Brute force over every chain of 3-4 distinct ids from four: each component is the same for
    (a, b) and (b, a), including equal-length chains where one terminal occurs inside the other chain
    ((KRAS, MEK, PROLIF) against (KRAS, PROLIF, ERK): a truncation seen from either side)."""
    ids = ["KRAS", "MEK", "ERK", "PROLIF"]
    chains = [list(c) for k in (3, 4) for c in itertools.permutations(ids, k)]
    hs = [hyp(f"h{i}", c) for i, c in enumerate(chains)]
    pairs = list(itertools.product(hs, hs))
    judge = ReferenceJudge("step")
    forward, backward = judge.components(pairs), judge.components([(b, a) for a, b in pairs])
    pd.testing.assert_frame_equal(forward, backward)
    a, b = hyp("a", ["KRAS", "MEK", "PROLIF"]), hyp("b", ["KRAS", "PROLIF", "ERK"])
    assert judge.components([(a, b)])["terminal"].item() and judge.components([(b, a)])["terminal"].item()
    longer = hyp("c", ["KRAS", "ERK", "MYC", "MEK"])  # the longer chain's terminal in the shorter does not count
    assert not judge.components([(a, longer)])["terminal"].item()


def test_is_subsequence():
    assert is_subsequence(["a", "c"], ["a", "b", "c"])
    assert not is_subsequence(["c", "a"], ["a", "b", "c"])
    assert is_subsequence([], ["a"])
    assert not is_subsequence(["a", "a"], ["a"])


def test_jaccard_threshold_and_bad_input():
    a, b = hyp("a", BASE), hyp("b", ["EGFR", "MEK", "ERK", "PROLIF"])
    assert ReferenceJudge("none", jaccard_threshold=0.6).same([(a, b)])[0]
    assert not ReferenceJudge("none", jaccard_threshold=0.61).same([(a, b)])[0]
    with pytest.raises(ValueError, match="rubric"):
        ReferenceJudge("strict")
    with pytest.raises(ValueError, match="jaccard_threshold"):
        ReferenceJudge("none", jaccard_threshold=1.5)
    with pytest.raises(ValueError, match=r"pairs\[0\] side a"):
        ReferenceJudge().same([("x", b)])


def test_no_pairs_give_an_empty_table_with_every_column():
    comp = ReferenceJudge("step").components([])
    assert list(comp.columns) == ["initiating", "route", "terminal", "chain_nested", "jaccard", "same"]
    assert len(comp) == 0 and ReferenceJudge().same([]).dtype == bool
