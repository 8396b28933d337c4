"""``mechaudit calibrate``: the expensive fixed computations behind chapters 02, 02b and 02c.

Computes the calibration scan (expected values of every grid point of ``params/calibration.yaml``),
chapter 02b's replications and chapter 02c's truth maps at the chapters' default parameters, and
writes each to ``data/computed/NAME.csv`` with its settings (``mechaudit.workflow.committed``); a table
whose committed copy was computed with today's settings is kept (``--force`` recomputes it). The
chapters read these files when their settings match and compute the tables themselves otherwise;
the test suite re-evaluates rows of each file. Run it after changing the simulator, the design, the
calibration settings or those chapters' parameters, then commit the files (and, when the scan's best
point moved, the new values in ``params/simulator.yaml``, which the command prints; then run it again
so that the other parts follow the new defaults). Every part uses all cores by default.

``embeddings`` executes every chapter with its defaults (in a temporary folder, its embedding store
there too) and writes the store to ``data/embedding_seed/``: the committed vectors a fresh clone reads
instead of encoding the same texts again (``mechaudit.rules.embedding``). Without ``--force`` the seed
is read and only texts it lacks are added; ``--force`` starts from no seed. A test re-encodes texts of
the shipped data and compares them with the seed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mechaudit import paths
from mechaudit.errors import MechauditError

#: the parts the command can compute, in the order they run
PARTS = ("scan", "validity", "robustness", "embeddings")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("calibrate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                       help="compute the calibration scan and chapters 02b-02c's fixed tables into data/computed/, "
                            "and the embedding seed")
    p.add_argument("--only", choices=PARTS, help="compute one part only (default: all, in order)")
    p.add_argument("--n-jobs", type=int, default=-1, help="worker processes (default -1: every core)")
    p.add_argument("--force", action="store_true",
                   help="recompute every table, also those whose committed copy is current")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not paths.is_shipped_benchmark(None):
        raise MechauditError("the calibration targets the paper's numbers, which belong to the shipped benchmark; "
                             "unset MECHAUDIT_DATA", field="MECHAUDIT_DATA")
    for part in PARTS if args.only is None else (args.only,):
        start = time.perf_counter()
        print({"scan": _scan, "validity": _validity, "robustness": _robustness,
               "embeddings": _embeddings}[part](args.n_jobs, args.force))
        print(f"{part}: {time.perf_counter() - start:.0f} s", flush=True)
    return 0


def _scan(n_jobs: int, force: bool) -> str:
    from mechaudit.book import ch02_critique_depth as ch02  # defers pandas: fast `mechaudit --help`

    return ch02.write_calibration(n_jobs=n_jobs, force=force)


def _validity(n_jobs: int, force: bool) -> str:
    from mechaudit.book import ch02b_validity as ch02b  # defers pandas: fast `mechaudit --help`

    return ch02b.write_replications(n_jobs=n_jobs, force=force)


def _robustness(n_jobs: int, force: bool) -> str:
    from mechaudit.book import ch02c_robustness as ch02c  # defers pandas: fast `mechaudit --help`

    return ch02c.write_maps(n_jobs=n_jobs, force=force)


def _embeddings(n_jobs: int, force: bool) -> str:
    from mechaudit.rules.embedding import read_store, store_path, write_store  # defers numpy: fast `mechaudit --help`

    seed = store_path(paths.EMBEDDING_SEED_DIR, None)
    before = len(read_store(seed))
    with tempfile.TemporaryDirectory() as tmp:
        aside = Path(tmp) / "seed.npz"
        if force and seed.exists():
            shutil.move(seed, aside)  # the chapters must not read the seed they rebuild
        env = {**os.environ, paths.CACHE_ENV: tmp}
        jobs = n_jobs if n_jobs > 0 else os.cpu_count() or 1
        try:
            subprocess.run([sys.executable, "-m", "mechaudit.cli", "execute", "--params", "default",
                            "--out", str(Path(tmp) / "runs"), "--jobs", str(jobs)], env=env, check=True)
        except BaseException:
            if aside.exists():
                shutil.move(aside, seed)
            raise
        added = read_store(store_path(Path(tmp) / "embedding_cache", None))  # texts the seed lacked
        if added:
            write_store(seed, {**read_store(seed), **added})
    return f"embedding seed {seed.name}: {before} -> {len(read_store(seed))} vectors"
