"""Chapter 01's steps (``mechaudit.book.ch01_problem``) on the toy design and the shipped benchmark."""

from __future__ import annotations

import numpy as np
import pytest

from mechaudit.book import ch01_problem as problem
from mechaudit.errors import MechauditError
from mechaudit.schema import load_benchmark
from mechaudit.workflow import toy
from mechaudit.workflow.toy import ToyHypothesis


def _h(opening: str, run: str, initiator: str, route: str, depth: int = 0) -> ToyHypothesis:
    return ToyHypothesis(opening, depth, run, initiator, route)


def test_verdict_table_names_runs_and_gives_each_rules_verdict():
    pairs = [(_h("O1", "a", "I1", "R1"), _h("O1", "b", "I1", "R1", 1)),
             (_h("O2", "a", "I2", "R2"), _h("O2", "b", "I2", "R2'", 1)),
             (_h("O3", "a", "I3", "R3"), _h("O3", "b", "I3'", "R3'", 1))]
    table = problem.verdict_table(pairs)
    assert list(table.index) == ["O1", "O2", "O3"] and table.index.name == "opening"
    assert list(table.columns) == ["a", "b", "same (exact)", "same (initiator)"]
    assert table["same (exact)"].tolist() == [True, False, False]
    assert table["same (initiator)"].tolist() == [True, True, False]


def test_extra_summary_is_zero_without_critique_and_counts_the_splits():
    runs = toy.toy_design(3, 5, rerun_noise=0.0, critique_change=0.0, seed=1)
    summary, n_splits = problem.extra_summary(problem.divergence_matrices(runs), n_runs=5)
    assert n_splits == 126  # C(10, 5) / 2 unordered splits
    assert list(summary.index) == ["exact", "initiator"]
    assert summary["extra (pp)"].tolist() == [0.0, 0.0] and summary["exact p"].tolist() == [1.0, 1.0]


def test_extra_summary_matches_a_hand_computed_design():
    # every depth-1 run replaces every route: same-depth divergence 0, cross-depth 1 under exact
    runs = toy.toy_design(2, 3, rerun_noise=0.0, critique_change=1.0, initiator_change=0.0, seed=0)
    summary, n_splits = problem.extra_summary(problem.divergence_matrices(runs), n_runs=3)
    assert summary.loc["exact", "extra (pp)"] == pytest.approx(100.0)
    assert summary.loc["exact", "exact p"] == pytest.approx(1 / n_splits)
    assert summary.loc["initiator", "extra (pp)"] == 0.0


def test_group_counts_are_integers_and_the_coarse_rule_finds_fewer():
    runs = toy.toy_design(5, 5, seed=0)
    groups = problem.group_counts(runs)
    assert list(groups.columns) == ["components", "complete"] and groups.dtypes.eq(np.int64).all()
    assert groups.loc["initiator", "complete"] <= groups.loc["exact", "complete"]
    n_initiators = len({h.initiator for run in runs for h in run})
    assert groups.loc["initiator", "complete"] == n_initiators


def test_pick_instance_defaults_to_the_first_and_rejects_an_unknown_id():
    bench = load_benchmark()
    assert problem.pick_instance(bench, None).id == bench.instances[0].id
    assert problem.pick_instance(bench, "C").id == "C"
    with pytest.raises(MechauditError, match="no instance 'Z'.*A, B, C, D"):
        problem.pick_instance(bench, "Z")


def test_openings_table_and_perturbation_example_on_the_shipped_data():
    bench = load_benchmark()
    openings = problem.openings_table(bench, "A")
    assert openings.index.name == "opening" and len(openings) == len(bench.openings("A"))
    assert openings["chain steps"].tolist() == [len(h.chain) for h in bench.openings("A")]
    suite = problem.example_suite(bench, bench.openings("A")[0])
    table = problem.perturbation_table(suite)
    assert table.index[0] == "original" and "wording_only" in table.index
    assert table.loc["wording_only", "same mechanism"] and not table.loc["first_step_swapped", "same mechanism"]
    assert table.loc["wording_only", "what changed"].startswith("explanation reworded")
    assert table.loc["wording_only", "chain as written"] == table.loc["original", "chain as written"]


def test_example_suite_is_made_for_a_data_folder_without_a_suite(tmp_path):
    from mechaudit.paths import data_path
    from mechaudit.perturb import make_suite

    for name in ("vocabulary.yaml", "instances.yaml", "hypotheses.jsonl"):
        (tmp_path / name).write_text(data_path(name).read_text(encoding="utf-8"), encoding="utf-8")
    bench = load_benchmark(tmp_path)
    opening = bench.openings("B")[0]
    suite = problem.example_suite(bench, opening, tmp_path)
    assert suite and {p["original"].id for p in suite} == {opening.id}
    made = make_suite(bench.by_instance("B"), seed=0, vocabulary=bench.vocabulary)  # the default seed
    assert [p["variant"] for p in suite] == [p["variant"] for p in made if p["original"].id == opening.id]


def test_chapter_facts_count_the_toy_design_and_the_instance_shown():
    runs = toy.toy_design(4, 3, seed=2)
    pairs = problem.verdict_table(list(zip(runs[0], runs[3], strict=True)))
    summary, n_splits = problem.extra_summary(problem.divergence_matrices(runs), n_runs=3)
    bench = load_benchmark()
    facts = problem.chapter_facts(runs, pairs, {"exact": 0.5, "initiator": 0.25}, summary, n_splits,
                                  problem.group_counts(runs), bench, bench.instances[1])
    assert (facts.n_openings, facts.n_runs, facts.n_runs_total, facts.n_matched, facts.n_pool) == (4, 3, 6, 4, 24)
    assert facts.min_p == pytest.approx(1 / 10) and facts.run_div_initiator == 0.25
    assert facts.n_bench_openings == len(bench.openings(bench.instances[1].id))


def test_explanations_wrap_the_original_and_the_reworded_one_under_their_labels():
    bench = load_benchmark()
    lines = problem.explanations(problem.example_suite(bench, bench.openings("A")[0])).splitlines()
    assert lines[0].startswith("original:     ") and max(map(len, lines)) <= 76
    assert sum(line.startswith("wording only: ") for line in lines) == 1


def test_group_counts_index_the_rules_and_facts_count_runs_as_integers(bench):
    runs = toy.toy_design(2, 2, seed=0)
    assert problem.group_counts(runs).index.name == "rule"
    summary, n_splits = problem.extra_summary(problem.divergence_matrices(runs), n_runs=2)
    facts = problem.chapter_facts(runs, problem.verdict_table(list(zip(runs[0], runs[2], strict=True))),
                                  {"exact": 0.5, "initiator": 0.25}, summary, n_splits, problem.group_counts(runs),
                                  bench, bench.instances[0])
    assert type(facts.n_runs) is int and facts.n_runs == 2  # noqa: E721 (2.0 would print "2.0")


def test_example_suite_reads_the_folders_own_suite(bench, tmp_path):
    from mechaudit.paths import data_path

    lines = data_path("perturbations.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "perturbations.jsonl").write_text("".join(line for line in lines if '"wording_only"' in line),
                                                  encoding="utf-8")
    assert [p["kind"] for p in problem.example_suite(bench, bench.openings("A")[0], tmp_path)] == ["wording_only"]
