"""The LLM layer against a faked HTTP transport (httpx.MockTransport handed to the real SDK).

Nothing here reaches the network and nothing of ``mechaudit.llm`` is mocked: the SDK builds and
sends real HTTP requests, the fake only answers them.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import warnings
from pathlib import Path

import anthropic
import httpx
import httpx2
import pytest
from fake_anthropic import message_json as reply_body
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

FAKE_KEY = "sk-ant-" + "test-0123456789abcdef"  # split so no key-like string is tracked
RUBRIC = "You judge whether two hypotheses describe the same mechanism. " * 40
PRICES = {
    "batch_discount": 0.5,
    "models": {"claude-opus-4-6": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_read": 0.5}},
}


class Verdict(BaseModel):
    same: bool
    reason: str


class FakeAPI:
    """An in-memory stand-in for the Anthropic HTTP API (Messages + Message Batches).

    ``reply(body) -> str`` chooses the assistant text; ``fail_after`` makes every Messages call
    after that many raise a connection error (a dying network / process).
    """

    def __init__(self, reply=None, fail_after: int | None = None, polls_in_progress: int = 1):
        self.reply = reply or (lambda body: json.dumps({"same": True, "reason": body["messages"][-1]["content"][:20]}))
        self.fail_after = fail_after
        self.polls_in_progress = polls_in_progress
        self.message_bodies: list[dict] = []
        self.headers: list[httpx.Headers] = []
        self.batches: dict[str, dict] = {}
        self.batch_creates = 0
        self.batch_polls = 0
        self.result_fetches = 0
        self.batch_result_type: dict[str, str] = {}  # custom_id -> non-success type
        self._lock = threading.Lock()

    def message_json(self, body: dict, text: str) -> dict:
        return reply_body(text, body["model"], f"msg_{len(self.message_bodies)}",
                            {"input_tokens": 100, "output_tokens": 10,
                             "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 0})

    def batch_json(self, batch_id: str, base: str) -> dict:
        state = self.batches[batch_id]
        ended = state["polls"] > self.polls_in_progress
        n = len(state["requests"])
        return {
            "id": batch_id, "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {"processing": 0 if ended else n, "succeeded": n if ended else 0,
                               "errored": 0, "canceled": 0, "expired": 0},
            "created_at": "2026-11-30T00:00:00Z", "expires_at": "2026-12-01T00:00:00Z",
            "ended_at": "2026-11-30T01:00:00Z" if ended else None,
            "results_url": f"{base}/v1/messages/batches/{batch_id}/results" if ended else None,
            "archived_at": None, "cancel_initiated_at": None,
        }

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        base = f"{request.url.scheme}://{request.url.netloc.decode()}"
        with self._lock:
            self.headers.append(request.headers)
            if request.method == "POST" and path == "/v1/messages":
                body = json.loads(request.content)
                if self.fail_after is not None and len(self.message_bodies) >= self.fail_after:
                    raise httpx.ConnectError("fake network died", request=request)
                self.message_bodies.append(body)
                return httpx.Response(200, json=self.message_json(body, self.reply(body)))
            if request.method == "POST" and path == "/v1/messages/batches":
                self.batch_creates += 1
                batch_id = f"msgbatch_{len(self.batches)}"
                self.batches[batch_id] = {"requests": json.loads(request.content)["requests"], "polls": 0}
                return httpx.Response(200, json=self.batch_json(batch_id, base))
            if request.method == "GET" and path.endswith("/results"):
                self.result_fetches += 1
                batch_id = path.split("/")[-2]
                lines = []
                for item in self.batches[batch_id]["requests"]:
                    kind = self.batch_result_type.get(item["custom_id"], "succeeded")
                    if kind == "succeeded":
                        result = {
                            "type": "succeeded",
                            "message": self.message_json(item["params"], self.reply(item["params"])),
                        }
                    else:
                        result = {
                            "type": "errored",
                            "error": {"type": "error", "error": {"type": "api_error", "message": "boom"}},
                        }
                    lines.append(json.dumps({"custom_id": item["custom_id"], "result": result}))
                return httpx.Response(200, content=("\n".join(lines) + "\n").encode(),
                                      headers={"content-type": "application/binary"})
            if request.method == "GET" and path.startswith("/v1/messages/batches/"):
                self.batch_polls += 1
                batch_id = path.rsplit("/", 1)[-1]
                if batch_id not in self.batches:
                    return httpx.Response(
                        404, json={"type": "error", "error": {"type": "not_found_error", "message": batch_id}}
                    )
                self.batches[batch_id]["polls"] += 1
                return httpx.Response(200, json=self.batch_json(batch_id, base))
        return httpx.Response(404, json={"type": "error", "error": {"type": "not_found_error", "message": path}})


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    return FAKE_KEY


def client_for(fake: FakeAPI, cache_dir: Path, **kw):
    http = httpx.Client(transport=httpx.MockTransport(fake))
    kw.setdefault("max_retries", 0)
    return get_client("anthropic", cache_dir=cache_dir, http_client=http, prices=PRICES, **kw)


def req(text: str = "Compare hypothesis A with hypothesis B.", **kw) -> LLMRequest:
    kw.setdefault("model", "claude-opus-4-6")
    kw.setdefault("system", RUBRIC)
    kw.setdefault("version", "judge-full-v1")
    kw.setdefault("max_tokens", 512)
    return LLMRequest(messages=[{"role": "user", "content": text}], **kw)


def cache_lines(cache_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (cache_dir / "responses.jsonl").read_text().splitlines()]


# -- request, key, blindness -----------------------------------------------------------------

def test_request_body_sent_by_sdk(tmp_path, api_key):
    fake = FakeAPI()
    client_for(fake, tmp_path).complete(req("Pair 1", forbidden_terms=("run-7", "score")))
    [body] = fake.message_bodies
    assert body["model"] == "claude-opus-4-6"
    assert body["temperature"] == 0.0
    assert body["max_tokens"] == 512
    assert body["system"] == [{"type": "text", "text": RUBRIC, "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": "Pair 1"}]
    assert set(body) == {"model", "temperature", "max_tokens", "system", "messages"}  # no metadata leaks
    headers = fake.headers[0]
    assert headers["anthropic-version"] == "2023-06-01"  # the version that accepts temperature
    assert FAKE_KEY in headers.get("authorization", "") + headers.get("x-api-key", "")
    for term in ("run-7", "score"):
        assert term not in json.dumps(body).lower()


def test_uncached_system_prompt_and_default_temperature(tmp_path, api_key):
    fake = FakeAPI()
    client = client_for(fake, tmp_path)
    client.complete(req(cache_system=False, temperature=None))
    assert fake.message_bodies[0]["system"] == RUBRIC and "temperature" not in fake.message_bodies[0]
    with pytest.raises(ValueError, match="temperature"):
        client_for(fake, tmp_path, api_version="2026-10-21").complete(req("new"))
    assert len(fake.message_bodies) == 1


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


def test_forbidden_term_refused_before_any_send_or_lookup(tmp_path, api_key):
    fake = FakeAPI()
    client = client_for(fake, tmp_path)
    bad = req("Run A scored 7.5 by reviewer gpt", forbidden_terms=("7.5",))
    with pytest.raises(BlindnessError, match="7.5"):
        client.complete(bad)
    with pytest.raises(BlindnessError):
        client.complete_many([req("fine", forbidden_terms=("7.5",)), bad])
    with pytest.raises(BlindnessError, match="system prompt"):
        client.complete(req("ok", system="anchor id ANC-1", forbidden_terms=("anc-1",)))
    assert all("7.5" not in m["messages"][-1]["content"] for m in fake.message_bodies)
    assert not (tmp_path / "responses.jsonl").exists() or all(
        "7.5" not in json.dumps(r) for r in cache_lines(tmp_path))


# -- structured output -----------------------------------------------------------------------

def test_extract_json_variants():
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('Sure:\n```json\n{"a": 2}\n```\nDone.') == {"a": 2}
    assert extract_json('My verdict is {"a": 3} as asked.') == {"a": 3}
    with pytest.raises(ValueError, match="no JSON"):
        extract_json("same, I think")


def test_repair_round_trip(tmp_path, api_key):
    replies = iter(['{"same": "perhaps"}', '```json\n{"same": false, "reason": "different start"}\n```'])
    fake = FakeAPI(reply=lambda body: next(replies))
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
    fake = FakeAPI(reply=lambda body: "They look the same to me.")
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

    client = client_for(FakeAPI(reply=reply), tmp_path)
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

def test_cache_hit_makes_no_http_call(tmp_path, api_key):
    fake = FakeAPI()
    first = client_for(fake, tmp_path).complete(req())
    assert not first.cached and len(fake.message_bodies) == 1
    fresh = FakeAPI()
    second = client_for(fresh, tmp_path).complete(req())  # new process: loads the file
    assert second.cached and second.text == first.text and fresh.headers == []
    replayed = get_client("replay", cache_dir=tmp_path).complete(req())
    assert replayed.text == first.text and replayed.backend == "replay"


def test_crash_after_k_of_n_then_rerun_makes_n_minus_k_calls(tmp_path, api_key):
    n, k = 10, 4
    reqs = [req(f"pair {i}") for i in range(n)]
    dying = FakeAPI(fail_after=k)
    with pytest.raises(anthropic.APIConnectionError):
        client_for(dying, tmp_path, max_concurrency=1).complete_many(reqs)
    assert len(dying.message_bodies) == k
    rerun = FakeAPI()
    out = client_for(rerun, tmp_path, max_concurrency=1).complete_many(reqs)
    assert len(rerun.message_bodies) == n - k
    assert [json.loads(r.text)["reason"] for r in out] == [f"pair {i}" for i in range(n)]
    assert [r.cached for r in out] == [True] * k + [False] * (n - k)


def test_crash_with_parallel_calls_rerun_makes_only_missing_calls(tmp_path, api_key):
    reqs = [req(f"pair {i}") for i in range(30)]
    with pytest.raises(anthropic.APIConnectionError):
        client_for(FakeAPI(fail_after=12), tmp_path, max_concurrency=4).complete_many(reqs)
    cached = len(ResponseCache(tmp_path))
    assert cached == 12
    rerun = FakeAPI()
    client_for(rerun, tmp_path, max_concurrency=4).complete_many(reqs)
    assert len(rerun.message_bodies) == 30 - cached


def test_concurrent_callers_give_valid_cache_without_lost_or_duplicate_records(tmp_path, api_key):
    fake = FakeAPI()
    client = client_for(fake, tmp_path, max_concurrency=8)
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
    assert len(fake.message_bodies) == 40  # identical in-flight requests are sent once
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
    client_for(FakeAPI(), tmp_path).complete_many([req("a"), req("b")])
    path = tmp_path / "responses.jsonl"
    good = path.read_bytes()
    path.write_bytes(good + b'{"kind": "response", "key": "abc", "resp')  # died mid-write
    with pytest.warns(CacheRecoveryWarning, match="line 4"):
        cache = ResponseCache(tmp_path)
    assert len(cache) == 2
    with pytest.warns(CacheRecoveryWarning):
        client = client_for(FakeAPI(), tmp_path)
    client.complete(req("c"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(ResponseCache(tmp_path)) == 3
    assert path.read_bytes().startswith(good) and b'"resp\n' not in path.read_bytes()


def test_corrupt_middle_line_names_file_and_line(tmp_path):
    (tmp_path / "responses.jsonl").write_text('{"kind": "system", "sha256": "x", "text": "t"}\nnot json\n{}\n')
    with pytest.raises(ValueError, match=r"responses.jsonl, line 2"):
        ResponseCache(tmp_path)


# -- replay, key errors ----------------------------------------------------------------------

def test_replay_miss_names_the_request(tmp_path):
    r = req("Hypothesis A: TP53 loss drives the phenotype. " * 10)
    with pytest.raises(ReplayMissError) as err:
        get_client("replay", cache_dir=tmp_path).complete(r)
    message = str(err.value)
    assert r.key in message and "judge-full-v1" in message and "claude-opus-4-6" in message
    assert "Hypothesis A: TP53 loss drives the phenotype." in message
    assert err.value.key == r.key


def test_missing_key_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    fake = FakeAPI()
    with pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY") as err:
        client_for(fake, tmp_path).complete(req())
    assert "export ANTHROPIC_API_KEY" in str(err.value) and "replay" in str(err.value)
    assert fake.headers == []


def test_unknown_backend(tmp_path):
    with pytest.raises(ValueError, match="reference"):
        get_client("reference", cache_dir=tmp_path)


def test_httpx2_client_is_accepted(tmp_path, api_key):
    fake = FakeAPI()

    def handler(request: httpx2.Request) -> httpx2.Response:
        response = fake(httpx.Request(request.method, str(request.url), headers=request.headers.raw,
                                      content=request.read()))
        return httpx2.Response(response.status_code, json=response.json())

    http = httpx2.Client(transport=httpx2.MockTransport(handler))
    out = get_client("anthropic", cache_dir=tmp_path, http_client=http, max_retries=0).complete(req())
    assert json.loads(out.text)["same"] is True and len(fake.message_bodies) == 1


# -- ordering, ledger ------------------------------------------------------------------------

def test_complete_many_keeps_input_order_under_concurrency(tmp_path, api_key):
    reqs = [req(f"item {i:03d}") for i in range(60)]
    out = client_for(FakeAPI(), tmp_path, max_concurrency=6).complete_many(reqs)
    assert [json.loads(o.text)["reason"] for o in out] == [f"item {i:03d}" for i in range(60)]


def test_ledger_tokens_and_cost(tmp_path, api_key):
    client = client_for(FakeAPI(), tmp_path)
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
    reread = client_for(FakeAPI(), tmp_path)  # a new client (a re-run) reads the cache
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
    fake = FakeAPI(polls_in_progress=2)
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
    ledger = client.ledger().set_index(["model", "mode"])
    assert ledger.loc[("claude-opus-4-6", "batch"), "calls"] == 4
    assert ledger.loc[("claude-opus-4-6", "batch"), "cost_usd"] == pytest.approx(
        0.5 * 4 * (100 * 5.0 + 10 * 25.0 + 1000 * 0.5) / 1e6)
    state = BatchState(tmp_path)
    assert state.pending() == {} and [e["event"] for e in state.events()] == ["submitted", "collected"]
    # everything cached: a second batch run submits nothing
    assert client.prefetch_batch(reqs, poll_interval=0) == [] and fake.batch_creates == 1


def test_batch_resumes_from_stored_id_after_process_death(tmp_path, api_key):
    fake = FakeAPI(polls_in_progress=3)
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
    fake = FakeAPI(polls_in_progress=0)
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


def test_sdk_retries_rate_limit_and_server_errors(tmp_path, api_key):
    fake = FakeAPI()
    failures = iter([429, 529])

    def flaky(request: httpx.Request) -> httpx.Response:
        status = next(failures, None)
        if status is not None and request.url.path == "/v1/messages":
            return httpx.Response(status, headers={"retry-after-ms": "1"},
                                  json={"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
        return fake(request)

    http = httpx.Client(transport=httpx.MockTransport(flaky))
    client = get_client("anthropic", cache_dir=tmp_path, http_client=http, max_retries=2, prices=PRICES)
    out = client.complete(req())
    assert json.loads(out.text)["same"] is True and len(fake.message_bodies) == 1
    assert len(ResponseCache(tmp_path)) == 1
    failures = iter([500, 500, 500])
    with pytest.raises(anthropic.InternalServerError):
        client.complete(req("another"))
    assert len(ResponseCache(tmp_path)) == 1  # a failed call records nothing


def test_lost_batch_id_is_resubmitted(tmp_path, api_key):
    reqs = [req(f"pair {i}") for i in range(2)]
    BatchState(tmp_path).append({"event": "submitted", "batch_id": "msgbatch_gone", "keys": [r.key for r in reqs]})
    fake = FakeAPI(polls_in_progress=0)
    with pytest.warns(UserWarning, match="msgbatch_gone .* no longer exists"):
        used = client_for(fake, tmp_path).prefetch_batch(reqs, poll_interval=0)
    assert used == ["msgbatch_0"] and fake.batch_creates == 1 and len(ResponseCache(tmp_path)) == 2
    assert BatchState(tmp_path).pending() == {}
