"""Offline stand-in for the proposer/critic workflow: a documented stochastic model (backend ``reference``).

The model follows one hypothesis through the workflow. Every probability below is a parameter in
``params/simulator.yaml`` (``SimulatorParams``); nothing in it is an effect size per round.

1. **Development** (run-to-run noise). For each of the instance's opening hypotheses the proposer
   develops ``1 + Binomial(extra_hypotheses_max, p_extra_hypothesis)`` hypotheses. Each starts from
   the opening's chain; every step except the terminal finding is replaced, with probability
   ``p_develop_swap``, by a same-type vocabulary entity (the proposer elaborated differently in
   this run). Each non-terminal step is then *weak* (low evidential support) with probability
   ``p_weak_supported`` if the evidence pack names its entity and ``p_weak_unsupported`` if it does
   not; so the same steps tend to be weak in every run of an instance. Surface forms are drawn from
   each entity's names, so wording varies between runs.
2. **Critique** (K rounds). In each round the critic raises one numbered demand for every
   still-unresolved weak link it finds (probability ``p_find`` per link) and, independently,
   challenges each sound link with probability ``p_challenge_sound``.
3. **Reply**. Each demand is conceded / answered / partially addressed / dropped with the
   probabilities ``reply_weak`` (demand on a weak link) or ``reply_sound`` (on a sound link).
4. **Revision**. A conceded weak-link demand repairs the link: the step is replaced by a same-type
   alternative drawn from the vocabulary, entities named in the instance's evidence pack weighted
   ``evidence_weight`` times more; the new step is sound. A partial reply repairs it with probability
   ``p_repair_partial`` and otherwise leaves it weak and open. An answered demand defends the link
   (resolved, unchanged); a dropped one leaves it open for later rounds. A conceded demand on a sound
   link only downgrades the claim (a hedge in the explanation). With
   ``critique_changes_mechanism: false`` (the null setting) no reply ever changes a chain id.

Diminishing returns follow from the finite set of weak links: once a link is repaired or defended
the critic no longer finds it, so after the first round there is little left to change.
Ground truth: the simulator's step ids are canonical, so ``mechaudit.schema.mechanism_key`` of a
delivered hypothesis is its true mechanism.

``simulate_outcome`` is the model: every random draw is made there, on ids. ``render_run`` writes
the text-level run (wording, demands, replies, revisions) from the outcome's events, drawing nothing.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator
from tqdm import tqdm

from mechaudit.paths import PARAMS_DIR
from mechaudit.schema import Benchmark, Hypothesis, Step, Vocabulary, load_benchmark
from mechaudit.workflow.design import Design, load_design
from mechaudit.workflow.paramfile import load_section
from mechaudit.workflow.records import LABELS, Demand, Reply, Revision, Run, run_id

BACKEND = "reference"


class ReplyProbabilities(BaseModel):
    """Probabilities of the four engagement labels for one kind of demand; they sum to 1."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    conceded: float = Field(ge=0, le=1)
    answered: float = Field(ge=0, le=1)
    partial: float = Field(ge=0, le=1)
    dropped: float = Field(ge=0, le=1)

    @model_validator(mode="after")
    def _sums_to_one(self) -> ReplyProbabilities:
        total = self.conceded + self.answered + self.partial + self.dropped
        if abs(total - 1.0) > 1e-9:
            raise ValueError(f"reply probabilities sum to {total}, not 1")
        return self

    def as_array(self) -> np.ndarray:
        """Probabilities in the order of ``records.LABELS``."""
        return np.array([getattr(self, label) for label in LABELS])


class SimulatorParams(BaseModel):
    """Parameters of the simulator (see the module docstring for their meaning)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    extra_hypotheses_max: int = Field(ge=0)
    p_extra_hypothesis: float = Field(ge=0, le=1)
    p_develop_swap: float = Field(ge=0, le=1)
    p_weak_supported: float = Field(ge=0, le=1)
    p_weak_unsupported: float = Field(ge=0, le=1)
    p_find: float = Field(ge=0, le=1)
    p_challenge_sound: float = Field(ge=0, le=1)
    reply_weak: ReplyProbabilities
    reply_sound: ReplyProbabilities
    p_repair_partial: float = Field(ge=0, le=1)
    evidence_weight: float = Field(ge=0)
    critique_changes_mechanism: bool = True


def load_simulator_params(path: str | Path | None = None) -> SimulatorParams:
    """Read a simulator parameter set (default ``params/simulator.yaml``, key ``simulator``)."""
    path = Path(path) if path is not None else PARAMS_DIR / "simulator.yaml"
    return load_section(SimulatorParams, path, "simulator", "a mapping of simulator parameters")


def load_simulation(data_dir: str | Path | None = None, design_file: str = "paper.yaml",
                    simulator_file: str = "simulator.yaml") -> tuple[Benchmark, Design, SimulatorParams]:
    """The benchmark (``data_dir``; None: the shipped data), the design over its instances and the
    simulator parameters (``design_file``, ``simulator_file``: names under ``params/``)."""
    bench = load_benchmark(data_dir)
    design = load_design(PARAMS_DIR / design_file, instances=[i.id for i in bench.instances])
    return bench, design, load_simulator_params(PARAMS_DIR / simulator_file)


def null_params(params: SimulatorParams) -> SimulatorParams:
    """The same parameters with critique unable to change a mechanism (the null setting)."""
    return params.model_copy(update={"name": params.name + "-null", "critique_changes_mechanism": False})


# --------------------------------------------------------------------------- instance model


@dataclass(frozen=True)
class InstanceModel:
    """One instance's opening chains, ``named`` (entity ids its evidence pack names) and swap pools:
    ``pools[type] = (entity ids in vocabulary order, weights: evidence_weight if named, else 1)``."""

    instance: str
    named: frozenset[str]
    openings: tuple[tuple[str, tuple[str, ...]], ...]  # (opening id, chain ids)
    pools: dict[str, tuple[list[str], list[float]]]


def instance_models(bench: Benchmark, evidence_weight: float) -> dict[str, InstanceModel]:
    """One ``InstanceModel`` per benchmark instance (instance id -> model)."""
    vocab = bench.vocabulary
    out: dict[str, InstanceModel] = {}
    for inst in bench.instances:
        named = {i for text in inst.evidence for i in vocab.mentions(text)}
        pools = {t: (ids, [evidence_weight if i in named else 1.0 for i in ids])
                 for t in vocab.types for ids in [vocab.of_type(t)]}
        openings = tuple((h.id, tuple(s.id for s in h.chain)) for h in bench.openings(inst.id))
        out[inst.id] = InstanceModel(inst.id, frozenset(named), openings, pools)
    return out


def _alternative(model: InstanceModel, vocab: Vocabulary, current: str, exclude: list[str], u: float) -> str:
    """A same-type entity other than ``current`` and ``exclude`` by evidence weight (inverse CDF at ``u``)."""
    ids, weights = model.pools[vocab[current].type]
    w = [0.0 if i == current or i in exclude else x for i, x in zip(ids, weights)]
    target = u * sum(w)
    if target == 0:
        return current
    acc = 0.0
    for i, x in zip(ids, w):
        acc += x
        if x > 0 and acc > target:
            return i
    return next(i for i, x in zip(reversed(ids), reversed(w)) if x > 0)  # the top end of the CDF


def _index(n: int, u: float) -> int:
    """The option among ``n`` at uniform(0, 1) position ``u``."""
    return min(int(u * n), n - 1)


# --------------------------------------------------------------------------- the model: every draw


@dataclass(frozen=True)
class Development:
    """Event: the proposer developed hypothesis ``index`` of ``opening`` with chain ``ids``, worded
    with name ``names[j]`` of step j's entity, statement form ``statement_form`` and link phrasing
    ``link_forms[j]`` for the link from step j to j + 1."""

    opening: str
    index: int
    ids: tuple[str, ...]
    names: tuple[int, ...]
    statement_form: int
    link_forms: tuple[int, ...]


@dataclass(frozen=True)
class Exchange:
    """Event: in ``round`` the critic raised a demand against chain position ``position`` of the
    ``draft``-th developed hypothesis (``weak``: the link was weak) and the reply was ``label``;
    ``replacement``: the new step's (entity id, name index) if the link was repaired by a new step,
    else None; ``hedged``: the claim on the link was downgraded."""

    round: int
    draft: int
    position: int
    weak: bool
    label: str
    replacement: tuple[str, int] | None
    hedged: bool


@dataclass(frozen=True)
class RunOutcome:
    """What a run delivers, reduced to ids: ``keys[h] = (opening id, chain ids)`` per delivered
    hypothesis and ``labels``, the count of demands per engagement label (``records.LABELS`` order),
    shape ``(4,)``. ``developments`` and ``exchanges``: the run's events in order (empty unless
    recorded); ``render_run`` writes the text-level run from them."""

    instance: str
    depth: int
    repetition: int
    keys: tuple[tuple[str, tuple[str, ...]], ...]
    labels: np.ndarray
    developments: tuple[Development, ...] = ()
    exchanges: tuple[Exchange, ...] = ()


_STATEMENTS = (
    "{init} drives {terminal} through {route}.",
    "{terminal} results from {init} acting via {route}.",
    "Through {route}, {init} leads to {terminal}.",
)
_LINKS = ("{a} activates {b}", "{a} leads to {b}", "{a} promotes {b}", "{a} triggers {b}",
          "{a} results in {b}")


def simulate_outcome(model: InstanceModel, vocab: Vocabulary, depth: int, repetition: int,
                     params: SimulatorParams, seed: int, events: bool = False) -> RunOutcome:
    """One run of ``depth`` critique rounds as ids: the simulator's model, where every random draw is made.

    ``events=True`` also records the events and wording choices (for ``render_run``; the outcome is
    the same). The stream ``default_rng([seed, *codepoints(instance id), depth, repetition])`` never
    depends on other runs or on the order of simulation.
    """
    rng = np.random.default_rng([seed, *map(ord, model.instance), depth, repetition])
    cum_weak = np.cumsum(params.reply_weak.as_array()).tolist()
    cum_sound = np.cumsum(params.reply_sound.as_array()).tolist()
    counts = [0] * len(LABELS)
    drafts: list[tuple[str, list[str], list[bool]]] = []
    developments: list[Development] = []
    exchanges: list[Exchange] = []
    for opening, chain in model.openings:
        for index in range(1 + int(rng.binomial(params.extra_hypotheses_max, params.p_extra_hypothesis))):
            n = len(chain)
            u = rng.random((n, 6)).tolist()  # per step: swap?, alternative, surface, weak?, link form; + statement
            ids = list(chain)
            for j in range(n - 1):  # the terminal finding is fixed by the instance
                if u[j][0] < params.p_develop_swap:
                    ids[j] = _alternative(model, vocab, ids[j], ids, u[j][1])
            weak = [u[j][3] < (params.p_weak_supported if ids[j] in model.named else params.p_weak_unsupported)
                    for j in range(n - 1)] + [False]
            drafts.append((opening, ids, weak))
            if events:
                developments.append(Development(
                    opening, index, tuple(ids), tuple(_index(len(vocab[i].names), u[j][2]) for j, i in enumerate(ids)),
                    int(u[0][5] * len(_STATEMENTS)), tuple(int(u[j][4] * len(_LINKS)) for j in range(n - 1))))
    for rnd in range(1, depth + 1):
        for h, (_, ids, weak) in enumerate(drafts):
            u = rng.random((len(ids), 5)).tolist()  # per step: found?, label, partial repair?, alternative, surface
            for j in range(len(ids) - 1):
                is_weak, uj = weak[j], u[j]
                if not uj[0] < (params.p_find if is_weak else params.p_challenge_sound):
                    continue
                cum = cum_weak if is_weak else cum_sound
                k = min(bisect_right(cum, uj[1] * cum[-1]), len(LABELS) - 1)
                counts[k] += 1
                label, replaced, hedged = LABELS[k], False, False
                if is_weak and (label == "conceded" or (label == "partial" and uj[2] < params.p_repair_partial)):
                    weak[j] = False
                    replaced = params.critique_changes_mechanism
                    hedged = not replaced
                    if replaced:
                        ids[j] = _alternative(model, vocab, ids[j], ids, uj[3])
                elif is_weak and label == "answered":
                    weak[j] = False
                elif label == "conceded":
                    hedged = True
                if events:
                    new = (ids[j], _index(len(vocab[ids[j]].names), uj[4])) if replaced else None
                    exchanges.append(Exchange(rnd, h, j, is_weak, label, new, hedged))
    return RunOutcome(model.instance, depth, repetition, tuple((opening, tuple(ids)) for opening, ids, _ in drafts),
                      np.array(counts), tuple(developments), tuple(exchanges))


def simulate_outcomes(bench: Benchmark, design: Design, params: SimulatorParams, seed: int = 0,
                      models: dict[str, InstanceModel] | None = None) -> list[RunOutcome]:
    """``simulate_outcome`` for every run of ``design``, in ``simulate``'s order."""
    models = _design_models(bench, design, params, models)
    return [simulate_outcome(models[i], bench.vocabulary, k, r, params, seed) for i, k, r in design.cells()]


def _design_models(bench: Benchmark, design: Design, params: SimulatorParams,
                   models: dict[str, InstanceModel] | None) -> dict[str, InstanceModel]:
    """``models`` (default ``instance_models(...)``); ValueError naming an instance they lack."""
    models = instance_models(bench, params.evidence_weight) if models is None else models
    unknown = [i for i in design.instances if i not in models]
    if unknown:
        raise ValueError(f"design.instances: unknown instance ids {unknown}; known {sorted(models)}")
    return models


# --------------------------------------------------------------------------- the text: no draws

_HEDGE = " The link to {b} is stated with reduced confidence."
_DEMAND_WEAK = "Nothing in the evidence pack supports '{step}' as a step of this chain: cite support or replace it."
_DEMAND_SOUND = "Justify the link from '{prev}' to '{step}' with the evidence."
_DEMAND_SOUND_FIRST = "Justify '{step}' as the initiating event with the evidence."
_REPLIES = {
    "conceded": "Accepted: '{step}' is withdrawn from this link{new}.",
    "answered": "The evidence pack supports '{step}' directly; the link stands.",
    "partial": "Some support exists for '{step}'; the link is kept in part{new}.",
    "dropped": "(no response to this point)",
}


@dataclass
class _Draft:
    """A hypothesis as worded so far: chain ids, surface texts, statement form, link phrasings and
    chain positions whose claim was downgraded (hedged)."""

    ids: list[str]
    texts: list[str]
    statement_form: int
    link_forms: tuple[int, ...]
    hedged: set[int]

    def statement(self) -> str:
        route = " and ".join(self.texts[1:-1])
        return _STATEMENTS[self.statement_form].format(init=self.texts[0], terminal=self.texts[-1],
                                                      route=route)

    def explanation(self) -> str:
        parts = []
        for j, form in enumerate(self.link_forms):
            sentence = _LINKS[form].format(a=self.texts[j], b=self.texts[j + 1])
            parts.append(sentence[0].upper() + sentence[1:] + ".")
            if j + 1 in self.hedged:
                parts.append(_HEDGE.format(b=self.texts[j + 1]).strip())
        return " ".join(parts)

    def chain(self) -> list[Step]:
        return [Step(id=i, text=t) for i, t in zip(self.ids, self.texts)]

    def hypothesis(self, hid: str, instance: str, rid: str, depth: int, opening: str) -> Hypothesis:
        return Hypothesis(id=hid, instance=instance, statement=self.statement(), explanation=self.explanation(),
                          chain=self.chain(), run=rid, depth=depth, opening_id=opening)


def render_run(outcome: RunOutcome, vocab: Vocabulary, log: bool = True) -> Run:
    """The text-level run of an outcome simulated with ``events=True``, drawing nothing; ``log=False``
    leaves out the developed hypotheses and the demand/reply/revision records."""
    instance, depth = outcome.instance, outcome.depth
    rid = run_id(instance, depth, outcome.repetition)
    drafts = [(f"{rid}-{e.opening}-{e.index}", e.opening,
               _Draft(list(e.ids), [vocab[i].names[k] for i, k in zip(e.ids, e.names)], e.statement_form,
                      e.link_forms, set()))
              for e in outcome.developments]
    developed = [d.hypothesis(hid, instance, rid, depth, op) for hid, op, d in drafts] if log else []
    demands: list[Demand] = []
    replies: list[Reply] = []
    revisions: list[Revision] = []
    for (rnd, h), group in groupby(outcome.exchanges, key=lambda x: (x.round, x.draft)):
        hid, opening, d = drafts[h]
        changed = []
        for number, x in enumerate(group, start=1):
            j = x.position
            target, step = d.ids[j], d.texts[j]
            text = (_DEMAND_WEAK.format(step=step) if x.weak else
                    _DEMAND_SOUND.format(prev=d.texts[j - 1], step=step) if j else
                    _DEMAND_SOUND_FIRST.format(step=step))
            new = ""
            if x.replacement:
                d.ids[j], name = x.replacement
                d.texts[j] = vocab[d.ids[j]].names[name]
                new = f"; replaced by '{d.texts[j]}'"
                changed.append(j)
            if x.hedged:
                d.hedged.add(j)
            if log:
                demands.append(Demand(run_id=rid, instance=instance, depth=depth, round=rnd, hypothesis_id=hid,
                                      opening_id=opening, number=number, target_step=target, text=text,
                                      weak_link=x.weak))
                replies.append(Reply(run_id=rid, round=rnd, hypothesis_id=hid, number=number,
                                     text=_REPLIES[x.label].format(step=step, new=new), label=x.label))
        if log:
            revisions.append(Revision(run_id=rid, round=rnd, hypothesis_id=hid, opening_id=opening,
                                      statement=d.statement(), explanation=d.explanation(),
                                      chain=d.chain(), changed=changed))
    delivered = [d.hypothesis(hid, instance, rid, depth, op) for hid, op, d in drafts]
    return Run(run_id=rid, instance=instance, depth=depth, repetition=outcome.repetition, backend=BACKEND,
               developed=developed, delivered=delivered, demands=demands, replies=replies,
               revisions=revisions)


def simulate_run(model: InstanceModel, vocab: Vocabulary, depth: int, repetition: int,
                 params: SimulatorParams, seed: int, log: bool = True) -> Run:
    """One run as text: ``render_run`` of ``simulate_outcome``'s events (``log`` as there)."""
    return render_run(simulate_outcome(model, vocab, depth, repetition, params, seed, events=True), vocab, log)


def simulate(bench: Benchmark, design: Design, params: SimulatorParams, seed: int = 0,
             progress: bool = False, log: bool = True,
             models: dict[str, InstanceModel] | None = None) -> list[Run]:
    """Every run of ``design`` (``Design.cells`` order); ``log`` as in ``render_run``; ``models``:
    ``instance_models(...)`` computed once by a caller of many replications."""
    models = _design_models(bench, design, params, models)
    return [simulate_run(models[i], bench.vocabulary, k, r, params, seed, log=log)
            for i, k, r in tqdm(design.cells(), disable=not progress, desc="simulating runs")]
