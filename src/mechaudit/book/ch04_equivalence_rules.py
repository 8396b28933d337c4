"""Chapter 04 (measured diversity): the rules of a run, group counts per rule, readable summaries
of ``workflow.delivered_diversity`` (one row per run and rule); :func:`plan` is the chapter's cost
plan (``mechaudit estimate``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import pandas as pd

from mechaudit.book.chapter import headline_provenance, judge_models
from mechaudit.book.settings import CritiqueDepthSettings, RulesSettings
from mechaudit.llm.pricing import Planned
from mechaudit.paths import embedding_store
from mechaudit.report.facts import fact
from mechaudit.schema import Benchmark, load_benchmark
from mechaudit.workflow import WorkflowSetup, build_rules, delivered_diversity, null_params, rules_for, simulate
from mechaudit.workflow.plan import plan_delivered_judges, plan_workflow

#: human column names of the per-rule summary
SUMMARY_COLUMNS = {"n_hypotheses": "hypotheses", "components": "groups (components)",
                   "complete": "groups (complete)", "vendi": "Vendi score"}


def chapter_rules(p: RulesSettings | CritiqueDepthSettings, client, bench: Benchmark) -> dict[str, object]:
    """The rule objects of chapters 02 and 04 by name (``workflow.build_rules`` at the settings' thresholds,
    encoder and judge model): offline ``p.rules``; LLM runs drop the simulator-only rules and add the LLM
    judge answering through ``client`` (``workflow.rules_for``). ``p.embedding_cache``: keep vectors in the
    store shared with chapters 02 and 05."""
    return build_rules(rules_for(p.rules, client is not None), client, tfidf_threshold=p.tfidf_threshold,
                       embedding_threshold=p.embedding_threshold, embedding_model=p.embedding_model,
                       judge_model=p.judge_model, instances=bench.instances,
                       embedding_cache_dir=embedding_store(p.embedding_cache))


def openings_label(bench: Benchmark) -> int | str:
    """Opening hypotheses per instance: one number, or "a-b" when instances differ."""
    counts = sorted({len(bench.openings(i.id)) for i in bench.instances})
    return counts[0] if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"


def rule_summary(div: pd.DataFrame) -> pd.DataFrame:
    """Mean over all runs per rule (index "rule", rules in first-seen order): delivered hypotheses,
    groups under connected components and complete linkage, Vendi score (human column names)."""
    summary = div.groupby("rule", sort=False)[list(SUMMARY_COLUMNS)].mean()
    return summary.rename(columns=SUMMARY_COLUMNS).round(2)


def depth_table(div: pd.DataFrame) -> pd.DataFrame:
    """Mean groups per run by grouping and critique depth (index: grouping, depth), one column per
    rule; averaged over instances and runs, rounded to 1 decimal."""
    long = div.melt(id_vars=["depth", "rule"], value_vars=["complete", "components"], var_name="grouping",
                    value_name="groups")
    wide = long.pivot_table(index=["grouping", "depth"], columns="rule", values="groups", aggfunc="mean",
                            sort=False)
    wide = wide[list(dict.fromkeys(div.rule))]
    wide.columns.name = None
    return wide.round(1)


def key_vs_reference(summary: pd.DataFrame, column: str = "groups (complete)") -> str:
    """A clause saying whether the reference judge's mean group count equals the mechanism key's
    in this run (``summary``: :func:`rule_summary`); names the counts when they differ."""
    if not {"mechanism_key", "reference"} <= set(summary.index):
        return "this run did not apply both rules"
    key, ref = summary.loc["mechanism_key", column], summary.loc["reference", column]
    if key == ref:
        return "in this run the two give the same counts and their lines overlap"
    return f"in this run they part ({ref:.2f} v {key:.2f} groups per run), so such chains did occur"


def clusters_range(summary: pd.DataFrame, column: str = "groups (complete)") -> str:
    """The headline: lowest and highest mean group count over the rules, e.g. "5.2-6.9 per run"."""
    lo, hi = float(summary[column].min()), float(summary[column].max())
    return f"{lo:.1f}-{hi:.1f} per run"


def paper_rows(rules: Sequence[str], tfidf_threshold: float, embedding_threshold: float) -> list[tuple]:
    """Rows ``(key, ours, note)`` for ``comparison.compare``: the TF-IDF and embedding thresholds used
    here beside the paper's, for the text rules among ``rules`` (the encoder is no result: no row)."""
    rows = []
    if "tfidf" in rules:
        rows.append(("sensitivity.tfidf_threshold", tfidf_threshold, "threshold used here"))
    if "embedding" in rules:
        rows.append(("sensitivity.embedding_threshold", embedding_threshold, "threshold used here"))
    return rows


def encoder_sentence(rules: Sequence[str], embedding_model: str | None, paper_model: str | None) -> str:
    """Which encoder the embedding rule used here, beside the paper's (``paper_model``; None: the
    comparison with the paper is off); "" when the rule did not run."""
    if "embedding" not in rules:
        return ""
    ours = embedding_model or "all-MiniLM-L6-v2, a small local encoder"
    if paper_model is None:
        return f"The embedding rule used {ours}."
    return (f"The embedding rule used {ours}; the paper used {paper_model}, so the embedding numbers of the two "
            "are not comparable one to one, even at the same threshold.")


def by_depth_text(div: pd.DataFrame, rule: str, grouping: str = "complete") -> str:
    """A rule's mean groups per run at each depth as text, e.g. "5.8, 8.0 and 7.6 at K = 0, 1 and 5"."""
    means = div[div.rule == rule].groupby("depth")[grouping].mean()
    values = [f"{v:.1f}" for v in means]
    depths = [f"{int(d)}" for d in means.index]

    def join(items: list[str]) -> str:
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]

    return f"{join(values)} at K = {join(depths)}"


def _groups(doc: str) -> Any:
    return fact(unit="groups per run", digits=2, missing="not run", doc=doc)


@dataclass(frozen=True)
class RuleGroups:
    """The headline row and the mean groups per run (all runs) under the groupings the prose quotes
    (glued under ``ch04``); ``None`` for a rule this run did not apply."""

    headline_clusters: str = fact(doc="lowest and highest mean group count over the rules (:func:`clusters_range`)")
    headline_provenance: str = fact(doc="the intro row's provenance")
    headline_verdict: str = fact(doc="the intro row's verdict")
    key_vs_reference: str = fact(doc="whether the reference judge counts as the mechanism key does")

    mechanism_key_complete: float | None = _groups("mechanism key, complete linkage")
    tfidf_complete: float | None = _groups("TF-IDF rule, complete linkage")
    tfidf_components: float | None = _groups("TF-IDF rule, connected components")
    embedding_complete: float | None = _groups("embedding rule, complete linkage")
    embedding_components: float | None = _groups("embedding rule, connected components")


def rule_groups(summary: pd.DataFrame, llm: bool) -> RuleGroups:
    """:class:`RuleGroups` from :func:`rule_summary`; ``llm``: whether the runs came from an LLM backend."""
    column = {"complete": "groups (complete)", "components": "groups (components)"}

    def mean(name: str) -> float | None:
        rule, _, grouping = name.rpartition("_")
        return float(summary.loc[rule, column[grouping]]) if rule in summary.index else None

    provenance, verdict = headline_provenance("ch04", llm)
    return RuleGroups(clusters_range(summary), provenance, verdict, key_vs_reference(summary),
                      **{f.name: mean(f.name) for f in fields(RuleGroups)[4:]})


def _per_depth(doc: str) -> Any:
    return fact(unit="groups per run", missing="not run", doc=doc)


@dataclass(frozen=True)
class ExerciseFacts:
    """Numbers the exercise solutions quote (glued under ``ch04``): TF-IDF at 0.5 and both rules on the
    null simulator's runs; "not run" without the key or TF-IDF (LLM runs)."""

    ex1_complete: float | None = _groups("strict TF-IDF, complete linkage")
    ex1_components: float | None = _groups("strict TF-IDF, connected components")
    ex1_by_depth: str | None = _per_depth("strict TF-IDF per depth (:func:`by_depth_text`)")
    ex1_key_by_depth: str | None = _per_depth("the mechanism key per depth, this run")
    ex2_key_by_depth: str | None = _per_depth("the mechanism key per depth, null runs")
    ex2_tfidf_by_depth: str | None = _per_depth("the TF-IDF rule per depth, null runs")


def exercise_facts(div_strict: pd.DataFrame, div: pd.DataFrame, div_null: pd.DataFrame) -> ExerciseFacts:
    """:class:`ExerciseFacts` from ``delivered_diversity`` frames: the strict TF-IDF rule on this run
    (``div_strict``), this run's rules (``div``) and the null runs' (``div_null``)."""
    return ExerciseFacts(ex1_complete=float(div_strict.complete.mean()),
                         ex1_components=float(div_strict.components.mean()),
                         ex1_by_depth=by_depth_text(div_strict, "tfidf"),
                         ex1_key_by_depth=by_depth_text(div, "mechanism_key"),
                         ex2_key_by_depth=by_depth_text(div_null, "mechanism_key"),
                         ex2_tfidf_by_depth=by_depth_text(div_null, "tfidf"))


def exercises(setup: WorkflowSetup, rules: Mapping[str, object], div: pd.DataFrame, seed: int) -> ExerciseFacts:
    """:class:`ExerciseFacts` of this run (its ``rules`` by name and their ``div``): the TF-IDF rule at
    threshold 0.5 on its runs, and the key and TF-IDF rules on the null simulator's runs with ``seed``."""
    if not {"mechanism_key", "tfidf"} <= set(rules):
        return ExerciseFacts(None, None, None, None, None, None)
    div_strict = delivered_diversity(setup.delivery.runs, build_rules(["tfidf"], tfidf_threshold=0.5))
    null_runs = simulate(setup.bench, setup.design, null_params(setup.simulator), seed=seed, log=False)
    return exercise_facts(div_strict, div, delivered_diversity(null_runs, {k: rules[k] for k in ("mechanism_key",
                                                                                                 "tfidf")}))


# --------------------------------------------------------------------------- cost plan

def plan(p: Mapping[str, Any]) -> list[Planned]:
    """The chapter's requests (``mechaudit estimate``): the workflow, then the LLM judge on all pairs
    within each run's delivered set."""
    bench = load_benchmark(p.get("data_dir"))
    work, runs, exact = plan_workflow(p, bench)
    return work + plan_delivered_judges(p, bench, runs, exact, lambda rs, rec: delivered_diversity(rs, {"llm": rec}),
                                        judge_models(p))
