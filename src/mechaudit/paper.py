"""The paper's reported numbers (``data/paper_reported.yaml``) and the "paper vs this run" table."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from mechaudit.paths import REPO_ROOT

REPORTED_PATH = REPO_ROOT / "data" / "paper_reported.yaml"


@lru_cache(maxsize=4)
def _load(path: Path) -> dict[str, dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        tree = yaml.safe_load(fh)
    flat: dict[str, dict[str, Any]] = {}

    def walk(node: dict, prefix: str) -> None:
        for name, child in node.items():
            key = f"{prefix}{name}"
            if isinstance(child, dict) and "value" in child:
                flat[key] = child
            elif isinstance(child, dict):
                walk(child, key + ".")

    walk({k: v for k, v in tree.items() if k != "source"}, "")
    return flat


def entries(path: Path = REPORTED_PATH) -> dict[str, dict[str, Any]]:
    """Every reported number, keyed by its dotted name, with value, unit, section and chapter."""
    return dict(_load(Path(path)))


def entry(key: str, path: Path = REPORTED_PATH) -> dict[str, Any]:
    """One reported number with its metadata; an unknown key is a ``KeyError`` naming close keys."""
    table = _load(Path(path))
    if key not in table:
        head = key.split(".")[0]
        near = [k for k in table if k.startswith(head)][:8]
        raise KeyError(f"{key!r} is not in {Path(path).name}; keys under {head!r}: {near}")
    return table[key]


def reported(key: str, path: Path = REPORTED_PATH) -> Any:
    """The value the paper reports under ``key`` (e.g. ``critique_depth.extra_divergence_pp.k0_vs_k1``)."""
    return entry(key, path)["value"]


def compare(rows: Iterable[tuple], path: Path = REPORTED_PATH) -> pd.DataFrame:
    """The "paper vs this run" table.

    ``rows`` holds ``(key, ours)`` or ``(key, ours, note)``; ``ours`` may be ``None`` when this
    run did not measure the quantity (shown as "not run"). Numeric values are rounded to 3 places.
    Columns: quantity, unit, paper, this run, paper section, note.
    """
    out = []
    for row in rows:
        key, ours, *rest = row
        if len(rest) > 1:
            raise ValueError(f"row for {key!r} has {len(row)} items; expected (key, ours[, note])")
        meta = entry(key, path)
        if isinstance(meta["value"], int) and isinstance(ours, float) and ours.is_integer():
            ours = int(ours)  # a count or a whole percentage, as the paper prints it
        out.append(
            {
                "quantity": key,
                "unit": meta.get("unit", ""),
                "paper": _fmt(meta["value"]),
                "this run": "not run" if ours is None else _fmt(ours),
                "paper section": meta.get("section", ""),
                "note": rest[0] if rest else "",
            }
        )
    columns = ["quantity", "unit", "paper", "this run", "paper section", "note"]
    return pd.DataFrame(out, columns=columns, dtype=object)  # keep 83 as 83 beside 34.5


def _fmt(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if isinstance(value, float):  # 3 decimals; a small value such as a p of 4e-09 as text, not 0.0
        return round(value, 3) if value == 0 or abs(value) >= 1e-3 else f"{value:.2g}"
    return value


def compare_paper_default(compare_paper: bool | None, data_dir: Any) -> bool:
    """Whether a chapter shows the paper's numbers: ``compare_paper`` if given, else only on the
    shipped data (``data_dir`` None). On a user's own data the paper's markers mean nothing."""
    if compare_paper is None:
        return data_dir is None
    if not isinstance(compare_paper, bool):
        raise TypeError(f"compare_paper must be true, false or null, not {compare_paper!r}")
    return compare_paper
