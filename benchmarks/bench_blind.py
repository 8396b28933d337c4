"""Blindness check per prompt: the word-boundary regex alone vs the substring prefilter.

Prompts: every role prompt over the synthetic tau pool plus every paper card, checked against the
reviewer's forbidden terms. Prints microseconds per prompt for both and their ratio; the decisions
must be identical. Run: ``.venv/bin/python benchmarks/bench_blind.py``.
"""

from __future__ import annotations

import re
import time

from mechaudit.llm.blind import find_forbidden
from mechaudit.tau import ROLES, build_paper_card, build_prompt, build_story_card, make_pool, make_story
from mechaudit.tau.anchors import select_initial_anchors
from mechaudit.tau.cards import FORBIDDEN_TERMS


def regex_only(text: str, terms: tuple[str, ...]) -> str | None:
    """The check before the prefilter: one compiled word-boundary regex per term."""
    for term in terms:
        if re.search(rf"(?<!\w){re.escape(term)}(?!\w)", text, re.IGNORECASE):
            return term
    return None


def prompts() -> list[str]:
    pool = make_pool(seed=0)
    by_id, table = pool.by_id(), pool.table()
    out = [build_paper_card(p).render() for p in pool.papers]
    for k, pattern in enumerate(sorted(pool.exemplars)):
        story, _ = make_story(6.0, seed=k)
        cards = [build_paper_card(by_id[pid])
                 for pid in select_initial_anchors(table, pattern, pool.exemplars[pattern])["paper_id"]]
        out += ["\n".join(build_prompt(role, build_story_card(story), cards)) for role in ROLES]
    return out


def per_prompt_us(check, texts: list[str], repeat: int = 5) -> tuple[float, list]:
    best, result = float("inf"), []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = [check(t, FORBIDDEN_TERMS) for t in texts]
        best = min(best, (time.perf_counter() - t0) / len(texts) * 1e6)
    return best, result


def main() -> None:
    texts = prompts()
    base, a = per_prompt_us(regex_only, texts)
    fast, b = per_prompt_us(find_forbidden, texts)
    assert a == b, "the prefilter changed a decision"
    print(f"{len(texts)} prompts, {len(FORBIDDEN_TERMS)} forbidden terms, identical decisions")
    print("| check | us per prompt | ratio to regex |")
    print("|---|---:|---:|")
    print(f"| regex only (baseline) | {base:.1f} | 1.0 |")
    print(f"| substring prefilter + regex | {fast:.1f} | {base / fast:.1f}x faster |")


if __name__ == "__main__":
    main()
