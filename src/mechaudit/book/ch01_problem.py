"""Chapter 01 (the problem): the toy design's tables and one benchmark instance, one call per step.

The toy part reads ``mechaudit.workflow.toy`` runs (``2 * n_runs`` runs, depth 0 first); the benchmark part
reads a loaded ``Benchmark`` and its perturbation suite.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mechaudit import divergence, diversity
from mechaudit.errors import MechauditError
from mechaudit.model import Benchmark, Hypothesis, Instance, mechanism_key
from mechaudit.perturb import describe_change, load_suite, make_suite
from mechaudit.report.facts import fact
from mechaudit.report.tables import Column, with_columns
from mechaudit.workflow.toy import TOY_RULES, ToyHypothesis

ToyRule = Callable[[list[tuple[ToyHypothesis, ToyHypothesis]]], np.ndarray]


#: glue key -> the table cells its prose value restates (format: tests/test_table_prose.py)
CITED_CELLS = {
    "ch01_extra_pp_exact": (("tbl-ch01-extra", ("Exact rule",), "Extra divergence (pp)"),),
    "ch01_extra_pp_initiator": (("tbl-ch01-extra", ("Initiator rule",), "Extra divergence (pp)"),),
}


def verdict_table(pairs: Sequence[tuple[ToyHypothesis, ToyHypothesis]],
                  rules: Mapping[str, ToyRule] = TOY_RULES) -> pd.DataFrame:
    """One row per matched pair (index: opening): both mechanisms (columns named after the two runs)
    and one "same (<rule>)" bool column per rule."""
    a_run, b_run = pairs[0][0].run, pairs[0][1].run
    table = pd.DataFrame({a_run: [a.mechanism for a, _ in pairs], b_run: [b.mechanism for _, b in pairs]},
                         index=pd.Index([a.opening_id for a, _ in pairs], name="opening"))
    for name, same in rules.items():
        table[f"same ({name})"] = same(list(pairs))
    return table


def divergence_matrices(runs: Sequence[Sequence[ToyHypothesis]],
                        rules: Mapping[str, ToyRule] = TOY_RULES) -> dict[str, np.ndarray]:
    """Run-by-run divergence matrix (``(n, n)``, fractions) of the toy runs under each rule."""
    return {name: divergence.divergence_matrix(runs, same) for name, same in rules.items()}


def extra_summary(matrices: Mapping[str, np.ndarray], n_runs: int) -> tuple[pd.DataFrame, int]:
    """Per rule (index): mean same-depth divergence at K=0 and K=1 and mean cross-depth divergence
    (fractions), extra divergence (pp) and the exact two-sided permutation p; the first ``n_runs`` runs
    of each matrix are at depth 0. Also returns the number of distinct splits (the smallest p is one
    over it)."""
    rows, n_splits = {}, 0
    for rule, D in matrices.items():
        same = divergence.same_depth_divergence(D, [0] * n_runs + [1] * (len(D) - n_runs))
        test = divergence.permutation_test([D], n_a=n_runs)
        n_splits = test.n_partitions
        rows[rule] = {"same-depth K=0": same[0], "same-depth K=1": same[1],
                      "cross-depth": float(D[:n_runs, n_runs:].mean()),
                      "extra (pp)": 100 * test.extra, "exact p": test.p_value}
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("rule").round(3)
    share = Column.of(ProblemFacts, "run_div_exact")
    return with_columns(table, {"same-depth K=0": share, "same-depth K=1": share, "cross-depth": share,
                                "extra (pp)": Column.of(ProblemFacts, "extra_pp_exact")}), n_splits


def group_counts(runs: Sequence[Sequence[ToyHypothesis]],
                 rules: Mapping[str, ToyRule] = TOY_RULES) -> pd.DataFrame:
    """Distinct mechanisms in the pooled hypotheses of all runs: one row per rule (index), one integer
    column per grouping method ("components", "complete" linkage)."""
    pool = [h for run in runs for h in run]
    pairs = [(a, b) for a in pool for b in pool]
    counts = {}
    for rule, same in rules.items():
        matrix = same(pairs).reshape(len(pool), len(pool))
        counts[rule] = {method: diversity.n_groups(diversity.group(matrix, method=method))
                        for method in ("components", "complete")}
    return pd.DataFrame.from_dict(counts, orient="index").rename_axis("rule").astype(int)


def pick_instance(bench: Benchmark, instance_id: str | None) -> Instance:
    """The instance with id ``instance_id`` (``None``: the benchmark's first); an unknown id raises
    ``MechauditError`` naming the ids that exist."""
    if instance_id is None:
        return bench.instances[0]
    found = [i for i in bench.instances if i.id == instance_id]
    if not found:
        known = ", ".join(i.id for i in bench.instances)
        raise MechauditError(f"no instance {instance_id!r} in the benchmark (instances: {known})",
                             field="instance_id")
    return found[0]


def openings_table(bench: Benchmark, instance_id: str) -> pd.DataFrame:
    """The instance's opening hypotheses (index: opening id): initiating event, route (entity names
    joined by " > ") and the number of chain steps (int)."""
    names = bench.vocabulary
    rows = {}
    for h in bench.openings(instance_id):
        initiator, route, _ = mechanism_key(h)
        rows[h.id] = {"initiating event": names[initiator].name, "route": " > ".join(names[i].name for i in route),
                      "chain steps": len(h.chain)}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("opening")


def example_suite(bench: Benchmark, opening: Hypothesis, data_dir: str | Path | None = None,
                  seed: int = 0) -> list[dict]:
    """The perturbation pairs of one opening hypothesis, one per kind: the committed suite (``data_dir``
    None), else the folder's ``perturbations.jsonl``, else a suite made now from its vocabulary."""
    if data_dir is None:
        suite = load_suite()
    elif (Path(data_dir) / "perturbations.jsonl").exists():
        suite = load_suite(Path(data_dir) / "perturbations.jsonl")
    else:
        suite = make_suite(bench.by_instance(opening.instance), seed=seed, vocabulary=bench.vocabulary)
    return [p for p in suite if p["original"].id == opening.id and p["variant"] is not None]


def perturbation_table(suite: Sequence[dict]) -> pd.DataFrame:
    """The original and each variant of one opening (index: kind): what the text change was, the chain
    as written (step texts joined by " > ") and whether the mechanism key is the original's (bool)."""
    original = suite[0]["original"]
    rows = {"original": {"what changed": "", "chain as written": " > ".join(s.text for s in original.chain),
                         "same mechanism": True}}
    for pair in suite:
        variant = pair["variant"]
        rows[pair["kind"]] = {"what changed": describe_change(original, variant),
                              "chain as written": " > ".join(s.text for s in variant.chain),
                              "same mechanism": mechanism_key(variant) == mechanism_key(original)}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("kind")


def explanations(suite: Sequence[dict]) -> str:
    """The explanation of the original and of its ``wording_only`` variant, each wrapped at 76
    characters under its label."""
    reworded = next(p["variant"] for p in suite if p["kind"] == "wording_only")
    return "\n".join(textwrap.fill(h.explanation, 76, initial_indent=f"{label + ':':14}", subsequent_indent=" " * 14)
                     for label, h in (("original", suite[0]["original"]), ("wording only", reworded)))


@dataclass(frozen=True)
class ProblemFacts:
    """The numbers chapter 01's prose quotes (glued under ``ch01``)."""

    n_openings: int = fact(unit="openings", doc="opening hypotheses of the toy instance")
    n_runs: int = fact(unit="runs", doc="toy runs per depth")
    n_runs_total: int = fact(unit="runs", doc="toy runs at both depths")
    n_matched: int = fact(unit="pairs", doc="matched pairs of the first depth-0 and the first depth-1 run")
    run_div_exact: float = fact(digits=2, doc="their run divergence under the exact rule (fraction)")
    run_div_initiator: float = fact(digits=2, doc="their run divergence under the initiator rule (fraction)")
    extra_pp_exact: float = fact(unit="pp", digits=1, doc="extra divergence under the exact rule")
    extra_pp_initiator: float = fact(unit="pp", digits=1, doc="extra divergence under the initiator rule")
    n_splits: int = fact(unit="splits", doc="unordered splits of the runs into two depth groups")
    min_p: float = fact(digits=4, doc="the smallest attainable exact p-value, one over the splits")
    n_pool: int = fact(unit="hypotheses", doc="hypotheses delivered by all toy runs")
    groups_exact: int = fact(unit="mechanisms", doc="distinct mechanisms in the pool, exact rule, complete linkage")
    groups_initiator: int = fact(unit="mechanisms", doc="the same under the initiator rule")
    n_instances: int = fact(unit="instances", doc="instances of the benchmark")
    n_bench_openings: int = fact(unit="openings", doc="opening hypotheses of the instance shown")


def chapter_facts(runs: Sequence[Sequence[ToyHypothesis]], verdicts: pd.DataFrame, run_div: Mapping[str, float],
                  summary: pd.DataFrame, n_splits: int, groups: pd.DataFrame, bench: Benchmark,
                  instance: Instance) -> ProblemFacts:
    """:class:`ProblemFacts` of the toy ``runs``, the first pair's ``verdicts``, ``run_div``,
    :func:`extra_summary`, :func:`group_counts` and the benchmark ``instance`` shown."""
    return ProblemFacts(
        n_openings=len(runs[0]), n_runs=len(runs) // 2, n_runs_total=len(runs), n_matched=len(verdicts),
        run_div_exact=run_div["exact"], run_div_initiator=run_div["initiator"],
        extra_pp_exact=summary.loc["exact", "extra (pp)"], extra_pp_initiator=summary.loc["initiator", "extra (pp)"],
        n_splits=n_splits, min_p=1 / n_splits, n_pool=sum(len(run) for run in runs),
        groups_exact=int(groups.loc["exact", "complete"]), groups_initiator=int(groups.loc["initiator", "complete"]),
        n_instances=len(bench.instances), n_bench_openings=len(bench.openings(instance.id)))
