"""A toy design small enough to read in full: the worked example of chapter 01.

One instance, ``n_openings`` openings, ``n_runs`` reruns at depths 0 and 1; a delivered hypothesis is
an initiating event and a route label. Each opening keeps its mechanism except that a rerun develops
another route with probability ``rerun_noise``; at depth 1 the critique then replaces the route
(``R'``) with probability ``critique_change`` and, given that, the initiating event (``I'``) with
probability ``initiator_change``. Rules: ``exact`` (event and route) and ``initiator`` (event only).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class ToyHypothesis:
    """One delivered toy hypothesis: lineage (``opening_id``), depth, run and its mechanism labels."""

    opening_id: str
    depth: int
    run: str
    initiator: str
    route: str

    @property
    def mechanism(self) -> str:
        return f"{self.initiator} -> {self.route}"


def toy_design(n_openings: int = 5, n_runs: int = 5, rerun_noise: float = 0.1, critique_change: float = 0.5,
               initiator_change: float = 0.5, seed: int = 0) -> list[list[ToyHypothesis]]:
    """``2 * n_runs`` runs of ``n_openings`` hypotheses: ``n_runs`` at depth 0, then at depth 1."""
    for name, p in {"rerun_noise": rerun_noise, "critique_change": critique_change,
                    "initiator_change": initiator_change}.items():
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{name} must be a probability in [0, 1], got {p}")
    rng = np.random.default_rng(seed)
    runs: list[list[ToyHypothesis]] = []
    for depth in (0, 1):
        for r in range(n_runs):
            run_id = f"K{depth}-r{r + 1}"
            run = []
            for o in range(n_openings):
                initiator, route = f"I{o + 1}", f"R{o + 1}"
                if rng.random() < rerun_noise:
                    route = f"R{o + 1}~{run_id}"  # a rerun's own variant route
                if depth == 1 and rng.random() < critique_change:
                    route = f"R{o + 1}'"
                    if rng.random() < initiator_change:
                        initiator = f"I{o + 1}'"
                run.append(ToyHypothesis(f"O{o + 1}", depth, run_id, initiator, route))
            runs.append(run)
    return runs


def toy_table(runs: list[list[ToyHypothesis]]) -> pd.DataFrame:
    """The delivered mechanisms as a table: one row per run, one column per opening hypothesis."""
    rows = {run[0].run: {h.opening_id: h.mechanism for h in run} for run in runs}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("run")


def same_exact(pairs: list[tuple[ToyHypothesis, ToyHypothesis]]) -> np.ndarray:
    """Rule ``exact``: same initiating event and route; bool per pair."""
    return np.array([a.initiator == b.initiator and a.route == b.route for a, b in pairs], dtype=bool)


def same_initiator(pairs: list[tuple[ToyHypothesis, ToyHypothesis]]) -> np.ndarray:
    """Rule ``initiator``: same initiating event; bool per pair."""
    return np.array([a.initiator == b.initiator for a, b in pairs], dtype=bool)


TOY_RULES = {"exact": same_exact, "initiator": same_initiator}
