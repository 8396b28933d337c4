"""Tests of mechaudit.divergence: hand-computed values, brute-force cross-checks, invariances."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import comb

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechaudit.divergence import (
    comparison_matrix,
    design_counts,
    divergence_matrix,
    exact_test_feasible,
    extra_divergence,
    matched_pairs,
    monte_carlo_permutation_test,
    permutation_test,
    run_divergence,
    same_depth_divergence,
    split_extras,
    split_memberships,
)


@dataclass(frozen=True)
class H:
    """Minimal stand-in for a delivered hypothesis: only the lineage and a mechanism label."""

    opening_id: str | None
    mechanism: str = "m"


def random_matrix(rng: np.random.Generator, n: int, grid: int | None = None) -> np.ndarray:
    """Symmetric zero-diagonal matrix, uniform in [0, 1] or on the grid {0, 1/grid, ..., 1}."""
    A = rng.random((n, n)) if grid is None else rng.integers(0, grid + 1, (n, n)) / grid
    A = np.triu(A, 1)
    return A + A.T


# --------------------------------------------------------------------------- independent brute force


def naive_extra(D: np.ndarray, group_a: set[int]) -> float:
    """Extra divergence by looping over run pairs (independent of the vectorised code)."""
    cross, within = [], []
    n = len(D)
    for i in range(n):
        for j in range(i + 1, n):
            (within if (i in group_a) == (j in group_a) else cross).append(D[i][j])
    return sum(cross) / len(cross) - sum(within) / len(within)


def brute_force_p(Ds: list[np.ndarray], n_a: int, ordered: bool, tol: float = 1e-9) -> tuple[float, float]:
    """(observed mean extra, two-sided p) by itertools over every combination of splits."""
    n = len(Ds[0])
    splits = list(itertools.combinations(range(n), n_a))
    if not ordered:
        splits = [s for s in splits if 0 in s] if 2 * n_a == n else splits
    values = [[naive_extra(D, set(s)) for s in splits] for D in Ds]
    observed = sum(naive_extra(D, set(range(n_a))) for D in Ds) / len(Ds)
    k = len(Ds)
    hits = total = 0
    for combo in itertools.product(*values):
        total += 1
        hits += abs(sum(combo) / k) >= abs(observed) - tol
    return observed, hits / total


# --------------------------------------------------------------------------- run divergence


def test_run_divergence_values() -> None:
    assert run_divergence(np.array([True, True, False, False, False])) == pytest.approx(0.6)
    assert run_divergence(np.array([1, 1, 1])) == 0.0
    assert run_divergence(np.array([False])) == 1.0


@pytest.mark.parametrize(
    "bad", [np.array([], dtype=bool), np.array([0.5, 1.0]), np.array([np.nan, 1.0]), np.ones((2, 2), bool)]
)
def test_run_divergence_bad_input(bad: np.ndarray) -> None:
    with pytest.raises(ValueError):
        run_divergence(bad)


# --------------------------------------------------------------------------- matching and counting


def test_matched_pairs_all_cross_pairs_per_opening() -> None:
    a = [H("o1", "x"), H("o1", "y"), H("o2"), H(None)]
    b = [H("o1", "x"), H("o1", "z"), H("o1", "w"), H("o3"), H(None)]
    pairs = matched_pairs(a, b)
    assert len(pairs) == 2 * 3  # o1: 2 x 3 cross pairs; o2, o3 unmatched; None never matches
    assert pairs[0] == (a[0], b[0]) and pairs[-1] == (a[1], b[2])
    assert all(x.opening_id == y.opening_id == "o1" for x, y in pairs)


def test_design_counts_paper_design() -> None:
    """4 instances x depths {0, 1, 5} x 5 runs: 60 runs and 420 run pairs, as in the paper."""
    rng = np.random.default_rng(0)
    runs_by_instance = {}
    expected_matched = 0
    for inst in "ABCD":
        runs = []
        for _ in range(15):
            per_opening = rng.integers(1, 4, size=5)  # 1-3 delivered hypotheses per opening
            runs.append([H(f"{inst}{o}") for o in range(5) for _ in range(per_opening[o])])
        runs_by_instance[inst] = runs
        for ra, rb in itertools.combinations(runs, 2):
            expected_matched += sum(
                sum(h.opening_id == f"{inst}{o}" for h in ra) * sum(h.opening_id == f"{inst}{o}" for h in rb)
                for o in range(5)
            )
    counts = design_counts(runs_by_instance)
    assert counts.runs == 60
    assert counts.run_pairs == 420 == 4 * (3 * comb(5, 2) + 3 * 5 * 5)
    assert counts.matched_pairs == expected_matched


def test_divergence_matrix_batched_and_correct() -> None:
    runs = [
        [H("o1", "a"), H("o2", "b")],
        [H("o1", "a"), H("o2", "c")],
        [H("o1", "d"), H("o2", "c"), H("o2", "b")],
    ]
    calls: list[int] = []

    def same_fn(pairs: list) -> np.ndarray:
        calls.append(len(pairs))
        return np.array([x.mechanism == y.mechanism for x, y in pairs])

    D = divergence_matrix(runs, same_fn)
    assert calls == [2 + 3 + 3]  # one batched call over all matched pairs
    expected = np.array([[0, 0.5, 2 / 3], [0.5, 0, 2 / 3], [2 / 3, 2 / 3, 0]])
    np.testing.assert_allclose(D, expected)


def test_undecided_llm_pairs_are_left_out_not_counted_as_different() -> None:
    """NaN verdicts (undecided judge pairs) leave their run pair's divergence; the decided pairs
    are mixed, so counting NaN as "different" (or as "same") gives another value."""
    runs = [[H("o1"), H("o2"), H("o3"), H("o4")], [H("o1"), H("o2"), H("o3"), H("o4")]]
    verdicts = np.array([1.0, 0.0, np.nan, np.nan])  # decided: one same, one different
    D = divergence_matrix(runs, lambda pairs: verdicts)
    assert D[0, 1] == D[1, 0] == pytest.approx(0.5)  # NaN as different: 0.75; as same: 0.25
    all_undecided = np.array([np.nan, np.nan, np.nan, np.nan])
    with pytest.raises(ValueError, match="no matched pairs"):
        divergence_matrix(runs, lambda pairs: all_undecided)


def test_divergence_matrix_errors() -> None:
    with pytest.raises(ValueError, match="share no opening"):
        divergence_matrix([[H("o1")], [H("o2")]], lambda p: np.ones(len(p), bool))
    with pytest.raises(ValueError, match="shape"):
        divergence_matrix([[H("o1")], [H("o1")]], lambda p: np.ones(3, bool))


# --------------------------------------------------------------------------- extra divergence


def test_extra_divergence_by_hand() -> None:
    # runs 0,1 at depth a; runs 2,3,4 at depth b
    D = np.zeros((5, 5))
    D[0, 1] = 0.2  # within a
    D[2, 3], D[2, 4], D[3, 4] = 0.1, 0.3, 0.5  # within b
    D[:2, 2:] = [[0.6, 0.7, 0.8], [0.9, 1.0, 0.4]]  # cross
    D = np.triu(D, 1) + np.triu(D, 1).T
    cross = (0.6 + 0.7 + 0.8 + 0.9 + 1.0 + 0.4) / 6
    within = (0.2 + 0.1 + 0.3 + 0.5) / 4  # pooled over both depths
    assert extra_divergence(D, 2) == pytest.approx(cross - within, abs=1e-15)
    assert split_extras(D, 2)[0] == pytest.approx(cross - within, abs=1e-15)


def test_extra_divergence_ignores_diagonal() -> None:
    D = random_matrix(np.random.default_rng(1), 6)
    D2 = D.copy()
    np.fill_diagonal(D2, np.nan)
    assert extra_divergence(D2, 3) == extra_divergence(D, 3)


def test_same_depth_and_comparison_matrix() -> None:
    rng = np.random.default_rng(2)
    D = random_matrix(rng, 15)
    depths = [0] * 5 + [1] * 5 + [5] * 5
    perm = rng.permutation(15)
    Dp, dp = D[np.ix_(perm, perm)], [depths[i] for i in perm]
    sd = same_depth_divergence(Dp, dp)
    assert sd[1] == pytest.approx(D[5:10, 5:10][np.triu_indices(5, 1)].mean())
    sub, n_a = comparison_matrix(Dp, dp, 0, 5)
    assert n_a == 5 and sub.shape == (10, 10)
    idx = list(range(5)) + list(range(10, 15))
    assert extra_divergence(sub, n_a) == pytest.approx(extra_divergence(D[np.ix_(idx, idx)], 5))
    with pytest.raises(ValueError):
        comparison_matrix(Dp, dp, 0, 3)


@pytest.mark.parametrize(
    "D, n_a, match",
    [
        (np.array([[0, 0.1, 0.2], [0.3, 0, 0.4], [0.2, 0.4, 0]]), 1, "symmetric"),
        (np.zeros((4, 4)), 0, "n_a"),
        (np.zeros((4, 4)), 4, "n_a"),
        (np.zeros((4, 4)), 2.0, "int"),
        (np.zeros((2, 2)), 1, "same-depth"),
        (np.zeros((3, 4)), 1, "square"),
        (np.array([[0, np.nan, 0], [np.nan, 0, 0], [0, 0, 0]]), 1, "finite"),
    ],
)
def test_bad_input(D: np.ndarray, n_a: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        extra_divergence(D, n_a)
    with pytest.raises(ValueError, match=match):
        permutation_test([D], n_a)


def test_permutation_test_bad_list() -> None:
    with pytest.raises(ValueError):
        permutation_test([], 5)
    with pytest.raises(ValueError, match="one shape"):
        permutation_test([np.zeros((10, 10)), np.zeros((8, 8))], 5)


# --------------------------------------------------------------------------- splits


def test_split_counts() -> None:
    assert len(split_memberships(10, 5)) == 126 == comb(10, 5) // 2
    assert len(split_memberships(8, 3)) == comb(8, 3)
    M = split_memberships(10, 5)
    assert M[0, :5].all() and not M[0, 5:].any()
    assert (M.sum(axis=1) == 5).all() and M[:, 0].all()
    # no split is the mirror image of another
    assert len({tuple(r) for r in M} | {tuple(~r) for r in M}) == 252


def test_split_extras_match_naive() -> None:
    D = random_matrix(np.random.default_rng(3), 7)
    M = split_memberships(7, 3)
    naive = [naive_extra(D, set(np.flatnonzero(m))) for m in M]
    np.testing.assert_allclose(split_extras(D, 3), naive, atol=1e-13)


# --------------------------------------------------------------------------- exact p vs brute force


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("grid", [None, 6])
def test_permutation_equals_brute_force_ordered_splits(k: int, grid: int | None) -> None:
    """4 + 4 runs; the brute force uses all C(8, 4) = 70 ordered splits, ours the 35 unordered."""
    rng = np.random.default_rng(10 * k + (grid or 0))
    Ds = [random_matrix(rng, 8, grid) for _ in range(k)]
    res = permutation_test(Ds, 4)
    observed, p = brute_force_p(Ds, 4, ordered=True)
    assert res.n_partitions == 35
    assert res.extra == pytest.approx(observed, abs=1e-12)
    assert res.p_value == pytest.approx(p, abs=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_permutation_equals_brute_force_unequal(k: int) -> None:
    rng = np.random.default_rng(20 + k)
    Ds = [random_matrix(rng, 7, grid=4) for _ in range(k)]
    res = permutation_test(Ds, 3)
    observed, p = brute_force_p(Ds, 3, ordered=True)
    assert res.n_partitions == comb(7, 3)
    assert res.extra == pytest.approx(observed, abs=1e-12)
    assert res.p_value == pytest.approx(p, abs=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_permutation_equals_brute_force_paper_size(k: int) -> None:
    """5 + 5 runs as in the paper: 126 splits per instance, 126**k combinations enumerated."""
    rng = np.random.default_rng(30 + k)
    # instance-level effect so that p is not trivially large
    Ds = []
    for _ in range(k):
        D = random_matrix(rng, 10, grid=10) * 0.6
        D[:5, 5:] += 0.2
        D[5:, :5] += 0.2
        Ds.append(D)
    res = permutation_test(Ds, 5)
    observed, p = brute_force_p(Ds, 5, ordered=False)
    assert res.n_partitions == 126
    assert res.extra == pytest.approx(observed, abs=1e-12)
    assert res.p_value == pytest.approx(p, abs=1e-12)
    assert p < 0.05


def test_permutation_extreme_known_p() -> None:
    """Cross divergence 1, within 0 in all 4 instances: only the observed split combination ties."""
    D = np.zeros((10, 10))
    D[:5, 5:] = D[5:, :5] = 1.0
    res = permutation_test([D] * 4, 5)
    assert res.extra == 1.0
    assert res.p_value == 1 / 126**4
    assert permutation_test([np.zeros((10, 10))] * 4, 5).p_value == 1.0


# --------------------------------------------------------------------------- invariances


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shift=st.floats(-0.5, 0.5), scale=st.floats(0.1, 10.0))
def test_invariances(seed: int, shift: float, scale: float) -> None:
    rng = np.random.default_rng(seed)
    Ds = [random_matrix(rng, 8, grid=5) for _ in range(2)]
    base = permutation_test(Ds, 4)
    # relabelling runs within each depth group changes nothing
    perm = np.concatenate([rng.permutation(4), 4 + rng.permutation(4)])
    relabelled = permutation_test([D[np.ix_(perm, perm)] for D in Ds], 4)
    assert relabelled.extra == pytest.approx(base.extra, abs=1e-12)
    assert relabelled.p_value == pytest.approx(base.p_value, abs=1e-12)
    # swapping the two equal-size groups and reordering instances changes nothing
    swap = np.r_[4:8, 0:4]
    swapped = permutation_test([D[np.ix_(swap, swap)] for D in Ds[::-1]], 4)
    assert swapped.extra == pytest.approx(base.extra, abs=1e-12)
    assert swapped.p_value == pytest.approx(base.p_value, abs=1e-12)
    # a common shift of all run divergences cancels; a positive scale scales extra, keeps p
    off = 1 - np.eye(8)
    shifted = permutation_test([scale * D + shift * off for D in Ds], 4)
    assert shifted.extra == pytest.approx(scale * base.extra, abs=1e-9)
    assert shifted.p_value == pytest.approx(base.p_value, abs=1e-12)


# --------------------------------------------------------------------------- guards found by mutation testing


def test_errors_name_the_missing_depth_and_the_bad_verdicts() -> None:
    D = np.zeros((4, 4))
    with pytest.raises(ValueError, match="depth comparison 0 vs 3: no runs at depth 3"):
        comparison_matrix(D, [0, 0, 1, 1], 0, 3)
    with pytest.raises(ValueError, match="depth comparison 7 vs 1: no runs at depth 7"):
        comparison_matrix(D, [0, 0, 1, 1], 7, 1)
    with pytest.raises(ValueError, match=r"^same: verdicts must be boolean \(or 0/1\); found other values or NaN$"):
        run_divergence(np.array([0.5, 1.0]))


def test_a_rule_without_same_and_a_non_callable_are_type_errors() -> None:
    runs = [[H("o1")], [H("o1")]]
    with pytest.raises(TypeError):
        divergence_matrix(runs, object())
    assert divergence_matrix([[H("o1")]], lambda pairs: np.ones(len(pairs), bool)).tolist() == [[0.0]]


def test_exact_feasibility_halves_the_splits_of_equal_groups() -> None:
    # 5 + 5: 126 unordered splits; 126 ** 2 = 15,876 partial sums per half for 3 or 4 instances
    assert exact_test_feasible(10, 5, 4, limit=15_876) and not exact_test_feasible(10, 5, 4, limit=15_875)
    # 4 + 6: all 210 splits; 210 ** 2 = 44,100
    assert exact_test_feasible(10, 4, 3, limit=44_100) and not exact_test_feasible(10, 4, 3, limit=44_099)


def test_monte_carlo_draws_exactly_n_resamples_in_chunks() -> None:
    """All-zero matrices: every resample ties the observed value, so p = (1 + n) / (n + 1) = 1 only
    if exactly ``n_resamples`` are drawn, also when the last chunk is partial."""
    Ds = [np.zeros((6, 6)), np.zeros((6, 6))]
    for n, chunk in ((25, 10), (1, 7), (30, 10)):
        assert monte_carlo_permutation_test(Ds, 3, n_resamples=n, chunk=chunk).p_value == 1.0


def test_monte_carlo_counts_partitions_and_names_the_bad_matrix() -> None:
    rng = np.random.default_rng(0)
    assert monte_carlo_permutation_test([random_matrix(rng, 7)], 3, n_resamples=5).n_partitions == comb(7, 3)
    assert monte_carlo_permutation_test([random_matrix(rng, 8)], 4, n_resamples=5).n_partitions == comb(8, 4) // 2
    bad = random_matrix(rng, 6)
    bad[0, 1] = np.nan
    with pytest.raises(ValueError, match=r"Ds\[1\]: off-diagonal"):
        monte_carlo_permutation_test([random_matrix(rng, 6), bad], 3, n_resamples=5)


def test_exact_permutation_beyond_int64_matches_an_integer_convolution() -> None:
    """Nine instances of 5 + 5 runs: 126**9 > 2**62 split combinations, counted with Python integers.
    The oracle convolves each instance's integer-scaled split values (100 x extra is an integer for
    0/1 matrices: 4 x cross sum - 5 x within sum) with exact counts."""
    from collections import Counter

    rng = np.random.default_rng(4)
    Ds = []
    for _ in range(9):
        A = np.triu(rng.integers(0, 2, (10, 10)), 1)
        Ds.append((A + A.T).astype(float))
    Ds[0][:5, 5:] = Ds[0][5:, :5] = 1.0  # one clear effect, so the observed value is not 0
    dist = Counter({0: 1})
    for D in Ds:
        values = Counter(int(round(100 * e)) for e in split_extras(D, 5))
        nxt: Counter = Counter()
        for s, c in dist.items():
            for v, m in values.items():
                nxt[s + v] += c * m
        dist = nxt
    observed = sum(int(round(100 * split_extras(D, 5)[0])) for D in Ds)
    total = 126**9
    assert total > 2**62 and sum(dist.values()) == total
    expected = sum(c for s, c in dist.items() if abs(s) >= abs(observed)) / total
    result = permutation_test(Ds, 5)
    assert result.n_partitions == 126 and result.extra == pytest.approx(observed / 900)
    assert result.p_value == pytest.approx(expected, rel=1e-12)


def test_a_matrix_error_names_d_and_symmetry_is_checked_without_a_relative_tolerance() -> None:
    with pytest.raises(ValueError, match=r"^D: expected a square matrix, got shape \(3, 4\)$"):
        extra_divergence(np.zeros((3, 4)), 1)
    D = np.zeros((4, 4))
    D[0, 1], D[1, 0] = 0.5, 0.5 + 1e-9  # within a relative 1e-5 of each other, far beyond 1e-12
    with pytest.raises(ValueError, match=r"^D: divergence matrix must be symmetric$"):
        extra_divergence(D, 2)


def test_too_many_partial_sums_stop_with_the_count(monkeypatch: pytest.MonkeyPatch) -> None:
    import mechaudit.divergence as divergence

    monkeypatch.setattr(divergence, "MAX_HALF_SIZE", 34)
    D = random_matrix(np.random.default_rng(5), 8)  # 35 distinct split values
    with pytest.raises(ValueError, match=r"^exact null distribution too large \(35 partial sums in one half\); "
                                         r"use fewer instances per test$"):
        permutation_test([D], 4)


def test_split_counts_are_exact_integers_even_when_huge() -> None:
    # C(60, 30) / 2 = 5.9e16 splits; to the 20th power as an int it is just too many, as a float it overflows
    assert exact_test_feasible(60, 30, 40) is False
    rng = np.random.default_rng(6)
    assert type(monte_carlo_permutation_test([random_matrix(rng, 6)], 3, n_resamples=3).n_partitions) is int


def test_divergence_matrix_shows_progress_only_when_asked(capsys: pytest.CaptureFixture) -> None:
    runs = [[H("o1")], [H("o1")], [H("o1")]]
    divergence_matrix(runs, lambda pairs: np.ones(len(pairs), bool))
    assert capsys.readouterr().err == ""
    divergence_matrix(runs, lambda pairs: np.ones(len(pairs), bool), progress=True)
    assert capsys.readouterr().err.lstrip("\r").startswith("matching runs: ")


def test_divergence_matrix_takes_a_rule_object_and_object_verdicts() -> None:
    class Rule:
        def same(self, pairs: list) -> np.ndarray:
            return np.array([x.mechanism == y.mechanism for x, y in pairs])

    runs = [[H("o1", "a"), H("o2", "b")], [H("o1", "a"), H("o2", "c")]]
    assert divergence_matrix(runs, Rule()).tolist() == [[0.0, 0.5], [0.5, 0.0]]
    # verdicts in an object column (as pandas keeps a column that once held None): read as 0/1, not as floats
    verdicts = pd.Series([True, False], dtype=object).to_numpy()
    assert verdicts.dtype == object
    assert divergence_matrix(runs, lambda pairs: verdicts).tolist() == [[0.0, 0.5], [0.5, 0.0]]


def test_exact_mirror_ties_count_on_both_sides_without_a_tolerance() -> None:
    """4 runs, 2 + 2: the observed split has extra -0.375, split {0, 2} +0.375, split {0, 3} 0 (all
    exact in binary). With rtol 0 both extremes count: p = 2 / 3."""
    D = np.zeros((4, 4))
    D[0, 1] = D[1, 0] = 1.0
    D[0, 3] = D[3, 0] = 0.5
    assert split_extras(D, 2).tolist() == [-0.375, 0.375, 0.0]
    result = permutation_test([D], 2, rtol=0.0)
    assert result.extra == -0.375 and result.p_value == pytest.approx(2 / 3)
    assert brute_force_p([D], 2, ordered=False, tol=0.0) == (-0.375, pytest.approx(2 / 3))


def test_a_null_observation_keeps_its_extra_and_a_depth_of_two_runs_counts() -> None:
    flat = np.ones((6, 6)) - np.eye(6)  # every split has extra 0
    assert permutation_test([flat], 3) == (0.0, 1.0, 10)
    D = random_matrix(np.random.default_rng(7), 5)
    assert same_depth_divergence(D, [0, 0, 1, 1, 1]) == {
        0: pytest.approx(D[0, 1]), 1: pytest.approx((D[2, 3] + D[2, 4] + D[3, 4]) / 3)}
    assert same_depth_divergence(D, [0, 1, 1, 2, 2]) == {1: pytest.approx(D[1, 2]), 2: pytest.approx(D[3, 4])}


def test_monte_carlo_draws_999_resamples_by_default() -> None:
    """Cross 1, within 0 in four instances of 5 + 5: no random split combination reaches the observed
    sum, so p = 1 / (999 + 1)."""
    D = np.zeros((10, 10))
    D[:5, 5:] = D[5:, :5] = 1.0
    assert monte_carlo_permutation_test([D] * 4, 5).p_value == 1 / 1000
