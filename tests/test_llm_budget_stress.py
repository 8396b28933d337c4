"""The budget under concurrency: slow calls in flight and replies that use all of ``max_tokens``.

The spend must never pass ``max_usd``. Two ways to break it, each caught here: ignoring what is
reserved for requests still in flight (every concurrent call sees the same, low spend), and
reserving a typical reply length instead of ``max_tokens`` (a reply may be that long). Both paths
are driven through the real SDK against the fake API: the Messages API with 4 concurrent calls, and
4 concurrent Message Batches.
"""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from fake_anthropic import FakeAnthropic, client_for

from mechaudit.llm import LLMRequest
from mechaudit.llm.ledger import load_prices
from mechaudit.llm.pricing import TYPICAL_OUTPUT, input_tokens
from mechaudit.llm.session import BudgetExceededError, LLMSession

MODEL = "claude-opus-4-6"
MAX_TOKENS = 4000  # far above the typical reply of 200 tokens: a long reply costs 20x a typical one
N_REQUESTS = 12
CONCURRENCY = 4


def requests(tag: str, n: int = N_REQUESTS) -> list[LLMRequest]:
    return [LLMRequest(model=MODEL, system="You answer in JSON.", max_tokens=MAX_TOKENS,
                       messages=[{"role": "user", "content": f"{tag} question {k}: is it the same?"}])
            for k in range(n)]


def worst_cost(request: LLMRequest, batch: bool = False) -> float:
    """The independent worst case: estimated input + every ``max_tokens`` token, at list prices."""
    prices = load_prices()
    row = prices["models"][MODEL]
    usd = (input_tokens(request)[1] * row["input"] + request.max_tokens * row["output"]) / 1e6
    return usd * (prices["batch_discount"] if batch else 1.0)


def long_replies(reqs: list[LLMRequest]) -> FakeAnthropic:
    """A fake whose every reply reports the estimated input tokens and ``max_tokens`` output tokens."""
    tokens_in = {r.messages[0].content: input_tokens(r)[1] for r in reqs}

    def usage_of(body: dict, text: str) -> dict:
        return {"input_tokens": tokens_in[body["messages"][0]["content"]], "output_tokens": body["max_tokens"]}

    return FakeAnthropic(reply=lambda body: json.dumps({"same": True}), usage=usage_of, polls_in_progress=3)


class Slow:
    """A transport handler that holds each Messages call for ``delay`` seconds before the fake
    answers (outside the fake's lock), so calls overlap; it records the most calls in flight."""

    def __init__(self, fake: FakeAnthropic, delay: float) -> None:
        self.fake, self.delay = fake, delay
        self.in_flight = self.most_in_flight = 0
        self._lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
            return self.fake(request)
        finally:
            with self._lock:
                self.in_flight -= 1


@pytest.fixture
def fresh_session(api_key):
    """A session each test sets its budget on; every client of the test spends from it."""
    with LLMSession() as session:
        yield session


def test_concurrent_slow_long_replies_never_pass_the_budget_messages_api(tmp_path, fresh_session):
    reqs = requests("messages")
    worst = worst_cost(reqs[0])
    assert MAX_TOKENS >= 10 * TYPICAL_OUTPUT["other"]  # reserving a typical reply would let far more through
    cap = 6.5 * worst  # room for 6 worst-case calls
    fresh_session.max_usd = cap
    handler = Slow(long_replies(reqs), delay=0.15)
    client = client_for(handler, tmp_path / "cache", max_concurrency=CONCURRENCY, session=fresh_session)
    with pytest.raises(BudgetExceededError, match="held for requests in flight|could cost up to"):
        client.complete_many(reqs)
    spent = fresh_session.spent()
    assert handler.most_in_flight == CONCURRENCY  # the calls did overlap
    assert spent <= cap + 1e-12, f"spent {spent:.4f} USD over the cap {cap:.4f}"
    assert spent >= 3 * worst  # and the budget was used, not refused from the start
    assert len(handler.fake.message_bodies) == round(spent / worst)


def test_concurrent_long_batches_never_pass_the_budget_batches_api(tmp_path, fresh_session):
    groups = [requests(f"batch{g}", n=3) for g in range(CONCURRENCY)]
    batch_worst = sum(worst_cost(r, batch=True) for r in groups[0])
    cap = 2.5 * batch_worst  # room for two whole batches of long replies
    fresh_session.max_usd, fresh_session.batch = cap, True
    fake = long_replies([r for g in groups for r in g])
    errors: list[BaseException] = []

    def submit(g: int) -> None:
        client = client_for(fake, tmp_path / f"cache{g}", session=fresh_session)
        try:
            client.prefetch_batch(groups[g], poll_interval=0.05)
        except BudgetExceededError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=submit, args=(g,)) for g in range(CONCURRENCY)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    spent = fresh_session.spent()
    assert spent <= cap + 1e-12, f"spent {spent:.4f} USD over the cap {cap:.4f}"
    assert fake.batch_creates == 2 and len(errors) == CONCURRENCY - 2
    assert spent == pytest.approx(2 * batch_worst)


def test_a_run_account_starts_from_zero_spent():
    from mechaudit.book.account import RunAccount
    from mechaudit.book.params import resolve_chapter, resolve_parameters

    chapter = resolve_chapter("01_problem")
    run = RunAccount([(chapter, resolve_parameters(chapter))], None, {}, max_usd=2.0)
    assert not run.llm and run.totals["cost_usd"] == 0.0 and run.totals["calls"] == 0
    assert run.total_line().startswith("LLM run total: 0 requests sent (0 by batch) in 0 LLM chapter(s), "
                                       "0 input + 0 output tokens, 0 cache-read, 0.00 USD of max_usd 2.00")


def test_identical_concurrent_requests_make_one_call_and_the_other_reads_the_cache(tmp_path, fresh_session):
    [r] = requests("twice", n=1)
    fake = FakeAnthropic(reply=lambda body: json.dumps({"same": True}))
    handler = Slow(fake, delay=0.2)
    client = client_for(handler, tmp_path / "cache", max_concurrency=2, session=fresh_session)
    out = client.complete_many([r, r])
    assert len(fake.message_bodies) == 1 and handler.most_in_flight == 1
    assert sorted(resp.cached for resp in out) == [False, True] and out[0].text == out[1].text
    # the second read of an answer this client paid for is not counted again
    assert client.ledger()[["mode", "calls"]].values.tolist() == [["api", 1]]


def test_cache_spend_counts_a_record_stored_without_its_request_and_report_rounds_cost(tmp_path, fresh_session):
    from mechaudit.llm.cache import ResponseCache
    from mechaudit.llm.ledger import cache_spend

    cache = ResponseCache(tmp_path / "c")
    usage_in = {"input_tokens": 1000, "output_tokens": 100}
    cache.put("k1", {"text": "x", "model": MODEL, "usage": usage_in}, None, source="batch")
    spent = cache_spend(tmp_path / "c", 0, load_prices())
    prices = load_prices()
    row = prices["models"][MODEL]
    expected = (1000 * row["input"] + 100 * row["output"]) / 1e6 * prices["batch_discount"]
    assert spent["calls"] == spent["batch_calls"] == 1 and spent["cost_usd"] == pytest.approx(expected)
    client_for(FakeAnthropic(reply=lambda body: "{}"), tmp_path / "d", session=fresh_session).complete(
        requests("one", n=1)[0])
    table = fresh_session.usage_table()
    assert list(table.columns) == ["model", "mode", "calls", "input_tokens", "output_tokens",
                                   "cache_read_input_tokens", "cache_creation_input_tokens", "cost_usd"]
    assert all(round(v, 4) == v for v in table["cost_usd"])


def test_the_chapter_usage_table_says_unknown_for_an_unpriced_model():
    from mechaudit.llm.ledger import UsageLedger, load_prices
    from mechaudit.llm.request import Usage
    from mechaudit.llm.session import LLMSession

    session = LLMSession()
    ledger = UsageLedger(load_prices())
    session.add(ledger)
    ledger.add("claude-opus-4-6", "api", Usage(input_tokens=1_000_000))
    ledger.add("mystery-9", "api", Usage(input_tokens=10))
    table = session.usage_table().set_index("model")
    assert table.loc["claude-opus-4-6", "cost_usd"] == 5.0
    assert table.loc["mystery-9", "cost_usd"] == "unknown (no price)"
    assert table.loc["total", "cost_usd"] == "unknown (no price)"  # not 5.00
