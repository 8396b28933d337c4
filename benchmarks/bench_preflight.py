"""Time from the command to the one-line error for bad inputs of ``mechaudit execute``: each is refused
before any kernel starts (the issue asks for under 3 s on the 2-core machine).

Run: ``.venv/bin/python benchmarks/bench_preflight.py``; every case runs as a fresh process, as a
user would start it, best of ``--repeat`` runs. ``mechaudit --help`` (the parser alone) is the
baseline: what every command pays before it reads its first argument.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MECHAUDIT = [sys.executable, "-m", "mechaudit.cli"]


def cases(tmp: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """name -> (arguments, extra environment) of every bad input."""
    design = "design:\n  instances: {}\n  depths: [0, 1, 5]\n  runs_per_depth: {}\n"
    (tmp / "one_run.yaml").write_text(design.format("all", 1), encoding="utf-8")
    (tmp / "unknown.yaml").write_text(design.format("[nope]", 5), encoding="utf-8")
    (tmp / "broken.yaml").write_text("design: [\n", encoding="utf-8")
    (tmp / "dup.yaml").write_text("common:\n  seed: 1\n  seed: 2\n", encoding="utf-8")
    stale = tmp / "stale"
    shutil.copytree(ROOT / "data" / "examples" / "urate_nitrate", stale, ignore=shutil.ignore_patterns("*cache"))
    rows = [json.loads(line) for line in (stale / "hypotheses.jsonl").read_text(encoding="utf-8").splitlines()]
    rows[0]["statement"] += " Edited."  # one statement edited after the suites were built
    rows[0]["template"]["statement"] += " Edited."
    (stale / "hypotheses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return {
        "parser only (mechaudit --help)": (["--help"], {}),
        "design file missing": (["execute", "02b_validity", "-p", "design_file", "missing.yaml"], {}),
        "design file malformed": (["execute", "02b_validity", "-p", "design_file", str(tmp / "broken.yaml")], {}),
        "design names an unknown instance": (["execute", "02b_validity", "-p", "design_file",
                                              str(tmp / "unknown.yaml")], {}),
        "design runs_per_depth: 1": (["execute", "02b_validity", "-p", "design_file", str(tmp / "one_run.yaml")], {}),
        "n_boot 1e12": (["execute", "02b_validity", "-p", "n_boot", "1000000000000"], {}),
        "unknown backend": (["execute", "05_perturbations", "-p", "backend", "antropic"], {}),
        "missing MECHAUDIT_DATA folder": (["execute", "05_perturbations"], {"MECHAUDIT_DATA": str(tmp / "nowhere")}),
        "stale perturbation suite": (["execute", "05_perturbations", "-p", "data_dir", str(stale)], {}),
        "duplicate YAML keys": (["execute", "01_problem", "--params", str(tmp / "dup.yaml")], {}),
    }


def time_case(argv: list[str], env: dict[str, str], repeat: int) -> tuple[float, int, str]:
    best, code, line = float("inf"), 0, ""
    for _ in range(repeat):
        t0 = time.perf_counter()
        done = subprocess.run(MECHAUDIT + argv, capture_output=True, text=True, cwd=ROOT,
                              env=os.environ | {"TQDM_DISABLE": "1"} | env)
        best = min(best, time.perf_counter() - t0)
        code, line = done.returncode, (done.stderr.strip().splitlines() or [""])[-1]
    return best, code, line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mechaudit-preflight-") as tmp:
        rows = [(name, *time_case(argv, env, args.repeat)) for name, (argv, env) in cases(Path(tmp)).items()]
    print(f"best of {args.repeat} fresh processes; exit 1 and one line each (the parser alone exits 0)\n")
    print("| bad input | s | exit | line (cut) |")
    print("|---|---|---|---|")
    for name, seconds, code, line in rows:
        shown = line.replace(tmp, "TMP").replace("|", "/")[:110]
        print(f"| {name} | {seconds:.2f} | {code} | {shown} |")


if __name__ == "__main__":
    main()
