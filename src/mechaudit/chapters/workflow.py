"""The set-up chapters 02, 03 and 04 share: load the benchmark and the design, deliver the runs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mechaudit.backends import Backend
from mechaudit.paths import PARAMS_DIR
from mechaudit.schema import Benchmark, load_benchmark
from mechaudit.workflow import (
    Delivery,
    Design,
    SimulatorParams,
    deliver,
    load_design,
    load_simulator_params,
    show_excluded,
)
from mechaudit.workflow.delivery import GENERATOR


@dataclass(frozen=True)
class WorkflowSetup:
    """A chapter's inputs: the benchmark, the design, the simulator parameters and the delivered runs."""

    bench: Benchmark
    design: Design
    simulator: SimulatorParams
    delivery: Delivery


def workflow_setup(backend: str, *, data_dir: str | Path | None = None, design_file: str = "paper.yaml",
                   simulator_file: str = "simulator.yaml", seed: int = 0, generator_model: str = GENERATOR,
                   cache_dir: str | None = None, json_retries: int = 2) -> WorkflowSetup:
    """Load the benchmark (``data_dir``, default the shipped data), the design and simulator parameter
    files (names under ``params/``), and deliver the design's runs with ``backend`` (see ``deliver``)."""
    bench = load_benchmark(data_dir)
    design = load_design(PARAMS_DIR / design_file, instances=[i.id for i in bench.instances])
    simulator = load_simulator_params(PARAMS_DIR / simulator_file)
    delivery = deliver(bench, design, backend, simulator=simulator, seed=seed, generator_model=generator_model,
                       cache_dir=cache_dir, json_retries=json_retries)
    return WorkflowSetup(bench, design, simulator, delivery)


def report_dropped(delivery: Delivery, backend: str, json_retries: int) -> None:
    """LLM backends only: show the hypotheses the workflow dropped because a reply stayed invalid
    after ``json_retries`` repairs. Simulator runs drop nothing: prints nothing."""
    if Backend.parse(backend).is_llm:
        show_excluded(delivery.excluded, json_retries)
