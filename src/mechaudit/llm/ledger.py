"""Usage ledger: tokens per model and mode, and a cost estimate from an editable price table."""

from __future__ import annotations

import math
import os
import threading
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import pandas as pd
import yaml

from mechaudit.llm.request import Usage
from mechaudit.paths import PARAMS_DIR

PRICES_PATH = PARAMS_DIR / "prices.yaml"
TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
# price-table field for each usage field
_PRICE_FIELD = {
    "input_tokens": "input",
    "output_tokens": "output",
    "cache_read_input_tokens": "cache_read",
    "cache_creation_input_tokens": "cache_write",
}
MODES = ("api", "batch", "cache")


def load_prices(source: str | os.PathLike[str] | Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The price table: ``{"batch_discount": float, "models": {model: {input, output,
    cache_write, cache_read}}}`` in USD per million tokens, from a mapping or a YAML file
    (default ``params/prices.yaml``). Raises ``ValueError`` naming the file and field if malformed."""
    name = "price table"
    if source is None or not isinstance(source, Mapping):
        path = PRICES_PATH if source is None else source
        name = str(path)
        with open(path, encoding="utf-8") as fh:
            source = yaml.safe_load(fh)
    if not isinstance(source, Mapping) or not isinstance(source.get("models"), Mapping):
        raise ValueError(f"{name}: field 'models' must be a mapping of model -> prices")
    models: dict[str, dict[str, float]] = {}
    for model, row in source["models"].items():
        try:
            models[str(model)] = {f: float(row[f]) for f in _PRICE_FIELD.values()}
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(
                f"{name}: models.{model} needs numeric input, output, cache_write, cache_read ({exc})"
            ) from exc
    discount = float(source.get("batch_discount", 1.0))
    return {"batch_discount": discount, "models": models}


def cost_usd(model: str, usage: Mapping[str, int], prices: Mapping[str, Any], batch: bool = False) -> float:
    """Estimated USD cost of the token counts ``usage`` for ``model``; NaN if the model is unpriced."""
    row = prices["models"].get(model)
    if row is None:
        return math.nan
    total = sum(usage.get(col, 0) * row[field] for col, field in _PRICE_FIELD.items()) / 1e6
    return total * (prices["batch_discount"] if batch else 1.0)


class UsageLedger:
    """Thread-safe accumulator of calls and tokens per (model, mode).

    Modes: ``api`` (Messages API calls made by this client), ``batch`` (results collected from the
    Message Batches API), ``cache`` (answered from the cache: calls only, no tokens paid).
    """

    def __init__(self, prices: Mapping[str, Any]) -> None:
        self.prices = prices
        self._lock = threading.Lock()
        self._keys: set[str] = set()
        self._rows: dict[tuple[str, str], dict[str, int]] = defaultdict(
            lambda: dict.fromkeys(("calls", *TOKEN_COLUMNS), 0)
        )

    def add(self, model: str, mode: str, usage: Usage | None = None, key: str | None = None) -> None:
        """Count one call of ``model`` in ``mode`` with its usage (None for a cache hit).

        With the request ``key``, a cache hit is counted once per distinct request and not at all
        for a request this ledger already counted (e.g. a prefetched answer read again)."""
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

    def table(self) -> pd.DataFrame:
        """One row per (model, mode): calls, the four token counts and ``cost_usd`` (NaN when the
        model is not in the price table; 0 for cache hits)."""
        with self._lock:
            items = sorted(self._rows.items())
        rows = []
        for (model, mode), counts in items:
            cost = 0.0 if mode == "cache" else cost_usd(model, counts, self.prices, batch=mode == "batch")
            rows.append({"model": model, "mode": mode, **counts, "cost_usd": cost})
        columns = ["model", "mode", "calls", *TOKEN_COLUMNS, "cost_usd"]
        return pd.DataFrame(rows, columns=columns)

    def summary(self) -> str:
        """A short human-readable report of the table with the total cost."""
        table = self.table()
        if table.empty:
            return "LLM usage: no calls."
        total = table["cost_usd"].sum(min_count=1)
        lines = ["LLM usage (cost is an estimate from the price table; check it against current prices):"]
        lines.append(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        unpriced = sorted(set(table.loc[table["cost_usd"].isna(), "model"]))
        note = f" (models without a price: {', '.join(unpriced)})" if unpriced else ""
        lines.append(f"estimated total: {total:.4f} USD{note}")
        return "\n".join(lines)
