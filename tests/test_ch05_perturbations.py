"""Chapter 05's steps (``mechaudit.book.ch05_perturbations``): suite set-up, tables, findings, paper rows."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

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
    fresh = ch.setup(regenerate_suite=True)  # the default seed, 0, built the shipped suite
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


# --------------------------------------------------------------------------- the steps a notebook calls


def test_joined_keeps_the_common_start_up_to_its_last_space():
    assert ch._joined(["matched: 7.5", "matched: 7.9"]) == "matched: 7.5 / 7.9"
    assert ch._joined(["matched: 7.5", "matched: 11.2"]) == "matched: 7.5 / 11.2"


def test_percent_facts_read_in_percent_to_one_decimal():
    from mechaudit.report.facts import FactSpec

    assert ch._pct("d").metadata["mechaudit.fact"] == FactSpec("%", 1, "d", "n/a")
    assert ch._pct("d", missing="not run").metadata["mechaudit.fact"].missing == "not run"


def test_conclusions_name_the_four_statements():
    audits = {"template": suite_audit(True, 0.9)}
    table = ch.conclusions(audits, NAMES, ch.separation_by_suite(audits))
    assert table.index.name == "statement" and table.index.tolist() == [
        "TF-IDF calls most first-step swaps the same mechanism",
        "embeddings at either threshold call most first-step swaps the same",
        "swaps look more alike than rewordings to TF-IDF",
        "some threshold separates every swap from every rewording (TF-IDF or embeddings)"]


@pytest.fixture(scope="module")
def template():
    """The shipped template-built suite's set-up (read once; tests must not change it)."""
    return ch.setup()


def test_counts_by_suite_list_every_kind_in_order(template):
    s = template
    rows = [p for p in s.suite if p["kind"] != "wording_only"][::-1]  # one kind missing, the rest reversed
    table = ch.counts_by_suite({"template": dataclasses.replace(s, suite=rows)})
    assert table.loc["template-built suite"].index.tolist() == list(KINDS)
    assert table.loc[("template-built suite", "wording_only"), "built"] == 0


def test_selfserved_rows_are_replayed_answers():
    pooled = pd.DataFrame({selfserved.LABEL: [12.34, 50.0, 0.0]}, index=list(ch.PAPER_KINDS))
    assert ch.selfserved_rows(pooled) == [
        ("perturbations.first_step_swapped_pct_different.llm", 12.3, "replayed answers"),
        ("perturbations.middle_step_swapped_pct_different.llm", 50.0, "replayed answers"),
        ("perturbations.meaning_preserving_pct_different.llm", 0.0, "replayed answers")]


def test_paper_rows_of_an_llm_run_name_the_model_and_every_rule():
    pooled = ch.pooled_percent(decisions(llm=pd.array([True, False] * 4, dtype="boolean")), kinds=KINDS8)
    rows = ch.paper_rows(pooled, NAMES, backend=Backend.ANTHROPIC, model="m")
    key = "perturbations.first_step_swapped_pct_different"
    assert rows[:3] == [(f"{key}.tfidf", 0.0), (f"{key}.embedding", 50.0, "MiniLM; matched: 50.0"),
                        (f"{key}.llm", 0.0, "m, anthropic")]


def rule_set() -> ch.RuleSet:
    """:data:`NAMES` with rule objects: TF-IDF rules in place of both embedding rules (no model)."""
    from mechaudit.rules import ReferenceJudge, TfidfRule

    emb, matched = TfidfRule(threshold=0.5), TfidfRule(threshold=0.6)
    matched.threshold_ = 0.6
    return dataclasses.replace(NAMES, rules={"tfidf": TfidfRule(threshold=0.25), "embedding 0.77": emb,
                                             "embedding matched 0.80": matched,
                                             "reference (full)": ReferenceJudge("full")}, target_rate=0.25)


def test_thresholds_in_use_label_whose_they_are():
    from mechaudit import paper

    names = rule_set()
    assert ch.thresholds_in_use(names) == {"tfidf": {"threshold 0.25 (paper)": 0.25},
                                           "embedding": {"0.5 (paper, Titan)": 0.5, "0.60 (rate-matched)": 0.6}}
    paper.show(False)
    assert ch.thresholds_in_use(names) == {"tfidf": {"threshold 0.25 (default)": 0.25},
                                           "embedding": {"0.5 (default)": 0.5, "0.60 (rate-matched)": 0.6}}


def small_setup(s: ch.PerturbationSetup, instances=None) -> ch.PerturbationSetup:
    """The first two pairs of every kind of the template-built suite ``s`` (8 pairs)."""
    keep = [i for k in KINDS for i in [j for j, kind in enumerate(s.kinds) if kind == k][:2]]
    bench = s.bench if instances is None else SimpleNamespace(instances=instances, vocabulary=s.bench.vocabulary)
    return ch.PerturbationSetup(bench, [s.suite[i] for i in keep], [s.pairs[i] for i in keep],
                                [s.kinds[i] for i in keep])  # every pair of the suite is valid


def test_audit_suite_offline_runs_every_rule_and_the_recorded_judge(template):
    s, names = small_setup(template), rule_set()
    a = ch.audit_suite(s, names, client=None, model="m", selfserved=selfserved.recorded(False))
    assert list(a.decisions.columns) == [*names.rules, ch.LLM_COLUMN, selfserved.LABEL]
    assert a.decisions["tfidf"].tolist() == names.rules["tfidf"].same(s.pairs).tolist()
    assert a.decisions[ch.LLM_COLUMN].isna().all() and a.llm.client is None
    assert a.selfserved_pairs == 8 and a.selfserved is not None
    assert a.decisions[selfserved.LABEL].tolist() == a.selfserved.same.tolist()
    assert a.selfserved.summary.startswith(f"LLM judge ({selfserved.MODEL}): ")
    np.testing.assert_allclose(a.sims["tfidf"], names.rules["tfidf"].similarity(s.pairs))
    np.testing.assert_allclose(a.sims["embedding"], names.rules["embedding 0.77"].similarity(s.pairs))
    assert list(a.sims.columns) == ["tfidf", "embedding"]
    plain = ch.audit_suite(s, names, client=None, model="m")
    assert (plain.selfserved, plain.selfserved_pairs) == (None, None)
    assert selfserved.LABEL not in plain.decisions


def first_steps_match(pairs) -> list[bool]:
    """The fake API's judge: the same mechanism when the first steps' texts match."""
    return [a.chain[0].text == b.chain[0].text for a, b in pairs]


FINDINGS = {"A": "FINDING OF A", "B": "FINDING OF B", "C": "FINDING OF C", "D": "FINDING OF D"}


def test_judge_with_llm_asks_the_fake_api_with_the_given_findings(template, tmp_path, api_key):
    from fake_anthropic import FakeAnthropic, client_for, workflow_reply

    s = small_setup(template)
    fake = FakeAnthropic(workflow_reply)
    llm = ch.judge_with_llm(s.pairs, FINDINGS, client=client_for(fake, tmp_path), model="claude-x")
    assert llm.same.tolist() == first_steps_match(s.pairs) and llm.client is not None
    assert llm.summary == ("LLM judge (claude-x): 16 calls (2.00 per pair of 3 planned; early stop True), 0 invalid "
                           "JSON replies (excluded), 0 undecided pairs (excluded)")
    assert len(fake.message_bodies) == 16 and all(b["model"] == "claude-x" for b in fake.message_bodies)
    assert all("FINDING OF" in json.dumps(b) for b in fake.message_bodies)
    assert "one component at a time" not in json.dumps(fake.message_bodies[0])  # the full rubric
    a = ch.audit_suite(small_setup(template, FINDINGS), rule_set(), client=llm.client, model="claude-x", rubric="step",
                       orders=("ab", "ba"), early_stop=False)
    asked = fake.message_bodies[16:]
    assert len(asked) == 16 and all("FINDING OF" in json.dumps(b) for b in asked)  # both orders of every pair
    assert all("one component at a time" in json.dumps(b) for b in asked)
    assert a.decisions[ch.LLM_COLUMN].tolist() == first_steps_match(s.pairs)


def test_judge_model_axis_with_two_models(template, tmp_path, api_key):
    from fake_anthropic import FakeAnthropic, client_for, workflow_reply

    def reply(body):  # model b calls every pair the same
        return json.dumps({"verdict": "same", "reason": "r"}) if body["model"] == "b" else workflow_reply(body)

    s = small_setup(template)
    fake = FakeAnthropic(reply)
    client = client_for(fake, tmp_path)
    first = ch.judge_with_llm(s.pairs, FINDINGS, client=client, model="a")
    agreement, per_model, ranges = ch.judge_model_axis(s.pairs, first, ["a", "b", "a"], kinds=s.kinds, rubric="full",
                                                       orders=["ab", "ba"], early_stop=False, instances=FINDINGS)
    sent_b = [b for b in fake.message_bodies if b["model"] == "b"]
    assert len(sent_b) == 16 and all("FINDING OF" in json.dumps(b) for b in sent_b)  # both orders, every pair
    assert agreement.index.names == ["model_a", "model_b"] and agreement.index.tolist() == [("a", "b")]
    same = np.array(first_steps_match(s.pairs))
    assert agreement.loc[("a", "b"), "raw_agreement"] == round(same.mean(), 3) < 1  # b: every pair the same
    assert per_model.index.tolist() == ["a", "b"] and per_model["first_step_swapped"].tolist() == [100.0, 0.0]
    assert ranges.loc["first_step_swapped", ["spread", "model_high"]].tolist() == [100.0, "a"]


def test_chapter_facts_of_two_suites(template):
    from mechaudit.book.chapter import LOCAL, ChapterContext, headline_provenance
    from mechaudit.book.settings import RunSettings
    from mechaudit.paper import reported

    s, names = small_setup(template), rule_set()
    swap = np.array([k.endswith("swapped") for k in s.kinds])

    def audit(tfidf_same, llm) -> ch.SuiteAudit:
        d = pd.DataFrame({"tfidf": tfidf_same, "embedding 0.77": ~swap, "embedding matched 0.80": ~swap,
                          "reference (full)": ~swap, ch.LLM_COLUMN: llm})
        sims = pd.DataFrame({"tfidf": np.where(swap, 0.3, 0.7), "embedding": np.where(swap, 0.5, 0.9)})
        return ch.SuiteAudit(s, d, None, sims)

    audits = {"template": audit(np.ones(len(swap), dtype=bool), pd.array(~swap, dtype="boolean")),
              "reworded": audit(~swap, not_run(len(swap)))}
    separation = ch.separation_by_suite(audits)
    f = ch.chapter_facts(ChapterContext(RunSettings(backend="replay")), "m", audits, names, separation)
    assert f.headline_fss_tfidf == 0.0 and f.rw.headline_fss_tfidf == 100.0 and f.headline_fss_llm == 100.0
    assert f.llm_answer == "The LLM judge (m) calls 100 % of template-built first-step swaps different."
    assert f.changed_statements == "TF-IDF calls most first-step swaps the same mechanism"
    assert f.kept_statements.split("; ") == list(ch.conclusions(audits, names, separation).index[1:])
    assert (f.tfidf_threshold, f.embedding_threshold, f.matched_threshold, f.matched_target_rate) == (
        0.25, 0.5, 0.6, 25.0)
    assert f.headline_status == "LLM (m, replay)"
    assert (f.headline_provenance, f.headline_verdict) == headline_provenance("ch05", True)
    assert f.paper_first_step_swapped_embedding == reported("perturbations.first_step_swapped_pct_different.embedding")
    assert f.paper_meaning_preserving_tfidf == reported("perturbations.meaning_preserving_pct_different.tfidf")
    assert (f.selfserved_coverage, f.selfserved_answer, f.selfserved_headline, f.selfserved_provenance) == \
        selfserved.NOT_REPLAYED
    one = ch.chapter_facts(ChapterContext(RunSettings()), "m", {"template": audits["template"]}, names,
                           separation.loc[["template-built suite"]])
    assert one.rw == ch.RewordedFacts(*[None] * 15) and one.changed_statements is None and one.kept_statements is None
    assert one.headline_status == LOCAL
    assert (one.headline_provenance, one.headline_verdict) == headline_provenance("ch05", False)


def test_the_plan_asks_every_valid_pair_of_every_suite_of_the_data_folder_per_model(small_data_dir):
    from collections import Counter

    p = {"data_dir": str(small_data_dir), "judge_model": "m", "judge_models": ["n"], "judge_rubric": "step",
         "judge_orders": ["ab", "ab", "ba"], "judge_early_stop": True}
    planned = ch.plan(p)
    n = len(load_suite(small_data_dir / "perturbations.jsonl", valid_only=True))
    assert n == 5  # early stop: the first two orders are certain, the third an upper bound
    assert Counter((x.stage, x.exact) for x in planned) == Counter({
        ("judge m (step, template suite)", True): 2 * n, ("judge n (step, template suite)", True): 2 * n,
        ("judge m (step, template suite), early-stop extra (upper bound)", False): n,
        ("judge n (step, template suite), early-stop extra (upper bound)", False): n})
    assert [x.request.model for x in planned[:3 * n]] == ["m"] * 3 * n
    assert "one component at a time" in planned[0].request.system  # the step rubric
    assert all(x.exact for x in ch.plan({**p, "judge_early_stop": False}))


def test_build_rules_match_the_embedding_rate_to_tfidf_and_the_reference_judge(bench):
    from mechaudit.book.settings import PerturbationsSettings
    from mechaudit.paths import embedding_store
    from mechaudit.rules import ReferenceJudge, TfidfRule
    from mechaudit.rules.audit import within_instance_pairs

    p = PerturbationsSettings(tfidf_threshold=0.3, tfidf_fit_on="pair", reference_rubric="step")
    names = ch.build_rules(bench, p)
    matching = within_instance_pairs(bench.hypotheses)
    target = (np.mean(TfidfRule(threshold=0.3).same(matching)) + np.mean(ReferenceJudge("step").same(matching))) / 2
    assert names.n_matching_pairs == len(matching) == 760 and names.target_rate == pytest.approx(target)
    matched = names.rules[names.matched]
    assert names.matched == f"embedding matched {matched.threshold_:.2f}"
    assert np.mean(matched.same(matching)) == pytest.approx(target, abs=0.01)  # the rate it was fitted to
    assert (names.tfidf, names.embedding, names.reference) == ("tfidf", "embedding 0.77", "reference (step)")
    assert list(names.rules) == ["tfidf", "embedding 0.77", names.matched, "reference (step)"]
    tfidf, embedding = names.rules["tfidf"], names.rules["embedding 0.77"]
    assert (tfidf.threshold, tfidf.fit_on, embedding.threshold) == (0.3, "pair", 0.77)
    assert embedding.cache_dir == matched.cache_dir == embedding_store(True) is not None
    assert embedding.model == matched.model


def test_paper_rows_round_every_share_to_one_decimal():
    pooled = pd.DataFrame({c: [12.345] * 4 for c in ["tfidf", "embedding 0.77", "embedding matched 0.80",
                                                     "reference (full)", ch.LLM_COLUMN]},
                          index=["first_step_swapped", "middle_step_swapped", "meaning_preserving", "swapped"])
    rows = ch.paper_rows(pooled, NAMES, backend=Backend.REFERENCE, model="m")
    assert rows[1][2] == "MiniLM; matched: 12.3" and rows[2][2] == "reference judge: 12.3"


def test_setup_reads_the_suite_file_unless_asked_to_rebuild_it(small_data_dir):
    assert len(ch.setup(small_data_dir).pairs) == len(load_suite(small_data_dir / "perturbations.jsonl",
                                                                 valid_only=True)) == 5


def test_build_rules_encode_with_the_settings_model(bench, tmp_path, monkeypatch):
    from mechaudit.book.settings import PerturbationsSettings
    from mechaudit.rules.embedding import store_path, text_key, write_store
    from mechaudit.schema import hypothesis_text

    name, rng = "tests-encoder", np.random.default_rng(0)
    vectors = rng.normal(size=(len(bench.hypotheses), 8))
    write_store(store_path(tmp_path, name), {text_key(name, hypothesis_text(h)): v / np.linalg.norm(v)
                                             for h, v in zip(bench.hypotheses, vectors)})
    monkeypatch.setattr(ch, "embedding_store", lambda on: tmp_path)  # this model's vectors, no encoder
    names = ch.build_rules(bench, PerturbationsSettings(embedding_model=name))
    assert names.rules[names.embedding].model == names.rules[names.matched].model == name
