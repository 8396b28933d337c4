"""Benchmark: exact permutation test (meet-in-the-middle) vs brute-force enumeration.

Prints the time of ``permutation_test`` for 3 and 4 instances of 5 + 5 runs (126 splits each, 126**4
= 252,047,376 split combinations for 4), and of a brute force that enumerates every combination with
``itertools.product`` over precomputed per-instance split values (3 instances: 2,000,376
combinations; 4 instances is extrapolated as 126 x the 3-instance time).

Run: ``.venv/bin/python benchmarks/bench_permutation.py [--seed 0] [--repeats 5]``
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from mechaudit.divergence import permutation_test, split_extras


def random_instance(rng: np.random.Generator, effect: float, grid: int) -> np.ndarray:
    """A 10 x 10 divergence matrix with a cross-depth effect; entries on the 1/grid grid (ties
    occur, as with run divergences over ~12 matched pairs) or continuous when grid == 0."""
    base = rng.random((10, 10)) if grid == 0 else rng.integers(0, grid + 1, (10, 10)) / grid
    D = np.triu(base * (1 - effect), 1)
    D[:5, 5:] += effect
    return D + D.T


def brute_force_p(Ds: list[np.ndarray], n_a: int, tol: float = 1e-9) -> float:
    """Two-sided p by enumerating every combination of per-instance splits one by one."""
    values = [split_extras(D, n_a).tolist() for D in Ds]
    k = len(Ds)
    observed = abs(sum(v[0] for v in values) / k) - tol
    hits = total = 0
    for combo in itertools.product(*values):
        total += 1
        if abs(sum(combo) / k) >= observed:
            hits += 1
    return hits / total


def enumerated_p_numpy(Ds: list[np.ndarray], n_a: int, tol: float = 1e-9) -> float:
    """Two-sided p by materialising every combination's sum with numpy, one first-instance split
    at a time (all 126**k combinations are formed; a full check for k = 4)."""
    values = [split_extras(D, n_a) for D in Ds]
    k = len(Ds)
    observed = abs(sum(v[0] for v in values)) - tol * k
    rest = np.zeros(1)
    for v in values[1:]:
        rest = np.add.outer(rest, v).ravel()
    hits = sum(int(np.count_nonzero(np.abs(rest + x) >= observed)) for x in values[0])
    return hits / (len(values[0]) * len(rest))


def best_time(fn, repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--effect", type=float, default=0.1)
    parser.add_argument("--grid", type=int, default=12, help="0 = continuous entries (no ties)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    Ds = [random_instance(rng, args.effect, args.grid) for _ in range(4)]

    t_exact4, res4 = best_time(lambda: permutation_test(Ds, 5), args.repeats)
    t_exact3, res3 = best_time(lambda: permutation_test(Ds[:3], 5), args.repeats)
    t_brute3, p_brute3 = best_time(lambda: brute_force_p(Ds[:3], 5), 1)

    print(f"exact, 4 instances: {t_exact4 * 1e3:.2f} ms  p={res4.p_value:.10g}  extra={res4.extra:.4f}  "
          f"n_partitions={res4.n_partitions}  combinations={res4.n_partitions**4:,}")
    print(f"exact, 3 instances: {t_exact3 * 1e3:.2f} ms  p={res3.p_value:.12g}")
    print(f"brute force, 3 instances: {t_brute3:.2f} s  p={p_brute3:.12g}  |diff|={abs(p_brute3 - res3.p_value):.1e}")
    print(f"ratio brute(3) / exact(3): {t_brute3 / t_exact3:,.0f}x")
    print(f"ratio brute(3) / exact(4): {t_brute3 / t_exact4:,.0f}x")
    print(f"brute force, 4 instances (extrapolated 126 x): {126 * t_brute3:.0f} s")
    t_enum4, p_enum4 = best_time(lambda: enumerated_p_numpy(Ds, 5), 1)
    print(f"numpy enumeration of all 126**4 combinations: {t_enum4:.2f} s  p={p_enum4:.10g}  "
          f"|diff|={abs(p_enum4 - res4.p_value):.1e}")


if __name__ == "__main__":
    main()
