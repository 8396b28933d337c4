"""Planning the workflow's requests and the judges on its delivered hypotheses, without sending
anything: the shared part of chapters 02, 03 and 04's cost plans (``mechaudit estimate``).

:func:`plan_workflow` records the real requests when the whole workflow replays from the cache,
else builds critique and revise requests from proxies (every opening stays in play, each critique
raises ``DEMANDS_PER_CRITIQUE`` typical demands); :func:`proxy_runs` are runs of that shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mechaudit.llm.client import ReplayMissError, get_client
from mechaudit.llm.pricing import Planned
from mechaudit.paths import PARAMS_DIR
from mechaudit.rules.llm_judge import judge_planned, planning_judge
from mechaudit.schema import Benchmark
from mechaudit.workflow.agents import (
    CritiqueOut,
    DemandOut,
    HypothesisOut,
    critique_request,
    develop_request,
    revise_request,
    run_workflow,
)
from mechaudit.workflow.design import Design, load_design
from mechaudit.workflow.records import Demand, Reply, Run, run_id
from mechaudit.workflow.rulesets import rules_for

DEMANDS_PER_CRITIQUE = 3  # the critic is asked for one to four demands
TYPICAL_DEMAND = ("Cite the evidence item that supports this step of the chain, or replace the step with "
                  "one the evidence pack supports, and state whether the effect direction still holds.")
TYPICAL_REPLY = ("Evidence item 2 supports this step directly; I keep it and add the intermediate step "
                 "the critic asks for, citing item 3, so the chain reads in the observed direction.")


def proxy_runs(bench: Benchmark, design: Design) -> list[Run]:
    """Stand-in runs for sizing requests: per opening one delivered hypothesis (its text), per round
    ``DEMANDS_PER_CRITIQUE`` typical demands and replies."""
    runs = []
    for instance, depth, rep in design.cells():
        rid = run_id(instance, depth, rep)
        hyps = [h.model_copy(update={"id": f"{rid}-{h.id}-0", "run": rid, "depth": depth, "opening_id": h.id})
                for h in bench.openings(instance)]
        demands, replies = [], []
        for rnd in range(1, depth + 1):
            for h in hyps:
                for n in range(1, DEMANDS_PER_CRITIQUE + 1):
                    demands.append(Demand(run_id=rid, instance=instance, depth=depth, round=rnd, hypothesis_id=h.id,
                                          opening_id=h.opening_id, number=n, text=TYPICAL_DEMAND))
                    replies.append(Reply(run_id=rid, round=rnd, hypothesis_id=h.id, number=n, text=TYPICAL_REPLY))
        runs.append(Run(run_id=rid, instance=instance, depth=depth, repetition=rep, backend="anthropic",
                        developed=hyps, delivered=hyps, demands=demands, replies=replies))
    return runs


def plan_workflow(p: Mapping[str, Any], bench: Benchmark) -> tuple[list[Planned], list[Run], bool]:
    """``(requests, runs to plan the judges on, exact)`` of the design file ``p["design_file"]`` (under
    ``params/``) over the benchmark's instances: the real ones if the workflow replays."""
    design = load_design(PARAMS_DIR / p["design_file"], instances=[i.id for i in bench.instances])
    model = p["generator_model"]
    instances = {i.id: i for i in bench.instances}
    develop = [
        Planned("workflow develop", develop_request(instances[c[0]], bench.vocabulary, o, run_id(*c), model, 1.0))
        for c in design.cells() for o in bench.openings(c[0])
    ]
    client = get_client(backend="replay", cache_dir=p.get("cache_dir"))
    if all(x.request.key in client.cache for x in develop):
        try:
            recorder = _Recorder(client)
            runs = run_workflow(bench, design, recorder, model=model)
            return [Planned(f"workflow {r.metadata.get('stage', '')}", r) for r in recorder.requests], runs, True
        except (ReplayMissError, ValueError):
            pass
    out = list(develop)
    critique = CritiqueOut(demands=[DemandOut(number=n, demand=TYPICAL_DEMAND)
                                    for n in range(1, DEMANDS_PER_CRITIQUE + 1)])
    for c in design.cells():
        rid = run_id(*c)
        for o in bench.openings(c[0]):
            hyp = HypothesisOut(statement=o.statement, explanation=o.explanation,
                                chain=[{"id": s.id, "text": s.text} for s in o.chain])
            for rnd in range(1, c[1] + 1):
                out.append(Planned("workflow critique", critique_request(instances[c[0]], hyp, rid, rnd, model, 1.0),
                                   False))
                out.append(Planned("workflow revise", revise_request(instances[c[0]], bench.vocabulary, hyp, critique,
                                                                     rid, rnd, model, 1.0), False))
    return out, proxy_runs(bench, design), False


class _Recorder:
    """A replay client wrapper for ``run_workflow`` (which sends through ``complete_many`` only) that
    remembers every distinct request it answered, in order."""

    def __init__(self, client) -> None:
        self._client, self.backend, self.requests, self._seen = client, client.backend, [], set()

    def _note(self, requests) -> None:
        for r in requests:
            if r.key not in self._seen:
                self._seen.add(r.key)
                self.requests.append(r)

    def complete_many(self, requests, *args, **kwargs):
        self._note(requests)
        return self._client.complete_many(requests, *args, **kwargs)


class _PairRecorder:
    """A ``same`` function that records the pairs it is asked about (answers: all different)."""

    def __init__(self) -> None:
        self.pairs: list = []

    def same(self, pairs):
        self.pairs.extend(pairs)
        return np.zeros(len(pairs), dtype=bool)


def plan_delivered_judges(p: Mapping[str, Any], bench: Benchmark, runs: Sequence[Run], exact: bool,
                          pairs_of: Callable, models: Sequence[str]) -> list[Planned]:
    """The LLM judge's requests on the pairs ``pairs_of(runs, recorder)`` asks about when ``p`` runs the
    ``llm`` rule: ``models[0]`` ("delivered pairs"), then the judge-model axis's further models."""
    if "llm" not in rules_for(p["rules"], p["backend"].is_llm):
        return []
    recorder = _PairRecorder()
    pairs_of(runs, recorder)
    pairs = recorder.pairs
    out: list[Planned] = []
    for k, model in enumerate(models):
        judge = planning_judge("full", model, ("ab", "ab", "ba"), bench.instances)
        # proxies of different runs share texts (hence keys): tell them apart by model, hypothesis ids and call
        identity = None if exact else (lambda i, c, m=model: f"{m}|{pairs[i][0].id}|{pairs[i][1].id}|{c}")
        stage = f"judge {model} ({'delivered pairs' if k == 0 else 'judge-model axis'})"
        out += judge_planned(judge, pairs, stage, early_stop=True, exact=exact,
                             identity=identity)  # build_rules uses the LLMJudge default
    return out
