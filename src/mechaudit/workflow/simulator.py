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
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator
from tqdm import tqdm

from mechaudit.paramfile import load_section
from mechaudit.paths import PARAMS_DIR
from mechaudit.schema import Benchmark, Hypothesis, Step, Vocabulary
from mechaudit.workflow.design import Design
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
    """Read a simulator parameter set (default ``params/simulator.yaml``, key ``simulator``).

    Bad content raises ``DataError`` naming the file, line and field.
    """
    path = Path(path) if path is not None else PARAMS_DIR / "simulator.yaml"
    return load_section(SimulatorParams, path, "simulator", "a mapping of simulator parameters")


def null_params(params: SimulatorParams) -> SimulatorParams:
    """The same parameters with critique unable to change a mechanism (the null setting)."""
    return params.model_copy(update={"name": params.name + "-null", "critique_changes_mechanism": False})


# --------------------------------------------------------------------------- instance model


@dataclass(frozen=True)
class InstanceModel:
    """What the simulator needs of one instance: opening chains and weighted swap pools.

    ``pools[type]``: same-type entity ids; ``weights[type]``: their draw weights (evidence-named
    entities ``evidence_weight``, others 1); ``named``: entity ids the evidence pack names.
    """

    instance: str
    named: frozenset[str]
    openings: tuple[tuple[str, tuple[str, ...]], ...]  # (opening id, chain ids)
    pools: dict[str, np.ndarray]
    weights: dict[str, np.ndarray]


def instance_models(bench: Benchmark, evidence_weight: float) -> dict[str, InstanceModel]:
    """One ``InstanceModel`` per benchmark instance (instance id -> model)."""
    vocab = bench.vocabulary
    out: dict[str, InstanceModel] = {}
    for inst in bench.instances:
        named = {i for text in inst.evidence for i in vocab.mentions(text)}
        pools, weights = {}, {}
        for type_ in vocab.types:
            ids = np.array(vocab.of_type(type_))
            pools[type_] = ids
            weights[type_] = np.array([evidence_weight if i in named else 1.0 for i in ids])
        openings = tuple((h.id, tuple(s.id for s in h.chain)) for h in bench.openings(inst.id))
        out[inst.id] = InstanceModel(inst.id, frozenset(named), openings, pools, weights)
    return out


def _alternative(model: InstanceModel, vocab: Vocabulary, current: str, exclude: set[str], u: float) -> str:
    """A same-type entity other than ``current`` and ``exclude``, drawn by evidence weight.

    ``u``: one uniform(0, 1) number (inverse-CDF draw; plain Python for speed).
    """
    type_ = vocab[current].type
    w = [0.0 if i in exclude or i == current else float(x)
         for i, x in zip(model.pools[type_], model.weights[type_])]
    target = u * sum(w)
    if target == 0:
        return current
    acc = 0.0
    for i, x in zip(model.pools[type_], w):
        acc += x
        if x > 0 and acc > target:
            return str(i)
    return str(next(i for i, x in zip(model.pools[type_], w) if x > 0))


# --------------------------------------------------------------------------- wording

_STATEMENTS = (
    "{init} drives {terminal} through {route}.",
    "{terminal} results from {init} acting via {route}.",
    "Through {route}, {init} leads to {terminal}.",
)
_LINKS = ("{a} activates {b}", "{a} leads to {b}", "{a} promotes {b}", "{a} triggers {b}",
          "{a} results in {b}")
_HEDGE = " The link to {b} is stated with reduced confidence."


@dataclass
class _Draft:
    """A hypothesis being worked on: chain ids, surface texts, link phrasings, open weak links,
    chain positions whose claim was downgraded (hedged)."""

    ids: list[str]
    texts: list[str]
    statement_form: int
    link_forms: list[int]
    weak: list[bool]
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


def _pick(options: Sequence, u: float):
    """The option at uniform(0, 1) position ``u``."""
    return options[min(int(u * len(options)), len(options) - 1)]


def _surface(vocab: Vocabulary, ident: str, u: float) -> str:
    return _pick(vocab[ident].names, u)


def _develop(model: InstanceModel, vocab: Vocabulary, chain: Sequence[str], params: SimulatorParams,
             rng: np.random.Generator) -> _Draft:
    n = len(chain)
    u = rng.random((n, 6)).tolist()  # per step: swap?, alternative, surface, weak?, link form; + statement
    ids = list(chain)
    for j in range(n - 1):  # the terminal finding is fixed by the instance
        if u[j][0] < params.p_develop_swap:
            ids[j] = _alternative(model, vocab, ids[j], set(ids), u[j][1])
    return _Draft(
        ids=ids,
        texts=[_surface(vocab, i, u[j][2]) for j, i in enumerate(ids)],
        statement_form=int(u[0][5] * len(_STATEMENTS)),
        link_forms=[int(u[j][4] * len(_LINKS)) for j in range(n - 1)],
        weak=[u[j][3] < (params.p_weak_supported if ids[j] in model.named else params.p_weak_unsupported)
              for j in range(n - 1)] + [False],
        hedged=set(),
    )


def _hypothesis(d: _Draft, hid: str, instance: str, rid: str, depth: int, opening: str) -> Hypothesis:
    return Hypothesis(id=hid, instance=instance, statement=d.statement(), explanation=d.explanation(),
                      chain=d.chain(), run=rid, depth=depth, opening_id=opening)


_DEMAND_WEAK = "Nothing in the evidence pack supports '{step}' as a step of this chain: cite support or replace it."
_DEMAND_SOUND = "Justify the link from '{prev}' to '{step}' with the evidence."
_DEMAND_SOUND_FIRST = "Justify '{step}' as the initiating event with the evidence."
_REPLIES = {
    "conceded": "Accepted: '{step}' is withdrawn from this link{new}.",
    "answered": "The evidence pack supports '{step}' directly; the link stands.",
    "partial": "Some support exists for '{step}'; the link is kept in part{new}.",
    "dropped": "(no response to this point)",
}


# --------------------------------------------------------------------------- one run


@dataclass(frozen=True)
class _Exchange:
    """One demand of a critique round and its reply: the step's id and text when the demand was
    raised, the demand text, whether the link was weak, the reply label, and the replacement note
    (``"; replaced by '...'"`` or ``""``)."""

    target: str
    step: str
    demand: str
    weak: bool
    label: str
    new: str


def _critique_round(model: InstanceModel, vocab: Vocabulary, d: _Draft, params: SimulatorParams,
                    u: list[list[float]], cums: tuple[np.ndarray, np.ndarray]) -> tuple[list[_Exchange], list[int]]:
    """One critique round on draft ``d`` (updated in place: closed links, replaced steps, hedges).

    ``u``: uniform draws, per chain step (found?, label, partial repair?, alternative, surface);
    ``cums``: cumulative reply probabilities for weak and sound links. Returns the exchanges in
    demand order and the chain positions whose id changed.
    """
    exchanges: list[_Exchange] = []
    changed: list[int] = []
    for j in range(len(d.ids) - 1):
        is_weak = d.weak[j]
        if not u[j][0] < (params.p_find if is_weak else params.p_challenge_sound):
            continue
        target, step = d.ids[j], d.texts[j]
        text = (_DEMAND_WEAK.format(step=step) if is_weak else
                _DEMAND_SOUND.format(prev=d.texts[j - 1], step=step) if j else
                _DEMAND_SOUND_FIRST.format(step=step))
        cum = cums[0] if is_weak else cums[1]
        label = LABELS[min(int(np.searchsorted(cum, u[j][1] * cum[-1], side="right")), len(LABELS) - 1)]
        repair = is_weak and (label == "conceded" or (label == "partial" and u[j][2] < params.p_repair_partial))
        new = ""
        if repair:
            d.weak[j] = False
            if params.critique_changes_mechanism:
                d.ids[j] = _alternative(model, vocab, d.ids[j], set(d.ids), u[j][3])
                d.texts[j] = _surface(vocab, d.ids[j], u[j][4])
                new = f"; replaced by '{d.texts[j]}'"
                changed.append(j)
            else:
                d.hedged.add(j)
        elif is_weak and label == "answered":
            d.weak[j] = False
        elif label == "conceded":
            d.hedged.add(j)
        exchanges.append(_Exchange(target, step, text, is_weak, label, new))
    return exchanges, changed


def simulate_run(model: InstanceModel, vocab: Vocabulary, depth: int, repetition: int,
                 params: SimulatorParams, seed: int, log: bool = True) -> Run:
    """Simulate one workflow run of ``depth`` critique rounds; same arguments -> identical Run.

    ``log=False`` leaves out the developed hypotheses and the demand/reply/revision records (the
    delivered hypotheses are identical; replication studies use it for speed).

    The random stream is ``default_rng([seed, *codepoints(instance id), depth, repetition])``: it
    depends only on these, never on other runs or on the order of simulation.
    """
    rid, instance = run_id(model.instance, depth, repetition), model.instance
    rng = np.random.default_rng([seed, *map(ord, instance), depth, repetition])
    drafts: list[tuple[str, str, _Draft]] = []
    for opening, chain in model.openings:
        n = 1 + int(rng.binomial(params.extra_hypotheses_max, params.p_extra_hypothesis))
        for j in range(n):
            drafts.append((f"{rid}-{opening}-{j}", opening, _develop(model, vocab, chain, params, rng)))
    developed = [_hypothesis(d, hid, instance, rid, depth, op) for hid, op, d in drafts] if log else []
    demands: list[Demand] = []
    replies: list[Reply] = []
    revisions: list[Revision] = []
    cums = (np.cumsum(params.reply_weak.as_array()), np.cumsum(params.reply_sound.as_array()))
    for rnd in range(1, depth + 1):
        for hid, opening, d in drafts:
            u = rng.random((len(d.ids), 5)).tolist()
            exchanges, changed = _critique_round(model, vocab, d, params, u, cums)
            if not (log and exchanges):
                continue
            for number, x in enumerate(exchanges, start=1):
                demands.append(Demand(run_id=rid, instance=instance, depth=depth, round=rnd, hypothesis_id=hid,
                                      opening_id=opening, number=number, target_step=x.target, text=x.demand,
                                      weak_link=x.weak))
                replies.append(Reply(run_id=rid, round=rnd, hypothesis_id=hid, number=number,
                                     text=_REPLIES[x.label].format(step=x.step, new=x.new), label=x.label))
            revisions.append(Revision(run_id=rid, round=rnd, hypothesis_id=hid, opening_id=opening,
                                      statement=d.statement(), explanation=d.explanation(),
                                      chain=d.chain(), changed=changed))
    delivered = [_hypothesis(d, hid, instance, rid, depth, op) for hid, op, d in drafts]
    return Run(run_id=rid, instance=instance, depth=depth, repetition=repetition, backend=BACKEND,
               developed=developed, delivered=delivered, demands=demands, replies=replies,
               revisions=revisions)


def _design_models(bench: Benchmark, design: Design, params: SimulatorParams,
                   models: dict[str, InstanceModel] | None) -> dict[str, InstanceModel]:
    """``models`` (default ``instance_models(bench, params.evidence_weight)``); raises ValueError
    naming any instance of ``design`` it lacks."""
    models = instance_models(bench, params.evidence_weight) if models is None else models
    unknown = [i for i in design.instances if i not in models]
    if unknown:
        raise ValueError(f"design.instances: unknown instance ids {unknown}; known {sorted(models)}")
    return models


def simulate(bench: Benchmark, design: Design, params: SimulatorParams, seed: int = 0,
             progress: bool = False, log: bool = True,
             models: dict[str, InstanceModel] | None = None) -> list[Run]:
    """Every run of ``design`` (instance-major, then depth, then repetition).

    ``log``: as in ``simulate_run``. ``models``: ``instance_models(bench, params.evidence_weight)``
    computed once by a caller that simulates many replications.
    """
    models = _design_models(bench, design, params, models)
    cells = design.cells()
    return [simulate_run(models[i], bench.vocabulary, k, r, params, seed, log=log)
            for i, k, r in tqdm(cells, disable=not progress, desc="simulating runs")]


# --------------------------------------------------------------------------- fast path: ids only


@dataclass(frozen=True)
class RunOutcome:
    """What a run delivers, reduced to ids: ``keys[h] = (opening id, chain ids)`` per delivered
    hypothesis and ``labels``, the count of demands per engagement label (``records.LABELS`` order),
    shape ``(4,)``."""

    instance: str
    depth: int
    repetition: int
    keys: tuple[tuple[str, tuple[str, ...]], ...]
    labels: np.ndarray


def _pick_alternative(pools: dict[str, tuple[list[str], list[float]]], type_of: dict[str, str],
                      current: str, exclude: list[str], u: float) -> str:
    """``_alternative`` over pre-extracted Python lists (identical draw for identical ``u``)."""
    ids, weights = pools[type_of[current]]
    w = [0.0 if i == current or i in exclude else x for i, x in zip(ids, weights)]
    target = u * sum(w)
    if target == 0:
        return current
    acc = 0.0
    for i, x in zip(ids, w):
        acc += x
        if x > 0 and acc > target:
            return i
    return next(i for i, x in zip(ids, w) if x > 0)


@dataclass(frozen=True)
class _IdTables:
    """An ``InstanceModel`` as plain Python lists, for the fast path."""

    pools: dict[str, tuple[list[str], list[float]]]
    type_of: dict[str, str]


def _id_tables(model: InstanceModel, vocab: Vocabulary) -> _IdTables:
    pools = {t: ([str(i) for i in model.pools[t]], [float(x) for x in model.weights[t]]) for t in model.pools}
    return _IdTables(pools, {i: t for t, (ids, _) in pools.items() for i in ids})


def simulate_outcome(model: InstanceModel, vocab: Vocabulary, depth: int, repetition: int,
                     params: SimulatorParams, seed: int, tables: _IdTables | None = None) -> RunOutcome:
    """The ids and engagement counts of ``simulate_run(model, vocab, depth, repetition, params, seed)``.

    Draws the same random numbers in the same order as ``simulate_run`` and applies the same rules,
    but builds no text and no records: the delivered chains and the demand labels are identical
    (a test checks this), many times faster. Replication studies use it. ``tables``: from
    ``_id_tables(model, vocab)``, computed once by callers that simulate many runs.
    """
    rng = np.random.default_rng([seed, *map(ord, model.instance), depth, repetition])
    tables = _id_tables(model, vocab) if tables is None else tables
    pools, type_of = tables.pools, tables.type_of
    named = model.named
    cum_weak = np.cumsum(params.reply_weak.as_array()).tolist()
    cum_sound = np.cumsum(params.reply_sound.as_array()).tolist()
    n_labels = len(LABELS)
    counts = [0] * n_labels
    drafts: list[tuple[str, list[str], list[bool]]] = []
    for opening, chain in model.openings:
        n_h = 1 + int(rng.binomial(params.extra_hypotheses_max, params.p_extra_hypothesis))
        for _ in range(n_h):
            n = len(chain)
            u = rng.random((n, 6)).tolist()
            ids = list(chain)
            for j in range(n - 1):
                if u[j][0] < params.p_develop_swap:
                    ids[j] = _pick_alternative(pools, type_of, ids[j], ids, u[j][1])
            weak = [u[j][3] < (params.p_weak_supported if ids[j] in named else params.p_weak_unsupported)
                    for j in range(n - 1)] + [False]
            drafts.append((opening, ids, weak))
    for _ in range(depth):
        for _, ids, weak in drafts:
            u = rng.random((len(ids), 5)).tolist()
            for j in range(len(ids) - 1):
                is_weak = weak[j]
                uj = u[j]
                if not uj[0] < (params.p_find if is_weak else params.p_challenge_sound):
                    continue
                cum = cum_weak if is_weak else cum_sound
                k = min(bisect_right(cum, uj[1] * cum[-1]), n_labels - 1)
                counts[k] += 1
                label = LABELS[k]
                if is_weak and (label == "conceded" or (label == "partial" and uj[2] < params.p_repair_partial)):
                    weak[j] = False
                    if params.critique_changes_mechanism:
                        ids[j] = _pick_alternative(pools, type_of, ids[j], ids, uj[3])
                elif is_weak and label == "answered":
                    weak[j] = False
    return RunOutcome(model.instance, depth, repetition,
                      tuple((opening, tuple(ids)) for opening, ids, _ in drafts), np.array(counts))


def simulate_outcomes(bench: Benchmark, design: Design, params: SimulatorParams, seed: int = 0,
                      models: dict[str, InstanceModel] | None = None) -> list[RunOutcome]:
    """``simulate_outcome`` for every run of ``design``, in ``simulate``'s order."""
    models = _design_models(bench, design, params, models)
    tables = {i: _id_tables(models[i], bench.vocabulary) for i in design.instances}
    return [simulate_outcome(models[i], bench.vocabulary, k, r, params, seed, tables[i])
            for i, k, r in design.cells()]
