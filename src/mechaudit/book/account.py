"""The LLM side of one ``mechaudit execute`` run: estimate, money and key checks, budget per chapter,
run total (:class:`RunAccount`)."""

from __future__ import annotations

import contextlib
import math
import os
from pathlib import Path
from typing import Any

from mechaudit.backends import Backend, BackendError
from mechaudit.book.chapter import backend_of
from mechaudit.book.params import full_parameters
from mechaudit.llm.cache import ResponseCache, default_cache_dir
from mechaudit.llm.errors import API_KEY_ENV, MissingAPIKeyError
from mechaudit.llm.ledger import TOKEN_COLUMNS, cache_spend, cache_state, format_usd, load_prices, sent_mark, unanswered
from mechaudit.llm.pricing import format_estimate, totals
from mechaudit.llm.providers import OPENAI_API_KEY_ENV, endpoint_for, is_anthropic, is_loopback, openai_base_url
from mechaudit.llm.session import BudgetExceededError, UnpricedModelError


class RunCancelled(RuntimeError):
    """The user declined the run after seeing the estimate; nothing was sent."""


class RunAccount:
    """The LLM side of one ``mechaudit execute`` run: estimate, money and key checks, budget per
    chapter, run total, for ``plans`` (``[(chapter, injected parameters)]``) of an execute run.
    Spending is measured from the response cache (:func:`cache_spend`), nothing from inside the
    kernels. ``full``: every parameter of each chapter by stem (None: ``full_parameters(plans)``);
    ``prices``: a price table file (None: ``params/prices.yaml``); ``base_url``: the run's
    OpenAI-compatible server (None: ``OPENAI_BASE_URL`` if set)."""

    def __init__(self, plans, params_file, overrides, full=None, max_usd=None, batch=None, prices=None,
                 base_url=None) -> None:
        self.plans, self.params_file, self.overrides = plans, params_file, overrides
        self.full = full_parameters(plans) if full is None else full
        self.max_usd, self.batch, self.prices_file = max_usd, batch, prices
        self.cost_column = "usd_batch" if batch else "usd_plain"  # the estimate's column this run pays
        self.base_url = openai_base_url(base_url)  # -p llm_base_url, else OPENAI_BASE_URL, else None
        self.prices = load_prices(prices)
        self.llm = any(_is_llm(p) for p in self.full.values())
        self.live = any(_backend(p) is Backend.ANTHROPIC for p in self.full.values())
        self.estimate = None
        self.totals: dict[str, Any] = {"calls": 0, "batch_calls": 0, **dict.fromkeys(TOKEN_COLUMNS, 0),
                                       "cost_usd": 0.0, "unpriced": set(), "resent": 0, "unanswered": 0}
        self.chapters_run = 0

    def make_estimate(self):
        """The estimate table of the run's LLM chapters (``mechaudit.book.estimate``), computed once."""
        # defers scikit-learn and scipy: only an LLM run's estimate needs the chapter plans
        from mechaudit.book.estimate import estimate_chapters

        if self.estimate is None:
            names = [c.stem for c, _ in self.plans if _is_llm(self.full[c.stem])]
            self.estimate = estimate_chapters(names, self.params_file, self.overrides, prices=self.prices_file,
                                              base_url=self.base_url)
        return self.estimate

    def to_send(self) -> dict[str, int]:
        """Requests the live chapters would send, per model (replay chapters send nothing)."""
        table = self.make_estimate()
        live = {stem for stem, p in self.full.items() if _backend(p) is Backend.ANTHROPIC}
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
        environ = os.environ if environ is None else environ
        need: dict[str, list[str]] = {}
        for model, n in self.to_send().items():
            endpoint = endpoint_for(model, self.base_url)
            if endpoint is not None and is_loopback(endpoint):
                continue
            env = API_KEY_ENV if is_anthropic(model) else OPENAI_API_KEY_ENV
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
        print(format_estimate(self.make_estimate(), batch=bool(self.batch)), file=stream, flush=True)

    def check_budget(self) -> None:
        """Raise :class:`BudgetExceededError` if the estimate is above ``max_usd``."""
        table = self.make_estimate()
        cost = totals(table)[self.cost_column] if len(table) else 0.0
        if self.max_usd is not None and cost > self.max_usd:
            raise BudgetExceededError(self.max_usd, 0.0, cost, int(totals(table)["to_send"]), estimate=True)

    def prompt(self) -> str:
        """The confirmation question shown after the estimate."""
        t = totals(self.estimate) if self.estimate is not None and len(self.estimate) else {}
        cost = t.get(self.cost_column, 0.0)
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

    @contextlib.contextmanager
    def chapter(self, chapter):
        """Around one chapter's execution: adds what it paid to the run total and counts requests an
        earlier, stopped run had sent unanswered (``resent``: likely paid twice) and its own unanswered
        ones (``unanswered``)."""
        if not _is_llm(self.full[chapter.stem]):
            yield
            return
        folder = Path(self.full[chapter.stem].get("cache_dir") or default_cache_dir())
        before, sent_before, waiting = cache_state(folder), sent_mark(folder), unanswered(folder)
        try:
            yield
        finally:
            spent = cache_spend(folder, before, self.prices)
            self.totals["unpriced"] |= spent.pop("unpriced")
            for k, v in spent.items():
                self.totals[k] += v
            if waiting:
                self.totals["resent"] += len(waiting & set(ResponseCache(folder).keys(since=before)))
            self.totals["unanswered"] += len(unanswered(folder, since=sent_before))
            self.chapters_run += 1

    def total_line(self) -> str:
        """One line: requests sent, tokens and USD of this run ("unknown" USD when a model without a
        price was called)."""
        t = self.totals
        budget = "" if self.max_usd is None else f" of max_usd {self.max_usd:.2f}"
        unpriced = f" (no price for: {', '.join(sorted(t['unpriced']))})" if t["unpriced"] else ""
        source = "params/prices.yaml" if self.prices_file is None else str(self.prices_file)
        resent = (f"; {t['resent']} of them had been sent by an earlier run that got no answer for them (stopped "
                  "while they were in flight): those were likely paid twice" if t["resent"] else "")
        lost = (f"; {t['unanswered']} request(s) sent got no answer (an error, or in flight when the run stopped; "
                "they may have been paid for): a re-run sends them again" if t["unanswered"] else "")
        return (f"LLM run total: {t['calls']} requests sent ({t['batch_calls']} by batch) in "
                f"{self.chapters_run} LLM chapter(s), {t['input_tokens']:,} input + {t['output_tokens']:,} output "
                f"tokens, {t['cache_read_input_tokens']:,} cache-read, {format_usd(t['cost_usd'])} USD{budget}"
                f"{unpriced}{resent}{lost} (prices from {source}; answers are cached: a re-run sends nothing again)")


def _backend(params: dict[str, Any]) -> Backend | None:
    """The chapter's backend parameter (default reference); None if it is not a backend."""
    try:
        return backend_of(params)
    except BackendError:
        return None


def _is_llm(params: dict[str, Any]) -> bool:
    backend = _backend(params)
    return backend is not None and backend.is_llm
