"""The paper's reported numbers (``data/paper_reported.yaml``), by dotted key, and the one switch
that decides whether this process shows anything of the paper's (:func:`shown`).

A chapter's context sets the switch (on only for the shipped benchmark); when it is off, a glue key
that names the paper (:func:`names_paper`) is not glued and a paper column (:func:`is_paper_column`)
is not saved or shown."""

from __future__ import annotations

import re
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


#: whether this process shows the paper's numbers (:func:`show`); on outside a chapter (library use)
_shown = True
#: a glue key that names the paper (``ch03_paper_demands``; ``paper_rates``, the paper-rate rule, is a rule)
_PAPER_KEY = re.compile(r"(^|_)paper(?!_rates)(_|$)")
#: a table column that is the paper's: "paper", "paper (%)", "paper low", "paper's value"
_PAPER_COLUMN = re.compile(r"^paper\b(?!-rate)", re.IGNORECASE)


def show(on: bool) -> None:
    """Set this process's switch: ``ChapterContext.open`` calls it once with ``ctx.show_paper``."""
    global _shown
    _shown = bool(on)


def shown() -> bool:
    """Whether this process shows the paper's numbers: set by the chapter's context, true outside one."""
    return _shown


def names_paper(key: str) -> bool:
    """Whether a glue key names the paper (``ch05_paper_first_step_swapped_llm``)."""
    return bool(_PAPER_KEY.search(key))


def is_paper_column(name: object) -> bool:
    """Whether a table column (or one level of it) is the paper's: its label starts with "paper"."""
    parts = name if isinstance(name, tuple) else (name,)
    return any(isinstance(p, str) and _PAPER_COLUMN.match(p.strip()) for p in parts)


__all__ = ["entries", "entry", "reported", "label", "show", "shown", "names_paper", "is_paper_column"]

#: names that moved to ``mechaudit.report.comparison``: importable from here for one release
__getattr__ = moved_names(__name__, {
    "ComparisonTable": "mechaudit.report.comparison",
    "compare": "mechaudit.report.comparison",
    "format_p": "mechaudit.report.comparison",
    "power_of_ten": "mechaudit.report.comparison",
    "compare_paper_default": "mechaudit.report.comparison",
})
