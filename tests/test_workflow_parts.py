"""The workflow's small parts checked value by value: measured diversity of delivered sets, the
parallel engine's checks, the rule sets by name, the chapters' set-up and the request plans."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pandas as pd
import pytest
import yaml
from fake_anthropic import FakeAnthropic, client_for
from test_workflow import _fake_anthropic, write_tiny_benchmark

from mechaudit.errors import MechauditError
from mechaudit.schema import load_benchmark
from mechaudit.workflow import parallel
from mechaudit.workflow.design import Design
from mechaudit.workflow.measured import delivered_diversity, diversity_table, set_matrices
from mechaudit.workflow.plan import DEMANDS_PER_CRITIQUE, TYPICAL_DEMAND, TYPICAL_REPLY, plan_workflow, proxy_runs


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = write_tiny_benchmark(tmp_path_factory.mktemp("tiny"))
    return folder, load_benchmark(folder)


@pytest.fixture(scope="module")
def bench(tiny):
    return tiny[1]


# --------------------------------------------------------------------------- measured


class _Verdicts:
    """A yes/no rule over hypothesis ids: the pairs listed in ``same_ids`` are the same."""

    def __init__(self, same_ids):
        self.same_ids = {frozenset(p) for p in same_ids}
        self.asked = []

    def same(self, pairs):
        self.asked.append([(a.id, b.id) for a, b in pairs])
        return [frozenset((a.id, b.id)) in self.same_ids for a, b in pairs]


class _Similar(_Verdicts):
    """A similarity rule: ``values[(a, b)]`` (raw, may fall outside [0, 1]); same above 0.5."""

    def __init__(self, values, with_threshold=True):
        super().__init__([p for p, v in values.items() if v > 0.5])
        self.values = {frozenset(p): v for p, v in values.items()}
        if with_threshold:
            self.same_from_similarity = lambda raw: raw > 0.5
        self.embedded = []

    def similarity(self, pairs):
        return [self.values[frozenset((a.id, b.id))] for a, b in pairs]


def _three(bench):
    return list(bench.openings("A")[:3])


def test_set_matrices_of_a_yes_no_rule_fill_both_triangles(bench):
    hyps = _three(bench)
    a, b, c = (h.id for h in hyps)
    rule = _Verdicts([(a, b), (b, c)])
    same, sim = set_matrices(hyps, rule)
    assert sim is None and same.dtype == bool
    np.testing.assert_array_equal(same, [[True, True, False], [True, True, True], [False, True, True]])
    assert rule.asked == [[(a, b), (a, c), (b, c)]]  # every pair once, in combinations order
    one, none = set_matrices(hyps[:1], rule)
    np.testing.assert_array_equal(one, [[True]])
    assert none is None and len(rule.asked) == 1  # a single hypothesis asks nothing


def test_set_matrices_of_a_similarity_rule_clip_the_similarities(bench):
    hyps = _three(bench)
    a, b, c = (h.id for h in hyps)
    rule = _Similar({(a, b): 1.3, (a, c): -0.2, (b, c): 0.4})
    same, sim = set_matrices(hyps, rule)
    np.testing.assert_array_equal(sim, [[1.0, 1.0, 0.0], [1.0, 1.0, 0.4], [0.0, 0.4, 1.0]])
    np.testing.assert_array_equal(same, [[True, True, False], [True, True, False], [False, False, True]])
    assert rule.asked == []  # verdicts from the similarities
    plain = _Similar({(a, b): 0.9, (a, c): 0.1, (b, c): 0.8}, with_threshold=False)
    plain.same_ids = {frozenset((a, c))}  # without same_from_similarity the verdicts come from same()
    same, sim = set_matrices(hyps, plain)
    assert same[0, 2] and same[2, 0] and not same[0, 1] and sim[0, 1] == 0.9
    one, unit = set_matrices(hyps[:1], plain)
    np.testing.assert_array_equal(unit, [[1.0]])


def test_delivered_diversity_counts_groups_and_vendi_per_run_and_rule(bench):
    runs = proxy_runs(bench, Design(instances=("A", "B"), depths=(0,), runs_per_depth=1))
    ids = [[h.id for h in r.delivered] for r in runs]
    chain = _Verdicts([(ids[0][0], ids[0][1]), (ids[0][1], ids[0][2])])  # a chain of three in run A
    values = {(x, y): 0.0 for r in ids for k, x in enumerate(r) for y in r[k + 1:]}
    values[(ids[1][0], ids[1][1])] = 1.0
    sim = _Similar(values)
    embedded = []
    sim.embed = embedded.append
    div = delivered_diversity(runs, {"yesno": chain, "cosine": sim})
    assert list(div.columns) == ["instance", "depth", "repetition", "rule", "n_hypotheses", "components",
                                 "complete", "vendi"]
    texts = embedded[0]
    assert len(embedded) == 1 and len(texts) == len(set(texts)) == 10  # one batched call, distinct texts
    assert list(div.rule) == ["yesno", "cosine", "yesno", "cosine"] and list(div.instance) == ["A", "A", "B", "B"]
    assert list(div.depth) == [0] * 4 and list(div.repetition) == [0] * 4 and list(div.n_hypotheses) == [5] * 4
    assert list(div.components) == [3, 5, 5, 4]
    assert list(div.complete) == [4, 5, 5, 4]
    # yes/no: Vendi of the complete-linkage groups {2, 1, 1, 1}; cosine: of the clipped matrix
    shares = np.array([2, 1, 1, 1]) / 5
    assert div.vendi[0] == pytest.approx(np.exp(-np.sum(shares * np.log(shares))))
    assert div.vendi[1] == pytest.approx(5.0) and div.vendi[2] == pytest.approx(5.0)
    K = np.eye(5)
    K[0, 1] = K[1, 0] = 1.0
    lam = np.clip(np.linalg.eigvalsh(K / 5), 0, None)
    lam = lam[lam > 0]
    assert div.vendi[3] == pytest.approx(np.exp(-np.sum(lam * np.log(lam))))
    assert delivered_diversity([], {"cosine": sim}).shape == (0, 8) and len(embedded) == 1  # no texts, no call


def test_diversity_table_means_complete_groups_in_first_seen_order():
    div = pd.DataFrame({"instance": ["B", "B", "A", "A", "B"], "depth": [5, 5, 0, 0, 5],
                        "rule": ["z", "a", "z", "a", "z"], "components": [1, 2, 3, 4, 5],
                        "complete": [2.0, 4.0, 6.0, 8.0, 4.0]})
    table = diversity_table(div)
    assert list(table.columns) == ["instance", "depth", "z", "a"]
    assert list(table.instance) == ["B", "A"] and list(table.depth) == [5, 0]
    assert list(table.z) == [3.0, 6.0] and list(table.a) == [4.0, 8.0]
    assert list(diversity_table(div, "components").z) == [3.0, 3.0]


# --------------------------------------------------------------------------- parallel


def test_a_bad_backend_names_the_field_and_the_nearest_name():
    with pytest.raises(MechauditError) as info:
        parallel.check_backend("threads")
    assert info.value.field == "parallel_backend"
    assert info.value.message == ("must be one of 'loky', 'multiprocessing', 'threading', 'sequential', 'dask', "
                                  "got 'threads'; did you mean 'threading'?")
    with pytest.raises(MechauditError, match=r"got 'zzz'$"):
        parallel.check_backend("zzz")
    parallel.check_backend(None)


def test_parallel_map_runs_in_process_by_default_and_through_joblib_otherwise(monkeypatch):
    import joblib

    calls = []

    class Recording:
        def __init__(self, n_jobs):
            calls.append(n_jobs)

        def __call__(self, jobs):
            return [f(*a, **k) for f, a, k in jobs]

    monkeypatch.setattr(joblib, "Parallel", Recording)
    assert parallel.parallel_map(pow, [(2, 3), (3, 2)]) == [8, 9] and calls == []
    assert parallel.parallel_map(pow, [(2, 3)], 1, "threading") == [8] and calls == []
    assert parallel.parallel_map(pow, [(2, 3), (3, 2)], 2) == [8, 9] and calls == [2]
    assert parallel.parallel_map(pow, [(2, 2)], -1, "sequential") == [4] and calls == [2, -1]
    with pytest.raises(ValueError, match="expected a non-zero int, got 0"):
        parallel.parallel_map(pow, [], 0)


def _fake_distributed(monkeypatch, has_client=True):
    made = []

    def get_client():
        if not has_client:
            raise ValueError("no client")
        return "client"

    fake = types.SimpleNamespace(
        get_client=get_client,
        LocalCluster=lambda **kw: made.append(("cluster", kw)) or "local-cluster",
        Client=lambda target: made.append(("client", target)) or f"client of {target}")
    monkeypatch.setitem(sys.modules, "distributed", fake)
    return made


def test_the_dask_backend_needs_the_extra_and_a_client(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails
    with pytest.raises(MechauditError) as info:
        parallel.parallel_map(pow, [(1, 1)], 1, "dask")
    assert info.value.field == "parallel_backend" and info.value.message == parallel.NEEDS_DASK
    _fake_distributed(monkeypatch, has_client=False)
    with pytest.raises(MechauditError) as info:
        parallel.parallel_map(pow, [(1, 1)], 1, "dask")
    assert info.value.field == "parallel_backend"
    assert info.value.message == ("the 'dask' backend needs a dask.distributed client: call "
                                  "mechaudit.workflow.parallel.connect(scheduler) first (a chapter does it "
                                  "from its 'scheduler' parameter)")


def test_connect_opens_a_local_cluster_or_the_named_scheduler(monkeypatch):
    made = _fake_distributed(monkeypatch)
    assert parallel.connect(None) is None and parallel.connect("loky") is None and made == []
    assert parallel.connect("dask", n_workers=3) == "client of local-cluster"
    assert made == [("cluster", {"n_workers": 3, "threads_per_worker": 1, "processes": True,
                                 "dashboard_address": None}), ("client", "local-cluster")]
    assert parallel.connect("dask", "tcp://h:8786") == "client of tcp://h:8786"
    with pytest.raises(MechauditError, match="parallel_backend 'dask', not 'loky'"):
        parallel.connect("loky", "tcp://h:8786")
    with pytest.raises(MechauditError, match="parallel_backend"):
        parallel.connect("dsak")


@pytest.mark.parametrize("scheduler", ["h:8786", "tcp://:8786", "tcp://h", "tcp://h:port", "http://h:8786"])
def test_a_scheduler_needs_a_scheme_a_host_and_a_port(scheduler):
    assert parallel.scheduler_problem(scheduler) == (
        f"must be a scheduler address like 'tcp://host:8786' (tcp/tls/ucx/ws/wss), got {scheduler!r}")
    with pytest.raises(MechauditError) as info:
        parallel.check_engine("dask", scheduler)
    assert info.value.field == "scheduler"


def test_check_engine_accepts_a_scheduler_only_with_dask():
    assert parallel.scheduler_problem(None) is None and parallel.scheduler_problem("tls://10.0.0.1:1") is None
    parallel.check_engine("dask", "tcp://h:8786")
    parallel.check_engine("dask")
    parallel.check_engine(None)
    with pytest.raises(MechauditError) as info:
        parallel.check_engine(None, "tcp://h:8786")
    assert info.value.field == "scheduler"
    assert info.value.message == "a scheduler is only used with parallel_backend 'dask', not None"
    with pytest.raises(MechauditError) as info:
        parallel.check_engine("dsak")
    assert info.value.field == "parallel_backend"


# --------------------------------------------------------------------------- rule sets


def test_build_rules_passes_each_rule_its_settings(monkeypatch):
    from mechaudit.workflow import rulesets

    built = []
    monkeypatch.setattr(rulesets, "build", lambda name, **config: built.append((name, config)) or name)
    client = types.SimpleNamespace(backend="replay")
    monkeypatch.setattr(rulesets, "require_client", lambda c, who, hint: built.append(("require", c, who, hint)))
    rules = rulesets.build_rules(["reference", "tfidf", "embedding", "llm", "mechanism_key"], client=client,
                                 instances=["i"], embedding_cache_dir="store")
    assert rules == {n: n for n in ["reference", "tfidf", "embedding", "llm", "mechanism_key"]}
    assert built == [
        ("require", client, "rule 'llm'", "; offline runs use the other rules"),
        ("reference", {"rubric": "full"}),
        ("tfidf", {"threshold": 0.25}),
        ("embedding", {"model": None, "threshold": 0.77, "cache_dir": "store"}),
        ("llm", {"rubric": "full", "model": "claude-opus-4-6", "client": client, "instances": ["i"]}),
        ("mechanism_key", {}),
    ]


def test_build_rules_without_a_client_refuses_the_llm_rule_only():
    from mechaudit.rules.tfidf import TfidfRule
    from mechaudit.workflow.rulesets import build_rules

    with pytest.raises(ValueError, match=r"^rule 'llm' needs an LLM client .*; offline runs use the other rules$"):
        build_rules(["tfidf", "llm"])
    rules = build_rules(["tfidf"], tfidf_threshold=0.4)
    assert isinstance(rules["tfidf"], TfidfRule) and rules["tfidf"].threshold == 0.4


# --------------------------------------------------------------------------- set-up and plans


def _design_file(tmp_path, depths=(0, 1), runs=1, instances=("A",)):
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump({"design": {"instances": list(instances), "depths": list(depths),
                                               "runs_per_depth": runs}}))
    return str(path)


def test_workflow_setup_loads_the_files_and_simulates(tiny, tmp_path):
    from mechaudit.workflow import load_simulator_params, simulate
    from mechaudit.workflow.delivery import workflow_setup

    folder, bench = tiny
    setup = workflow_setup(None, data_dir=folder, design_file=_design_file(tmp_path), seed=2)
    assert setup.bench == bench and setup.design == Design(instances=("A",), depths=(0, 1), runs_per_depth=1)
    assert setup.simulator == load_simulator_params()
    assert setup.delivery.runs == simulate(bench, setup.design, setup.simulator, seed=2)
    paper = workflow_setup(None, data_dir=folder)  # params/paper.yaml over the tiny benchmark's instances
    assert paper.design == Design(instances=("A", "B"), depths=(0, 1, 5), runs_per_depth=5)
    assert paper.delivery.runs[:2] == simulate(bench, Design(instances=("A",), depths=(0,), runs_per_depth=2),
                                               paper.simulator, seed=0)


def test_workflow_setup_passes_the_json_retries_to_the_workflow(tiny, tmp_path, api_key):
    from mechaudit.workflow.delivery import workflow_setup

    folder, bench = tiny
    out = {"statement": "s", "explanation": "e", "chain": [{"id": "NOT_AN_ID", "text": "x"}]}
    fake = FakeAnthropic(lambda body: json.dumps(out))
    client = client_for(fake, tmp_path / "c")
    setup = workflow_setup(client, data_dir=folder, design_file=_design_file(tmp_path, depths=(0,)), json_retries=0)
    assert {e.attempts for r in setup.delivery.runs for e in r.excluded} == {1}
    assert len(fake.message_bodies) == len(bench.openings("A"))


def test_proxy_runs_carry_typical_demands_and_replies(bench):
    (run,) = proxy_runs(bench, Design(instances=("B",), depths=(2,), runs_per_depth=1))
    openings = bench.openings("B")
    assert run.run_id == "B-k2-r0" and run.backend == "anthropic" and run.developed == run.delivered
    assert [h.id for h in run.delivered] == [f"B-k2-r0-{o.id}-0" for o in openings]
    assert all(h.run == "B-k2-r0" and h.depth == 2 for h in run.delivered)
    assert [h.opening_id for h in run.delivered] == [o.id for o in openings]
    n = len(openings) * 2 * DEMANDS_PER_CRITIQUE
    assert len(run.demands) == len(run.replies) == n
    first = run.demands[0]
    assert (first.round, first.number, first.hypothesis_id, first.opening_id, first.text) == (
        1, 1, f"B-k2-r0-{openings[0].id}-0", openings[0].id, TYPICAL_DEMAND)
    assert [d.number for d in run.demands[:4]] == [1, 2, 3, 1] and run.demands[-1].round == 2
    assert {r.text for r in run.replies} == {TYPICAL_REPLY}
    assert [(r.round, r.hypothesis_id, r.number) for r in run.replies] == [
        (d.round, d.hypothesis_id, d.number) for d in run.demands]


def test_plan_workflow_from_proxies_when_the_cache_is_empty(bench, tmp_path):
    from mechaudit.workflow.agents import develop_request

    p = {"design_file": _design_file(tmp_path, depths=(0, 2)), "generator_model": "claude-model-x",
         "cache_dir": str(tmp_path / "empty")}
    planned, runs, exact = plan_workflow(p, bench)
    n = len(bench.openings("A"))
    assert exact is False and [r.run_id for r in runs] == ["A-k0-r0", "A-k2-r0"]
    assert runs == proxy_runs(bench, Design(instances=("A",), depths=(0, 2), runs_per_depth=1))
    stages = [x.stage for x in planned]
    assert stages == ["workflow develop"] * 2 * n + ["workflow critique", "workflow revise"] * 2 * n
    assert {x.request.model for x in planned} == {"claude-model-x"}
    assert {x.request.temperature for x in planned} == {1.0}
    assert [x.exact for x in planned] == [True] * 2 * n + [False] * 4 * n
    first = bench.openings("A")[0]
    assert planned[0].request == develop_request(bench.instances[0], bench.vocabulary, first, "A-k0-r0",
                                                 "claude-model-x", 1.0)
    crit = planned[2 * n].request
    assert crit.metadata == {"stage": "critique", "run": "A-k2-r0", "round": 1}
    assert json.loads(crit.messages[0].content.split("Hypothesis under review:\n")[1].split("\n\n")[0]) == {
        "statement": first.statement, "explanation": first.explanation,
        "chain": [{"id": s.id, "text": s.text} for s in first.chain]}
    rev = planned[2 * n + 1].request.messages[0].content
    demands = rev.split("The critic's demands:\n")[1].split("\n\n")[0]
    assert demands == "\n".join(f"{k}. {TYPICAL_DEMAND}" for k in range(1, DEMANDS_PER_CRITIQUE + 1))
    assert planned[2 * n + 2].request.metadata["round"] == 2


def test_plan_workflow_records_the_real_requests_when_the_workflow_replays(bench, tmp_path, api_key):
    from mechaudit.workflow.agents import run_workflow

    calls: list[str] = []
    client = client_for(_fake_anthropic(calls), tmp_path / "cache", max_concurrency=1)
    design = Design(instances=("A",), depths=(1,), runs_per_depth=1)
    live = run_workflow(bench, design, client)
    p = {"design_file": _design_file(tmp_path, depths=(1,)), "generator_model": "claude-sonnet-4-6",
         "cache_dir": str(tmp_path / "cache")}
    planned, runs, exact = plan_workflow(p, bench)
    n = len(bench.openings("A"))
    assert exact is True and [r.delivered for r in runs] == [r.delivered for r in live]
    assert [x.stage for x in planned] == ["workflow develop"] * n + ["workflow critique"] * n + ["workflow revise"] * n
    assert len({x.request.key for x in planned}) == 3 * n and all(x.exact for x in planned)
    other = dict(p, generator_model="claude-other")  # its develop requests are not in the cache: proxies
    assert plan_workflow(other, bench)[2] is False


# --------------------------------------------------------------------------- agents


def test_requests_carry_their_settings_and_the_evidence(bench):
    from mechaudit.workflow.agents import (
        PROMPT_VERSION,
        CritiqueOut,
        DemandOut,
        HypothesisOut,
        critique_request,
        develop_request,
        revise_request,
    )

    inst, opening = bench.instances[0], bench.openings("A")[0]
    hyp = HypothesisOut(statement="s", explanation="e", chain=[{"id": s.id, "text": s.text} for s in opening.chain])
    crit = CritiqueOut(demands=[DemandOut(number=1, demand="Cite it.")])
    dev = develop_request(inst, bench.vocabulary, opening, "A-k1-r0", "m", 0.3)
    cri = critique_request(inst, hyp, "A-k1-r0", 2, "m", 0.3)
    rev = revise_request(inst, bench.vocabulary, hyp, crit, "A-k1-r0", 2, "m", 0.3)
    assert [(r.temperature, r.max_tokens, r.version) for r in (dev, cri, rev)] == [
        (0.3, 1500, PROMPT_VERSION), (0.3, 1000, PROMPT_VERSION), (0.3, 2500, PROMPT_VERSION)]
    assert dev.metadata == {"stage": "develop", "run": "A-k1-r0", "opening": opening.id}
    assert cri.metadata == {"stage": "critique", "run": "A-k1-r0", "round": 2}
    assert rev.metadata == {"stage": "revise", "run": "A-k1-r0", "round": 2}
    pack = "Evidence pack:\n1. signal a and process b rise\n2. trigger c is present"
    assert all(pack in r.messages[0].content for r in (dev, cri, rev))
    assert ("Reply to every demand by its number: defend the step with evidence, concede and correct it, or say "
            "what you can and cannot address. Then give your revised hypothesis (unchanged parts may stay as they "
            "are).") in rev.messages[0].content


def test_revision_schema_wants_one_reply_per_demand_in_order(bench):
    from pydantic import ValidationError

    from mechaudit.workflow.agents import HypothesisOut, revision_schema

    schema = revision_schema(HypothesisOut, 2)
    revised = {"statement": "s", "explanation": "e", "chain": [{"id": c, "text": c} for c in "xyz"]}
    ok = schema.model_validate({"replies": [{"number": 1, "reply": "a"}, {"number": 2, "reply": "b"}],
                                "revised": revised})
    assert [r.number for r in ok.replies] == [1, 2]
    with pytest.raises(ValidationError, match=r"reply to demands 1\.\.2 in order, got \[2, 1\]"):
        schema.model_validate({"replies": [{"number": 2, "reply": "a"}, {"number": 1, "reply": "b"}],
                               "revised": revised})


def test_the_workflow_sends_its_temperature_and_logs_every_demand(bench, tmp_path, api_key):
    from mechaudit.workflow.agents import run_workflow

    calls: list[str] = []
    fake = _fake_anthropic(calls)
    client = client_for(fake, tmp_path / "cache", max_concurrency=1)
    (run,) = run_workflow(bench, Design(instances=("A",), depths=(1,), runs_per_depth=1), client, temperature=0.3)
    assert {b["temperature"] for b in fake.message_bodies} == {0.3} and len(fake.message_bodies) == 15
    assert [h.opening_id for h in run.developed] == [o.id for o in bench.openings("A")]
    assert [h.id for h in run.developed] == [h.id for h in run.delivered]
    assert [(d.number, d.target_step) for d in run.demands[:2]] == [(1, run.developed[0].chain[1].id), (2, None)]
    assert run.demands[0].text == "Cite support for this step." and run.demands[1].text == "Narrow the claim."


def test_an_invalid_revision_excludes_its_hypothesis_at_the_revise_stage(bench, tmp_path, api_key):
    from mechaudit.workflow.agents import run_workflow

    good = _fake_anthropic([]).reply

    def reply(body):
        user = body["messages"][-1]["content"]
        user = user if isinstance(user, str) else user[0]["text"]
        return "{}" if "The critic's demands:" in user else good(body)

    client = client_for(FakeAnthropic(reply), tmp_path / "cache", max_concurrency=1)
    (run,) = run_workflow(bench, Design(instances=("A",), depths=(1,), runs_per_depth=1), client, json_retries=0)
    assert run.delivered == [] and len(run.developed) == len(bench.openings("A"))
    assert {(e.stage, e.round, e.attempts) for e in run.excluded} == {("revise", 1, 1)}


# --------------------------------------------------------------------------- delivery, design, records, simulator


def test_deliver_simulates_with_seed_zero_and_the_note_reads_in_full(bench):
    from mechaudit.workflow import deliver, load_simulator_params, simulate
    from mechaudit.workflow.delivery import excluded_note

    params = load_simulator_params()
    design = Design(instances=("A",), depths=(0, 1), runs_per_depth=2)
    assert deliver(bench, design, None, simulator=params).runs == simulate(bench, design, params, seed=0)
    assert excluded_note(0, 2) == "Excluded: 0 hypotheses whose reply stayed invalid after 2 JSON repair request(s)."
    assert excluded_note(3, 1, "demands") == (
        "Excluded: 3 demands whose reply stayed invalid after 1 JSON repair request(s); they count nowhere else. "
        "Re-run with -p json_retries 3 to ask again for exactly these (every earlier answer comes from the cache).")


def test_a_design_naming_an_unknown_instance_is_refused_with_the_known_ones(tmp_path):
    from mechaudit.schema import DataError
    from mechaudit.workflow.design import load_design

    path = tmp_path / "d.yaml"
    path.write_text("design:\n  instances: [A, Z]\n  depths: [0, 1]\n  runs_per_depth: 2\n")
    with pytest.raises(DataError) as info:
        load_design(path, instances=["A", "B"])
    assert str(info.value).endswith("field 'design.instances': unknown instance 'Z'; the benchmark's instances "
                                    "are A, B")
    assert load_design(path, instances=["A", "B", "Z"]).instances == ("A", "Z")


def test_demands_frame_columns_and_a_demand_without_its_reply():
    from mechaudit.workflow.records import Demand, Reply, Run, demands_frame

    cols = ["run_id", "instance", "depth", "round", "hypothesis_id", "opening_id", "number", "target_step",
            "weak_link", "demand", "reply", "label"]
    assert list(demands_frame([]).columns) == cols
    d = [Demand(run_id="A-k1-r0", instance="A", depth=1, round=1, hypothesis_id="h", opening_id="o", number=n,
                text=f"demand {n}", weak_link=n == 1) for n in (1, 2)]
    run = Run(run_id="A-k1-r0", instance="A", depth=1, repetition=0, backend="reference", developed=[],
              delivered=[], demands=d, replies=[Reply(run_id="A-k1-r0", round=1, hypothesis_id="h", number=1,
                                                      text="ok", label="answered")])
    frame = demands_frame([run])
    assert list(frame.columns) == cols
    assert frame.demand.tolist() == ["demand 1", "demand 2"] and frame.weak_link.tolist() == [True, False]
    assert frame.reply[0] == "ok" and frame.label[0] == "answered" and frame[["reply", "label"]].iloc[1].isna().all()
    alone = demands_frame([run.model_copy(update={"replies": []})])
    assert alone.reply.tolist() == [None, None] and alone.label.tolist() == [None, None]


def test_simulator_defaults_seed_zero_the_paper_design_and_a_full_log(tiny):
    from mechaudit.workflow import load_simulator_params, simulate
    from mechaudit.workflow.simulator import (
        instance_models,
        load_simulation,
        simulate_outcomes,
        simulate_run,
    )

    folder, bench = tiny
    loaded = load_simulation(folder)
    assert loaded[1] == Design(instances=("A", "B"), depths=(0, 1, 5), runs_per_depth=5)
    params = load_simulator_params()
    assert loaded[2] == params
    design = Design(instances=("A",), depths=(1,), runs_per_depth=2)
    assert simulate(bench, design, params) == simulate(bench, design, params, seed=0)
    assert simulate(bench, design, params) != simulate(bench, design, params, seed=1)
    def keys(outcomes):
        return [o.keys for o in outcomes]

    assert keys(simulate_outcomes(bench, design, params)) == keys(simulate_outcomes(bench, design, params, seed=0))
    assert keys(simulate_outcomes(bench, design, params)) != keys(simulate_outcomes(bench, design, params, seed=1))
    model = instance_models(bench, params.evidence_weight)["A"]
    run = simulate_run(model, bench.vocabulary, 1, 0, params, 3)
    assert run == simulate_run(model, bench.vocabulary, 1, 0, params, 3, log=True)
    assert len(run.demands) > 0 and len(run.revisions) == len(run.delivered)
    assert {v.round for v in run.revisions} == {1}


def test_the_top_of_the_cdf_falls_back_to_the_last_weighted_entity(bench):
    from mechaudit.workflow import load_simulator_params
    from mechaudit.workflow.simulator import _alternative, instance_models

    model = instance_models(bench, load_simulator_params().evidence_weight)["A"]
    ids, weights = model.pools["signal"]
    assert _alternative(model, bench.vocabulary, ids[0], [], 1.0) == ids[-1]
    assert _alternative(model, bench.vocabulary, ids[-1], [ids[-2]], 1.0) == ids[-3]
    assert _alternative(model, bench.vocabulary, ids[0], [], 0.01) == ids[1]


def test_the_judge_plan_names_each_proxy_call_and_each_model_axis(bench):
    from mechaudit.backends import Backend
    from mechaudit.workflow.plan import plan_delivered_judges

    runs = proxy_runs(bench, Design(instances=("A",), depths=(0,), runs_per_depth=1))
    first, second = runs[0].delivered[:2]
    p = {"rules": ["tfidf"], "backend": Backend("anthropic")}
    planned = plan_delivered_judges(p, bench, runs, False, lambda rs, rule: rule.same([(first, second)]),
                                    ["m1", "m2"])
    assert [x.stage for x in planned] == ["judge m1 (delivered pairs)"] * 2 + [
        "judge m1 (delivered pairs), early-stop extra (upper bound)"] + ["judge m2 (judge-model axis)"] * 2 + [
        "judge m2 (judge-model axis), early-stop extra (upper bound)"]
    assert [x.identity for x in planned] == [f"{m}|{first.id}|{second.id}|{c}" for m in ("m1", "m2") for c in range(3)]
    assert not any(x.exact for x in planned)
    exact = plan_delivered_judges(p, bench, runs, True, lambda rs, rule: rule.same([(first, second)]), ["m1"])
    assert [x.identity for x in exact] == [None] * 3 and [x.exact for x in exact] == [True, True, False]
