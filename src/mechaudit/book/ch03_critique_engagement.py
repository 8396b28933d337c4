"""Chapter 03 (critique engagement): label the critic's demands, share them out, compare with the paper.

Offline the labels are the simulator's own log; with an LLM backend the LLM judge labels the demands
(:func:`judged_only` is the one LLM-only step). :func:`plan` is the chapter's cost plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from mechaudit.backends import Backend
from mechaudit.book.chapter import headline_provenance
from mechaudit.engagement import (
    LABELS,
    engagement_table,
    excluded_challenges,
    judge_request,
    label_demands,
    paper_comparison,
    paper_shares,
)
from mechaudit.llm.pricing import Planned
from mechaudit.paper import reported, shown
from mechaudit.report.facts import fact
from mechaudit.schema import load_benchmark
from mechaudit.workflow import WorkflowSetup, null_params, report_dropped, show_excluded, simulate
from mechaudit.workflow.delivery import Delivery
from mechaudit.workflow.plan import plan_workflow
from mechaudit.workflow.records import demands_frame
from mechaudit.workflow.validity import mc_se

#: glue key -> the table cells its prose value restates (format: tests/test_table_prose.py)
CITED_CELLS = {
    "ch03_conceded_pct": (("tbl-ch03-paper", ("Demands conceded (%)",), "This run"),),
    "ch03_answered_pct": (("tbl-ch03-paper", ("Demands answered (%)",), "This run"),),
}


def label_source(backend: Backend) -> str:
    """Where the labels come from, for notes and legends: "simulator log" or "LLM judge, <backend>"."""
    return f"LLM judge, {backend.value}" if backend.is_llm else "simulator log"


def judged_only(labelled: pd.DataFrame, delivery: Delivery, json_retries: int) -> pd.DataFrame:
    """The demands that carry a label; on LLM runs first shows the dropped hypotheses and the
    challenges whose judge reply stayed invalid (offline every demand is labelled)."""
    if delivery.client is None:
        return labelled
    report_dropped(delivery, json_retries)
    show_excluded(excluded_challenges(labelled), json_retries, what="challenges (engagement judge)")
    return labelled[labelled["label"].notna()]


def label_runs(delivery: Delivery, judge_model: str, json_retries: int) -> pd.DataFrame:
    """One row per labelled demand of ``delivery.runs`` (``engagement.label_demands``) after
    :func:`judged_only`."""
    labelled = label_demands(delivery.runs, delivery.client, model=judge_model, json_retries=json_retries)
    return judged_only(labelled, delivery, json_retries)


def shares_table(labelled: pd.DataFrame, paper: dict[str, float] | None) -> pd.DataFrame:
    """Demands and shares (%) per label (index "label"); with ``paper`` (label -> %), its shares too.
    Columns: "demands" (int), "this run (%)" and "paper (%)" (rounded to 1 decimal)."""
    table = engagement_table(labelled).set_index("label")
    out = pd.DataFrame({"demands": table["count"].astype(int), "this run (%)": table["pct"].round(1)})
    if paper is not None:
        out["paper (%)"] = [round(float(paper[label]), 1) for label in out.index]
    return out


def round_shares(labelled: pd.DataFrame) -> pd.DataFrame:
    """Shares (%) per critique round (index "round", int) and label (columns in ``LABELS`` order),
    plus the number of demands in the round (column "demands", int); rounded to 1 decimal."""
    by_round = engagement_table(labelled, by="round")
    pct = by_round.pivot(index="round", columns="label", values="pct")[list(LABELS)].round(1)
    pct.insert(0, "demands", by_round.groupby("round")["count"].sum().astype(int))
    pct.index = pct.index.astype(int)
    pct.columns.name = None
    return pct


def target_table(labelled: pd.DataFrame) -> pd.DataFrame:
    """Shares (%) per label for demands on weak and on sound links (index "demand on"); for runs that
    know no weak links, counts per depth and label."""
    if not knows_weak_links(labelled):
        counts = labelled.groupby(["depth", "label"]).size().unstack(fill_value=0)
        return counts.reindex(columns=list(LABELS), fill_value=0).astype(int)
    target = labelled.weak_link.map({True: "weak link", False: "sound link"})
    table = engagement_table(labelled.assign(target=target), by="target")
    wide = table.pivot(index="target", columns="label", values="pct")[list(LABELS)].round(1)
    wide.index.name, wide.columns.name = "demand on", None
    return wide


def max_gap_pp(shares: pd.Series, paper: dict[str, float]) -> float:
    """Largest absolute gap (pp) between this run's shares (label -> %) and the paper's."""
    return float((shares - pd.Series(paper)).abs().max())


def paper_rows(labelled: pd.DataFrame, backend: Backend) -> list[tuple]:
    """Rows ``(key, ours, note)`` for ``mechaudit.report.comparison.compare``: the number of demands and the four
    label shares, noted with where the labels come from."""
    note = label_source(backend)
    return [(key, value, note) for key, value in paper_comparison(labelled)]


def critique_rounds(design) -> int:
    """Run-rounds of critique in ``design``: runs per depth x instances x the sum of its depths (the
    paper's 60-run design: 5 x 4 x (0 + 1 + 5) = 120)."""
    return design.runs_per_depth * len(design.instances) * sum(design.depths)


def density_table(n_demands: int, paper_demands: int | None, design, hypotheses_per_run: float) -> pd.DataFrame:
    """Demands per design, per critiqued run-round and per hypothesis and round: this run's and, with
    ``paper_demands`` (None: no comparison), the paper's with a note saying whether the paper reports it
    or this book derives it. Index: quantity."""
    rounds = critique_rounds(design)
    names = ["demands in the design", "demands per run and round of critique", "demands per hypothesis and round"]
    out = pd.DataFrame({"this run": [n_demands, round(n_demands / rounds, 2),
                                     round(n_demands / rounds / hypotheses_per_run, 2)]},
                       index=pd.Index(names, name="quantity"))
    if paper_demands is None:
        return out
    return out.assign(paper=[paper_demands, round(paper_demands / rounds, 2), None],
                      **{"paper's value": ["reported (§5.1)",
                                           f"derived here: {paper_demands} demands / {rounds} run-rounds",
                                           "not reported"]})


def demand_sentence(density: pd.DataFrame) -> str:
    """How many demands this run raised per run and round (``density_table``), beside the paper's count
    where the table has it, with the per-round value named as this book's derivation."""
    per_round = density.loc["demands per run and round of critique"]
    own = f"{per_round['this run']:g} demands per run and round of critique"
    if "paper" not in density:
        return f"This run raises {own}."
    total = density.loc["demands in the design"]
    return (f"This run raises {total['this run'] / total['paper']:.1f} times the paper's demands: {own}, against "
            f"the {per_round['paper']:g} this book derives from the paper's {total['paper']:g} demands")


def simulated_shares(bench, design, params, seed: int) -> tuple[int, float, pd.DataFrame]:
    """Simulate ``design`` with ``params`` and ``seed`` (reference backend) and label its demands from
    the simulator's log: (number of demands, conceded %, per-round shares as ``round_shares``)."""
    labelled = label_demands(simulate(bench, design, params, seed=seed), None)
    shares = engagement_table(labelled).set_index("label").pct
    return len(labelled), float(shares["conceded"]), round_shares(labelled)


def knows_weak_links(labelled: pd.DataFrame) -> bool:
    """Whether the runs say which demands hit a weak link (the simulator's critic knows; an LLM's
    runs carry the column empty)."""
    return "weak_link" in labelled and not labelled.weak_link.isna().all()


def weak_share_text(labelled: pd.DataFrame) -> str:
    """The share of demands that hit a weak link ("62 %"), or "an unknown share" for runs that do not
    say (:func:`knows_weak_links`)."""
    return f"{100 * labelled.weak_link.mean():.0f} %" if knows_weak_links(labelled) else "an unknown share"


def conceded_floor_sentence(labelled: pd.DataFrame, paper_conceded_pct: float) -> str:
    """Whether the conceded share could reach the paper's: the conceded demands on weak links alone
    are a floor no reply to a sound link lowers (known for simulator runs only)."""
    if not knows_weak_links(labelled):
        return "whether they could come closer is not known for these runs"
    floor = 100.0 * float(((labelled.weak_link == True) & (labelled.label == "conceded")).mean())  # noqa: E712
    if floor > paper_conceded_pct:
        return (f"they cannot come closer: the conceded demands on weak links alone are {floor:.1f} % of all "
                f"demands, above the paper's {paper_conceded_pct:g} %, whatever the replies to sound links")
    return (f"the conceded demands on weak links alone are {floor:.1f} % of all demands, below the paper's "
            f"{paper_conceded_pct:g} %, so the replies to sound links can close the gap")


# --------------------------------------------------------------------------- facts

@dataclass(frozen=True)
class PaperEngagement:
    """The paper's engagement counts, as reported (glued under ``ch03_paper``)."""

    demands: int = fact(unit="demands", doc="critic demands the paper's judge labelled")
    conceded_pct: float = fact(unit="%", doc="share of the paper's demands conceded")
    answered_pct: float = fact(unit="%", doc="share answered")
    partial_pct: float = fact(unit="%", doc="share partially addressed")
    dropped_pct: float = fact(unit="%", doc="share dropped")


def paper_engagement() -> PaperEngagement:
    """The paper's demand count and label shares (%), from ``params/paper.yaml``."""
    return PaperEngagement(demands=reported("engagement.demands"),
                           **{f"{label}_pct": reported(f"engagement.{label}_pct") for label in LABELS})


@dataclass(frozen=True)
class RunShares:
    """This run's demands, its share of them per label and the headline row (glued under ``ch03``)."""

    n_demands: int = fact(unit="demands", doc="labelled demands of this run")
    headline_conceded: float = fact(unit="%", digits=1, doc="share conceded, as the intro's table shows it")
    headline_provenance: str = fact(doc="the intro row's provenance")
    headline_verdict: str = fact(doc="the intro row's verdict")
    max_gap_pp: float | None = fact(unit="pp", digits=1, missing="not compared",
                                    doc="largest gap between this run's shares and the paper's")
    floor_sentence: str = fact(doc="whether the conceded share could come closer to the paper's")
    conceded_pct: float = fact(unit="%", digits=1, doc="share of this run's demands conceded")
    answered_pct: float = fact(unit="%", digits=1, doc="share answered")
    partial_pct: float = fact(unit="%", digits=1, doc="share partially addressed")
    dropped_pct: float = fact(unit="%", digits=1, doc="share dropped")


def run_shares(labelled: pd.DataFrame, shares: pd.DataFrame, llm: bool) -> RunShares:
    """:class:`RunShares` of the labelled demands and their :func:`shares_table` (``llm``: LLM labels);
    without the paper's numbers no gap and no floor sentence."""
    pct = shares["this run (%)"]
    provenance, verdict = headline_provenance("ch03", llm, {"conceded": pct["conceded"]})
    compared = shown()
    return RunShares(n_demands=len(labelled), headline_conceded=pct["conceded"], headline_provenance=provenance,
                     headline_verdict=verdict, max_gap_pp=max_gap_pp(pct, paper_shares()) if compared else None,
                     floor_sentence=conceded_floor_sentence(labelled, reported("engagement.conceded_pct"))
                     if compared else "no comparison with published numbers",
                     **{f"{label}_pct": float(pct[label]) for label in LABELS})


@dataclass(frozen=True)
class Misfit:
    """What the misfit section quotes: the demand density and the simulator probabilities behind it
    (glued under ``ch03``)."""

    critique_rounds: int = fact(unit="run-rounds", doc="run-rounds of critique in the design")
    n_runs: int = fact(unit="runs", doc="runs of the design")
    critiqued_runs: int = fact(unit="runs", doc="runs of the design with at least one critique round")
    demand_sentence: str = fact(doc="this run's demands per run and round, beside the paper's")
    per_hyp_round: float = fact(unit="demands", doc="demands per hypothesis and round in this run")
    weak_share_pct: str = fact(doc="share of demands that hit a weak link, as text")
    misfit_scope: str = fact(doc="whether the simulator's explanation describes this run's workflow")
    p_weak_supported: float = fact(unit="probability", doc="a step the evidence pack names is weak")
    p_weak_unsupported: float = fact(unit="probability", doc="a step it does not name is weak")
    p_find: float = fact(unit="probability", doc="the critic finds an open weak link, per round")
    reply_sound_conceded: float = fact(unit="probability", doc="a demand on a sound link is conceded")


def misfit(labelled: pd.DataFrame, density: pd.DataFrame, setup: WorkflowSetup, backend: Backend) -> Misfit:
    """:class:`Misfit` of the labelled demands, their :func:`density_table` and the run's set-up."""
    scope = ("This run's workflow is the simulator's, so the explanation below describes it"
             if knows_weak_links(labelled) else  # only the simulator's critic knows which links are weak
             f"This run's workflow is an LLM's (backend {backend}): the table counts its demands, and "
             "the explanation below, which is about the simulator, does not describe them")
    sim = setup.simulator
    design = setup.design
    critiqued = design.runs_per_depth * len(design.instances) * sum(depth > 0 for depth in design.depths)
    return Misfit(critique_rounds=critique_rounds(design), n_runs=design.n_runs, critiqued_runs=critiqued,
                  demand_sentence=demand_sentence(density),
                  per_hyp_round=density.loc["demands per hypothesis and round", "this run"],
                  weak_share_pct=weak_share_text(labelled), misfit_scope=scope,
                  p_weak_supported=sim.p_weak_supported, p_weak_unsupported=sim.p_weak_unsupported,
                  p_find=sim.p_find, reply_sound_conceded=sim.reply_sound.conceded)


@dataclass(frozen=True)
class RoundFacts:
    """How the shares move over the critique rounds (glued under ``ch03``)."""

    first_round: int = fact(unit="round", doc="the first critique round")
    last_round: int = fact(unit="round", doc="the last critique round")
    first_round_conceded_pct: float = fact(unit="%", digits=1, doc="demands conceded in the first round")
    last_round_conceded_pct: float = fact(unit="%", digits=1, doc="demands conceded in the last round")
    last_round_answered_pct: float = fact(unit="%", digits=1, doc="demands answered in the last round")


def round_facts(by_round: pd.DataFrame) -> RoundFacts:
    """:class:`RoundFacts` of :func:`round_shares`."""
    return RoundFacts(first_round=int(by_round.index.min()), last_round=int(by_round.index.max()),
                      first_round_conceded_pct=float(by_round["conceded"].iloc[0]),
                      last_round_conceded_pct=float(by_round["conceded"].iloc[-1]),
                      last_round_answered_pct=float(by_round["answered"].iloc[-1]))


@dataclass(frozen=True)
class Exercises:
    """The numbers the exercise solutions quote, simulated so that they follow the parameter files
    (glued under ``ch03``; the simulations only with the simulator's labels)."""

    ex1_n: int | None = fact(unit="demands", missing="not simulated", doc="demands under the null simulator")
    ex1_conceded: float | None = fact(unit="%", digits=1, missing="not simulated", doc="conceded under it")
    ex1_same_rounds: str | None = fact(missing="not simulated", doc="whether its per-round shares are the same")
    ex2_seed: int | None = fact(missing="not simulated", doc="the other seed")
    ex2_n: int | None = fact(unit="demands", missing="not simulated", doc="demands with the other seed")
    ex2_conceded: float | None = fact(unit="%", digits=1, missing="not simulated", doc="conceded with it")
    binomial_se_pp: float = fact(unit="pp", digits=1, doc="binomial standard error of the conceded share")


def exercises(setup: WorkflowSetup, seed: int, labelled: pd.DataFrame, shares: pd.DataFrame,
              by_round: pd.DataFrame, llm: bool) -> Exercises:
    """:class:`Exercises` of this run (its ``seed``, labelled demands, :func:`shares_table` and
    :func:`round_shares`); ``llm``: labels from an LLM judge, nothing simulated."""
    se = 100 * mc_se(shares.loc["conceded", "this run (%)"] / 100, len(labelled))
    if llm:
        return Exercises(None, None, None, None, None, None, se)
    n_null, conceded_null, rounds_null = simulated_shares(setup.bench, setup.design, null_params(setup.simulator),
                                                          seed)
    n_other, conceded_other, _ = simulated_shares(setup.bench, setup.design, setup.simulator, seed + 1)
    return Exercises(n_null, conceded_null, "the same" if rounds_null.equals(by_round) else "different",
                     seed + 1, n_other, conceded_other, se)


# --------------------------------------------------------------------------- cost plan

def plan(p: Mapping[str, Any]) -> list[Planned]:
    """The chapter's requests (``mechaudit estimate``): the workflow, then one engagement label
    request per critique."""
    bench = load_benchmark(p.get("data_dir"))
    work, runs, exact = plan_workflow(p, bench)
    df = demands_frame(runs)
    groups = df.groupby(["run_id", "round", "hypothesis_id"], sort=False) if len(df) else []
    labels = [Planned("engagement labels", judge_request(g, p["judge_model"]), exact, None if exact else str(name))
              for name, g in groups]
    return work + labels
