"""Calls per pair of the majority-of-three LLM judge with and without early stop.

The 320 pairs of the committed perturbation suite go through ``LLMJudge`` (real client, real
request plan) against a local fake of the Messages API (``httpx.MockTransport``) that answers each
pair with a fixed verdict and flips each call independently with probability ``q``. For each q it
prints the judge's observed self-disagreement rate, calls per pair with early stop (the default)
and without, and whether the decisions are identical. Expected with early stop:
``2 + P(first two calls disagree) = 2 + 2 q (1 - q)``. No network; a fake key only in this process.

    .venv/bin/python benchmarks/bench_early_stop.py
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import Counter

import httpx
import numpy as np

from mechaudit.llm import get_client
from mechaudit.perturb import load_suite
from mechaudit.rules.llm_judge import LLMJudge, majority


def fake_api(q: float, seed: int):
    """MockTransport handler: verdict by a hash of the unordered pair, flipped with probability q."""
    seen: Counter = Counter()

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        user = body["messages"][0]["content"]
        blocks = sorted(user.split("Hypothesis ")[1:])  # order-free identity of the pair
        truth = int(hashlib.sha256("".join(b[2:] for b in blocks).encode()).hexdigest(), 16) % 2
        k = seen[user]
        seen[user] += 1
        u = np.random.default_rng([seed, *hashlib.sha256(f"{user}|{k}".encode()).digest()[:8]]).random()
        verdict = ("same", "different")[truth ^ int(u < q)]
        reply = {"id": "msg", "type": "message", "role": "assistant", "model": body["model"],
                 "content": [{"type": "text", "text": json.dumps({"verdict": verdict, "reason": "fake"})}],
                 "stop_reason": "end_turn", "stop_sequence": None,
                 "usage": {"input_tokens": 600, "output_tokens": 30}}
        return httpx.Response(200, json=reply)

    return handler


def run(pairs, q: float, early_stop: bool, seed: int) -> tuple[float, np.ndarray, float]:
    with tempfile.TemporaryDirectory() as cache:
        client = get_client("anthropic", cache_dir=cache, max_retries=0,
                            http_client=httpx.Client(transport=httpx.MockTransport(fake_api(q, seed))))
        calls = LLMJudge(client=client, early_stop=early_stop).judge(pairs)
    first_two = calls[calls.call < 2].pivot(index="pair", columns="call", values="verdict")
    disagree = float((first_two[0] != first_two[1]).mean())
    return len(calls) / len(pairs), majority(calls, len(pairs))["same"].to_numpy(), disagree


def main() -> None:
    os.environ.setdefault("ANTHROPIC_API_KEY", "fake-" + "key-for-the-benchmark")
    pairs = [(r["original"], r["variant"]) for r in load_suite(valid_only=True)]
    print(f"{len(pairs)} suite pairs, orders ab, ab, ba")
    print(
        "| flip q | first two disagree | calls/pair early stop | calls/pair all | expected 2+2q(1-q) | same decisions |"
    )
    print("|---:|---:|---:|---:|---:|---|")
    for q in (0.0, 0.02, 0.05, 0.10, 0.15):
        stop, d_stop, disagree = run(pairs, q, True, seed=1)
        full, d_full, _ = run(pairs, q, False, seed=1)
        print(f"| {q:.2f} | {disagree:.3f} | {stop:.3f} | {full:.2f} | {2 + 2 * q * (1 - q):.3f} | "
              f"{np.array_equal(d_stop, d_full)} |")


if __name__ == "__main__":
    main()
