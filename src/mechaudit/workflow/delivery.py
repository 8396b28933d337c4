"""Where a chapter's delivered runs come from: the simulator offline, the LLM workflow otherwise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from mechaudit.backends import Backend
from mechaudit.schema import Benchmark
from mechaudit.workflow.agents import GENERATOR, run_workflow
from mechaudit.workflow.design import Design
from mechaudit.workflow.records import Run, excluded_frame
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

    @property
    def excluded(self) -> pd.DataFrame:
        """Hypotheses dropped for a reply still invalid after the JSON repairs (``excluded_frame``)."""
        return excluded_frame(self.runs)


def deliver(bench: Benchmark, design: Design, backend: str, *, simulator: SimulatorParams | None = None,
            seed: int = 0, generator_model: str = GENERATOR, cache_dir: str | None = None,
            json_retries: int = 2) -> Delivery:
    """Run ``design``: with backend ``reference`` through the simulator (``simulator`` parameters,
    ``seed``), with ``anthropic`` or ``replay`` through the real workflow and the LLM layer (answers
    cached under ``cache_dir``; ``json_retries`` repair requests per invalid reply, see
    ``run_workflow``)."""
    if not Backend.parse(backend).is_llm:
        if simulator is None:
            raise ValueError("backend 'reference' needs simulator parameters (load_simulator_params)")
        return Delivery(simulate(bench, design, simulator, seed=seed), None, "simulator (backend reference)")
    from mechaudit.llm import get_client

    client = get_client(backend=backend, cache_dir=cache_dir)
    runs = run_workflow(bench, design, client, model=generator_model, json_retries=json_retries)
    return Delivery(runs, client, f"LLM workflow ({generator_model}, backend {backend})")


def excluded_note(n: int, json_retries: int, what: str = "hypotheses") -> str:
    """One sentence: how many ``what`` were excluded for a reply still invalid after
    ``json_retries`` repair requests, and the parameter that asks again for exactly those."""
    note = f"Excluded: {n} {what} whose reply stayed invalid after {json_retries} JSON repair request(s)"
    if n:
        note += (f"; they count nowhere else. Re-run with -p json_retries {json_retries + 2} to ask again "
                 f"for exactly these (every earlier answer comes from the cache).")
    return note + ("" if n else ".")


def show_excluded(excluded: pd.DataFrame, json_retries: int, what: str = "hypotheses") -> None:
    """Print :func:`excluded_note` and, when something was excluded, display the table."""
    print(excluded_note(len(excluded), json_retries, what))
    if len(excluded):
        from IPython.display import display

        display(excluded)
