"""Timing of the workflow simulator and the critique-depth analysis (prints numbers; not a test).

Run: ``.venv/bin/python benchmarks/bench_simulator.py``.
"""

from __future__ import annotations

import time

from mechaudit.divergence import divergence_matrix
from mechaudit.schema import load_benchmark
from mechaudit.workflow import (
    MechanismKeyRule,
    by_instance,
    counts,
    depth_table,
    instance_matrices,
    instance_models,
    key_matrix,
    load_design,
    load_simulator_params,
    simulate,
)


def timed(fn, repeat: int = 5) -> float:
    """Best wall time of ``repeat`` calls, seconds."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    bench, params, design = load_benchmark(), load_simulator_params(), load_design()
    models = instance_models(bench, params.evidence_weight)
    runs = simulate(bench, design, params, seed=0)
    print(f"design: {counts(runs)}")
    print(f"simulate 60 runs, full log:      {timed(lambda: simulate(bench, design, params, seed=0)):.3f} s")
    print(f"simulate 60 runs, no log:        "
          f"{timed(lambda: simulate(bench, design, params, seed=0, log=False, models=models)):.3f} s")
    rs = next(iter(by_instance(runs).values()))
    fast = timed(lambda: key_matrix(rs))
    slow = timed(lambda: divergence_matrix([r.delivered for r in rs], MechanismKeyRule().same))
    print(f"key matrix one instance: fast {fast * 1e3:.1f} ms, pairwise {slow * 1e3:.1f} ms ({slow / fast:.0f}x)")
    mats = instance_matrices(runs, None)
    print(f"Table 1 (3 exact tests, 4 instances): {timed(lambda: depth_table(mats, design.comparisons())):.3f} s")


if __name__ == "__main__":
    main()
