"""Where a chapter's delivered runs come from: the simulator offline, the LLM workflow otherwise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mechaudit.schema import Benchmark
from mechaudit.workflow.agents import GENERATOR, run_workflow
from mechaudit.workflow.design import Design
from mechaudit.workflow.records import Run
from mechaudit.workflow.simulator import SimulatorParams, simulate


@dataclass(frozen=True)
class Delivery:
    """The runs of a design and what produced them.

    runs: one ``Run`` per design cell. client: the LLM client that generated them (``None`` for the
    simulator), for judges that should share its cache. source: a label for tables and captions.
    """

    runs: list[Run]
    client: Any | None
    source: str


def deliver(bench: Benchmark, design: Design, backend: str, *, simulator: SimulatorParams | None = None,
            seed: int = 0, generator_model: str = GENERATOR, cache_dir: str | None = None) -> Delivery:
    """Run ``design``: with backend ``reference`` through the simulator (``simulator`` parameters,
    ``seed``), with ``anthropic`` or ``replay`` through the real workflow and the LLM layer."""
    if backend == "reference":
        if simulator is None:
            raise ValueError("backend 'reference' needs simulator parameters (load_simulator_params)")
        return Delivery(simulate(bench, design, simulator, seed=seed), None, "simulator (backend reference)")
    from mechaudit.llm import get_client

    client = get_client(backend=backend, cache_dir=cache_dir)
    runs = run_workflow(bench, design, client, model=generator_model)
    return Delivery(runs, client, f"LLM workflow ({generator_model}, backend {backend})")
