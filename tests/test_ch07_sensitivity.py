"""Chapter 07's steps (``mechaudit.book.ch07_sensitivity``): sweeps, separation, agreement, stability rows."""

from __future__ import annotations

import dataclasses
import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from mechaudit.book import ch07_sensitivity as ch
from mechaudit.book import selfserved
from mechaudit.book.chapter import ChapterContext
from mechaudit.book.settings import RunSettings
from mechaudit.perturb import load_pairs
from mechaudit.report import provenance
from mechaudit.report.comparison import compare
from mechaudit.rules import LLMJudge, TfidfRule


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
    s = SimpleNamespace(reference=SimpleNamespace(rubric="full"), set_pairs=[None] * 6)
    offline = pd.DataFrame({"pairs": [180, 180], "repeat changed": [0, 0], "reversal changed": [0, 0]},
                           index=pd.Index(["tfidf", "embedding"], name="rule"))
    check = ch.StabilityCheck(offline, None, False)
    facts = ch.chapter_facts(ChapterContext(RunSettings()), "m", s, fixed, three, ch.agreement_at_thresholds(fixed),
                             best, {"template": sep}, check)
    assert facts.headline_agreement == f"{facts.agreement_pct_low:.1f} to {facts.agreement_pct_high:.1f} %"
    assert facts.agreement_pct_low == pytest.approx(50.0) and facts.agreement_pct_high == pytest.approx(100 * 5 / 6)
    assert facts.tfidf == ch.RuleShape(sep.tfidf.mean_sim_mp, sep.tfidf.mean_sim_swapped,
                                       sep.tfidf.rewording_more_similar_pct)  # the template suite: means only
    assert facts.rw == ch.NO_SUITE and facts.ref_tfidf_agreement == "83.3 %" and facts.tfidf_best_kappa_reference == 1.0
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


# --------------------------------------------------------------------------- the recorded self-served judge

@pytest.fixture(scope="module")
def recorded_slice():
    """Chapter 07's setup on every 13th template-suite pair (25, of every kind) in place of the
    committed-set pairs (chapter 06 recorded every self-served answer for them, in every order),
    TF-IDF at 0.5 in place of the embedding model, and the recorded self-served judge."""
    s = ch.setup()
    pairs, _ = load_pairs(None, "template")
    s = dataclasses.replace(s, embedding=TfidfRule(threshold=0.5), set_pairs=pairs[::13])
    return s, selfserved.recorded(False)


def recorded_verdicts(own: selfserved.SelfServed, s: ch.SensitivitySetup, pairs) -> np.ndarray:
    """Each pair's majority verdict (True = same) read from the recorded replies themselves: two of
    its three answers (ab, ab, ba; the early-stopped judge never needs the third to overturn two)."""
    judge = LLMJudge(model=own.model, client=own.client, instances=s.bench.instances, early_stop=False)
    calls = judge.judge(pairs)
    said = [json.loads(own.client.cache.record(key)["response"]["text"])["verdict"] for key in calls["key"]]
    votes = pd.Series(said, index=calls["pair"]).groupby(level=0).agg(list)
    assert votes.map(len).eq(3).all()
    return np.array([v.count("same") >= 2 for v in votes])


def test_the_self_served_judge_joins_the_agreement_and_stability_with_sklearns_kappa(recorded_slice):
    s, own = recorded_slice
    fixed = ch.fixed_decisions(s, ch.similarities(s, s.set_pairs), selfserved=own)
    assert fixed.selfserved_pairs == 25 and fixed.third == "reference (full)"  # the headline keeps the rules
    same = recorded_verdicts(own, s, s.set_pairs)
    assert list(fixed.decisions[selfserved.LABEL]) == list(same)
    table = ch.selfserved_agreement(fixed).set_index("method_a")
    at = ch.agreement_at_thresholds(fixed)
    for rule in ("reference (full)", "tfidf 0.25", "embedding 0.5"):
        rule_same = np.asarray(fixed.decisions[rule], dtype=bool)
        assert table.loc[rule, "raw_agreement"] == pytest.approx(np.mean(rule_same == same))
        assert table.loc[rule, "kappa"] == pytest.approx(cohen_kappa_score(rule_same, same))
        assert at.loc[(rule, selfserved.LABEL), "raw agreement"] == round(table.loc[rule, "raw_agreement"], 3)
    assert (table["kappa"] != 0).any() and table["raw_agreement"].nunique() > 1  # not a degenerate slice
    check = ch.stability_check(s, s.set_pairs[:12], client=None, models=["m"], selfserved=own)
    assert check.selfserved_pairs == 12 and check.table.index[-1] == selfserved.LABEL
    assert check.table["pairs"].tolist() == [12] * 4 and check.table["pairs"].dtype.kind == "i"
    coverage, answer, stable, headline, source = ch.selfserved_sentences(fixed, check, 25, True)
    low, high = 100 * table["raw_agreement"].min(), 100 * table["raw_agreement"].max()
    assert headline == f"{low:.1f} to {high:.1f} %; {table['kappa'].min():.2f} to {table['kappa'].max():.2f}"
    assert source == provenance.INDEPENDENT and "every pair of the agreement step and the stability check" in coverage
    assert f"calls {100 * same.mean():.1f} % of the committed-set pairs the same" in answer
    assert selfserved.CAVEAT in answer and "between the paper's three methods" in answer
    assert f"{int(check.selfserved['reversal changed'])} ({check.selfserved['reversal changed %']:.1f} %)" in stable
    paper = ch.paper_table(ch.three_methods(fixed), fixed, check, llm=False, tfidf_threshold=0.25,
                           embedding_threshold=0.77)
    own_rows = paper[paper.index.str.contains("self-served SmolLM2")]
    assert len(own_rows) == 8 and len(paper) == 22
    assert own_rows.loc["Agreement between rules, lowest, self-served SmolLM2 (%)", "provenance"] == \
        provenance.INDEPENDENT
    three = ch.three_methods(fixed, selfserved.LABEL)
    assert own_rows.loc["Agreement between rules, lowest, self-served SmolLM2 (%)", "this run"] == \
        f"{100 * three['raw_agreement'].min():.1f}"


def test_a_self_served_step_not_all_recorded_shows_how_many_and_no_number(recorded_slice):
    s, own = recorded_slice
    never = (s.set_pairs[0][0], s.set_pairs[0][0])  # a hypothesis beside itself: never asked
    s = dataclasses.replace(s, set_pairs=[*s.set_pairs[:3], never])
    fixed = ch.fixed_decisions(s, ch.similarities(s, s.set_pairs), selfserved=own)
    assert fixed.selfserved_pairs == 3 and selfserved.LABEL not in fixed.decisions
    assert ch.selfserved_agreement(fixed) is None
    check = ch.stability_check(s, s.set_pairs, client=None, models=["m"], selfserved=own)
    assert check.selfserved is None and check.selfserved_pairs == 3 and len(check.table) == 3
    coverage, answer, stable, headline, source = ch.selfserved_sentences(fixed, check, 4, True)
    assert "3 of 4 pairs of the agreement step and 3 of 4 pairs of the stability check" in coverage
    assert "(none yet)" in coverage
    assert answer.startswith("Its answers are recorded for 3 of the 4 committed-set pairs") and "%" not in answer
    assert stable.startswith("Its answers are recorded for 3 of the 4 stability pairs") and "%" not in stable
    assert (headline, source) == ("recording not complete", provenance.NOT_RUN)
    assert not ch.selfserved_rows(fixed, check)
    done = dataclasses.replace(check, selfserved=pd.Series({"pairs": 4, "repeat changed": 0, "reversal changed": 1,
                                                            "reversal changed %": 25.0, "same %": 50.0}))
    assert [r[0] for r in ch.selfserved_rows(fixed, done)][1:] == [
        "sensitivity.repeat_changed", "sensitivity.reversal_changed", "sensitivity.reversal_changed_pct"]
    assert "1 (25.0 %) when the order is reversed" in ch.selfserved_sentences(fixed, done, 4, False)[2]


def test_no_self_served_judge_with_an_llm_backend_or_on_other_data(recorded_slice, tmp_path):
    s, _ = recorded_slice
    assert selfserved.recorded(True) is None and selfserved.recorded(False, tmp_path) is None
    fixed = ch.fixed_decisions(s, ch.similarities(s, s.set_pairs), selfserved=None)
    check = ch.stability_check(s, s.set_pairs[:4], client=None, models=["m"], selfserved=None)
    assert fixed.selfserved_pairs is None and check.selfserved_pairs is None and len(check.table) == 3
    assert selfserved.LABEL not in fixed.decisions and not ch.selfserved_rows(fixed, check)
    coverage, answer, _, headline, source = ch.selfserved_sentences(fixed, check, 25, True)
    assert (coverage, answer, headline, source) == selfserved.NOT_REPLAYED
    paper = ch.paper_table(ch.three_methods(fixed), fixed, check, llm=False, tfidf_threshold=0.25,
                           embedding_threshold=0.77)
    assert len(paper) == 14 and not paper.index.str.contains("SmolLM2").any()


# --------------------------------------------------------------------------- the steps a notebook calls


def test_range_rows_give_the_three_methods_extremes():
    three = pd.DataFrame({"raw_agreement": [0.8512, 0.9], "kappa": [0.61234, 0.7]})
    assert ch._range_rows(three, "m") == [
        ("sensitivity.raw_agreement_pct_low", 85.1, "TF-IDF, MiniLM, m"),
        ("sensitivity.raw_agreement_pct_high", 90.0, "TF-IDF, MiniLM, m"),
        ("sensitivity.kappa_low", 0.612, "TF-IDF, MiniLM, m"), ("sensitivity.kappa_high", 0.7, "TF-IDF, MiniLM, m")]


def test_agreement_at_thresholds_prints_as_the_prose_glues():
    from mechaudit.report.tables import COLUMNS_ATTR, Column

    at = ch.agreement_at_thresholds(fixed_methods())
    assert at.index.names == ["method a", "method b"]
    assert at.attrs[COLUMNS_ATTR] == {"raw agreement": Column("%", 1, 100), "kappa": Column("", 2),
                                      "same rate a": Column("%", 1, 100), "same rate b": Column("%", 1, 100)}


def test_setup_reads_the_named_suite():
    s = ch.setup(suite="reworded")
    pairs, kinds = load_pairs(None, "reworded")
    assert [b.chain for _, b in s.suite_pairs] == [b.chain for _, b in pairs] and s.kinds == kinds  # not only ids


def test_suites_sweeps_and_separations_of_every_suite(small_data_dir):
    suites = ch.suites_of()
    assert list(suites) == ["template", "reworded"] and len(suites["reworded"][0]) == 320
    assert suites["reworded"][1] == load_pairs(None, "reworded")[1]
    assert {n: len(pairs) for n, (pairs, _) in ch.suites_of(small_data_dir).items()} == {"template": 5}
    kinds = {"template": ["wording_only", "first_step_swapped"], "reworded": ["wording_only", "first_step_swapped"]}
    sims = {"template": {"tfidf": np.array([0.9, 0.4]), "embedding": np.array([0.8, 0.85])},
            "reworded": {"tfidf": np.array([0.3, 0.6]), "embedding": np.array([0.9, 0.2])}}
    grids = {"tfidf": np.array([0.5]), "embedding": np.array([0.5, 0.95])}
    sweep = ch.sweep_by_suite(sims, grids, kinds=kinds)
    assert list(sweep.columns) == ["threshold", "kind", "pct_different", "rule", "suite"] and len(sweep) == 2 * 6
    row = sweep[(sweep.suite == "reworded suite") & (sweep.rule == "tfidf") & (sweep.kind == "wording_only")]
    assert row["pct_different"].tolist() == [100.0]  # 0.3 < 0.5
    table, seps = ch.separation_by_suite(sims, grids, kinds=kinds)
    assert table.loc[("template-built suite", "tfidf"), "separating thresholds"] == "(0.400, 0.900]"
    assert table.loc[("reworded suite", "tfidf"), "separating thresholds"] == "none"
    assert seps["template"].separating_sentence == "one of the 2 rules has one"
    assert seps["reworded"].separating_sentence == "one of the 2 rules has one"  # embedding: (0.2, 0.9]
    assert seps["reworded"].tfidf.mean_sim_mp == 0.3


def test_chapter_facts_of_an_llm_run_judge_the_headline_against_the_paper():
    from mechaudit.book.chapter import headline_provenance

    fixed = fixed_methods()
    sims = {"tfidf": np.array([0.9, 0.8, 0.3, 0.2, 0.1, 0.05]), "embedding": np.linspace(0.9, 0.4, 6)}
    grids = {"tfidf": np.array([0.25, 0.5]), "embedding": np.array([0.5, 0.7])}
    best = ch.best_agreement(ch.agreement_sweep(sims, grids, fixed), sims, fixed)
    _, sep = ch.separation(sims, np.array([True] * 3 + [False] * 3), grids)
    s = SimpleNamespace(reference=SimpleNamespace(rubric="full"), set_pairs=[None] * 6)
    check = ch.StabilityCheck(pd.DataFrame({"pairs": [6]}), None, True)
    three = pd.DataFrame({"raw_agreement": [0.85, 0.89], "kappa": [0.59, 0.74]})  # the paper's range
    facts = ch.chapter_facts(ChapterContext(RunSettings(backend="replay")), "m", s, fixed, three,
                             ch.agreement_at_thresholds(fixed), best, {"template": sep, "reworded": sep}, check)
    expected = headline_provenance("ch07", True, {"agreement": 85.0, "κ": 0.59})
    assert (facts.headline_provenance, facts.headline_verdict) == expected != headline_provenance("ch07", True)
    assert facts.rw == sep and facts.headline_status == "LLM (m, replay)"


def test_paper_rows_cut_the_judge_models_note_at_40_characters():
    table = pd.DataFrame({"pairs": [8, 8], "repeat changed": [0, 1], "reversal changed": [2, 1],
                          "reversal changed %": [25.0, 12.5], "same %": [50.0, 62.5]},
                         index=pd.Index(["claude-model-number-one", "claude-model-number-two"], name="model"))
    agreement = pd.DataFrame({"model_a": ["a"], "model_b": ["b"], "n": [8], "raw_agreement": [0.875], "kappa": [0.75]})
    rows = ch.paper_rows(ch.three_methods(fixed_methods()), fixed_methods(), ch.StabilityCheck(table, agreement, True),
                         tfidf_threshold=0.25, embedding_threshold=0.77)
    assert rows[5] == ("sensitivity.embedding_threshold", 0.77, "all-MiniLM-L6-v2, not Titan v2")
    assert rows[-1][2] == "claude-model-number-one, claude-model-nu"  # 40 characters


def test_fixed_decisions_and_stability_with_the_fake_api(tmp_path, api_key):
    from fake_anthropic import FakeAnthropic, client_for, workflow_reply

    def reply(body):  # model b calls every pair the same
        return json.dumps({"verdict": "same", "reason": "r"}) if body["model"] == "b" else workflow_reply(body)

    s = ch.setup()
    pairs = s.set_pairs[::190]  # 4 pairs
    s = dataclasses.replace(s, embedding=TfidfRule(threshold=0.5), set_pairs=pairs)
    fake = FakeAnthropic(reply)
    client = client_for(fake, tmp_path)
    sims = {"tfidf": np.array([0.25, 0.2, 0.3, 0.1]), "embedding": np.array([0.5, 0.49, 0.9, 0.1])}
    fixed = ch.fixed_decisions(s, sims, client=client, rubric="step")
    assert fixed.third == "llm claude-opus-4-6" and list(fixed.decisions)[-1] == fixed.third
    assert fixed.decisions["tfidf 0.25"].tolist() == [True, False, True, False]  # same from the threshold on
    assert fixed.decisions["embedding 0.5"].tolist() == [True, False, True, False]
    assert {b["model"] for b in fake.message_bodies} == {"claude-opus-4-6"}
    assert all("one component at a time" in b["system"][0]["text"] if isinstance(b["system"], list)
               else "one component at a time" in b["system"] for b in fake.message_bodies)
    first = [a.chain[0].text == b.chain[0].text for a, b in pairs]
    assert list(fixed.decisions[fixed.third]) == first
    check = ch.stability_check(s, pairs, client=client, models=["a", "b"])
    assert check.llm_run is True and check.table.index.name == "model" and check.table.index.tolist() == ["a", "b"]
    assert check.table["pairs"].tolist() == [4, 4]
    assert check.agreement.index.tolist() == [("a", "b")]
    assert check.agreement.loc[("a", "b"), "raw_agreement"] == float(np.mean(first))
    assert ch.stability_check(s, pairs, client=client, models=["a"]).agreement is None


def test_the_self_served_sentences_in_full(recorded_slice):
    s, own = recorded_slice
    fixed = ch.fixed_decisions(s, ch.similarities(s, s.set_pairs), selfserved=own)
    check = ch.stability_check(s, s.set_pairs[:4], client=None, models=["m"], selfserved=own)
    coverage, answer, stable, _, _ = ch.selfserved_sentences(fixed, check, 25, False)
    assert coverage == (f"The answers of the self-served {selfserved.SHORT} are recorded for every pair of the "
                        "agreement step and the stability check, and it joins their tables as a further method.")
    assert stable.startswith(f"Replayed from its recorded answers on the 4 stability pairs, the self-served "
                             f"{selfserved.SHORT} changes ") and stable.endswith("when the order is reversed.")
    same = 100 * np.mean(np.asarray(fixed.decisions[selfserved.LABEL], dtype=bool))
    assert answer.startswith(f"Replayed from its recorded answers, the self-served {selfserved.SHORT} calls "
                             f"{same:.1f} % of the committed-set pairs the same and agrees with each of the 3 rules")
    rows = ch.selfserved_rows(fixed, check)
    assert rows[4] == ("sensitivity.stability_pairs", 4, "replayed answers")
    part = dataclasses.replace(check, selfserved=None, selfserved_pairs=3)
    coverage = ch.selfserved_sentences(fixed, part, 25, False)[0]
    assert "25 of 25 pairs of the agreement step and 3 of 4 pairs of the stability check" in coverage
    assert "shows its numbers only for a step whose pairs are all recorded (the agreement step)" in coverage


def test_the_self_served_share_called_the_same_leaves_undecided_pairs_out():
    fixed = fixed_methods()
    own = np.array([True, True, pd.NA, False, False, True], dtype=object)  # 3 of the 5 decided: same
    fixed = dataclasses.replace(fixed, decisions={**fixed.decisions, selfserved.LABEL: own}, selfserved_pairs=6)
    row = pd.Series({"pairs": 6, "repeat changed": 0, "reversal changed": 0, "reversal changed %": 0.0})
    check = ch.StabilityCheck(pd.DataFrame({"pairs": [6]}), None, False, row, 6)
    answer = ch.selfserved_sentences(fixed, check, 6, False)[1]
    assert "calls 60.0 % of the committed-set pairs the same" in answer


def test_the_plan_asks_the_first_model_on_the_set_pairs_and_every_model_on_the_stability_sample(openings_data_dir):
    from collections import Counter

    from mechaudit.rules.audit import within_instance_pairs
    from mechaudit.schema import load_benchmark

    p = {"data_dir": str(openings_data_dir), "judge_models": ["m", "n"], "judge_rubric": "step",
         "judge_orders": ["ab", "ba", "ba"], "stability_pairs": 5, "seed": 3}
    planned = ch.plan(p)
    bench = load_benchmark(openings_data_dir)
    set_pairs = within_instance_pairs(bench.hypotheses)
    # 40 same-instance pairs of the 20 openings (early stop: two certain calls, one upper bound); the
    # stability sample asks every order
    assert len(set_pairs) == 40 and Counter((x.stage, x.exact) for x in planned) == Counter({
        ("judge m (set pairs)", True): 2 * 40, ("judge m (set pairs), early-stop extra (upper bound)", False): 40,
        ("judge m (stability)", True): 15, ("judge n (stability)", True): 15})
    assert {x.request.model for x in planned if "set pairs" in x.stage} == {"m"}
    asked = [x for x in planned if x.stage == "judge n (stability)"]
    assert asked[0].request.model == "n" and "one component at a time" in asked[0].request.system
    judge = LLMJudge(rubric="step", model="n", orders=["ab", "ba", "ba"], instances=bench.instances)
    sample = ch.stability_sample(SimpleNamespace(set_pairs=set_pairs), 5, 3)
    assert [x.request.key for x in asked] == [r.key for r in judge.requests(sample)]
