"""TF-IDF cosine equivalence rule (paper App. B): same mechanism iff cosine >= threshold (0.25).

Text per hypothesis: ``mechaudit.schema.hypothesis_text``. Vectorizer: scikit-learn
``TfidfVectorizer(sublinear_tf=True, stop_words="english")``, l2 rows (cosine = dot product).

The corpus the idf weights come from (the paper does not say) is ``fit_on``: ``"compared"`` (default;
the distinct texts compared in the call), ``"pair"`` (each pair's two texts) or a fixed corpus of
``Hypothesis`` or ``str`` (a pair's similarity then does not depend on the other pairs).
``fit(corpus)`` stores a fitted ``vectorizer_``; an unfitted rule fits one per call and keeps none.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfVectorizer
from tqdm import tqdm

from mechaudit.diversity import components_from_blocks
from mechaudit.errors import MechauditError
from mechaudit.rules.base import Pair, check_hypotheses, check_threshold, unique_pair_texts
from mechaudit.schema import Hypothesis, hypothesis_text

FitOn = str | Sequence[Hypothesis | str]


def new_vectorizer() -> TfidfVectorizer:
    """The paper's vectorizer: sublinear tf, English stop words, l2-normalised rows."""
    return TfidfVectorizer(sublinear_tf=True, stop_words="english")


def fit_vectorizer(texts: Sequence[str]) -> TfidfVectorizer:
    """A new paper vectorizer fitted on ``texts``; ``ValueError`` if no term survives."""
    try:
        return new_vectorizer().fit(list(texts))
    except ValueError as err:  # sklearn: empty vocabulary (all stop words / empty texts)
        raise ValueError(f"TF-IDF vectorizer cannot be fitted: {err}") from None


def rowwise_cosine(X: sp.spmatrix, ia: np.ndarray, ib: np.ndarray) -> np.ndarray:
    """Cosine of rows ``ia[k]`` and ``ib[k]`` of the l2-normalised sparse ``X``; shape ``(len(ia),)``."""
    X = sp.csr_matrix(X)
    return np.asarray(X[ia].multiply(X[ib]).sum(axis=1), dtype=float).ravel()


def corpus_texts(corpus: Sequence[Hypothesis | str]) -> list[str]:
    """The texts of a non-empty corpus of Hypotheses/strings; ``MechauditError`` naming the first bad item."""
    out = list(corpus)
    if not out:
        raise MechauditError("corpus is empty", field="fit_on")
    for i, item in enumerate(out):
        if not isinstance(item, (str, Hypothesis)):
            raise MechauditError(f"item {i} must be a Hypothesis or str; got {type(item).__name__}",
                                 field=f"fit_on[{i}]")
    return [t if isinstance(t, str) else hypothesis_text(t) for t in out]


class TfidfRule:
    """Same mechanism iff TF-IDF cosine >= ``threshold``; ``fit_on`` as in the module docstring."""

    def __init__(self, *, threshold: float = 0.25, fit_on: FitOn = "compared"):
        self.threshold = check_threshold(threshold, low=0.0, high=1.0)
        if isinstance(fit_on, str) and fit_on not in ("compared", "pair"):
            raise MechauditError(f"must be 'compared', 'pair' or a corpus; got {fit_on!r}", field="fit_on")
        if not isinstance(fit_on, str):
            fit_on = list(fit_on)
            corpus_texts(fit_on)  # checked here; fitted by fit() or per call
        self.fit_on = fit_on

    def __repr__(self) -> str:
        fit_on = repr(self.fit_on) if isinstance(self.fit_on, str) else f"<corpus of {len(self.fit_on)}>"
        return f"TfidfRule(threshold={self.threshold}, fit_on={fit_on})"

    def fit(self, corpus: Sequence[Hypothesis | str] | None = None) -> TfidfRule:
        """Fit ``vectorizer_`` on ``corpus`` (None: the ``fit_on`` corpus); not for ``fit_on="pair"``."""
        if self.fit_on == "pair":
            raise MechauditError("fit_on='pair' fits each pair on its own: a fitted vocabulary would be ignored",
                                 field="fit_on")
        if corpus is None and isinstance(self.fit_on, str):
            raise MechauditError("fit() needs a corpus when fit_on is 'compared'", field="corpus")
        self.vectorizer_ = fit_vectorizer(corpus_texts(self.fit_on if corpus is None else corpus))
        return self

    def _vectors(self, texts: list[str]) -> sp.csr_matrix:
        """Rows of ``texts`` from ``vectorizer_``, else from one fitted for this call only."""
        if hasattr(self, "vectorizer_"):
            vectorizer = self.vectorizer_
        else:
            vectorizer = fit_vectorizer(texts if isinstance(self.fit_on, str) else corpus_texts(self.fit_on))
        return sp.csr_matrix(vectorizer.transform(texts))

    def similarity(self, pairs: Sequence[Pair]) -> np.ndarray:
        """Cosine similarity per pair, float array of shape ``(len(pairs),)`` in [0, 1]."""
        texts, ia, ib = unique_pair_texts(pairs)
        if len(ia) == 0:
            return np.zeros(0)
        if self.fit_on == "pair":
            out = np.empty(len(ia))
            for k, (i, j) in enumerate(zip(ia, ib)):
                X = fit_vectorizer([texts[i], texts[j]]).transform([texts[i], texts[j]])
                out[k] = rowwise_cosine(X, np.array([0]), np.array([1]))[0]
            return out
        return rowwise_cosine(self._vectors(texts), ia, ib)

    def same(self, pairs: Sequence[Pair]) -> np.ndarray:
        """``similarity(pairs) >= threshold``, bool array of shape ``(len(pairs),)``."""
        return self.same_from_similarity(self.similarity(pairs))

    def same_from_similarity(self, similarity: np.ndarray) -> np.ndarray:
        """``same`` of pairs whose ``similarity`` is already computed: ``similarity >= threshold``."""
        return np.asarray(similarity, dtype=float) >= self.threshold

    def similarity_graph(
        self, hypotheses: Sequence[Hypothesis], block_size: int = 512, progress: bool = False
    ) -> sp.csr_matrix:
        """All-pairs cosine of a set, entries >= ``threshold`` only: symmetric ``(n, n)`` CSR (diagonal 1,
        or 0 for a text without terms), built in thresholded row blocks (never a dense ``n x n``)."""
        blocks = [S for _, S in self._thresholded_blocks(hypotheses, block_size, progress)]
        if not blocks:
            return sp.csr_matrix((0, 0))
        return sp.csr_matrix(sp.vstack(blocks, format="csr"))

    def same_graph(
        self,
        hypotheses: Sequence[Hypothesis],
        block_size: int = 512,
        progress: bool = False,
        upper: bool = False,
    ) -> sp.csr_matrix:
        """Sparse boolean ``(n, n)`` graph, True iff cosine >= ``threshold`` (diagonal True); with
        ``upper`` only ``j >= i``. Keeps only column indices (about 5 bytes per entry); input for
        ``mechaudit.diversity.group``.
        """
        n = len(hypotheses)
        indices, row_counts = [], []
        for start, S in self._thresholded_blocks(hypotheses, block_size, progress):
            rows = np.arange(S.shape[0])
            diagonal = sp.csr_matrix((np.ones(len(rows), dtype=bool), (rows, start + rows)), shape=S.shape)
            B = sp.csr_matrix(S.astype(bool) + diagonal)
            if upper:
                B = sp.csr_matrix(sp.triu(B, k=start))
            B.sort_indices()
            indices.append(B.indices)
            row_counts.append(np.diff(B.indptr))
        if not indices:
            return sp.csr_matrix((0, 0), dtype=bool)
        nnz = sum(len(i) for i in indices)
        dtype = np.int32 if max(nnz, n) < np.iinfo(np.int32).max else np.int64
        indptr = np.zeros(n + 1, dtype=dtype)
        np.cumsum(np.concatenate(row_counts), out=indptr[1:])
        all_indices = np.concatenate(indices).astype(dtype, copy=False)
        del indices
        return sp.csr_matrix((np.ones(nnz, dtype=bool), all_indices, indptr), shape=(n, n))

    def same_blocks(self, hypotheses: Sequence[Hypothesis], block_size: int = 256, progress: bool = False):
        """Yield ``(first row, sparse bool block)``: the "same" edges of each ``block_size`` row block,
        for ``mechaudit.diversity.components_from_blocks``."""
        for start, S in self._thresholded_blocks(hypotheses, block_size, progress):
            yield start, S.astype(bool)

    def components(self, hypotheses: Sequence[Hypothesis], block_size: int = 256,
                   progress: bool = False) -> np.ndarray:
        """Connected-component labels, shape ``(n,)``: ``group(same_graph(...))``'s, one block at a time."""
        return components_from_blocks(self.same_blocks(hypotheses, block_size, progress), len(hypotheses))

    def _thresholded_blocks(self, hypotheses: Sequence[Hypothesis], block_size: int, progress: bool):
        """Yield ``(first row, CSR block of cosine rows >= threshold)`` over row blocks of the set."""
        if self.fit_on == "pair":
            raise ValueError("all-pairs graphs need fit_on='compared' or a corpus, not 'pair'")
        if self.threshold <= 0:
            raise ValueError(f"threshold {self.threshold} <= 0 makes every pair the same: the graph would be dense")
        if int(block_size) < 1:
            raise ValueError(f"block_size must be >= 1; got {block_size}")
        texts = [hypothesis_text(h) for h in check_hypotheses(hypotheses)]
        if not texts:
            return
        X = self._vectors(texts)
        XT = sp.csr_matrix(X.T)
        starts = range(0, X.shape[0], int(block_size))
        for start in tqdm(starts, disable=not progress, desc="tf-idf all pairs"):
            S = sp.csr_matrix(X[start : start + int(block_size)] @ XT)
            S.data[S.data < self.threshold] = 0.0
            S.eliminate_zeros()
            yield start, S
