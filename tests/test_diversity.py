"""Tests of mechaudit.diversity: grouping cross-checked by union-find and cliques, Vendi by eigen."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from mechaudit.diversity import (
    components_from_blocks,
    group,
    n_groups,
    vendi_score,
    vendi_score_from_features,
    vendi_score_from_labels,
)


def union_find_labels(n: int, edges: list[tuple[int, int]]) -> np.ndarray:
    """Connected components by union-find (independent of scipy), canonical first-appearance labels."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        parent[find(a)] = find(b)
    roots = [find(i) for i in range(n)]
    order: dict[int, int] = {}
    return np.array([order.setdefault(r, len(order)) for r in roots])


def random_same(rng: np.random.Generator, n: int, p: float) -> np.ndarray:
    upper = np.triu(rng.random((n, n)) < p, 1)
    same = upper | upper.T
    np.fill_diagonal(same, True)
    return same


# --------------------------------------------------------------------------- grouping


def test_chain_components_vs_complete() -> None:
    # 0~1, 1~2 but 0 !~ 2; 3 alone; 4~5
    same = np.eye(6, dtype=bool)
    for a, b in [(0, 1), (1, 2), (4, 5)]:
        same[a, b] = same[b, a] = True
    comp = group(same, "components")
    np.testing.assert_array_equal(comp, [0, 0, 0, 1, 2, 2])
    assert n_groups(comp) == 3
    compl = group(same, "complete")
    assert n_groups(compl) == 4  # the chain splits into {0,1},{2} or {0},{1,2}
    assert compl[4] == compl[5] and compl[3] not in (compl[4], compl[0], compl[2])


def test_components_sparse_equals_dense_and_union_find() -> None:
    rng = np.random.default_rng(0)
    same = random_same(rng, 60, 0.03)
    expected = union_find_labels(60, list(zip(*np.nonzero(same))))
    np.testing.assert_array_equal(group(same), expected)
    np.testing.assert_array_equal(group(sp.csr_matrix(same)), expected)
    # an upper-triangular (one direction only) sparse graph gives the same components
    np.testing.assert_array_equal(group(sp.csr_matrix(np.triu(same))), expected)


def test_components_large_sparse() -> None:
    """20,000 nodes, sparse graph: no dense matrix, agrees with union-find."""
    rng = np.random.default_rng(1)
    n, m = 20_000, 15_000
    rows, cols = rng.integers(0, n, m), rng.integers(0, n, m)
    graph = sp.coo_matrix((np.ones(m, bool), (rows, cols)), shape=(n, n)).tocsr()
    labels = group(graph)
    np.testing.assert_array_equal(labels, union_find_labels(n, list(zip(rows.tolist(), cols.tolist()))))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 25), p=st.floats(0.0, 0.6))
def test_complete_groups_are_cliques_refining_components(seed: int, n: int, p: float) -> None:
    same = random_same(np.random.default_rng(seed), n, p)
    comp, compl = group(same, "components"), group(same, "complete")
    for g in np.unique(compl):
        members = np.flatnonzero(compl == g)
        assert same[np.ix_(members, members)].all()  # all members pairwise same
        assert len(np.unique(comp[members])) == 1  # inside one component
    assert n_groups(compl) >= n_groups(comp)
    assert compl[0] == 0 and comp[0] == 0  # canonical labels


def test_equivalence_relation_both_methods_agree() -> None:
    truth = np.random.default_rng(2).integers(0, 7, 40)
    same = truth[:, None] == truth[None, :]
    comp, compl = group(same, "components"), group(same, "complete")
    np.testing.assert_array_equal(comp, compl)
    assert n_groups(comp) == len(np.unique(truth))
    # same partition as truth up to renaming
    assert all((comp[i] == comp[j]) == (truth[i] == truth[j]) for i, j in itertools.combinations(range(40), 2))


@pytest.mark.parametrize(
    "same, method, match",
    [
        (np.ones((2, 3), bool), "components", "square"),
        (np.array([[1.0, np.nan], [np.nan, 1.0]]), "components", "boolean"),
        (np.array([[1, 2], [2, 1]]), "complete", "boolean"),
        (np.array([[True, True], [False, True]]), "complete", "symmetric"),
        (np.eye(2, dtype=bool), "single", "method"),
        (sp.csr_matrix(np.array([[1.0, np.nan], [0.0, 1.0]])), "components", "finite"),
    ],
)
def test_group_bad_input(same: np.ndarray, method: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        group(same, method)  # type: ignore[arg-type]


def test_group_edge_sizes() -> None:
    assert group(np.zeros((0, 0), bool)).shape == (0,)
    np.testing.assert_array_equal(group(np.ones((1, 1), bool), "complete"), [0])


# --------------------------------------------------------------------------- Vendi score


def direct_vendi(K: np.ndarray) -> float:
    """exp(entropy) of the eigenvalues of K/n via the general (non-symmetric) eigen solver."""
    lam = np.linalg.eigvals(K / len(K)).real
    lam = lam[lam > 1e-15]
    return float(np.exp(-(lam * np.log(lam)).sum()))


@pytest.mark.parametrize("n", [1, 5, 17])
def test_vendi_known_cases(n: int) -> None:
    assert vendi_score(np.eye(n)) == pytest.approx(n, rel=1e-10)
    assert vendi_score(np.ones((n, n))) == pytest.approx(1.0, rel=1e-10)


def test_vendi_blocks_equal_labels_formula() -> None:
    labels = np.array([0] * 6 + [1] * 3 + [2] * 1)
    K = (labels[:, None] == labels[None, :]).astype(float)
    shares = np.array([0.6, 0.3, 0.1])
    expected = float(np.exp(-(shares * np.log(shares)).sum()))
    assert vendi_score(K) == pytest.approx(expected, rel=1e-10)
    assert vendi_score_from_labels(labels) == pytest.approx(expected, rel=1e-12)
    assert vendi_score_from_labels(np.repeat(np.arange(4), 5)) == pytest.approx(4.0, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 30), d=st.integers(1, 12))
def test_vendi_cross_checks(seed: int, n: int, d: int) -> None:
    X = np.random.default_rng(seed).normal(size=(n, d))
    Xn = X / np.linalg.norm(X, axis=1, keepdims=True)
    K = Xn @ Xn.T
    K = (K + K.T) / 2
    np.fill_diagonal(K, 1.0)
    v = vendi_score(K)
    assert v == pytest.approx(direct_vendi(K), rel=1e-8)
    assert v == pytest.approx(vendi_score_from_features(X), rel=1e-8)
    assert 1.0 - 1e-9 <= v <= min(n, d) + 1e-9
    perm = np.random.default_rng(seed).permutation(n)
    assert vendi_score(K[np.ix_(perm, perm)]) == pytest.approx(v, rel=1e-8)  # order-free


def test_vendi_bad_input() -> None:
    with pytest.raises(ValueError, match="positive semidefinite"):
        # a non-transitive "same" chain: 0~1, 1~2, 0!~2 with unit diagonal is not PSD
        vendi_score(np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 1.0]]))
    with pytest.raises(ValueError, match="symmetric"):
        vendi_score(np.array([[1.0, 0.2], [0.1, 1.0]]))
    with pytest.raises(ValueError, match="finite"):
        vendi_score(np.array([[1.0, np.nan], [np.nan, 1.0]]))
    with pytest.raises(ValueError, match="unit diagonal"):
        vendi_score(np.array([[2.0, 0.0], [0.0, 2.0]]))
    with pytest.raises(ValueError, match="square"):
        vendi_score(np.ones((2, 3)))
    with pytest.raises(ValueError, match="all zeros"):
        vendi_score_from_features(np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError):
        vendi_score_from_labels(np.array([]))


def test_vendi_errors_name_the_matrix_and_what_is_wrong():
    with pytest.raises(ValueError, match=r"^K: expected a square n x n matrix, got shape \(2, 3\)$"):
        vendi_score(np.ones((2, 3)))
    with pytest.raises(ValueError, match="^K: empty matrix, Vendi score undefined$"):
        vendi_score(np.zeros((0, 0)))
    with pytest.raises(ValueError, match="^K: similarity matrix must be symmetric$"):
        vendi_score(np.array([[1.0, 0.5], [0.2, 1.0]]))
    with pytest.raises(ValueError, match="^X: expected a non-empty n x d feature matrix"):
        vendi_score_from_features(np.zeros((0, 3)))
    assert vendi_score_from_features(np.eye(3)) == pytest.approx(3.0)


def test_integer_0_1_verdicts_group_like_booleans():
    ints = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(group(ints), group(ints.astype(bool)))
    assert n_groups(ints) == 2


def test_empty_and_misshapen_inputs_give_int_labels_and_name_the_matrix():
    assert group(np.zeros((0, 0), bool)).dtype == np.int64
    empty = components_from_blocks([], 0)
    assert empty.dtype == np.int64 and empty.shape == (0,)
    with pytest.raises(ValueError, match=r"^n must be >= 0; got -1$"):
        components_from_blocks([], -1)
    with pytest.raises(ValueError, match=r"^same: expected a square n x n matrix, got shape \(2, 3\)$"):
        group(np.zeros((2, 3), bool))
    with pytest.raises(ValueError, match=r"^X: row 1 is all zeros \(no cosine\)$"):
        vendi_score_from_features(np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]))
