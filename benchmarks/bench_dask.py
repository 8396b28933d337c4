"""Benchmark: a large power study on one process, on joblib's process pool and on a Dask cluster.

The study is ``power.power_replications`` over a pool of 8 instances x (40 + 40) runs simulated at
the calibrated setting, ``--reps`` replications (default 10,000) of 8 instances x (20 + 20) runs,
each with a Monte Carlo permutation test of ``--resamples`` splits (default 199), in tasks of
``--chunk`` replications. It runs three ways: ``n_jobs=1`` (the baseline), loky with ``n_jobs=-1``,
and ``parallel_backend="dask"`` on a ``dask.distributed.LocalCluster`` of one worker process per
core (started by ``parallel.connect``; its start-up is timed apart). Every way must give the same
table as the baseline (checked, printed). On a cluster of several machines only the Dask row grows.

Run: ``.venv/bin/python benchmarks/bench_dask.py [--reps 10000] [--resamples 199] [--chunk 100]``
"""

from __future__ import annotations

import argparse
import os
import time

from mechaudit.schema import load_benchmark
from mechaudit.workflow import load_simulator_params
from mechaudit.workflow.parallel import connect
from mechaudit.workflow.power import power_replications, simulate_pool


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10_000, help="replications of the power study")
    ap.add_argument("--resamples", type=int, default=199, help="Monte Carlo splits per test")
    ap.add_argument("--chunk", type=int, default=100, help="replications per task")
    args = ap.parse_args()
    bench = load_benchmark()
    pools = simulate_pool(bench, [i.id for i in bench.instances], load_simulator_params(), n_instances=8,
                          runs_per_depth=40, seed=0, measure="paper_rates")

    def study(**engine):
        return power_replications(pools, 20, args.reps, seed=1, n_resamples=args.resamples, chunk=args.chunk,
                                  **engine)

    cores = os.cpu_count()
    load = os.getloadavg()[0]  # other work on the machine shares the cores: said beside the table
    base_s, base = timed(lambda: study(n_jobs=1))
    rows = [("one process (n_jobs=1)", 1, base_s, True)]
    loky_s, loky = timed(lambda: study(n_jobs=-1, parallel_backend="loky"))
    rows.append(("joblib loky (n_jobs=-1)", cores, loky_s, loky.equals(base)))
    start_s, client = timed(lambda: connect("dask", n_workers=cores))
    try:
        dask_s, dask = timed(lambda: study(n_jobs=-1, parallel_backend="dask"))
        workers = len(client.scheduler_info()["workers"])
    finally:
        client.close()
        client.cluster.close()
    rows.append(("Dask LocalCluster (parallel_backend='dask')", workers, dask_s, dask.equals(base)))

    print(f"power study: {args.reps:,} replications of 8 instances x (20 + 20) runs, Monte Carlo test with "
          f"{args.resamples} splits, {args.chunk} replications per task; {cores} cores. Dask cluster start-up "
          f"(not in its row): {start_s:.1f} s. Load average when it started: {load:.1f} on {cores} cores "
          "(above 0 means other processes shared them).\n")
    print(f"| {'engine':45s} | workers | {'s':>7s} | ms/rep | speed-up | same table as n_jobs=1 |")
    print(f"|{'-' * 47}|---------|{'-' * 9}|--------|----------|------------------------|")
    for engine, workers, seconds, same in rows:
        print(f"| {engine:45s} | {workers:7d} | {seconds:7.1f} | {1000 * seconds / args.reps:6.2f} | "
              f"{base_s / seconds:7.2f}x | {'yes' if same else 'NO':22s} |")


if __name__ == "__main__":
    main()
