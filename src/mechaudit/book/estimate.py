"""Cost before calls: the requests a chapter would send, their tokens and their price.

Each LLM chapter has a *planner* here that builds the chapter's requests from its parameters
without sending anything, with the same request builders the chapter uses
(``LLMJudge.requests``, ``mechaudit.workflow.agents``, ``mechaudit.engagement.judge_request``).

Counting rules (documented in ``book/rerun.md``):

- **Request count.** Judge requests (chapters 05-07, and the judge in 02/04 once the workflow's
  answers are cached) are exact: one per pair and presentation order, and per judge model of
  chapter 02's judge-model axis (``judge_models``). The workflow (02-04) sends
  one *develop* request per (run, opening hypothesis), then per critique round one *critique* and
  one *revise* request per hypothesis still in play, and chapter 03 one engagement *label* request
  per critique; these counts follow from the design alone, because the workflow delivers exactly one
  hypothesis per opening. A judge with early stop (``judge_early_stop``; the default of
  ``LLMJudge``) makes its last call of a pair only when the first ones disagree: those calls are a
  separate "early-stop extra (upper bound)" row, so the total is an upper bound. Not counted: repair
  requests for invalid JSON (rare; each is one more request of about the same size). Requests
  already in the response cache, and repeats of a request earlier in the same estimate (e.g. chapter
  06's full rubric = chapter 05's judge), are counted as cached.

Sizing and prices: :mod:`mechaudit.llm.pricing`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from mechaudit.llm.pricing import ESTIMATE_COLUMNS, Planned, load_min_cache_tokens, price_plan

DEMANDS_PER_CRITIQUE = 3  # the critic is asked for one to four demands
TYPICAL_DEMAND = ("Cite the evidence item that supports this step of the chain, or replace the step with "
                  "one the evidence pack supports, and state whether the effect direction still holds.")
TYPICAL_REPLY = ("Evidence item 2 supports this step directly; I keep it and add the intermediate step "
                 "the critic asks for, citing item 3, so the chain reads in the observed direction.")

# --------------------------------------------------------------------------- planners


def _judge_models(p: Mapping[str, Any]) -> list[str]:
    """The judge models a chapter runs, main judge first: ``judge_model`` (chapters 02, 05, 06)
    followed by ``judge_models`` (the judge-model axis; chapter 07 has only this list), each name once."""
    first = [p["judge_model"]] if "judge_model" in p else []
    return list(dict.fromkeys([*first, *(p.get("judge_models") or [])]))


def _bench(p: Mapping[str, Any]):
    from mechaudit.schema import load_benchmark

    return load_benchmark(p.get("data_dir"))


def _suite(p: Mapping[str, Any], suite: str = "template") -> list[tuple]:
    from mechaudit.perturb import load_pairs

    return load_pairs(p.get("data_dir"), suite)[0]


def _suites(p: Mapping[str, Any]) -> dict[str, list[tuple]]:
    """The valid pairs of every perturbation suite of the data folder (chapter 05 judges each)."""
    from mechaudit.perturb import available_suites

    return {name: _suite(p, name) for name in available_suites(p.get("data_dir"))}


def _judge(rubric: str, model: str, orders, instances):
    from mechaudit.rules.llm_judge import LLMJudge

    return LLMJudge(rubric=rubric, model=model, backend="replay", orders=orders, instances=instances,
                    client=_NO_CLIENT)


class _NoClient:
    """Stands in for a client in planners: building requests never needs one."""

    backend = "replay"


_NO_CLIENT = _NoClient()


def judge_planned(judge, pairs, stage: str, early_stop: bool, exact: bool = True,
                  identity: Callable[[int, int], str] | None = None) -> list[Planned]:
    """``judge.requests(pairs)`` as planned requests. With ``early_stop`` only the first
    ``len(orders) // 2 + 1`` calls of a pair are certain (no majority is decided before); the others
    go to a separate row ``"<stage>, early-stop extra (upper bound)"`` with ``exact=False``.
    ``identity(pair index, call index)`` tells proxy requests apart (see ``Planned.identity``)."""
    n_calls = len(judge.plan)
    certain = n_calls // 2 + 1 if early_stop else n_calls
    out = []
    for k, request in enumerate(judge.requests(pairs)):
        i, c = divmod(k, n_calls)
        ident = identity(i, c) if identity else None
        if c < certain:
            out.append(Planned(stage, request, exact, ident))
        else:
            out.append(Planned(f"{stage}, early-stop extra (upper bound)", request, False, ident))
    return out


def plan_05(p: Mapping[str, Any]) -> list[Planned]:
    """Chapter 05: the LLM judge on every valid pair of every perturbation suite, once per order."""
    bench, suites = _bench(p), _suites(p)
    out = []
    for model in _judge_models(p):
        judge = _judge(p["judge_rubric"], model, p["judge_orders"], bench.instances)
        for suite, pairs in suites.items():
            out += judge_planned(judge, pairs, f"judge {model} ({p['judge_rubric']}, {suite} suite)",
                                 bool(p.get("judge_early_stop")))
    return out


def plan_06(p: Mapping[str, Any]) -> list[Planned]:
    """Chapter 06: each rubric's LLM judge on every valid perturbation pair, once per order."""
    bench, pairs = _bench(p), _suite(p)
    out = []
    for k, model in enumerate(_judge_models(p)):
        for rubric in p["rubrics"]:
            judge = _judge(rubric, model, p["judge_orders"], bench.instances)
            # the main judge makes every call (order effects); the judge-model axis uses early stop
            out += judge_planned(judge, pairs, f"judge {model} ({rubric})", early_stop=k > 0)
    return out


def plan_07(p: Mapping[str, Any]) -> list[Planned]:
    """Chapter 07: the first judge model on all committed-set pairs, then every judge model on the
    ``stability_pairs`` pairs drawn with ``seed`` (as the chapter draws them)."""
    from mechaudit.rules.audit import subsample_pairs, within_instance_pairs

    bench = _bench(p)
    set_pairs = within_instance_pairs(bench.hypotheses)
    models = _judge_models(p)
    first = _judge(p["judge_rubric"], models[0], p["judge_orders"], bench.instances)
    out = judge_planned(first, set_pairs, f"judge {models[0]} (set pairs)", early_stop=True)  # LLMJudge default
    stab = subsample_pairs(set_pairs, p["stability_pairs"], p["seed"])
    for model in models:
        judge = _judge(p["judge_rubric"], model, p["judge_orders"], bench.instances)
        out += [Planned(f"judge {model} (stability)", r) for r in judge.requests(stab)]
    return out


def _design(p: Mapping[str, Any], bench):
    from mechaudit.paths import PARAMS_DIR
    from mechaudit.workflow import load_design

    return load_design(PARAMS_DIR / p["design_file"], instances=[i.id for i in bench.instances])


def proxy_runs(bench, design) -> list:
    """Runs shaped like the real workflow's (one delivered hypothesis per opening, one critique per
    hypothesis and round with ``DEMANDS_PER_CRITIQUE`` demands and replies) whose texts are the
    opening hypotheses and typical demand/reply sentences: stand-ins for counting and sizing
    requests before the workflow has run."""
    from mechaudit.workflow.records import Demand, Reply, Run, run_id

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


def _workflow(p: Mapping[str, Any], bench, design) -> tuple[list[Planned], list, bool]:
    """The workflow's requests and the runs to plan the judges on: the real runs if the whole
    workflow replays from the cache (then every request is cached and exact), else proxies."""
    from mechaudit.llm.client import ReplayMissError, get_client
    from mechaudit.workflow.agents import (
        CritiqueOut,
        DemandOut,
        HypothesisOut,
        critique_request,
        develop_request,
        revise_request,
    )
    from mechaudit.workflow.records import run_id

    model = p["generator_model"]
    instances = {i.id: i for i in bench.instances}
    develop = [
        Planned("workflow develop", develop_request(instances[c[0]], bench.vocabulary, o, run_id(*c), model, 1.0))
        for c in design.cells()
        for o in bench.openings(c[0])
    ]
    client = get_client(backend="replay", cache_dir=p.get("cache_dir"))
    if all(x.request.key in client.cache for x in develop):
        try:
            from mechaudit.workflow.agents import run_workflow

            recorder = _Recorder(client)
            runs = run_workflow(bench, design, recorder, model=model)
            return [Planned(f"workflow {r.metadata.get('stage', '')}", r) for r in recorder.requests], runs, True
        except (ReplayMissError, ValueError):
            pass
    out = list(develop)
    critique = CritiqueOut(
        demands=[DemandOut(number=n, demand=TYPICAL_DEMAND) for n in range(1, DEMANDS_PER_CRITIQUE + 1)]
    )
    for c in design.cells():
        rid = run_id(*c)
        for o in bench.openings(c[0]):
            hyp = HypothesisOut(statement=o.statement, explanation=o.explanation,
                                chain=[{"id": s.id, "text": s.text} for s in o.chain])
            for rnd in range(1, c[1] + 1):
                out.append(
                    Planned("workflow critique", critique_request(instances[c[0]], hyp, rid, rnd, model, 1.0), False)
                )
                out.append(Planned("workflow revise", revise_request(instances[c[0]], bench.vocabulary, hyp, critique,
                                                                     rid, rnd, model, 1.0), False))
    return out, proxy_runs(bench, design), False


class _Recorder:
    """A replay client wrapper that remembers every distinct request it answered, in order."""

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

    def complete_json(self, request, *args, **kwargs):
        result = self._client.complete_json(request, *args, **kwargs)
        self._note([request])
        return result

    def complete(self, request):
        self._note([request])
        return self._client.complete(request)


class _PairRecorder:
    """A ``same`` function that records the pairs it is asked about (answers: all different)."""

    def __init__(self) -> None:
        self.pairs: list = []

    def same(self, pairs):
        import numpy as np

        self.pairs.extend(pairs)
        return np.zeros(len(pairs), dtype=bool)


def _llm_rule_requests(p, bench, runs, exact: bool, pairs_of: Callable) -> list[Planned]:
    """The LLM judge's requests on the pairs ``pairs_of(runs, recorder)`` asks about: ``judge_model``
    (stage "judge <model> (delivered pairs)"), then every further model of ``judge_models`` (chapter
    02's judge-model axis; stage "judge <model> (judge-model axis)"), each as ``build_rules`` builds it."""
    from mechaudit.workflow import rules_for_backend

    if "llm" not in rules_for_backend(p["rules"], p["backend"]):
        return []
    recorder = _PairRecorder()
    pairs_of(runs, recorder)
    pairs = recorder.pairs
    out: list[Planned] = []
    for k, model in enumerate(_judge_models(p)):
        judge = _judge("full", model, ("ab", "ab", "ba"), bench.instances)
        # proxies of different runs share texts (hence keys): tell them apart by model, hypothesis ids and call
        identity = None if exact else (lambda i, c, m=model: f"{m}|{pairs[i][0].id}|{pairs[i][1].id}|{c}")
        stage = f"judge {model} ({'delivered pairs' if k == 0 else 'judge-model axis'})"
        out += judge_planned(judge, pairs, stage, early_stop=True, exact=exact,
                             identity=identity)  # build_rules uses the LLMJudge default
    return out


def plan_02(p: Mapping[str, Any]) -> list[Planned]:
    """Chapter 02: the workflow, then the LLM judge on every matched pair of delivered hypotheses,
    once per judge model of ``judge_model`` + ``judge_models`` (the judge-model axis)."""
    from mechaudit.workflow import instance_matrices

    bench = _bench(p)
    design = _design(p, bench)
    work, runs, exact = _workflow(p, bench, design)
    return work + _llm_rule_requests(p, bench, runs, exact, lambda rs, rec: instance_matrices(rs, rec.same))


def plan_03(p: Mapping[str, Any]) -> list[Planned]:
    """Chapter 03: the workflow, then one engagement label request per critique."""
    from mechaudit.engagement import judge_request
    from mechaudit.workflow.records import demands_frame

    bench = _bench(p)
    design = _design(p, bench)
    work, runs, exact = _workflow(p, bench, design)
    df = demands_frame(runs)
    groups = df.groupby(["run_id", "round", "hypothesis_id"], sort=False) if len(df) else []
    labels = [Planned("engagement labels", judge_request(g, p["judge_model"]), exact, None if exact else str(name))
              for name, g in groups]
    return work + labels


def plan_04(p: Mapping[str, Any]) -> list[Planned]:
    """Chapter 04: the workflow, then the LLM judge on all pairs within each run's delivered set."""
    from mechaudit.workflow import delivered_diversity

    bench = _bench(p)
    design = _design(p, bench)
    work, runs, exact = _workflow(p, bench, design)
    return work + _llm_rule_requests(p, bench, runs, exact,
                                     lambda rs, rec: delivered_diversity(rs, {"llm": rec}))


def plan_08(p: Mapping[str, Any]) -> list[Planned]:
    """Chapter 08: the blind judge on ``llm_pairs`` pairs of the chapter's pool, once per role
    (planned in :func:`mechaudit.tau.realjudge.plan_chapter`)."""
    from mechaudit.tau.realjudge import plan_chapter

    return plan_chapter(p)


#: planner per chapter-number prefix; a chapter without one sends no LLM request
PLANNERS: dict[str, Callable[[Mapping[str, Any]], list[Planned]]] = {
    "02": plan_02, "03": plan_03, "04": plan_04, "05": plan_05, "06": plan_06, "07": plan_07, "08": plan_08,
}


def register_planner(prefix: str, planner: Callable[[Mapping[str, Any]], list[Planned]]) -> None:
    """Add the planner of a chapter (e.g. ``"08"``): ``planner(params) -> list[Planned]``."""
    PLANNERS[prefix] = planner


def chapter_params(chapter, params_file=None, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every parameter of ``chapter`` as it would run: the notebook's defaults, the parameter file
    and the overrides (relative ``data_dir``/``cache_dir`` resolve against the working directory)."""
    from mechaudit.book.params import notebook_parameters, resolve_parameters

    params = dict(notebook_parameters(chapter.source))
    params.update(resolve_parameters(chapter, params_file, dict(overrides or {})))
    for name in ("data_dir", "cache_dir"):
        if params.get(name) is not None:
            params[name] = str(Path(params[name]).expanduser().resolve())
    return params


def estimate_chapters(names: Sequence[str] = (), params_file=None, overrides: Mapping[str, Any] | None = None,
                      prices: Mapping[str, Any] | str | None = None, base_url: str | None = None) -> pd.DataFrame:
    """The estimate table (``ESTIMATE_COLUMNS``) of the named chapters (default: all, TOC order)
    as ``mechaudit execute`` would run them; chapters with an offline backend contribute no row.
    ``base_url``: the custom OpenAI-compatible server the run's OpenAI-routed requests go to (None:
    ``OPENAI_BASE_URL``, if set), which prices them by endpoint."""
    from mechaudit.backends import Backend
    from mechaudit.book.params import DEFAULT_PARAMS, resolve_chapter, toc_chapters
    from mechaudit.llm.cache import ResponseCache, default_cache_dir
    from mechaudit.llm.ledger import load_prices
    from mechaudit.llm.providers import openai_base_url, with_endpoint

    table = load_prices(prices)
    min_cache = load_min_cache_tokens(prices if isinstance(prices, (str, Path)) else None)
    chapters = [resolve_chapter(n) for n in names] or toc_chapters()
    params_file = DEFAULT_PARAMS if params_file is None else params_file
    caches: dict[Path, ResponseCache] = {}
    seen: set[str] = set()
    frames = []
    for chapter in chapters:
        p = chapter_params(chapter, params_file, overrides)
        planner = PLANNERS.get(chapter.stem.split("_")[0])
        if planner is None or not Backend.parse(p.get("backend", "reference")).is_llm:
            continue
        folder = Path(p["cache_dir"]) if p.get("cache_dir") else default_cache_dir()
        if folder not in caches:
            caches[folder] = ResponseCache(folder)
        server = openai_base_url(base_url)
        planned = [replace(x, request=with_endpoint(x.request, server)) for x in planner(p)]
        frames.append(price_plan(chapter.stem, planned, table, caches[folder].__contains__, seen, min_cache))
    if not frames:
        return pd.DataFrame(columns=ESTIMATE_COLUMNS)
    return pd.concat(frames, ignore_index=True)

