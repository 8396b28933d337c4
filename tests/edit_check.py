"""Re-runnable check that the suite catches issue 34's bug-shaped edits (``tests/edits.yaml``).

For each edit: replace ``old`` by ``new`` in ``file`` (``old`` must occur exactly once), run its
``tests`` with pytest (``-x``, one process), restore the file. An edit is *caught* when pytest
fails (exit 1), *survived* when it passes (0); anything else (the text moved, a test id no longer
exists, a collection error) is reported as it is and needs a look. The source is restored even on
Ctrl-C or SIGTERM; a file left mutated by a killed run is restored at the next start (the original
is kept in ``build/edit_check.orig.json`` while a test runs).

Usage (repository root, the project's ``.venv``)::

    python tests/edit_check.py                # every edit; prints the table
    python tests/edit_check.py pass_rule_gt2  # only these ids
    python tests/edit_check.py --write        # and rewrite the table in tests/EDITS.md
    python tests/edit_check.py --clean        # first check that every listed test passes unmutated
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
EDITS = ROOT / "tests" / "edits.yaml"
REPORT = ROOT / "tests" / "EDITS.md"
BACKUP = ROOT / "build" / "edit_check.orig.json"
BEGIN, END = "<!-- edit_check: begin -->", "<!-- edit_check: end -->"
ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONHASHSEED": "0"}


def restore_backup() -> None:
    """Put back a source file a killed run left mutated."""
    if BACKUP.is_file():
        saved = json.loads(BACKUP.read_text(encoding="utf-8"))
        (ROOT / saved["file"]).write_text(saved["text"], encoding="utf-8", newline="")
        BACKUP.unlink()
        print(f"restored {saved['file']} left mutated by an earlier run", file=sys.stderr)


def run_tests(tests: list[str], timeout: float) -> tuple[int, str]:
    """pytest's exit code over ``tests`` and the first failing test's node id (without its parameters;
    else pytest's last output line)."""
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider", *tests]
    try:
        out = subprocess.run(cmd, cwd=ROOT, env={**os.environ, **ENV}, capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, f"timeout after {timeout:.0f} s"
    text = out.stdout + out.stderr
    failed = re.findall(r"^(?:FAILED|ERROR) ([^\[\s]+)", text, re.MULTILINE)  # node id without parameters
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return out.returncode, failed[0] if failed else (lines[-1] if lines else "")


def check(edit: dict, timeout: float) -> dict:
    """Apply one edit, run its tests, restore the file; the row of the table."""
    path = ROOT / edit["file"]
    text = path.read_text(encoding="utf-8")
    n = text.count(edit["old"])
    row = {"id": edit["id"], "file": edit["file"], "line": "?", "what": edit["what"]}
    if n != 1:
        return {**row, "status": f"old text found {n} times", "test": ""}
    row["line"] = text[: text.index(edit["old"])].count("\n") + 1
    BACKUP.parent.mkdir(exist_ok=True)
    BACKUP.write_text(json.dumps({"file": edit["file"], "text": text}), encoding="utf-8")
    start = time.monotonic()
    try:
        path.write_text(text.replace(edit["old"], edit["new"]), encoding="utf-8", newline="")
        rc, test = run_tests(edit["tests"], timeout)
    finally:
        path.write_text(text, encoding="utf-8", newline="")
        BACKUP.unlink()
    status = {0: "SURVIVED", 1: "caught"}.get(rc, f"exit {rc}")
    return {**row, "status": status, "test": test, "seconds": round(time.monotonic() - start)}


def table(rows: list[dict]) -> str:
    """The markdown table of ``rows`` (a ``|`` in an edit's description escaped)."""
    lines = ["| edit | file:line | failing test (node id) |", "|---|---|---|"]
    for r in rows:
        what, where = r["what"].replace("|", r"\|"), f"{r['file'].removeprefix('src/mechaudit/')}:{r['line']}"
        outcome = "" if r["status"] == "caught" else r["status"] + ": "
        lines.append(f"| {what} | `{where}` | {outcome}`{r['test']}` |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ids", nargs="*", help="edit ids (default: all)")
    ap.add_argument("--write", action="store_true", help="rewrite the table in tests/EDITS.md")
    ap.add_argument("--clean", action="store_true", help="first run every listed test on the unmutated tree")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per edit's test run")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM restores the file too
    restore_backup()
    edits = yaml.safe_load(EDITS.read_text(encoding="utf-8"))
    unknown = set(args.ids) - {e["id"] for e in edits}
    if unknown:
        ap.error(f"unknown edit ids: {sorted(unknown)}")
    edits = [e for e in edits if not args.ids or e["id"] in args.ids]
    if args.clean:
        rc, test = run_tests(sorted({t for e in edits for t in e["tests"]}), args.timeout * 3)
        if rc != 0:
            print(f"the listed tests fail without any edit (exit {rc}): {test}", file=sys.stderr)
            return 1
    rows = []
    for edit in edits:
        rows.append(check(edit, args.timeout))
        r = rows[-1]
        print(f"{r['id']:32} {r['status']:10} {r.get('seconds', 0):4} s  {r['test']}", file=sys.stderr, flush=True)
    print(table(rows))
    if args.write and not args.ids:
        doc = REPORT.read_text(encoding="utf-8")
        before, rest = doc.split(BEGIN)
        REPORT.write_text(before + BEGIN + "\n" + table(rows) + END + rest.split(END)[1], encoding="utf-8")
    return 0 if all(r["status"] == "caught" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
