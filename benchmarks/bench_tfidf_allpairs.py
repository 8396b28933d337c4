"""Benchmark: TF-IDF all-pairs "same" graph and grouping for a large synthetic hypothesis set.

Synthetic hypotheses recombine the committed ones (``data/hypotheses.jsonl``): each takes the
statement of one hypothesis of an instance, an explanation of 1-4 sentences drawn from that
instance's explanations, and the causal chain of a third hypothesis of the same instance, so the
vocabulary and overlap structure are those of the real data at a larger n.

Prints: n, threshold, time for the sparse graph, time for grouping (connected components), number
of "same" edges, number of groups, and the process's peak resident memory (ru_maxrss, which
includes the Python interpreter and imports). Usage::

    .venv/bin/python benchmarks/bench_tfidf_allpairs.py --n 20000
"""

from __future__ import annotations

import argparse
import re
import resource
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--threshold", type=float, default=0.25)
    parser.add_argument("--block-size", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    base = load_hypotheses()
    hyps = synthesise(base, args.n, args.seed)
    print(f"committed hypotheses: {len(base)}; synthetic: {len(hyps)}; "
          f"distinct texts: {len({(h.statement, h.explanation, tuple(s.id for s in h.chain)) for h in hyps})}")
    print(f"peak RSS before: {peak_rss_mib():.0f} MiB")

    rule = TfidfRule(threshold=args.threshold)
    t0 = time.perf_counter()
    graph = rule.same_graph(hyps, block_size=args.block_size, upper=True)
    t1 = time.perf_counter()
    rss_graph = peak_rss_mib()
    labels = group(graph, method="components")
    t2 = time.perf_counter()
    edges = graph.nnz - graph.shape[0]
    print(f"threshold {args.threshold}, block size {args.block_size}; upper-triangle graph (j >= i)")
    print(f"all-pairs graph: {t1 - t0:.1f} s; {edges} same-pairs of {args.n * (args.n - 1) // 2} "
          f"({100 * edges / (args.n * (args.n - 1) / 2):.2f}%); graph storage "
          f"{(graph.data.nbytes + graph.indices.nbytes + graph.indptr.nbytes) / 2**20:.0f} MiB; "
          f"peak RSS so far {rss_graph:.0f} MiB")
    print(f"grouping (connected components): {t2 - t1:.1f} s; {n_groups(labels)} groups")
    print(f"total {t2 - t0:.1f} s; peak RSS {peak_rss_mib():.0f} MiB (limit 2048 MiB)")


if __name__ == "__main__":
    main()
