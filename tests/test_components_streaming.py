"""Streaming connected components: same labels as the whole graph, block by block."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components

from mechaudit.diversity import COMPLETE_MAX_N, components_from_blocks, group
from mechaudit.rules import EmbeddingRule, TfidfRule
from mechaudit.schema import load_hypotheses


def blocks_of(A: sp.csr_matrix, size: int, order=None):
    starts = list(range(0, A.shape[0], size))
    for start in (starts if order is None else [starts[k] for k in order(len(starts))]):
        yield start, A[start:start + size]


def canonical(labels: np.ndarray) -> np.ndarray:
    """Independent relabelling: label = index of the first node of the same component."""
    first: dict[int, int] = {}
    return np.array([first.setdefault(int(x), len(first)) for x in labels])


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 60), p=st.floats(0.0, 0.15), size=st.integers(1, 25), seed=st.integers(0, 10**6),
       reverse=st.booleans())
def test_streaming_equals_scipy_on_random_graphs(n, p, size, seed, reverse):
    rng = np.random.default_rng(seed)
    A = sp.csr_matrix(np.triu(rng.random((n, n)) < p, k=1))  # upper triangle only: edges one way
    order = (lambda m: list(range(m))[::-1]) if reverse else None
    got = components_from_blocks(blocks_of(A, size, order), n)
    _, want = connected_components(A, directed=False)
    assert np.array_equal(got, canonical(want))


def test_streaming_chain_across_blocks_and_bad_blocks():
    n = 10
    A = sp.csr_matrix((np.ones(n - 1, bool), (np.arange(n - 1), np.arange(1, n))), shape=(n, n))
    assert np.array_equal(components_from_blocks(blocks_of(A, 1), n), np.zeros(n))
    assert np.array_equal(components_from_blocks([], 3), [0, 1, 2])
    with pytest.raises(ValueError, match="does not fit"):
        components_from_blocks([(8, sp.csr_matrix((5, n)))], n)
    with pytest.raises(ValueError, match="does not fit"):
        components_from_blocks([(0, sp.csr_matrix((2, n + 1)))], n)


def test_tfidf_streaming_groups_equal_the_graph_groups_on_committed_data():
    hyps = load_hypotheses()
    for threshold in (0.25, 0.4, 0.6):
        rule = TfidfRule(threshold=threshold)
        want = group(rule.same_graph(hyps), "components")
        got = rule.components(hyps, block_size=7)
        assert np.array_equal(got, want)
    assert 1 < len(set(TfidfRule(threshold=0.4).components(hyps))) < len(hyps)


def test_embedding_streaming_groups_equal_pairwise_verdicts(tmp_path):
    hyps = load_hypotheses()[:40]
    rule = EmbeddingRule(threshold=0.8, cache_dir=tmp_path)
    pairs = [(a, b) for i, a in enumerate(hyps) for b in hyps[i + 1:]]
    same = rule.same(pairs)
    dense = np.eye(len(hyps), dtype=bool)
    iu = np.triu_indices(len(hyps), k=1)
    dense[iu] = same
    assert np.array_equal(rule.components(hyps, block_size=9), group(dense | dense.T, "components"))


def test_complete_linkage_refuses_sets_beyond_its_memory_limit():
    big = sp.eye(COMPLETE_MAX_N + 1, format="csr", dtype=bool)
    with pytest.raises(ValueError, match="COMPLETE_MAX_N"):
        group(big, "complete")
