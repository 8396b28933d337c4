"""Where a chapter's delivered runs come from: the simulator offline, the LLM workflow otherwise;
and the set-up chapters 02, 03 and 04 share (benchmark, design, simulator parameters, delivery)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from mechaudit.llm.client import check_client
from mechaudit.schema import Benchmark
from mechaudit.workflow.agents import GENERATOR, run_workflow
from mechaudit.workflow.design import Design
from mechaudit.workflow.records import Run, excluded_frame
from mechaudit.workflow.simulator import SimulatorParams, load_simulation, simulate


@dataclass(frozen=True)
class Delivery:
    """The runs (one per design cell), the LLM ``client`` that made them (None: the simulator), a label."""

    runs: list[Run]
    client: Any | None
    source: str

    @property
    def excluded(self) -> pd.DataFrame:
        """Hypotheses dropped for a reply still invalid after the JSON repairs (``excluded_frame``)."""
        return excluded_frame(self.runs)


def deliver(bench: Benchmark, design: Design, client: Any | None, *, simulator: SimulatorParams | None = None,
            seed: int = 0, generator_model: str = GENERATOR, json_retries: int = 2) -> Delivery:
    """Run ``design`` through the simulator (``client`` None) or ``run_workflow`` with ``client``."""
    if check_client(client) is None:
        if simulator is None:
            raise ValueError("offline delivery (no LLM client) needs simulator parameters (load_simulator_params)")
        return Delivery(simulate(bench, design, simulator, seed=seed), None, "simulator (backend reference)")
    runs = run_workflow(bench, design, client, model=generator_model, json_retries=json_retries)
    return Delivery(runs, client, f"LLM workflow ({generator_model}, backend {client.backend})")


def excluded_note(n: int, json_retries: int, what: str = "hypotheses") -> str:
    """One sentence: how many ``what`` were excluded for invalid replies, and how to ask again."""
    note = f"Excluded: {n} {what} whose reply stayed invalid after {json_retries} JSON repair request(s)"
    if n:
        note += (f"; they count nowhere else. Re-run with -p json_retries {json_retries + 2} to ask again "
                 f"for exactly these (every earlier answer comes from the cache).")
    return note + ("" if n else ".")


def show_excluded(excluded: pd.DataFrame, json_retries: int, what: str = "hypotheses") -> None:
    """Print :func:`excluded_note` and, when something was excluded, display the table."""
    print(excluded_note(len(excluded), json_retries, what))
    if len(excluded):
        from IPython.display import display  # defers IPython

        display(excluded)


@dataclass(frozen=True)
class WorkflowSetup:
    """A chapter's inputs: the benchmark, the design, the simulator parameters and the delivered runs."""

    bench: Benchmark
    design: Design
    simulator: SimulatorParams
    delivery: Delivery


def workflow_setup(client: Any | None, *, data_dir: str | Path | None = None, design_file: str = "paper.yaml",
                   simulator_file: str = "simulator.yaml", seed: int = 0, generator_model: str = GENERATOR,
                   json_retries: int = 2) -> WorkflowSetup:
    """Load the benchmark, the design and simulator files (``params/``) and ``deliver`` the runs."""
    bench, design, simulator = load_simulation(data_dir, design_file, simulator_file)
    delivery = deliver(bench, design, client, simulator=simulator, seed=seed, generator_model=generator_model,
                       json_retries=json_retries)
    return WorkflowSetup(bench, design, simulator, delivery)


def report_dropped(delivery: Delivery, json_retries: int) -> None:
    """Show the hypotheses an LLM delivery dropped for invalid replies (nothing for the simulator)."""
    if delivery.client is not None:
        show_excluded(delivery.excluded, json_retries)
