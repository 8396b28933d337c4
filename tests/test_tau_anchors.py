"""Anchors against hand-computed vectors: score10 and weight, the initial anchors and their cap,
densify exactly as the original reviewer selects (centred inclusive bucket, own pattern, nearest
top-up, present anchors dropped after selection, cache), the alternative modes, and the pass rule.

Every expected list below was worked out by hand from the table in the test, not by the code."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from mechaudit.tau.anchors import (
    anchor_papers,
    anchor_table,
    bucket_centre,
    pass_thresholds,
    passes,
    review_stats_from_ratings,
    score10_from_review_stats,
    select_bucket_anchors,
    select_initial_anchors,
)


def table(*rows):
    """An anchor table from ``(paper_id, pattern_id, score10, weight)`` tuples."""
    return pd.DataFrame(rows, columns=["paper_id", "pattern_id", "score10", "weight"])


def ids(frame):
    return list(frame["paper_id"])


# ---------------------------------------------------------------- densify, the original rule


def test_bucket_centre_is_the_nearest_half_point_with_even_rounding():
    assert [bucket_centre(s) for s in (1.0, 1.2, 1.3, 6.3, 9.74, 9.8, 10.0)] == [1.0, 1.0, 1.5, 6.5, 9.5, 10.0, 10.0]
    # exact halves of 2 * S go to the even neighbour, as Python's round in the original
    assert bucket_centre(6.25) == 6.0 and bucket_centre(6.75) == 7.0


def test_densify_bottom_of_scale_inclusive_bucket_own_pattern_only():
    # S_hint 1.3 -> centre 1.5 -> bucket [1.0, 2.0] with both ends in.
    t = table(("p1", "A", 1.0, 0.5), ("p2", "A", 1.5, 0.9), ("p3", "A", 2.0, 1.2), ("p4", "A", 2.01, 3.0),
              ("q1", "B", 1.4, 9.0))
    # own pattern in the bucket: p1, p2, p3 (p4 just outside); by weight: p3, p2, p1. q1 is
    # another pattern and never taken, however heavy.
    assert ids(select_bucket_anchors(t, 1.3, pattern_id="A")) == ["p3", "p2", "p1"]


def test_densify_top_of_scale_ties_by_score_then_nearest_top_up():
    # S_hint 9.8 -> centre 10.0 -> bucket [9.5, 10.5].
    t = table(("r1", "A", 10.0, 0.4), ("r2", "A", 9.5, 0.4), ("r3", "A", 8.9, 2.0), ("r4", "A", 9.2, 1.0),
              ("s1", "B", 9.9, 5.0))
    # in the bucket: r1 and r2 with equal weight -> lower score10 first: r2, r1 (paper_id alone
    # would put r1 first). One short: the nearest remaining own paper to 10.0 is r4 (0.8 < 1.1).
    assert ids(select_bucket_anchors(t, 9.8, pattern_id="A")) == ["r2", "r1", "r4"]


def test_densify_bucket_empty_in_own_pattern_tops_up_by_distance_then_weight():
    # S_hint 5.1 -> centre 5.0 -> bucket [4.5, 5.5]: empty in pattern A (u1 is pattern B).
    t = table(("t1", "A", 3.0, 1.0), ("t2", "A", 6.25, 0.5), ("t3", "A", 6.5, 2.0), ("t4", "A", 3.75, 0.1),
              ("t5", "A", 7.75, 9.0), ("u1", "B", 5.0, 9.0))
    # distances to 5.0: t2 1.25, t4 1.25, t3 1.5, t1 2.0, t5 2.75; the tie t2/t4 goes to the heavier t2.
    assert ids(select_bucket_anchors(t, 5.1, pattern_id="A")) == ["t2", "t4", "t3"]


TOP_UP = table(("v1", "A", 6.0, 1.0), ("v2", "A", 6.9, 3.0), ("v3", "A", 7.2, 2.0), ("v4", "A", 5.6, 2.0),
               ("v5", "A", 8.0, 0.1), ("w1", "B", 6.5, 9.0))


def test_densify_top_up_and_present_anchor_dropped_after_selection():
    # S_hint 6.3 -> centre 6.5 -> bucket [6.0, 7.0]: v2 (3.0), v1 (1.0); top-up 1 by distance
    # to 6.5 from v3 (0.7), v4 (0.9), v5 (1.5): v3. Selection v2, v1, v3.
    assert ids(select_bucket_anchors(TOP_UP, 6.3, pattern_id="A")) == ["v2", "v1", "v3"]
    # v2 is already an anchor: it is dropped *after* selection, so only two come back although
    # v4 is free.
    assert ids(select_bucket_anchors(TOP_UP, 6.3, exclude=["v2", "v5"], pattern_id="A")) == ["v1", "v3"]
    # all selected already present: nothing is added (the critic then skips the second round)
    assert ids(select_bucket_anchors(TOP_UP, 6.3, exclude=["v1", "v2", "v3"], pattern_id="A")) == []


def test_densify_without_pattern_selects_nothing():
    assert ids(select_bucket_anchors(TOP_UP, 6.3)) == []
    assert ids(select_bucket_anchors(TOP_UP, 6.3, pattern_id="Z")) == []


def test_densify_selection_is_cached_by_pattern_centre_size_and_count():
    cache = {}
    first = select_bucket_anchors(TOP_UP, 6.3, exclude=["v2"], pattern_id="A", cache=cache)
    assert ids(first) == ["v1", "v3"]
    assert cache == {("A", 6.5, 1.0, 3): ["v2", "v1", "v3"]}  # stored before present anchors are dropped
    # another hint with the same centre reuses the stored selection, even if the table changed
    moved = TOP_UP.copy()
    moved.loc[moved["paper_id"] == "v4", ["score10", "weight"]] = [6.4, 50.0]
    assert ids(select_bucket_anchors(moved, 6.4, pattern_id="A", cache=cache)) == ["v2", "v1", "v3"]
    assert ids(select_bucket_anchors(moved, 6.4, pattern_id="A")) == ["v4", "v2", "v1"]  # without the cache
    select_bucket_anchors(TOP_UP, 6.3, pattern_id="A", bucket_count=2, cache=cache)
    assert cache[("A", 6.5, 1.0, 2)] == ["v2", "v1"] and len(cache) == 2


def test_densify_alternative_modes():
    # fill: present anchors left out first, then bucket own (v1), bucket other patterns (w1),
    # then own nearest (v3).
    assert ids(select_bucket_anchors(TOP_UP, 6.3, exclude=["v2"], pattern_id="A", mode="fill")) == ["v1", "w1", "v3"]
    # floor (this book's first version): bucket [6, 7) holding 6.3, own pattern first then others.
    assert ids(select_bucket_anchors(TOP_UP, 6.3, exclude=["v2"], pattern_id="A", mode="floor")) == ["v1", "w1"]
    with pytest.raises(ValueError, match="densify mode"):
        select_bucket_anchors(TOP_UP, 6.3, pattern_id="A", mode="nearest")


# ---------------------------------------------------------------- initial anchors


def test_initial_anchor_cap_keeps_first_by_weight_then_score_then_id():
    # pattern A: four papers of equal weight (all are quantile anchors: n <= 9); exemplar y from
    # pattern B has the same weight and the lowest score10.
    t = table(("c", "A", 5.0, 1.0), ("b", "A", 4.0, 1.0), ("d", "A", 4.0, 1.0), ("a", "A", 3.0, 1.0),
              ("y", "B", 2.0, 1.0), ("e", "A", 8.0, 2.0))
    # selection: a, b, d, c, e (by score10, paper_id), then y; cap 3 by (-weight, score10, id): e, y, a
    assert ids(select_initial_anchors(t, "A", exemplar_ids=["y"], max_initial=3)) == ["e", "y", "a"]
    # under the cap nothing is reordered
    assert ids(select_initial_anchors(t, "A", exemplar_ids=["y"])) == ["a", "b", "d", "c", "e", "y"]
    # one over the cap is cut too
    assert ids(select_initial_anchors(t, "A", exemplar_ids=["y"], max_initial=5)) == ["e", "y", "a", "b", "d"]
    # at most two exemplars, in the order given
    more = pd.concat([t, table(("z", "B", 2.5, 1.0), ("w", "B", 2.6, 1.0))], ignore_index=True)
    assert ids(select_initial_anchors(more, "A", exemplar_ids=["w", "y", "z"]))[-3:] == ["e", "w", "y"]


def test_initial_quantile_indices_round_half_to_even():
    ten = table(*[(f"k{i}", "A", 1.0 + i, 1.0) for i in range(10)])
    # n = 10: q * 9 = 0.45, 1.35, 2.25, 3.15, 4.5, 5.85, 6.75, 7.65, 8.55 -> 0, 1, 2, 3, 4, 6, 7, 8, 9
    want = ["k0", "k1", "k2", "k3", "k4", "k6", "k7", "k8", "k9"]
    assert ids(select_initial_anchors(ten, "A")) == want
    # exemplars: unknown and already chosen ids are skipped, at most two are added
    assert ids(select_initial_anchors(ten, "A", ["nope", "k0", "k5"])) == want + ["k5"]
    nine = ten.iloc[:9]
    assert ids(select_initial_anchors(nine, "A")) == [f"k{i}" for i in range(9)]  # n <= 9: all


# ---------------------------------------------------------------- score10, weight, pool


def test_score10_and_weight_hand_values():
    stats = review_stats_from_ratings([10, 7, 4])
    assert stats == {"avg_score": pytest.approx(0.7), "highest_score": 1.0, "lowest_score": 0.4,
                     "review_count": 3}
    score10, weight = score10_from_review_stats(stats)
    assert score10 == pytest.approx(7.3)  # 1 + 9 * 0.7
    assert weight == pytest.approx(math.log(4) / (1 + 9 * 0.6))
    # a negative spread (highest < lowest) counts as none
    assert score10_from_review_stats({"avg_score": 0.5, "review_count": 2, "highest_score": 0.4,
                                      "lowest_score": 0.6})[1] == pytest.approx(math.log(3))
    with pytest.raises(ValueError, match="'avg_score' must be in"):
        score10_from_review_stats({"avg_score": 1.2, "review_count": 2})
    with pytest.raises(ValueError, match="'review_count' must be >= 0"):
        score10_from_review_stats({"avg_score": 0.5, "review_count": -1})
    with pytest.raises(ValueError, match="review_count"):
        score10_from_review_stats({"avg_score": 0.5})
    with pytest.raises(ValueError, match="^review_stats_from_ratings needs at least one rating$"):
        review_stats_from_ratings([])
    # no review yet: allowed, and such a paper weighs nothing (log 1 = 0)
    assert score10_from_review_stats({"avg_score": 0.5, "review_count": 0}) == (5.5, 0.0)


def test_every_rating_maps_as_in_the_original():
    unit = {10: 1.0, 9: 0.95, 8: 0.85, 7: 0.7, 6: 0.6, 5: 0.5, 4: 0.4, 3: 0.3, 2: 0.2, 1: 0.1}
    for rating, value in unit.items():
        assert review_stats_from_ratings([rating])["avg_score"] == value
    with pytest.raises(ValueError, match="rating 0"):
        review_stats_from_ratings([0])


def test_anchor_papers_keep_given_values_derive_missing_and_skip_unreviewed():
    papers = [{"paper_id": "g", "score10": 4.0, "weight": 0.3, "review_stats": {"avg_score": 1.0, "review_count": 9}},
              {"paper_id": "d", "review_stats": {"avg_score": 0.5, "review_count": 1}},
              {"paper_id": "n"}]
    papers.append({"paper_id": "s", "score10": 9.0, "review_stats": {"avg_score": 0.5, "review_count": 1}})
    got = {p["paper_id"]: (p["score10"], p["weight"]) for p in anchor_papers(papers)}
    # "s" has a score10 but no weight: both come from its review stats
    assert got == {"g": (4.0, 0.3), "d": (5.5, pytest.approx(math.log(2))), "s": (5.5, pytest.approx(math.log(2)))}
    assert "score10" not in papers[1]  # the input is not modified


# ---------------------------------------------------------------- pass rule


def test_pass_rule_count_and_mean_decide_at_the_boundary():
    th = {"q50": 5.0, "q75": 7.0}
    assert passes([7.0, 7.0, 1.0], th)  # exactly two at q75, mean exactly q50
    assert passes([7.0, 6.99, 10.0], th)  # two at q75: 7.0 and 10.0
    assert not passes([6.99, 6.99, 10.0], th)  # one at q75, although the mean is 7.99
    assert not passes([7.0, 7.0, 0.97], th)  # mean 4.99 < q50


def test_pass_thresholds_pattern_from_twenty_papers_else_global():
    rows = [(f"a{i}", "A", 1.0 + 0.1 * i, 1.0) for i in range(20)] + [(f"b{i}", "B", 9.0, 1.0) for i in range(5)]
    t = table(*rows)
    own = pass_thresholds(t, "A")  # 20 papers: its own quantiles of 1.0..2.9
    assert own == {"q50": pytest.approx(1.95), "q75": pytest.approx(2.425), "source": "pattern"}
    few = pass_thresholds(t.iloc[1:], "A")  # 19 papers: global quantiles over all 24
    assert few["source"] == "global"
    assert few["q50"] == pytest.approx(pd.Series(t["score10"].iloc[1:]).quantile(0.5))


# ---------------------------------------------------------------- card caps and forbidden terms


@pytest.mark.parametrize("field", ["problem", "method", "contrib"])
def test_card_field_at_cap_is_kept_and_one_over_is_cut_to_the_cap(field):
    from mechaudit.tau.cards import FIELD_CAPS, build_paper_card

    cap = FIELD_CAPS[field]
    assert cap == {"problem": 220, "method": 280, "contrib": 320}[field]
    others = {f: "x" for f in ("problem", "method", "contrib")}
    exact = getattr(build_paper_card({**others, field: "a" * cap}), field)
    assert exact == "a" * cap  # no ellipsis at exactly the cap
    over = getattr(build_paper_card({**others, field: "a" * (cap + 1)}), field)
    assert over == "a" * (cap - 1) + "\u2026" and len(over) == cap
    # a cut that ends on a space drops the space: the card gets shorter, never longer
    spaced = getattr(build_paper_card({**others, field: "a" * (cap - 2) + " bbbb"}), field)
    assert spaced == "a" * (cap - 2) + "\u2026"


def test_url_is_a_forbidden_term_and_masked_as_a_whole_word():
    from mechaudit.llm import BlindnessError, check_blind
    from mechaudit.tau.cards import FORBIDDEN_TERMS, build_story_card

    assert "url" in FORBIDDEN_TERMS
    card = build_story_card({"problem_framing": "Fetch the URL, then curl it", "method_skeleton": "m",
                             "innovation_claims": "c"})
    assert card.problem == "Fetch the [masked], then curl it"
    with pytest.raises(BlindnessError, match="url"):
        check_blind("see url: x", FORBIDDEN_TERMS)


def test_anchor_table_lists_the_usable_papers_with_the_four_columns():
    stats = {"avg_score": 0.6, "review_count": 4}
    papers = [{"paper_id": "given", "pattern_id": "P1", "score10": 7.5, "weight": 0.5, "title": "t"},
              {"paper_id": "no-reviews", "pattern_id": "P1"},
              {"paper_id": "derived", "pattern_id": "P2", "review_stats": stats}]
    got = anchor_table(papers)
    score10, weight = score10_from_review_stats(stats)
    expected = table(("given", "P1", 7.5, 0.5), ("derived", "P2", score10, weight))
    pd.testing.assert_frame_equal(got, expected)
    empty = anchor_table([])
    assert empty.empty and list(empty.columns) == ["paper_id", "pattern_id", "score10", "weight"]


@pytest.mark.parametrize("avg", [0.0, 1.0])
def test_review_scores_at_both_ends_of_the_scale_are_accepted(avg):
    assert score10_from_review_stats({"avg_score": avg, "review_count": 3}) == (1.0 + 9.0 * avg, math.log(4.0))


def test_fill_mode_never_takes_a_present_anchor_from_another_pattern():
    # bucket [6.0, 7.0] of 6.3: own v2 (3.0), v1 (1.0); w1 of pattern B is present, so the third is
    # the own pattern's nearest to 6.5, v3 (0.7), not w1.
    assert ids(select_bucket_anchors(TOP_UP, 6.3, exclude=["w1"], pattern_id="A", mode="fill")) == ["v2", "v1", "v3"]


def test_initial_anchors_of_a_small_pattern_are_all_its_papers():
    # no more papers than quantiles: every paper, by score, even when the quantiles would skip one
    pool = table(("a2", "A", 7.0, 1.0), ("a1", "A", 3.0, 1.0), ("b1", "B", 5.0, 1.0))
    got = select_initial_anchors(pool, "A", quantiles=(0.0, 0.1))
    assert ids(got) == ["a1", "a2"] and list(got.index) == [0, 1] and list(got.columns) == list(pool.columns)
    assert ids(select_initial_anchors(pool, "B")) == ["b1"]
    with pytest.raises(ValueError, match="^pattern 'Z' has no papers with review stats$"):
        select_initial_anchors(pool, "Z")


def test_floor_mode_buckets_scale_with_the_bucket_size():
    # size 2: 6.3 lies in [6, 8): own v2 (3.0), v3 (2.0), v1 (1.0) by weight, then w1 of pattern B
    got = select_bucket_anchors(TOP_UP, 6.3, pattern_id="A", bucket_size=2.0, bucket_count=4, mode="floor")
    assert ids(got) == ["v2", "v3", "v1", "w1"]
