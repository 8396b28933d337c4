"""Benchmark: TF-IDF all-pairs "same" graph and grouping for a large synthetic hypothesis set.

Synthetic hypotheses recombine the committed ones (``data/hypotheses.jsonl``): each takes the
statement of one hypothesis of an instance, an explanation of 1-4 sentences drawn from that
instance's explanations, and the causal chain of a third hypothesis of the same instance, so the
vocabulary and overlap structure are those of the real data at a larger n.

Each size runs in its own process, so its peak resident memory (ru_maxrss, interpreter and imports
included) is its own. Two methods: ``graph`` builds the upper-triangle "same" graph and then its
connected components (memory grows with the number of edges, i.e. as n^2); ``stream`` merges
components block by block (``TfidfRule.components``) and never holds the edge list. Prints a table
and the growth exponent of the streaming time. Usage::

    .venv/bin/python benchmarks/bench_tfidf_allpairs.py --sizes 5000 20000 50000 100000
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import time

import numpy as np

from mechaudit.diversity import group, n_groups
from mechaudit.rules import TfidfRule
from mechaudit.schema import Hypothesis, load_hypotheses


def peak_rss_mib() -> float:
    """Peak resident set size of this process in MiB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def synthesise(hypotheses: list[Hypothesis], n: int, seed: int) -> list[Hypothesis]:
    """``n`` recombined hypotheses (see module docstring), reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    by_instance: dict[str, list[Hypothesis]] = {}
    for h in hypotheses:
        by_instance.setdefault(h.instance, []).append(h)
    instances = sorted(by_instance)
    sentences = {
        i: [s for h in hs for s in re.split(r"(?<=\.)\s+", h.explanation) if s]
        for i, hs in by_instance.items()
    }
    out = []
    for k in range(n):
        inst = instances[rng.integers(len(instances))]
        hs = by_instance[inst]
        h1, h3 = (hs[j] for j in rng.integers(len(hs), size=2))
        pool = sentences[inst]
        picked = rng.choice(len(pool), size=min(len(pool), int(rng.integers(1, 5))), replace=False)
        out.append(Hypothesis(
            id=f"syn{k}", instance=inst, statement=h1.statement,
            explanation=" ".join(pool[j] for j in picked), chain=h3.chain,
        ))
    return out


def run_one(n: int, threshold: float, block_size: int, seed: int, mode: str) -> dict:
    """Group ``n`` synthetic hypotheses in this process; time, groups and peak RSS."""
    hyps = synthesise(load_hypotheses(), n, seed)
    rule = TfidfRule(threshold=threshold)
    t0 = time.perf_counter()
    if mode == "stream":
        labels = rule.components(hyps, block_size=block_size)
    else:  # the whole upper-triangle graph, then connected components (the earlier method)
        labels = group(rule.same_graph(hyps, block_size=block_size, upper=True), method="components")
    return {"n": n, "mode": mode, "seconds": time.perf_counter() - t0, "groups": n_groups(labels),
            "peak_rss_mib": peak_rss_mib()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5_000, 20_000, 50_000, 100_000])
    parser.add_argument("--threshold", type=float, default=0.25)
    parser.add_argument("--block-size", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--baseline-max", type=int, default=20_000,
                        help="largest n for the whole-graph baseline (it needs memory ~ edges)")
    parser.add_argument("--one", nargs=2, metavar=("N", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:  # child process: one measurement, printed as JSON
        print(json.dumps(run_one(int(args.one[0]), args.threshold, args.block_size, args.seed, args.one[1])))
        return
    rows = []
    for n in args.sizes:
        for mode in ("graph", "stream") if n <= args.baseline_max else ("stream",):
            out = subprocess.run([sys.executable, __file__, "--one", str(n), mode, "--threshold",
                                  str(args.threshold), "--block-size", str(args.block_size), "--seed",
                                  str(args.seed)], check=True, capture_output=True, text=True)
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(rows[-1], flush=True)
    stream = [r for r in rows if r["mode"] == "stream"]
    slope = np.polyfit(np.log([r["n"] for r in stream]), np.log([r["seconds"] for r in stream]), 1)[0]
    print("\n| n | method | seconds | groups | peak RSS (MiB) | time vs whole graph |")
    print("|---:|---|---:|---:|---:|---:|")
    graph = {r["n"]: r for r in rows if r["mode"] == "graph"}
    for r in rows:
        base = graph.get(r["n"])
        ratio = f"{base['seconds'] / r['seconds']:.2f}x" if base and r["mode"] == "stream" else ""
        print(f"| {r['n']:,} | {r['mode']} | {r['seconds']:.1f} | {r['groups']} | {r['peak_rss_mib']:.0f} | {ratio} |")
    print(f"\nstreaming time grows as n^{slope:.2f} (least squares over {len(stream)} sizes)")


if __name__ == "__main__":
    main()
