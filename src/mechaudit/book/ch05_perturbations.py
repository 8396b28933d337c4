"""Chapter 05, controlled perturbations: which edits does each equivalence rule notice?

One call per step: :func:`setup` and :func:`build_rules`, :func:`audit_suite` on every suite of the
data folder (the LLM judge through :func:`judge_with_llm`; offline a "not run" placeholder), the
judge-model axis (LLM only), the side-by-side suite tables and :func:`chapter_facts`; :func:`plan`
is the chapter's cost plan (``mechaudit estimate``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mechaudit.agreement import estimate_range
from mechaudit.backends import Backend
from mechaudit.book import selfserved
from mechaudit.book.chapter import LOCAL, ChapterContext, axis_placeholder, headline_provenance, judge_models
from mechaudit.book.selfserved import SelfServed
from mechaudit.book.settings import PerturbationsSettings
from mechaudit.llm.pricing import Planned
from mechaudit.paper import reported, shown
from mechaudit.paths import embedding_store
from mechaudit.perturb import (
    KINDS,
    MEANING_PRESERVING,
    SUITE_LABELS,
    available_suites,
    load_pairs,
    load_suite,
    make_suite,
    rerender_share,
    suite_path,
)
from mechaudit.report import provenance
from mechaudit.report.comparison import compare
from mechaudit.report.facts import fact
from mechaudit.rules import EmbeddingRule, LLMJudge, ReferenceJudge, TfidfRule, marginal_same_rate
from mechaudit.rules.audit import (
    decisions_table,
    not_run,
    percent_different,
    separation_table,
    stack_suites,
    suite_counts,
    within_instance_pairs,
)
from mechaudit.rules.base import Pair, Rule
from mechaudit.rules.llm_judge import judge_planned, planning_judge
from mechaudit.rules.model_axis import model_axis
from mechaudit.schema import Benchmark, load_benchmark

#: The column of the LLM judge in the decisions table.
LLM_COLUMN = "llm judge"
#: A cell of the self-served judge for a suite whose answers are not all recorded.
NOT_RECORDED = "not recorded"
#: The kinds the paper reports, in the order of its table (the two meaning-preserving kinds pooled).
PAPER_KINDS = ("first_step_swapped", "middle_step_swapped", "meaning_preserving")


@dataclass(frozen=True)
class PerturbationSetup:
    """The benchmark, the whole suite (valid and excluded pairs) and the valid pairs with their kinds."""

    bench: Benchmark
    suite: list[dict[str, Any]]
    pairs: list[Pair]
    kinds: list[str]


def setup(data_dir: str | Path | None = None, *, regenerate_suite: bool = False, seed: int = 0,
          suite: str = "template") -> PerturbationSetup:
    """The benchmark under ``data_dir`` (default: shipped) and the valid pairs of one perturbation
    ``suite`` ("template" or "reworded"); ``regenerate_suite`` builds the template suite afresh."""
    bench = load_benchmark(data_dir)
    if regenerate_suite and suite == "template":
        built = make_suite(bench.hypotheses, seed=seed, vocabulary=bench.vocabulary)
    else:
        built = load_suite(suite_path(data_dir, suite))
    kept = [p for p in built if p["valid"]]
    return PerturbationSetup(bench, built, [(p["original"], p["variant"]) for p in kept], [p["kind"] for p in kept])


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


def build_rules(bench: Benchmark, p: PerturbationsSettings) -> RuleSet:
    """TF-IDF, embeddings at ``p.embedding_threshold`` and at the threshold that reproduces, on the
    same-instance pairs of committed hypotheses, the mean "same" rate of TF-IDF and the reference judge,
    and the reference judge."""
    store = embedding_store(p.embedding_cache)
    reference = ReferenceJudge(p.reference_rubric)
    matching = within_instance_pairs(bench.hypotheses)
    target = marginal_same_rate([TfidfRule(threshold=p.tfidf_threshold), reference], matching)
    matched = EmbeddingRule(model=p.embedding_model, threshold="match_rate", cache_dir=store).fit(
        matching, target_rate=target)
    names = ("tfidf", f"embedding {p.embedding_threshold:g}", f"embedding matched {matched.threshold_:.2f}",
             f"reference ({p.reference_rubric})")
    rules = dict(zip(names, (TfidfRule(threshold=p.tfidf_threshold, fit_on=p.tfidf_fit_on),
                             EmbeddingRule(model=p.embedding_model, threshold=p.embedding_threshold, cache_dir=store),
                             matched, reference)))
    return RuleSet(rules, *names, n_matching_pairs=len(matching), target_rate=target)


@dataclass(frozen=True)
class LLMDecisions:
    """The LLM judge's majority decisions (NA where undecided or not run), its client and a summary line."""

    same: pd.arrays.BooleanArray
    client: Any
    summary: str


def judge_with_llm(pairs: Sequence[Pair], instances, *, client, model: str, rubric: str = "full",
                   orders: Sequence[str] = ("ab", "ab", "ba"), early_stop: bool = True) -> LLMDecisions:
    """The LLM judge on ``pairs`` (majority over ``orders``) through ``client``, or "not run" offline
    (``client`` None)."""
    if client is None:
        return LLMDecisions(not_run(len(pairs)), None,
                            f"LLM judge: not run (backend {Backend.REFERENCE.value!r} is offline)")
    judge = LLMJudge(rubric=rubric, model=model, client=client, orders=orders, early_stop=early_stop,
                     instances=instances)
    d = judge.decide(pairs)
    summary = (f"LLM judge ({model}): {int(d['n_calls'].sum())} calls ({d['n_calls'].mean():.2f} per pair of "
               f"{len(orders)} planned; early stop {early_stop}), {int(d['n_invalid'].sum())} invalid JSON "
               f"replies (excluded), {int((~d['decided']).sum())} undecided pairs (excluded)")
    return LLMDecisions(d["same"].array, judge.client, summary)


def judge_model_axis(pairs: Sequence[Pair], first: LLMDecisions, models: Sequence[str], *, kinds: Sequence[str],
                     rubric: str, orders: Sequence[str], early_stop: bool, instances
                     ) -> tuple[pd.DataFrame | None, pd.DataFrame | None, pd.DataFrame]:
    """The same pairs through every further model of ``models`` (``models[0]`` gave ``first``; the
    others answer through ``first.client``): the agreement between models, the % judged different per
    model and kind, and each kind's range; offline or with one model ``(None, None, placeholder)``."""
    models = list(dict.fromkeys(models))
    if first.client is None or len(models) < 2:
        return None, None, axis_placeholder(first.client is not None, models)
    per_model, agreement = model_axis(pairs, models, first.client, kinds=kinds, order=KINDS, first=first.same,
                                      rubric=rubric, orders=orders, early_stop=early_stop, instances=instances)
    return agreement.set_index(["model_a", "model_b"]).round(3), per_model.round(1), estimate_range(per_model).round(1)


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


def _share(table: pd.DataFrame, row: str, column: str, digits: int | None = None) -> float | None:
    """``table.loc[row, column]`` as a float, rounded to ``digits`` (None: unrounded); None where the
    table has no such row or value."""
    if row not in table.index or column not in table.columns or pd.isna(table.loc[row, column]):
        return None
    value = float(table.loc[row, column])
    return value if digits is None else round(value, digits)


def paper_rows(pooled: pd.DataFrame, names: RuleSet, *, backend: Backend, model: str) -> list[tuple]:
    """Rows ``(key, ours, note)`` for ``comparison.compare``: % judged different per kind the paper
    reports, for TF-IDF, embeddings and the LLM judge (offline: the reference judge in the note)."""
    llm_run = backend.is_llm
    rows = []
    for kind in PAPER_KINDS:
        key = f"perturbations.{kind}_pct_different"
        rows.append((f"{key}.tfidf", _share(pooled, kind, names.tfidf, 1)))
        rows.append((f"{key}.embedding", _share(pooled, kind, names.embedding, 1),
                     f"MiniLM; matched: {_share(pooled, kind, names.matched, 1)}"))
        reference = _share(pooled, kind, names.reference, 1)
        note = f"{model}, {backend.value}" if llm_run else f"reference judge: {reference}"
        rows.append((f"{key}.llm", _share(pooled, kind, LLM_COLUMN, 1), note))
    return rows


def similarity_summary(sims: pd.DataFrame, *, kinds: Sequence[str]) -> pd.DataFrame:
    """Mean, lowest and highest cosine per kind (rows) and similarity rule (column groups)."""
    grouped = sims.assign(kind=list(kinds)).groupby("kind").agg(["mean", "min", "max"])
    return grouped.reindex([k for k in KINDS if k in grouped.index]).round(3)



# ----------------------------------------------------------------------------------------------
# every suite of the data folder, side by side


@dataclass(frozen=True)
class SuiteAudit:
    """One suite's valid pairs through every rule: decisions (a bool column per rule, the LLM's NA when
    not run), the LLM run, and each pair's cosine (columns ``tfidf``, ``embedding``)."""

    setup: PerturbationSetup
    decisions: pd.DataFrame
    llm: LLMDecisions
    sims: pd.DataFrame
    selfserved: LLMDecisions | None = None  # the recorded self-served judge (None: not asked or not all recorded)
    selfserved_pairs: int | None = None  # valid pairs whose self-served answers are all recorded (None: not asked)

    @property
    def pct(self) -> pd.DataFrame:
        """% judged different per kind (rows, ``KINDS`` order) and rule."""
        return percent_different(self.decisions, kinds=self.setup.kinds, order=KINDS)

    @property
    def pooled(self) -> pd.DataFrame:
        """``pooled_percent`` of the decisions (the paper's pooling of kinds)."""
        return pooled_percent(self.decisions, kinds=self.setup.kinds)


def audit_suite(s: PerturbationSetup, names: RuleSet, *, client, model: str, rubric: str = "full",
                orders: Sequence[str] = ("ab", "ab", "ba"), early_stop: bool = True,
                selfserved: SelfServed | None = None) -> SuiteAudit:
    """Every rule of ``names`` and the LLM judge on the valid pairs of ``s``; offline, with
    ``selfserved``, also the recorded self-served judge (its column when every pair's answers are
    recorded, else only how many are)."""
    decisions = decisions_table(s.pairs, names.rules)
    llm = judge_with_llm(s.pairs, s.bench.instances, client=client, model=model, rubric=rubric, orders=orders,
                         early_stop=early_stop)
    decisions[LLM_COLUMN] = llm.same
    own, n_recorded = None, None
    if selfserved is not None:
        own, n_recorded = selfserved.replay_pairs(s.pairs, lambda c, pairs: judge_with_llm(
            pairs, s.bench.instances, client=c, model=selfserved.model, rubric=rubric, orders=orders,
            early_stop=early_stop))
        if own is not None:
            decisions[selfserved.label] = own.same
    sims = pd.DataFrame({"tfidf": names.rules[names.tfidf].similarity(s.pairs),
                         "embedding": names.rules[names.embedding].similarity(s.pairs)})
    return SuiteAudit(s, decisions, llm, sims, own, n_recorded)


def counts_by_suite(suites: Mapping[str, PerturbationSetup]) -> pd.DataFrame:
    """Per suite (label) and kind: pairs built, kept and excluded by the check, and the % of
    variants that re-render the original's wording (``perturb.rerender_share``)."""
    return stack_suites({n: suite_counts([p["valid"] for p in s.suite], kinds=[p["kind"] for p in s.suite],
                                         order=KINDS).join(rerender_share(s.suite, s.bench.vocabulary))
                         for n, s in suites.items()}, SUITE_LABELS)


def percent_by_suite(audits: Mapping[str, SuiteAudit], llm_run: bool) -> pd.DataFrame:
    """``percent_table`` of every suite, stacked (rows: suite label, kind); where one suite has the
    self-served judge's column and another not, the other's cells read "not recorded". Offline the
    LLM judge is not run and has no column."""
    stacked = stack_suites({n: percent_table(a.pct, kinds=a.setup.kinds, llm_run=llm_run)
                            for n, a in audits.items()}, SUITE_LABELS)
    stacked = stacked if llm_run else stacked.drop(columns=LLM_COLUMN)
    return stacked.where(stacked.notna(), NOT_RECORDED)


def similarity_long(audits: Mapping[str, SuiteAudit]) -> pd.DataFrame:
    """Every pair's cosine, long: columns suite (label), kind, rule (``tfidf``/``embedding``), cosine."""
    frames = [a.sims.assign(kind=a.setup.kinds).melt(id_vars="kind", var_name="rule", value_name="cosine")
              .assign(suite=SUITE_LABELS[n]) for n, a in audits.items()]
    return pd.concat(frames, ignore_index=True)[["suite", "kind", "rule", "cosine"]]


def separation_by_suite(audits: Mapping[str, SuiteAudit]) -> pd.DataFrame:
    """``rules.audit.separation_table`` of every suite, stacked (rows: suite label, rule)."""
    tables = {n: separation_table({r: a.sims[r].to_numpy() for r in a.sims},
                                  np.array([k in MEANING_PRESERVING for k in a.setup.kinds]))
              for n, a in audits.items()}
    return stack_suites(tables, SUITE_LABELS)


def thresholds_in_use(names: RuleSet) -> dict[str, dict[str, float]]:
    """Per similarity rule, its thresholds with legend labels (the embedding rule's paper and
    rate-matched ones) for ``plots.rules.cosine_strips``."""
    tfidf = names.rules[names.tfidf].threshold
    paper, matched = names.rules[names.embedding].threshold, names.rules[names.matched].threshold_
    whose, titan = ("paper", "paper, Titan") if shown() else ("default", "default")
    return {"tfidf": {f"threshold {tfidf:g} ({whose})": tfidf},
            "embedding": {f"{paper:g} ({titan})": paper, f"{matched:.2f} (rate-matched)": matched}}


def conclusions(audits: Mapping[str, SuiteAudit], names: RuleSet, separation: pd.DataFrame) -> pd.DataFrame:
    """Four statements about the text rules, "yes" or "no" per suite (columns: suite labels), and
    whether the answer changes with the suite (last column). ``separation``: ``separation_by_suite``."""
    def statements(name: str, a: SuiteAudit) -> dict[str, bool]:
        fss = a.pct.loc["first_step_swapped"]
        sep = separation.loc[SUITE_LABELS[name]]
        return {
            "TF-IDF calls most first-step swaps the same mechanism": bool(fss[names.tfidf] < 50),
            "embeddings at either threshold call most first-step swaps the same":
                bool(max(fss[names.embedding], fss[names.matched]) < 50),
            "swaps look more alike than rewordings to TF-IDF":
                bool(sep.loc["tfidf", "rewording more similar (%)"] < 50),
            "some threshold separates every swap from every rewording (TF-IDF or embeddings)":
                bool((sep["separating thresholds"] != "none").any()),
        }

    table = pd.DataFrame({SUITE_LABELS[n]: statements(n, a) for n, a in audits.items()})
    changes = table.nunique(axis=1) > 1
    out = table.replace({True: "yes", False: "no"}).infer_objects()
    if len(audits) > 1:
        out["changes with the suite"] = changes.map({True: "yes", False: "no"})
    return out.rename_axis("statement")


def selfserved_rows(pooled: pd.DataFrame) -> list[tuple]:
    """Rows ``(key, ours, note)`` of the recorded self-served judge (``selfserved.LABEL`` column):
    the LLM judge's keys, measured by a real LLM (an independent computation)."""
    return [(f"perturbations.{kind}_pct_different.llm", _share(pooled, kind, selfserved.LABEL, 1),
             "replayed answers") for kind in PAPER_KINDS]


def paper_table(audits: Mapping[str, SuiteAudit], names: RuleSet, *, backend: Backend, model: str) -> pd.DataFrame:
    """The paper-vs-run table with one column per suite in place of "this run" (a provenance or
    verdict that differs names each suite's), then the self-served judge's rows when some suite has all
    its answers recorded ("not recorded" for the others)."""
    out = _by_suite({n: compare(paper_rows(a.pooled, names, backend=backend, model=model), llm=backend.is_llm,
                                suite=n) for n, a in audits.items()})
    done = {n: a for n, a in audits.items() if a.selfserved is not None}
    if done:
        own = _by_suite({n: selfserved.comparison(selfserved_rows(a.pooled), suite=n) for n, a in done.items()})
        for n in audits.keys() - done.keys():
            own[SUITE_LABELS[n]] = NOT_RECORDED
        out = pd.concat([out, own[out.columns]])
    return out


def _by_suite(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Comparison tables of several suites as one: "this run" becomes one column per suite."""
    first = next(iter(tables))
    out = tables[first].rename(columns={"this run": SUITE_LABELS[first]})
    for k, (name, table) in enumerate(list(tables.items())[1:], start=2):
        out.insert(k, SUITE_LABELS[name], table["this run"].to_numpy())
    for column in ("provenance", "verdict"):
        out[column] = [values[0] if len(set(values)) == 1 else
                       "; ".join(f"{SUITE_LABELS[n]}: {v}" for n, v in zip(tables, values))
                       for values in zip(*(t[column] for t in tables.values()))]
    if "note" in out.columns:
        out["note"] = [_joined(list(notes)) for notes in zip(*(t["note"] for t in tables.values()))]
    return out


def _joined(notes: list[str]) -> str:
    """One note for several suites: the note if all agree, else their common start once and the
    differing ends joined by " / " ("matched: 7.5" and "matched: 11.2" -> "matched: 7.5 / 11.2")."""
    if len(set(notes)) == 1:
        return notes[0]
    head = os.path.commonprefix(notes)
    head = head[:head.rfind(" ") + 1]
    return head + " / ".join(n[len(head):] for n in notes)


# ----------------------------------------------------------------------------------------------
# the numbers the prose quotes


def _pct(doc: str, missing: str = "n/a") -> Any:
    return fact(unit="%", digits=1, missing=missing, doc=doc)


@dataclass(frozen=True)
class SuiteFacts:
    """What the prose quotes of one suite: % judged different per rule and pooled kind (None: no such
    pair; first-step swaps to one decimal, so 6 of 80 reads 7.5), and how close swaps sit."""

    mp_tfidf_pct: float | None = _pct("TF-IDF, meaning-preserving pairs")
    mp_embedding_pct: float | None = _pct("embeddings at the paper's threshold, meaning-preserving pairs")
    headline_fss_tfidf: float | None = _pct("TF-IDF, first-step swaps")
    headline_fss_embedding: float | None = _pct("embeddings at the paper's threshold, first-step swaps")
    headline_fss_matched: float | None = _pct("embeddings at the rate-matched threshold, first-step swaps")
    headline_fss_reference: float | None = _pct("reference judge, first-step swaps")
    ref_swapped_pct: float | None = _pct("reference judge, both swap kinds")
    ref_mp_pct: float | None = _pct("reference judge, meaning-preserving pairs")
    tfidf_min_sim_swapped: float | None = fact(unit="cosine", digits=3, missing="n/a", doc="lowest, swapped pairs")
    tfidf_rewording_more_similar_pct: float | None = _pct("(rewording, swap) comparisons the rewording wins")
    fss_rerendered_pct: float | None = fact(unit="%", digits=0, missing="n/a",
                                            doc="first-step swaps that re-render the original's wording")


@dataclass(frozen=True)
class RewordedFacts(SuiteFacts):
    """:class:`SuiteFacts` and what the reworded suite's prose adds: the embedding rule's closeness of
    swaps and each similarity rule's separating thresholds ("none" when there are none)."""

    embedding_mean_sim_swapped: float | None = fact(unit="cosine", digits=3, missing="n/a", doc="mean, swapped")
    embedding_rewording_more_similar_pct: float | None = _pct("comparisons the rewording wins, embeddings")
    tfidf_separating: str | None = fact(missing="n/a", doc="TF-IDF thresholds separating swaps from rewordings")
    embedding_separating: str | None = fact(missing="n/a", doc="embedding thresholds separating them")


def suite_facts(a: SuiteAudit | None, names: RuleSet, sep: pd.DataFrame | None) -> RewordedFacts:
    """:class:`RewordedFacts` of one suite's audit; ``sep``: its rows of :func:`separation_by_suite`
    (None: the suite is not in the data folder, and every value is None)."""
    if sep is None:
        return RewordedFacts(*[None] * len(fields(RewordedFacts)))
    pooled, mp, swapped = a.pooled, "meaning_preserving", np.array([k not in MEANING_PRESERVING for k in a.setup.kinds])
    more = sep["rewording more similar (%)"].astype(float)
    rerendered = rerender_share(a.setup.suite, a.setup.bench.vocabulary).get("first_step_swapped")
    return RewordedFacts(
        _share(pooled, mp, names.tfidf), _share(pooled, mp, names.embedding),
        *(_share(pooled, "first_step_swapped", c) for c in (names.tfidf, names.embedding, names.matched,
                                                            names.reference)),
        _share(pooled, "swapped", names.reference), _share(pooled, mp, names.reference),
        float(a.sims["tfidf"][swapped].min()), float(more["tfidf"]), None if rerendered is None else float(rerendered),
        float(a.sims["embedding"][swapped].mean()), float(more["embedding"]),
        str(sep.loc["tfidf", "separating thresholds"]), str(sep.loc["embedding", "separating thresholds"]))


@dataclass(frozen=True)
class PerturbationFacts(SuiteFacts):
    """What chapter 05's prose and the intro quote (glued under ``ch05``): the template-built suite's
    :class:`SuiteFacts` at the top level, the reworded suite's under ``rw``, and the chapter's own."""

    rw: RewordedFacts
    headline_fss_llm: float | None = _pct("LLM judge, template-built first-step swaps", missing="not run offline")
    changed_statements: str | None = fact(missing="n/a (one suite)", doc="statements that change with the suite")
    kept_statements: str | None = fact(missing="n/a (one suite)", doc="statements that do not")
    tfidf_threshold: float = fact(unit="cosine", doc="TF-IDF threshold")
    embedding_threshold: float = fact(unit="cosine", doc="embedding threshold (the paper's)")
    matched_threshold: float = fact(unit="cosine", digits=2, doc="rate-matched embedding threshold")
    matched_target_rate: float = fact(unit="%", digits=1, doc="the 'same' rate it reproduces")
    headline_status: str = fact(doc="where the headline comes from")
    llm_answer: str = fact(doc="the LLM judge's sentence in the answer")
    headline_provenance: str = fact(doc="the intro's provenance cell")
    headline_verdict: str = fact(doc="the intro's verdict")
    paper_first_step_swapped_tfidf: float = fact(unit="%", doc="paper")
    paper_first_step_swapped_embedding: float = fact(unit="%", doc="paper (Titan v2)")
    paper_first_step_swapped_llm: float = fact(unit="%", doc="paper")
    paper_meaning_preserving_tfidf: float = fact(unit="%", doc="paper")
    paper_meaning_preserving_embedding: float = fact(unit="%", doc="paper (Titan v2)")
    selfserved_coverage: str = fact(doc="how many of each suite's pairs the self-served judge has recorded")
    selfserved_answer: str = fact(doc="the self-served judge's sentence in the reading of the result")
    selfserved_headline: str = fact(doc="the intro's cell: first-step swaps the self-served judge calls different")
    selfserved_provenance: str = fact(doc="the intro's provenance cell of the self-served judge")


def chapter_facts(ctx: ChapterContext, model: str, audits: Mapping[str, SuiteAudit], names: RuleSet,
                  separation: pd.DataFrame) -> PerturbationFacts:
    """:class:`PerturbationFacts` of a run: ``model`` the judge model, ``separation`` from
    :func:`separation_by_suite`."""
    by_suite = {n: suite_facts(audits[n], names, separation.loc[SUITE_LABELS[n]]) if n in audits
                else suite_facts(None, names, None) for n in ("template", "reworded")}
    verdicts = conclusions(audits, names, separation)
    said = verdicts.get("changes with the suite")
    llm = _share(audits["template"].pooled, "first_step_swapped", LLM_COLUMN) if "template" in audits else None
    headline_source, verdict = headline_provenance("ch05", ctx.llm)
    paper = {f.name: reported("perturbations.{}_pct_different.{}".format(*f.name.removeprefix("paper_").rsplit("_", 1)))
             for f in fields(PerturbationFacts) if f.name.startswith("paper_")}
    return PerturbationFacts(
        **{f.name: getattr(by_suite["template"], f.name) for f in fields(SuiteFacts)}, rw=by_suite["reworded"],
        headline_fss_llm=llm,
        changed_statements=None if said is None else "; ".join(verdicts.index[said == "yes"]) or
        "none of the four statements",
        kept_statements=None if said is None else "; ".join(verdicts.index[said == "no"]) or "none of them",
        tfidf_threshold=names.rules[names.tfidf].threshold, embedding_threshold=names.rules[names.embedding].threshold,
        matched_threshold=names.rules[names.matched].threshold_, matched_target_rate=100 * names.target_rate,
        headline_status=ctx.status(model, LOCAL),
        llm_answer="The LLM judge is not run offline." if llm is None else
        f"The LLM judge ({model}) calls {llm:.0f} % of template-built first-step swaps different.",
        headline_provenance=headline_source, headline_verdict=verdict, **paper,
        **dict(zip(("selfserved_coverage", "selfserved_answer", "selfserved_headline", "selfserved_provenance"),
                   selfserved_sentences(audits, ctx.show_paper))))


def selfserved_sentences(audits: Mapping[str, SuiteAudit], show_paper: bool) -> tuple[str, str, str, str]:
    """What the chapter says of the recorded self-served judge: how many of each suite's pairs have
    all their answers recorded, what it calls different on the suites that do, and the intro's
    headline and provenance cells (first-step swaps per complete suite)."""
    asked = {n: a for n, a in audits.items() if a.selfserved_pairs is not None}
    if not asked:
        return selfserved.NOT_REPLAYED
    done = [n for n, a in asked.items() if a.selfserved is not None]
    coverage, pending = selfserved.coverage({f"the {SUITE_LABELS[n]}": (a.selfserved_pairs, len(a.setup.pairs))
                                             for n, a in asked.items()}, "suite", "its column replays them")
    if pending:
        return coverage, pending, "recording not complete", provenance.NOT_RUN

    def pct(n: str, kind: str) -> str:
        return selfserved.percent(_share(audits[n].pooled, kind, selfserved.LABEL))

    parts = "; ".join(f"{pct(n, 'first_step_swapped')} of first-step swaps and {pct(n, 'meaning_preserving')} of "
                      f"meaning-preserving pairs of the {SUITE_LABELS[n]}" for n in done)
    paper = (f", against the paper's LLM judge's {reported('perturbations.first_step_swapped_pct_different.llm'):g} % "
             "of first-step swaps" if show_paper else "")
    headline = "; ".join(f"{SUITE_LABELS[n]}: {pct(n, 'first_step_swapped')}" for n in done)
    return coverage, (f"Replayed from its recorded answers, the self-served {selfserved.SHORT} calls {parts} "
                      f"different{paper}. {selfserved.CAVEAT}"), headline, provenance.INDEPENDENT


# --------------------------------------------------------------------------- cost plan

def plan(p: Mapping[str, Any]) -> list[Planned]:
    """The chapter's requests (``mechaudit estimate``): the LLM judge on every valid pair of every
    perturbation suite of the data folder, once per order."""
    bench = load_benchmark(p.get("data_dir"))
    suites = {name: load_pairs(p.get("data_dir"), name)[0] for name in available_suites(p.get("data_dir"))}
    out = []
    for model in judge_models(p):
        judge = planning_judge(p["judge_rubric"], model, p["judge_orders"], bench.instances)
        for suite, pairs in suites.items():
            out += judge_planned(judge, pairs, f"judge {model} ({p['judge_rubric']}, {suite} suite)",
                                 bool(p.get("judge_early_stop")))
    return out
