"""Workflow simulator, design counts and the real workflow path against a faked HTTP transport."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas.testing as pd_testing
import pytest
import yaml
from fake_anthropic import FakeAnthropic, client_for

from mechaudit.divergence import divergence_matrix
from mechaudit.paths import PARAMS_DIR
from mechaudit.schema import load_benchmark, mechanism_key
from mechaudit.workflow import (
    Design,
    MechanismKeyRule,
    by_instance,
    counts,
    key_matrix,
    load_design,
    load_simulator_params,
    null_params,
    simulate,
)
from mechaudit.workflow.agents import CRITIC_SYSTEM, develop_request, hypothesis_schema, run_workflow


def write_tiny_benchmark(folder: Path) -> Path:
    """Two instances, five openings each, four entity types (independent of the committed data)."""
    types = {"trigger": "initiating events", "signal": "signalling nodes", "process": "cell processes",
             "finding": "observed findings"}
    ents = [{"id": f"{t.upper()}_{k}", "type": t, "name": f"{t} {chr(97 + k)}",
             "aliases": [f"{t}-{chr(97 + k)} form"]}
            for t, n in (("trigger", 6), ("signal", 8), ("process", 8), ("finding", 2)) for k in range(n)]
    names = {e["id"]: e["name"] for e in ents}
    hyps, insts = [], []
    for i, inst in enumerate(("A", "B")):
        term = f"FINDING_{i}"
        openings = []
        for o in range(5):
            chain = [f"TRIGGER_{o}", f"SIGNAL_{(o + i) % 8}", f"PROCESS_{(2 * o + i) % 8}", term]
            hyps.append({"id": f"{inst}-o{o}", "instance": inst, "statement": f"{names[chain[0]]} causes {names[term]}",
                         "explanation": " then ".join(names[c] for c in chain) + ".",
                         "chain": [{"id": c, "text": names[c]} for c in chain]})
            openings.append(f"{inst}-o{o}")
        insts.append({"id": inst, "title": f"Instance {inst}", "finding": f"finding {i} observed",
                      "terminal_id": term, "evidence": ["signal a and process b rise", "trigger c is present"],
                      "openings": openings})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocabulary.yaml").write_text(yaml.safe_dump({"types": types, "entities": ents}))
    (folder / "instances.yaml").write_text(yaml.safe_dump({"instances": insts}))
    (folder / "hypotheses.jsonl").write_text("\n".join(json.dumps(h) for h in hyps) + "\n")
    return folder


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    return load_benchmark(write_tiny_benchmark(tmp_path_factory.mktemp("bench")))


@pytest.fixture(scope="module")
def params():
    return load_simulator_params()


DESIGN = Design(instances=("A", "B"), depths=(0, 1, 5), runs_per_depth=5)


def key_chains(runs):
    return [[(h.opening_id, mechanism_key(h)) for h in r.delivered] for r in runs]


def test_same_seed_identical_records(bench, params):
    a = simulate(bench, DESIGN, params, seed=3)
    b = simulate(bench, DESIGN, params, seed=3)
    assert [r.model_dump() for r in a] == [r.model_dump() for r in b]
    c = simulate(bench, DESIGN, params, seed=4)
    assert key_chains(a) != key_chains(c)


def test_run_independent_of_other_cells(bench, params):
    """A run's records depend only on its own cell and the seed, not on the rest of the design."""
    full = {r.run_id: r for r in simulate(bench, DESIGN, params, seed=1)}
    small = simulate(bench, Design(instances=("B",), depths=(5,), runs_per_depth=2), params, seed=1)
    for r in small:
        assert r.model_dump() == full[r.run_id].model_dump()


def test_records_consistent(bench, params):
    runs = simulate(bench, DESIGN, params, seed=0)
    openings = {h.id for h in bench.hypotheses}
    for r in runs:
        assert all(h.opening_id in openings and h.depth == r.depth and h.run == r.run_id for h in r.delivered)
        assert {h.opening_id for h in r.delivered} == {h.id for h in bench.openings(r.instance)}
        assert len(r.demands) == len(r.replies)
        assert all(d.round <= r.depth for d in r.demands)
        if r.depth == 0:
            assert not r.demands and r.developed == r.delivered
        for h in r.delivered:  # terminal is the instance's finding
            assert h.chain[-1].id == next(i.terminal_id for i in bench.instances if i.id == r.instance)


def test_null_setting_leaves_mechanisms_unchanged(bench, params):
    runs = simulate(bench, DESIGN, null_params(params), seed=0)
    assert sum(len(r.demands) for r in runs) > 100
    for r in runs:
        assert [mechanism_key(h) for h in r.developed] == [mechanism_key(h) for h in r.delivered]
        assert all(not v.changed for v in r.revisions)


def test_null_params_file_is_default_with_null_flag():
    default = load_simulator_params()
    null = load_simulator_params(PARAMS_DIR / "simulator_null.yaml")
    assert not null.critique_changes_mechanism and default.critique_changes_mechanism
    assert null.model_dump(exclude={"name", "critique_changes_mechanism"}) == \
        default.model_dump(exclude={"name", "critique_changes_mechanism"})


def changed_links(runs):
    return np.mean([sum(a.id != b.id for a, b in zip(d.chain, h.chain))
                    for r in runs for d, h in zip(r.developed, r.delivered)])


def test_diminishing_returns_emerge(bench, params):
    design = Design(instances=("A", "B"), depths=(1, 5), runs_per_depth=30)
    runs = simulate(bench, design, params, seed=2)
    k1 = changed_links([r for r in runs if r.depth == 1])
    k5 = changed_links([r for r in runs if r.depth == 5])
    assert k1 > 0.4  # the first round changes a lot...
    assert k5 < 1.35 * k1  # ...five rounds not much more
    # the per-round concession rate falls as weak links run out
    d5 = [d for r in runs if r.depth == 5 for d in r.demands]
    weak_share = [np.mean([d.weak_link for d in d5 if d.round == k]) for k in (1, 5)]
    assert weak_share[0] > weak_share[1] + 0.3


def test_key_matrix_equals_pairwise_rule(bench, params):
    runs = simulate(bench, DESIGN, params, seed=0)
    for rs in by_instance(runs).values():
        slow = divergence_matrix([r.delivered for r in rs], MechanismKeyRule().same)
        np.testing.assert_allclose(key_matrix(rs), slow, atol=1e-12)
    # the runs come back per instance by depth, then repetition, whatever order they are given in
    shuffled = by_instance(runs[::-1])
    assert {i: [(r.depth, r.repetition) for r in rs] for i, rs in shuffled.items()} == {
        i: sorted((r.depth, r.repetition) for r in runs if r.instance == i) for i in shuffled}
    from mechaudit.errors import MechauditError
    from mechaudit.workflow.depth import rule_matrix

    with pytest.raises(MechauditError, match=r"^field 'rules': a rule is None"):
        rule_matrix([r.delivered for r in runs[:2]], None)
    # a rule with its own matrix is asked for it: the paper-rate rule's expected divergences, not draws
    from mechaudit.rules import PaperRateJudge

    sets = [r.delivered for r in by_instance(runs)["A"]]
    np.testing.assert_array_equal(rule_matrix(sets, PaperRateJudge()), PaperRateJudge().divergence_matrix(sets))


def test_paper_design_counts(params):
    design = load_design()
    assert design.n_runs == 60 and design.n_run_pairs == 420 and design.comparisons() == [(0, 1), (0, 5), (1, 5)]
    runs = simulate(load_benchmark(), design, params, seed=0)
    c = counts(runs)
    assert c["runs"] == 60 and c["run_pairs"] == 420
    assert 3000 < c["matched_pairs"] < 7000


def test_bad_params_name_file_and_field(tmp_path):
    doc = yaml.safe_load((PARAMS_DIR / "simulator.yaml").read_text())
    doc["simulator"]["reply_weak"]["conceded"] = 0.9
    bad = tmp_path / "sim.yaml"
    bad.write_text(yaml.safe_dump(doc))
    with pytest.raises(ValueError, match=r"sim\.yaml:\d+: field 'simulator\.reply_weak'"):
        load_simulator_params(bad)
    with pytest.raises(ValueError, match="depths"):
        Design(instances=("A",), depths=(1, 1), runs_per_depth=2)
    with pytest.raises(ValueError, match="unknown instance"):
        simulate(load_benchmark(), Design(instances=("nope",), depths=(0,), runs_per_depth=1),
                 load_simulator_params())


# --------------------------------------------------------------------------- real workflow, faked HTTP


def _fake_anthropic(calls: list[str]) -> FakeAnthropic:
    """The fake API answering each workflow stage with valid JSON; ``calls`` lists the stages asked."""

    def reply(body: dict) -> str:
        system = body["system"][0]["text"] if isinstance(body["system"], list) else body["system"]
        user = body["messages"][-1]["content"]
        user = user if isinstance(user, str) else user[0]["text"]
        if system == CRITIC_SYSTEM:
            calls.append("critique")
            chain = json.loads(user.split("Hypothesis under review:\n", 1)[1].split("\n\n", 1)[0])["chain"]
            out = {"demands": [{"number": 1, "target_step": chain[1]["id"], "demand": "Cite support for this step."},
                               {"number": 2, "target_step": None, "demand": "Narrow the claim."}]}
        elif "The critic's demands:" in user:
            calls.append("revise")
            current = json.loads(user.split("Your current hypothesis:\n", 1)[1].split("\n\n", 1)[0])
            n = len(re.findall(r"^\d+\. ", user.split("The critic's demands:\n", 1)[1].split("\n\n")[0], re.M))
            current["chain"][1] = {"id": "SIGNAL_7", "text": "signal h"}
            out = {"replies": [{"number": k, "reply": f"Reply {k}."} for k in range(1, n + 1)], "revised": current}
        else:
            calls.append("develop")
            opening = json.loads(user.split("Opening hypothesis to develop:\n", 1)[1].split("\n\n", 1)[0])
            out = {"statement": opening["statement"], "explanation": "Developed. " + opening["explanation"],
                   "chain": opening["chain"]}
        return json.dumps(out)

    return FakeAnthropic(reply, usage=lambda body, text: {"input_tokens": 100, "output_tokens": 50})


def test_real_workflow_path_with_faked_transport(bench, tmp_path, api_key):
    from mechaudit.engagement import label_demands
    from mechaudit.llm import get_client

    calls: list[str] = []
    fake = _fake_anthropic(calls)
    client = client_for(fake, tmp_path / "cache", max_concurrency=1)
    design = Design(instances=("A",), depths=(1,), runs_per_depth=1)
    (run,) = run_workflow(bench, design, client)
    assert calls == ["develop"] * 5 + ["critique"] * 5 + ["revise"] * 5 and fake.errors == []
    assert run.backend == "anthropic" and run.run_id == "A-k1-r0"
    assert [h.opening_id for h in run.delivered] == [h.id for h in bench.openings("A")]
    assert all(h.explanation.startswith("Developed.") for h in run.developed)
    assert all(h.chain[1].id == "SIGNAL_7" for h in run.delivered)  # the revision was applied
    assert len(run.demands) == 10 and len(run.replies) == 10 and len(run.revisions) == 5
    assert all(v.changed == [1] for v in run.revisions)
    # replay from the recorded cache gives the same run without HTTP
    replay = get_client(backend="replay", cache_dir=tmp_path / "cache")
    assert run_workflow(bench, design, replay)[0].delivered == run.delivered
    # the engagement judge path with the same transport (labels come back as JSON)
    def judge(body: dict) -> str:
        n = body["messages"][-1]["content"].split("Generator's replies")[0].count("\n") - 1
        return json.dumps({"labels": [{"number": k, "label": "answered"} for k in range(1, n + 1)]})

    judge_fake = FakeAnthropic(judge)
    labelled = label_demands([run], client_for(judge_fake, tmp_path / "cache2"))
    assert len(labelled) == 10 and (labelled.label == "answered").all() and judge_fake.errors == []
    assert set(labelled.label_source) == {"LLM judge (claude-opus-4-6, anthropic)"}


def test_real_workflow_rejects_unknown_step_ids(bench, tmp_path, api_key):
    """A chain id outside the vocabulary triggers repair requests; still invalid, the hypothesis is
    excluded from its run with the error (and counted), never delivered."""
    from mechaudit.llm import InvalidJSONError

    out = {"statement": "s", "explanation": "e", "chain": [{"id": "NOT_AN_ID", "text": "x"},
           {"id": "SIGNAL_1", "text": "y"}, {"id": "FINDING_0", "text": "z"}]}
    client = client_for(FakeAnthropic(lambda body: json.dumps(out)), tmp_path / "c")
    (run,) = run_workflow(bench, Design(instances=("A",), depths=(0,), runs_per_depth=1), client)
    assert run.delivered == [] and len(run.excluded) == len(bench.openings("A"))
    assert all(e.stage == "develop" and e.attempts == 3 and "NOT_AN_ID" in e.error for e in run.excluded)
    with pytest.raises(InvalidJSONError, match="-p json_retries 4"):  # strict callers get the retry switch
        client.complete_json(develop_request(bench.instances[0], bench.vocabulary, bench.openings("A")[0],
                                             "A-k0-r0", "claude-sonnet-4-6", 1.0),
                             hypothesis_schema(bench.vocabulary, bench.instances[0].terminal_id))


def test_rules_for_drops_ground_truth_and_adds_the_llm_judge_for_llm_runs():
    from mechaudit.workflow import rules_for

    names = ["mechanism_key", "reference", "tfidf"]
    assert rules_for(names, llm=False) == names and rules_for(names, False) is not names
    assert rules_for(names, llm=True) == ["reference", "tfidf", "llm"]
    assert rules_for(["llm", "tfidf"], llm=True) == ["llm", "tfidf"]


def test_deliver_simulates_without_a_client_and_asks_the_client_otherwise(bench, params, tmp_path, api_key, capsys):
    from mechaudit.workflow import deliver, report_dropped

    design = Design(instances=("A",), depths=(0,), runs_per_depth=1)
    with pytest.raises(ValueError, match=r"^offline delivery \(no LLM client\) needs simulator parameters"):
        deliver(bench, design, None)
    offline = deliver(bench, design, None, simulator=params, seed=3)
    assert offline.client is None and offline.source == "simulator (backend reference)"
    assert offline.runs == simulate(bench, design, params, seed=3) and all(r.simulated for r in offline.runs)
    report_dropped(offline, json_retries=2)
    assert capsys.readouterr().out == ""  # simulator runs drop nothing

    out = {"statement": "s", "explanation": "e", "chain": [{"id": "NOT_AN_ID", "text": "x"}]}
    client = client_for(FakeAnthropic(lambda body: json.dumps(out)), tmp_path / "c")
    llm = deliver(bench, design, client, json_retries=1)
    assert llm.client is client and llm.source == "LLM workflow (claude-sonnet-4-6, backend anthropic)"
    assert not any(r.simulated for r in llm.runs) and len(llm.excluded) == len(bench.openings("A"))
    report_dropped(llm, json_retries=1)
    assert capsys.readouterr().out.startswith(
        f"Excluded: {len(bench.openings('A'))} hypotheses whose reply stayed invalid after 1 JSON repair request(s);")


@pytest.mark.parametrize(("backend", "rules", "n_requests"), [
    ("reference", ["tfidf", "mechanism_key"], 0),  # simulator runs: no judge joins
    ("replay", ["tfidf"], 3),  # LLM runs: the judge joins the rules, 3 calls per pair
    ("anthropic", ["mechanism_key"], 3),
])
def test_the_judge_plan_follows_the_parsed_backend(bench, backend, rules, n_requests):
    from mechaudit.backends import Backend
    from mechaudit.workflow.plan import plan_delivered_judges, proxy_runs

    design = Design(instances=("A",), depths=(0,), runs_per_depth=1)
    runs = proxy_runs(bench, design)
    first, second = runs[0].delivered[:2]

    def pairs_of(runs, rule):
        return rule.same([(first, second)])

    p = {"rules": rules, "backend": Backend(backend)}
    planned = plan_delivered_judges(p, bench, runs, True, pairs_of, ["claude-model-a"])
    assert len(planned) == n_requests
    assert {x.request.model for x in planned} <= {"claude-model-a"}
    assert [x.stage for x in planned[:2]] == ["judge claude-model-a (delivered pairs)"] * min(n_requests, 2)


def test_change_profile_counts_changed_steps(bench, params):
    from mechaudit.workflow.depth import change_profile

    design = Design(instances=("A",), depths=(0, 1), runs_per_depth=2)
    runs = simulate(bench, design, params, seed=1, log=False)
    profile = change_profile(runs, bench)
    assert list(profile.index) == [0, 1] and (profile.hypotheses > 0).all()
    # the first-step share at depth 1, counted by hand from the openings' chains
    opening = {h.id: [s.id for s in h.chain] for h in bench.openings("A")}
    firsts = [[s.id for s in h.chain][0] != opening[h.opening_id][0] for r in runs if r.depth == 1 for h in r.delivered
              if len(h.chain) == len(opening[h.opening_id])]
    assert profile.loc[1, "initiating event changed (%)"] == pytest.approx(100 * np.mean(firsts))
    assert profile.loc[1, "hypotheses"] == len(firsts)
    nothing = params.model_copy(update={"p_develop_swap": 0.0, "critique_changes_mechanism": False})
    still = change_profile(simulate(bench, design, nothing, seed=1, log=False), bench)
    assert (still["initiating event changed (%)"] == 0).all() and (still["middle steps changed (%)"] == 0).all()
    assert profile.loc[1, "initiating event changed (%)"] > 0
    # a delivered chain of another length is left out, and the run's other hypotheses still count
    first = runs[0]
    short = first.delivered[0].model_copy(update={"chain": first.delivered[0].chain[:2]})
    padded = [first.model_copy(update={"delivered": [short, *first.delivered]}), *runs[1:]]
    pd_testing.assert_frame_equal(change_profile(padded, bench), profile)


def test_judge_model_table_has_one_row_per_model_in_the_given_order(bench, params, monkeypatch):
    """With a judge that calls every pair the same, every extra divergence is 0; the table keeps the
    models' order (each once) and one column per comparison."""
    import pandas as pd

    import mechaudit.workflow.depth as depth

    def same_everywhere(pairs, models, client, **kw):
        return pd.DataFrame([[True] * len(pairs)] * len(models), index=list(models), dtype="boolean"), None

    monkeypatch.setattr(depth, "model_verdicts", same_everywhere)
    runs = simulate(bench, Design(instances=("A",), depths=(0, 1, 5), runs_per_depth=2), params, seed=1, log=False)
    table = depth.judge_model_table(runs, [(0, 1), (1, 5)], ["m2", "m1", "m2"], client=None, instances=None)
    assert table.index.name == "judge model" and list(table.index) == ["m2", "m1"]
    assert list(table.columns) == ["0 v 1", "1 v 5"] and table.columns.name is None
    assert (table.to_numpy() == 0).all()


def test_change_profile_middle_steps_by_hand_and_no_runs(bench, params):
    from mechaudit.workflow.depth import change_profile

    runs = simulate(bench, Design(instances=("A", "B"), depths=(1,), runs_per_depth=3), params, seed=2, log=False)
    opening = {(i.id, h.id): [s.id for s in h.chain] for i in bench.instances for h in bench.openings(i.id)}
    middles = []
    for r in runs:
        for h in r.delivered:
            ids, ref = [s.id for s in h.chain], opening[(r.instance, h.opening_id)]
            if len(ids) == len(ref):
                middles.append(np.mean([a != b for a, b in zip(ids[1:-1], ref[1:-1])]))
    profile = change_profile(runs, bench)
    assert profile.loc[1, "middle steps changed (%)"] == pytest.approx(100 * np.mean(middles))
    assert 0 < np.mean(middles)
    empty = change_profile([], bench)
    assert empty.empty and list(empty.columns) == ["hypotheses", "initiating event changed (%)",
                                                   "middle steps changed (%)"]


def test_depth_tables_keep_their_columns_and_a_fresh_index(bench, params):
    from mechaudit.workflow.depth import depth_table, instance_matrices, rule_tables
    from mechaudit.workflow.intervals import bootstrap_interval

    runs = simulate(bench, Design(instances=("A", "B"), depths=(0, 1), runs_per_depth=3), params, seed=1, log=False)
    mats = instance_matrices(runs, MechanismKeyRule())
    empty = depth_table(mats, [])
    assert empty.empty and list(empty.columns) == ["comparison", "extra_pp", "ci_low_pp", "ci_high_pp", "p_value",
                                                   "n_partitions", "n_instances", "max_extra_pp", "normalised"]
    table = depth_table(mats, [(0, 1)], level=0.8, n_boot=50, seed=3)
    from mechaudit.divergence import comparison_matrix

    subs = [comparison_matrix(m.D, m.depths, 0, 1) for m in mats]
    low, high = bootstrap_interval([D for D, _ in subs], 3, 0.8, 50, 3)
    assert (table.ci_low_pp[0], table.ci_high_pp[0]) == pytest.approx((100 * low, 100 * high))
    same = lambda pairs: np.ones(len(pairs), dtype=bool)  # noqa: E731
    points, tables = rule_tables(runs, {"key": MechanismKeyRule(), "same": same}, [(0, 1)])
    assert list(points.index) == list(range(len(points))) and list(tables.index) == [0, 1]
    assert points.rule.tolist() == ["key"] * (len(points) // 2) + ["same"] * (len(points) // 2)


def test_judge_model_table_asks_each_model_with_the_full_rubric(bench, params, monkeypatch):
    import pandas as pd

    import mechaudit.workflow.depth as depth

    asked = []

    def record(pairs, models, client, **kw):
        asked.append((tuple(models), client, kw))
        return pd.DataFrame([[False] * len(pairs)] * len(models), index=list(models), dtype="boolean"), None

    monkeypatch.setattr(depth, "model_verdicts", record)
    runs = simulate(bench, Design(instances=("A",), depths=(0, 1), runs_per_depth=2), params, seed=1, log=False)
    depth.judge_model_table(runs, [(0, 1)], ["m1"], client="the client", instances=["inst"])
    assert asked and all(a == (("m1",), "the client", {"rubric": "full", "instances": ["inst"]}) for a in asked)
