"""Per-process LLM usage: a spending budget, the batch switch, progress output and the chapter ledger.

Each chapter runs in its own kernel, so "this process" is "this chapter run". A chapter calls
:func:`begin` once in its set-up cell (budget and batch mode from its parameters) and :func:`report`
in its last cell (the usage/cost table of every LLM client the chapter made). Every
:class:`~mechaudit.llm.client.LLMClient` registers its ledger here when it is created.

Budget: before a request is sent, its worst-case cost (estimated input tokens + ``max_tokens``
output, priced from ``params/prices.yaml``) is reserved; if the spent cost plus the reservations would
pass ``max_usd``, :class:`BudgetExceededError` stops the run before the request goes out. What was
paid for is in the response cache, so re-running with a larger budget continues where it stopped.
"""

from __future__ import annotations

import io
import math
import os
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pandas as pd

from mechaudit.llm.ledger import TOKEN_COLUMNS, UsageLedger, cost_usd, format_usd, total_usd
from mechaudit.llm.request import LLMRequest

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


@dataclass
class UsageSession:
    """Budget, batch switch and registered ledgers of this process (see the module docstring)."""

    max_usd: float | None = None
    batch: bool = False
    ledgers: list[UsageLedger] = field(default_factory=list)
    _reserved: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def spent(self) -> float:
        """USD paid so far by every registered client (api + batch rows; unpriced models count 0)."""
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
        from mechaudit.llm.estimate import request_cost

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


SESSION = UsageSession()


def session() -> UsageSession:
    """The usage session of this process."""
    return SESSION


def begin(max_usd: float | None = None, batch: bool = False) -> None:
    """Start a chapter's LLM accounting: ``max_usd`` (None = no limit; 0 = answers from the cache
    only, what a run's budget leaves when it is spent) caps what the clients of this
    process may spend; ``batch=True`` sends bulk requests through the Message Batches API (half
    price, answers within 24 h, usually minutes). Clears the ledgers of earlier clients."""
    if max_usd is not None and not (isinstance(max_usd, (int, float)) and not isinstance(max_usd, bool)
                                    and math.isfinite(max_usd) and max_usd >= 0):
        raise ValueError(f"field 'max_usd': must be a finite number >= 0 or None, got {max_usd!r}")
    from mechaudit.errors import use_warning_style

    use_warning_style()  # a torn cache line is reported once, as one line
    SESSION.max_usd = None if max_usd is None else float(max_usd)
    SESSION.batch = bool(batch)
    SESSION.ledgers.clear()
    SESSION._reserved = 0.0


def register(ledger: UsageLedger) -> None:
    """Called by every new client: its ledger counts towards this process's budget and report."""
    SESSION.ledgers.append(ledger)


def combined_ledger(ledgers: Sequence[UsageLedger] | None = None) -> pd.DataFrame:
    """The ledgers of ``ledgers`` (default: every registered client) summed per (model, mode)."""
    ledgers = SESSION.ledgers if ledgers is None else ledgers
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


def report(backend: str, pairs: int | None = None) -> pd.DataFrame:
    """The chapter's LLM usage table, to be the output of its last cell.

    Rows per (model, mode) with calls, the four token counts and ``cost_usd`` (an estimate from the
    price table; "unknown (no price)" for a model the table lacks, and then for the total too);
    ``mode`` is ``api`` (Messages API calls made), ``batch`` (Message Batches results), ``local``
    (calls to a custom OpenAI-compatible server) or ``cache`` (distinct requests answered from the
    response cache, paid for earlier or never); a last ``total`` row. ``pairs``: the number of
    pairs the chapter's judges saw, to add ``calls_per_pair``. With the offline backend the table says "no LLM calls".
    """
    from mechaudit.backends import Backend

    if not Backend.parse(backend).is_llm:
        return pd.DataFrame({"LLM usage": [f"no LLM calls (backend {backend!r} is offline)"]})
    table = combined_ledger()
    if table.empty:
        return pd.DataFrame({"LLM usage": [f"no LLM calls (backend {backend!r})"]})
    total = {"model": "total", "mode": "", "calls": int(table["calls"].sum()),
             **{c: int(table[c].sum()) for c in TOKEN_COLUMNS},
             "cost_usd": total_usd(table["cost_usd"])}
    out = pd.concat([table, pd.DataFrame([total])], ignore_index=True)
    if pairs:
        out["calls_per_pair"] = (out["calls"] / pairs).round(2)
    cost = out["cost_usd"].astype(float).round(4)
    out["cost_usd"] = cost.astype(object).where(cost.notna(), "unknown (no price)") if cost.isna().any() else cost
    return out


# --------------------------------------------------------------------------- progress output


def progress_stream() -> IO[str]:
    """Where progress bars go: the terminal, never a notebook's output.

    In a Jupyter kernel ``sys.stderr`` is a stream whose writes become notebook output; its
    ``fileno()`` is a copy of the kernel process's original stderr (the terminal that started
    ``mechaudit execute`` or Jupyter). Bars are written there; outside a kernel to ``sys.stderr``.
    """
    stream = sys.stderr
    if type(stream).__module__.startswith("ipykernel"):
        try:
            return _terminal(stream.fileno())
        except (OSError, io.UnsupportedOperation, ValueError):
            return open(os.devnull, "w", encoding="utf-8")  # kept open for the process
    return stream


_TERMINALS: dict[int, IO[str]] = {}


def _terminal(fd: int) -> IO[str]:
    if fd not in _TERMINALS:
        _TERMINALS[fd] = os.fdopen(os.dup(fd), "w", encoding="utf-8", buffering=1)
    return _TERMINALS[fd]


# --------------------------------------------------------------------------- run totals from the cache


def cache_state(cache_dir: str | os.PathLike[str]) -> int:
    """A mark of the cache folder's current end (``ResponseCache.mark``; 0 if there is no folder):
    the records appended after it are what :func:`cache_spend` counts. Constant memory at any size."""
    from mechaudit.llm.cache import ResponseCache

    path = Path(cache_dir)
    return ResponseCache(path).mark() if path.is_dir() else 0


def cache_spend(cache_dir: str | os.PathLike[str], before: int, prices: dict[str, Any]) -> dict[str, Any]:
    """What was paid for since ``before`` (a :func:`cache_state` mark; 0: everything in the folder):
    new records' calls, tokens and USD (NaN when a record's model has no price; ``unpriced`` names
    those models).

    Every answer the API sent is recorded in the cache, so the records added during a run are that
    run's calls (``source`` messages or batch; batch records are priced at the batch discount).
    """
    from mechaudit.llm.cache import ResponseCache

    out: dict[str, Any] = {"calls": 0, "batch_calls": 0, **dict.fromkeys(TOKEN_COLUMNS, 0), "cost_usd": 0.0,
                           "unpriced": set()}
    path = Path(cache_dir)
    if not path.is_dir():
        return out
    cache = ResponseCache(path)
    for key in cache.keys(since=before):
        record = cache.record(key) or {}
        response = record.get("response", {})
        usage = response.get("usage", {})
        is_batch = record.get("source") == "batch"
        request = record.get("request", {})
        model = request.get("model") or response.get("model", "")
        out["calls"] += 1
        out["batch_calls"] += int(is_batch)
        for col in TOKEN_COLUMNS:
            out[col] += int(usage.get(col, 0) or 0)
        cost = cost_usd(model, usage, prices, batch=is_batch, endpoint=request.get("endpoint"))
        if math.isnan(cost):
            out["unpriced"].add(model)
        out["cost_usd"] += cost  # an unknown part makes the total unknown (NaN)
    return out


# --------------------------------------------------------------------------- a whole run (mechaudit execute)


class RunCancelled(RuntimeError):
    """The user declined the run after seeing the estimate; nothing was sent."""


class RunAccount:
    """The LLM side of one ``mechaudit execute`` run: estimate, money and key checks, budget per
    chapter, run total.

    Spending is measured from the response cache (records added during the run, see
    :func:`cache_spend`), so it needs nothing from inside the chapters' kernels. ``prices``: a price
    table file (None: ``params/prices.yaml``); ``base_url``: the custom OpenAI-compatible server of
    the run (``-p llm_base_url``; None: ``OPENAI_BASE_URL`` if set).
    """

    def __init__(self, plans, params_file, overrides, full, max_usd=None, batch=None, prices=None,
                 base_url=None) -> None:
        from mechaudit.llm.ledger import load_prices
        from mechaudit.llm.providers import openai_base_url

        self.plans, self.params_file, self.overrides, self.full = plans, params_file, overrides, full
        self.max_usd, self.batch, self.prices_file = max_usd, batch, prices
        self.base_url = openai_base_url(base_url)  # -p llm_base_url, else OPENAI_BASE_URL, else None
        self.prices = load_prices(prices)
        self.llm = any(_is_llm(p) for p in full.values())
        self.live = any(_backend(p) == "anthropic" for p in full.values())
        self.estimate = None
        self.totals: dict[str, Any] = {"calls": 0, "batch_calls": 0, **dict.fromkeys(TOKEN_COLUMNS, 0),
                                       "cost_usd": 0.0, "unpriced": set()}
        self.chapters_run = 0

    @classmethod
    def plan(cls, plans, params_file, overrides, max_usd=None, batch=None, prices=None, base_url=None) -> RunAccount:
        """Account for ``plans`` (``[(chapter, injected parameters)]``) of an execute run."""
        from mechaudit.execution import notebook_parameters

        full = {}
        for chapter, params in plans:
            values = dict(notebook_parameters(chapter.source))
            values.update(params)
            full[chapter.stem] = values
        return cls(plans, params_file, overrides, full, max_usd=max_usd, batch=batch, prices=prices,
                   base_url=base_url)

    def _cost_column(self) -> str:
        return "usd_batch" if self.batch else "usd_plain"

    def make_estimate(self):
        """The estimate table of the run's LLM chapters (``mechaudit.llm.estimate``), computed once."""
        from mechaudit.llm.estimate import estimate_chapters

        if self.estimate is None:
            names = [c.stem for c, _ in self.plans if _is_llm(self.full[c.stem])]
            self.estimate = estimate_chapters(names, self.params_file, self.overrides, prices=self.prices_file,
                                              base_url=self.base_url)
        return self.estimate

    def to_send(self) -> dict[str, int]:
        """Requests the live chapters would send, per model (replay chapters send nothing)."""
        table = self.make_estimate()
        live = {stem for stem, p in self.full.items() if _backend(p) == "anthropic"}
        rows = table[table["chapter"].isin(live) & (table["to_send"] > 0)] if len(table) else table
        if not len(rows):
            return {}
        return {str(m): int(n) for m, n in rows.groupby("model", sort=True)["to_send"].sum().items()}

    def check_prices(self, allow_unpriced: bool) -> None:
        """Refuse (:class:`UnpricedModelError`, nothing sent) a run that would send requests to a
        model without a price, unless ``allow_unpriced`` (never with a budget)."""
        table = self.make_estimate()
        sending = self.to_send()
        unpriced = sorted({str(m) for m in table.loc[table["usd_plain"].isna(), "model"] if m in sending})
        if unpriced and (not allow_unpriced or self.max_usd is not None):
            raise UnpricedModelError(unpriced, self.max_usd, sum(sending[m] for m in unpriced))

    def check_keys(self, environ=None) -> None:
        """Raise ``MissingAPIKeyError`` when a key the run's requests need is not in the environment
        (Anthropic models: ``ANTHROPIC_API_KEY``; OpenAI models: ``OPENAI_API_KEY``, except on a
        loopback server)."""
        from mechaudit.llm.errors import API_KEY_ENV, MissingAPIKeyError
        from mechaudit.llm.providers import OPENAI_API_KEY_ENV, endpoint_for, is_loopback, route_model

        environ = os.environ if environ is None else environ
        need: dict[str, list[str]] = {}
        for model, n in self.to_send().items():
            endpoint = endpoint_for(model, self.base_url)
            if endpoint is not None and is_loopback(endpoint):
                continue
            env = API_KEY_ENV if route_model(model)[0] == "anthropic" else OPENAI_API_KEY_ENV
            need.setdefault(env, []).append(f"{n} to {model}")
        missing = [env for env in need if not environ.get(env, "").strip()]
        if missing:
            env = missing[0]
            raise MissingAPIKeyError(
                f"{env} is not set, and this run would send requests ({', '.join(need[env])}): run "
                f"`export {env}=...` in this shell, or use -p backend replay (recorded answers) or reference "
                f"(offline); nothing was sent")

    def print_estimate(self, stream) -> None:
        """Print the estimate table with its total line."""
        from mechaudit.llm.estimate import format_estimate

        print(format_estimate(self.make_estimate(), batch=bool(self.batch)), file=stream, flush=True)

    def check_budget(self) -> None:
        """Raise :class:`BudgetExceededError` if the estimate is above ``max_usd``."""
        from mechaudit.llm.estimate import totals

        table = self.make_estimate()
        cost = totals(table)[self._cost_column()] if len(table) else 0.0
        if self.max_usd is not None and cost > self.max_usd:
            raise BudgetExceededError(self.max_usd, 0.0, cost, int(totals(table)["to_send"]), estimate=True)

    def prompt(self) -> str:
        """The confirmation question shown after the estimate."""
        from mechaudit.llm.estimate import totals

        t = totals(self.estimate) if self.estimate is not None and len(self.estimate) else {}
        cost = t.get(self._cost_column(), 0.0)
        limit = "no budget limit" if self.max_usd is None else f"budget {self.max_usd:.2f} USD"
        return (f"Send about {int(t.get('to_send', 0))} requests for about {format_usd(cost)} USD "
                f"({'batch' if self.batch else 'plain'} prices, {limit})? [y/N] ")

    def inject(self, chapter, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` plus the run's remaining budget and batch switch for an LLM chapter."""
        full = self.full[chapter.stem]
        if not _is_llm(full):
            return params
        out = dict(params)
        if self.max_usd is not None and "max_usd" in full:
            spent = self.totals["cost_usd"]
            left = 0.0 if math.isnan(spent) else max(0.0, self.max_usd - spent)  # unknown spending: none left
            out["max_usd"] = round(left, 6)
        if self.batch is not None and "llm_batch" in full:
            out["llm_batch"] = bool(self.batch)
        return out

    def cache_dir(self, chapter) -> Path:
        from mechaudit.llm.cache import default_cache_dir

        folder = self.full[chapter.stem].get("cache_dir")
        return Path(folder) if folder else default_cache_dir()

    def chapter(self, chapter):
        """Context manager around one chapter's execution: adds what it paid to the run total."""
        import contextlib

        @contextlib.contextmanager
        def _cm():
            if not _is_llm(self.full[chapter.stem]):
                yield
                return
            folder = self.cache_dir(chapter)
            before = cache_state(folder)
            try:
                yield
            finally:
                spent = cache_spend(folder, before, self.prices)
                self.totals["unpriced"] |= spent.pop("unpriced")
                for k, v in spent.items():
                    self.totals[k] += v
                self.chapters_run += 1

        return _cm()

    def total_line(self) -> str:
        """One line: requests sent, tokens and USD of this run ("unknown" USD when a model without a
        price was called)."""
        t = self.totals
        budget = "" if self.max_usd is None else f" of max_usd {self.max_usd:.2f}"
        unpriced = f" (no price for: {', '.join(sorted(t['unpriced']))})" if t["unpriced"] else ""
        source = "params/prices.yaml" if self.prices_file is None else str(self.prices_file)
        return (f"LLM run total: {t['calls']} requests sent ({t['batch_calls']} by batch) in "
                f"{self.chapters_run} LLM chapter(s), {t['input_tokens']:,} input + {t['output_tokens']:,} output "
                f"tokens, {t['cache_read_input_tokens']:,} cache-read, {format_usd(t['cost_usd'])} USD{budget}"
                f"{unpriced} (prices from {source}; answers are cached: a re-run sends nothing again)")


def _backend(params: dict[str, Any]) -> str | None:
    from mechaudit.backends import Backend

    try:
        return Backend.parse(params.get("backend", "reference")).value
    except ValueError:
        return None


def _is_llm(params: dict[str, Any]) -> bool:
    from mechaudit.backends import LLM_BACKENDS

    return _backend(params) in LLM_BACKENDS
