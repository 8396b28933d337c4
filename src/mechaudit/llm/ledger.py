"""Usage ledger: tokens per model and mode, and a cost estimate from an editable price table.

The price table (``params/prices.yaml``, or ``MECHAUDIT_PRICES``) prices vendor models under
``models:`` and custom OpenAI-compatible servers by URL under ``endpoints:``; anything unlisted has an
unknown cost (NaN), never 0, and so has every total with an unknown part.
"""

from __future__ import annotations

import math
import os
import threading
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from mechaudit.llm.cache import ResponseCache
from mechaudit.llm.providers import normalize_endpoint
from mechaudit.llm.request import Usage
from mechaudit.paths import prices_path

TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
# price-table field for each usage field
_PRICE_FIELD = {
    "input_tokens": "input",
    "output_tokens": "output",
    "cache_read_input_tokens": "cache_read",
    "cache_creation_input_tokens": "cache_write",
}
#: ledger modes: Messages API calls, Message Batches results, cache hits, calls to a custom
#: (local) OpenAI-compatible server
MODES = ("api", "batch", "cache", "local")


def load_prices(source: str | os.PathLike[str] | Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The price table ``{"batch_discount", "models": {model: {input, output, cache_write, cache_read}},
    "endpoints": {url: {...}}}`` (USD per million tokens; an endpoint's cache prices default to its
    ``input``) from a mapping or a YAML file (default ``paths.prices_path()``); ``ValueError`` naming
    the file and field if malformed."""
    name = "price table"
    if source is None or not isinstance(source, Mapping):
        path = prices_path() if source is None else source
        name = str(path)
        with open(path, encoding="utf-8") as fh:
            source = yaml.safe_load(fh)
    if not isinstance(source, Mapping) or not isinstance(source.get("models"), Mapping):
        raise ValueError(f"{name}: field 'models' must be a mapping of model -> prices")
    models = {str(model): _price_row(name, f"models.{model}", row, dict.fromkeys(_PRICE_FIELD.values()))
              for model, row in source["models"].items()}
    endpoints = source.get("endpoints") or {}
    if not isinstance(endpoints, Mapping):
        raise ValueError(f"{name}: field 'endpoints' must be a mapping of server URL -> prices")
    servers = {}
    for url, row in endpoints.items():
        try:
            key = normalize_endpoint(url)
        except ValueError as exc:
            raise ValueError(f"{name}: field 'endpoints.{url}': {exc}") from None
        fallback = {"cache_write": "input", "cache_read": "input"}
        servers[key] = _price_row(name, f"endpoints.{url}", row, {"input": None, "output": None, **fallback})
    discount = float(source.get("batch_discount", 1.0))
    return {"batch_discount": discount, "models": models, "endpoints": servers}


def _price_row(name: str, where: str, row: Any, fields: Mapping[str, str | None]) -> dict[str, float]:
    """The four prices of one row; ``fields`` maps a price to the one it defaults to (None: required)."""
    try:
        out = {f: float(row[f]) for f, default in fields.items() if default is None or f in row}
        out.update({f: out[default] for f, default in fields.items() if f not in out})
    except (KeyError, TypeError, ValueError) as exc:
        required = ", ".join(f for f, d in fields.items() if d is None)
        raise ValueError(f"{name}: {where} needs numeric {required} ({exc})") from exc
    if any(not math.isfinite(v) or v < 0 for v in out.values()):
        raise ValueError(f"{name}: {where}: prices must be finite numbers >= 0, got {out}")
    return out


def price_row(model: str, prices: Mapping[str, Any], endpoint: str | None = None) -> dict[str, float] | None:
    """The prices of a request: its endpoint's row for a custom server, else its model's row; None
    when the table has no such row (the cost is unknown)."""
    if endpoint is not None:
        return prices.get("endpoints", {}).get(endpoint)
    return prices["models"].get(model)


def cost_usd(model: str, usage: Mapping[str, int], prices: Mapping[str, Any], batch: bool = False,
             endpoint: str | None = None) -> float:
    """Estimated USD cost of the token counts ``usage`` for ``model`` (at ``endpoint``, a custom
    server); NaN if the table has no price for it."""
    row = price_row(model, prices, endpoint)
    if row is None:
        return math.nan
    total = sum(usage.get(col, 0) * row[field] for col, field in _PRICE_FIELD.items()) / 1e6
    return total * (prices["batch_discount"] if batch else 1.0)


def format_usd(value: float, digits: int = 2) -> str:
    """``value`` as text: ``"1.23"``, or ``"unknown"`` for NaN (a cost with an unpriced part is never
    shown as a number)."""
    return "unknown" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def total_usd(values) -> float:
    """The sum of ``values``: NaN if any is NaN (an unknown part makes the total unknown)."""
    values = [float(v) for v in values]
    return math.nan if any(math.isnan(v) for v in values) else float(sum(values))


class UsageLedger:
    """Thread-safe accumulator of calls and tokens per (model, mode) (:data:`MODES`; cache hits count
    calls only, no tokens paid)."""

    def __init__(self, prices: Mapping[str, Any], endpoint: str | None = None) -> None:
        self.prices = prices
        self.endpoint = endpoint
        self._lock = threading.Lock()
        self._keys: set[str] = set()
        self._rows: dict[tuple[str, str], dict[str, int]] = defaultdict(
            lambda: dict.fromkeys(("calls", *TOKEN_COLUMNS), 0)
        )

    def add(self, model: str, mode: str, usage: Usage | None = None, key: str | None = None) -> None:
        """Count one call of ``model`` in ``mode`` with its usage (None for a cache hit); with the request
        ``key``, a cache hit counts once per request this ledger has not counted yet."""
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        with self._lock:
            if key is not None:
                if mode == "cache" and key in self._keys:
                    return
                self._keys.add(key)
            row = self._rows[(model, mode)]
            row["calls"] += 1
            if usage is not None:
                for col in TOKEN_COLUMNS:
                    row[col] += getattr(usage, col)

    def row_cost(self, model: str, mode: str, counts: Mapping[str, int]) -> float:
        """USD of one row: 0 for cache hits, the endpoint's price for ``local``, else the model's."""
        if mode == "cache":
            return 0.0
        endpoint = self.endpoint if mode == "local" else None
        return cost_usd(model, counts, self.prices, batch=mode == "batch", endpoint=endpoint)

    def table(self) -> pd.DataFrame:
        """One row per (model, mode): calls, the four token counts and ``cost_usd`` (NaN when the
        price table has no price for it; 0 for cache hits)."""
        with self._lock:
            items = sorted(self._rows.items())
        rows = [{"model": model, "mode": mode, **counts, "cost_usd": self.row_cost(model, mode, counts)}
                for (model, mode), counts in items]
        columns = ["model", "mode", "calls", *TOKEN_COLUMNS, "cost_usd"]
        return pd.DataFrame(rows, columns=columns)

    def summary(self) -> str:
        """A short human-readable report of the table with the total cost ("unknown" when a model
        without a price was called)."""
        table = self.table()
        if table.empty:
            return "LLM usage: no calls."
        total = total_usd(table["cost_usd"])
        lines = ["LLM usage (cost is an estimate from the price table; check it against current prices):"]
        lines.append(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        unpriced = sorted(set(table.loc[table["cost_usd"].isna(), "model"]))
        note = f" (no price for: {', '.join(unpriced)})" if unpriced else ""
        lines.append(f"estimated total: {format_usd(total, 4)} USD{note}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- spending read from the cache

#: the cache folder's log of Messages API requests sent (one key a line, written before each request
#: goes out): a key without an answer in the cache was lost in flight (an error, or an interrupted run)
SENT_LOG = "sent.log"


def record_sent(cache_dir: str | os.PathLike[str], key: str) -> None:
    """Append ``key`` to the folder's :data:`SENT_LOG` (one short appended line: safe across threads
    and processes)."""
    path = Path(cache_dir) / SENT_LOG
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="ascii") as fh:
        fh.write(key + "\n")


def sent_mark(cache_dir: str | os.PathLike[str]) -> int:
    """The current end of the folder's :data:`SENT_LOG` in bytes (0 if there is none)."""
    path = Path(cache_dir) / SENT_LOG
    return path.stat().st_size if path.is_file() else 0


def unanswered(cache_dir: str | os.PathLike[str], since: int = 0) -> set[str]:
    """Keys sent (logged after byte ``since`` of :data:`SENT_LOG`) whose answer is not in the cache:
    requests that failed, or were in flight when their run stopped (then the API likely charged
    them, and a re-run pays for them again)."""
    path = Path(cache_dir) / SENT_LOG
    if not path.is_file():
        return set()
    with open(path, "rb") as fh:
        fh.seek(since)
        keys = {line.strip().decode("ascii") for line in fh if line.strip()}
    cache = ResponseCache(cache_dir)
    return {k for k in keys if k not in cache}


def cache_state(cache_dir: str | os.PathLike[str]) -> int:
    """A mark of the cache folder's current end (``ResponseCache.mark``; 0 if there is no folder):
    the records appended after it are what :func:`cache_spend` counts. Constant memory at any size."""
    path = Path(cache_dir)
    return ResponseCache(path).mark() if path.is_dir() else 0


def cache_spend(cache_dir: str | os.PathLike[str], before: int, prices: dict[str, Any]) -> dict[str, Any]:
    """What was paid for since ``before`` (a :func:`cache_state` mark; 0: everything): the calls,
    tokens and USD of the records added since (every answer the API sent is recorded), batch records
    at the batch discount; USD NaN when a model has no price (``unpriced`` names them)."""
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
