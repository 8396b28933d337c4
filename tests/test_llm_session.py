"""An ``LLMSession`` is one run's budget and ledgers: two sessions never see each other's spending."""

from __future__ import annotations

import pytest

from mechaudit.llm import LLMRequest, get_client
from mechaudit.llm.ledger import UsageLedger, load_prices
from mechaudit.llm.request import Usage
from mechaudit.llm.session import BudgetExceededError, LLMSession

MODEL = "claude-sonnet-4-6"


def _paid_ledger(input_tokens: int) -> UsageLedger:
    ledger = UsageLedger(load_prices())
    ledger.add(MODEL, "api", Usage(input_tokens=input_tokens, output_tokens=0), key=f"k{input_tokens}")
    return ledger


def test_two_sessions_keep_separate_budgets():
    prices = load_prices()
    request = LLMRequest(model=MODEL, system="s", messages=[{"role": "user", "content": "x" * 350}],
                         max_tokens=10)
    rich, poor = LLMSession(max_usd=1.0), LLMSession(max_usd=1.0)
    poor.add(_paid_ledger(1_000_000))  # input price of a million tokens: far above 1 USD
    assert poor.spent() == pytest.approx(prices["models"][MODEL]["input"])
    assert rich.spent() == 0.0
    with pytest.raises(BudgetExceededError):
        poor.reserve([request], prices)
    held = rich.reserve([request], prices)
    assert held > 0
    rich.release(held)
    assert rich._reserved == 0.0


def test_bad_budget_is_refused_and_no_budget_reserves_nothing():
    for bad in (-1, float("nan"), True, "1"):
        with pytest.raises(ValueError, match="max_usd"):
            LLMSession(max_usd=bad)
    assert LLMSession().reserve([], load_prices()) == 0.0


def test_a_client_with_a_session_adds_its_ledger_there_only(tmp_path):
    mine = LLMSession()
    client = get_client(backend="replay", cache_dir=tmp_path, session=mine)
    assert client.session is mine and mine.ledgers == [client._ledger]
    default = get_client(backend="replay", cache_dir=tmp_path)  # no session: a private one, no budget
    other = get_client(backend="replay", cache_dir=tmp_path)
    assert default.session is not other.session and default.session is not mine
    assert default.session.ledgers == [default._ledger] and default.session.max_usd is None
    assert mine.ledgers == [client._ledger]  # clients made later did not join it


def test_usage_table_sums_the_sessions_ledgers():
    session = LLMSession()
    session.add(_paid_ledger(1000))
    session.add(_paid_ledger(2000))
    table = session.usage_table().set_index("model")
    assert table.loc[MODEL, "input_tokens"] == 3000 and table.loc["total", "calls"] == 2
    assert LLMSession().usage_table().empty  # no client called: the chapter context says so in words


def test_leaving_the_session_closes_its_progress_stream(tmp_path):
    stream = open(tmp_path / "bars.txt", "w", encoding="utf-8")
    with LLMSession() as session:
        session._stream = stream  # what progress_stream opens inside a kernel
    assert stream.closed and session._stream is None


def test_a_replay_client_never_builds_an_sdk(tmp_path):
    client = get_client(backend="replay", cache_dir=tmp_path)
    for make in (client.sdk, client.openai_sdk):
        with pytest.raises(RuntimeError, match="^backend 'replay' never calls the API$"):
            make()
    assert client._sdk is None and client._openai is None
