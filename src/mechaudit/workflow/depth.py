"""Critique-depth effects of a set of runs under one equivalence rule (paper §3, §5.1, App. A).

Glue between workflow runs and ``mechaudit.divergence``: per instance the run-by-run divergence
matrix (runs by depth, then repetition), Fig. 2's same-depth and extra divergences, and Table 1
(instance-averaged extra divergence, bootstrap interval, exact permutation p and ceiling).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mechaudit.divergence import (
    comparison_matrix,
    design_counts,
    divergence_matrix,
    extra_divergence,
    permutation_test,
    same_depth_divergence,
)
from mechaudit.errors import MechauditError
from mechaudit.rules.base import Rule
from mechaudit.rules.llm_judge import model_verdicts
from mechaudit.rules.mechanism_key import MechanismKeyRule, keys_divergence_matrix
from mechaudit.rules.registry import build as build_rule
from mechaudit.schema import Benchmark, Hypothesis
from mechaudit.workflow.intervals import bootstrap_interval
from mechaudit.workflow.records import Run

#: A rule object (``same(pairs)``, e.g. ``MechanismKeyRule()``) or a ``same`` function.
RuleLike = Rule | Callable[[list[tuple[Hypothesis, Hypothesis]]], np.ndarray]


@dataclass(frozen=True)
class InstanceMatrix:
    """One instance's divergence matrix ``D`` (n_runs x n_runs) and the depth of each run."""

    instance: str
    D: np.ndarray
    depths: np.ndarray


def by_instance(runs: Sequence[Run]) -> dict[str, list[Run]]:
    """Runs (or ``RunOutcome`` records) per instance (first-seen order), by depth then repetition."""
    out: dict[str, list[Run]] = {}
    for run in runs:
        out.setdefault(run.instance, []).append(run)
    return {k: sorted(v, key=lambda r: (r.depth, r.repetition)) for k, v in out.items()}


def counts(runs: Sequence[Run]) -> dict[str, int]:
    """Runs, run pairs and matched hypothesis pairs, counted as the paper does (App. A)."""
    c = design_counts({i: [r.delivered for r in rs] for i, rs in by_instance(runs).items()})
    return {"runs": c.runs, "run_pairs": c.run_pairs, "matched_pairs": c.matched_pairs}


def key_matrix(runs: Sequence[Run]) -> np.ndarray:
    """Mechanism-key divergence matrix of one instance's runs' delivered hypotheses."""
    return MechanismKeyRule().divergence_matrix([r.delivered for r in runs])


#: The simulator's truth measures: ``mechanism_key`` (every changed chain id is a new mechanism) and
#: ``paper_rates`` (each kind of change different at the paper's LLM-judge rates).
MEASURES = ("mechanism_key", "paper_rates")


def measure_of(rule: str) -> str:
    """The truth measure a rule's estimate is compared with: its own name if a measure, else the key's."""
    return rule if rule in MEASURES else "mechanism_key"


KeysMatrix = Callable[[Sequence[Sequence[tuple[str, Any]]]], np.ndarray]


def keys_function(rule: Any) -> KeysMatrix | None:
    """The rule's ``keys_divergence_matrix`` over ``RunOutcome.keys``, or None if it needs the texts."""
    if isinstance(rule, MechanismKeyRule):
        return keys_divergence_matrix
    return getattr(rule, "keys_divergence_matrix", None)


def measure_function(measure: str) -> KeysMatrix:
    """``keys_function`` of the rule named ``measure`` (one of ``MEASURES``, default settings)."""
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r}; choose one of {', '.join(MEASURES)}")
    return keys_function(build_rule(measure))


def outcome_matrices(outcomes: Sequence, measure: str | KeysMatrix = "mechanism_key") -> list[InstanceMatrix]:
    """``InstanceMatrix`` per instance of ``RunOutcome`` records under a measure or ``keys_function``."""
    fn = measure_function(measure) if isinstance(measure, str) else measure
    return [InstanceMatrix(instance, fn([o.keys for o in os_]), np.array([o.depth for o in os_]))
            for instance, os_ in by_instance(outcomes).items()]


def rule_matrix(sets: Sequence[Sequence[Hypothesis]], rule: RuleLike, progress: bool = False) -> np.ndarray:
    """Run-by-run divergence matrix of one instance's delivered sets: the rule's own
    ``divergence_matrix`` if it has one, else ``divergence.divergence_matrix``."""
    if rule is None:
        raise MechauditError("a rule is None: pass a rule object (the mechanism key is MechanismKeyRule())",
                             field="rules")
    fast = getattr(rule, "divergence_matrix", None)
    return fast(sets) if fast is not None else divergence_matrix(sets, rule, progress)


def instance_matrices(runs: Sequence[Run], rule: RuleLike, progress: bool = False) -> list[InstanceMatrix]:
    """Divergence matrix per instance under ``rule`` (see ``rule_matrix``)."""
    return [InstanceMatrix(i, rule_matrix([r.delivered for r in rs], rule, progress), np.array([r.depth for r in rs]))
            for i, rs in by_instance(runs).items()]


def per_instance_effects(matrices: Sequence[InstanceMatrix], comparisons: Sequence[tuple[int, int]]
                         ) -> pd.DataFrame:
    """Fig. 2's points: instance, panel ("same-depth", label ``K=k``; "extra", ``a v b``), value (pp)."""
    rows = []
    for m in matrices:
        for k, value in same_depth_divergence(m.D, m.depths).items():
            rows.append({"instance": m.instance, "panel": "same-depth", "label": f"K={k}", "value": 100 * value})
        for a, b in comparisons:
            D_ab, n_a = comparison_matrix(m.D, m.depths, a, b)
            rows.append({"instance": m.instance, "panel": "extra", "label": f"{a} v {b}",
                         "value": 100 * extra_divergence(D_ab, n_a)})
    return pd.DataFrame(rows, columns=["instance", "panel", "label", "value"])


def extra_ceiling(D: np.ndarray, n_a: int) -> float:
    """Largest extra divergence (fraction) ``D``'s same-depth pairs allow: a run divergence is at most
    1, so the extra divergence cannot exceed ``1 - pooled same-depth mean``."""
    extra = extra_divergence(D, n_a)  # validates D and n_a
    cross = float(np.asarray(D, dtype=float)[:n_a, n_a:].mean())
    return 1.0 - (cross - extra)  # 1 - pooled same-depth mean


def depth_table(matrices: Sequence[InstanceMatrix], comparisons: Sequence[tuple[int, int]],
                level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Table 1 per comparison: comparison, extra_pp, ci_low_pp / ci_high_pp
    (``intervals.bootstrap_interval``; NaN when ``n_boot`` is 0), p_value (exact, two-sided),
    n_partitions (per instance), n_instances, max_extra_pp (mean ``extra_ceiling``), normalised
    (``extra_pp / max_extra_pp``; NaN for a zero ceiling).
    """
    rows = []
    for a, b in comparisons:
        subs = [comparison_matrix(m.D, m.depths, a, b) for m in matrices]
        sizes = {n_a for _, n_a in subs}
        if len(sizes) != 1:
            raise ValueError(f"comparison {a} v {b}: instances have different numbers of runs at depth {a}")
        n_a = sizes.pop()
        res = permutation_test([D for D, _ in subs], n_a)
        low, high = (bootstrap_interval([D for D, _ in subs], n_a, level, n_boot, seed) if n_boot > 0
                     else (np.nan, np.nan))
        ceiling = 100 * float(np.mean([extra_ceiling(D, n_a) for D, n_a in subs]))
        rows.append({"comparison": f"{a} v {b}", "extra_pp": 100 * res.extra, "ci_low_pp": 100 * low,
                     "ci_high_pp": 100 * high, "p_value": res.p_value,
                     "n_partitions": res.n_partitions, "n_instances": len(subs), "max_extra_pp": ceiling,
                     "normalised": 100 * res.extra / ceiling if ceiling > 0 else np.nan})
    return pd.DataFrame(rows, columns=["comparison", "extra_pp", "ci_low_pp", "ci_high_pp", "p_value",
                                       "n_partitions", "n_instances", "max_extra_pp", "normalised"])


def rule_tables(runs: Sequence[Run], rules: Mapping[str, RuleLike],
                comparisons: Sequence[tuple[int, int]], progress: bool = False, seed: int = 0,
                level: float = 0.95) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. 2 points and Table 1 (bootstrap ``seed`` and ``level``) for each named ``RuleLike``, with a
    ``rule`` column."""
    points, tables = [], []
    for name, rule in rules.items():
        mats = instance_matrices(runs, rule, progress)
        points.append(per_instance_effects(mats, comparisons).assign(rule=name))
        tables.append(depth_table(mats, comparisons, level=level, seed=seed).assign(rule=name))
    return pd.concat(points, ignore_index=True), pd.concat(tables, ignore_index=True)


def judge_model_table(runs: Sequence[Run], comparisons: Sequence[tuple[int, int]], models: Sequence[str], client, *,
                      instances) -> pd.DataFrame:
    """The judge-model axis: extra divergence (pp) per model (rows, "judge model") and comparison
    label, each model judging every matched pair as the ``llm`` rule does (``model_verdicts``)."""
    def rule(model: str):
        def same(pairs) -> np.ndarray:
            verdicts, _ = model_verdicts(pairs, [model], client, rubric="full", instances=instances)
            return verdicts.loc[model].to_numpy(dtype=float, na_value=np.nan)
        return same

    rules = {m: rule(m) for m in dict.fromkeys(models)}
    _, table = rule_tables(runs, rules, comparisons)
    labels = [f"{a} v {b}" for a, b in comparisons]
    return (table.pivot(index="rule", columns="comparison", values="extra_pp")
            .reindex(index=list(rules), columns=labels).rename_axis(index="judge model", columns=None))


def change_profile(runs: Sequence[Run], bench: Benchmark) -> pd.DataFrame:
    """Per depth, how far delivered chains (simulator ids) moved from their opening's: hypotheses,
    "initiating event changed (%)" and "middle steps changed (%)"; chains of another length are left out."""
    chains = {(i.id, h.id): [s.id for s in h.chain] for i in bench.instances for h in bench.openings(i.id)}
    rows = []
    for run in runs:
        for h in run.delivered:
            ref = chains.get((run.instance, h.opening_id))
            ids = [s.id for s in h.chain]
            if ref is None or len(ref) != len(ids):
                continue
            middle = [a != b for a, b in zip(ids[1:-1], ref[1:-1])]
            rows.append({"depth": run.depth, "first": ids[0] != ref[0], "middle": np.mean(middle) if middle else 0.0})
    df = pd.DataFrame(rows, columns=["depth", "first", "middle"])
    out = df.groupby("depth").agg(hypotheses=("first", "size"), first=("first", "mean"), middle=("middle", "mean"))
    out[["first", "middle"]] *= 100
    return out.rename(columns={"first": "initiating event changed (%)", "middle": "middle steps changed (%)"})
