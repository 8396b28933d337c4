"""The LLM response cache at scale: the sqlite-indexed store against the old whole-file JSONL load.

For each size n (default 10k, 100k, 1M records) the script writes a ``responses.jsonl`` of n
answers in the cache's own line format (one shared rubric stored once, ~0.9 kB a record), then in
fresh processes measures:

- ``build``: the first open of a folder without an index (what a fresh clone pays once): every line
  is parsed and its key, offset and length inserted with ``executemany`` in one transaction;
- ``open``: opening with an up-to-date index (median of 5 opens in one process; the first is
  reported too);
- ``get``: ``ResponseCache.get`` on 2,000 random recorded keys (µs each);
- ``complete``: ``client.complete`` on the same 2,000 hits through the replay client (request
  hashing, blindness check and ledger included; fresh request objects);
- ``RSS``: resident-memory growth of the process from before the open to after the hits.

The baseline is the old design (the whole file parsed into a dict at open), re-implemented here as
``LegacyJsonlCache`` and measured in the same run for the sizes up to ``--baseline-max`` (default
100k; at 1M it needed 61 s and 7.4 GiB). Then 4 processes write 4 x ``--writes`` new records into
one empty folder at once and the records are counted. Temporary files are deleted.

Usage: ``.venv/bin/python benchmarks/bench_llm_cache.py [--sizes 10000,100000,1000000]``. No network.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUBRIC = "You judge whether two hypotheses describe the same mechanism. " * 60  # ~3.7 kB rubric
N_HITS = 2000


def request(i: int):
    from mechaudit.llm import LLMRequest

    return LLMRequest(
        model="claude-opus-4-6", system=RUBRIC, version="judge-full-v1", max_tokens=512,
        messages=[{"role": "user", "content": f"Hypothesis A (pair {i}): ... Hypothesis B: ... " * 8}],
    )


def sample(n: int) -> list[int]:
    return sorted(random.Random(n).sample(range(n), min(N_HITS, n)))


def rss_mib(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


# -- data --------------------------------------------------------------------------------------

def write_cache_file(folder: Path, n: int) -> float:
    """A responses.jsonl of n records as ``ResponseCache.put`` writes them; returns MB on disk.

    The sampled records get their real request keys (so the client can hit them); the others get
    distinct filler keys, which costs the same to store and look up."""
    from mechaudit.llm.cache import _line, system_sha256

    sha = system_sha256(RUBRIC)
    proto = request(0)
    fields = proto.hashed_fields()
    fields.pop("system")
    answer = {"text": json.dumps({"same": True, "reason": "same initiating event and route"}),
              "model": "claude-opus-4-6", "stop_reason": "end_turn", "id": "msg_@I@",
              "usage": {"input_tokens": 900, "output_tokens": 40,
                        "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 0}}
    record = {"kind": "response", "key": "@KEY@", "source": "messages", "response": answer,
              "request": {**fields, "system_sha256": sha}, "api_version": "2023-06-01"}
    template = _line(record).decode().replace("pair 0)", "pair @I@)")
    hit = {i: request(i).key for i in sample(n)}
    with open(folder / "responses.jsonl", "w", encoding="utf-8") as fh:
        fh.write(_line({"kind": "system", "sha256": sha, "text": RUBRIC}).decode())
        block = []
        for i in range(n):
            key = hit.get(i) or hashlib.sha256(b"filler %d" % i).hexdigest()
            block.append(template.replace("@KEY@", key).replace("@I@", str(i)))
            if len(block) == 10_000:
                fh.write("".join(block))
                block = []
        fh.write("".join(block))
    return (folder / "responses.jsonl").stat().st_size / 1e6


class LegacyJsonlCache:
    """The old store: the whole file parsed into dicts at open (baseline; reading only)."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / "responses.jsonl"
        self._responses: dict[str, dict] = {}
        self._systems: dict[str, str] = {}
        for raw in self.path.read_bytes().split(b"\n"):
            if raw.strip():
                record = json.loads(raw)
                if record["kind"] == "system":
                    self._systems[record["sha256"]] = record["text"]
                else:
                    self._responses.setdefault(record["key"], record)

    def get(self, key: str):
        record = self._responses.get(key)
        return None if record is None else record["response"]


# -- measurements in fresh processes -----------------------------------------------------------

def child(mode: str, folder: str, n: int) -> dict:
    """One measurement in this (fresh) process; returns the numbers as a dict."""
    from mechaudit.llm import get_client
    from mechaudit.llm.cache import ResponseCache

    if mode == "build":
        rss0 = rss_mib()
        t0, c0 = time.perf_counter(), time.process_time()
        cache = ResponseCache(folder)
        return {"build_s": time.perf_counter() - t0, "build_cpu_s": time.process_time() - c0,
                "records": len(cache), "build_peak_mib": rss_mib("VmHWM") - rss0}
    idx = sample(n)
    reqs = [request(i) for i in idx]
    keys = [r.key for r in reqs]
    fresh = [request(i) for i in idx]  # keys hashed again inside complete(), as in a new run
    client = get_client("replay", cache_dir=Path(folder) / "unused")  # its cache is replaced below
    rss0 = rss_mib()
    t0, c0 = time.perf_counter(), time.process_time()
    cache = ResponseCache(folder) if mode == "sqlite" else LegacyJsonlCache(Path(folder))
    first_open, first_open_cpu = time.perf_counter() - t0, time.process_time() - c0
    rss_open = rss_mib() - rss0
    opens = [first_open]
    if mode == "sqlite":
        for _ in range(5):
            t0 = time.perf_counter()
            ResponseCache(folder).close()
            opens.append(time.perf_counter() - t0)
    t0, c0 = time.perf_counter(), time.process_time()
    got = [cache.get(k) for k in keys]
    get_s, get_cpu = (time.perf_counter() - t0) / len(keys), (time.process_time() - c0) / len(keys)
    assert all(g is not None for g in got), "a recorded key was missed"
    client.cache = cache
    t0, c0 = time.perf_counter(), time.process_time()
    out = [client.complete(r) for r in fresh]
    complete_s, complete_cpu = (time.perf_counter() - t0) / len(fresh), (time.process_time() - c0) / len(fresh)
    assert all(o.cached for o in out)
    return {"first_open_s": first_open, "first_open_cpu_s": first_open_cpu,
            "open_s": statistics.median(opens[1:] or opens), "get_us": 1e6 * get_s,
            "get_cpu_us": 1e6 * get_cpu, "complete_us": 1e6 * complete_s,
            "complete_cpu_us": 1e6 * complete_cpu, "rss_open_mib": rss_open, "rss_mib": rss_mib() - rss0}


WRITER = """
import sys, time
from mechaudit.llm.cache import ResponseCache
folder, worker, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cache = ResponseCache(folder)
t0 = time.perf_counter()
stored = sum(cache.put(f"w{worker}-{i}", {"text": str(i), "model": "m", "usage": {}}) for i in range(n))
stored += sum(cache.put(f"shared-{i}", {"text": str(i), "model": "m", "usage": {}}) for i in range(n // 10))
print(stored, time.perf_counter() - t0)
"""


def run_child(*args: str) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def concurrent_writers(tmp: Path, workers: int, n: int) -> dict:
    from mechaudit.llm.cache import ResponseCache

    folder = tmp / "concurrent"
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(w), str(n)],
                              stdout=subprocess.PIPE, text=True) for w in range(workers)]
    outs = [p.communicate()[0].split() for p in procs]
    wall = time.perf_counter() - t0
    expected = workers * n + n // 10
    lines = (folder / "responses.jsonl").read_text().splitlines()
    cache = ResponseCache(folder)
    return {"expected": expected, "stored": sum(int(o[0]) for o in outs), "lines": len(lines),
            "indexed": len(cache), "distinct": len({json.loads(x)["key"] for x in lines}),
            "put_s": max(float(o[1]) for o in outs), "wall_s": wall}


# -- report ------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--baseline-max", type=int, default=100_000)
    parser.add_argument("--writes", type=int, default=250, help="records per writing process")
    parser.add_argument("--tmp", default=None, help="folder for the temporary caches")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    load0 = f"{os.getloadavg()[0]:.1f}"
    rows = {}
    with tempfile.TemporaryDirectory(dir=args.tmp, prefix="bench_llm_cache_") as tmp_name:
        tmp = Path(tmp_name)
        for n in sizes:
            folder = tmp / f"n{n}"
            folder.mkdir()
            t0 = time.perf_counter()
            mb = write_cache_file(folder, n)
            row = {"jsonl_mb": mb, "generate_s": time.perf_counter() - t0}
            if n <= args.baseline_max:
                row["legacy"] = run_child("legacy", str(folder), str(n))
            row.update(run_child("build", str(folder), str(n)))
            row["index_mb"] = (folder / "cache-index.sqlite").stat().st_size / 1e6
            row["sqlite"] = run_child("sqlite", str(folder), str(n))
            rows[n] = row
            for p in folder.iterdir():  # free the disk before the next size
                p.unlink()
            print(f"n={n:,}: {json.dumps(row)}", file=sys.stderr, flush=True)
        conc = concurrent_writers(tmp, 4, args.writes)

    print(f"Load average before / after: {load0} / {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs. "
          f"Times are wall clock with the process CPU time in brackets (on a shared machine the CPU "
          f"time is the steadier figure). {N_HITS:,} random recorded keys per size.\n")
    print("| records | JSONL MB | index MB | first open: build index, s | open, ms | get, µs "
          "| complete() hit, µs | RSS after open, MiB | after the hits, MiB |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n, r in rows.items():
        s = r["sqlite"]
        print(f"| {n:,} | {r['jsonl_mb']:.0f} | {r['index_mb']:.0f} | {r['build_s']:.1f} ({r['build_cpu_s']:.1f}) "
              f"| {1e3 * s['first_open_s']:.2f} ({1e3 * s['first_open_cpu_s']:.2f}) "
              f"| {s['get_us']:.0f} ({s['get_cpu_us']:.0f}) | {s['complete_us']:.0f} ({s['complete_cpu_us']:.0f}) "
              f"| {s['rss_open_mib']:.1f} | {s['rss_mib']:.1f} |")
    print("\nBaseline, the old whole-file JSONL load, same run (not run above "
          f"{args.baseline_max:,} records):\n")
    print("| records | open, s | get, µs | complete() hit, µs | RSS after open, MiB | after the hits, MiB |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, r in rows.items():
        if "legacy" in r:
            b = r["legacy"]
            print(f"| {n:,} | {b['first_open_s']:.2f} ({b['first_open_cpu_s']:.2f}) | {b['get_us']:.1f} "
                  f"({b['get_cpu_us']:.1f}) | {b['complete_us']:.0f} ({b['complete_cpu_us']:.0f}) "
                  f"| {b['rss_open_mib']:.0f} | {b['rss_mib']:.0f} |")
    base_n = max((n for n in rows if "legacy" in rows[n]), default=None)
    if base_n is not None:
        b, s = rows[base_n]["legacy"], rows[base_n]["sqlite"]
        print(f"\nRatios at {base_n:,} records, new / old (CPU time): open "
              f"{s['first_open_cpu_s'] / b['first_open_cpu_s']:.1e}; RSS after open "
              f"{s['rss_open_mib'] / b['rss_open_mib']:.3f}; get {s['get_cpu_us'] / b['get_cpu_us']:.1f} "
              f"(an indexed read and parse of one line vs a dict lookup); complete() on a hit "
              f"{s['complete_cpu_us'] / b['complete_cpu_us']:.2f}.")
    lo, hi = min(rows), max(rows)
    if hi > lo:
        def slope(field: str) -> float:
            return math.log(rows[hi]["sqlite"][field] / rows[lo]["sqlite"][field]) / math.log(hi / lo)
        print(f"\nGrowth from {lo:,} to {hi:,} records, as the exponent b of cost ~ n^b (CPU time): "
              f"open {slope('first_open_cpu_s'):.2f}, get {slope('get_cpu_us'):.2f}, "
              f"RSS after the hits {slope('rss_mib'):.2f}; building the index grows linearly "
              f"({math.log(rows[hi]['build_cpu_s'] / rows[lo]['build_cpu_s']) / math.log(hi / lo):.2f}).")
    print(f"\nConcurrent writers: 4 processes x {args.writes} new keys + {args.writes // 10} keys all four "
          f"write: expected {conc['expected']}, stored {conc['stored']}, lines in the file {conc['lines']}, "
          f"distinct keys {conc['distinct']}, indexed {conc['indexed']}; "
          f"{conc['wall_s']:.1f} s wall, {conc['expected'] / conc['put_s']:.0f} puts/s (one fsync each).")

if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
    else:
        main()
