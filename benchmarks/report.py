"""Run every benchmark and write their tables into ``benchmarks/RESULTS.md``.

Each script prints its own markdown table, where each figure stands beside its baseline measured in
the same run (a ratio, so that the table travels between machines better than seconds do) and,
where it matters, how the cost grows with n. This script only runs them one after another in
fresh processes, on an otherwise idle machine, and collects what they print with the machine's
core count and the command that produced each section. Some take minutes (the 1,000,000-record
cache, 100,000-hypothesis grouping); ``--only NAME`` runs a subset and keeps the other sections,
among them the wall-clock times that ``bench_wall.py`` writes itself.

    .venv/bin/python benchmarks/report.py [--only blind early_stop]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"

#: name -> (title, script and arguments)
BENCHMARKS: dict[str, tuple[str, list[str]]] = {
    "permutation": ("Exact permutation test", ["bench_permutation.py"]),
    "simulator": ("Workflow simulator and replication loops", ["bench_simulator.py"]),
    "llm_cache": ("LLM response cache at 10k / 100k / 1M records", ["bench_llm_cache.py"]),
    "blind": ("Blindness check", ["bench_blind.py"]),
    "early_stop": ("Calls per pair of the majority-of-three judge", ["bench_early_stop.py"]),
    "tfidf_allpairs": ("All-pairs TF-IDF grouping, 5k to 100k hypotheses",
                       ["bench_tfidf_allpairs.py", "--sizes", "5000", "20000", "50000", "100000"]),
    "tau": ("tau fitting and score inference", ["bench_tau.py"]),
    "perturb": ("Perturbation suite", ["bench_perturb.py"]),
    "embedding_backends": ("Embedding backends (float32, int8, ONNX Runtime)", ["bench_embedding_backends.py"]),
    "dask": ("A 10,000-replication power study: one process, loky, a Dask LocalCluster", ["bench_dask.py"]),
    "preflight": ("Bad inputs refused before any kernel", ["bench_preflight.py"]),
}

SECTION = re.compile(r"^## (?P<name>\w+): .*?(?=^## \w+: |\Z)", re.S | re.M)


def run(name: str) -> str:
    title, argv = BENCHMARKS[name]
    command = [sys.executable, str(HERE / argv[0]), *argv[1:]]
    t0 = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=os.environ | {"TQDM_DISABLE": "1"})
    seconds = time.perf_counter() - t0
    body = (
        done.stdout.strip()
        if done.returncode == 0
        else f"failed (exit {done.returncode}):\n\n```\n{done.stderr[-2000:]}\n```"
    )
    shown = " ".join(["benchmarks/" + argv[0], *argv[1:]])
    return f"## {name}: {title}\n\n`python {shown}` ({seconds:.0f} s)\n\n{body}\n\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=sorted(BENCHMARKS), default=None)
    args = parser.parse_args()
    old = {m.group("name"): m.group(0) for m in SECTION.finditer(RESULTS.read_text())} if RESULTS.exists() else {}
    sections = {}
    for name in BENCHMARKS:
        if args.only is None or name in args.only:
            print(f"running {name} ...", flush=True)
            sections[name] = run(name)
        elif name in old:
            sections[name] = old[name].rstrip() + "\n\n"
    for name in old.keys() - BENCHMARKS.keys():  # sections other scripts write (bench_wall.py: "wall")
        sections[name] = old[name].rstrip() + "\n\n"
    head = (f"# Benchmark results\n\nWritten by `benchmarks/report.py` on a {os.cpu_count()}-core machine. "
            "Each section is one script's own output; ratios compare with a baseline measured in the same run.\n\n")
    RESULTS.write_text(head + "".join(sections.values()))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
