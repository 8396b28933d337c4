"""Timing of the workflow simulator and the replication loops built on it (prints a table; not a test).

Run: ``.venv/bin/python benchmarks/bench_simulator.py [--reps 20]``.

Each row times one job two ways in the same run, *before* (the slower path the book used first, or
the baseline) and *after* (the path the chapters use now), and prints the ratio:

- per run: ``simulate(log=True)`` (full records) -> ``simulate(log=False)`` (delivered hypotheses
  only) -> ``simulate_outcomes`` (mechanism keys only; identical draws and chains);
- one instance's mechanism-key divergence matrix: pairwise ``MechanismKeyRule`` -> ``key_matrix``;
- chapter 02b's replication loop (mechanism key, paper design, per replication): ``simulate(log=False)``
  + ``instance_matrices`` + Table 1 -> ``validity.replicate`` (``simulate_outcomes`` + key counts);
- the population truth (40 runs per depth): full runs + ``key_matrix`` -> ``population_truth``;
- one power replication at 4 x (10 + 10) runs: fresh simulation + Monte Carlo test -> drawing from a
  pre-simulated pool (``power.power_replications``);
- the permutation test on 4 x (5 + 5): exact (meet in the middle) and Monte Carlo with 999 resamples.

Times are the best of ``--repeat`` calls (seconds per unit in the ``unit`` column).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from mechaudit.divergence import comparison_matrix, divergence_matrix, monte_carlo_permutation_test, permutation_test
from mechaudit.schema import load_benchmark
from mechaudit.workflow import (
    MechanismKeyRule,
    by_instance,
    depth_table,
    instance_matrices,
    instance_models,
    key_matrix,
    load_design,
    load_simulator_params,
    population_truth,
    replicate,
    simulate,
)
from mechaudit.workflow.depth import outcome_matrices
from mechaudit.workflow.design import Design
from mechaudit.workflow.power import power_replications, simulate_pool
from mechaudit.workflow.simulator import simulate_outcomes
from mechaudit.workflow.validity import replication_seed


def best(fn, repeat: int) -> float:
    """Best wall time of ``repeat`` calls, seconds."""
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10, help="replications per loop timing")
    ap.add_argument("--repeat", type=int, default=3, help="timings per row (best is kept)")
    args = ap.parse_args()
    bench, params = load_benchmark(), load_simulator_params()
    design = load_design(instances=[i.id for i in bench.instances])
    models = instance_models(bench, params.evidence_weight)
    n_runs = design.n_runs
    rows: list[tuple[str, str, float, float]] = []

    full = best(lambda: simulate(bench, design, params, seed=0, models=models), args.repeat) / n_runs
    nolog = best(lambda: simulate(bench, design, params, seed=0, log=False, models=models), args.repeat) / n_runs
    ids = best(lambda: simulate_outcomes(bench, design, params, seed=0, models=models), args.repeat) / n_runs
    rows += [("simulate: log=True -> log=False", "s/run", full, nolog),
             ("simulate: log=False -> simulate_outcomes", "s/run", nolog, ids),
             ("simulate: log=True -> simulate_outcomes", "s/run", full, ids)]

    runs = simulate(bench, design, params, seed=0, log=False, models=models)
    rs = next(iter(by_instance(runs).values()))
    rows.append(("key matrix, one instance: pairwise -> counts", "s",
                 best(lambda: divergence_matrix([r.delivered for r in rs], MechanismKeyRule().same), args.repeat),
                 best(lambda: key_matrix(rs), args.repeat)))

    def loop_before() -> None:
        for rep in range(args.reps):
            r = simulate(bench, design, params, seed=replication_seed(1, rep), log=False, models=models)
            depth_table(instance_matrices(r, None), design.comparisons())

    rows.append(("02b replication (key): full runs -> replicate()", "s/rep",
                 best(loop_before, args.repeat) / args.reps,
                 best(lambda: replicate(bench, design, params, {"mechanism_key": None}, n_reps=args.reps, seed=1),
                      args.repeat) / args.reps))

    big = design.model_copy(update={"runs_per_depth": 40})

    def truth_before() -> None:
        mats = instance_matrices(simulate(bench, big, params, seed=7, log=False, models=models), None)
        for m in mats:
            for a, b in design.comparisons():
                comparison_matrix(m.D, m.depths, a, b)

    rows.append(("population truth, 40 runs/depth", "s", best(truth_before, 1),
                 best(lambda: population_truth(bench, design, params, runs_per_depth=40), args.repeat)))

    d15 = Design(instances=design.instances, depths=(1, 5), runs_per_depth=10)

    def power_fresh() -> None:
        for rep in range(args.reps):
            mats = outcome_matrices(simulate_outcomes(bench, d15, params, seed=replication_seed(3, rep), models=models))
            monte_carlo_permutation_test([m.D for m in mats], 10, n_resamples=199, seed=rep)

    pools = simulate_pool(bench, list(design.instances), params, 4, runs_per_depth=100, seed=0)
    rows.append(("power replication 4 x (10+10): fresh -> pool", "s/rep", best(power_fresh, 1) / args.reps,
                 best(lambda: power_replications(pools, 10, args.reps, seed=3), args.repeat) / args.reps))

    mats = outcome_matrices(simulate_outcomes(bench, design, params, seed=0, models=models))
    Ds = [comparison_matrix(m.D, m.depths, 1, 5)[0] for m in mats]
    rows.append(("permutation test 4 x (5+5): exact -> MC 999", "s", best(lambda: permutation_test(Ds, 5), args.repeat),
                 best(lambda: monte_carlo_permutation_test(Ds, 5, n_resamples=999), args.repeat)))

    print(f"design {design.n_runs} runs; replication loops over {args.reps} replications; best of {args.repeat}\n")
    print(f"| {'job':50s} | unit  | {'before':>10s} | {'after':>10s} | {'ratio':>7s} |")
    print(f"|{'-' * 52}|-------|{'-' * 12}|{'-' * 12}|{'-' * 9}|")
    for name, unit, before, after in rows:
        ratio = before / after if after > 0 else np.inf
        print(f"| {name:50s} | {unit:5s} | {before:10.2e} | {after:10.2e} | {ratio:6.1f}x |")


if __name__ == "__main__":
    main()
