"""Every threshold and limit of the blind reviewer (``mechaudit.tau``) at, just below and just above
its boundary.

The expected values come from the original reviewer's semantics (``shared/reference/
idea2paper-review.md``: pass rule, pattern minimum of 20 papers, 25-word rationales, card caps
220/280/320, quantile indices ``round(q (n - 1))``, the densify bucket and triggers, the "loss <=
min + 1.92" band, the |delta| bins of the tau sampler) and were worked out by hand from the small
tables below, never read back from the code under test.
"""

from __future__ import annotations

import statistics

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from test_tau_anchors import ids, table

from mechaudit.tau.anchors import (
    PASS_MIN_PATTERN_PAPERS,
    pass_thresholds,
    passes,
    select_bucket_anchors,
    select_initial_anchors,
)
from mechaudit.tau.cards import ELLIPSIS, FIELD_CAPS, build_paper_card, build_story_card
from mechaudit.tau.critic import densify_reasons
from mechaudit.tau.fitting import DELTA_BINS, sample_pairs
from mechaudit.tau.inference import CI_DELTA, band, infer_score, monotonic_violations
from mechaudit.tau.judge import MAX_RATIONALE_WORDS, Comparison, judge_schema, valid_rationale
from mechaudit.tau.rubric import RUBRIC_VERSION

# ---------------------------------------------------------------- pass rule: 2 of 3 >= q75, mean >= q50

TH = {"q50": 5.0, "q75": 7.0}


@pytest.mark.parametrize(("scores", "expected", "why"), [
    ([7.0, 7.0, 1.0], True, "exactly two roles at q75 (a tie counts) and the mean exactly q50"),
    ([7.0, 7.0, 7.0], True, "all three at q75"),
    ([7.0, np.nextafter(7.0, 0), 9.0], True, "two at or above q75: 7.0 and 9.0"),
    ([np.nextafter(7.0, 0), np.nextafter(7.0, 0), 10.0], False, "only one role at q75"),
    ([7.0, 6.0, 6.0], False, "one role at q75 although the mean 6.33 is above q50"),
    ([7.0, 7.0, 0.99], False, "the mean 4.997 is just below q50"),
    ([7.0, 7.0, 1.01], True, "the mean 5.003 is just above q50"),
])
def test_pass_rule_at_the_q75_count_and_the_q50_mean(scores, expected, why):
    assert passes(scores, TH) is expected, why


def test_pass_rule_needs_two_roles_not_three():
    # the reviewer passes a story on two strong roles; requiring all three is another reviewer
    assert passes([9.0, 9.0, 1.0], {"q50": 1.0, "q75": 8.0})
    assert not passes([9.0, 7.9, 1.0], {"q50": 1.0, "q75": 8.0})


def _pattern_table(n_own: int) -> pd.DataFrame:
    """Pattern A: ``n_own`` papers scored 1, 2, ..., n_own; pattern B: 30 papers at 10.0."""
    rows = [(f"a{i}", "A", float(i + 1), 1.0) for i in range(n_own)]
    rows += [(f"b{i}", "B", 10.0, 1.0) for i in range(30)]
    return table(*rows)


@pytest.mark.parametrize(("n_own", "source"), [(19, "global"), (20, "pattern"), (21, "pattern")])
def test_pass_thresholds_use_the_pattern_from_exactly_twenty_papers(n_own, source):
    assert PASS_MIN_PATTERN_PAPERS == 20  # the original: "pattern with >= 20 papers, else global"
    t = _pattern_table(n_own)
    got = pass_thresholds(t, "A")
    values = list(t.score10[t.pattern_id == "A"]) if source == "pattern" else list(t.score10)
    # an independent quantile: statistics' inclusive method is the linear interpolation numpy uses
    q25, q50, q75 = statistics.quantiles(values, n=4, method="inclusive")
    assert got == {"q50": pytest.approx(q50), "q75": pytest.approx(q75), "source": source}


def test_pass_thresholds_at_twenty_papers_by_hand():
    # 1..20: q50 = (10 + 11) / 2, q75 at position 0.75 * 19 = 14.25 -> 15 + 0.25
    assert pass_thresholds(_pattern_table(20), "A") == {"q50": 10.5, "q75": 15.25, "source": "pattern"}
    # 19 papers: the 49 scores of both patterns (1..19 and thirty 10.0): median 10.0
    assert pass_thresholds(_pattern_table(19), "A")["q50"] == 10.0


# ---------------------------------------------------------------- rationale: at most 25 words


@pytest.mark.parametrize(("words", "ok"), [(MAX_RATIONALE_WORDS - 1, True), (MAX_RATIONALE_WORDS, True),
                                           (MAX_RATIONALE_WORDS + 1, False)])
def test_rationale_of_25_words_is_valid_and_26_is_not(words, ok):
    assert MAX_RATIONALE_WORDS == 25
    text = " ".join(["clear"] * words)
    entry = {"anchor_id": "A1", "judgement": "tie", "strength": "weak", "rationale": text}
    if ok:
        assert valid_rationale(text) == text
        assert Comparison.model_validate(entry).rationale == text
    else:
        with pytest.raises(ValueError, match="26 words; at most 25"):
            valid_rationale(text)
        with pytest.raises(ValidationError):
            Comparison.model_validate(entry)


# ---------------------------------------------------------------- card caps 220 / 280 / 320


@pytest.mark.parametrize("field", ["problem", "method", "contrib"])
@pytest.mark.parametrize("delta", [-1, 0, 1, 2])
def test_card_fields_are_cut_to_their_cap(field, delta):
    cap = {"problem": 220, "method": 280, "contrib": 320}[field]
    assert FIELD_CAPS[field] == cap
    text = "a" * (cap + delta)
    got = getattr(build_paper_card({"problem": "p", "method": "m", "contrib": "c", field: text}), field)
    if delta <= 0:
        assert got == text  # at or under the cap: kept whole, no ellipsis
    else:
        assert got == "a" * (cap - 1) + ELLIPSIS and len(got) == cap


def test_story_card_caps_are_the_paper_cards():
    story = {"problem_framing": "p" * 221, "method_skeleton": "m" * 280, "innovation_claims": "c\n" * 200}
    card = build_story_card(story)
    assert card.problem == "p" * 219 + ELLIPSIS
    assert card.method == "m" * 280
    # newlines become spaces before the cut: "c c c ..." is 399 characters, cut to 319 + ellipsis
    assert card.contrib == ("c " * 160)[:319].rstrip() + ELLIPSIS and len(card.contrib) <= 320


# ---------------------------------------------------------------- the judge's reply: ids A1..An once each


def _reply(*anchor_ids):
    return {"rubric_version": RUBRIC_VERSION, "comparisons": [
        {"anchor_id": a, "judgement": "better", "strength": "weak", "rationale": "ok"} for a in anchor_ids]}


def test_reply_must_name_every_anchor_exactly_once():
    assert len(judge_schema(2).model_validate(_reply("A2", "A1")).comparisons) == 2
    for bad in (("A1", "A1"), ("A1",), ("A1", "A2", "A3"), ("A1", "A1", "A2")):
        with pytest.raises(ValidationError, match="exactly A1..A2"):
            judge_schema(2).model_validate(_reply(*bad))


# ---------------------------------------------------------------- score inference


ANCHORS = [{"anchor_id": "A1", "score10": 5.0, "weight": 1.0}]


def test_a_repeated_anchor_id_in_the_comparisons_takes_the_last_one():
    first = {"anchor_id": "A1", "judgement": "better", "strength": "strong"}
    last = {"anchor_id": "A1", "judgement": "worse", "strength": "strong"}
    both, _ = infer_score(ANCHORS, [first, last], tau=1.0)
    only_last, _ = infer_score(ANCHORS, [last], tau=1.0)
    only_first, _ = infer_score(ANCHORS, [first], tau=1.0)
    assert both == only_last == 1.0  # "worse" than a 5.0 anchor: saturates at the bottom
    assert only_first == 10.0
    assert infer_score(ANCHORS, [last, first], tau=1.0)[0] == 10.0


def test_band_is_inclusive_at_min_plus_1_92():
    grid = np.array([1.0, 2.0, 3.0, 4.0])
    m = 2.0
    loss = np.array([m + CI_DELTA, m, np.nextafter(m + CI_DELTA, np.inf), np.nextafter(m + CI_DELTA, 0)])
    assert CI_DELTA == 1.92
    assert band(grid, loss, CI_DELTA) == (1.0, 4.0)  # 3.0 is just outside, 1.0 exactly on the edge
    assert band(grid, np.array([m + CI_DELTA + 1e-9, m, m, m + 5]), CI_DELTA) == (2.0, 3.0)


def test_flat_loss_takes_the_first_grid_point():
    # weight 0: every grid point has loss 0, the first minimum (1.0) wins, as in the original
    score, diag = infer_score([{"anchor_id": "A1", "score10": 6.0, "weight": 0.0}],
                              [{"anchor_id": "A1", "judgement": "better", "strength": "weak"}], tau=1.0)
    assert score == 1.0 and diag["saturated_at"] == "low"


@pytest.mark.parametrize(("ys", "expected"), [
    ([0.0, 1.0], 1),  # worse than the low anchor, better than the high one: a violation
    ([1.0, 0.0], 0),  # better than the low anchor, worse than the high one: consistent
    ([0.5, 1.0], 1),  # a rise of 0.5 > 0.1
    ([0.5, 0.5], 0),
    ([0.0, 0.1], 0),  # a rise of exactly 0.1 is not more than 0.1
    ([0.0, np.nextafter(0.1, 1.0)], 1),  # just above
])
def test_monotonic_violation_is_a_rise_of_more_than_a_tenth(ys, expected):
    assert monotonic_violations(np.array([3.0, 7.0]), np.array(ys)) == expected


# ---------------------------------------------------------------- densify triggers


@pytest.mark.parametrize(("diag", "reasons"), [
    ({"loss": 0.05, "monotonic_violations": 0, "avg_strength": 1.0}, []),
    ({"loss": float(np.nextafter(0.05, 1)), "monotonic_violations": 0, "avg_strength": 1.0}, ["loss"]),
    ({"loss": 0.0, "monotonic_violations": 1, "avg_strength": 1.0}, ["monotonic"]),
    ({"loss": 0.0, "monotonic_violations": 0, "avg_strength": 0.35}, []),
    ({"loss": 0.0, "monotonic_violations": 0, "avg_strength": float(np.nextafter(0.35, 0))}, ["strength"]),
])
def test_densify_triggers_at_their_thresholds(diag, reasons):
    assert densify_reasons(diag) == reasons


# ---------------------------------------------------------------- initial anchors: round(q (n - 1))


def _ladder(n: int) -> pd.DataFrame:
    return table(*[(f"k{i:02d}", "A", 1.0 + 0.5 * i, 1.0) for i in range(n)])


@pytest.mark.parametrize(("n", "positions"), [
    (9, list(range(9))),  # n <= 9 quantiles: every paper
    (10, [0, 1, 2, 3, 4, 6, 7, 8, 9]),  # q * 9 = 0.45 1.35 2.25 3.15 4.5 5.85 6.75 7.65 8.55
    # q * 10 = 0.5 1.5 2.5 3.5 5 6.5 7.5 8.5 9.5: halves go to the even neighbour (Python's round, as
    # the original): 0 2 2 4 5 6 8 8 10, repeats kept once; floor would give 0 1 2 3 5 6 7 8 9
    (11, [0, 2, 4, 5, 6, 8, 10]),
])
def test_quantile_anchor_positions(n, positions):
    assert ids(select_initial_anchors(_ladder(n), "A")) == [f"k{i:02d}" for i in positions]


def test_nine_quantiles_plus_two_exemplars_are_not_cut():
    # 9 + 2 = 11 = the cap: nothing is reordered; a 12th would cut to the first 11 by weight
    t = pd.concat([_ladder(20), table(("x", "B", 2.0, 9.0), ("y", "B", 3.0, 8.0))], ignore_index=True)
    got = ids(select_initial_anchors(t, "A", exemplar_ids=["y", "x"]))
    quantile = [f"k{i:02d}" for i in (1, 3, 5, 7, 10, 12, 14, 16, 18)]  # round(q * 19)
    assert got == quantile + ["y", "x"]
    capped = ids(select_initial_anchors(t, "A", exemplar_ids=["y", "x"], max_initial=10))
    assert capped[:2] == ["x", "y"] and len(capped) == 10  # over the cap: by weight first


# ---------------------------------------------------------------- densify: the bucket and its modes


#: pattern A around 6.5: bucket [6.0, 7.0] for a hint of 6.3 (centre round(12.6) / 2 = 6.5)
POOL = table(
    ("lo", "A", 6.0, 1.0),       # on the lower edge
    ("hi", "A", 7.0, 2.0),       # on the upper edge
    ("out", "A", np.nextafter(7.0, 8.0), 50.0),  # just above the bucket
    ("below", "A", np.nextafter(6.0, 0.0), 60.0),  # just below
    ("far", "A", 9.5, 30.0),
    ("q_in", "B", 6.5, 0.5),     # another pattern, inside the bucket
    ("q_far", "B", 9.9, 100.0),  # another pattern, far off
)


def test_original_bucket_is_inclusive_at_both_edges_and_own_pattern_only():
    # inside: hi (w 2), lo (w 1); top-up from the own pattern's nearest: just below 6.0 and just above
    # 7.0 lie equally far from 6.5 (0.5 + 1 ulp), the heavier first -> "below" (w 60, "out" w 50)
    got = ids(select_bucket_anchors(POOL, 6.3, pattern_id="A", bucket_count=3))
    assert got == ["hi", "lo", "below"]
    assert ids(select_bucket_anchors(POOL, 6.3, pattern_id="A", bucket_count=2)) == ["hi", "lo"]
    # present anchors are dropped after the selection: fewer come back, none from elsewhere
    assert ids(select_bucket_anchors(POOL, 6.3, exclude=["hi"], pattern_id="A", bucket_count=2)) == ["lo"]


def test_fill_mode_never_takes_another_patterns_paper_outside_the_bucket():
    # own bucket by weight (hi, lo), other patterns' bucket (q_in), then own nearest (below, out, far)
    got = ids(select_bucket_anchors(POOL, 6.3, pattern_id="A", bucket_count=7, mode="fill"))
    assert got == ["hi", "lo", "q_in", "below", "out", "far"]
    assert "q_far" not in got
    assert ids(select_bucket_anchors(POOL, 6.3, exclude=["hi"], pattern_id="A", bucket_count=3,
                                     mode="fill")) == ["lo", "q_in", "below"]


def test_floor_mode_orders_by_weight_within_the_half_open_bucket():
    # bucket [6, 7) holding 6.3: lo (6.0) is in, "below" (5.999...) and hi (7.0) are not
    pool = pd.concat([POOL, table(("mid_a", "A", 6.4, 0.2), ("mid_z", "A", 6.6, 3.0))], ignore_index=True)
    got = ids(select_bucket_anchors(pool, 6.3, pattern_id="A", bucket_count=5, mode="floor"))
    # own pattern by weight: mid_z (3.0), lo (1.0), mid_a (0.2); then other patterns: q_in
    assert got == ["mid_z", "lo", "mid_a", "q_in"]
    assert ids(select_bucket_anchors(pool, 6.3, pattern_id="A", bucket_count=2, mode="floor")) == ["mid_z", "lo"]


# ---------------------------------------------------------------- tau sampler: |delta| bins


def test_sampler_bins_are_closed_below_and_open_above():
    assert DELTA_BINS == (0.0, 0.25, 0.75, 1.5, 3.0)
    # differences from 5.0: 0.25, 0.75, 1.5 and 3.0 exactly (all exact binary fractions)
    papers = table(("p0", "A", 5.0, 1.0), ("p1", "A", 5.25, 1.0), ("p2", "A", 5.75, 1.0),
                   ("p3", "A", 6.5, 1.0), ("p4", "A", 8.0, 1.0), ("p5", "A", 4.9, 1.0))
    pairs = sample_pairs(papers, n_pairs=400, seed=1, max_rounds=5)
    got = {frozenset((a, b)): (abs(d), k) for a, b, d, k in zip(pairs.a, pairs.b, pairs.delta, pairs.bin)}
    assert got[frozenset(("p0", "p1"))] == (0.25, 1)
    assert got[frozenset(("p0", "p2"))] == (0.75, 2)
    assert got[frozenset(("p0", "p3"))] == (1.5, 3)
    assert frozenset(("p0", "p4")) not in got  # |delta| = 3.0: dropped
    assert frozenset(("p4", "p5")) not in got  # 3.1: dropped
    assert got[frozenset(("p1", "p4"))][1] == 3  # 2.75
    for d, k in got.values():
        assert DELTA_BINS[k] <= d < DELTA_BINS[k + 1]


@pytest.mark.parametrize(("n_pairs", "same_per_bin"), [
    (8, [2, 2, 2, 2]),   # 2 per bin: 0.8 * 2 = 1.6 rounds to 2 (floor: 1)
    (10, [2, 2, 2, 2]),  # 3, 3, 2, 2 per bin: 2.4 -> 2 and 1.6 -> 2
    (12, [2, 2, 2, 2]),  # 3 per bin: 2.4 -> 2
    (14, [3, 3, 2, 2]),  # 4, 4, 3, 3 per bin: 3.2 -> 3 and 2.4 -> 2
    (20, [4, 4, 4, 4]),  # 5 per bin: exactly 4
])
def test_sampler_same_pattern_share_is_rounded_not_floored(n_pairs, same_per_bin):
    from mechaudit.tau.fitting import _quotas

    quota = _quotas(n_pairs, 4, 0.8)
    assert sum(quota.values()) == n_pairs
    assert [quota[(b, True)] for b in range(4)] == same_per_bin
