"""Measured diversity of a hypothesis set under a "same mechanism" rule (paper §3, §5.2).

Grouping turns pairwise same/different verdicts into groups of hypotheses, and the number of
groups is the measured diversity. Two readings of the same verdicts:

* ``components``: connected components of the "same" graph: sameness is transitive, so a~b~c joins
  a and c even when they were judged different (the most lumping reading); sparse, any size.
* ``complete``: complete-linkage clustering on ``1 - same`` cut at 0.5: a group forms only when all
  its members are pairwise "same" (the most splitting reading); dense ``n**2`` memory, so at most
  ``COMPLETE_MAX_N`` hypotheses.

``components_from_blocks`` takes the graph as a stream of row blocks (``*Rule.same_blocks``) and
merges components block by block, so no edge list is held (at 50,000 hypotheses a quarter of all
pairs can be edges). The Vendi score (Friedman & Dieng) is a continuous diversity, from ``n`` for
all different to 1 for all the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import numpy as np
import scipy.sparse as sp
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import squareform

from mechaudit.divergence import bool_verdicts

__all__ = ["COMPLETE_MAX_N", "components_from_blocks", "group", "n_groups", "vendi_score",
           "vendi_score_from_features", "vendi_score_from_labels"]

Method = Literal["components", "complete"]

#: Largest set ``group(..., method="complete")`` accepts (the condensed distance matrix alone is
#: 8 * n * (n - 1) / 2 bytes: 400 MB at this size; scipy's linkage needs about as much again).
COMPLETE_MAX_N = 10_000


def _relabel(labels: np.ndarray) -> np.ndarray:
    """Labels renumbered 0, 1, ... in order of first appearance (a canonical form)."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[inverse.ravel()]


def _check_square(same: np.ndarray | sp.spmatrix | sp.sparray, name: str = "same") -> None:
    shape = same.shape
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"{name}: expected a square n x n matrix, got shape {shape}")


def group(same: np.ndarray | sp.spmatrix | sp.sparray, method: Method = "components") -> np.ndarray:
    """Group labels, shape ``(n,)`` int, numbered 0.. in order of first appearance, from ``n x n``
    same-mechanism verdicts (dense bool or 0/1, or sparse with the "same" edges stored; diagonal
    ignored). ``components``: an edge in either direction joins; ``complete``: symmetric verdicts."""
    _check_square(same)
    n = same.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if method == "components":
        if sp.issparse(same):
            graph = sp.csr_matrix(same)
            if graph.nnz and not np.isfinite(graph.data).all():
                raise ValueError("same: sparse entries must be finite (found NaN or inf)")
        else:
            graph = sp.csr_matrix(bool_verdicts(same))
        _, labels = connected_components(graph, directed=False)
        return _relabel(labels)
    if method == "complete":
        if n > COMPLETE_MAX_N:
            raise ValueError(f"complete linkage needs n**2 memory; {n} hypotheses exceed COMPLETE_MAX_N = "
                             f"{COMPLETE_MAX_N}: use method='components' or group a subset")
        dense = bool_verdicts(same.toarray() != 0 if sp.issparse(same) else same)
        off = ~np.eye(n, dtype=bool)
        if not (dense == dense.T)[off].all():
            raise ValueError("same: complete linkage needs symmetric verdicts (same[i, j] == same[j, i])")
        if n == 1:
            return np.zeros(1, dtype=np.int64)
        distance = np.where(dense, 0.0, 1.0)
        np.fill_diagonal(distance, 0.0)
        tree = linkage(squareform(distance, checks=False), method="complete")
        return _relabel(fcluster(tree, t=0.5, criterion="distance"))
    raise ValueError(f"method: expected 'components' or 'complete', got {method!r}")


def components_from_blocks(blocks: Iterable[tuple[int, sp.spmatrix | sp.sparray]], n: int) -> np.ndarray:
    """``group(full graph, "components")`` of a "same" graph given as row blocks ``(first row, B)``,
    ``B`` a sparse ``(rows, n)`` matrix of those rows' edges (any rows, any order): each block's
    edges join the current component labels, ``O(n + edges)`` time per block, ``O(n)`` memory."""
    if n < 0:
        raise ValueError(f"n must be >= 0; got {n}")
    labels = np.arange(n, dtype=np.int64)  # every node holds the smallest node id of its component
    for start, B in blocks:
        B = sp.coo_matrix(B)
        if B.shape[1] != n or start < 0 or start + B.shape[0] > n:
            raise ValueError(f"block at row {start} of shape {B.shape} does not fit an {n}-node graph")
        if B.nnz == 0:
            continue
        li, lj = labels[B.row.astype(np.int64) + start], labels[B.col]
        keep = li != lj
        if not keep.any():
            continue
        li, lj = li[keep], lj[keep]
        roots, inverse = np.unique(np.concatenate([li, lj]), return_inverse=True)
        m = len(li)
        graph = sp.coo_matrix((np.ones(m, dtype=bool), (inverse[:m], inverse[m:])), shape=(len(roots),) * 2)
        _, comp = connected_components(graph, directed=False)
        smallest = np.full(comp.max() + 1, n, dtype=np.int64)
        np.minimum.at(smallest, comp, roots)
        lookup = np.arange(n, dtype=np.int64)
        lookup[roots] = smallest[comp]
        labels = lookup[labels]
    return _relabel(labels)


def n_groups(labels: np.ndarray) -> int:
    """Number of distinct groups in a label vector."""
    return int(len(np.unique(np.asarray(labels))))


def _entropy_exp(p: np.ndarray) -> float:
    """``exp(-sum p log p)`` over the positive entries of a probability vector."""
    p = p[p > 0]
    return float(np.exp(-np.sum(p * np.log(p))))


def _vendi_from_eigenvalues(eigenvalues: np.ndarray, atol: float) -> float:
    if eigenvalues.min(initial=0.0) < -atol:
        raise ValueError(f"K is not positive semidefinite (eigenvalue {eigenvalues.min():.3g} of K/n); "
                         "the Vendi score needs a PSD similarity")
    return _entropy_exp(np.clip(eigenvalues, 0.0, None))


def vendi_score(K: np.ndarray, atol: float = 1e-8) -> float:
    """Vendi score ``exp(-sum_i l_i log l_i)`` over the eigenvalues ``l_i`` of ``K / n``, for a
    symmetric PSD similarity ``K`` (``n x n``, unit diagonal). Eigenvalues below ``-atol`` raise
    ``ValueError`` (a boolean "same" matrix is often not PSD: use :func:`vendi_score_from_labels`)."""
    K = np.asarray(K, dtype=float)
    _check_square(K, "K")
    n = K.shape[0]
    if n == 0:
        raise ValueError("K: empty matrix, Vendi score undefined")
    if not np.isfinite(K).all():
        raise ValueError("K: entries must be finite (found NaN or inf)")
    if not np.allclose(K, K.T, rtol=0.0, atol=1e-10):
        raise ValueError("K: similarity matrix must be symmetric")
    if not np.allclose(np.diag(K), 1.0, rtol=0.0, atol=1e-8):
        raise ValueError("K: the Vendi score needs a unit diagonal (k(x, x) = 1)")
    return _vendi_from_eigenvalues(np.linalg.eigvalsh(K / n), atol)


def vendi_score_from_features(X: np.ndarray, atol: float = 1e-8) -> float:
    """Vendi score of the cosine-similarity kernel of ``n`` feature rows ``X`` (``n x d``, no zero
    row), from the eigenvalues of the ``d x d`` matrix ``X^T X / n`` of the normalised rows (no
    ``n x n`` matrix is built)."""
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[0] == 0:
        raise ValueError(f"X: expected a non-empty n x d feature matrix, got shape {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError("X: features must be finite (found NaN or inf)")
    norms = np.linalg.norm(X, axis=1)
    if (norms == 0).any():
        raise ValueError(f"X: row {int(np.flatnonzero(norms == 0)[0])} is all zeros (no cosine)")
    Xn = X / norms[:, None]
    return _vendi_from_eigenvalues(np.linalg.eigvalsh(Xn.T @ Xn / X.shape[0]), atol)


def vendi_score_from_labels(labels: np.ndarray) -> float:
    """Vendi score of a grouping, ``exp`` of the entropy of the group shares: :func:`vendi_score` of
    ``K[i, j] = labels[i] == labels[j]`` (k equal groups give k)."""
    labels = np.asarray(labels)
    if labels.size == 0:
        raise ValueError("labels: empty, Vendi score undefined")
    _, counts = np.unique(labels, return_counts=True)
    return _entropy_exp(counts / labels.size)
