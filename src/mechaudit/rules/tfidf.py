"""TF-IDF cosine equivalence rule (paper App. B): same mechanism iff cosine >= threshold (0.25).

Text per hypothesis: ``mechaudit.schema.hypothesis_text`` (statement, explanation and causal chain,
the same three fields every rule sees). Vectorizer: scikit-learn
``TfidfVectorizer(sublinear_tf=True, stop_words="english")`` with its default l2 row norm, so the
cosine of two rows is their dot product.

What the vectorizer is fitted on changes the idf weights and hence every similarity. The paper does
not say; here it is the parameter ``fit_on``:

- ``"compared"`` (default): fitted on the distinct texts of the hypotheses compared in the call
  (the pairs given to ``similarity``/``same``, or the set given to ``similarity_graph``);
- ``"pair"``: fitted afresh on the two texts of each pair (idf then only separates shared from
  unshared terms);
- a sequence of ``Hypothesis`` or ``str``: fitted once on that fixed corpus (for example every
  committed hypothesis), so a pair's similarity does not depend on which other pairs are compared.

scikit-learn conventions: the constructor only stores ``threshold`` and ``fit_on``; ``fit(corpus)``
(``fit()`` for a rule given a corpus as ``fit_on``) fits the vectorizer once and stores it as
``vectorizer_``. A fitted rule transforms every text with ``vectorizer_``. An unfitted rule fits a
vectorizer for each call (on the ``fit_on`` corpus, on the compared texts, or on each pair) and
never stores it: computing similarities does not change the rule.
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
        """Fit the vectorizer on ``corpus`` (Hypotheses or texts; None: the ``fit_on`` corpus) and
        store it as ``vectorizer_``; returns the rule. Not defined for ``fit_on="pair"``, which fits
        every pair afresh."""
        if self.fit_on == "pair":
            raise MechauditError("fit_on='pair' fits each pair on its own: a fitted vocabulary would be ignored",
                                 field="fit_on")
        if corpus is None and isinstance(self.fit_on, str):
            raise MechauditError("fit() needs a corpus when fit_on is 'compared'", field="corpus")
        self.vectorizer_ = fit_vectorizer(corpus_texts(self.fit_on if corpus is None else corpus))
        return self

    def _vectors(self, texts: list[str]) -> sp.csr_matrix:
        """Rows of ``texts``: from ``vectorizer_`` if fitted, else from a vectorizer fitted for this
        call only (on the ``fit_on`` corpus, or on ``texts``)."""
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
        """The verdicts of pairs whose ``similarity`` is already computed: ``similarity >= threshold``
        (``same`` without computing it again)."""
        return np.asarray(similarity, dtype=float) >= self.threshold

    def similarity_graph(
        self, hypotheses: Sequence[Hypothesis], block_size: int = 512, progress: bool = False
    ) -> sp.csr_matrix:
        """All-pairs cosine of a set, keeping only entries >= ``threshold``.

        Returns a symmetric ``(n, n)`` CSR float matrix; the diagonal holds each text's
        self-similarity (1, or 0 for a text with no surviving term). Computed as sparse
        ``X[rows] @ X.T`` in row blocks of ``block_size``, each block thresholded before the next,
        so no dense ``n x n`` array is ever built. ``fit_on="pair"`` is not defined for a set.
        """
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
        """Sparse boolean ``(n, n)`` "same mechanism" graph of a set (diagonal True).

        Entry ``(i, j)`` is True iff cosine(i, j) >= ``threshold``; symmetric, or with
        ``upper=True`` only the entries with ``j >= i`` (half the memory, and all that connected
        components need). Built block by block like ``similarity_graph`` but keeping only the column
        indices of each block (no float values, no dense ``n x n`` array): about 5 bytes per stored
        entry. Input for ``mechaudit.diversity.group``.
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
        """Yield ``(first row, sparse bool block)``: the "same" edges of each row block of the set.

        The stream ``mechaudit.diversity.components_from_blocks`` consumes: only one block of
        similarities exists at a time (``block_size`` rows by ``n`` columns before thresholding).
        """
        for start, S in self._thresholded_blocks(hypotheses, block_size, progress):
            yield start, S.astype(bool)

    def components(self, hypotheses: Sequence[Hypothesis], block_size: int = 256,
                   progress: bool = False) -> np.ndarray:
        """Group labels of the set's connected components under this rule, shape ``(n,)``.

        Streams ``same_blocks`` through ``components_from_blocks``: the same labels as
        ``group(same_graph(hypotheses))`` without holding the edge list (memory: one block + O(n)).
        """
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
