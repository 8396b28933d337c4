"""Chapter 05's steps (``mechaudit.book.ch05_perturbations``): suite set-up, tables, findings, paper rows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from mechaudit.backends import Backend
from mechaudit.book import ch05_perturbations as ch
from mechaudit.book import selfserved
from mechaudit.book.chapter import axis_placeholder
from mechaudit.perturb import KINDS, SUITE_LABELS, load_suite, rerender_share
from mechaudit.report.comparison import compare
from mechaudit.rules.audit import not_run

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
                         "reference (full)": ~swap, ch.LLM_COLUMN: not_run(8) if llm is None else llm})


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

    pct = percent_different(decisions(), kinds=KINDS8, order=KINDS)
    table = ch.percent_table(pct, kinds=KINDS8, llm_run=False)
    assert list(table.columns)[0] == "pairs" and table["pairs"].tolist() == [2, 2, 2, 2]
    assert table[ch.LLM_COLUMN].tolist() == ["not run"] * 4
    assert table.loc["first_step_swapped", "embedding 0.77"] == 50.0
    assert table.loc["middle_step_swapped", "reference (full)"] == 100.0
    assert ch.percent_table(pct, kinds=KINDS8, llm_run=True)[ch.LLM_COLUMN].tolist() == ["undecided"] * 4


def test_pooled_percent_pools_meaning_preserving_and_swapped_kinds():
    pooled = ch.pooled_percent(decisions(), kinds=KINDS8)
    assert list(pooled.index) == ["first_step_swapped", "middle_step_swapped", "meaning_preserving", "swapped"]
    assert pooled.loc["meaning_preserving", "reference (full)"] == 0.0
    assert pooled.loc["swapped", "reference (full)"] == 100.0
    assert pooled.loc["swapped", "embedding 0.77"] == 25.0


def test_suite_facts_quote_each_share_unrounded_and_none_where_missing():
    s = ch.setup()
    n, swap = len(s.kinds), np.array([k.endswith("swapped") for k in s.kinds])
    tfidf = np.arange(n) % 3 != 0  # a third of every kind called different
    d = pd.DataFrame({"tfidf": tfidf, "embedding 0.77": ~swap, "embedding matched 0.80": np.ones(n, dtype=bool),
                      "reference (full)": ~swap, ch.LLM_COLUMN: not_run(n)})
    sims = pd.DataFrame({"tfidf": np.linspace(0.1, 0.9, n), "embedding": np.linspace(0.5, 0.99, n)})
    audit = ch.SuiteAudit(s, d, None, sims)
    sep = ch.separation_by_suite({"template": audit}).loc[SUITE_LABELS["template"]]
    f = ch.suite_facts(audit, NAMES, sep)
    fss = np.array([k == "first_step_swapped" for k in s.kinds])
    assert f.headline_fss_tfidf == pytest.approx(100 * np.mean(~tfidf[fss]))
    assert f.mp_tfidf_pct == pytest.approx(100 * np.mean(~tfidf[~swap])) != round(f.mp_tfidf_pct, 1)  # glue rounds
    assert (f.headline_fss_embedding, f.headline_fss_matched, f.headline_fss_reference) == (100.0, 0.0, 100.0)
    assert (f.ref_swapped_pct, f.ref_mp_pct, f.mp_embedding_pct) == (100.0, 0.0, 0.0)
    assert f.tfidf_min_sim_swapped == pytest.approx(sims["tfidf"][swap].min())
    assert f.embedding_mean_sim_swapped == pytest.approx(sims["embedding"][swap].mean())
    assert f.tfidf_separating == sep.loc["tfidf", "separating thresholds"]
    assert f.fss_rerendered_pct == float(rerender_share(s.suite, s.bench.vocabulary)["first_step_swapped"])
    assert ch.suite_facts(None, NAMES, None) == ch.RewordedFacts(*[None] * 15)  # glued as "n/a"


def test_paper_rows_offline_say_not_run_and_name_the_reference_judge():
    rows = ch.paper_rows(ch.pooled_percent(decisions(), kinds=KINDS8), NAMES, backend=Backend.REFERENCE, model="m")
    assert len(rows) == 9
    llm_rows = [r for r in rows if r[0].endswith(".llm")]
    assert all(r[1] is None for r in llm_rows)
    assert llm_rows[0][2] == "reference judge: 100.0"
    assert all(len(r[2]) <= 40 for r in rows if len(r) == 3)
    table = compare(rows, llm=False)
    assert len(table) == 9


def test_llm_steps_offline_return_placeholders():
    s = ch.judge_with_llm([], None, client=None, model="m")
    assert len(s.same) == 0 and s.client is None and "not run" in s.summary
    agreement, per_model, ranges = ch.judge_model_axis([], s, ["m", "n"], kinds=[], rubric="full",
                                                       orders=["ab"], early_stop=True, instances=None)
    assert agreement is None and per_model is None
    assert ranges.iloc[0, 0] == "not run: offline backend"
    assert axis_placeholder(True, ["m"]).iloc[0, 0] == "not run: one judge model (m)"


def test_similarity_summary_rows_follow_the_kind_order():
    sims = pd.DataFrame({"tfidf": np.arange(8) / 10, "embedding": np.arange(8) / 10})
    table = ch.similarity_summary(sims, kinds=KINDS8)
    assert list(table.index) == list(KINDS)
    assert table.loc["wording_only", ("tfidf", "max")] == 0.4


def test_suite_file_and_setup_agree():
    assert len(load_suite(valid_only=True)) == len(ch.setup().pairs)


def suite_audit(fss_embedding_same: bool, swap_sim: float) -> ch.SuiteAudit:
    """A two-rule audit of 8 pairs: TF-IDF cosines 0.6 for rewordings and ``swap_sim`` for swaps."""
    d = decisions()
    d["embedding 0.77"] = d["embedding matched 0.80"] = np.array([True, True, fss_embedding_same, True] * 2)
    swap = np.array([k.endswith("swapped") for k in KINDS8])
    sims = pd.DataFrame({"tfidf": np.where(swap, swap_sim, 0.6), "embedding": np.where(swap, 0.85, 0.95)})
    s = ch.PerturbationSetup(bench=None, suite=[], pairs=[], kinds=KINDS8)
    return ch.SuiteAudit(s, d, ch.LLMDecisions(not_run(8), None, "not run"), sims)


def test_conclusions_answer_per_suite_and_mark_what_changes():
    audits = {"template": suite_audit(True, 0.9), "reworded": suite_audit(False, 0.5)}
    separation = ch.separation_by_suite(audits)
    assert separation.loc[("template-built suite", "tfidf"), "rewording more similar (%)"] == 0.0
    assert separation.loc[("reworded suite", "tfidf"), "separating thresholds"] == "(0.500, 0.600]"
    table = ch.conclusions(audits, NAMES, separation)
    assert list(table.columns) == ["template-built suite", "reworded suite", "changes with the suite"]
    swaps_alike = "swaps look more alike than rewordings to TF-IDF"
    assert table.loc[swaps_alike].tolist() == ["yes", "no", "yes"]
    most_same = "embeddings at either threshold call most first-step swaps the same"
    assert table.loc[most_same].tolist() == ["yes", "no", "yes"]  # 100 % of two first-step swaps different
    assert "changes with the suite" not in ch.conclusions({"template": audits["template"]}, NAMES,
                                                          separation.loc[["template-built suite"]]).columns


def test_side_by_side_tables_and_the_long_similarity_frame():
    audits = {"template": suite_audit(True, 0.9), "reworded": suite_audit(False, 0.5)}
    pct = ch.percent_by_suite(audits, llm_run=False)
    assert pct.index.names == ["suite", "kind"] and len(pct) == 8
    assert pct.loc[("reworded suite", "first_step_swapped"), "embedding 0.77"] == 100.0
    long = ch.similarity_long(audits)
    assert list(long.columns) == ["suite", "kind", "rule", "cosine"] and len(long) == 2 * 8 * 2
    assert set(long["suite"]) == {"template-built suite", "reworded suite"}


def test_paper_table_has_one_column_per_suite_and_joins_differing_notes():
    audits = {"template": suite_audit(True, 0.9), "reworded": suite_audit(False, 0.5)}
    table = ch.paper_table(audits, NAMES, backend=Backend.REFERENCE, model="m")
    assert list(table.columns)[:3] == ["paper", "template-built suite", "reworded suite"]
    row = "First step swapped, called different: embedding (%)"
    assert table.loc[row, "template-built suite"] == "0.0" and table.loc[row, "reworded suite"] == "100.0"
    assert table.loc[row, "note"] == "MiniLM; matched: 0.0 / 100.0"
    assert table.loc[row, "provenance"] == ("template-built suite: true by construction; "
                                            "reworded suite: independent computation")
    llm_row = "First step swapped, called different: LLM judge (%)"
    assert table.loc[llm_row, "provenance"] == "not run offline (LLM only)"
    assert table.loc[row, "verdict"] == "template-built suite: built in, not a test; reworded suite: qualified"
    assert ch._joined(["a: 1", "a: 1"]) == "a: 1"


def with_selfserved(a: ch.SuiteAudit, recorded: int) -> ch.SuiteAudit:
    """``a`` with ``recorded`` of its 8 pairs answered by the self-served judge (all 8: its column,
    which calls every swap and no rewording different)."""
    a = dataclasses.replace(a, setup=dataclasses.replace(a.setup, pairs=[(None, None)] * 8))
    if recorded < 8:
        return dataclasses.replace(a, selfserved_pairs=recorded)
    same = pd.array([not k.endswith("swapped") for k in KINDS8], dtype="boolean")
    return dataclasses.replace(a, decisions=a.decisions.assign(**{selfserved.LABEL: same}),
                               selfserved=ch.LLMDecisions(same, None, "replayed"), selfserved_pairs=8)


def test_the_self_served_judge_shows_only_for_suites_whose_pairs_are_all_recorded():
    plain = {"template": suite_audit(True, 0.9), "reworded": suite_audit(False, 0.5)}
    assert "replayed only by an offline run" in ch.selfserved_sentences(plain, True)[0]  # not asked
    none = {"template": with_selfserved(plain["template"], 0), "reworded": with_selfserved(plain["reworded"], 3)}
    coverage, answer, headline, source = ch.selfserved_sentences(none, True)
    assert (headline, source) == ("recording not complete", "not run offline (LLM only)")
    assert "0 of 8 pairs of the template-built suite and 3 of 8 pairs of the reworded suite" in coverage
    assert "(none yet)" in coverage and "make local-judge records the rest" in coverage
    assert answer.startswith("No suite has all its pairs recorded") and "%" not in answer
    assert selfserved.LABEL not in ch.percent_by_suite(none, llm_run=False).columns
    assert not ch.paper_table(none, NAMES, backend=Backend.REFERENCE, model="m").index.str.contains("SmolLM2").any()

    mixed = {"template": none["template"], "reworded": with_selfserved(plain["reworded"], 8)}
    coverage, answer, headline, source = ch.selfserved_sentences(mixed, False)
    assert (headline, source) == ("reworded suite: 100.0 %", "independent computation")
    assert "(the reworded suite)" in coverage
    assert "100.0 % of first-step swaps and 0.0 % of meaning-preserving pairs of the reworded suite" in answer
    assert "template-built" not in answer and "paper" not in answer  # the paper only when it is shown
    assert "against the paper's LLM judge's" in ch.selfserved_sentences(mixed, True)[1]
    pct = ch.percent_by_suite(mixed, llm_run=False)[selfserved.LABEL]
    assert pct.loc["template-built suite"].eq(ch.NOT_RECORDED).all()
    assert pct.loc[("reworded suite", "first_step_swapped")] == 100.0
    table = ch.paper_table(mixed, NAMES, backend=Backend.REFERENCE, model="m")
    row = "First step swapped, called different: self-served SmolLM2 (%)"
    assert table.loc[row, "template-built suite"] == ch.NOT_RECORDED and table.loc[row, "reworded suite"] == "100.0"
    assert table.loc[row, "provenance"] == "independent computation"


def test_cosine_strips_labels_in_words_and_at_most_four_legend_entries():
    from mechaudit.plots.rules import cosine_strips

    audits = {"template": suite_audit(True, 0.9), "reworded": suite_audit(False, 0.5)}
    thresholds = {"tfidf": {"0.25 (paper)": 0.25}, "embedding": {"0.77 (paper)": 0.77, "0.80 (matched)": 0.8}}
    fig = cosine_strips(ch.similarity_long(audits), thresholds, caption="Backend: reference")
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["wording only", "wording + chain", "first step swapped", "middle step swapped"]
    assert [len(leg.get_texts()) for leg in fig.legends] == [2]
    assert all(ax.get_legend() is None for ax in fig.axes)
    notes = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert notes == ["0.25 (paper)", "0.77 (paper)", "0.80 (matched)"]
    assert all("_" not in ax.get_xlabel() + ax.get_title() for ax in fig.axes)


def test_setup_reads_the_reworded_suite():
    s = ch.setup(suite="reworded")
    assert len(s.pairs) == 320 and s.suite[0]["variant"].id.endswith("~wording_only")
    with pytest.raises(ValueError, match="unknown suite"):
        ch.setup(suite="other")


def test_counts_by_suite_count_built_kept_and_re_rendered_variants():
    table = ch.counts_by_suite({"template": ch.setup(), "reworded": ch.setup(suite="reworded")})
    assert list(table.columns) == ["built", "kept", "excluded", "% re-rendered"]
    assert table.loc[("template-built suite", "first_step_swapped"), "% re-rendered"] == 100.0
    assert table.loc[("reworded suite", "first_step_swapped"), "% re-rendered"] == 0.0
    assert table["built"].sum() == 640 and table["excluded"].sum() == 0
