"""Wall-clock times of what a user waits for, as a table in ``benchmarks/RESULTS.md`` (section
``wall``) that the README's Timings section quotes.

Measured in a clone of this repository's committed HEAD (``git clone``, no network), so the working
tree and its venv are never touched:

- ``fresh_test``: ``make test`` in the new clone (creates and fills ``.venv``, then runs the suite);
- ``warm_test``: ``make test`` again, the venv in place;
- ``book``: ``make book``, the venv in place (executes every chapter, then builds the HTML);
- ``chapters``: each chapter's default run (``mechaudit execute NAME --out DIR``; it prints every
  chapter's seconds) as a fresh clone has it (no embedding store, the committed seed read), with the
  store filled, and with neither store nor seed (every text encoded).

A step that needs the venv makes it first (``make install``, not timed) if no earlier step did. A
subset (``--only``, ``--chapters``) replaces only its own rows; the others keep their earlier values
and dates. Run it on an otherwise idle machine: the load average before and after is recorded.

    .venv/bin/python benchmarks/bench_wall.py                      # everything (about 20 minutes)
    .venv/bin/python benchmarks/bench_wall.py --only chapters --chapters 01_problem --clone /tmp/c
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
README = REPO / "README.md"
sys.path.insert(0, str(HERE))
from report import RESULTS, SECTION  # noqa: E402

STEPS = ("fresh_test", "warm_test", "book", "chapters")
#: the chapter rows' conditions, in table order
CHAPTER_LABELS = ("fresh clone: no embedding store, the committed seed", "embedding store filled",
                  "no embedding store, no seed")
TITLE = "wall: Wall-clock times of make test, make book and each chapter"
#: the README's copy of the table sits between these two lines
README_START, README_END = "<!-- wall-times: written by benchmarks/bench_wall.py -->", "<!-- /wall-times -->"
DONE = re.compile(r"^\[\d+/\d+\] (?P<stem>\S+) done in (?P<s>[\d.]+) s", re.M)
ROW = re.compile(r"^\| (?P<what>[^|]+?) +\| (?P<s>[^|]+?) +\| (?P<when>[^|]+?) +\|$", re.M)


def timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, str]:
    """Run ``cmd``; (wall seconds, stdout + stderr). A failure stops the benchmark with its output."""
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed (exit {done.returncode}) in {cwd}:\n{done.stdout[-3000:]}\n"
                 f"{done.stderr[-3000:]}")
    return seconds, done.stdout + done.stderr


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def chapter_rows(clone: Path, names: list[str], label: str) -> dict[str, float]:
    out = Path(tempfile.mkdtemp(prefix="bench-wall-run-"))
    try:
        _, text = timed([str(clone / ".venv" / "bin" / "mechaudit"), "execute", *names, "--out", str(out)], clone)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return {f"chapter {m['stem']}, default run ({label})": float(m["s"]) for m in DONE.finditer(text)}


def measure(clone: Path, steps: list[str], chapters: list[str]) -> dict[str, float]:
    """Seconds per table row for ``steps`` (in ``STEPS`` order) in ``clone``."""
    rows: dict[str, float] = {}
    make = ["make", "--no-print-directory"]
    if "fresh_test" in steps:
        if (clone / ".venv").exists():
            sys.exit(f"{clone} already has a venv: fresh_test needs a new clone")
        rows["make test, fresh clone (creates the venv)"] = timed([*make, "test"], clone)[0]
    if not (clone / ".venv" / ".installed").exists():
        timed([*make, "install"], clone)
    if "warm_test" in steps:
        rows["make test, venv in place"] = timed([*make, "test"], clone)[0]
    if "book" in steps:
        rows["make book, venv in place"] = timed([*make, "book"], clone)[0]
    if "chapters" in steps:
        store, seed = clone / "data" / "embedding_cache", clone / "data" / "embedding_seed"
        shutil.rmtree(store, ignore_errors=True)
        rows.update(chapter_rows(clone, chapters, CHAPTER_LABELS[0]))
        rows.update(chapter_rows(clone, chapters, CHAPTER_LABELS[1]))
        shutil.rmtree(store, ignore_errors=True)
        shutil.move(seed, clone / "seed-aside")
        try:
            rows.update(chapter_rows(clone, chapters, CHAPTER_LABELS[2]))
        finally:
            shutil.move(clone / "seed-aside", seed)
    return rows


def table(rows: dict[str, str | float], when: dict[str, str]) -> str:
    lines = ["| measurement | seconds | measured |", "|---|---|---|"]
    lines += [f"| {what} | {s if isinstance(s, str) else f'{s:.1f}'} | {when[what]} |" for what, s in rows.items()]
    return "\n".join(lines)


def old_rows(section: str) -> tuple[dict[str, str], dict[str, str]]:
    found = [m for m in ROW.finditer(section) if m["what"] not in ("measurement", "---")]
    return {m["what"]: m["s"] for m in found}, {m["what"]: m["when"] for m in found}


def order(what: str) -> tuple[int, str, int]:
    """Table order: make test fresh, warm, make book, then per chapter in ``CHAPTER_LABELS`` order."""
    kinds = ("make test, fresh", "make test, venv", "make book", "chapter")
    label = next((i for i, c in enumerate(CHAPTER_LABELS) if f"({c})" in what), -1)
    return next(i for i, k in enumerate(kinds + ("",)) if what.startswith(k)), what.split(",")[0], label


def write(new: dict[str, float], note: str) -> str:
    """Merge ``new`` into the ``wall`` section of RESULTS.md and the README's copy; return the table."""
    text = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n\n"
    sections = {m["name"]: m for m in SECTION.finditer(text)}
    rows, when = old_rows(sections["wall"].group(0)) if "wall" in sections else ({}, {})
    rows.update(new)
    when.update(dict.fromkeys(new, note))
    stale = [k for k in rows if k.startswith("chapter") and not any(f"({c})" in k for c in CHAPTER_LABELS)]
    for k in stale:  # rows of a condition no longer measured
        del rows[k], when[k]
    rows = dict(sorted(rows.items(), key=lambda kv: order(kv[0])))
    body = table(rows, when)
    section = (f"## {TITLE}\n\n`python benchmarks/bench_wall.py` in a clone of HEAD; chapter rows are the seconds "
               f"`mechaudit execute` prints.\n\n{body}\n\n")
    if "wall" in sections:
        m = sections["wall"]
        text = text[:m.start()] + section + text[m.end():]
    else:
        text = text.rstrip() + "\n\n" + section
    RESULTS.write_text(text)
    readme = README.read_text()
    if README_START in readme:
        head, rest = readme.split(README_START, 1)
        readme = head + README_START + "\n" + body + "\n" + README_END + rest.split(README_END, 1)[1]
        README.write_text(readme)
    return body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=STEPS, default=list(STEPS))
    parser.add_argument("--chapters", nargs="+", default=[], help="chapter names (default: every chapter)")
    parser.add_argument("--clone", type=Path, default=None,
                        help="the clone to measure in (made from HEAD if missing; default a temporary folder)")
    args = parser.parse_args()
    clone = args.clone or Path(tempfile.mkdtemp(prefix="bench-wall-")) / "mechaudit"
    if not clone.exists():
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True).stdout
    before = load()
    new = measure(clone, [s for s in STEPS if s in args.only], args.chapters)
    note = f"{date.today()}, {commit.strip()}, {os.cpu_count()} cores, load {before} -> {load()}"
    print(write(new, note))
    if args.clone is None:
        shutil.rmtree(clone.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
