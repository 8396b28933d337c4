"""Chapter 04's steps (``mechaudit.book.ch04_equivalence_rules``): rules, summaries, headline, paper rows."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from mechaudit.backends import Backend
from mechaudit.book import ch04_equivalence_rules as ch
from mechaudit.book.settings import RulesSettings
from mechaudit.paths import PARAMS_DIR
from mechaudit.rules import TfidfRule
from mechaudit.workflow import (
    Delivery,
    Design,
    WorkflowSetup,
    build_rules,
    delivered_diversity,
    load_simulator_params,
    null_params,
    simulate,
)


def _div() -> pd.DataFrame:
    """Two rules on two runs at depths 0 and 1 of one instance (delivered_diversity's columns)."""
    rows = [("key", 0, 6, 5, 5, 4.5), ("key", 1, 6, 7, 7, 6.5), ("tfidf", 0, 6, 2, 3, 5.0),
            ("tfidf", 1, 6, 4, 5, 5.5)]
    return pd.DataFrame([{"instance": "A", "depth": d, "repetition": 0, "rule": r, "n_hypotheses": n,
                          "components": c, "complete": k, "vendi": v} for r, d, n, c, k, v in rows])


def test_rule_summary_has_human_columns_in_rule_order():
    summary = ch.rule_summary(_div())
    assert summary.index.tolist() == ["key", "tfidf"] and summary.index.name == "rule"
    assert list(summary.columns) == ["hypotheses", "groups (components)", "groups (complete)", "Vendi score"]
    assert summary.loc["tfidf", "groups (complete)"] == 4.0 and summary.loc["key", "Vendi score"] == 5.5


def test_rule_groups_reads_the_summary_and_marks_rules_not_run():
    groups = ch.rule_groups(ch.rule_summary(_div()), llm=False)
    assert (groups.tfidf_complete, groups.tfidf_components) == (4.0, 3.0)
    assert groups.mechanism_key_complete is None and groups.embedding_components is None  # not in this run
    ex = ch.exercise_facts(_div()[lambda d: d.rule == "tfidf"], _div().replace({"rule": {"key": "mechanism_key"}}),
                           _div().replace({"rule": {"key": "mechanism_key"}}))
    assert (ex.ex1_complete, ex.ex1_components) == (4.0, 3.0)
    assert ex.ex1_by_depth == "3.0 and 5.0 at K = 0 and 1" and ex.ex2_key_by_depth == "5.0 and 7.0 at K = 0 and 1"


def test_depth_table_by_grouping_and_depth():
    table = ch.depth_table(_div())
    assert table.index.names == ["grouping", "depth"]
    assert list(table.columns) == ["key", "tfidf"]
    assert table.loc[("components", 0), "tfidf"] == 2.0 and table.loc[("complete", 1), "key"] == 7.0


def test_clusters_range_and_paper_rows():
    assert ch.clusters_range(ch.rule_summary(_div())) == "4.0-6.0 per run"
    rows = ch.paper_rows(["mechanism_key", "tfidf"], 0.5, 0.77)
    assert rows == [("sensitivity.tfidf_threshold", 0.5, "threshold used here")]
    both = ch.paper_rows(["tfidf", "embedding"], 0.25, 0.9)
    assert both[1] == ("sensitivity.embedding_threshold", 0.9, "threshold used here") and len(both) == 2


def test_encoder_sentence_names_both_models_only_beside_the_paper():
    assert ch.encoder_sentence(["tfidf"], None, "Titan") == ""
    assert ch.encoder_sentence(["embedding"], None, None) == (
        "The embedding rule used all-MiniLM-L6-v2, a small local encoder.")
    text = ch.encoder_sentence(["embedding"], "my-encoder", "Titan")
    assert text.startswith("The embedding rule used my-encoder; the paper used Titan") and "not comparable" in text


def test_chapter_rules_drop_the_key_for_llm_runs_only(bench):
    offline = ch.chapter_rules(RulesSettings(rules=["mechanism_key", "tfidf"], tfidf_threshold=0.3), None, bench)
    assert list(offline) == ["mechanism_key", "tfidf"] and offline["tfidf"].threshold == 0.3
    assert ch.openings_label(bench) == 5


def test_key_vs_reference_says_whether_the_counts_part():
    summary = pd.DataFrame({"groups (complete)": [6.92, 6.92, 5.2]}, index=["mechanism_key", "reference", "tfidf"])
    assert "same counts" in ch.key_vs_reference(summary)
    summary.loc["reference", "groups (complete)"] = 6.5
    assert "(6.50 v 6.92 groups per run)" in ch.key_vs_reference(summary)
    assert ch.key_vs_reference(summary.drop(index="reference")) == "this run did not apply both rules"


def test_cluster_count_figure_shows_every_rule_within_the_text_width():
    import matplotlib.pyplot as plt

    from mechaudit.plots.workflow import cluster_count_figure

    fig = cluster_count_figure(_div(), value="complete", caption="Backend: reference")
    assert fig.get_size_inches()[0] <= 7.0
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["Key", "TF-IDF"]  # reader labels
    plt.close(fig)


def test_by_depth_text_reads_one_rule():
    div = pd.DataFrame({"rule": ["k"] * 4 + ["t"] * 2, "depth": [0, 0, 1, 5, 0, 1],
                        "complete": [5.0, 6.0, 8.0, 7.6, 4.0, 4.0]})
    assert ch.by_depth_text(div, "k") == "5.5, 8.0 and 7.6 at K = 0, 1 and 5"
    assert ch.by_depth_text(div, "t") == "4.0 and 4.0 at K = 0 and 1"


def test_a_single_depth_reads_without_a_list():
    div = pd.DataFrame({"rule": ["k"], "depth": [5], "complete": [7.25]})
    assert ch.by_depth_text(div, "k") == "7.2 at K = 5"


def test_the_encoder_sentence_beside_the_paper_in_full():
    assert ch.encoder_sentence(["embedding"], "my-encoder", "Titan") == (
        "The embedding rule used my-encoder; the paper used Titan, so the embedding numbers of the two are not "
        "comparable one to one, even at the same threshold.")


def test_group_facts_read_as_groups_per_run_and_not_run_when_missing():
    from mechaudit.report.facts import FactSpec

    assert ch._groups("d").metadata["mechaudit.fact"] == FactSpec("groups per run", 2, "d", "not run")
    assert ch._per_depth("d").metadata["mechaudit.fact"] == FactSpec("groups per run", None, "d", "not run")


@pytest.fixture(scope="module")
def small_workflow(bench):
    """The simulator's runs of instance A at depths 0 and 1, twice each."""
    design = Design(instances=("A",), depths=(0, 1), runs_per_depth=2)
    sim = load_simulator_params(PARAMS_DIR / "simulator.yaml")
    return WorkflowSetup(bench, design, sim, Delivery(simulate(bench, design, sim, seed=0, log=False), None, "sim"))


def test_exercises_count_strict_tfidf_and_the_null_runs(small_workflow):
    s = small_workflow
    rules = build_rules(["mechanism_key", "tfidf"])
    div = delivered_diversity(s.delivery.runs, rules)
    ex = ch.exercises(s, rules, div, seed=3)
    strict = delivered_diversity(s.delivery.runs, {"tfidf": TfidfRule(threshold=0.5)})
    assert (ex.ex1_complete, ex.ex1_components) == (strict.complete.mean(), strict.components.mean())
    assert ex.ex1_by_depth == ch.by_depth_text(strict, "tfidf")
    assert ex.ex1_key_by_depth == ch.by_depth_text(div, "mechanism_key")
    null = delivered_diversity(simulate(s.bench, s.design, null_params(s.simulator), seed=3, log=False), rules)
    assert ex.ex2_key_by_depth == ch.by_depth_text(null, "mechanism_key")
    assert ex.ex2_tfidf_by_depth == ch.by_depth_text(null, "tfidf")
    assert ch.exercises(s, {"mechanism_key": rules["mechanism_key"]}, div, seed=3) == ch.ExerciseFacts(
        None, None, None, None, None, None)  # glued as "not run"


def test_the_plan_counts_the_workflow_and_the_judge_on_delivered_pairs(tmp_path):
    from collections import Counter

    design = tmp_path / "design.yaml"
    design.write_text(yaml.safe_dump({"design": {"instances": ["A"], "depths": [0, 1], "runs_per_depth": 1}}))
    p = {"backend": Backend.ANTHROPIC, "data_dir": None, "design_file": str(design), "cache_dir": str(tmp_path),
         "generator_model": "claude-sonnet-4-6", "judge_model": "judge-x", "rules": ["mechanism_key", "tfidf"]}
    planned = ch.plan(p)
    # 2 runs x 5 openings developed, 5 critiques and revisions at depth 1; the judge on the 10 pairs of each
    # run's 5 delivered hypotheses: the two certain calls of early stop and one uncertain
    judge = "judge judge-x (delivered pairs)"
    assert Counter((x.stage, x.exact) for x in planned) == Counter({
        ("workflow develop", True): 10, ("workflow critique", False): 5, ("workflow revise", False): 5,
        (judge, False): 40, (f"{judge}, early-stop extra (upper bound)", False): 20})
    assert {x.request.model for x in planned if x.stage.startswith("judge")} == {"judge-x"}
