"""The self-served real LLM judge (``make local-judge``): its recorded answers in ``data/llm_cache``
replay offline through the judge's own path, with no server; a request never recorded is reported,
never answered."""

from __future__ import annotations

import json

from mechaudit.book import selfserved
from mechaudit.book.ch05_perturbations import judge_with_llm, setup
from mechaudit.llm.request import LLMRequest
from mechaudit.rules import LLMJudge
from mechaudit.rules.llm_judge import majority

SLICE = 16  # pairs of the reworded suite


def test_a_slice_of_the_recorded_answers_replays_without_a_server():
    own = selfserved.recorded(False)
    assert own is not None and own.client.openai_base_url == selfserved.ENDPOINT
    s = setup(suite="reworded")
    pairs = s.pairs[:SLICE]
    judge = LLMJudge(model=own.model, client=own.client, instances=s.bench.instances)
    calls = judge.judge(pairs)
    assert len(calls) >= 2 * SLICE and calls["cached"].all()  # every answer from the cache
    assert set(own.client.ledger()["mode"]) == {"cache"}  # a replay client never sends
    verdicts = []
    for key in calls["key"]:
        record = own.client.cache.record(key)
        assert record["endpoint"] == selfserved.ENDPOINT and record["request"]["temperature"] == 0.0
        assert record["request"]["json_schema"]["title"] == "MechanismVerdict"
        verdicts.append(json.loads(record["response"]["text"])["verdict"])  # the server's own words
    assert list(calls["verdict"]) == verdicts
    decided = judge_with_llm(pairs, s.bench.instances, client=own.client, model=own.model)
    assert list(decided.same) == list(majority(calls, len(pairs))["same"])


def test_a_request_never_recorded_is_not_answered():
    own = selfserved.recorded(False)
    ask = LLMRequest(model=own.model, messages=[{"role": "user", "content": "never asked"}])
    assert own.replay(lambda client: client.complete(ask)) is None


def test_only_an_offline_run_on_the_shipped_benchmark_replays_it(tmp_path):
    assert selfserved.recorded(True) is None  # an LLM backend: the chapter's own judge answers
    assert selfserved.recorded(False, tmp_path) is None  # other data: nothing was recorded for it
