"""Expensive fixed computations, committed with the settings that produced them.

The calibration scan and the robustness maps take minutes (hundreds of simulated designs).
``mechaudit calibrate`` writes each as ``data/computed/NAME.csv`` (floats at full precision) beside
``NAME.json``, the settings that produced it with the benchmark's manifest. A chapter reads a table
back (``load``) only when its own settings are exactly the recorded ones, else computes it; the suite
re-evaluates rows of every committed table, so a stale file fails a test rather than a reader.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from mechaudit.paths import REPO_ROOT, file_sha256

#: where the committed tables live (the shipped benchmark's results, whatever ``MECHAUDIT_DATA`` says)
COMPUTED_DIR = REPO_ROOT / "data" / "computed"


#: the benchmark files a simulation reads (the perturbation suites are not among them)
SIMULATED_FILES = ("vocabulary.yaml", "instances.yaml", "hypotheses.jsonl")


def with_benchmark(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` plus the sha256 of each benchmark file in ``SIMULATED_FILES``."""
    folder = REPO_ROOT / "data"
    return {**settings, "benchmark": {name: file_sha256(folder / name) for name in SIMULATED_FILES}}


def canonical(settings: Mapping[str, Any]) -> str:
    """The settings as canonical JSON (sorted keys, tuples as lists): equal settings, equal text."""
    return json.dumps(settings, sort_keys=True, indent=1, default=list) + "\n"


def paths(name: str, folder: str | Path = COMPUTED_DIR) -> tuple[Path, Path]:
    """``(NAME.csv, NAME.json)`` under ``folder``."""
    folder = Path(folder)
    return folder / f"{name}.csv", folder / f"{name}.json"


def save(name: str, table: pd.DataFrame, settings: Mapping[str, Any], folder: str | Path = COMPUTED_DIR
         ) -> Path:
    """Write ``table`` (index dropped, floats at full precision) and its ``settings``; returns the CSV path."""
    csv, meta = paths(name, folder)
    csv.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(csv, index=False, float_format="%.17g", lineterminator="\n")
    meta.write_text(canonical(settings), encoding="utf-8")
    return csv


def write_record(name: str, record: Mapping[str, Any], folder: str | Path = COMPUTED_DIR) -> bool:
    """Write ``record`` as ``NAME.json`` (canonical, atomic replace) if it differs; True if it did."""
    path = Path(folder) / f"{name}.json"
    text = canonical(record)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return True


def recorded(name: str, folder: str | Path = COMPUTED_DIR) -> dict[str, Any] | None:
    """The settings recorded beside ``name`` (None when there is no committed table)."""
    _, meta = paths(name, folder)
    return json.loads(meta.read_text(encoding="utf-8")) if meta.is_file() else None


def load(name: str, settings: Mapping[str, Any], folder: str | Path = COMPUTED_DIR) -> pd.DataFrame | None:
    """The committed table ``name`` if it was computed with exactly ``settings``, else None."""
    csv, _ = paths(name, folder)
    found = recorded(name, folder)
    if found is None or not csv.is_file() or canonical(found) != canonical(settings):
        return None
    return pd.read_csv(csv)


def cached(name: str, settings: Mapping[str, Any], compute: Callable[[], pd.DataFrame], *, write: bool = False,
           force: bool = False, folder: str | Path = COMPUTED_DIR) -> tuple[pd.DataFrame, str]:
    """``(the committed table, "committed")`` if computed with exactly ``settings``, else
    ``(compute(), "computed now")``, saved with ``write``; ``force`` always computes."""
    found = None if force else load(name, settings, folder)
    if found is not None:
        return found, "committed"
    table = compute()
    if write:
        save(name, table, settings, folder)
    return table, "computed now"


def summary(tables: Mapping[str, pd.DataFrame], sources: Mapping[str, str], unit: str = "rows") -> str:
    """``mechaudit calibrate``'s report, one line per table: its file, size and whether it was
    written now (``sources``: name -> what ``cached`` returned)."""
    return "\n".join(f"data/computed/{name}.csv ({len(table)} {unit}): "
                     f"{'written' if sources[name] == 'computed now' else 'current, kept'}"
                     for name, table in tables.items())
