"""``mechaudit calibrate``: the expensive fixed computations behind chapters 02, 02b and 02c.

Computes the calibration scan (every grid point of ``params/calibration.yaml``), chapter 02b's
replications and chapter 02c's truth maps at the chapters' default parameters into
``data/computed/NAME.csv`` with their settings (``mechaudit.workflow.committed``); a table computed
with today's settings is kept unless ``--force``. The chapters read these files when their settings
match. Run it after changing the simulator, the design, the calibration or those chapters'
parameters and commit the files (when the scan's best point moved, also the values it prints for
``params/simulator.yaml``, then run it again).

``embeddings`` executes every chapter (in a temporary folder) and adds the texts the seed lacks to
``data/embedding_seed/``, the vectors a fresh clone reads instead of encoding them again;
``--force`` starts from no seed.
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
        print((_embeddings if part == "embeddings" else _table)(part, args.n_jobs, args.force))
        print(f"{part}: {time.perf_counter() - start:.0f} s", flush=True)
    return 0


def _table(part: str, n_jobs: int, force: bool) -> str:
    from mechaudit.book import ch02_critique_depth, ch02b_validity, ch02c_robustness  # defers pandas: fast --help

    write = {"scan": ch02_critique_depth.write_calibration, "validity": ch02b_validity.write_replications,
             "robustness": ch02c_robustness.write_maps}[part]
    return write(n_jobs=n_jobs, force=force)


def _embeddings(part: str, n_jobs: int, force: bool) -> str:
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
