"""The real proposer/critic workflow through the LLM layer (backends ``anthropic`` and ``replay``).

Per run (one instance, depth K, one repetition) the proposer *develops* each opening hypothesis with
the evidence pack; in each of K rounds the critic raises numbered demands and the proposer replies to
each and *revises*; the run delivers each hypothesis's last revision. Every call is strict JSON through
``mechaudit.llm``; chains are checked against the vocabulary (a violation goes back as a repair
request). A stage's requests go out together (``complete_many``); reruns differ because each request
names its run id and the generator samples at ``temperature``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from mechaudit.llm import LLMRequest
from mechaudit.schema import Benchmark, Hypothesis, Instance, Step, Vocabulary
from mechaudit.workflow.design import Design
from mechaudit.workflow.records import Demand, Exclusion, Reply, Revision, Run, run_id

GENERATOR = "claude-sonnet-4-6"
PROMPT_VERSION = "workflow-v1"

PROPOSER_SYSTEM = """\
You are the proposer in a scientific hypothesis workflow. You explain an observed experimental \
finding with a mechanistic hypothesis: a causal chain that starts at an initiating event, passes \
through intermediate biological steps and ends at the observed finding. Ground every step in the \
evidence pack you are given. Use only step ids from the vocabulary you are given; each step also \
gets the wording you would use for it in this hypothesis. Reply with one JSON object only."""

CRITIC_SYSTEM = """\
You are the critic in a scientific hypothesis workflow. You examine one mechanistic hypothesis \
against the evidence pack and challenge it with explicit, numbered demands: each demand names \
what is unsupported, missing or doubtful and what the proposer must do about it (cite evidence, \
correct a step, narrow a claim). Target the weakest links of the causal chain first. Raise between \
one and four demands. Reply with one JSON object only."""

HYPOTHESIS_FORMAT = """\
{"statement": "<one sentence>", "explanation": "<a short mechanistic paragraph>", \
"chain": [{"id": "<vocabulary id>", "text": "<wording>"}, ...]}"""


class StepOut(BaseModel):
    """A chain step as the model returns it."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    text: str = Field(min_length=1)


class HypothesisOut(BaseModel):
    """A developed or revised hypothesis as the model returns it (chain: >= 3 steps)."""

    model_config = ConfigDict(extra="forbid")
    statement: str = Field(min_length=1)
    explanation: str = Field(min_length=1)
    chain: list[StepOut] = Field(min_length=3)


class DemandOut(BaseModel):
    """One numbered demand of the critic; ``target_step`` is the challenged step id if any."""

    model_config = ConfigDict(extra="forbid")
    number: int = Field(ge=1)
    target_step: str | None = None
    demand: str = Field(min_length=1)


class CritiqueOut(BaseModel):
    """The critic's challenge: numbered demands 1..n."""

    model_config = ConfigDict(extra="forbid")
    demands: list[DemandOut] = Field(min_length=1)

    @model_validator(mode="after")
    def _numbered(self) -> CritiqueOut:
        numbers = [d.number for d in self.demands]
        if numbers != list(range(1, len(numbers) + 1)):
            raise ValueError(f"demands must be numbered 1..{len(numbers)} in order, got {numbers}")
        return self


class ReplyOut(BaseModel):
    """The proposer's reply to demand ``number``."""

    model_config = ConfigDict(extra="forbid")
    number: int = Field(ge=1)
    reply: str = Field(min_length=1)


def hypothesis_schema(vocabulary: Vocabulary, terminal_id: str) -> type[HypothesisOut]:
    """``HypothesisOut`` that also requires known step ids and the instance's terminal id last."""

    def _check(self: HypothesisOut) -> HypothesisOut:
        unknown = [s.id for s in self.chain if s.id not in vocabulary]
        if unknown:
            raise ValueError(f"chain ids not in the vocabulary: {unknown}")
        if self.chain[-1].id != terminal_id:
            raise ValueError(f"the chain must end at the finding {terminal_id!r}, not {self.chain[-1].id!r}")
        return self

    return create_model("CheckedHypothesis", __base__=HypothesisOut,
                        __validators__={"_check": model_validator(mode="after")(_check)})


def revision_schema(hypothesis: type[HypothesisOut], n_demands: int) -> type[BaseModel]:
    """Reply-and-revise output: one reply per demand 1..n, then the revised hypothesis."""

    def _check(self):
        numbers = [r.number for r in self.replies]
        if numbers != list(range(1, n_demands + 1)):
            raise ValueError(f"reply to demands 1..{n_demands} in order, got {numbers}")
        return self

    return create_model("RevisionOut", __config__=ConfigDict(extra="forbid"),
                        replies=(list[ReplyOut], ...), revised=(hypothesis, ...),
                        __validators__={"_check": model_validator(mode="after")(_check)})


# --------------------------------------------------------------------------- prompts


def _vocabulary_block(vocabulary: Vocabulary) -> str:
    lines = [f"- {e.id} ({e.type}): {e.name}" for e in vocabulary.entities.values()]
    return "Vocabulary (id (type): name):\n" + "\n".join(lines)


def _instance_block(instance: Instance) -> str:
    evidence = "\n".join(f"{k}. {e}" for k, e in enumerate(instance.evidence, 1))
    return (f"Observed finding: {instance.finding} (terminal step id: {instance.terminal_id})\n\n"
            f"Evidence pack:\n{evidence}")


def _hypothesis_json(h: HypothesisOut | Hypothesis) -> str:
    return json.dumps({"statement": h.statement, "explanation": h.explanation,
                       "chain": [{"id": s.id, "text": s.text} for s in h.chain]}, ensure_ascii=False)


def develop_request(instance: Instance, vocabulary: Vocabulary, opening: Hypothesis, rid: str,
                    model: str, temperature: float | None) -> LLMRequest:
    """Proposer call: develop one opening hypothesis with the evidence pack."""
    user = (f"Workflow run {rid}.\n\n{_instance_block(instance)}\n\n{_vocabulary_block(vocabulary)}\n\n"
            f"Opening hypothesis to develop:\n{_hypothesis_json(opening)}\n\n"
            "Develop this opening hypothesis into a complete mechanistic hypothesis that explains the "
            "finding. Keep its initiating idea unless the evidence argues against it; make every "
            f"intermediate step explicit. Reply with JSON of the form\n{HYPOTHESIS_FORMAT}")
    return LLMRequest(model=model, system=PROPOSER_SYSTEM, messages=[{"role": "user", "content": user}],
                      temperature=temperature, max_tokens=1500, version=PROMPT_VERSION,
                      metadata={"stage": "develop", "run": rid, "opening": opening.id})


def critique_request(instance: Instance, hypothesis: HypothesisOut, rid: str, round_: int,
                     model: str, temperature: float | None) -> LLMRequest:
    """Critic call: numbered demands against one hypothesis."""
    user = (f"Workflow run {rid}, critique round {round_}.\n\n{_instance_block(instance)}\n\n"
            f"Hypothesis under review:\n{_hypothesis_json(hypothesis)}\n\n"
            'Reply with JSON of the form {"demands": [{"number": 1, "target_step": "<step id or null>", '
            '"demand": "<what the proposer must do>"}, ...]}')
    return LLMRequest(model=model, system=CRITIC_SYSTEM, messages=[{"role": "user", "content": user}],
                      temperature=temperature, max_tokens=1000, version=PROMPT_VERSION,
                      metadata={"stage": "critique", "run": rid, "round": round_})


def revise_request(instance: Instance, vocabulary: Vocabulary, hypothesis: HypothesisOut,
                   critique: CritiqueOut, rid: str, round_: int, model: str,
                   temperature: float | None) -> LLMRequest:
    """Proposer call: reply to each numbered demand, then revise the hypothesis."""
    demands = "\n".join(f"{d.number}. {d.demand}" for d in critique.demands)
    user = (f"Workflow run {rid}, critique round {round_}.\n\n{_instance_block(instance)}\n\n"
            f"{_vocabulary_block(vocabulary)}\n\nYour current hypothesis:\n{_hypothesis_json(hypothesis)}\n\n"
            f"The critic's demands:\n{demands}\n\n"
            "Reply to every demand by its number: defend the step with evidence, concede and correct it, "
            "or say what you can and cannot address. Then give your revised hypothesis (unchanged parts "
            'may stay as they are). Reply with JSON of the form {"replies": [{"number": 1, "reply": '
            f'"..."}}, ...], "revised": {HYPOTHESIS_FORMAT}}}')
    return LLMRequest(model=model, system=PROPOSER_SYSTEM, messages=[{"role": "user", "content": user}],
                      temperature=temperature, max_tokens=2500, version=PROMPT_VERSION,
                      metadata={"stage": "revise", "run": rid, "round": round_})


# --------------------------------------------------------------------------- the workflow


@dataclass
class _State:
    """One hypothesis in flight: its run, opening, id and current content."""

    run: tuple[str, int, int]
    opening: str
    hid: str
    current: HypothesisOut


def _to_hypothesis(s: _State, depth: int) -> Hypothesis:
    instance, _, repetition = s.run
    return Hypothesis(id=s.hid, instance=instance, statement=s.current.statement,
                      explanation=s.current.explanation,
                      chain=[Step(id=c.id, text=c.text) for c in s.current.chain],
                      run=run_id(instance, depth, repetition), depth=depth, opening_id=s.opening)


def run_workflow(bench: Benchmark, design: Design, client, model: str = GENERATOR,
                 temperature: float | None = 1.0, progress: bool = False, json_retries: int = 2) -> list[Run]:
    """One ``Run`` per cell of ``design`` (``Design.cells`` order) through the LLM ``client``. A reply
    still invalid after ``json_retries`` repairs drops its hypothesis (``Run.excluded``)."""
    instances = {i.id: i for i in bench.instances}
    unknown = [i for i in design.instances if i not in instances]
    if unknown:
        raise ValueError(f"design.instances: unknown instance ids {unknown}; known {sorted(instances)}")
    vocab = bench.vocabulary
    schemas = {i: hypothesis_schema(vocab, instances[i].terminal_id) for i in design.instances}
    cells = design.cells()
    todo = [(cell, opening) for cell in cells for opening in bench.openings(cell[0])]
    excluded: dict[tuple[str, int, int], list[Exclusion]] = {c: [] for c in cells}
    usable = partial(_usable, excluded=excluded)
    dev = _json_many(
        client, [develop_request(instances[cell[0]], vocab, opening, run_id(*cell), model, temperature)
                 for cell, opening in todo],
        [schemas[cell[0]] for cell, _ in todo], progress, json_retries)
    states = [_State(run=cell, opening=opening.id, hid=f"{run_id(*cell)}-{opening.id}-0", current=out)
              for (cell, opening), out in usable(dev, [(c, o.id, (c, o)) for c, o in todo], "develop", 0)]
    developed = {id(s): _to_hypothesis(s, s.run[1]) for s in states}
    log: dict[tuple[str, int, int], tuple[list, list, list]] = {c: ([], [], []) for c in cells}
    for rnd in range(1, max(design.depths, default=0) + 1):
        active = [s for s in states if s.run[1] >= rnd]
        if not active:
            break
        crit = usable(
            _json_many(client, [critique_request(instances[s.run[0]], s.current, run_id(*s.run), rnd, model,
                                                 temperature) for s in active],
                       [CritiqueOut] * len(active), progress, json_retries),
            [(s.run, s.opening, s) for s in active], "critique", rnd)
        revs = usable(
            _json_many(
                client,
                [revise_request(instances[s.run[0]], vocab, s.current, c, run_id(*s.run), rnd, model, temperature)
                 for s, c in crit],
                [revision_schema(schemas[s.run[0]], len(c.demands)) for s, c in crit], progress, json_retries),
            [(s.run, s.opening, (s, c)) for s, c in crit], "revise", rnd)
        kept = {id(s) for (s, _), _ in revs}
        states = [s for s in states if s.run[1] < rnd or id(s) in kept]  # drop the invalid ones
        for (s, c), r in revs:
            _record_round(log[s.run], s, c, r, rnd)
    return [_run_of(cell, states, developed, log[cell], excluded[cell], client.backend) for cell in cells]


def _usable(results, items, stage: str, rnd: int, excluded: dict) -> list:
    """``(item, value)`` of the valid ``(key, JSONResult)`` results; an invalid one goes to
    ``excluded[cell]``. ``items``: ``(cell, opening_id, item)`` aligned with ``results``."""
    kept = []
    for (cell, opening_id, item), (key, res) in zip(items, results):
        if res.invalid:
            excluded[cell].append(Exclusion(run_id=run_id(*cell), opening_id=opening_id, stage=stage, round=rnd,
                                            key=key, attempts=res.attempts, error=res.error or "invalid reply"))
        else:
            kept.append((item, res.value))
    return kept


def _record_round(log: tuple[list, list, list], s: _State, critique: CritiqueOut, revision: BaseModel,
                  rnd: int) -> None:
    """Append round ``rnd``'s demands, replies and revision of ``s`` to ``log``; make the revision current."""
    instance, depth, _ = s.run
    rid = run_id(*s.run)
    demands, replies, revisions = log
    demands.extend(Demand(run_id=rid, instance=instance, depth=depth, round=rnd, hypothesis_id=s.hid,
                          opening_id=s.opening, number=d.number, target_step=d.target_step,
                          text=d.demand) for d in critique.demands)
    replies.extend(Reply(run_id=rid, round=rnd, hypothesis_id=s.hid, number=x.number, text=x.reply)
                   for x in revision.replies)
    before = [st.id for st in s.current.chain]
    s.current = revision.revised
    after = [st.id for st in s.current.chain]
    changed = [j for j in range(max(len(before), len(after)))
               if j >= len(before) or j >= len(after) or before[j] != after[j]]
    revisions.append(Revision(run_id=rid, round=rnd, hypothesis_id=s.hid, opening_id=s.opening,
                              statement=s.current.statement, explanation=s.current.explanation,
                              chain=[Step(id=x.id, text=x.text) for x in s.current.chain], changed=changed))


def _run_of(cell: tuple[str, int, int], states: list[_State], developed: dict, log: tuple[list, list, list],
            excluded: list[Exclusion], backend: str) -> Run:
    """The ``Run`` of one design cell from the workflow's final states and its log."""
    rid = run_id(*cell)
    demands, replies, revisions = log
    return Run(run_id=rid, instance=cell[0], depth=cell[1], repetition=cell[2], backend=backend,
               developed=[h for h in developed.values() if h.run == rid],
               delivered=[_to_hypothesis(s, cell[1]) for s in states if s.run == cell], demands=demands,
               replies=replies, revisions=revisions, excluded=excluded)


def _json_many(client, requests: Sequence[LLMRequest], schemas: Sequence[type[BaseModel]],
               progress: bool, json_retries: int) -> list:
    """``(request key, JSONResult)`` per request (input order), each validated by its own schema."""
    results = client.complete_many(list(requests), schema=list(schemas), progress=progress,
                                   json_retries=json_retries, strict=False)
    return [(r.key, res) for r, res in zip(requests, results)]
