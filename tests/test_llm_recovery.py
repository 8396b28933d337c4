"""Recovering from bad replies: a 200 that is not a Messages reply, a reply that stays invalid
after the JSON repairs (excluded and counted, never stuck in the cache), backend names, cache_dir.

The real SDK talks to an ``httpx.MockTransport``; nothing of mechaudit is mocked.
"""

from __future__ import annotations

import httpx
import pytest
from fake_anthropic import FakeAnthropic, client_for, workflow_reply

from mechaudit.backends import Backend, BackendError
from mechaudit.engagement import engagement_table, excluded_challenges, label_demands, paper_comparison
from mechaudit.llm import APIReplyError, LLMRequest, get_client
from mechaudit.rules import LLMJudge
from mechaudit.schema import load_benchmark
from mechaudit.workflow import Design, build_rules, excluded_frame, excluded_note
from mechaudit.workflow.agents import run_workflow

REQ = LLMRequest(model="claude-opus-4-6", messages=[{"role": "user", "content": "hi"}])


@pytest.mark.parametrize("response, detail", [
    (httpx.Response(200, text="<html>captive portal</html>", headers={"content-type": "text/html"}),
     "body is not JSON (starts '<html>captive portal</html>')"),
    (httpx.Response(200, text="{truncated", headers={"content-type": "application/json"}), "body is not JSON"),
    (httpx.Response(200, json={"ok": True}), "lacks the Messages fields"),
])
def test_a_200_reply_that_is_not_a_message_is_a_clear_api_error(tmp_path, api_key, response, detail):
    client = client_for(lambda request: response, tmp_path)
    with pytest.raises(APIReplyError) as err:
        client.complete(REQ)
    message = str(err.value)
    assert detail in message and REQ.key in message and "model claude-opus-4-6" in message
    assert "\n" not in message and api_key not in message
    assert len(client.cache) == 0  # nothing cached: the next run asks again


def breaking(statement: str, broken: bool = True) -> FakeAnthropic:
    """A fake answering with ``workflow_reply``, except that while ``broken`` the develop reply for
    the opening with ``statement`` (and every repair of it) is not JSON."""

    def reply(body: dict) -> str:
        first = body["messages"][0]["content"]
        if broken and "Opening hypothesis" in first and statement in first:
            return "I would rather not answer in JSON."
        return workflow_reply(body)  # reads the first message only: a repair gets the original prompt's answer

    return FakeAnthropic(reply)


def test_an_invalid_reply_excludes_its_hypothesis_and_a_rerun_is_not_stuck(tmp_path, api_key):
    bench = load_benchmark()
    design = Design(instances=("A",), depths=(0, 1), runs_per_depth=1)
    victim = bench.openings("A")[2].id
    statement = bench.openings("A")[2].statement
    fake = breaking(statement)
    runs = run_workflow(bench, design, client_for(fake, tmp_path))
    n_open = len(bench.openings("A"))
    # develop: every opening in both runs; +2 repairs for each broken one; critique + revise at depth 1
    assert len(fake.message_bodies) == 2 * n_open + 2 * 2 + 2 * (n_open - 1)
    excluded = excluded_frame(runs)
    assert excluded[["run_id", "opening_id", "stage", "round", "attempts"]].values.tolist() == [
        ["A-k0-r0", victim, "develop", 0, 3], ["A-k1-r0", victim, "develop", 0, 3]]
    assert all(victim not in [h.opening_id for h in r.delivered] for r in runs)
    assert all(len(r.delivered) == n_open - 1 for r in runs)
    assert "-p json_retries 4" in excluded_note(len(excluded), 2)
    # the same re-run finishes from the cache, excluding the same hypothesis: not stuck, no calls
    again = breaking(statement)
    rerun = run_workflow(bench, design, client_for(again, tmp_path))
    assert again.message_bodies == [] and excluded_frame(rerun).equals(excluded)
    # a larger json_retries asks again for exactly the excluded requests (2 new repairs each)
    fixed = breaking(statement, broken=False)
    retried = run_workflow(bench, design, client_for(fixed, tmp_path), json_retries=4)
    assert excluded_frame(retried).empty
    assert all(len(r.delivered) == n_open for r in retried)
    assert len(fixed.message_bodies) == 2 * 1 + 2 * 1  # k0 & k1: one new repair each; k1 then critique+revise
    assert sum(1 for b in fixed.message_bodies if len(b["messages"]) == 7) == 2  # attempt 4 (third repair) of each


def test_an_invalid_engagement_label_reply_is_excluded_and_counted(tmp_path, api_key):
    bench = load_benchmark()
    fake = FakeAnthropic(workflow_reply)
    (run,) = run_workflow(bench, Design(instances=("A",), depths=(1,), runs_per_depth=1), client_for(fake, tmp_path))
    first_step = run.delivered[0].chain[0].id
    marker = f"1. Cite evidence for {first_step}."
    broken = [d for d in run.demands if d.number == 1 and d.text == marker[3:]]
    hit = {d.hypothesis_id for d in broken}
    assert hit  # at least the first hypothesis' challenge

    def labels(body: dict) -> str:
        if marker in body["messages"][0]["content"]:  # never valid, repairs included
            return "labels: conceded, answered"
        return workflow_reply(body)

    labelled = label_demands([run], client_for(FakeAnthropic(labels), tmp_path / "judge"))
    out = excluded_challenges(labelled)
    n_bad = sum(d.hypothesis_id in hit for d in run.demands)
    assert sorted(out.hypothesis_id) == sorted(hit) and out.demands.sum() == n_bad
    assert out.error.str.contains("no JSON object found").all()
    assert labelled.label.isna().sum() == n_bad
    assert engagement_table(labelled)["count"].sum() == len(run.demands) - n_bad
    assert dict(paper_comparison(labelled))["engagement.demands"] == len(run.demands) - n_bad


def test_backend_names_are_validated_in_one_place():
    assert Backend.parse("replay").is_llm and not Backend.parse("reference").is_llm
    assert Backend("anthropic") == "anthropic"
    with pytest.raises(BackendError, match=r"field 'backend': 'antropic' is not a backend; choose one of "
                                           r"reference, anthropic, replay"):
        Backend.parse("antropic")
    with pytest.raises(BackendError, match="not an LLM backend"):
        get_client("reference")
    with pytest.raises(BackendError, match="'antropic' is not a backend"):
        LLMJudge(backend="antropic")  # the deprecated shorthand still checks the name


def test_the_llm_rule_answers_through_the_given_client_and_needs_one(tmp_path):
    client = get_client("replay", cache_dir=tmp_path / "c")
    rule = build_rules(["llm", "tfidf"], client)["llm"]
    assert rule.client is client and rule.backend is Backend.REPLAY
    with pytest.raises(ValueError, match=r"^rule 'llm' needs an LLM client \(mechaudit.llm.get_client\)"):
        build_rules(["tfidf", "llm"])
    assert list(build_rules(["tfidf"])) == ["tfidf"]  # the other rules need none


def test_undecided_judge_pairs_are_left_out_of_the_run_divergence():
    from mechaudit.divergence import divergence_matrix
    from mechaudit.schema import Hypothesis, Step

    def hyp(run: str, opening: str, first: str) -> Hypothesis:
        chain = [Step(id=first, text=first), Step(id="M", text="m"), Step(id="F", text="f")]
        return Hypothesis(id=f"{run}-{opening}", instance="A", statement="s", explanation="e", chain=chain,
                          run=run, depth=0, opening_id=opening)

    runs = [[hyp("r0", "o1", "X"), hyp("r0", "o2", "X")], [hyp("r1", "o1", "X"), hyp("r1", "o2", "Y")]]
    verdicts = {"o1": float("nan"), "o2": 0.0}  # o1: undecided, o2: different
    D = divergence_matrix(runs, lambda pairs: [verdicts[a.opening_id] for a, _ in pairs])
    assert D[0, 1] == 1.0  # only the decided pair counts (it was different)
    D = divergence_matrix(runs, lambda pairs: [1.0 if a.opening_id == "o1" else 0.0 for a, _ in pairs])
    assert D[0, 1] == 0.5
