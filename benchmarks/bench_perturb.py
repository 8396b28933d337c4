"""Timing of the perturbation suite: build (perturb + check) and re-check of the committed suite.

Run: ``.venv/bin/python benchmarks/bench_perturb.py``; prints seconds and pairs per second.
"""

from __future__ import annotations

import time

from mechaudit.perturb import check, load_suite, make_suite
from mechaudit.schema import load_benchmark


def main() -> None:
    bench = load_benchmark()
    t0 = time.perf_counter()
    pairs = make_suite(bench.hypotheses, seed=0, vocabulary=bench.vocabulary)
    t1 = time.perf_counter()
    committed = load_suite()
    t2 = time.perf_counter()
    ok = sum(check(p["original"], p["variant"], p["kind"], bench.vocabulary) for p in committed)
    t3 = time.perf_counter()
    print(f"make_suite: {len(pairs)} pairs in {t1 - t0:.2f} s ({len(pairs) / (t1 - t0):.0f}/s)")
    print(f"load_suite: {len(committed)} pairs in {t2 - t1:.2f} s")
    print(f"check: {ok}/{len(committed)} valid in {t3 - t2:.2f} s ({len(committed) / (t3 - t2):.0f}/s)")


if __name__ == "__main__":
    main()
