"""Equivalence rules by name, as the chapters pick them from their parameters (through the one
registry ``mechaudit.rules.build``)."""

from __future__ import annotations

from collections.abc import Sequence

from mechaudit.llm.client import require_client
from mechaudit.rules.registry import NAMES as RULE_NAMES
from mechaudit.rules.registry import build

#: Rules that read the simulator's canonical step ids as the truth: meaningless on LLM runs.
SIMULATOR_ONLY = ("mechanism_key", "paper_rates")


def rules_for(names: Sequence[str], llm: bool) -> list[str]:
    """``names`` for simulator runs; for LLM runs without ``SIMULATOR_ONLY`` and with ``llm``."""
    if not llm:
        return list(names)
    return [n for n in names if n not in SIMULATOR_ONLY] + ([] if "llm" in names else ["llm"])


def build_rules(names: Sequence[str], client=None, tfidf_threshold: float = 0.25,
                embedding_threshold: float = 0.77, embedding_model: str | None = None,
                judge_model: str = "claude-opus-4-6", instances=None,
                embedding_cache_dir=None) -> dict[str, object]:
    """Rule objects by name (``RULE_NAMES``), each ``mechaudit.rules.build(name, ...)``: reference
    and llm with the full rubric, llm through ``client`` (required), tfidf/embedding at the given
    thresholds (``embedding_cache_dir``: the embedding store, None: none)."""
    if "llm" in names:
        require_client(client, "rule 'llm'", "; offline runs use the other rules")
    config = {
        "reference": {"rubric": "full"},
        "tfidf": {"threshold": tfidf_threshold},
        "embedding": {"model": embedding_model, "threshold": embedding_threshold, "cache_dir": embedding_cache_dir},
        "llm": {"rubric": "full", "model": judge_model, "client": client, "instances": instances},
    }
    return {name: build(name, **config.get(name, {})) for name in names}


__all__ = ["RULE_NAMES", "SIMULATOR_ONLY", "build_rules", "rules_for"]
