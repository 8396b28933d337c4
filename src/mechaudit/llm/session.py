"""One LLM session: a spending budget, the batch switch, the ledgers of its clients and a progress stream.

A session is what one chapter run spends. Every :class:`~mechaudit.llm.client.LLMClient` adds its
ledger to the session it was given (:meth:`LLMSession.add`); the session sums them into the chapter's
usage table (:meth:`LLMSession.usage_table`). ``with LLMSession(...) as session:`` closes the
session's progress stream at the end.

Budget: before a request is sent, its worst-case cost (estimated input tokens + ``max_tokens``
output, priced from ``params/prices.yaml``) is reserved; if the spent cost plus the reservations would
pass ``max_usd``, :class:`BudgetExceededError` stops the run before the request goes out. What was
paid for is in the response cache, so re-running with a larger budget continues where it stopped.
"""

from __future__ import annotations

import math
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import pandas as pd

from mechaudit.llm.ledger import TOKEN_COLUMNS, UsageLedger, total_usd
from mechaudit.llm.pricing import request_cost
from mechaudit.llm.request import LLMRequest
from mechaudit.report.terminal import in_kernel, terminal_copy

#: ``complete_many`` shows a progress bar when at least this many requests are not cached.
PROGRESS_MIN_REQUESTS = 20


class BudgetExceededError(RuntimeError):
    """The next request(s) would push this run's LLM spending past ``max_usd``; nothing was sent."""

    def __init__(self, max_usd: float, spent: float, next_cost: float, n_requests: int = 1,
                 estimate: bool = False, reserved: float = 0.0) -> None:
        self.max_usd, self.spent, self.next_cost, self.reserved = max_usd, spent, next_cost, reserved
        larger = (f"re-run with a larger budget (e.g. --max-usd {_suggest(max_usd, spent + reserved + next_cost)} for "
                  f"mechaudit execute, or the chapter parameter max_usd)")
        if estimate:
            super().__init__(
                f"LLM budget max_usd={max_usd:.2f} is below the estimated {next_cost:.2f} USD of the "
                f"{n_requests} uncached requests of this run: nothing was sent. To run anyway, {larger}; "
                f"to spend less, run fewer chapters or a smaller design."
            )
            return
        what = "the next request" if n_requests == 1 else f"the next {n_requests} requests (one batch)"
        flight = f" (+{reserved:.2f} USD held for requests in flight)" if reserved > 0 else ""
        super().__init__(
            f"LLM budget max_usd={max_usd:.2f} reached: {spent:.2f} USD spent in this run{flight}, {what} "
            f"could cost up to {next_cost:.2f} USD more, so nothing more was sent. Answers paid for "
            f"are cached: {larger} to continue without repeating calls."
        )


def _suggest(max_usd: float, needed: float) -> str:
    return f"{max(2 * max_usd, needed * 1.5, 0.01):.2f}"


#: how to give a model a price, for every message that refuses an unpriced model
PRICE_FIX = "add a row for it to params/prices.yaml (or to a --prices file)"


class UnpricedModelError(RuntimeError):
    """A request would go to a model (or server) the price table has no price for, while a budget
    (or the refusal of unpriced runs) needs its cost; nothing was sent."""

    def __init__(self, models: Sequence[str], max_usd: float | None = None, n_requests: int | None = None) -> None:
        self.models = list(models)
        names = ", ".join(repr(m) for m in self.models)
        count = "" if n_requests is None else f" ({n_requests} requests to send)"
        if max_usd is not None:
            fix = f"{PRICE_FIX}; a budget (max_usd={max_usd:.2f}) cannot be kept without prices"
        else:
            fix = f"{PRICE_FIX}, or pass --allow-unpriced to run without a cost (refused with --max-usd)"
        super().__init__(f"no price for {names}{count}: nothing was sent; {fix}")


def check_max_usd(max_usd: Any) -> float | None:
    """``max_usd`` as a float (None = no limit; 0 = answers from the cache only), or ``ValueError``."""
    if max_usd is not None and not (isinstance(max_usd, (int, float)) and not isinstance(max_usd, bool)
                                    and math.isfinite(max_usd) and max_usd >= 0):
        raise ValueError(f"field 'max_usd': must be a finite number >= 0 or None, got {max_usd!r}")
    return None if max_usd is None else float(max_usd)


@dataclass
class LLMSession:
    """Budget (``max_usd`` USD; None = no limit), batch switch and the ledgers of its clients.

    ``batch=True`` sends bulk requests through the Message Batches API (half price, answers within
    24 h, usually minutes)."""

    max_usd: float | None = None
    batch: bool = False
    ledgers: list[UsageLedger] = field(default_factory=list)
    _reserved: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _stream: IO[str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.max_usd = check_max_usd(self.max_usd)
        self.batch = bool(self.batch)

    def __enter__(self) -> LLMSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, ledger: UsageLedger) -> None:
        """Count ``ledger`` (one client's) towards this session's budget and usage table."""
        self.ledgers.append(ledger)

    def spent(self) -> float:
        """USD paid so far by every client of the session (api + batch rows; unpriced models count 0)."""
        total = 0.0
        for ledger in list(self.ledgers):
            table = ledger.table()
            paid = table.loc[table["mode"] != "cache", "cost_usd"]
            total += float(paid.sum(min_count=1)) if paid.notna().any() else 0.0
        return total

    def reserve(self, requests: Sequence[LLMRequest], prices: dict[str, Any], batch: bool = False) -> float:
        """Reserve the worst-case cost of ``requests``; raise :class:`BudgetExceededError` (and
        reserve nothing) if it would pass ``max_usd``. Returns the amount reserved (release it with
        :meth:`release` once the answer's real cost is in a ledger)."""
        if self.max_usd is None:
            return 0.0
        cost = sum(request_cost(r, prices, batch=batch, output="max") for r in requests)
        if math.isnan(cost):  # a budget cannot be kept for a model without a price
            raise UnpricedModelError(sorted({r.model for r in requests
                                             if math.isnan(request_cost(r, prices, output="max"))}), self.max_usd)
        with self._lock:
            spent = self.spent()
            if spent + self._reserved + cost > self.max_usd + 1e-12:
                raise BudgetExceededError(self.max_usd, spent, cost, len(requests), reserved=self._reserved)
            self._reserved += cost
        return cost

    def release(self, amount: float) -> None:
        """Give back a reservation made by :meth:`reserve`."""
        with self._lock:
            self._reserved = max(0.0, self._reserved - amount)

    def ledger_table(self) -> pd.DataFrame:
        """The session's ledgers summed per (model, mode)."""
        return combined_ledger(self.ledgers)

    def usage_table(self, pairs: int | None = None) -> pd.DataFrame:
        """The session's LLM usage table, to be the output of a chapter's last cell.

        Rows per (model, mode) with calls, the four token counts and ``cost_usd`` (an estimate from
        the price table; "unknown (no price)" for a model the table lacks, and then for the total
        too); ``mode`` is ``api`` (Messages API calls made), ``batch`` (Message Batches results),
        ``local`` (calls to a custom OpenAI-compatible server) or ``cache`` (distinct requests
        answered from the response cache, paid for earlier or never); a last ``total`` row.
        ``pairs``: the number of pairs the chapter's judges saw, to add ``calls_per_pair``. An
        empty frame when no client of the session has been called.
        """
        table = self.ledger_table()
        if table.empty:
            return table
        total = {"model": "total", "mode": "", "calls": int(table["calls"].sum()),
                 **{c: int(table[c].sum()) for c in TOKEN_COLUMNS},
                 "cost_usd": total_usd(table["cost_usd"])}
        out = pd.concat([table, pd.DataFrame([total])], ignore_index=True)
        if pairs:
            out["calls_per_pair"] = (out["calls"] / pairs).round(2)
        cost = out["cost_usd"].astype(float).round(4)
        out["cost_usd"] = cost.astype(object).where(cost.notna(), "unknown (no price)") if cost.isna().any() else cost
        return out

    def progress_stream(self) -> IO[str]:
        """Where progress bars go: the terminal, never a notebook's output.

        In a Jupyter kernel bars are written to a duplicate of the kernel process's original stderr
        (``mechaudit.report.terminal``), opened once per session and closed by :meth:`close`; outside a
        kernel to ``sys.stderr``.
        """
        if not in_kernel():
            return sys.stderr
        if self._stream is None:
            self._stream = terminal_copy()
        return self._stream

    def close(self) -> None:
        """Close the session's progress stream (if one was opened)."""
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.close()


def combined_ledger(ledgers: Sequence[UsageLedger]) -> pd.DataFrame:
    """``ledgers`` summed per (model, mode): calls, the four token counts and ``cost_usd``."""
    tables = [ledger.table() for ledger in ledgers]
    tables = [t for t in tables if not t.empty]
    columns = ["model", "mode", "calls", *TOKEN_COLUMNS, "cost_usd"]
    if not tables:
        return pd.DataFrame(columns=columns)
    both = pd.concat(tables, ignore_index=True)
    summed = both.groupby(["model", "mode"], sort=True).agg(
        {"calls": "sum", **dict.fromkeys(TOKEN_COLUMNS, "sum"), "cost_usd": lambda s: s.sum(min_count=1)}
    ).reset_index()
    return summed[columns]
