"""Chapter 07's steps (``mechaudit.book.ch07_sensitivity``): sweeps, separation, agreement, stability rows."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from mechaudit.book import ch07_sensitivity as ch
from mechaudit.book.chapter import ChapterContext
from mechaudit.book.settings import RunSettings
from mechaudit.report.comparison import compare
from mechaudit.rules import TfidfRule


def fixed_methods(third: str = "reference (full)") -> ch.FixedMethods:
    ref = np.array([True, True, False, False, False, False])
    tf = np.array([True, True, True, False, False, False])
    emb = np.array([True, False, True, False, True, False])
    return ch.FixedMethods({"reference (full)": ref, "tfidf 0.25": tf, "embedding 0.77": emb},
                           "tfidf 0.25", "embedding 0.77", third)


def test_grid_is_evenly_spaced_and_rounded():
    assert ch.grid([0.05, 0.95, 19]).tolist()[:3] == [0.05, 0.1, 0.15]
    assert len(ch.grid([0.5, 0.98, 25])) == 25


def test_separation_finds_the_exact_interval_and_the_half_threshold():
    preserving = np.array([True, True, False, False])
    sims = {"tfidf": np.array([0.9, 0.8, 0.5, 0.6]), "embedding": np.array([0.9, 0.5, 0.8, 0.6])}
    grids = {"tfidf": np.array([0.55, 0.65, 0.85]), "embedding": np.array([0.55, 0.65, 0.85])}
    table, sep = ch.separation(sims, preserving, grids)
    assert table.loc["tfidf", "separating thresholds"] == "(0.600, 0.800]"
    assert table.loc["embedding", "separating thresholds"] == "none"
    assert sep.separating_sentence == "one of the 2 rules has one"
    assert sep.tfidf.half_threshold == 0.55 and sep.tfidf.half_mp_pct == 0.0
    assert sep.embedding.half_threshold == 0.65 and sep.embedding.half_mp_pct == 50.0
    assert sep.tfidf.max_sim_swapped == 0.6 and sep.tfidf.mean_sim_mp == pytest.approx(0.85)
    _, none = ch.separation(sims, preserving, {"tfidf": np.array([0.1]), "embedding": np.array([0.1])})
    assert none.tfidf.half_threshold == "none on the grid" and none.tfidf.half_mp_pct is None  # glued "n/a"


def test_agreement_tables_at_the_thresholds_and_best_over_the_grid():
    fixed = fixed_methods()
    at = ch.agreement_at_thresholds(fixed)
    assert list(at.columns) == ["pairs", "raw agreement", "kappa", "same rate a", "same rate b"]
    assert at.loc[("reference (full)", "tfidf 0.25"), "raw agreement"] == pytest.approx(5 / 6, abs=1e-3)
    assert at["pairs"].dtype.kind == "i"
    sims = {"tfidf": np.array([0.9, 0.8, 0.3, 0.2, 0.1, 0.05]), "embedding": np.linspace(0.9, 0.4, 6)}
    grids = {"tfidf": np.array([0.25, 0.5]), "embedding": np.array([0.5, 0.7])}
    agree = ch.agreement_sweep(sims, grids, fixed)
    assert set(agree["rule"]) == {"tfidf", "embedding"}
    best = ch.best_agreement(agree, sims, fixed)
    assert best.loc[("tfidf", "reference (full)"), "threshold of max kappa"] == 0.5
    assert best.loc[("tfidf", "reference (full)"), "kappa"] == 1.0
    assert bool(best.loc[("tfidf", "reference (full)"), "complete agreement possible"]) is True


def test_three_methods_headline_and_offline_paper_rows():
    fixed = fixed_methods()
    three = ch.three_methods(fixed)
    assert len(three) == 3
    sims = {"tfidf": np.array([0.9, 0.8, 0.3, 0.2, 0.1, 0.05]), "embedding": np.linspace(0.9, 0.4, 6)}
    grids = {"tfidf": np.array([0.25, 0.5]), "embedding": np.array([0.5, 0.7])}
    best = ch.best_agreement(ch.agreement_sweep(sims, grids, fixed), sims, fixed)
    _, sep = ch.separation(sims, np.array([True] * 3 + [False] * 3), grids)
    s = SimpleNamespace(reference=SimpleNamespace(rubric="full"))
    facts = ch.chapter_facts(ChapterContext(RunSettings()), "m", s, fixed, three, ch.agreement_at_thresholds(fixed),
                             best, {"template": sep})
    assert facts.headline_agreement == f"{facts.agreement_pct_low:.1f} to {facts.agreement_pct_high:.1f} %"
    assert facts.agreement_pct_low == pytest.approx(50.0) and facts.agreement_pct_high == pytest.approx(100 * 5 / 6)
    assert facts.tfidf == ch.RuleShape(sep.tfidf.mean_sim_mp, sep.tfidf.mean_sim_swapped,
                                       sep.tfidf.rewording_more_similar_pct)  # the template suite: means only
    assert facts.rw == ch.NO_SUITE and facts.ref_tfidf_agreement == "83.3 %" and facts.tfidf_best_kappa_reference == 1.0
    offline = pd.DataFrame({"pairs": [180, 180], "repeat changed": [0, 0], "reversal changed": [0, 0]},
                           index=pd.Index(["tfidf", "embedding"], name="rule"))
    check = ch.StabilityCheck(offline, None, False)
    rows = ch.paper_rows(three, fixed, check, tfidf_threshold=0.25, embedding_threshold=0.77)
    assert len(rows) == 14 and all(len(r[2]) <= 40 for r in rows if len(r) == 3)
    assert rows[6] == ("sensitivity.stability_pairs", 180, "judged by the offline rules")  # drawn and judged
    assert [r[1] for r in rows[7:]] == [None] * 7
    assert len(compare(rows, llm=False)) == 14
    assert ch.model_ranges(check, ["m"]).iloc[0, 0] == "not run: offline backend"


def test_llm_stability_rows_and_model_ranges():
    table = pd.DataFrame({"pairs": [8, 8], "repeat changed": [0, 1], "reversal changed": [2, 1],
                          "reversal changed %": [25.0, 12.5], "same %": [50.0, 62.5]},
                         index=pd.Index(["m1", "m2"], name="model"))
    agreement = pd.DataFrame({"model_a": ["m1"], "model_b": ["m2"], "n": [8], "raw_agreement": [0.875],
                              "kappa": [0.75]})
    check = ch.StabilityCheck(table, agreement, True)
    ranges = ch.model_ranges(check, ["m1", "m2"])
    assert ranges.loc["same %", "spread"] == 12.5
    rows = dict((r[0], r[1:]) for r in ch.paper_rows(ch.three_methods(fixed_methods("reference (full)")),
                                                     fixed_methods(), check, tfidf_threshold=0.25,
                                                     embedding_threshold=0.77))
    assert rows["sensitivity.reversal_changed"] == (2, "m1")
    assert rows["sensitivity.judge_models_agreement_pct_low"][0] == 87.5


def test_offline_stability_check_on_the_shipped_pairs():
    s = ch.setup()
    s = dataclasses.replace(s, embedding=TfidfRule(threshold=0.5))  # no model download in this test
    pairs = ch.stability_sample(s, 20, seed=0)
    check = ch.stability_check(s, pairs, client=None, models=["m"])
    assert not check.llm_run and check.agreement is None
    assert check.table["pairs"].tolist() == [20, 20, 20]
    assert check.table[["repeat changed", "reversal changed"]].to_numpy().sum() == 0
    assert len(s.set_pairs) == 760 and ch.preserving(kinds=s.kinds).sum() == 160


def test_complete_agreement_sentence_reads_for_none_some_and_all():
    from mechaudit.book.ch07_sensitivity import complete_agreement_sentence

    assert complete_agreement_sentence(0, 4).startswith("No threshold gives complete agreement for any of the 4")
    assert complete_agreement_sentence(1, 4).startswith("Some threshold gives complete agreement for 1 of the 4")
    assert complete_agreement_sentence(4, 4).startswith("For each of the 4 combinations")


def test_separating_sentence_reads_for_none_one_and_both():
    from mechaudit.book.ch07_sensitivity import SEPARATING

    assert SEPARATING[0] == "no rule has a separating threshold"
    assert SEPARATING[1] == "one of the 2 rules has one" and SEPARATING[2] == "both rules have one"
