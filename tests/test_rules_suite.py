"""Acceptance on the committed perturbation suite: the text rules at the paper's thresholds keep
meaning-preserving pairs the same; the reference judges separate the kinds exactly."""

from __future__ import annotations

import numpy as np
import pytest

from mechaudit.paths import data_path
from mechaudit.perturb import MEANING_PRESERVING, load_suite
from mechaudit.rules import EmbeddingRule, ReferenceJudge, TfidfRule


@pytest.fixture(scope="module")
def suite():
    pairs = load_suite(valid_only=True)
    return [(p["original"], p["variant"]) for p in pairs], np.array([p["kind"] for p in pairs])


@pytest.mark.parametrize("make_rule", [
    lambda: TfidfRule(threshold=0.25),
    lambda: EmbeddingRule(threshold=0.77, cache_dir=data_path("embedding_cache")),
], ids=["tfidf", "embedding"])
def test_meaning_preserving_pairs_stay_same(suite, make_rule):
    pairs, kinds = suite
    same = make_rule().same(pairs)
    preserving = np.isin(kinds, MEANING_PRESERVING)
    assert preserving.sum() > 0
    assert same[preserving].mean() >= 0.95


def test_reference_judges_on_suite(suite):
    pairs, kinds = suite
    preserving = np.isin(kinds, MEANING_PRESERVING)
    for rubric in ("full", "step"):
        same = ReferenceJudge(rubric).same(pairs)
        np.testing.assert_array_equal(same, preserving)
