"""Throughput of the LLM response cache: cached calls per second and overhead per cached call.

Fills a temporary cache with N recorded answers (written through ``ResponseCache.put``, as the
anthropic backend does), then times, in a fresh process-like client:

- loading the cache file (JSONL parse + index),
- ``complete`` on N cache hits (request hashing + blindness check + lookup + response object),
- ``complete_many`` on the same N requests (thread pool of 4),
- ``complete_json`` on N hits (adds JSON parsing and pydantic validation),
- ``put`` per record (one write + fsync each).

Usage: ``.venv/bin/python benchmarks/bench_llm_cache.py [N]`` (default 10,000). No network.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time

from pydantic import BaseModel

from mechaudit.llm import LLMRequest, ResponseCache, get_client

RUBRIC = "You judge whether two hypotheses describe the same mechanism. " * 60  # ~3.7 kB rubric


class Verdict(BaseModel):
    same: bool
    reason: str


def requests(n: int) -> list[LLMRequest]:
    return [
        LLMRequest(
            model="claude-opus-4-6", system=RUBRIC, version="judge-full-v1", max_tokens=512,
            messages=[{"role": "user", "content": f"Hypothesis A (pair {i}): ... Hypothesis B: ... " * 8}],
        )
        for i in range(n)
    ]


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def main(n: int = 10_000) -> None:
    reqs = requests(n)
    with tempfile.TemporaryDirectory() as tmp:
        cache = ResponseCache(tmp)
        answer = {"text": json.dumps({"same": True, "reason": "same initiating event and route"}),
                  "model": "claude-opus-4-6", "stop_reason": "end_turn",
                  "usage": {"input_tokens": 900, "output_tokens": 40,
                            "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 0}}
        _, t_put = timed(lambda: [cache.put(r.key, answer, r) for r in reqs])
        size_mb = cache.path.stat().st_size / 1e6

        client, t_load = timed(lambda: get_client("replay", cache_dir=tmp))
        # fresh request objects for every pass: keys are hashed again, as in a new notebook run
        _, t_build = timed(lambda: requests(n))
        fresh = [requests(n) for _ in range(3)]
        _, t_one = timed(lambda: [client.complete(r) for r in fresh[0]])
        _, t_many = timed(lambda: client.complete_many(fresh[1]))
        _, t_json = timed(lambda: [client.complete_json(r, Verdict) for r in fresh[2]])

    def line(label: str, seconds: float, per: int = n) -> None:
        print(f"{label:<46} {seconds:8.3f} s  {per / seconds:12,.0f} /s  {1e6 * seconds / per:8.1f} us each")

    print(f"cache of {n:,} records, {size_mb:.1f} MB on disk (rubric stored once)")
    line("put (write + fsync per record)", t_put)
    line("load cache file (parse + index)", t_load)
    line("build LLMRequest objects (not cache work)", t_build)
    line("complete() on hits, serial (incl. hashing)", t_one)
    line("complete_many() on hits, 4 threads", t_many)
    line("complete_json() on hits (+ parse, validate)", t_json)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
