"""The paper's reported numbers (``data/paper_reported.yaml``), by dotted key.

The "paper vs this run" table that compares them lives in :mod:`mechaudit.report.comparison`."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from mechaudit.deprecation import moved_names
from mechaudit.errors import MechauditError
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
                if not isinstance(child.get("label"), str) or not child["label"].strip():
                    raise MechauditError("every reported number needs a 'label' (the text a reader sees)",
                                         file=path, field=key)
                flat[key] = child
            elif isinstance(child, dict):
                walk(child, key + ".")

    walk({k: v for k, v in tree.items() if k != "source"}, "")
    return flat


def entries(path: Path = REPORTED_PATH) -> dict[str, dict[str, Any]]:
    """Every reported number, keyed by its dotted name, with label, value, unit, section and chapter."""
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


def label(key: str, path: Path = REPORTED_PATH) -> str:
    """The human label of ``key``, unit included (e.g. "Extra divergence, 0 v 1 rounds (pp)")."""
    return entry(key, path)["label"]


__all__ = ["entries", "entry", "reported", "label"]

#: names that moved to ``mechaudit.report.comparison``: importable from here for one release
__getattr__ = moved_names(__name__, {
    "ComparisonTable": "mechaudit.report.comparison",
    "compare": "mechaudit.report.comparison",
    "format_p": "mechaudit.report.comparison",
    "power_of_ten": "mechaudit.report.comparison",
    "compare_paper_default": "mechaudit.report.comparison",
})
