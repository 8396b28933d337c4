"""Chapter 05's steps (mechaudit.chapters.perturbations): suite set-up, tables, findings, paper rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechaudit.chapters import perturbations as ch
from mechaudit.paper import compare
from mechaudit.perturb import KINDS, load_suite

NAMES = ch.RuleSet(rules={}, tfidf="tfidf", embedding="embedding 0.77", matched="embedding matched 0.80",
                   reference="reference (full)", n_matching_pairs=0, target_rate=0.0)
KINDS8 = ["wording_only", "wording_chain", "first_step_swapped", "middle_step_swapped"] * 2


def decisions(llm=None) -> pd.DataFrame:
    """8 pairs (two per kind): TF-IDF calls everything same, the reference judge every swap
    different, the embedding rule one first-step swap different."""
    swap = np.array([k.endswith("swapped") for k in KINDS8])
    emb = np.ones(8, dtype=bool)
    emb[2] = False
    return pd.DataFrame({"tfidf": np.ones(8, dtype=bool), "embedding 0.77": emb, "embedding matched 0.80": emb,
                         "reference (full)": ~swap, ch.LLM_COLUMN: ch.not_run(8) if llm is None else llm})


def test_setup_reads_the_shipped_suite_and_regenerates_it_identically():
    s = ch.setup()
    assert len(s.pairs) == len(s.kinds) == sum(p["valid"] for p in s.suite) == 320
    assert set(s.kinds) == set(KINDS)
    fresh = ch.setup(regenerate_suite=True, seed=0)
    assert [(a.id, b.id, k) for (a, b), k in zip(fresh.pairs, fresh.kinds)] == \
        [(a.id, b.id, k) for (a, b), k in zip(s.pairs, s.kinds)]
    assert [b.chain for _, b in fresh.pairs] == [b.chain for _, b in s.pairs]


def test_percent_table_counts_pairs_as_ints_and_says_not_run():
    from mechaudit.rules.audit import percent_different

    pct = percent_different(decisions(), KINDS8, order=KINDS)
    table = ch.percent_table(pct, KINDS8, llm_run=False)
    assert list(table.columns)[0] == "pairs" and table["pairs"].tolist() == [2, 2, 2, 2]
    assert table[ch.LLM_COLUMN].tolist() == ["not run"] * 4
    assert table.loc["first_step_swapped", "embedding 0.77"] == 50.0
    assert table.loc["middle_step_swapped", "reference (full)"] == 100.0
    assert ch.percent_table(pct, KINDS8, llm_run=True)[ch.LLM_COLUMN].tolist() == ["undecided"] * 4


def test_pooled_percent_pools_meaning_preserving_and_swapped_kinds():
    pooled = ch.pooled_percent(decisions(), KINDS8)
    assert list(pooled.index) == ["first_step_swapped", "middle_step_swapped", "meaning_preserving", "swapped"]
    assert pooled.loc["meaning_preserving", "reference (full)"] == 0.0
    assert pooled.loc["swapped", "reference (full)"] == 100.0
    assert pooled.loc["swapped", "embedding 0.77"] == 25.0


def test_findings_and_headline_offline_and_with_an_llm_column():
    sims = pd.DataFrame({"tfidf": np.linspace(0.5, 0.9, 8), "embedding": np.linspace(0.7, 0.98, 8)})
    facts = ch.findings(ch.pooled_percent(decisions(), KINDS8), sims, KINDS8, NAMES)
    assert facts["fss_embedding"] == 50.0 and facts["fss_reference"] == 100.0 and facts["mp_tfidf"] == 0.0
    assert facts["fss_llm"] is None and facts["ref_swapped"] == 100.0
    assert facts["tfidf_min_sim_swapped"] == pytest.approx(sims["tfidf"][2])
    top = ch.headline(facts)
    assert top == {"tfidf": 0, "embedding": 50, "reference": 100, "llm": "not run offline"}
    llm = pd.array([True, True, False, True] * 2, dtype="boolean")
    facts = ch.findings(ch.pooled_percent(decisions(llm), KINDS8), sims, KINDS8, NAMES)
    assert ch.headline(facts)["llm"] == 100


def test_findings_gives_nan_for_a_kind_the_suite_lacks():
    kinds = ["wording_only", "first_step_swapped"]
    d = decisions().iloc[[0, 2]].reset_index(drop=True)
    sims = pd.DataFrame({"tfidf": [0.8, 0.9], "embedding": [0.9, 0.95]})
    facts = ch.findings(ch.pooled_percent(d, kinds), sims, kinds, NAMES)
    assert np.isnan(facts["mss_tfidf"]) and facts["fss_tfidf"] == 0.0
    assert ch.headline(facts)["tfidf"] == 0


def test_paper_rows_offline_say_not_run_and_name_the_reference_judge():
    rows = ch.paper_rows(ch.pooled_percent(decisions(), KINDS8), NAMES, backend="reference", model="m")
    assert len(rows) == 9
    llm_rows = [r for r in rows if r[0].endswith(".llm")]
    assert all(r[1] is None for r in llm_rows)
    assert llm_rows[0][2] == "reference judge: 100.0"
    assert all(len(r[2]) <= 40 for r in rows if len(r) == 3)
    table = compare(rows, backend="reference")
    assert len(table) == 9


def test_llm_steps_offline_return_placeholders():
    s = ch.judge_with_llm([], None, backend="reference", model="m")
    assert len(s.same) == 0 and s.client is None and "not run" in s.summary
    agreement, per_model, ranges = ch.judge_model_axis([], [], s, ["m", "n"], backend="reference", rubric="full",
                                                       orders=["ab"], early_stop=True, instances=None)
    assert agreement is None and per_model is None
    assert ranges.iloc[0, 0] == "not run: offline backend"
    assert ch.axis_placeholder("replay", ["m"]).iloc[0, 0] == "not run: one judge model (m)"
    assert ch.status("reference", "m") == "computed locally (no LLM)"
    assert ch.status("replay", "m") == "LLM (m, replay)"


def test_similarity_summary_rows_follow_the_kind_order():
    sims = pd.DataFrame({"tfidf": np.arange(8) / 10, "embedding": np.arange(8) / 10})
    table = ch.similarity_summary(sims, KINDS8)
    assert list(table.index) == list(KINDS)
    assert table.loc["wording_only", ("tfidf", "max")] == 0.4


def test_suite_file_and_setup_agree():
    assert len(load_suite(valid_only=True)) == len(ch.setup().pairs)
