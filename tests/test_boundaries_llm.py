"""The LLM layer's branches at their boundaries: cache hit or miss, one uncached request or more in
batch mode, a budget that is exactly spent, an unpriced model in every price column, and the run's
remaining budget handed to the next chapter.

The real SDK talks to an in-memory HTTP handler (``httpx.MockTransport``); nothing of ours is mocked.
"""

from __future__ import annotations

import json
import math
import sys
import threading
from types import SimpleNamespace

import httpx
import pandas as pd
import pytest
from fake_anthropic import FakeAnthropic, client_for, message_response

from mechaudit.book.account import RunAccount
from mechaudit.book.chapter import ChapterContext
from mechaudit.llm import LLMRequest, ReplayMissError, get_client
from mechaudit.llm.ledger import load_prices
from mechaudit.llm.pricing import Planned, format_estimate, price_plan, totals
from mechaudit.llm.session import BudgetExceededError, LLMSession

MODEL = "claude-sonnet-4-6"


def req(i: int, model: str = MODEL) -> LLMRequest:
    return LLMRequest(model=model, system="boundary tests", messages=[{"role": "user", "content": f"question {i}"}],
                      max_tokens=16)


class Recorder:
    """An HTTP handler that answers every Messages call, recording the calling thread and the body;
    with ``barrier`` every call waits there first (so calls that run one after another fail)."""

    def __init__(self, barrier: threading.Barrier | None = None) -> None:
        self.barrier, self.threads, self.bodies = barrier, [], []
        self._lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        with self._lock:
            self.threads.append(threading.current_thread().name)
            self.bodies.append(body)
        if self.barrier is not None:
            self.barrier.wait(timeout=20)  # BrokenBarrierError if the calls do not overlap
        return message_response("answer to " + body["messages"][-1]["content"], body["model"])


def _fill(tmp_path, api_key, *indices: int) -> None:
    """Put the answers of ``req(i)`` into the response cache under ``tmp_path``."""
    client_for(Recorder(), tmp_path).complete_many([req(i) for i in indices])


# ---------------------------------------------------------------- cache hit or miss


def test_hits_are_answered_inline_and_misses_in_parallel_through_the_api(tmp_path, api_key):
    _fill(tmp_path, api_key, 0, 1)
    handler = Recorder(barrier=threading.Barrier(2))
    client = client_for(handler, tmp_path, max_concurrency=2)
    out = client.complete_many([req(0), req(2), req(1), req(3)])
    assert [r.text for r in out] == [f"answer to question {i}" for i in (0, 2, 1, 3)]
    assert [r.cached for r in out] == [True, False, True, False]
    # only the two misses reached the API, both from the worker pool and at the same time
    assert sorted(b["messages"][-1]["content"] for b in handler.bodies) == ["question 2", "question 3"]
    assert all(name.startswith("mechaudit-llm") for name in handler.threads), handler.threads
    table = client.ledger().set_index("mode")
    assert table.loc["cache", "calls"] == 2 and table.loc["api", "calls"] == 2


def test_a_single_complete_reads_the_cache_before_sending(tmp_path, api_key):
    _fill(tmp_path, api_key, 0)
    handler = Recorder()
    client = client_for(handler, tmp_path)
    assert client.complete(req(0)).cached and handler.bodies == []
    miss = client.complete(req(1))
    assert not miss.cached and len(handler.bodies) == 1
    assert client.complete(req(1)).cached and len(handler.bodies) == 1  # recorded on the way back


# ---------------------------------------------------------------- batch mode: one uncached request is not a batch


@pytest.mark.parametrize(("cached", "asked", "batches", "messages"), [
    ((), (0,), 0, 1),          # one uncached request: a plain call
    ((0,), (0, 1), 0, 1),      # two asked, one cached: still a plain call
    ((), (0, 1), 1, 0),        # two uncached: one batch
    ((0,), (0, 1, 2), 1, 0),   # two of three uncached: one batch of two
])
def test_batch_mode_sends_a_batch_only_for_two_or_more_uncached_requests(tmp_path, api_key, cached, asked,
                                                                         batches, messages):
    if cached:
        _fill(tmp_path, api_key, *cached)
    fake = FakeAnthropic()
    client = client_for(fake, tmp_path, session=LLMSession(batch=True))
    out = client.complete_many([req(i) for i in asked], poll_interval=0.0)
    assert len(out) == len(asked)
    assert fake.batch_creates == batches
    assert len(fake.message_bodies) == messages
    if batches:
        sent = fake.batches["msgbatch_0"]["requests"]
        assert len(sent) == len(asked) - len(cached)


def test_batch_mode_over_a_full_cache_needs_no_api(tmp_path, api_key):
    # a replay client (never sends) asked for batch mode: every answer is cached, so nothing is missing
    _fill(tmp_path, api_key, 0, 1)
    client = get_client("replay", cache_dir=tmp_path)
    out = client.complete_many([req(0), req(1)], batch=True, poll_interval=0.0)
    assert [r.cached for r in out] == [True, True]
    assert client.prefetch_batch([req(0), req(1)]) == []
    with pytest.raises(ReplayMissError):
        client.prefetch_batch([req(0), req(2)])


# ---------------------------------------------------------------- budget: exactly spent


def test_a_budget_of_zero_answers_from_the_cache_and_sends_nothing(tmp_path, api_key):
    _fill(tmp_path, api_key, 0, 1)
    handler = Recorder()
    client = client_for(handler, tmp_path, session=LLMSession(max_usd=0.0))
    assert [r.cached for r in client.complete_many([req(0), req(1)])] == [True, True]
    with pytest.raises(BudgetExceededError, match="max_usd=0.00 reached"):
        client.complete_many([req(0), req(2)])
    assert handler.bodies == []


def test_a_reservation_that_reaches_the_budget_exactly_is_allowed():
    prices = load_prices()
    from mechaudit.llm.pricing import request_cost

    cost = request_cost(req(0), prices, output="max")
    assert cost > 0
    at = LLMSession(max_usd=cost)
    assert at.reserve([req(0)], prices) == pytest.approx(cost)
    with pytest.raises(BudgetExceededError):
        LLMSession(max_usd=cost * (1 - 1e-6)).reserve([req(0)], prices)
    with pytest.raises(BudgetExceededError):  # the reservation held counts against the next one
        at.reserve([req(0)], prices)


def _account(max_usd: float) -> RunAccount:
    full = {"x": {"backend": "replay", "max_usd": None, "llm_batch": False}}
    return RunAccount(plans=[], params_file=None, overrides={}, full=full, max_usd=max_usd)


@pytest.mark.parametrize(("spent", "left"), [
    (0.0, 1.0), (0.4, 0.6), (1.0, 0.0), (1.0 + 1e-9, 0.0), (1.7, 0.0), (math.nan, 0.0),
])
def test_the_next_chapter_gets_what_is_left_of_the_run_budget_never_less_than_zero(spent, left):
    run = _account(1.0)
    run.totals["cost_usd"] = spent
    injected = run.inject(SimpleNamespace(stem="x"), {})
    assert injected["max_usd"] == pytest.approx(left, abs=1e-6)
    assert injected["max_usd"] >= 0
    # the chapter opens with it: a spent budget is a chapter that answers from the cache only
    ctx = ChapterContext.open({"backend": "replay", **injected}, "05_perturbations")
    assert ctx.session.max_usd == pytest.approx(left, abs=1e-6)


def test_an_overspent_run_lets_the_next_chapter_read_its_cached_answers(tmp_path, api_key):
    _fill(tmp_path, api_key, 0)
    run = _account(0.5)
    run.totals["cost_usd"] = 0.75  # estimates and real costs differ a little: the run went over
    params = run.inject(SimpleNamespace(stem="x"), {})
    ctx = ChapterContext.open({"backend": "anthropic", "cache_dir": str(tmp_path), **params}, "05_perturbations")
    assert ctx.client.complete(req(0)).cached


# ---------------------------------------------------------------- unpriced models: unknown in every column


def test_an_unpriced_model_makes_every_usd_column_and_total_unknown():
    prices = load_prices()
    planned = [Planned("judge", req(0)), Planned("judge", req(1, "no-such-model")),
               Planned("judge", req(2, "no-such-model"))]
    table = price_plan("ch", planned, prices, cached=lambda key: False)
    row = table.set_index("model").loc["no-such-model"]
    for col in ("usd_plain", "usd_batch", "usd_prompt_cached"):
        assert math.isnan(row[col]), col
        assert math.isnan(totals(table)[col]), col
    priced = table.set_index("model").loc[MODEL]
    assert priced.usd_batch == pytest.approx(priced.usd_plain * prices["batch_discount"])
    text = format_estimate(table, batch=True)
    assert "USD plain unknown, batch unknown" in text and "prompt-cached unknown USD" in text
    assert "no price for: no-such-model" in text


def test_a_cached_request_of_an_unpriced_model_costs_nothing_and_keeps_totals_known():
    prices = load_prices()
    table = price_plan("ch", [Planned("judge", req(0)), Planned("judge", req(1, "no-such-model"))], prices,
                       cached=lambda key: key == req(1, "no-such-model").key)
    assert not math.isnan(totals(table)["usd_batch"])


def test_the_terminal_estimate_reads_as_a_table_with_rounded_tokens_and_unknown_costs():
    """Every line of ``format_estimate``: chapters in table order, a long stage wrapped under itself,
    tokens in thousands (``~`` for proxies), unknown USD for an unpriced model and in the totals."""
    from mechaudit.llm.pricing import ESTIMATE_COLUMNS

    stage = "critique, then revise, one step at a time through every chain of the design"
    nan = float("nan")
    estimate = pd.DataFrame([
        ["02_depth", stage, "claude-haiku", True, 40, 10, 30, 12_345, 5_600, 0.0512, 0.0256, 0.04],
        ["02_depth", "label", "local-model", False, 3, 0, 3, 1_500_000, 499, nan, nan, nan],
        ["01_problem", "judge", "claude-haiku", True, 2, 2, 0, 0, 0, 0.0, 0.0, 0.0]], columns=ESTIMATE_COLUMNS)
    expected = """\
LLM cost estimate (prices from the price table; tokens = characters / 3.5; ~: tokens sized from
proxies, see book/rerun.md; prompt-cached prices in --csv):
chapter, stage                         model             to send/all tokens in+out USD plain   batch
02_depth
  critique, then revise, one step at a claude-haiku            30/40        12k+6k      0.05    0.03
    time through every chain of the
    design
  label                                local-model               3/3    ~1,500k+0k   unknown unknown
01_problem
  judge                                claude-haiku              0/2         0k+0k      0.00    0.00
total: 45 requests, 12 cached, 33 to send; USD plain unknown, batch unknown
  prompt-cached unknown USD; 1,512,345 input + 6,099 output tokens (this run: batch)
no price for: local-model (its cost is unknown: add a row to the price table)"""
    assert format_estimate(estimate, batch=True) == expected
    assert format_estimate(estimate) == expected.replace("(this run: batch)", "(this run: plain)")
    priced = format_estimate(estimate.drop(index=1)).splitlines()
    assert priced[-2:] == ["total: 42 requests, 12 cached, 30 to send; USD plain 0.05, batch 0.03",
                           "  prompt-cached 0.04 USD; 12,345 input + 5,600 output tokens (this run: plain)"]
    assert max(len(line) for line in expected.splitlines()) == 100
    assert format_estimate(estimate.iloc[:0]) == (
        "LLM cost estimate: no LLM requests (every chapter runs offline or everything is cached).")


def test_request_cost_by_hand_plain_batch_max_and_at_an_endpoint():
    """15 system tokens (35 characters / 3.5 + 5) and 25 message tokens (70 / 3.5 + 5): 40 in; a
    request of kind "other" expects 200 tokens out (its max_tokens, 1000, with ``output="max"``)."""
    from mechaudit.llm.pricing import request_cost

    prices = {"models": {"m": {"input": 3.0, "output": 15.0}},
              "endpoints": {"http://local:8080/v1": {"input": 1.0, "output": 2.0}}, "batch_discount": 0.5}
    one = LLMRequest(model="m", system="s" * 35, messages=[{"role": "user", "content": "x" * 70}], max_tokens=1000)
    assert request_cost(one, prices) == pytest.approx((40 * 3.0 + 200 * 15.0) / 1e6, rel=1e-12)
    assert request_cost(one, prices, batch=True) == pytest.approx((40 * 3.0 + 200 * 15.0) / 1e6 * 0.5, rel=1e-12)
    assert request_cost(one, prices, output="max") == pytest.approx((40 * 3.0 + 1000 * 15.0) / 1e6, rel=1e-12)
    local = one.model_copy(update={"endpoint": "http://local:8080/v1"})
    assert request_cost(local, prices) == pytest.approx((40 * 1.0 + 200 * 2.0) / 1e6, rel=1e-12)
    assert math.isnan(request_cost(one.model_copy(update={"model": "unpriced"}), prices))


def test_totals_of_an_empty_estimate_are_zero():
    from mechaudit.llm.pricing import ESTIMATE_COLUMNS

    empty = totals(pd.DataFrame(columns=ESTIMATE_COLUMNS))
    assert empty == dict.fromkeys(["requests", "cached", "to_send", "input_tokens", "output_tokens", "usd_plain",
                                   "usd_batch", "usd_prompt_cached"], 0.0)
    assert all(type(v) is float for v in empty.values())


@pytest.mark.parametrize("version, metadata, kind, tokens", [
    ("mechjudge-step-v1.r0", {}, "judge-step", 90), ("mechjudge-full-v1.r1", {"stage": "develop"}, "judge-full", 50),
    ("v1", {"stage": "develop"}, "develop", 400), ("v1", {"stage": "critique"}, "critique", 180),
    ("v1", {"stage": "revise"}, "revise", 630), ("v1", {"task": "engagement"}, "label", 70),
    ("v1", {"kind": "develop"}, "develop", 400), ("v1", {"stage": "judge"}, "other", 200),
    ("v1", {"kind": "custom"}, "custom", 200)])
def test_each_request_kind_has_its_typical_reply_size(version, metadata, kind, tokens):
    from mechaudit.llm.pricing import kind_of, output_tokens

    request = req(0).model_copy(update={"version": version, "metadata": metadata, "max_tokens": 1000})
    assert kind_of(request) == kind and output_tokens(request) == tokens
    assert output_tokens(request.model_copy(update={"max_tokens": 40})) == 40  # capped by max_tokens
    assert output_tokens(request, "max") == 1000


def test_price_plan_counts_what_an_earlier_chapter_saw_as_cached_and_adds_what_it_sees():
    prices = load_prices()
    seen = {req(0).key}
    table = price_plan("ch", [Planned("judge", req(0)), Planned("judge", req(1))], prices, cached=lambda key: False,
                       seen=seen)
    assert table.loc[0, ["requests", "cached", "to_send"]].tolist() == [2, 1, 1]
    assert seen == {req(0).key, req(1).key}


def test_price_plan_by_hand():
    """Each request: 40 tokens in (15 of them the system prompt), 200 out. Stage "s": a proxy, one
    request twice (the second counts as cached), one already in the store; the two sent share a
    system prompt, so prompt caching writes it once and reads it once. Stage "local": one request
    at an endpoint with its own prices. Stage "u": an unpriced model."""
    from mechaudit.llm.pricing import ESTIMATE_COLUMNS

    prices = {"models": {"m": {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_write": 3.75}},
              "endpoints": {"http://e/v1": {"input": 1.0, "output": 2.0, "cache_read": 0.1, "cache_write": 1.25}},
              "batch_discount": 0.5}

    def one(fill, system="s", **kw):
        return LLMRequest(model="m", system=system * 35, messages=[{"role": "user", "content": fill * 70}],
                          max_tokens=1000, **kw)

    r1, r2, stored = one("x"), one("y"), one("z")
    local = one("x", system="t", endpoint="http://e/v1", cache_system=False)
    local2, unpriced = local.model_copy(update={"version": "v2"}), one("x").model_copy(update={"model": "u9"})
    planned = [Planned("s", r1), Planned("s", r2, exact=False), Planned("s", r1), Planned("s", stored),
               Planned("u", unpriced), Planned("local", local), Planned("local", local2)]
    seen: set[str] = set()
    table = price_plan("ch", planned, prices, cached=lambda key: key == stored.key, seen=seen,
                       min_cache_tokens={"m": 15})  # the system prompt has exactly the minimum
    plain = (40 * 3.0 + 200 * 15.0) / 1e6
    write, read = (25 * 3.0 + 15 * 3.75 + 200 * 15.0) / 1e6, (25 * 3.0 + 15 * 0.3 + 200 * 15.0) / 1e6
    local_plain = (40 * 1.0 + 200 * 2.0) / 1e6  # no prompt caching asked: plain
    nan = float("nan")
    expected = pd.DataFrame([
        ["ch", "s", "m", False, 4, 2, 2, 80, 400, 2 * plain, plain, write + read],
        ["ch", "u", "u9", True, 1, 0, 1, 40, 200, nan, nan, nan],
        ["ch", "local", "m", True, 2, 0, 2, 80, 400, 2 * local_plain, local_plain, 2 * local_plain]],
        columns=ESTIMATE_COLUMNS)
    pd.testing.assert_frame_equal(table, expected, check_exact=False, rtol=1e-12, atol=0)
    assert seen == {r1.key, r2.key, stored.key, local.key, local2.key, unpriced.key}


def test_input_tokens_count_an_overhead_per_turn_and_none_for_an_empty_system():
    from mechaudit.llm.pricing import input_tokens

    turns = [{"role": "user", "content": "x" * 70}, {"role": "assistant", "content": "y" * 7},
             {"role": "user", "content": "z" * 7}]
    assert input_tokens(LLMRequest(model="m", system="", messages=turns)) == (0, 24 + 3 * 5)
    assert input_tokens(LLMRequest(model="m", system="s" * 36, messages=turns)) == (11 + 5, 16 + 24 + 3 * 5)


def test_min_cache_tokens_per_model_default_1024(tmp_path):
    from mechaudit.llm.pricing import load_min_cache_tokens

    table = tmp_path / "prices.yaml"
    table.write_text("models:\n  a:\n    min_cache_tokens: 2048\n  b:\n    input: 1.0\n  c: not a row\n",
                     encoding="utf-8")
    assert load_min_cache_tokens(table) == {"a": 2048, "b": 1024}
    (tmp_path / "empty.yaml").write_text("", encoding="utf-8")
    assert load_min_cache_tokens(tmp_path / "empty.yaml") == {}


def test_the_terminal_estimate_with_an_empty_stage_long_totals_and_two_unpriced_models():
    from mechaudit.llm.pricing import ESTIMATE_COLUMNS

    nan = float("nan")
    estimate = pd.DataFrame([["ch", "", "a9", True, 1, 0, 1, 123_456_789_012_345, 98_765_432_109_876, 0.5, 0.25, 0.5],
                             ["ch", "x", "u1", True, 1, 0, 1, 0, 0, nan, nan, nan],
                             ["ch", "x", "u2", True, 1, 0, 1, 0, 0, nan, nan, nan]], columns=ESTIMATE_COLUMNS)
    lines = format_estimate(estimate).splitlines()
    assert lines[4].startswith("  " + " " * 36 + " a9 ")
    assert lines[-3:] == ["  prompt-cached unknown USD; 123,456,789,012,345 input + 98,765,432,109,876 output tokens "
                          "(this run:", "  plain)",
                          "no price for: u1, u2 (its cost is unknown: add a row to the price table)"]


def test_the_price_table_is_read_as_utf8_whatever_the_locale(tmp_path, ascii_locale):
    from mechaudit.llm.pricing import load_min_cache_tokens

    table = tmp_path / "prices.yaml"
    table.write_text("# prix en dollars US \u2014 \u00e0 v\u00e9rifier\nmodels:\n  mod\u00e8le-1:\n"
                     "    input: 1.0\n    output: 2.0\n    min_cache_tokens: 2048\n", encoding="utf-8")
    assert load_min_cache_tokens(table) == {"mod\u00e8le-1": 2048}


def test_the_run_question_and_total_line_say_what_was_priced_and_what_went_wrong():
    run = _account(2.0)
    assert run.prompt() == "Send about 0 requests for about 0.00 USD (plain prices, budget 2.00 USD)? [y/N] "
    batch = RunAccount(plans=[], params_file=None, overrides={}, full={}, batch=True)
    assert batch.prompt() == "Send about 0 requests for about 0.00 USD (batch prices, no budget limit)? [y/N] "
    run.totals.update(calls=3, batch_calls=1, input_tokens=1200, output_tokens=30, cost_usd=0.5,
                      unpriced={"m-b", "m-a"}, resent=2, unanswered=1)
    run.chapters_run = 1
    assert run.total_line() == (
        "LLM run total: 3 requests sent (1 by batch) in 1 LLM chapter(s), 1,200 input + 30 output tokens, 0 "
        "cache-read, 0.50 USD of max_usd 2.00 (no price for: m-a, m-b); 2 of them had been sent by an earlier run "
        "that got no answer for them (stopped while they were in flight): those were likely paid twice; 1 "
        "request(s) sent got no answer (an error, or in flight when the run stopped; they may have been paid for): "
        "a re-run sends them again (prices from params/prices.yaml; answers are cached: a re-run sends nothing "
        "again)")


def test_the_run_question_prices_the_estimate_at_the_runs_mode():
    table = pd.DataFrame({"requests": [4], "cached": [1], "to_send": [3], "input_tokens": [100], "output_tokens": [10],
                          "usd_plain": [0.5], "usd_batch": [0.25], "usd_prompt_cached": [0.4]})
    for batch, usd in ((True, "0.25"), (False, "0.50")):
        run = RunAccount(plans=[], params_file=None, overrides={}, full={}, batch=batch)
        run.estimate = table
        assert run.prompt().startswith(f"Send about 3 requests for about {usd} USD")


def _live_account(**kw) -> RunAccount:
    """A run of one live chapter "ch" whose estimate sends 2 requests to Claude and 1 to an unpriced
    OpenAI model."""
    planned = [Planned("judge", req(0)), Planned("judge", req(1)), Planned("judge", req(2, "gpt-unpriced-x"))]
    run = RunAccount(plans=[], params_file=None, overrides={}, full={"ch": {"backend": "anthropic"}}, **kw)
    run.estimate = price_plan("ch", planned, load_prices(), cached=lambda key: False).assign(chapter="ch")
    return run


def test_a_run_needs_the_keys_of_the_servers_it_sends_to_and_prices_for_its_models(capsys):
    from mechaudit.llm.errors import MissingAPIKeyError
    from mechaudit.llm.session import UnpricedModelError

    run = _live_account(base_url="http://example.org/v1")
    assert run.to_send() == {MODEL: 2, "gpt-unpriced-x": 1}
    with pytest.raises(MissingAPIKeyError, match=r"^ANTHROPIC_API_KEY is not set, and this run would send requests "
                                                 rf"\(2 to {MODEL}\): run `export ANTHROPIC_API_KEY=\.\.\.`"):
        run.check_keys({})
    with pytest.raises(MissingAPIKeyError, match=r"^OPENAI_API_KEY is not set, .*\(1 to gpt-unpriced-x\)"):
        run.check_keys({"ANTHROPIC_API_KEY": "k"})
    _live_account(base_url="http://127.0.0.1:8080/v1").check_keys({"ANTHROPIC_API_KEY": "k"})  # a local server
    with pytest.raises(UnpricedModelError, match=r"^no price for 'gpt-unpriced-x' \(1 requests to send\)"):
        run.check_prices(allow_unpriced=False)
    batch = _live_account(batch=True)
    batch.print_estimate(sys.stdout)
    assert capsys.readouterr().out == format_estimate(batch.estimate, batch=True) + "\n"
    assert "(this run: batch)" in format_estimate(batch.estimate, batch=True)



def test_prompt_cached_price_writes_each_system_prompt_once_then_reads_it():
    """The first request with a (model, system prompt) pays the cache-write rate for its system tokens,
    later ones with the same pair the cache-read rate; another system prompt is written anew. By hand:
    15 system tokens (35 characters / 3.5 + 5) each, other input and output as ``input_tokens`` and
    ``output_tokens`` give them."""
    from mechaudit.llm.pricing import input_tokens, output_tokens

    rate = {"input": 3.0, "output": 15.0, "cache_write": 3.75, "cache_read": 0.3}
    prices = {"models": {"m": rate}, "batch_discount": 0.5}

    def ask(system: str, i: int) -> LLMRequest:
        return LLMRequest(model="m", system=system, messages=[{"role": "user", "content": f"q{i}"}], max_tokens=16)

    a, b = "a" * 35, "b" * 35
    planned = [Planned("judge", ask(a, 0)), Planned("judge", ask(a, 1)), Planned("judge", ask(b, 2))]
    table = price_plan("ch", planned, prices, cached=lambda key: False, min_cache_tokens={"m": 1})
    system_rates = [rate["cache_write"], rate["cache_read"], rate["cache_write"]]
    want = 0.0
    for item, system_rate in zip(planned, system_rates):
        system, total = input_tokens(item.request)
        assert system == 15
        want += ((total - system) * rate["input"] + system * system_rate
                 + output_tokens(item.request) * rate["output"]) / 1e6
    assert table["usd_prompt_cached"].item() == pytest.approx(want, rel=1e-12)
    # below the model's minimum cacheable length every request pays the plain price
    plain = price_plan("ch", planned, prices, cached=lambda key: False, min_cache_tokens={"m": 16})
    assert plain["usd_prompt_cached"].item() == pytest.approx(plain["usd_plain"].item(), rel=1e-12)
