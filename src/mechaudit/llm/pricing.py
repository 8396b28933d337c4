"""Pricing before calls: tokens and USD of planned requests, and the estimate table.

A chapter's cost plan (``plan`` in ``mechaudit.book.ch<chapter>``) lists the requests it would send
as :class:`Planned` items; this module sizes and prices them without sending anything. Sizing
rules (documented in ``book/rerun.md``):

- **Input tokens.** Characters / ``CHARS_PER_TOKEN`` plus ``MESSAGE_OVERHEAD`` per turn (Claude has
  no offline tokenizer). Requests that depend on generated text are built from *proxies* (the
  opening hypotheses, typical demands: ``mechaudit.workflow.plan``) and marked ``exact=False``.
- **Output tokens.** A typical reply size per request kind (``TYPICAL_OUTPUT``), never more than
  the request's ``max_tokens``; the budget check uses ``max_tokens`` (the worst case).
- **Price.** ``params/prices.yaml``: *plain*, *batch* (x ``batch_discount``) and *prompt-cached* (a
  system prompt of at least ``min_cache_tokens`` is written once at ``cache_write``, then read at
  ``cache_read``).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import yaml

from mechaudit.llm.ledger import format_usd, price_row, total_usd
from mechaudit.llm.request import LLMRequest
from mechaudit.paths import prices_path

CHARS_PER_TOKEN = 3.5
MESSAGE_OVERHEAD = 5  # tokens per turn (role markers) and for the system block
#: typical reply tokens by request kind (``kind_of``); capped by the request's max_tokens. The
#: workflow kinds assume three demands per critique (60 tokens each; ``mechaudit.workflow.plan``)
TYPICAL_OUTPUT = {
    "judge-full": 50, "judge-none": 50, "judge-step": 90,
    "develop": 400, "critique": 180, "revise": 630, "label": 70, "other": 200,
}
DEFAULT_MIN_CACHE_TOKENS = 1024


def kind_of(request: LLMRequest) -> str:
    """The request kind used for typical output sizes: judge-<rubric>, develop, critique, revise,
    label or other."""
    version = request.version
    if version.startswith("mechjudge-"):
        return "judge-" + version.split("-")[1]
    stage = request.metadata.get("stage")
    if stage in ("develop", "critique", "revise"):
        return stage
    if request.metadata.get("task") == "engagement":
        return "label"
    return str(request.metadata.get("kind", "other"))


def input_tokens(request: LLMRequest) -> tuple[int, int]:
    """Estimated ``(system tokens, total input tokens)`` of ``request`` (module docstring)."""
    system = math.ceil(len(request.system) / CHARS_PER_TOKEN) + (MESSAGE_OVERHEAD if request.system else 0)
    turns = sum(len(m.text()) for m in request.messages)
    total = system + math.ceil(turns / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD * len(request.messages)
    return system, total


def output_tokens(request: LLMRequest, output: str = "typical") -> int:
    """Reply tokens: ``"typical"`` (``TYPICAL_OUTPUT`` of its kind, at most max_tokens) or ``"max"``."""
    if output == "max":
        return request.max_tokens
    return min(request.max_tokens, TYPICAL_OUTPUT.get(kind_of(request), TYPICAL_OUTPUT["other"]))


def request_cost(request: LLMRequest, prices: Mapping[str, Any], batch: bool = False, output: str = "typical") -> float:
    """Plain (or batch) USD of one request without prompt caching; NaN for an unpriced model (or
    custom server, priced by its endpoint)."""
    row = price_row(request.model, prices, request.endpoint)
    if row is None:
        return math.nan
    _, tokens_in = input_tokens(request)
    usd = (tokens_in * row["input"] + output_tokens(request, output) * row["output"]) / 1e6
    return usd * (prices["batch_discount"] if batch else 1.0)


@dataclass(frozen=True)
class Planned:
    """One request a chapter would send: its stage label and whether it is exact (not a proxy)."""

    stage: str
    request: LLMRequest
    exact: bool = True
    identity: str | None = None  # what makes it distinct; default the cache key (proxies: the pair)

    @property
    def ident(self) -> str:
        return self.identity or self.request.key


ESTIMATE_COLUMNS = ["chapter", "stage", "model", "exact", "requests", "cached", "to_send", "input_tokens",
                    "output_tokens", "usd_plain", "usd_batch", "usd_prompt_cached"]


def price_plan(chapter: str, planned: Sequence[Planned], prices: Mapping[str, Any], cached: Callable[[str], bool],
               seen: set[str] | None = None, min_cache_tokens: Mapping[str, int] | None = None) -> pd.DataFrame:
    """One row per (stage, model) (``ESTIMATE_COLUMNS``): requests, how many are cached (or earlier in
    ``seen``, which is updated), tokens and USD (NaN without a price) of the ones to send."""
    seen = set() if seen is None else seen
    min_cache_tokens = min_cache_tokens or {}
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    written: set[tuple[str, str]] = set()
    for item in planned:
        r = item.request
        row = rows.setdefault((item.stage, r.model), {
            "chapter": chapter, "stage": item.stage, "model": r.model, "exact": True, "requests": 0,
            "cached": 0, "to_send": 0, "input_tokens": 0, "output_tokens": 0,
            "usd_plain": 0.0, "usd_batch": 0.0, "usd_prompt_cached": 0.0})
        row["requests"] += 1
        row["exact"] = row["exact"] and item.exact
        if item.ident in seen or cached(r.key):
            row["cached"] += 1
            seen.add(item.ident)
            continue
        seen.add(item.ident)
        system, tokens_in = input_tokens(r)
        tokens_out = output_tokens(r)
        row["to_send"] += 1
        row["input_tokens"] += tokens_in
        row["output_tokens"] += tokens_out
        price = price_row(r.model, prices, r.endpoint)
        if price is None:
            for col in ("usd_plain", "usd_batch", "usd_prompt_cached"):
                row[col] = math.nan
            continue
        plain = (tokens_in * price["input"] + tokens_out * price["output"]) / 1e6
        row["usd_plain"] += plain
        row["usd_batch"] += plain * prices["batch_discount"]
        cacheable = r.cache_system and system >= min_cache_tokens.get(r.model, DEFAULT_MIN_CACHE_TOKENS)
        if cacheable:
            tag = (r.model, r.system)
            rate = price["cache_read"] if tag in written else price["cache_write"]
            written.add(tag)
            row["usd_prompt_cached"] += ((tokens_in - system) * price["input"] + system * rate
                                         + tokens_out * price["output"]) / 1e6
        else:
            row["usd_prompt_cached"] += plain
    return pd.DataFrame(list(rows.values()), columns=ESTIMATE_COLUMNS)


def load_min_cache_tokens(path=None) -> dict[str, int]:
    """``min_cache_tokens`` per model from the price table (default ``DEFAULT_MIN_CACHE_TOKENS``)."""
    with open(path or prices_path(), encoding="utf-8") as fh:
        doc = yaml.safe_load(fh) or {}
    return {str(m): int(row.get("min_cache_tokens", DEFAULT_MIN_CACHE_TOKENS))
            for m, row in (doc.get("models") or {}).items() if isinstance(row, Mapping)}


def totals(estimate: pd.DataFrame) -> dict[str, float]:
    """Requests, cached, to_send, tokens and the three USD totals of an estimate table (a USD total
    with an unpriced row is NaN: unknown, never a partial sum)."""
    counts = ["requests", "cached", "to_send", "input_tokens", "output_tokens"]
    out = {c: (float(estimate[c].sum()) if len(estimate) else 0.0) for c in counts}
    out.update({c: total_usd(estimate[c]) if len(estimate) else 0.0
                for c in ("usd_plain", "usd_batch", "usd_prompt_cached")})
    return out


#: the widest line :func:`format_estimate` writes (a terminal of 100 columns shows it unwrapped)
TERMINAL_WIDTH = 100
#: column widths of the terminal estimate: stage (indented under its chapter), model, to send/requests,
#: tokens in+out, USD plain, USD batch (single spaces between them: 100 characters in all)
_WIDTHS = (38, 17, 11, 13, 9, 7)


def _tokens(n: float) -> str:
    return f"{round(n / 1000):,}k"


def format_estimate(estimate: pd.DataFrame, batch: bool = False) -> str:
    """The estimate as text for a terminal of :data:`TERMINAL_WIDTH` columns: one block per chapter,
    a row per stage (long stage names wrap), then the total. The full table, every column, is what
    ``mechaudit estimate --csv`` writes."""
    if estimate.empty:
        return "LLM cost estimate: no LLM requests (every chapter runs offline or everything is cached)."
    w_stage, w_model, w_send, w_tok, w_plain, w_batch = _WIDTHS
    t = totals(estimate)
    mode = "batch" if batch else "plain"
    lines = textwrap.wrap("LLM cost estimate (prices from the price table; tokens = characters / 3.5; ~: tokens "
                          "sized from proxies, see book/rerun.md; prompt-cached prices in --csv):", TERMINAL_WIDTH)
    lines.append(f"{'chapter, stage':{w_stage}} {'model':{w_model}} {'to send/all':>{w_send}} "
                 f"{'tokens in+out':>{w_tok}} {'USD plain':>{w_plain}} {'batch':>{w_batch}}")
    for chapter, rows in estimate.groupby("chapter", sort=False):
        lines.append(str(chapter))
        for row in rows.itertuples(index=False):
            stage = textwrap.wrap(str(row.stage), w_stage - 2) or [""]
            tokens = ("" if row.exact else "~") + f"{_tokens(row.input_tokens)}+{_tokens(row.output_tokens)}"
            lines.append(f"  {stage[0]:{w_stage - 2}} {str(row.model):{w_model}} "
                         f"{f'{int(row.to_send)}/{int(row.requests)}':>{w_send}} {tokens:>{w_tok}} "
                         f"{format_usd(row.usd_plain):>{w_plain}} {format_usd(row.usd_batch):>{w_batch}}")
            lines += [f"    {more}" for more in stage[1:]]
    lines.append(f"total: {int(t['requests'])} requests, {int(t['cached'])} cached, {int(t['to_send'])} to send; "
                 f"USD plain {format_usd(t['usd_plain'])}, batch {format_usd(t['usd_batch'])}")
    lines += textwrap.wrap(f"prompt-cached {format_usd(t['usd_prompt_cached'])} USD; "
                           f"{int(t['input_tokens']):,} input + {int(t['output_tokens']):,} output tokens "
                           f"(this run: {mode})", TERMINAL_WIDTH, initial_indent="  ", subsequent_indent="  ")
    unpriced = sorted(set(estimate.loc[estimate["usd_plain"].isna(), "model"]))
    if unpriced:
        lines += textwrap.wrap(f"no price for: {', '.join(unpriced)} (its cost is unknown: add a row to the "
                               "price table)", TERMINAL_WIDTH)
    return "\n".join(lines)
