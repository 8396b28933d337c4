"""What the chapter modules (``mechaudit.book.ch*``) share; no chapter module imports another.

The status of a chapter's headline (where its numbers come from) and, beside it in the intro's
results-at-a-glance table, the provenance (how they can relate to the paper's,
``mechaudit.provenance``) and the verdict; the placeholder a judge-model section shows when it did
not run; and the judge models a chapter's parameters ask for (its cost plan and its steps agree).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from mechaudit import provenance
from mechaudit.backends import Backend
from mechaudit.paper import entry

#: what the offline (``reference`` backend) numbers are, per kind of chapter
SIMULATED = "simulated (reference backend)"
LOCAL = "computed locally (no LLM)"
REFERENCE_JUDGE = "reference judge (not an LLM)"


def headline_status(backend: str, model: str, offline: str) -> str:
    """``"LLM (<model>, <backend>)"`` for an LLM backend, else ``offline`` (e.g. ``SIMULATED``)."""
    parsed = Backend.parse(backend)
    return f"LLM ({model}, {parsed.value})" if parsed.is_llm else offline


def axis_placeholder(backend: str, models: Sequence[str]) -> pd.DataFrame:
    """The one-row table a judge-model section shows when it did not run, and why."""
    why = "offline backend" if not Backend.parse(backend).is_llm else f"one judge model ({models[0]})"
    return pd.DataFrame({"status": [f"not run: {why}"]}, index=pd.Index(["judge models"], name="axis"))


def judge_models(p: Mapping[str, Any]) -> list[str]:
    """The judge models a chapter runs, main judge first: ``judge_model`` (chapters 02, 05, 06)
    followed by ``judge_models`` (the judge-model axis; chapter 07 has only this list), each name once."""
    first = [p["judge_model"]] if "judge_model" in p else []
    return list(dict.fromkeys([*first, *(p.get("judge_models") or [])]))


def simulation_only_note(backend: str) -> None:
    """LLM backends only: print that the chapter runs the simulator anyway (it needs the simulator's
    ground truth) and sends no LLM request."""
    if Backend.parse(backend).is_llm:
        print(f"backend {backend!r}: this chapter is simulation-only (it needs the simulator's ground truth), "
              "so it runs with the simulator and sends no LLM request.")


# --------------------------------------------------------------------------- provenance and verdict

@dataclass(frozen=True)
class Part:
    """One number of a row of the intro's results table: its name in the provenance cell, its key
    (``mechaudit.provenance``), the perturbation suite it was measured on (None: not a suite result)
    and whether the row shows it only offline."""

    name: str
    key: str
    suite: str | None = None
    offline_only: bool = False


_FSS = "perturbations.first_step_swapped_pct_different"
#: the numbers of each chapter's row in the intro's results table
HEADLINE_PARTS: dict[str, tuple[Part, ...]] = {
    "ch02": (Part("0 v 1", "critique_depth.extra_divergence_pp.k0_vs_k1"),
             Part("1 v 5", "critique_depth.extra_divergence_pp.k1_vs_k5")),
    "ch02b": (Part("bias and size", "book.validity"),),
    "ch02c": (Part("power", "book.power"),),
    "ch03": (Part("conceded", "engagement.conceded_pct"),),
    "ch04": (Part("distinct mechanisms", "book.diversity.clusters"),),
    "ch05": (Part("text rules on the reworded suite", f"{_FSS}.tfidf", "reworded"),
             Part("LLM judge", f"{_FSS}.llm"),
             Part("reference judge", "book.perturbations.reference_judge"),
             Part("text rules on the template-built suite", f"{_FSS}.tfidf", "template")),
    "ch06": (Part("none", "rubric.first_step_swapped_pct_different.none"),
             Part("full", "rubric.first_step_swapped_pct_different.full"),
             Part("step", "rubric.first_step_swapped_pct_different.step"),
             Part("reference judges", "book.rubric.reference_judges", offline_only=True)),
    "ch07": (Part("agreement", "sensitivity.raw_agreement_pct_low"), Part("κ", "sensitivity.kappa_low")),
    "ch08": (Part("τ error", "book.tau.recovery"),),
}
#: how far an LLM-backend number may lie from the paper's and still agree, by unit (else 10 % of it)
TOLERANCE = {"pp": 5.0, "%": 5.0, "kappa": 0.1}


def agrees(key: str, value: Any) -> bool | None:
    """Whether ``value`` lies within ``TOLERANCE`` of the paper's number under ``key``; None when
    either is not a number (a book result, text, not run)."""
    if key.startswith("book."):
        return None
    meta = entry(key)
    paper, unit = meta["value"], meta.get("unit")
    numbers = [v for v in (paper, value) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(numbers) < 2:
        return None
    return abs(float(value) - float(paper)) <= TOLERANCE.get(unit, 0.1 * abs(float(paper)))


def headline_provenance(chapter: str, backend: str, values: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """The intro row of ``chapter`` ("ch02", ...): its provenance cell (``provenance.summary``) and
    its verdict (``provenance.verdict``). ``values``: the row's numbers by part name, used to judge
    agreement with the paper under an LLM backend."""
    llm = Backend.parse(backend).is_llm
    parts = [p for p in HEADLINE_PARTS[chapter] if not (llm and p.offline_only)]
    found = [(p.name, provenance.of(p.key, backend, suite=p.suite)) for p in parts]
    checks = [agrees(p.key, values.get(p.name)) for p in parts] if values else [None]
    verdict = provenance.verdict([v for _, v in found], backend, all(c is True for c in checks))
    return provenance.summary(found), verdict
