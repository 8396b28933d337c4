"""Chapter 06, rubric sensitivity: the definition of "same mechanism" is a parameter of the judge.

The reference judges read each rubric literally; the LLM steps (``judge_rubrics_with_llm``,
``order_effects``, ``rubric_model_axis``) return "not run" placeholders offline, where on the
shipped benchmark the recorded self-served judge (:func:`replay_selfserved`) answers in their
place for every rubric whose answers are all recorded. :func:`plan` is the chapter's cost plan
(``mechaudit estimate``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mechaudit.agreement import estimate_range, raw_agreement
from mechaudit.backends import Backend
from mechaudit.book import selfserved
from mechaudit.book.chapter import REFERENCE_JUDGE, ChapterContext, axis_placeholder, headline_provenance, judge_models
from mechaudit.book.selfserved import SelfServed
from mechaudit.llm.pricing import Planned
from mechaudit.paper import reported, shown
from mechaudit.perturb import KINDS, describe_change, load_pairs
from mechaudit.report import provenance
from mechaudit.report.comparison import compare
from mechaudit.report.facts import fact
from mechaudit.report.tables import with_caption
from mechaudit.rules import LLMJudge, ReferenceJudge
from mechaudit.rules.audit import not_run, percent_different
from mechaudit.rules.base import Pair
from mechaudit.rules.llm_judge import (
    Stability,
    judge_planned,
    majority,
    planning_judge,
    stability_summary,
)
from mechaudit.rules.model_axis import model_axis
from mechaudit.schema import Instance, load_benchmark, load_instances

#: The paper's rubric keys, in the order of its figure.
PAPER_RUBRICS = ("step", "full", "none")
COMPONENTS = ["initiating", "route", "terminal"]


@dataclass(frozen=True)
class RubricSetup:
    """The valid perturbation pairs, their kinds and the instances (the LLM judge's context)."""

    pairs: list[Pair]
    kinds: list[str]
    instances: list[Instance]


def setup(data_dir: str | Path | None = None) -> RubricSetup:
    """The valid pairs of ``perturbations.jsonl`` and ``instances.yaml`` under ``data_dir`` (default: shipped)."""
    instances = load_instances(None if data_dir is None else Path(data_dir) / "instances.yaml")
    return RubricSetup(*load_pairs(data_dir, "template"), instances)


def reference_judges(rubrics: Sequence[str], jaccard_threshold: float = 0.5) -> dict[str, ReferenceJudge]:
    """One reference judge per rubric (the "none" judge decides by step overlap >= ``jaccard_threshold``)."""
    return {r: ReferenceJudge(r, jaccard_threshold=jaccard_threshold) for r in rubrics}


def reference_decisions(pairs: Sequence[Pair], judges: dict[str, ReferenceJudge]) -> pd.DataFrame:
    """One bool column ``reference <rubric>`` per judge (True = same), one row per pair."""
    return pd.DataFrame({f"reference {r}": j.same(pairs) for r, j in judges.items()})


@dataclass(frozen=True)
class RubricLLM:
    """The LLM judge under every rubric: decision columns ``llm <rubric>`` (NA = undecided or not
    run), the call tables per rubric (None offline) and the client (None offline)."""

    decisions: pd.DataFrame
    calls: dict[str, pd.DataFrame] | None
    client: Any


def judge_rubrics_with_llm(pairs: Sequence[Pair], rubrics: Sequence[str], instances, *, client, model: str,
                           orders: Sequence[str] = ("ab", "ab", "ba")) -> RubricLLM:
    """Every pair under every rubric with ``model`` through ``client`` (every order asked: order
    effects need every call); offline (``client`` None), "not run" columns."""
    if client is None:
        return RubricLLM(pd.DataFrame({f"llm {r}": not_run(len(pairs)) for r in rubrics}), None, None)
    calls, columns = {}, {}
    for r in rubrics:
        judge = LLMJudge(rubric=r, model=model, client=client, orders=orders, early_stop=False, instances=instances)
        calls[r] = judge.judge(pairs)
        columns[f"llm {r}"] = majority(calls[r], len(pairs))["same"].array
    return RubricLLM(pd.DataFrame(columns), calls, client)


def paper_figure_values(rubrics: Sequence[str]) -> pd.DataFrame:
    """The paper's % of first-step swaps judged different per rubric, in the layout of the
    chapter's figure (kinds x ``llm <rubric>``; NaN where the paper reports nothing)."""
    return pd.DataFrame({f"llm {r}": [reported(f"rubric.first_step_swapped_pct_different.{r}")
                                      if k == "first_step_swapped" else np.nan for k in KINDS] for r in rubrics},
                        index=list(KINDS))


def component_percent(components: pd.DataFrame, *, kinds: Sequence[str]) -> pd.DataFrame:
    """% of pairs whose component (initiating, route, terminal) the step judge calls different, per kind."""
    present = set(kinds)
    return percent_different(components[COMPONENTS], kinds=kinds, order=[k for k in KINDS if k in present]).round(1)


def examples(pairs: Sequence[Pair], components: pd.DataFrame, *, kinds: Sequence[str], seed: int = 0) -> pd.DataFrame:
    """One pair per kind drawn with ``seed``: the text the edit changed, both chains (step texts) and
    the components the step judge calls different. Indexed by kind."""
    rng = np.random.default_rng(seed)
    kinds_arr = np.array(list(kinds))
    rows = {}
    for kind in [k for k in KINDS if k in set(kinds_arr)]:
        i = int(rng.choice(np.flatnonzero(kinds_arr == kind)))
        a, b = pairs[i]
        broken = [c for c in COMPONENTS if not bool(components.loc[i, c])]
        rows[kind] = {"what changed": describe_change(a, b),
                      "original chain": " -> ".join(s.text for s in a.chain),
                      "variant chain": " -> ".join(s.text for s in b.chain),
                      "step judge: different": ", ".join(broken) or "nothing"}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("kind")


def reversal_check(pairs: Sequence[Pair], judges: dict[str, ReferenceJudge]) -> pd.DataFrame:
    """Per reference judge: pairs judged, and decisions changed when each pair is shown reversed; shown
    as the numbered table ``tbl-ch06-reversal``."""
    reversed_pairs = [(b, a) for a, b in pairs]
    rows = {f"reference {r}": {"pairs": len(pairs),
                               "changed by reversal": int(np.sum(j.same(pairs) != j.same(reversed_pairs)))}
            for r, j in judges.items()}
    return with_caption(pd.DataFrame.from_dict(rows, orient="index").rename_axis("judge"),
                        "Decisions of each reference judge changed when every pair is shown in reverse order.",
                        "tbl-ch06-reversal")


@dataclass(frozen=True)
class OrderEffects:
    """Per prompt the LLM's stability (``table``), the flipped pairs each two prompts share and the
    raw agreement with the reference judge of the same rubric (the last two None offline)."""

    table: pd.DataFrame
    per_prompt: dict[str, Stability] | None
    shared: pd.DataFrame | None
    vs_reference: pd.Series | None


def order_effects(llm: RubricLLM, decisions: pd.DataFrame, rubrics: Sequence[str], n_pairs: int) -> OrderEffects:
    """Repetition and order-reversal effects of the LLM judge per prompt (from ``llm.calls``)."""
    if llm.calls is None:
        table = pd.DataFrame({"reversal changed": "not run"}, index=pd.Index(list(rubrics), name="prompt"))
        return OrderEffects(table, None, None, None)
    per = {r: stability_summary(llm.calls[r], n_pairs) for r in rubrics}
    table = pd.DataFrame.from_dict({r: s.row for r, s in per.items()}, orient="index").rename_axis("prompt")
    shared = pd.DataFrame([[len(per[a].flipped & per[b].flipped) for b in rubrics] for a in rubrics],
                          index=pd.Index(list(rubrics), name="prompt"), columns=list(rubrics))
    vs_reference = pd.Series({r: raw_agreement(decisions[f"llm {r}"], decisions[f"reference {r}"]) for r in rubrics},
                             name="raw agreement with the reference judge").round(3)
    return OrderEffects(table, per, shared, vs_reference)


def rubric_model_axis(pairs: Sequence[Pair], llm: RubricLLM, rubrics: Sequence[str], models: Sequence[str], *,
                      kinds: Sequence[str], orders: Sequence[str], instances
                      ) -> tuple[pd.DataFrame | None, pd.DataFrame]:
    """Every rubric's pairs through the further models of ``models`` (``models[0]`` gave ``llm``): the
    agreement between models per rubric and the range of % judged different per rubric and swap kind;
    offline or with one model ``(None, placeholder)``."""
    models = list(dict.fromkeys(models))
    if llm.calls is None or len(models) < 2:
        return None, axis_placeholder(llm.client is not None, models)
    agree, estimates = [], {}
    for r in rubrics:
        per_kind, agreement = model_axis(pairs, models, llm.client, kinds=kinds, order=KINDS, rubric=r,
                                         first=llm.decisions[f"llm {r}"], orders=orders, early_stop=True,
                                         instances=instances)
        agree.append(agreement.assign(rubric=r))
        for kind in ("first_step_swapped", "middle_step_swapped"):
            estimates[f"{r}: {kind}"] = per_kind[kind]
    table = pd.concat(agree, ignore_index=True).set_index(["rubric", "model_a", "model_b"]).round(3)
    return table, estimate_range(pd.DataFrame(estimates)).round(1)


# ----------------------------------------------------------------------------------------------
# the recorded self-served judge (offline, shipped benchmark)

#: the reader's name of each rubric in a column header
RUBRIC_WORDS = {"full": "full rubric", "step": "step rubric", "none": "no rubric"}


@dataclass(frozen=True)
class SelfServedRubrics:
    """The recorded self-served judge under every rubric: ``llm`` as :func:`judge_rubrics_with_llm`
    gives it (columns ``llm <rubric>``, calls per rubric) for the rubrics whose pairs all have their
    answers recorded, and per rubric asked the pairs recorded out of ``n_pairs``."""

    llm: RubricLLM
    recorded: dict[str, int]
    n_pairs: int

    @property
    def done(self) -> list[str]:
        """The rubrics whose pairs all have their answers recorded, in the order asked."""
        return [r for r, n in self.recorded.items() if n == self.n_pairs]

    def coverage(self, rubric: str) -> str:
        """"n of m recorded" for ``rubric``."""
        return f"{self.recorded[rubric]} of {self.n_pairs} recorded"

    @property
    def columns(self) -> pd.DataFrame:
        """Its decisions as columns ``selfserved <rubric>`` (complete rubrics only), one row per pair."""
        return self.llm.decisions.rename(columns=lambda c: "selfserved " + c.removeprefix("llm "))


def replay_selfserved(s: RubricSetup, rubrics: Sequence[str], own: SelfServed | None, *,
                      orders: Sequence[str] = ("ab", "ab", "ba")) -> SelfServedRubrics | None:
    """Every rubric's pairs of ``s`` through the recorded self-served judge ``own`` (every order
    asked, as the chapter's LLM judge asks them); None without ``own`` (an LLM backend or other data)."""
    if own is None:
        return None
    calls, columns, recorded = {}, {}, {}
    for r in rubrics:
        got, recorded[r] = own.replay_pairs(s.pairs, lambda client, pairs, r=r: judge_rubrics_with_llm(
            pairs, [r], s.instances, client=client, model=own.model, orders=orders))
        if got is not None:
            calls[r], columns[f"llm {r}"] = got.calls[r], got.decisions[f"llm {r}"]
    decisions = pd.DataFrame(columns, index=pd.RangeIndex(len(s.pairs)))
    return SelfServedRubrics(RubricLLM(decisions, calls, own.client), recorded, len(s.pairs))


def selfserved_effects(own: SelfServedRubrics | None, decisions: pd.DataFrame) -> OrderEffects | None:
    """:func:`order_effects` of the self-served judge's complete rubrics, its agreement measured
    against the reference judges' columns of ``decisions``; None when no rubric is complete."""
    if own is None or not own.done:
        return None
    reference = decisions[[f"reference {r}" for r in own.done]]
    return order_effects(own.llm, pd.concat([reference, own.llm.decisions], axis=1), own.done, own.n_pairs)


def selfserved_order_table(effects: OrderEffects) -> pd.DataFrame:
    """Per prompt the self-served judge's order and repetition effects (:func:`order_effects`' table)
    and its raw agreement with the reference judge of the same rubric."""
    return effects.table.join(effects.vs_reference.rename("agreement with reference"))


def percent_table(pct: pd.DataFrame, own: SelfServedRubrics | None, *, llm_run: bool) -> pd.DataFrame:
    """``pct`` (kinds x judges, %) for display: "undecided" (LLM run) or "not run" where a judge has no
    value; with ``own`` (offline), its columns ``<selfserved.LABEL>, <rubric>`` in place of the LLM
    judge's "not run" ones, reading "n of m recorded" for a rubric not all recorded."""
    table = pct.astype(object).where(pct.notna(), "undecided" if llm_run else "not run")
    if own is None:
        return table
    table = table.drop(columns=[c for c in table.columns if c.startswith(("llm ", "selfserved "))])
    for r in own.recorded:
        name = f"selfserved {r}"
        table[f"{selfserved.LABEL}, {RUBRIC_WORDS[r]}"] = pct[name].round(1) if name in pct else own.coverage(r)
    return table


def _fss(pct: pd.DataFrame, column: str, kind: str = "first_step_swapped", digits: int | None = 1) -> float | None:
    """``pct.loc[kind, column]`` (first-step swaps by default) as a float rounded to ``digits`` (None:
    unrounded); None where ``pct`` has no such row, column or value."""
    if kind not in pct.index or column not in pct.columns or pd.isna(pct.loc[kind, column]):
        return None
    value = float(pct.loc[kind, column])
    return value if digits is None else round(value, digits)


def paper_rows(pct: pd.DataFrame, effects: OrderEffects, rubrics: Sequence[str], *, backend: Backend,
               model: str) -> list[tuple]:
    """Rows ``(key, ours, note)`` for ``comparison.compare``: % of first-step swaps judged different per
    rubric and the order and repetition effects (offline: "not run", the reference judge in the note)."""
    llm_note = f"{model}, {backend.value}"
    rows = [(f"rubric.first_step_swapped_pct_different.{r}", _fss(pct, f"llm {r}"),
             llm_note if effects.per_prompt else f"reference judge: {_fss(pct, f'reference {r}')}")
            for r in PAPER_RUBRICS if r in rubrics]
    if effects.per_prompt is None:
        return rows + [(f"rubric.{k}", None, "reference judges: 0 by construction") for k in
                       ("order_reversal_changed_pct", "order_reversal_changed_per_prompt", "repetition_changed")]
    t = effects.table
    rows += [("rubric.order_reversal_changed_pct", round(float(t["reversal changed %"].mean()), 1),
              "mean over prompts"),
             ("rubric.order_reversal_changed_per_prompt", round(float(t["reversal changed"].mean()), 1),
              "mean over prompts")]
    flipped = {r: s.flipped for r, s in effects.per_prompt.items()}
    if {"full", "step"} <= set(rubrics):
        rows.append(("rubric.order_reversal_shared_full_step", len(flipped["full"] & flipped["step"])))
        if "none" in rubrics:
            rows.append(("rubric.order_reversal_shared_with_none",
                         len((flipped["full"] | flipped["step"]) & flipped["none"])))
    return rows + [("rubric.repetition_changed", int(t["repeat changed"].sum()), "all prompts")]


def paper_table(pct: pd.DataFrame, effects: OrderEffects, rubrics: Sequence[str], *, backend: Backend, model: str,
                own: SelfServedRubrics | None = None, own_effects: OrderEffects | None = None) -> pd.DataFrame:
    """The paper-vs-run table of :func:`paper_rows`, then the self-served judge's rows for its complete
    rubrics (``pct`` holds its columns ``selfserved <rubric>``; ``own_effects`` from
    :func:`selfserved_effects`), measured by a real LLM: an independent computation."""
    table = compare(paper_rows(pct, effects, rubrics, backend=backend, model=model), llm=backend.is_llm)
    if own_effects is None:
        return table
    mine = pct[[f"selfserved {r}" for r in own.done]].rename(columns=lambda c: "llm " + c.removeprefix("selfserved "))
    rows = paper_rows(mine, own_effects, own.done, backend=Backend.REPLAY, model=selfserved.SHORT)
    return pd.concat([table, selfserved.comparison(rows)[table.columns]])


#: the rubrics of the intro's row and the chapter's answer, in the paper's order (38 / 83 / 96 %)
HEADLINE_RUBRICS = ("none", "full", "step")


def fss_by_rubric(pct: pd.DataFrame, source: str) -> dict[str, float | None]:
    """% of first-step swaps judged different per rubric of ``HEADLINE_RUBRICS`` by ``source``
    ("llm" or "reference"); None for a rubric not run (or every pair undecided)."""
    return {r: _fss(pct, f"{source} {r}") for r in HEADLINE_RUBRICS}


def _joined(values: dict[str, float | None], sep: str) -> str:
    return sep.join("not run" if v is None else f"{v:.0f}" for v in values.values())


def headline(pct: pd.DataFrame, llm_run: bool) -> str:
    """The intro's "this book" cell: the LLM's % of first-step swaps judged different (none; full; step),
    or offline "not measured offline" with the reference judges' values (true by construction)."""
    if llm_run:
        return _joined(fss_by_rubric(pct, "llm"), "; ")
    reference = _joined(fss_by_rubric(pct, "reference"), "; ")
    return f"not measured offline (reference judges, true by construction: {reference})"


def answer(pct: pd.DataFrame, llm_run: bool) -> str:
    """The chapter's answer: the LLM's % of first-step swaps judged different per rubric (none / full /
    step) beside the paper's when shown; offline "not measured offline"."""
    paper = " / ".join(f"{reported(f'rubric.first_step_swapped_pct_different.{r}'):g}" for r in HEADLINE_RUBRICS)
    beside = f" (paper: {paper} %)" if shown() else ""
    if not llm_run:
        return f"not measured offline{beside}"
    return f"{_joined(fss_by_rubric(pct, 'llm'), ' / ')} %{beside}"


def selfserved_sentences(own: SelfServedRubrics | None, pct: pd.DataFrame, effects: OrderEffects | None,
                         show_paper: bool) -> tuple[str, str, str, str]:
    """What the chapter says of the recorded self-served judge: how many pairs each rubric has
    recorded, what it calls different under the complete ones (``pct`` with its ``selfserved
    <rubric>`` columns; ``effects`` from :func:`selfserved_effects`), and the intro's cell (first-step
    swaps under no rubric; full; step, "n of m recorded" for an incomplete rubric) and provenance."""
    if own is None:
        return selfserved.NOT_REPLAYED
    done = own.done
    coverage, pending = selfserved.coverage(
        {_prompt(r): (own.recorded[r], own.n_pairs) for r in own.recorded}, "prompt", "its columns replay them")
    cells = {r: "not run" if r not in own.recorded else own.coverage(r) if r not in done else
             selfserved.percent(_fss(pct, f"selfserved {r}")) for r in HEADLINE_RUBRICS}
    headline = "; ".join(cells.values())
    if pending:
        return coverage, pending, headline, provenance.NOT_RUN
    shown_rubrics = [r for r in HEADLINE_RUBRICS if r in done]
    paper = (" (the paper's LLM judge: " + " / ".join(
        f"{reported(f'rubric.first_step_swapped_pct_different.{r}'):g} %" for r in shown_rubrics) + ")"
             if show_paper else "")
    reversal = float(effects.table["reversal changed %"].mean())
    paper_reversal = f" (the paper's judge: {reported('rubric.order_reversal_changed_pct'):g} %)" if show_paper else ""
    return coverage, (f"Replayed from its recorded answers, the self-served {selfserved.SHORT} calls "
                      f"{' / '.join(cells[r] for r in shown_rubrics)} of first-step swaps different under "
                      f"{' / '.join(RUBRIC_WORDS[r] for r in shown_rubrics)}{paper}; reversing which hypothesis "
                      f"comes first changes {reversal:.1f} % of its decisions per prompt on average{paper_reversal}. "
                      f"{selfserved.CAVEAT}"), headline, provenance.INDEPENDENT


def _prompt(rubric: str) -> str:
    """"the full-rubric prompt" for "full"."""
    return f"the {RUBRIC_WORDS[rubric].replace(' ', '-')} prompt"


def _pct(doc: str) -> Any:
    return fact(unit="%", digits=1, missing="not run", doc=doc)


@dataclass(frozen=True)
class RubricFacts:
    """What chapter 06's prose and the intro quote (glued under ``ch06``): the reference judges' % of
    swaps judged different per rubric (None: not run), the overlap rule's chain facts, the paper's figures."""

    jaccard_threshold: float = fact(doc="step-overlap threshold of the no-rubric reference judge")
    ref_full_fss_pct: float | None = _pct("full rubric, first-step swaps")
    ref_full_mss_pct: float | None = _pct("full rubric, middle-step swaps")
    ref_step_fss_pct: float | None = _pct("step rubric, first-step swaps")
    ref_step_mss_pct: float | None = _pct("step rubric, middle-step swaps")
    ref_none_fss_pct: float | None = _pct("no rubric (step overlap), first-step swaps")
    min_jaccard_swapped: float | None = fact(digits=3, missing="n/a", doc="lowest Jaccard index of a swapped pair")
    min_chain_swapped: int | None = fact(unit="steps", missing="n/a", doc="shortest chain of a swapped pair")
    paper_reversal_pct: float = fact(unit="%", doc="paper: decisions changed by order reversal")
    headline_status: str = fact(doc="where the headline comes from")
    paper_none_fss_pct: float = fact(unit="%", doc="paper's LLM, no rubric, first-step swaps")
    paper_full_fss_pct: float = fact(unit="%", doc="paper's LLM, full rubric, first-step swaps")
    paper_step_fss_pct: float = fact(unit="%", doc="paper's LLM, step rubric, first-step swaps")
    answer: str = fact(doc="the chapter's answer (:func:`answer`)")
    headline: str = fact(doc="the intro's cell (:func:`headline`)")
    headline_provenance: str = fact(doc="the intro's provenance cell")
    headline_verdict: str = fact(doc="the intro's verdict")
    selfserved_coverage: str = fact(doc="how many pairs of each rubric the self-served judge has recorded")
    selfserved_answer: str = fact(doc="the self-served judge's sentence in the reading of the result")
    selfserved_headline: str = fact(doc="the intro's cell: first-step swaps the self-served judge calls "
                                        "different under no rubric; full; step")
    selfserved_provenance: str = fact(doc="the intro's provenance cell of the self-served judge")


def chapter_facts(ctx: ChapterContext, model: str, pct: pd.DataFrame, components: pd.DataFrame, s: RubricSetup,
                  jaccard_threshold: float, own: SelfServedRubrics | None = None,
                  own_effects: OrderEffects | None = None) -> RubricFacts:
    """:class:`RubricFacts` of a run: ``pct`` (kinds x judges, % different), the step judge's
    ``components`` of the pairs of ``s``; ``model`` the main judge model; ``own`` and ``own_effects``
    the recorded self-served judge (:func:`replay_selfserved`, :func:`selfserved_effects`)."""
    swap = np.array([k.endswith("_swapped") for k in s.kinds])
    source, verdict = headline_provenance("ch06", ctx.llm, fss_by_rubric(pct, "llm") if ctx.llm else None)
    return RubricFacts(
        jaccard_threshold=jaccard_threshold,
        **{f"ref_{r}_{short}_pct": _fss(pct, f"reference {r}", kind, digits=None) for r in ("full", "step", "none")
           for short, kind in (("fss", "first_step_swapped"), ("mss", "middle_step_swapped"))
           if (r, short) != ("none", "mss")},
        min_jaccard_swapped=float(components["jaccard"][swap].min()) if swap.any() else None,
        min_chain_swapped=min((len(a.chain) for (a, _), sw in zip(s.pairs, swap) if sw), default=None),
        paper_reversal_pct=reported("rubric.order_reversal_changed_pct"),
        headline_status=ctx.status(model, REFERENCE_JUDGE),
        **{f"paper_{r}_fss_pct": reported(f"rubric.first_step_swapped_pct_different.{r}") for r in HEADLINE_RUBRICS},
        answer=answer(pct, ctx.llm), headline=headline(pct, ctx.llm),
        headline_provenance=source, headline_verdict=verdict,
        **dict(zip(("selfserved_coverage", "selfserved_answer", "selfserved_headline", "selfserved_provenance"),
                   selfserved_sentences(own, pct, own_effects, ctx.show_paper))))


# --------------------------------------------------------------------------- cost plan

def plan(p: Mapping[str, Any]) -> list[Planned]:
    """The chapter's requests (``mechaudit estimate``): each rubric's LLM judge on every valid pair
    of the template-built suite, once per order."""
    bench, pairs = load_benchmark(p.get("data_dir")), load_pairs(p.get("data_dir"), "template")[0]
    out = []
    for k, model in enumerate(judge_models(p)):
        for rubric in p["rubrics"]:
            judge = planning_judge(rubric, model, p["judge_orders"], bench.instances)
            # the main judge makes every call (order effects); the judge-model axis uses early stop
            out += judge_planned(judge, pairs, f"judge {model} ({rubric})", early_stop=k > 0)
    return out
