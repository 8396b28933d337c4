"""Benchmark of mechaudit.tau on the synthetic pool with the simulated judge (offline).

Prints: tau recovery over many repetitions (share within 10%, bias, sd vs reported standard
errors), the timing of infer_score and fit_tau, and score-recovery numbers. Usage:
    .venv/bin/python benchmarks/bench_tau.py [--reps 50]
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from mechaudit.tau import (
    SimulatedJudge,
    fit_tau_detailed,
    infer_score,
    make_pool,
    sample_pairs,
    simulate_pairs,
    studies,
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--stories", type=int, default=200)
    args = parser.parse_args()
    pd.set_option("display.width", 160)
    pool = make_pool(seed=0)

    t0 = time.perf_counter()
    rec = studies.tau_recovery(pool, (0.5, 0.8, 1.5), n_pairs=2000, n_reps=args.reps, seed=100)
    print(f"tau recovery, {args.reps} reps x 3 taus x 2 methods, 2000 pairs: {time.perf_counter() - t0:.1f} s")
    print(studies.recovery_table(rec).round(4).to_string())

    pairs = simulate_pairs(sample_pairs(pool.table(), 2000, seed=1), 0.8, seed=2)
    for method in ("grid", "mle"):
        t0 = time.perf_counter()
        for _ in range(20):
            fit_tau_detailed(pairs, method)
        print(f"fit_tau({method}) on 2000 pairs: {(time.perf_counter() - t0) / 20 * 1000:.1f} ms")
    anchors = [{"score10": 1 + 0.8 * i, "weight": 1.0} for i in range(11)]
    comps = [{"anchor_id": f"A{i + 1}", "judgement": "better" if i < 6 else "worse", "strength": "medium"}
             for i in range(11)]
    t0 = time.perf_counter()
    for _ in range(200):
        infer_score(anchors, comps, 1.0)
    print(f"infer_score, 11 anchors, 901-point grid: {(time.perf_counter() - t0) / 200 * 1000:.2f} ms")

    judge = SimulatedJudge(pool.truth())
    t0 = time.perf_counter()
    reviews, rounds = studies.simulated_reviews(pool, judge, n_stories=args.stories, seed=7)
    print(f"{args.stories} simulated reviews (3 roles, densify on): {time.perf_counter() - t0:.1f} s")
    print(studies.recovery_summary(reviews).round(3).to_string())
    print(studies.weight_scale_effect(rounds).round(3).to_string())


if __name__ == "__main__":
    main()
