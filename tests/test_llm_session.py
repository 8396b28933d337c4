"""An ``LLMSession`` is one run's budget and ledgers: two sessions never see each other's spending."""

from __future__ import annotations

import pytest

from mechaudit.llm import LLMRequest, get_client
from mechaudit.llm.ledger import UsageLedger, load_prices
from mechaudit.llm.request import Usage
from mechaudit.llm.session import BudgetExceededError, LLMSession, UnpricedModelError

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


# --------------------------------------------------------------------------- messages, boundary, tables

#: one model at 1 USD per output token and nothing per input token: a request costs max_tokens USD
ONE_USD = {"batch_discount": 0.5, "models": {"m": {"input": 0.0, "output": 1e6}}}


def _request(model: str = "m", max_tokens: int = 1) -> LLMRequest:
    return LLMRequest(model=model, system="s", messages=[{"role": "user", "content": "x"}], max_tokens=max_tokens)


def test_budget_messages_suggest_twice_the_budget_or_half_as_much_again_as_needed():
    # the suggestion is max(2 x max_usd, 1.5 x (spent + held + next), 0.01), printed with 2 decimals
    low = str(BudgetExceededError(1.0, 0.25, 0.1, reserved=0.15))  # needs 0.5: twice the budget wins
    assert low == ("LLM budget max_usd=1.00 reached: 0.25 USD spent in this run (+0.15 USD held for requests in "
                   "flight), the next request could cost up to 0.10 USD more, so nothing more was sent. Answers "
                   "paid for are cached: re-run with a larger budget (e.g. --max-usd 2.00 for mechaudit execute, "
                   "or the chapter parameter max_usd) to continue without repeating calls.")
    assert "--max-usd 6.00 for" in str(BudgetExceededError(1.0, 2.0, 1.0, reserved=1.0))  # needs 4: 1.5 x 4
    assert "--max-usd 0.01 for" in str(BudgetExceededError(0.0, 0.0, 0.0))  # never suggest 0
    estimate = str(BudgetExceededError(0.5, 0.0, 3.0, n_requests=12, estimate=True))
    assert estimate == ("LLM budget max_usd=0.50 is below the estimated 3.00 USD of the 12 uncached requests of "
                        "this run: nothing was sent. To run anyway, re-run with a larger budget (e.g. --max-usd "
                        "4.50 for mechaudit execute, or the chapter parameter max_usd); to spend less, run fewer "
                        "chapters or a smaller design.")


def test_unpriced_model_messages_name_the_models_the_count_and_the_budget():
    error = UnpricedModelError(["a-1", "b-2"], max_usd=1.5, n_requests=3)
    assert error.models == ["a-1", "b-2"]
    assert str(error) == ("no price for 'a-1', 'b-2' (3 requests to send): nothing was sent; add a row for it to "
                          "params/prices.yaml (or to a --prices file); a budget (max_usd=1.50) cannot be kept "
                          "without prices")
    assert str(UnpricedModelError(("z",))) == (
        "no price for 'z': nothing was sent; add a row for it to params/prices.yaml (or to a --prices file), "
        "or pass --allow-unpriced to run without a cost (refused with --max-usd)")


def test_reserve_names_only_the_unpriced_models_sorted_and_the_budget():
    session = LLMSession(max_usd=2.0)
    with pytest.raises(UnpricedModelError) as caught:
        session.reserve([_request("zz"), _request("m"), _request("aa"), _request("zz")], ONE_USD)
    assert caught.value.models == ["aa", "zz"]
    assert "a budget (max_usd=2.00)" in str(caught.value) and session._reserved == 0.0


def test_reserve_allows_up_to_the_budget_plus_its_tolerance_and_refuses_beyond():
    assert (1.0 - 1e-12) + 1e-12 == 1.0  # the float sums below are exact
    at_edge = LLMSession(max_usd=1.0 - 1e-12)
    assert at_edge.reserve([_request()], ONE_USD) == 1.0  # costs exactly max_usd + 1e-12: allowed
    over = LLMSession(max_usd=2.5)
    assert over.reserve([_request(max_tokens=2)], ONE_USD) == 2.0
    with pytest.raises(BudgetExceededError) as caught:
        over.reserve([_request(), _request()], ONE_USD)  # 2 held + 2 more > 2.5
    error = caught.value
    assert (error.max_usd, error.spent, error.next_cost, error.reserved) == (2.5, 0.0, 2.0, 2.0)
    assert str(error).startswith("LLM budget max_usd=2.50 reached: 0.00 USD spent in this run (+2.00 USD held "
                                 "for requests in flight), the next 2 requests (one batch) could cost up to "
                                 "2.00 USD more")
    assert "--max-usd 6.00 for" in str(error)  # 1.5 x (0 + 2 + 2)
    with pytest.raises(BudgetExceededError, match="the next request could cost up to 1.00 USD more"):
        over.reserve([_request()], ONE_USD)  # 2 + 1 > 2.5
    assert over._reserved == 2.0  # a refused reservation holds nothing


class _TableLedger:
    """A ledger reduced to its table (what ``spent`` and ``combined_ledger`` read)."""

    def __init__(self, rows: list[tuple[str, str, int, float]]) -> None:
        self.rows = rows

    def table(self):
        import pandas as pd

        return pd.DataFrame([{"model": m, "mode": mode, "calls": calls, "input_tokens": calls,
                              "output_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
                              "cost_usd": cost} for m, mode, calls, cost in self.rows],
                            columns=["model", "mode", "calls", "input_tokens", "output_tokens",
                                     "cache_read_input_tokens", "cache_creation_input_tokens", "cost_usd"])


def test_spent_counts_api_and_batch_rows_and_never_cache_rows():
    session = LLMSession()
    session.add(_TableLedger([("m", "api", 1, 0.25), ("m", "batch", 2, 0.5), ("m", "cache", 3, 4.0)]))
    assert session.spent() == 0.75


def test_combined_ledger_sorts_by_model_and_mode_and_keeps_its_columns():
    from mechaudit.llm.session import combined_ledger

    columns = ["model", "mode", "calls", "input_tokens", "output_tokens", "cache_read_input_tokens",
               "cache_creation_input_tokens", "cost_usd"]
    empty = combined_ledger([UsageLedger(load_prices())])
    assert empty.empty and list(empty.columns) == columns
    both = combined_ledger([_TableLedger([("b", "api", 1, 0.5)]), _TableLedger([("a", "cache", 2, 0.0),
                                                                                ("b", "api", 3, 0.25)])])
    assert list(both.columns) == columns
    assert both[["model", "mode", "calls"]].values.tolist() == [["a", "cache", 2], ["b", "api", 4]]
    assert both["cost_usd"].tolist() == [0.0, 0.75]


def test_usage_table_total_row_calls_per_pair_and_an_unknown_cost():
    session = LLMSession()
    session.add(_TableLedger([("a", "api", 3, 0.123456), ("b", "api", 4, float("nan"))]))
    table = session.usage_table(pairs=7)
    assert list(table.index) == [0, 1, 2]
    assert table["model"].tolist() == ["a", "b", "total"] and table["mode"].tolist() == ["api", "api", ""]
    assert table["calls"].tolist() == [3, 4, 7]
    assert table["calls_per_pair"].tolist() == [0.43, 0.57, 1.0]  # calls / pairs, 2 decimals
    assert table["cost_usd"].tolist() == [0.1235, "unknown (no price)", "unknown (no price)"]
    priced = LLMSession()
    priced.add(_TableLedger([("a", "api", 3, 0.123456)]))
    plain = priced.usage_table()
    assert "calls_per_pair" not in plain and plain["cost_usd"].tolist() == [0.1235, 0.1235]
    assert plain["cost_usd"].dtype == float  # every row priced: the column stays numeric
