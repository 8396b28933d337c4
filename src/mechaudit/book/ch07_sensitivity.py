"""Chapter 07, sensitivity: thresholds, agreement between rules, and the stability of the LLM judge.

One call per step: :func:`setup`, the threshold sweeps and separations of every perturbation suite
(``sweep_by_suite``, ``separation_by_suite``), the methods at their fixed thresholds
(``fixed_decisions``) and their agreement, the judge's stability (``stability_check``; offline the
deterministic rules') and :func:`chapter_facts`; :func:`plan` is the chapter's cost plan. Offline on
the shipped benchmark the recorded self-served judge (:mod:`mechaudit.book.selfserved`) joins the
agreement and stability steps where all its answers are recorded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mechaudit.agreement import (
    agreement_range,
    agreement_table,
    complete_agreement_interval,
    estimate_range,
    model_agreement,
    threshold_sweep,
)
from mechaudit.book import selfserved
from mechaudit.book.chapter import REFERENCE_JUDGE, ChapterContext, axis_placeholder, headline_provenance, judge_models
from mechaudit.book.selfserved import SelfServed
from mechaudit.book.settings import SensitivitySettings
from mechaudit.llm.pricing import Planned
from mechaudit.paper import reported
from mechaudit.paths import embedding_store
from mechaudit.perturb import MEANING_PRESERVING, SUITE_LABELS, available_suites, load_pairs
from mechaudit.report import provenance
from mechaudit.report.comparison import compare
from mechaudit.report.facts import fact
from mechaudit.report.tables import Column, with_columns
from mechaudit.rules import EmbeddingRule, LLMJudge, ReferenceJudge, TfidfRule
from mechaudit.rules.audit import (
    separation_table,
    stack_suites,
    subsample_pairs,
    sweep_percent_different,
    within_instance_pairs,
)
from mechaudit.rules.base import Pair
from mechaudit.rules.llm_judge import judge_planned, model_verdicts, planning_judge, stability_summary
from mechaudit.schema import Benchmark, load_benchmark

RULES = ("tfidf", "embedding")
#: how many of the similarity rules have a threshold that separates the kinds, as words (index: that number)
SEPARATING = ("no rule has a separating threshold", f"one of the {len(RULES)} rules has one", "both rules have one")


#: glue key -> the table cells its prose value restates (format: tests/test_table_prose.py)
CITED_CELLS = {
    "ch07_agreement_pct_low": (("tbl-ch07-paper", ("Agreement between rules, lowest (%)",), "This run"),
                               ("tbl-ch07-agreement", ("Reference judge (full rubric)", "TF-IDF 0.25"),
                                "Raw agreement (%)")),
    "ch07_agreement_pct_high": (("tbl-ch07-paper", ("Agreement between rules, highest (%)",), "This run"),
                                ("tbl-ch07-agreement", ("TF-IDF 0.25", "Embedding 0.77"), "Raw agreement (%)")),
    "ch07_kappa_low": (("tbl-ch07-paper", ("Cohen's κ between rules, lowest",), "This run"),),
    "ch07_ref_tfidf_kappa": (("tbl-ch07-agreement", ("Reference judge (full rubric)", "TF-IDF 0.25"), "Cohen's κ"),),
}


def grid(spec: Sequence[float]) -> np.ndarray:
    """Thresholds ``[start, stop, count]`` -> ``count`` evenly spaced values, rounded to 3 places."""
    start, stop, count = spec
    return np.round(np.linspace(start, stop, int(count)), 3)


@dataclass(frozen=True)
class SensitivitySetup:
    """The chapter's pairs (valid suite pairs with kinds; same-instance pairs of committed
    hypotheses), its three offline rules, and the sweep grids per similarity rule."""

    bench: Benchmark
    suite_pairs: list[Pair]
    kinds: list[str]
    set_pairs: list[Pair]
    tfidf: TfidfRule
    embedding: EmbeddingRule
    reference: ReferenceJudge
    grids: dict[str, np.ndarray]


def preserving(*, kinds: Sequence[str]) -> np.ndarray:
    """Per kind of ``kinds``: is it meaning-preserving? (bool array)"""
    return np.array([k in MEANING_PRESERVING for k in kinds])


def setup(p: SensitivitySettings | None = None, *, suite: str = "template") -> SensitivitySetup:
    """Load the benchmark and the valid pairs of perturbation ``suite`` under ``p.data_dir`` and build
    the rules at the settings ``p`` (default: the chapter's defaults)."""
    p = p or SensitivitySettings()
    bench = load_benchmark(p.data_dir)
    pairs, kinds = load_pairs(p.data_dir, suite)
    embedding = EmbeddingRule(model=p.embedding_model, threshold=p.embedding_threshold,
                              cache_dir=embedding_store(p.embedding_cache))
    return SensitivitySetup(bench, pairs, kinds,
                            within_instance_pairs(bench.hypotheses), TfidfRule(threshold=p.tfidf_threshold),
                            embedding, ReferenceJudge(p.reference_rubric),
                            {"tfidf": grid(p.tfidf_sweep), "embedding": grid(p.embedding_sweep)})


def similarities(s: SensitivitySetup, pairs: Sequence[Pair]) -> dict[str, np.ndarray]:
    """Cosine per pair for each similarity rule (``tfidf``, ``embedding``)."""
    return {"tfidf": s.tfidf.similarity(pairs), "embedding": s.embedding.similarity(pairs)}


@dataclass(frozen=True)
class RuleShape:
    """Where one similarity rule's cosines of a suite lie: the mean per group and the % of (rewording,
    swap) comparisons in which the rewording is the more similar."""

    mean_sim_mp: float | None = fact(unit="cosine", digits=3, missing="n/a", doc="mean, meaning-preserving pairs")
    mean_sim_swapped: float | None = fact(unit="cosine", digits=3, missing="n/a", doc="mean, swapped pairs")
    rewording_more_similar_pct: float | None = fact(unit="%", digits=1, missing="n/a",
                                                    doc="comparisons the rewording wins")


@dataclass(frozen=True)
class RuleSeparation(RuleShape):
    """:class:`RuleShape` and what decides a separating threshold: the least similar meaning-preserving
    and most similar swapped pair, the lowest grid threshold calling half the swaps different and the
    % of meaning-preserving pairs it calls different."""

    min_sim_mp: float | None = fact(unit="cosine", digits=3, missing="n/a", doc="lowest, meaning-preserving pairs")
    max_sim_swapped: float | None = fact(unit="cosine", digits=3, missing="n/a", doc="highest, swapped pairs")
    half_threshold: float | str | None = fact(unit="cosine", missing="n/a", doc="lowest grid threshold, half the swaps")
    half_mp_pct: float | None = fact(unit="%", digits=1, missing="n/a", doc="meaning-preserving pairs called different")


@dataclass(frozen=True)
class SuiteSeparation:
    """:class:`RuleSeparation` per similarity rule of one suite, and how many rules can separate its kinds."""

    tfidf: RuleSeparation
    embedding: RuleSeparation
    separating_sentence: str = fact(doc="how many rules have a separating threshold (:data:`SEPARATING`)")


#: what a suite missing from the data folder glues
NO_SUITE = SuiteSeparation(*[RuleSeparation(*[None] * 7)] * 2, separating_sentence="this suite is not in the data")


def separation(sims: Mapping[str, np.ndarray], preserving: np.ndarray, grids: Mapping[str, np.ndarray]
               ) -> tuple[pd.DataFrame, SuiteSeparation]:
    """Per rule the thresholds (exact) that call every meaning-preserving pair same and every swap
    different: the table (indexed by rule) and its :class:`SuiteSeparation`."""
    table = separation_table(sims, preserving)
    rules = {}
    for rule in RULES:
        sim = sims[rule]
        half = [t for t in grids[rule] if (sim[~preserving] < t).mean() >= 0.5]
        rules[rule] = RuleSeparation(
            float(sim[preserving].mean()), float(sim[~preserving].mean()),
            float(table.loc[rule, "rewording more similar (%)"]), float(sim[preserving].min()),
            float(sim[~preserving].max()), float(half[0]) if half else "none on the grid",
            100 * float((sim[preserving] < half[0]).mean()) if half else None)
    n_separating = int((table["separating thresholds"] != "none").sum())
    return table, SuiteSeparation(**rules, separating_sentence=SEPARATING[n_separating])


def suites_of(data_dir: str | Path | None = None) -> dict[str, tuple[list[Pair], list[str]]]:
    """Every perturbation suite of ``data_dir`` (``perturb.available_suites``): name -> its valid
    pairs and their kinds."""
    return {name: load_pairs(data_dir, name) for name in available_suites(data_dir)}


def sweep_by_suite(sims: Mapping[str, Mapping[str, np.ndarray]], grids: Mapping[str, np.ndarray], *,
                   kinds: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """% judged different per suite, rule, threshold and kind (``sims``: suite -> rule -> cosines;
    ``kinds``: suite -> kinds), long: threshold, kind, pct_different, rule and the suite's label."""
    return pd.concat([sweep_percent_different(sims[n][r], grids[r], kinds=kinds[n])
                      .assign(rule=r, suite=SUITE_LABELS[n]) for n in sims for r in sims[n]], ignore_index=True)


def separation_by_suite(sims: Mapping[str, Mapping[str, np.ndarray]], grids: Mapping[str, np.ndarray], *,
                        kinds: Mapping[str, Sequence[str]]) -> tuple[pd.DataFrame, dict[str, SuiteSeparation]]:
    """``separation`` of every suite: the tables stacked (rows: suite label, rule) and each suite's
    :class:`SuiteSeparation` by suite name."""
    out = {n: separation(sims[n], preserving(kinds=kinds[n]), grids) for n in sims}
    return stack_suites({n: table for n, (table, _) in out.items()}, SUITE_LABELS), {n: f for n, (_, f) in out.items()}


@dataclass(frozen=True)
class FixedMethods:
    """Decisions on the committed-set pairs of every method at its fixed setting, the similarity rules'
    names, and the third method (the LLM judge if it ran, else the reference judge); the recorded
    self-served judge is a further method (``selfserved.LABEL``) when all its answers are recorded."""

    decisions: dict[str, np.ndarray]
    tfidf: str
    embedding: str
    third: str
    selfserved_pairs: int | None = None  # pairs whose self-served answers are all recorded (None: not asked)


def fixed_decisions(s: SensitivitySetup, set_sim: Mapping[str, np.ndarray], *, client=None,
                    model: str = "claude-opus-4-6", rubric: str = "full", orders: Sequence[str] = ("ab", "ab", "ba"),
                    selfserved: SelfServed | None = None) -> FixedMethods:
    """The reference judge, TF-IDF and embeddings at their thresholds and, with an LLM ``client``, the
    LLM judge ``model`` (undecided pairs NA) on the committed-set pairs; with ``selfserved`` also its
    recorded answers (a further method when every pair's are recorded, else only how many are)."""
    reference = f"reference ({s.reference.rubric})"
    tfidf, embedding = f"tfidf {s.tfidf.threshold:g}", f"embedding {s.embedding.threshold:g}"
    decisions = {reference: s.reference.same(s.set_pairs), tfidf: set_sim["tfidf"] >= s.tfidf.threshold,
                 embedding: set_sim["embedding"] >= s.embedding.threshold}

    def judged(pairs: Sequence[Pair], llm, name: str) -> np.ndarray:
        judge = LLMJudge(rubric=rubric, model=name, client=llm, orders=orders, instances=s.bench.instances)
        return judge.decide(pairs)["same"].to_numpy()

    third = reference
    if client is not None:
        third = f"llm {model}"
        decisions[third] = judged(s.set_pairs, client, model)
    n_recorded = None
    if selfserved is not None:
        own, n_recorded = selfserved.replay_pairs(s.set_pairs, lambda c, pairs: judged(pairs, c, selfserved.model))
        if own is not None:
            decisions[selfserved.label] = own
    return FixedMethods(decisions, tfidf, embedding, third, n_recorded)


def agreement_sweep(set_sim: Mapping[str, np.ndarray], grids: Mapping[str, np.ndarray], fixed: FixedMethods
                    ) -> pd.DataFrame:
    """Raw agreement and kappa of each similarity rule, over its grid, with every other fixed method
    (long: threshold, other, n, raw_agreement, kappa, rule)."""
    own = {"tfidf": fixed.tfidf, "embedding": fixed.embedding}
    return pd.concat(
        [threshold_sweep(set_sim[r], grids[r], {k: v for k, v in fixed.decisions.items() if k != own[r]}).assign(rule=r)
         for r in RULES], ignore_index=True)


def agreement_at_thresholds(fixed: FixedMethods) -> pd.DataFrame:
    """Every pair of fixed methods: pairs compared, raw agreement, kappa and each method's "same"
    rate (undecided pairs left out), indexed by (method a, method b)."""
    table = agreement_table(fixed.decisions)
    rate = {m: float(pd.Series(v).astype("Float64").mean()) for m, v in fixed.decisions.items()}
    out = pd.DataFrame({"pairs": table["n"].astype(int).to_numpy(),
                        "raw agreement": table["raw_agreement"].to_numpy(dtype=float),
                        "kappa": table["kappa"].to_numpy(dtype=float),
                        "same rate a": table["method_a"].map(rate).to_numpy(dtype=float),
                        "same rate b": table["method_b"].map(rate).to_numpy(dtype=float)},
                       index=pd.MultiIndex.from_frame(table[["method_a", "method_b"]], names=["method a", "method b"]))
    return with_columns(out.round(3), _shown_as_glued("raw agreement", "kappa", "same rate a", "same rate b"))


def _shown_as_glued(*columns: str) -> dict[str, Column]:
    """How this chapter's tables print agreement (a share shown in % as the prose glues it), kappa and
    "same" rates (shares shown in %): the declarations of :class:`SensitivityFacts`."""
    pct = Column.of(SensitivityFacts, "agreement_pct_low", scale=100)
    known = {"raw agreement": pct, "kappa": Column.of(SensitivityFacts, "kappa_low"),
             "same rate a": Column.of(SensitivityFacts, "ref_same_pct", scale=100),
             "same rate b": Column.of(SensitivityFacts, "tfidf_same_pct", scale=100)}
    return {c: known[c] for c in columns}


def best_agreement(agree: pd.DataFrame, set_sim: Mapping[str, np.ndarray], fixed: FixedMethods) -> pd.DataFrame:
    """Per similarity rule and other method: the grid threshold of highest kappa, its raw agreement
    and kappa, and whether any real threshold agrees with that method on every pair (exact)."""
    best = agree.loc[agree.groupby(["rule", "other"])["kappa"].idxmax()]
    possible = [complete_agreement_interval(set_sim[r], fixed.decisions[o]) is not None
                for r, o in zip(best["rule"], best["other"])]
    out = pd.DataFrame({"threshold of max kappa": best["threshold"].to_numpy(),
                        "raw agreement": best["raw_agreement"].to_numpy(dtype=float),
                        "kappa": best["kappa"].to_numpy(dtype=float), "complete agreement possible": possible},
                       index=pd.MultiIndex.from_frame(best[["rule", "other"]]))
    return with_columns(out.round(3), _shown_as_glued("raw agreement", "kappa"))


@dataclass(frozen=True)
class StabilityCheck:
    """Repetition and order-reversal effects per judge (``table``), and with two or more LLM judge
    models their agreement table (else None) and majority decisions. Offline with the self-served
    judge: its ``stability_summary`` row (also the table's last row) when all its answers for the
    pairs are recorded, and how many pairs' are."""

    table: pd.DataFrame
    agreement: pd.DataFrame | None
    llm_run: bool
    selfserved: pd.Series | None = None  # its row (None: not asked or not all recorded)
    selfserved_pairs: int | None = None  # pairs whose self-served answers are all recorded (None: not asked)


def stability_check(s: SensitivitySetup, pairs: Sequence[Pair], *, client, models: Sequence[str],
                    rubric: str = "full", orders: Sequence[str] = ("ab", "ab", "ba"),
                    selfserved: SelfServed | None = None) -> StabilityCheck:
    """With an LLM ``client`` every model judges ``pairs`` under every order and gets a
    ``stability_summary`` row; offline the deterministic rules are judged twice and reversed (0 changes),
    and with ``selfserved`` its recorded answers give it a row when all are recorded."""
    def judged(pairs: Sequence[Pair], llm, names: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        verdicts, calls = model_verdicts(pairs, names, llm, rubric=rubric, orders=orders,
                                         instances=s.bench.instances, early_stop=False)  # stability needs every call
        return verdicts, pd.DataFrame.from_dict({m: stability_summary(c, len(pairs)).row for m, c in calls.items()},
                                                orient="index").rename_axis("model")

    if client is None:
        rules = {"tfidf": s.tfidf, "embedding": s.embedding, f"reference ({s.reference.rubric})": s.reference}
        reversed_pairs = [(b, a) for a, b in pairs]
        rows = {name: {"pairs": len(pairs), "repeat changed": int(np.sum(rule.same(pairs) != rule.same(pairs))),
                       "reversal changed": int(np.sum(rule.same(pairs) != rule.same(reversed_pairs)))}
                for name, rule in rules.items()}
        table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("rule")
        if selfserved is None:
            return StabilityCheck(table, None, False)
        own, n_recorded = selfserved.replay_pairs(pairs, lambda c, sub: judged(sub, c, [selfserved.model])[1])
        row = None if own is None else own.iloc[0].rename(selfserved.label)
        if row is not None:
            table = pd.concat([table, row[table.columns].to_frame().T.astype(table.dtypes)]).rename_axis("rule")
        return StabilityCheck(table, None, False, row, n_recorded)
    verdicts, table = judged(pairs, client, models)
    agreement = model_agreement(verdicts).set_index(["model_a", "model_b"]).round(3) if len(verdicts) > 1 else None
    return StabilityCheck(table, agreement, True)


def model_ranges(check: StabilityCheck, models: Sequence[str]) -> pd.DataFrame:
    """How far the "same" rate and the order-reversal rate move with the judge model (range over
    models, the kind of range of the paper's Fig. 5), or why it was not run."""
    if check.agreement is None:
        return axis_placeholder(check.llm_run, models)
    return estimate_range(check.table[["same %", "reversal changed %"]]).round(1)


def three_methods(fixed: FixedMethods, third: str | None = None) -> pd.DataFrame:
    """Agreement between TF-IDF, embeddings and the third method (default ``fixed.third``) at the
    fixed thresholds (the paper's three-method range)."""
    return agreement_table({k: fixed.decisions[k] for k in (fixed.tfidf, fixed.embedding, third or fixed.third)})


def selfserved_agreement(fixed: FixedMethods) -> pd.DataFrame | None:
    """Agreement of the self-served judge with every other fixed method (rows of ``agreement_table``:
    method_a the other, method_b ``selfserved.LABEL``), or None when it did not join."""
    if selfserved.LABEL not in fixed.decisions:
        return None
    table = agreement_table(fixed.decisions)
    return table[table["method_b"] == selfserved.LABEL].reset_index(drop=True)


def complete_agreement_sentence(n_possible: int, n_combinations: int) -> str:
    """How many (similarity rule, other method) combinations some threshold brings to complete
    agreement, as a sentence ("No threshold gives ... for any of the 4 combinations ...")."""
    what = "combinations of a similarity rule and another method"
    if n_possible == 0:
        return f"No threshold gives complete agreement for any of the {n_combinations} {what}."
    if n_possible == n_combinations:
        return f"For each of the {n_combinations} {what} some threshold gives complete agreement."
    return f"Some threshold gives complete agreement for {n_possible} of the {n_combinations} {what}."


@dataclass(frozen=True)
class SensitivityFacts:
    """What chapter 07's prose and the intro quote (glued under ``ch07``): the three methods' agreement,
    each suite's separation (the reworded suite under ``rw``), the best kappas and the paper's figures."""

    agreement_pct_low: float = fact(unit="%", digits=1, doc="lowest raw agreement of the three methods")
    agreement_pct_high: float = fact(unit="%", digits=1, doc="highest raw agreement of the three methods")
    kappa_low: float = fact(unit="kappa", digits=2, doc="lowest kappa of the three methods")
    kappa_high: float = fact(unit="kappa", digits=2, doc="highest kappa of the three methods")
    headline_agreement: str = fact(doc="the raw agreement range, as words: a narrow cell breaks it at a space")
    headline_kappa: str = fact(doc="the kappa range, as words")
    headline_status: str = fact(doc="where the headline comes from")
    headline_provenance: str = fact(doc="the intro's provenance cell")
    headline_verdict: str = fact(doc="the intro's verdict")
    tfidf: RuleShape  # the template-built suite
    embedding: RuleShape
    separating_sentence: str = fact(doc="template-built suite: how many rules can separate the kinds")
    rw: SuiteSeparation
    ref_tfidf_agreement: str = fact(doc="raw agreement of the reference judge and TF-IDF, with its %")
    ref_tfidf_kappa: float = fact(unit="kappa", digits=2, doc="their kappa")
    ref_same_pct: float = fact(unit="%", digits=1, doc="pairs the reference judge calls the same")
    tfidf_same_pct: float = fact(unit="%", digits=1, doc="pairs TF-IDF calls the same")
    tfidf_best_kappa_reference: float = fact(unit="kappa", digits=2, doc="TF-IDF's best kappa with the reference")
    embedding_best_kappa_reference: float = fact(unit="kappa", digits=2, doc="embeddings' best kappa with it")
    complete_sentence: str = fact(doc=":func:`complete_agreement_sentence` of the best table")
    paper_raw_agreement_pct_low: float = fact(unit="%", doc="paper")
    paper_raw_agreement_pct_high: float = fact(unit="%", doc="paper")
    paper_kappa_low: float = fact(unit="kappa", doc="paper")
    paper_kappa_high: float = fact(unit="kappa", doc="paper")
    paper_tfidf_threshold: float = fact(unit="cosine", doc="paper")
    paper_embedding_threshold: float = fact(unit="cosine", doc="paper (Titan v2)")
    selfserved_coverage: str = fact(doc="how many pairs of each step the self-served judge has recorded")
    selfserved_answer: str = fact(doc="its agreement with the rules, as a sentence")
    selfserved_stability: str = fact(doc="its repeat and order-reversal changes, as a sentence")
    selfserved_headline: str = fact(doc="the intro's cell: its raw agreement and kappa with the rules")
    selfserved_provenance: str = fact(doc="the intro's provenance cell of the self-served judge")


def chapter_facts(ctx: ChapterContext, model: str, s: SensitivitySetup, fixed: FixedMethods, three: pd.DataFrame,
                  at_thresholds: pd.DataFrame, best: pd.DataFrame, seps: Mapping[str, SuiteSeparation],
                  check: StabilityCheck) -> SensitivityFacts:
    """:class:`SensitivityFacts` of a run (``model``: the first judge model; a suite missing from
    ``seps`` reads :data:`NO_SUITE`; ``check``: the stability check)."""
    low, high = 100 * float(three["raw_agreement"].min()), 100 * float(three["raw_agreement"].max())
    klow, khigh = float(three["kappa"].min()), float(three["kappa"].max())
    source, verdict = headline_provenance("ch07", ctx.llm, {"agreement": low, "κ": klow})
    reference = f"reference ({s.reference.rubric})"
    ref_tfidf = at_thresholds.loc[(reference, fixed.tfidf)]
    template = seps.get("template", NO_SUITE)  # its prose quotes the means only, not the extremes
    shape = [RuleShape(*(getattr(getattr(template, r), f.name) for f in fields(RuleShape))) for r in RULES]
    return SensitivityFacts(
        low, high, klow, khigh, f"{low:.1f} to {high:.1f} %", f"{klow:.2f} to {khigh:.2f}",
        ctx.status(model, REFERENCE_JUDGE), source, verdict, *shape, template.separating_sentence,
        seps.get("reworded", NO_SUITE),
        ref_tfidf_agreement=f"{100 * ref_tfidf['raw agreement']:.1f} %", ref_tfidf_kappa=float(ref_tfidf["kappa"]),
        ref_same_pct=100 * float(ref_tfidf["same rate a"]), tfidf_same_pct=100 * float(ref_tfidf["same rate b"]),
        **{f"{r}_best_kappa_reference": float(best.loc[(r, reference), "kappa"]) for r in RULES},
        complete_sentence=complete_agreement_sentence(int(best["complete agreement possible"].sum()), len(best)),
        **{f"paper_{k}": reported(f"sensitivity.{k}") for k in ("raw_agreement_pct_low", "raw_agreement_pct_high",
                                                               "kappa_low", "kappa_high", "tfidf_threshold",
                                                               "embedding_threshold")},
        **dict(zip(("selfserved_coverage", "selfserved_answer", "selfserved_stability", "selfserved_headline",
                    "selfserved_provenance"), selfserved_sentences(fixed, check, len(s.set_pairs), ctx.show_paper))))


def selfserved_sentences(fixed: FixedMethods, check: StabilityCheck, n_set_pairs: int, show_paper: bool
                         ) -> tuple[str, str, str, str, str]:
    """What the chapter says of the recorded self-served judge: how many committed-set and stability
    pairs have all their answers recorded, its agreement with the rules and its stability (each only
    where all are recorded), and the intro's headline and provenance cells (its agreement)."""
    short = f"the self-served {selfserved.SHORT}"
    if fixed.selfserved_pairs is None:
        coverage, answer, headline, source = selfserved.NOT_REPLAYED
        return coverage, answer, f"This run does not replay {short}.", headline, source
    n_stability = int(check.table["pairs"].iloc[0])
    coverage, _ = selfserved.coverage({"the agreement step": (fixed.selfserved_pairs, n_set_pairs),
                                       "the stability check": (check.selfserved_pairs, n_stability)},
                                      "step", "it joins their tables as a further method")
    if check.selfserved is None:
        stable = (f"Its answers are recorded for {check.selfserved_pairs} of the {n_stability} stability pairs, so "
                  f"this section shows no stability of {short} yet.")
    else:
        row = check.selfserved
        paper = (f" (the paper's judge: {reported('sensitivity.repeat_changed'):g} when repeated, "
                 f"{reported('sensitivity.reversal_changed'):g} or {reported('sensitivity.reversal_changed_pct'):g} "
                 "% when reversed)" if show_paper else "")
        stable = (f"Replayed from its recorded answers on the {int(row['pairs'])} stability pairs, {short} changes "
                  f"{int(row['repeat changed'])} decisions when a request is repeated and "
                  f"{int(row['reversal changed'])} ({row['reversal changed %']:.1f} %) when the order is "
                  f"reversed{paper}.")
    own = selfserved_agreement(fixed)
    if own is None:
        answer = (f"Its answers are recorded for {fixed.selfserved_pairs} of the {n_set_pairs} committed-set pairs, "
                  f"so this chapter quotes no agreement of {short} with the rules yet.")
        return coverage, answer, stable, "recording not complete", provenance.NOT_RUN
    low, high = 100 * own["raw_agreement"].min(), 100 * own["raw_agreement"].max()
    klow, khigh = own["kappa"].min(), own["kappa"].max()
    same = 100 * float(pd.Series(fixed.decisions[selfserved.LABEL]).astype("Float64").mean())
    paper = (f", against {reported('sensitivity.raw_agreement_pct_low'):g}-"
             f"{reported('sensitivity.raw_agreement_pct_high'):g} % (κ {reported('sensitivity.kappa_low'):g}-"
             f"{reported('sensitivity.kappa_high'):g}) between the paper's three methods" if show_paper else "")
    answer = (f"Replayed from its recorded answers, {short} calls {same:.1f} % of the committed-set pairs the same "
              f"and agrees with each of the {len(own)} rules on {low:.1f} to {high:.1f} % of them (Cohen's κ "
              f"{klow:.2f} to {khigh:.2f}){paper}. {selfserved.CAVEAT}")
    return coverage, answer, stable, f"{low:.1f} to {high:.1f} %; {klow:.2f} to {khigh:.2f}", provenance.INDEPENDENT


def paper_rows(three: pd.DataFrame, fixed: FixedMethods, check: StabilityCheck, *, tfidf_threshold: float,
               embedding_threshold: float) -> list[tuple]:
    """Rows ``(key, ours, note)`` for ``mechaudit.report.comparison.compare`` (notes <= 40 characters)."""
    rows = [*_range_rows(three, fixed.third),
            ("sensitivity.tfidf_threshold", tfidf_threshold),
            ("sensitivity.embedding_threshold", embedding_threshold, "all-MiniLM-L6-v2, not Titan v2")]
    first = check.table.iloc[0]
    # offline the pairs were drawn and the offline rules judged them; no LLM judge's changes to count
    model = str(check.table.index[0]) if check.llm_run else None
    rows.append(("sensitivity.stability_pairs", int(first["pairs"]), model or "judged by the offline rules"))
    rows += _stability_rows(first if model else None, model or "no LLM judge offline")
    span = agreement_range(check.agreement) if check.agreement is not None else {}
    note = ", ".join(check.table.index)[:40] if span else "needs an LLM and 2+ judge models"
    for stat, digits in (("raw_agreement_pct_low", 1), ("raw_agreement_pct_high", 1), ("kappa_low", 3),
                         ("kappa_high", 3)):
        value = round(span[stat], digits) if span else None
        rows.append((f"sensitivity.judge_models_{stat.removeprefix('raw_')}", value, note))
    return rows


def _range_rows(three: pd.DataFrame, third: str) -> list[tuple]:
    """The paper's agreement-range rows of ``three`` (:func:`three_methods` with ``third``)."""
    methods = f"TF-IDF, MiniLM, {third}"[:40]
    return [("sensitivity.raw_agreement_pct_low", round(100 * three["raw_agreement"].min(), 1), methods),
            ("sensitivity.raw_agreement_pct_high", round(100 * three["raw_agreement"].max(), 1), methods),
            ("sensitivity.kappa_low", round(three["kappa"].min(), 3), methods),
            ("sensitivity.kappa_high", round(three["kappa"].max(), 3), methods)]


def _stability_rows(row: pd.Series | None, note: str) -> list[tuple]:
    """The paper's repeat and order-reversal rows of one judge's stability ``row`` (None: not run)."""
    values = ((int(row["repeat changed"]), int(row["reversal changed"]), float(row["reversal changed %"]))
              if row is not None else (None,) * 3)
    return [(f"sensitivity.{k}", v, note)
            for k, v in zip(("repeat_changed", "reversal_changed", "reversal_changed_pct"), values)]


def selfserved_rows(fixed: FixedMethods, check: StabilityCheck) -> list[tuple]:
    """Rows ``(key, ours, note)`` of the recorded self-served judge, for the steps whose answers are all
    recorded: the three-method range with it as the third method, and its stability."""
    rows = []
    if selfserved.LABEL in fixed.decisions:
        rows += _range_rows(three_methods(fixed, selfserved.LABEL), selfserved.LABEL)
    if check.selfserved is not None:
        rows.append(("sensitivity.stability_pairs", int(check.selfserved["pairs"]), "replayed answers"))
        rows += _stability_rows(check.selfserved, "replayed answers")
    return rows


def paper_table(three: pd.DataFrame, fixed: FixedMethods, check: StabilityCheck, *, llm: bool,
                tfidf_threshold: float, embedding_threshold: float) -> pd.DataFrame:
    """The paper-vs-run table of :func:`paper_rows`, then the self-served judge's rows
    (:func:`selfserved_rows`, an independent computation by a real LLM) when it has any."""
    out = compare(paper_rows(three, fixed, check, tfidf_threshold=tfidf_threshold,
                             embedding_threshold=embedding_threshold), llm=llm)
    own = selfserved_rows(fixed, check)
    return pd.concat([out, selfserved.comparison(own)[out.columns]]) if own else out


def stability_sample(s: SensitivitySetup, n: int, seed: int) -> list[Pair]:
    """The ``n`` committed-set pairs of the stability check, drawn with ``seed`` (as :func:`plan` draws them)."""
    return subsample_pairs(s.set_pairs, n, seed)


# --------------------------------------------------------------------------- cost plan

def plan(p: Mapping[str, Any]) -> list[Planned]:
    """The chapter's requests: the first judge model on all committed-set pairs, then every judge model
    on the ``stability_pairs`` pairs (drawn as :func:`stability_sample` draws them)."""
    bench = load_benchmark(p.get("data_dir"))
    set_pairs = within_instance_pairs(bench.hypotheses)
    models = judge_models(p)
    first = planning_judge(p["judge_rubric"], models[0], p["judge_orders"], bench.instances)
    out = judge_planned(first, set_pairs, f"judge {models[0]} (set pairs)", early_stop=True)  # LLMJudge default
    stab = subsample_pairs(set_pairs, p["stability_pairs"], p["seed"])
    for model in models:
        judge = planning_judge(p["judge_rubric"], model, p["judge_orders"], bench.instances)
        out += [Planned(f"judge {model} (stability)", r) for r in judge.requests(stab)]
    return out
