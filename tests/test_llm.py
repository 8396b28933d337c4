"""The LLM layer against a faked HTTP transport (httpx.MockTransport handed to the real SDK).

Nothing here reaches the network and nothing of ``mechaudit.llm`` is mocked: the SDK builds and
sends real HTTP requests, the fake (``fake_anthropic.FakeAnthropic``) only answers them.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import warnings
from pathlib import Path

import anthropic
import fake_anthropic
import httpx
import httpx2
import pytest
from fake_anthropic import FAKE_KEY, FakeAnthropic, replies_in_order
from pydantic import BaseModel

from mechaudit.llm import (
    BatchError,
    BatchState,
    BlindnessError,
    CacheRecoveryWarning,
    InvalidJSONError,
    LLMRequest,
    MissingAPIKeyError,
    ReplayMissError,
    ResponseCache,
    check_blind,
    extract_json,
    get_client,
    load_prices,
)

RUBRIC = "You judge whether two hypotheses describe the same mechanism. " * 40
PRICES = {
    "batch_discount": 0.5,
    "models": {"claude-opus-4-6": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_read": 0.5}},
}


class Verdict(BaseModel):
    same: bool
    reason: str


def client_for(handler, cache_dir: Path, **kw):
    """An anthropic-backend client whose SDK talks to ``handler`` (a ``FakeAnthropic``), priced by ``PRICES``."""
    return fake_anthropic.client_for(handler, cache_dir, prices=PRICES, **kw)


def req(text: str = "Compare hypothesis A with hypothesis B.", **kw) -> LLMRequest:
    kw.setdefault("model", "claude-opus-4-6")
    kw.setdefault("system", RUBRIC)
    kw.setdefault("version", "judge-full-v1")
    kw.setdefault("max_tokens", 512)
    return LLMRequest(messages=[{"role": "user", "content": text}], **kw)


def cache_lines(cache_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (cache_dir / "responses.jsonl").read_text().splitlines()]


# -- request, key, blindness -----------------------------------------------------------------

def test_request_body_sent_by_sdk(tmp_path, api_key, fake_api):
    client_for(fake_api, tmp_path).complete(req("Pair 1", forbidden_terms=("run-7", "score")))
    [body] = fake_api.message_bodies
    assert body["model"] == "claude-opus-4-6"
    assert body["temperature"] == 0.0
    assert body["max_tokens"] == 512
    assert body["system"] == [{"type": "text", "text": RUBRIC, "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": "Pair 1"}]
    assert set(body) == {"model", "temperature", "max_tokens", "system", "messages"}  # no metadata leaks
    headers = fake_api.headers[0]
    assert headers["anthropic-version"] == "2023-06-01"  # the version that accepts temperature
    assert FAKE_KEY in headers.get("authorization", "") + headers.get("x-api-key", "")
    for term in ("run-7", "score"):
        assert term not in json.dumps(body).lower()


def test_uncached_system_prompt_and_default_temperature(tmp_path, api_key, fake_api):
    client = client_for(fake_api, tmp_path)
    client.complete(req(cache_system=False, temperature=None))
    assert fake_api.message_bodies[0]["system"] == RUBRIC and "temperature" not in fake_api.message_bodies[0]
    with pytest.raises(ValueError, match="temperature"):
        client_for(fake_api, tmp_path, api_version="2026-10-21").complete(req("new"))
    assert len(fake_api.message_bodies) == 1


def test_key_is_sha256_of_canonical_hashed_fields():
    r = req(metadata={"pair": 3}, forbidden_terms=("x",))
    canonical = json.dumps(
        {"model": r.model, "system": r.system, "messages": [{"role": "user", "content": r.messages[0].content}],
         "temperature": 0.0, "max_tokens": 512, "version": "judge-full-v1"},
        sort_keys=True, separators=(",", ":"), ensure_ascii=False,
    )
    assert r.key == hashlib.sha256(canonical.encode()).hexdigest()
    assert req().key == r.key  # metadata / forbidden_terms / cache_system are not hashed
    assert req(cache_system=False).key == r.key
    changed = [req("other"), req(model="claude-sonnet-4-6"), req(system="s"), req(temperature=0.5),
               req(max_tokens=100), req(version="judge-full-v2")]
    assert len({c.key for c in changed} | {r.key}) == len(changed) + 1


def test_request_validation():
    with pytest.raises(ValueError):
        LLMRequest(model="m", messages=[])
    with pytest.raises(ValueError):
        LLMRequest(model="m", messages=[{"role": "system", "content": "x"}])
    with pytest.raises(ValueError):
        req(max_tokens=0)


def test_check_blind_word_boundaries_and_case():
    with pytest.raises(BlindnessError) as err:
        check_blind("Anchor RUN-3 scored well", ["score", "run-3"])
    assert err.value.term == "run-3" and "run-3" in str(err.value)
    check_blind("a rerun that scored", ["run", "score"])  # no whole-word match: passes
    with pytest.raises(BlindnessError, match="'#2'"):
        check_blind("hypothesis #2 is better", ["#2"])
    with pytest.raises(ValueError):
        check_blind("text", [" "])


def test_forbidden_term_refused_before_any_send_or_lookup(tmp_path, api_key, fake_api):
    client = client_for(fake_api, tmp_path)
    bad = req("Run A scored 7.5 by reviewer gpt", forbidden_terms=("7.5",))
    with pytest.raises(BlindnessError, match="7.5"):
        client.complete(bad)
    with pytest.raises(BlindnessError):
        client.complete_many([req("fine", forbidden_terms=("7.5",)), bad])
    with pytest.raises(BlindnessError, match="system prompt"):
        client.complete(req("ok", system="anchor id ANC-1", forbidden_terms=("anc-1",)))
    assert all("7.5" not in m["messages"][-1]["content"] for m in fake_api.message_bodies)
    assert not (tmp_path / "responses.jsonl").exists() or all(
        "7.5" not in json.dumps(r) for r in cache_lines(tmp_path))


# -- structured output -----------------------------------------------------------------------

def test_extract_json_variants():
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('Sure:\n```json\n{"a": 2}\n```\nDone.') == {"a": 2}
    assert extract_json('My verdict is {"a": 3} as asked.') == {"a": 3}
    with pytest.raises(ValueError, match="no JSON"):
        extract_json("same, I think")


def test_extract_json_keeps_looking_after_a_stray_brace():
    """A ``{`` that opens no JSON (a set, a template) does not hide the object after it."""
    assert extract_json('Using {x} from the prompt, my answer: {"a": 4}') == {"a": 4}
    assert extract_json('{ not json } {"a": 5} {"a": 6}') == {"a": 5}  # the first object that parses
    with pytest.raises(ValueError, match="no JSON"):
        extract_json("{oops} and {again}")


def test_complete_many_is_strict_by_default_and_marks_invalid_replies_when_asked(tmp_path, api_key):
    fake = FakeAnthropic(lambda body: "no verdict here")
    with pytest.raises(InvalidJSONError):
        client_for(fake, tmp_path / "a").complete_many([req()], Verdict, json_retries=0)
    [result] = client_for(fake, tmp_path / "b").complete_many([req()], Verdict, json_retries=0, strict=False)
    assert result.invalid and result.value is None and "no JSON object" in result.error


def test_describe_error_lists_each_invalid_field_without_urls():
    from mechaudit.llm.jsonout import describe_error, parse_reply

    with pytest.raises(ValueError) as err:
        parse_reply('{"same": "perhaps"}', Verdict)
    text = describe_error(err.value)
    assert text.startswith("validation failed: same: ") and "(got 'perhaps')" in text and "http" not in text
    assert describe_error(ValueError("plain")) == "plain"


def test_budget_message_says_what_was_spent_held_and_asked():
    from mechaudit.llm.session import BudgetExceededError

    assert str(BudgetExceededError(1.0, 0.5, 0.7)).startswith(
        "LLM budget max_usd=1.00 reached: 0.50 USD spent in this run, the next request could cost up to 0.70 USD more")
    held = str(BudgetExceededError(1.0, 0.5, 0.7, n_requests=3, reserved=0.25))
    assert "0.50 USD spent in this run (+0.25 USD held for requests in flight), the next 3 requests (one batch)" in held


def test_repair_round_trip(tmp_path, api_key):
    fake = FakeAnthropic(
        replies_in_order(['{"same": "perhaps"}', '```json\n{"same": false, "reason": "different start"}\n```']))
    result = client_for(fake, tmp_path).complete_json(req(), Verdict)
    assert not result.invalid and result.value == Verdict(same=False, reason="different start")
    assert result.attempts == 2 and len(fake.message_bodies) == 2
    repair = fake.message_bodies[1]["messages"]
    assert [m["role"] for m in repair] == ["user", "assistant", "user"]
    assert repair[1]["content"] == '{"same": "perhaps"}'
    assert "same: Input should be a valid boolean" in repair[2]["content"]  # quotes the error
    assert "reason: Field required" in repair[2]["content"]
    # the repaired answer is cached: a new client replays both turns without HTTP
    again = get_client("replay", cache_dir=tmp_path).complete_json(req(), Verdict)
    assert again.value == result.value and again.response.cached


def test_strict_failure_and_recorded_invalid(tmp_path, api_key):
    fake = FakeAnthropic(reply=lambda body: "They look the same to me.")
    client = client_for(fake, tmp_path)
    with pytest.raises(InvalidJSONError, match="after 2 repair"):
        client.complete_json(req(), Verdict, json_retries=2, strict=True)
    assert len(fake.message_bodies) == 3  # 1 + json_retries
    result = client.complete_json(req(), Verdict, json_retries=2, strict=False)  # all cached now
    assert result.invalid and result.value is None and "no JSON" in result.error
    assert len(fake.message_bodies) == 3
    results = client.complete_many([req(), req("other")], schema=Verdict, strict=False)
    assert [r.invalid for r in results] == [True, True]


class Count(BaseModel):
    n: int


def test_complete_many_validates_each_request_with_its_own_schema(tmp_path, api_key):
    def reply(body):
        text = body["messages"][0]["content"]
        return '{"n": 3}' if "count" in text else json.dumps({"same": True, "reason": "same start"})

    client = client_for(FakeAnthropic(reply=reply), tmp_path)
    reqs = [req("count these"), req("compare these"), req("raw text")]
    out = client.complete_many(reqs, schema=[Count, Verdict, None], strict=False)
    assert out[0].value == Count(n=3) and out[1].value == Verdict(same=True, reason="same start")
    assert out[2].text.startswith("{") and not hasattr(out[2], "invalid")  # None: the raw response
    # a schema that does not fit its reply is marked invalid for that request only
    out = client.complete_many(reqs[:2], schema=[Verdict, Count], strict=False, json_retries=0)
    assert [r.invalid for r in out] == [True, True]
    with pytest.raises(ValueError, match="2 schemas for 3 requests"):
        client.complete_many(reqs, schema=[Count, Verdict])


# -- cache -----------------------------------------------------------------------------------

def test_cache_hit_makes_no_http_call(tmp_path, api_key, fake_api):
    first = client_for(fake_api, tmp_path).complete(req())
    assert not first.cached and len(fake_api.message_bodies) == 1
    fresh = FakeAnthropic()
    second = client_for(fresh, tmp_path).complete(req())  # new process: loads the file
    assert second.cached and second.text == first.text and fresh.headers == []
    replayed = get_client("replay", cache_dir=tmp_path).complete(req())
    assert replayed.text == first.text and replayed.backend == "replay"


def test_crash_after_k_of_n_then_rerun_makes_n_minus_k_calls(tmp_path, api_key):
    n, k = 10, 4
    reqs = [req(f"pair {i}") for i in range(n)]
    dying = FakeAnthropic(fail_after=k)
    with pytest.raises(anthropic.APIConnectionError):
        client_for(dying, tmp_path, max_concurrency=1).complete_many(reqs)
    assert len(dying.message_bodies) == k
    rerun = FakeAnthropic()
    out = client_for(rerun, tmp_path, max_concurrency=1).complete_many(reqs)
    assert len(rerun.message_bodies) == n - k
    assert [json.loads(r.text)["reason"] for r in out] == [f"pair {i}" for i in range(n)]
    assert [r.cached for r in out] == [True] * k + [False] * (n - k)


def test_crash_with_parallel_calls_rerun_makes_only_missing_calls(tmp_path, api_key):
    reqs = [req(f"pair {i}") for i in range(30)]
    with pytest.raises(anthropic.APIConnectionError):
        client_for(FakeAnthropic(fail_after=12), tmp_path, max_concurrency=4).complete_many(reqs)
    cached = len(ResponseCache(tmp_path))
    assert cached == 12
    rerun = FakeAnthropic()
    client_for(rerun, tmp_path, max_concurrency=4).complete_many(reqs)
    assert len(rerun.message_bodies) == 30 - cached


def test_concurrent_callers_give_valid_cache_without_lost_or_duplicate_records(tmp_path, api_key, fake_api):
    client = client_for(fake_api, tmp_path, max_concurrency=8)
    distinct = [req(f"pair {i}") for i in range(40)]
    workload = distinct * 3  # every request asked three times, concurrently
    threads = [threading.Thread(target=client.complete_many, args=(workload[j::4],)) for j in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    records = [r for r in cache_lines(tmp_path) if r["kind"] == "response"]
    keys = [r["key"] for r in records]
    assert sorted(keys) == sorted(r.key for r in distinct)  # none lost, none duplicated
    assert len(fake_api.message_bodies) == 40  # identical in-flight requests are sent once
    assert [r for r in cache_lines(tmp_path) if r["kind"] == "system"] == [
        {"kind": "system", "sha256": hashlib.sha256(RUBRIC.encode()).hexdigest(), "text": RUBRIC}]


def test_cache_put_from_many_threads(tmp_path):
    cache = ResponseCache(tmp_path)
    reqs = [req(f"r{i}") for i in range(400)]

    def write(part):
        for r in part:
            cache.put(r.key, {"text": r.messages[0].content, "model": r.model, "usage": {}}, r)
            cache.put(reqs[0].key, {"text": "dup", "model": r.model, "usage": {}}, reqs[0])

    threads = [threading.Thread(target=write, args=(reqs[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    reloaded = ResponseCache(tmp_path)
    assert len(reloaded) == 400 and reloaded.duplicates == 0
    assert all(reloaded.get(r.key)["text"] == r.messages[0].content for r in reqs[1:])


def test_truncated_last_line_is_reported_and_repaired(tmp_path, api_key):
    client_for(FakeAnthropic(), tmp_path).complete_many([req("a"), req("b")])
    path = tmp_path / "responses.jsonl"
    good = path.read_bytes()
    path.write_bytes(good + b'{"kind": "response", "key": "abc", "resp')  # died mid-write
    with pytest.warns(CacheRecoveryWarning, match="line 4"):
        cache = ResponseCache(tmp_path)
    assert len(cache) == 2
    with pytest.warns(CacheRecoveryWarning):
        client = client_for(FakeAnthropic(), tmp_path)
    client.complete(req("c"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(ResponseCache(tmp_path)) == 3
    assert path.read_bytes().startswith(good) and b'"resp\n' not in path.read_bytes()


# -- replay, key errors ----------------------------------------------------------------------

def test_replay_miss_names_the_request(tmp_path):
    r = req("Hypothesis A: TP53 loss drives the phenotype. " * 10)
    with pytest.raises(ReplayMissError) as err:
        get_client("replay", cache_dir=tmp_path).complete(r)
    message = str(err.value)
    assert r.key in message and "judge-full-v1" in message and "claude-opus-4-6" in message
    assert f" in {tmp_path / 'responses.jsonl'} (" in message
    assert "Hypothesis A: TP53 loss drives the phenotype." in message
    assert err.value.key == r.key


def test_missing_key_is_a_clear_error(tmp_path, monkeypatch, fake_api):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY") as err:
        client_for(fake_api, tmp_path).complete(req())
    assert "export ANTHROPIC_API_KEY" in str(err.value) and "replay" in str(err.value)
    assert fake_api.headers == []


def test_unknown_backend(tmp_path):
    with pytest.raises(ValueError, match="reference"):
        get_client("reference", cache_dir=tmp_path)


def test_httpx2_client_is_accepted(tmp_path, api_key, fake_api):

    def handler(request: httpx2.Request) -> httpx2.Response:
        response = fake_api(httpx.Request(request.method, str(request.url), headers=request.headers.raw,
                                      content=request.read()))
        return httpx2.Response(response.status_code, json=response.json())

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    out = get_client("anthropic", cache_dir=tmp_path, http_client=http, max_retries=0).complete(req())
    assert json.loads(out.text)["same"] is True and len(fake_api.message_bodies) == 1


# -- ordering, ledger ------------------------------------------------------------------------

def test_complete_many_keeps_input_order_under_concurrency(tmp_path, api_key):
    reqs = [req(f"item {i:03d}") for i in range(60)]
    out = client_for(FakeAnthropic(), tmp_path, max_concurrency=6).complete_many(reqs)
    assert [json.loads(o.text)["reason"] for o in out] == [f"item {i:03d}" for i in range(60)]


def test_ledger_tokens_and_cost(tmp_path, api_key):
    client = client_for(FakeAnthropic(), tmp_path)
    client.complete(req("a"))
    client.complete(req("b"))
    client.complete(req("a"))
    client.complete(req("c", model="claude-unpriced"))
    table = client.ledger().set_index(["model", "mode"])
    api = table.loc[("claude-opus-4-6", "api")]
    assert (api["calls"], api["input_tokens"], api["output_tokens"],
            api["cache_read_input_tokens"]) == (2, 200, 20, 2000)
    expected = (200 * 5.0 + 20 * 25.0 + 2000 * 0.5) / 1e6
    assert api["cost_usd"] == pytest.approx(expected)
    # the repeated "a" is the same request: counted once (as the API call that answered it)
    assert ("claude-opus-4-6", "cache") not in table.index
    assert math.isnan(table.loc[("claude-unpriced", "api"), "cost_usd"])
    assert "claude-unpriced" in client.ledger_summary()
    reread = client_for(FakeAnthropic(), tmp_path)  # a new client (a re-run) reads the cache
    for text in ("a", "b", "a"):
        reread.complete(req(text))
    table = reread.ledger().set_index(["model", "mode"])
    assert table.loc[("claude-opus-4-6", "cache"), "calls"] == 2  # distinct requests served from cache
    assert table.loc[("claude-opus-4-6", "cache"), "cost_usd"] == 0.0


def test_price_table_file(tmp_path):
    default = load_prices()
    assert set(default["models"]) >= {"claude-opus-4-6", "claude-sonnet-4-6"}
    assert 0 < default["batch_discount"] <= 1
    bad = tmp_path / "prices.yaml"
    bad.write_text("models:\n  m:\n    input: 1\n")
    with pytest.raises(ValueError, match="prices.yaml: models.m"):
        load_prices(bad)


# -- batches ---------------------------------------------------------------------------------

def test_batch_flow_submits_only_uncached_and_fills_cache(tmp_path, api_key):
    fake = FakeAnthropic(polls_in_progress=2)
    client = client_for(fake, tmp_path)
    reqs = [req(f"pair {i}") for i in range(5)]
    client.complete(reqs[0])  # already cached
    out = client.complete_many(reqs + [reqs[1]], batch=True, poll_interval=0)
    assert fake.batch_creates == 1 and len(fake.message_bodies) == 1
    [batch] = fake.batches.values()
    assert [item["custom_id"] for item in batch["requests"]] == [r.key for r in reqs[1:]]
    params = batch["requests"][0]["params"]
    assert params["temperature"] == 0.0 and params["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert fake.batch_polls >= 3 and fake.result_fetches == 1  # in_progress, in_progress, ended
    assert [json.loads(o.text)["reason"] for o in out] == [f"pair {i}" for i in range(5)] + ["pair 1"]
    assert len(ResponseCache(tmp_path)) == 5
    records = {r["key"]: r for r in cache_lines(tmp_path) if r["kind"] == "response"}
    assert records[reqs[3].key]["source"] == "batch"
    assert records[reqs[3].key]["request"]["model"] == "claude-opus-4-6"  # the request is kept with its answer
    ledger = client.ledger().set_index(["model", "mode"])
    assert ledger.loc[("claude-opus-4-6", "batch"), "calls"] == 4
    assert ledger.loc[("claude-opus-4-6", "batch"), "cost_usd"] == pytest.approx(
        0.5 * 4 * (100 * 5.0 + 10 * 25.0 + 1000 * 0.5) / 1e6)
    state = BatchState(tmp_path)
    assert state.pending() == {} and [e["event"] for e in state.events()] == ["submitted", "collected"]
    # everything cached: a second batch run submits nothing
    assert client.prefetch_batch(reqs, poll_interval=0) == [] and fake.batch_creates == 1


def test_batch_resumes_from_stored_id_after_process_death(tmp_path, api_key):
    fake = FakeAnthropic(polls_in_progress=3)
    reqs = [req(f"pair {i}") for i in range(4)]
    with pytest.raises(TimeoutError, match="resumes"):
        client_for(fake, tmp_path).prefetch_batch(reqs, poll_interval=0, max_wait=0)
    assert fake.batch_creates == 1 and list(BatchState(tmp_path).pending()) == ["msgbatch_0"]
    assert len(ResponseCache(tmp_path)) == 0
    # a new process (new client) with the same cache folder: polls the stored batch, no resubmission
    used = client_for(fake, tmp_path).prefetch_batch(reqs, poll_interval=0)
    assert used == ["msgbatch_0"] and fake.batch_creates == 1
    assert len(ResponseCache(tmp_path)) == 4 and BatchState(tmp_path).pending() == {}
    replay = get_client("replay", cache_dir=tmp_path).complete_many(reqs)
    assert [json.loads(o.text)["reason"] for o in replay] == [f"pair {i}" for i in range(4)]


def test_batch_errors_keep_successes_and_resubmit_only_failures(tmp_path, api_key):
    fake = FakeAnthropic(polls_in_progress=0)
    reqs = [req(f"pair {i}") for i in range(4)]
    fake.batch_result_type[reqs[2].key] = "errored"
    with pytest.raises(BatchError, match="1 batch request") as err:
        client_for(fake, tmp_path).prefetch_batch(reqs, poll_interval=0)
    assert list(err.value.failed) == [reqs[2].key] and "boom" in err.value.failed[reqs[2].key]
    assert len(ResponseCache(tmp_path)) == 3
    fake.batch_result_type.clear()
    client_for(fake, tmp_path).prefetch_batch(reqs, poll_interval=0)
    assert [i["custom_id"] for i in fake.batches["msgbatch_1"]["requests"]] == [reqs[2].key]


def test_replay_batch_miss(tmp_path):
    with pytest.raises(ReplayMissError):
        get_client("replay", cache_dir=tmp_path).complete_many([req()], batch=True)


def test_sdk_retries_rate_limit_and_server_errors(tmp_path, api_key, fake_api):
    failures = iter([429, 529])

    def flaky(request: httpx.Request) -> httpx.Response:
        status = next(failures, None)
        if status is not None and request.url.path == "/v1/messages":
            return httpx.Response(status, headers={"retry-after-ms": "1"},
                                  json={"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
        return fake_api(request)

    client = client_for(flaky, tmp_path, max_retries=2)
    out = client.complete(req())
    assert json.loads(out.text)["same"] is True and len(fake_api.message_bodies) == 1
    assert len(ResponseCache(tmp_path)) == 1
    failures = iter([500, 500, 500])
    with pytest.raises(anthropic.InternalServerError):
        client.complete(req("another"))
    assert len(ResponseCache(tmp_path)) == 1  # a failed call records nothing


def test_lost_batch_id_is_resubmitted(tmp_path, api_key):
    reqs = [req(f"pair {i}") for i in range(2)]
    BatchState(tmp_path).append({"event": "submitted", "batch_id": "msgbatch_gone", "keys": [r.key for r in reqs]})
    fake = FakeAnthropic(polls_in_progress=0)
    with pytest.warns(UserWarning, match="msgbatch_gone .* no longer exists"):
        used = client_for(fake, tmp_path).prefetch_batch(reqs, poll_interval=0)
    assert used == ["msgbatch_0"] and fake.batch_creates == 1 and len(ResponseCache(tmp_path)) == 2
    assert BatchState(tmp_path).pending() == {}


def test_the_progress_bar_goes_to_the_sessions_progress_stream(tmp_path, api_key, monkeypatch):
    """In a kernel the bar must reach the session's terminal copy, not the cell's stderr."""
    import io

    import mechaudit.llm.session as session_module

    terminal = io.StringIO()
    monkeypatch.setattr(session_module, "in_kernel", lambda: True)
    monkeypatch.setattr(session_module, "terminal_copy", lambda: terminal)
    client_for(FakeAnthropic(lambda body: "fine"), tmp_path).complete_many([req()], progress=True)
    assert "LLM calls (claude-opus-4-6)" in terminal.getvalue()


# -- client settings, defaults and messages ---------------------------------------------------

def test_check_and_require_client_messages():
    from mechaudit.llm.client import check_client, require_client

    with pytest.raises(TypeError) as caught:
        check_client("anthropic")
    assert str(caught.value) == ("field 'client': got the name 'anthropic', not an LLM client; pass "
                                 "ChapterContext.open(params).client or mechaudit.llm.get_client(...), or None offline")
    with pytest.raises(TypeError, match="^field 'judge': got the name 'replay'"):
        check_client("replay", field="judge")
    with pytest.raises(ValueError) as caught:
        require_client(None, "the coach")
    assert str(caught.value) == "the coach needs an LLM client (mechaudit.llm.get_client)"
    with pytest.raises(ValueError, match=r"^the coach needs an LLM client \(mechaudit.llm.get_client\); or not$"):
        require_client(None, "the coach", hint="; or not")


def test_complete_json_defaults_two_repairs_strict_and_reports_the_last_real_call(tmp_path, api_key):
    fake = FakeAnthropic(lambda body: "no verdict here")
    client = client_for(fake, tmp_path)
    with pytest.raises(InvalidJSONError) as caught:
        client.complete_json(req(), Verdict)  # strict by default
    assert len(fake.message_bodies) == 3  # 1 call + 2 repairs by default
    assert "raise json_retries (in a chapter: -p json_retries 4)" in str(caught.value)
    fresh = client_for(fake, tmp_path / "b")
    result = fresh.complete_json(req("other"), Verdict, json_retries=1, strict=False)
    assert result.invalid is True and result.attempts == 2 and result.response.cached is False
    assert len(fake.message_bodies) == 5
    with pytest.raises(InvalidJSONError, match=r"-p json_retries 2\)"):
        fresh.complete_json(req("third"), Verdict, json_retries=0)
    with pytest.raises(ValueError) as caught:
        fresh.complete_json(req(), Verdict, json_retries=-1)
    assert str(caught.value) == "json_retries must be >= 0, got -1"


def test_a_valid_reply_is_marked_valid_in_one_attempt(tmp_path, api_key):
    fake = FakeAnthropic(lambda body: '{"same": true, "reason": "r"}')
    result = client_for(fake, tmp_path).complete_json(req(), Verdict)
    assert result.invalid is False and result.error is None and result.attempts == 1


def test_complete_many_defaults_two_repairs_and_prints_nothing(tmp_path, api_key, capsys):
    fake = FakeAnthropic(lambda body: "no verdict here")
    [result] = client_for(fake, tmp_path).complete_many([req()], Verdict, strict=False)
    assert result.attempts == 3 and len(fake.message_bodies) == 3
    assert capsys.readouterr().err == ""  # no progress bar and no usage summary by default
    client = client_for(fake, tmp_path / "b")
    client.complete_many([req()], summary=True)
    printed = capsys.readouterr()
    assert printed.err == client.ledger_summary() + "\n" and "LLM usage" in printed.err and printed.out == ""


@pytest.mark.parametrize(("n", "bar"), [(19, False), (20, True)])
def test_a_progress_bar_from_twenty_uncached_requests(tmp_path, api_key, capsys, n, bar):
    client_for(FakeAnthropic(lambda body: "fine"), tmp_path).complete_many([req(f"q{i}") for i in range(n)])
    assert ("LLM calls (claude-opus-4-6)" in capsys.readouterr().err) is bar


def test_prefetch_batch_passes_its_settings_and_defaults_to_the_batch_runner(tmp_path, api_key, monkeypatch):
    import mechaudit.llm.client as client_module

    calls = []
    monkeypatch.setattr(client_module, "run_batches", lambda requests, **kw: calls.append((list(requests), kw)) or [])
    client = client_for(FakeAnthropic(lambda body: "fine"), tmp_path, api_version="2023-01-01")
    client.complete_many([req()])  # cached now
    client.prefetch_batch([req()])
    client.prefetch_batch([req()], poll_interval=2.0, batch_size=7, max_wait=9.0, progress=True)
    client.complete_many([req()], progress=True, batch=True)  # batch=True always prefetches
    client.complete_many([req()], batch=True, poll_interval=4.0)
    first = calls[0][1]
    assert first["sdk"] == client.sdk and first["message_params"] == client.message_params
    assert first["cache"] is client.cache and first["ledger"] is client._ledger and first["session"] is client.session
    settings = [{k: kw[k] for k in ("api_version", "poll_interval", "batch_size", "max_wait", "progress")}
                for _, kw in calls]
    assert settings == [
        {"api_version": "2023-01-01", "poll_interval": 30.0, "batch_size": 10_000, "max_wait": None, "progress": False},
        {"api_version": "2023-01-01", "poll_interval": 2.0, "batch_size": 7, "max_wait": 9.0, "progress": True},
        {"api_version": "2023-01-01", "poll_interval": 30.0, "batch_size": 10_000, "max_wait": None, "progress": True},
        {"api_version": "2023-01-01", "poll_interval": 4.0, "batch_size": 10_000, "max_wait": None, "progress": False},
    ]
    assert [r.key for r in calls[0][0]] == [req().key]


def test_openai_sdk_gets_the_clients_settings_and_a_local_server_needs_no_key(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    http = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(500)))
    local = get_client("anthropic", cache_dir=tmp_path, http_client=http, max_retries=2, timeout=12.5,
                       openai_base_url="http://127.0.0.1:8080/v1")
    sdk = local.openai_sdk()
    assert sdk is local.openai_sdk()  # made once
    assert (sdk.api_key, str(sdk.base_url), sdk.max_retries, sdk.timeout) == (
        "local-no-key", "http://127.0.0.1:8080/v1/", 2, 12.5)
    assert sdk._client is local._http_client
    monkeypatch.setenv("OPENAI_API_KEY", " sk-test \n")
    keyed = get_client("anthropic", cache_dir=tmp_path, openai_base_url="http://127.0.0.1:8080/v1")
    assert keyed.openai_sdk().api_key == "sk-test"  # a key in the environment is used, also locally
    assert str(get_client("anthropic", cache_dir=tmp_path).openai_sdk().base_url) == "https://api.openai.com/v1/"
    monkeypatch.delenv("OPENAI_API_KEY")
    remote = get_client("anthropic", cache_dir=tmp_path, openai_base_url="https://llm.example.org/v1")
    with pytest.raises(MissingAPIKeyError) as caught:
        remote.openai_sdk()
    assert str(caught.value) == (
        "OPENAI_API_KEY is not set. OpenAI models read the key only from the environment: run `export "
        "OPENAI_API_KEY=...` in the shell that starts Python or Jupyter, or use backend='replay' with recorded "
        "answers.")
    assert remote._openai is None


class _Bar:
    """A progress bar that counts its steps and can stop the run (as Ctrl-C would) at a step."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.n, self.stop_at = 0, stop_at

    def update(self, k: int) -> None:
        self.n += k
        if self.n == self.stop_at:
            raise KeyboardInterrupt


def _slow_calls(started: list, finished: list, fail: int | None = None, seconds: float = 0.3):
    """``one(i)`` for ``_answer_parallel``: call 0 fails when ``fail == 0``, else it returns once call 1
    has started (at most 5 s); the others take ``seconds``. Records the calls started and finished."""
    import time

    second = threading.Event()

    def one(i: int) -> int:
        started.append(i)
        if i == 1:
            second.set()
        if i == fail:
            raise RuntimeError(f"call {i} failed")
        if i == 0:
            second.wait(5.0)
        else:
            time.sleep(seconds)
        finished.append(i)
        return 10 * i
    return one


def test_parallel_answers_fill_every_slot_and_step_the_bar_once_each(tmp_path):
    client = get_client("replay", cache_dir=tmp_path, max_concurrency=2)
    results, bar, started, finished = [None] * 5, _Bar(), [], []
    client._answer_parallel(_slow_calls(started, finished, seconds=0.01), [0, 1, 2, 4], results, bar)
    assert results == [0, 10, 20, None, 40] and bar.n == 4


def test_the_bar_steps_as_each_answer_comes_back(tmp_path):
    """The second call waits (up to 5 s) for the bar to count the first answer: it must not wait for
    every call to end first."""
    client = get_client("replay", cache_dir=tmp_path, max_concurrency=2)
    counted = threading.Event()

    class Bar:
        def update(self, k: int) -> None:
            counted.set()

    def one(i: int) -> bool:
        return True if i == 0 else counted.wait(5.0)

    results = [None, None]
    client._answer_parallel(one, [0, 1], results, Bar())
    assert results == [True, True]


def test_the_first_error_stops_the_calls_not_yet_started(tmp_path):
    client = get_client("replay", cache_dir=tmp_path, max_concurrency=1)
    started, finished = [], []
    with pytest.raises(RuntimeError, match="^call 0 failed$"):
        client._answer_parallel(_slow_calls(started, finished, fail=0), list(range(8)), [None] * 8, _Bar())
    assert len(started) <= 2 and finished == started[1:]  # at most the next call ran, and it finished


def test_an_interrupt_cancels_the_queued_calls_and_waits_for_the_ones_in_flight(tmp_path):
    """Two calls in flight; the bar stops the run (as Ctrl-C would) at the first answer (call 0, once
    call 1 has started): call 1 (0.3 s) is still running and must finish before the method returns;
    of the six queued calls at most the one a freed worker took first may run."""
    client = get_client("replay", cache_dir=tmp_path, max_concurrency=2)
    started, finished = [], []
    with pytest.raises(KeyboardInterrupt):
        client._answer_parallel(_slow_calls(started, finished), list(range(8)), [None] * 8, _Bar(stop_at=1))
    assert {0, 1} <= set(started) and len(started) <= 3
    assert sorted(finished) == sorted(started)


def test_the_anthropic_sdk_gets_the_clients_settings_once(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", " k-1 \n")
    http = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(500)))
    client = get_client("anthropic", cache_dir=tmp_path, http_client=http, max_retries=3, timeout=12.5)
    sdk = client.sdk()
    assert sdk is client.sdk()  # made once
    assert (sdk.api_key, sdk.max_retries, sdk.timeout, sdk._client is client._http_client) == ("k-1", 3, 12.5, True)
    assert sdk._custom_headers == {"anthropic-version": "2023-06-01"}
    assert get_client("anthropic", cache_dir=tmp_path, api_version=None).sdk()._custom_headers == {}
    default = get_client("anthropic", cache_dir=tmp_path)
    assert (default.max_concurrency, default.max_retries, default.api_version) == (4, 4, "2023-06-01")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "  ")
    with pytest.raises(MissingAPIKeyError) as caught:
        get_client("anthropic", cache_dir=tmp_path).sdk()
    assert str(caught.value) == (
        "ANTHROPIC_API_KEY is not set. The anthropic backend reads the key only from the environment: run "
        "`export ANTHROPIC_API_KEY=...` in the shell that starts Python or Jupyter. Without a key, use "
        "backend='replay' (recorded answers in data/llm_cache/) or the offline backend='reference' stand-ins.")


@pytest.mark.parametrize("bad", [0, -1])
def test_max_concurrency_below_one_is_refused(tmp_path, bad):
    with pytest.raises(ValueError) as caught:
        get_client("replay", cache_dir=tmp_path, max_concurrency=bad)
    assert str(caught.value) == f"max_concurrency must be >= 1, got {bad}"
    assert get_client("replay", cache_dir=tmp_path, max_concurrency=1).max_concurrency == 1


def test_message_params_refuse_a_temperature_the_api_version_rejects(tmp_path):
    def params(api_version, **kw):
        return get_client("replay", cache_dir=tmp_path, api_version=api_version).message_params(req(**kw))

    assert params("2026-10-20", temperature=0.5)["temperature"] == 0.5  # the day before: accepted
    for version, shown in (("2026-10-21", "2026-10-21"), ("2027-01-01", "2027-01-01"), (None, "SDK default")):
        with pytest.raises(ValueError) as caught:
            params(version, temperature=0.5)
        assert str(caught.value) == (f"temperature=0.5 cannot be sent with API version {shown}; use "
                                     "api_version='2023-06-01' or temperature=None")
    assert "temperature" not in params(None, temperature=None)
    assert "system" not in params("2023-06-01", system="")
    assert params("2023-06-01", model="anthropic:claude-opus-4-6")["model"] == "claude-opus-4-6"


def test_a_response_takes_the_records_fields_and_the_requests_model_when_the_record_has_none(tmp_path):
    client = get_client("replay", cache_dir=tmp_path)
    record = {"text": "x", "model": "m-9", "usage": {"input_tokens": 3, "output_tokens": 4},
              "stop_reason": "max_tokens"}
    full = client._response(req(), record, cached=True)
    assert (full.text, full.key, full.model, full.cached) == ("x", req().key, "m-9", True)
    assert full.stop_reason == "max_tokens"
    assert (full.usage.input_tokens, full.usage.output_tokens, full.backend) == (3, 4, "replay")
    bare = client._response(req(), {"text": "y"}, cached=False)
    assert (bare.model, bare.cached, bare.stop_reason, bare.usage.input_tokens) == ("claude-opus-4-6", False, None, 0)


def test_the_progress_bar_counts_every_request_once_under_its_models(tmp_path, api_key, monkeypatch):
    """One cache hit (counted inline) and two answers: the bar ends at 3 of 3, names both models
    and redraws at most once a second."""
    import mechaudit.llm.client as client_module

    bars, real = [], client_module.tqdm
    monkeypatch.setattr(client_module, "tqdm", lambda **kw: bars.append((kw, real(**kw))) or bars[-1][1])
    client = client_for(FakeAnthropic(lambda body: "fine"), tmp_path)
    client.complete(req("a"))
    client.complete_many([req("a"), req("b"), req("c", model="claude-sonnet-4-6")], progress=True)
    settings, bar = bars[-1]
    assert settings["desc"] == "LLM calls (claude-opus-4-6, claude-sonnet-4-6)"
    assert (settings["total"], settings["mininterval"], settings["disable"]) == (3, 1.0, False)
    assert bar.n == 3


def test_the_cache_records_which_api_answered(tmp_path, api_key, fake_api):
    client = client_for(fake_api, tmp_path, api_version="2023-06-01")
    response = client.complete(req())
    record = client.cache.record(response.key)
    assert (record["source"], record["api_version"]) == ("messages", "2023-06-01")


def test_an_answer_stored_between_the_two_lookups_is_read_and_counted_as_a_hit(tmp_path, api_key, fake_api,
                                                                              monkeypatch):
    """Another process may store the answer after the first cache lookup: the lookup under the
    request's lock reads it, sends nothing and counts a cache hit of the request's model."""
    client_for(fake_api, tmp_path).complete(req())
    reader = client_for(fake_api, tmp_path)
    real_get, lookups = reader.cache.get, []
    monkeypatch.setattr(reader.cache, "get", lambda key: lookups.append(key) or (None if len(lookups) == 1
                                                                                 else real_get(key)))
    response = reader.complete(req())
    assert response.cached and len(lookups) == 2 and len(fake_api.message_bodies) == 1
    assert reader.ledger()[["model", "mode", "calls"]].values.tolist() == [["claude-opus-4-6", "cache", 1]]


def test_a_bad_openai_base_url_is_one_error_naming_the_field(tmp_path):
    from mechaudit.errors import MechauditError

    with pytest.raises(MechauditError) as caught:
        get_client("replay", cache_dir=tmp_path, openai_base_url="ftp://x")
    assert caught.value.field == "openai_base_url"
    assert str(caught.value) == ("field 'openai_base_url': 'ftp://x' is not an http(s) URL of an OpenAI-compatible "
                                 "server (e.g. http://localhost:8000/v1)")


def test_a_blindness_error_says_where_the_term_was_found():
    assert str(BlindnessError("run")) == "forbidden term 'run' found in text; the prompt was not sent"
    with pytest.raises(BlindnessError, match=r"^forbidden term 'run' found in text; the prompt was not sent$"):
        check_blind("Run 3 again", ["run"])
    err = BlindnessError("#2", where="message 0 (user)")
    assert (err.term, err.where) == ("#2", "message 0 (user)")


def test_run_batches_polls_every_30_seconds_by_default(tmp_path, api_key, monkeypatch):
    import mechaudit.llm.batch as batch

    slept = []
    monkeypatch.setattr(batch.time, "sleep", slept.append)
    client = client_for(FakeAnthropic(polls_in_progress=1), tmp_path)
    used = batch.run_batches([req("pair 0")], cache=client.cache, ledger=client._ledger, sdk=client.sdk,
                             message_params=client.message_params, session=client.session)
    assert used == ["msgbatch_0"] and slept == [30.0]


def test_a_repair_asks_with_the_schema_in_sorted_keys_and_a_server_schema_is_named_reply():
    from mechaudit.llm.jsonout import repair_request
    from mechaudit.llm.providers import response_format

    fixed = repair_request(req("pair 0"), "not json", "no JSON object", Verdict)
    sorted_schema = json.dumps(Verdict.model_json_schema(), sort_keys=True)
    assert sorted_schema != json.dumps(Verdict.model_json_schema())  # "reason" sorts before "same"
    assert fixed.messages[-1].text().endswith(f"schema:\n{sorted_schema}")
    schema = {"type": "object", "properties": {"same": {"type": "boolean"}}}
    assert response_format(schema) == {"type": "json_schema",
                                       "json_schema": {"name": "reply", "schema": schema, "strict": True}}


def test_an_openai_reply_becomes_a_cache_record_and_a_bad_body_is_shown():
    from types import SimpleNamespace

    from mechaudit.llm.providers import openai_record

    usage = SimpleNamespace(prompt_tokens=10, completion_tokens=0,
                            prompt_tokens_details=SimpleNamespace(cached_tokens=4))
    completion = SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content=None), finish_reason="stop")],
                                 model="local-m", id="c1", usage=usage)
    assert openai_record(completion) == {
        "text": "", "model": "local-m", "stop_reason": "stop", "id": "c1",
        "usage": {"input_tokens": 6, "output_tokens": 0, "cache_read_input_tokens": 4,
                  "cache_creation_input_tokens": 0}}
    with pytest.raises(ValueError, match=r"^OpenAI reply has no choices \(body: '<html>busy</html>'\)$"):
        openai_record("<html>busy</html>")


def test_costs_are_at_full_price_unless_batch_and_an_openai_sdk_retries_four_times():
    from mechaudit.llm.ledger import cost_usd
    from mechaudit.llm.providers import openai_sdk

    usage = {"input_tokens": 1_000_000}
    assert cost_usd("claude-opus-4-6", usage, PRICES) == 5.0
    assert cost_usd("claude-opus-4-6", usage, PRICES, batch=True) == 2.5
    sdk = openai_sdk("sk-test")
    assert (sdk.max_retries, sdk.timeout) == (4, 600.0)


def test_cache_spend_names_an_answer_with_no_model_as_unpriced(tmp_path):
    from mechaudit.llm.ledger import cache_spend

    ResponseCache(tmp_path).put("k1", {"text": "x", "usage": {"input_tokens": 3}})
    spent = cache_spend(tmp_path, 0, PRICES)
    assert spent["unpriced"] == {""} and spent["input_tokens"] == 3 and math.isnan(spent["cost_usd"])


def test_a_request_timeout_must_be_seconds_above_zero_and_names_its_source():
    from mechaudit.errors import MechauditError
    from mechaudit.llm.providers import TIMEOUT_ENV, request_timeout

    with pytest.raises(MechauditError, match=r"^field 'timeout': must be a number of seconds > 0, got -1$"):
        request_timeout(-1)
    with pytest.raises(MechauditError, match=r"^field 'timeout': must be a number of seconds > 0, got True$"):
        request_timeout(True)
    with pytest.raises(MechauditError, match=rf"^field '{TIMEOUT_ENV}': .*got 'soon'$"):
        request_timeout(environ={TIMEOUT_ENV: "soon"})
    assert request_timeout(environ={TIMEOUT_ENV: " 30 "}) == 30.0


def test_a_bad_price_table_names_the_table_the_row_and_the_prices_it_needs():
    for bad in ({}, {"models": ["claude-opus-4-6"]}):
        with pytest.raises(ValueError, match=r"^price table: field 'models' must be a mapping of model -> prices$"):
            load_prices(bad)
    with pytest.raises(ValueError, match=r"^price table: models.m needs numeric input, output, cache_read, "
                                         r"cache_write \("):
        load_prices({"models": {"m": {"input": 1.0}}})
    with pytest.raises(ValueError, match=r"^price table: endpoints.http://127.0.0.1:8000/v1 needs numeric input, "
                                         r"output \("):
        load_prices({"models": {}, "endpoints": {"http://127.0.0.1:8000/v1": {"input": 1.0}}})


def test_the_text_of_a_turn_of_blocks_joins_its_text_blocks():
    from mechaudit.llm.request import Message

    turn = Message(role="user", content=[{"type": "text", "text": "first"}, {"type": "image", "source": {}},
                                         {"type": "text", "text": "second"}])
    assert turn.text() == "first\nsecond"

