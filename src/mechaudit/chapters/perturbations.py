"""Chapter 05, controlled perturbations: which edits does each equivalence rule notice?

One call per step of the chapter: ``setup`` (the benchmark and the valid perturbation pairs),
``build_rules`` (TF-IDF, embeddings at the paper's and at a matched threshold, the reference judge),
``judge_with_llm`` and ``judge_model_axis`` (the LLM-only steps; offline they return "not run"
placeholders), ``percent_table``, ``findings`` (the numbers the prose quotes) and ``paper_rows``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mechaudit.agreement import estimate_range, model_agreement, verdict_matrix
from mechaudit.backends import Backend
from mechaudit.chapters.status import LOCAL, headline_status
from mechaudit.paths import cache_path
from mechaudit.perturb import KINDS, MEANING_PRESERVING, load_suite, make_suite
from mechaudit.rules import EmbeddingRule, LLMJudge, ReferenceJudge, TfidfRule, marginal_same_rate
from mechaudit.rules.audit import percent_different, within_instance_pairs
from mechaudit.rules.base import Pair, Rule
from mechaudit.rules.llm_judge import judge_each_model, majority
from mechaudit.schema import Benchmark, load_benchmark

#: The column of the LLM judge in the decisions table.
LLM_COLUMN = "llm judge"
#: The kinds the paper reports, in the order of its table (the two meaning-preserving kinds pooled).
PAPER_KINDS = ("first_step_swapped", "middle_step_swapped", "meaning_preserving")


@dataclass(frozen=True)
class PerturbationSetup:
    """The benchmark, the whole suite (valid and excluded pairs) and the valid pairs with their kinds."""

    bench: Benchmark
    suite: list[dict[str, Any]]
    pairs: list[Pair]
    kinds: list[str]


def setup(data_dir: str | Path | None = None, *, regenerate_suite: bool = False, seed: int = 0) -> PerturbationSetup:
    """Load the benchmark under ``data_dir`` (default: the shipped data) and its perturbation suite:
    ``perturbations.jsonl`` of that folder, or a fresh suite from its hypotheses and vocabulary when
    ``regenerate_suite``. Only pairs that pass the validity check are judged."""
    bench = load_benchmark(data_dir)
    if regenerate_suite:
        suite = make_suite(bench.hypotheses, seed=seed, vocabulary=bench.vocabulary)
    else:
        suite = load_suite(None if data_dir is None else Path(data_dir) / "perturbations.jsonl")
    kept = [p for p in suite if p["valid"]]
    return PerturbationSetup(bench, suite, [(p["original"], p["variant"]) for p in kept], [p["kind"] for p in kept])


@dataclass(frozen=True)
class RuleSet:
    """The chapter's offline rules by column name, and how the matched embedding threshold was chosen."""

    rules: dict[str, Rule]
    tfidf: str
    embedding: str
    matched: str
    reference: str
    n_matching_pairs: int  # same-instance pairs of committed hypotheses used to match the rate
    target_rate: float  # the "same" rate the matched threshold reproduces on them


def build_rules(bench: Benchmark, *, tfidf_threshold: float = 0.25, tfidf_fit_on: str = "compared",
                embedding_model: str | None = None, embedding_threshold: float = 0.77,
                embedding_cache: bool = True, reference_rubric: str = "full") -> RuleSet:
    """TF-IDF, embeddings at ``embedding_threshold`` and at the matched-rate threshold, and the
    reference judge. The matched threshold reproduces, on every same-instance pair of committed
    hypotheses (no perturbation pair), the mean "same" rate of TF-IDF and the reference judge."""
    store = cache_path("embedding_cache") if embedding_cache else None
    reference = ReferenceJudge(reference_rubric)
    matching = within_instance_pairs(bench.hypotheses)
    target = marginal_same_rate([TfidfRule(threshold=tfidf_threshold), reference], matching)
    matched = EmbeddingRule(model=embedding_model, threshold="match_rate", cache_dir=store,
                            reference_pairs=matching, target_rate=target)
    names = ("tfidf", f"embedding {embedding_threshold:g}", f"embedding matched {matched.threshold_:.2f}",
             f"reference ({reference_rubric})")
    rules = dict(zip(names, (TfidfRule(threshold=tfidf_threshold, fit_on=tfidf_fit_on),
                             EmbeddingRule(model=embedding_model, threshold=embedding_threshold, cache_dir=store),
                             matched, reference)))
    return RuleSet(rules, *names, n_matching_pairs=len(matching), target_rate=target)


def not_run(n: int) -> pd.arrays.BooleanArray:
    """A decisions column of ``n`` missing values: a judge that was not run."""
    return pd.array([pd.NA] * n, dtype="boolean")


@dataclass(frozen=True)
class LLMDecisions:
    """The LLM judge's majority decisions (NA where undecided or not run), its client and a summary line."""

    same: pd.arrays.BooleanArray
    client: Any
    summary: str


def judge_with_llm(pairs: Sequence[Pair], instances, *, backend: str, model: str, rubric: str = "full",
                   orders: Sequence[str] = ("ab", "ab", "ba"), early_stop: bool = True,
                   cache_dir: str | None = None) -> LLMDecisions:
    """The LLM judge on ``pairs`` (majority over ``orders``), or "not run" with an offline backend."""
    if not Backend.parse(backend).is_llm:
        return LLMDecisions(not_run(len(pairs)), None, f"LLM judge: not run (backend {backend!r} is offline)")
    judge = LLMJudge(rubric=rubric, model=model, backend=backend, orders=orders, early_stop=early_stop,
                     cache_dir=cache_dir, instances=instances)
    d = judge.decide(pairs)
    summary = (f"LLM judge ({model}): {int(d['n_calls'].sum())} calls ({d['n_calls'].mean():.2f} per pair of "
               f"{len(orders)} planned; early stop {early_stop}), {int(d['n_invalid'].sum())} invalid JSON "
               f"replies (excluded), {int((~d['decided']).sum())} undecided pairs (excluded)")
    return LLMDecisions(d["same"].array, judge.client, summary)


def axis_placeholder(backend: str, models: Sequence[str]) -> pd.DataFrame:
    """The one-row table a judge-model section shows when it did not run, and why."""
    why = "offline backend" if not Backend.parse(backend).is_llm else f"one judge model ({models[0]})"
    return pd.DataFrame({"status": [f"not run: {why}"]}, index=pd.Index(["judge models"], name="axis"))


def judge_model_axis(pairs: Sequence[Pair], first: LLMDecisions, models: Sequence[str], *, kinds: Sequence[str],
                     backend: str, rubric: str, orders: Sequence[str], early_stop: bool, instances
                     ) -> tuple[pd.DataFrame | None, pd.DataFrame | None, pd.DataFrame]:
    """The same pairs through every further model of ``models`` (``models[0]`` gave ``first``).

    Returns the agreement table between models, the % judged different per model (rows) and kind,
    and each kind's range over models; offline or with one model: ``(None, None, placeholder)``.
    """
    models = list(dict.fromkeys(models))
    if not Backend.parse(backend).is_llm or len(models) < 2:
        return None, None, axis_placeholder(backend, models)
    more = judge_each_model(pairs, models[1:], backend=backend, client=first.client, rubric=rubric,
                            orders=orders, early_stop=early_stop, instances=instances)
    verdicts = verdict_matrix({models[0]: first.same, **{m: majority(c, len(pairs))["same"] for m, c in more.items()}})
    per_model = percent_different(verdicts.T, kinds=kinds, order=KINDS).T  # models x kinds
    agreement = model_agreement(verdicts).set_index(["model_a", "model_b"]).round(3)
    return agreement, per_model.round(1), estimate_range(per_model).round(1)


def percent_table(pct: pd.DataFrame, *, kinds: Sequence[str], llm_run: bool) -> pd.DataFrame:
    """``pct`` (kinds x rules, %) for display: rounded, the number of pairs per kind first, and a
    short "not run" (offline) or "undecided" where a rule has no value."""
    table = pct.round(1).astype(object).where(pct.notna(), "undecided" if llm_run else "not run")
    table.insert(0, "pairs", pd.Series(list(kinds)).value_counts().reindex(pct.index).fillna(0).astype(int).to_numpy())
    return table


def pooled_percent(decisions: pd.DataFrame, *, kinds: Sequence[str]) -> pd.DataFrame:
    """% judged different with the kinds pooled as the paper reports them: rows first_step_swapped,
    middle_step_swapped, meaning_preserving and swapped (both swap kinds)."""
    kinds = list(kinds)
    pct = percent_different(decisions, kinds=kinds, order=KINDS)
    mp = np.array([k in MEANING_PRESERVING for k in kinds])
    pooled = {"meaning_preserving": mp, "swapped": ~mp}
    rows = [percent_different(decisions[mask], kinds=[name] * int(mask.sum()))
            for name, mask in pooled.items() if mask.any()]
    return pd.concat([pct.loc[["first_step_swapped", "middle_step_swapped"]], *rows])


def _value(table: pd.DataFrame, row: str, column: str) -> float | None:
    if row not in table.index or pd.isna(table.loc[row, column]):
        return None
    return round(float(table.loc[row, column]), 1)


def paper_rows(pooled: pd.DataFrame, names: RuleSet, *, backend: str, model: str) -> list[tuple]:
    """Rows ``(key, ours, note)`` for ``mechaudit.paper.compare``: % judged different per kind the
    paper reports, for TF-IDF, embeddings and the LLM judge (offline: "not run", with the reference
    judge's value in the note for orientation only)."""
    llm_run = Backend.parse(backend).is_llm
    rows = []
    for kind in PAPER_KINDS:
        key = f"perturbations.{kind}_pct_different"
        rows.append((f"{key}.tfidf", _value(pooled, kind, names.tfidf)))
        rows.append((f"{key}.embedding", _value(pooled, kind, names.embedding),
                     f"MiniLM; matched: {_value(pooled, kind, names.matched)}"))
        rows.append((f"{key}.llm", _value(pooled, kind, LLM_COLUMN),
                     f"{model}, {backend}" if llm_run else f"reference judge: {_value(pooled, kind, names.reference)}"))
    return rows


def findings(pooled: pd.DataFrame, sims: pd.DataFrame, names: RuleSet, *, kinds: Sequence[str]) -> dict[str, float]:
    """The numbers the chapter's prose quotes: % different per rule and pooled kind (``fss_tfidf``,
    ``mp_embedding``, ``ref_swapped``, ...; NaN for a kind the suite lacks, None for an LLM that did
    not run) and similarity extremes of swapped pairs.

    ``sims``: one row per pair, columns ``tfidf`` and ``embedding`` (cosines)."""
    out: dict[str, float] = {}
    short = {"fss": "first_step_swapped", "mss": "middle_step_swapped", "mp": "meaning_preserving"}
    for prefix, kind in short.items():
        for name, column in (("tfidf", names.tfidf), ("embedding", names.embedding), ("matched", names.matched),
                             ("reference", names.reference), ("llm", LLM_COLUMN)):
            value = _value(pooled, kind, column)
            out[f"{prefix}_{name}"] = float("nan") if value is None and name != "llm" else value
    ref_swapped = _value(pooled, "swapped", names.reference)
    out["ref_swapped"] = float("nan") if ref_swapped is None else ref_swapped
    swapped = np.array([k not in MEANING_PRESERVING for k in kinds])
    out["tfidf_min_sim_swapped"] = float(sims["tfidf"][swapped].min())
    out["embedding_min_sim_swapped"] = float(sims["embedding"][swapped].min())
    out["embedding_mean_sim_swapped"] = float(sims["embedding"][swapped].mean())
    return out


def headline(facts: dict[str, float | None]) -> dict[str, int | str]:
    """The intro's values from ``findings``: % of first-step swaps judged different per rule, whole
    numbers ("n/a" without such pairs; the LLM's "not run offline" when it did not run)."""
    out: dict[str, int | str] = {}
    for rule in ("tfidf", "embedding", "reference", "llm"):
        value = facts[f"fss_{rule}"]
        if value is None:
            out[rule] = "not run offline"
        else:
            out[rule] = "n/a" if np.isnan(value) else int(round(value))
    return out


def status(backend: str, model: str) -> str:
    """The chapter's headline status: the LLM and backend, or computed locally (no LLM)."""
    return headline_status(backend, model, LOCAL)


def similarity_summary(sims: pd.DataFrame, *, kinds: Sequence[str]) -> pd.DataFrame:
    """Mean, lowest and highest cosine per kind (rows) and similarity rule (column groups)."""
    grouped = sims.assign(kind=list(kinds)).groupby("kind").agg(["mean", "min", "max"])
    return grouped.reindex([k for k in KINDS if k in grouped.index]).round(3)

