"""The status a chapter reports beside its headline numbers (the intro's results-at-a-glance table)."""

from __future__ import annotations

from mechaudit.backends import Backend

#: what the offline (``reference`` backend) numbers are, per kind of chapter
SIMULATED = "simulated (reference backend)"
LOCAL = "computed locally (no LLM)"
REFERENCE_JUDGE = "reference judge (not an LLM)"


def headline_status(backend: str, model: str, offline: str) -> str:
    """``"LLM (<model>, <backend>)"`` for an LLM backend, else ``offline`` (e.g. ``SIMULATED``)."""
    parsed = Backend.parse(backend)
    return f"LLM ({model}, {parsed.value})" if parsed.is_llm else offline


def simulation_only_note(backend: str) -> None:
    """LLM backends only: print that the chapter runs the simulator anyway (it needs the simulator's
    ground truth) and sends no LLM request."""
    if Backend.parse(backend).is_llm:
        print(f"backend {backend!r}: this chapter is simulation-only (it needs the simulator's ground truth), "
              "so it runs with the simulator and sends no LLM request.")
