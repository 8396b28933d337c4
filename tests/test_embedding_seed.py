"""The committed embedding seed (``data/embedding_seed/``, ``mechaudit calibrate --only embeddings``) holds
what the model returns: texts of the shipped suite are re-encoded here and compared with it, and a rule
reads the seed without encoding, writes only to its own store and can be told to ignore the seed."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from mechaudit.paths import EMBEDDING_SEED_DIR
from mechaudit.perturb import load_suite
from mechaudit.rules.embedding import DEFAULT_MODELS, EmbeddingRule, model_id, read_store, store_path, text_key
from mechaudit.schema import hypothesis_text

# checked without importing it: torch loads only in the worker that runs these tests
pytestmark = pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is None,
                                reason="sentence-transformers (the [embeddings] extra) is not installed")

SEED = store_path(EMBEDDING_SEED_DIR, None)


def _suite_texts(n: int) -> list[str]:
    """The first ``n`` distinct texts of the shipped template-built suite (chapter 05 embeds them all)."""
    texts = dict.fromkeys(hypothesis_text(h) for p in load_suite() for h in (p["original"], p["variant"]))
    return list(texts)[:n]


def test_the_seed_covers_the_shipped_suite_and_holds_what_the_model_returns():
    seed = read_store(SEED)
    texts = _suite_texts(6)
    missing = [t[:40] for t in texts if text_key(model_id(None), t) not in seed]
    assert not missing, f"not in the seed (run mechaudit calibrate --only embeddings): {missing}"
    fresh = EmbeddingRule(seed_dir=None).embed(texts)  # no store, no seed: the model itself
    stored = np.stack([seed[text_key(model_id(None), t)] for t in texts])
    assert fresh.shape == stored.shape == (6, 384)
    np.testing.assert_allclose(stored, fresh, atol=1e-5)


def test_a_rule_reads_the_seed_without_encoding_and_writes_only_its_own_store(tmp_path, monkeypatch):
    texts = _suite_texts(3)
    monkeypatch.setattr(DEFAULT_MODELS, "load", lambda *a, **k: pytest.fail("encoded a seeded text"))
    rule = EmbeddingRule(cache_dir=tmp_path)
    seed = read_store(SEED)
    np.testing.assert_array_equal(rule.embed(texts), np.stack([seed[text_key(model_id(None), t)] for t in texts]))
    assert not store_path(tmp_path, None).exists()  # nothing new was encoded, so nothing is written


def test_without_the_seed_a_text_is_encoded(tmp_path):
    texts = _suite_texts(1)
    calls = []
    rule = EmbeddingRule(cache_dir=tmp_path, seed_dir=None)
    model = DEFAULT_MODELS.load(None)
    original = model.encode
    model.encode = lambda *a, **k: calls.append(a) or original(*a, **k)
    try:
        rule.embed(texts)
    finally:
        model.encode = original
    assert len(calls) == 1
    assert text_key(model_id(None), texts[0]) in read_store(store_path(tmp_path, None))
