"""Equivalence rules by name, as the chapters pick them from their parameters (through the one
registry ``mechaudit.rules.build``)."""

from __future__ import annotations

from collections.abc import Sequence

from mechaudit.backends import Backend
from mechaudit.rules.registry import NAMES as RULE_NAMES
from mechaudit.rules.registry import build

#: Rules that read the simulator's canonical step ids as the truth: meaningless on LLM runs.
SIMULATOR_ONLY = ("mechanism_key", "paper_rates")


def rules_for_backend(names: Sequence[str], backend: str) -> list[str]:
    """The rules a chapter can apply to runs from ``backend``.

    Simulator runs (``reference``) keep ``names``. LLM runs have no canonical step ids, so the rules
    that read them as truth (``SIMULATOR_ONLY``: the mechanism key and the paper-rate judge) are
    dropped, and the LLM judge (``llm``) joins the rules.
    """
    if not Backend.parse(backend).is_llm:
        return list(names)
    return [n for n in names if n not in SIMULATOR_ONLY] + ([] if "llm" in names else ["llm"])


def build_rules(names: Sequence[str], backend: str = "reference", tfidf_threshold: float = 0.25,
                embedding_threshold: float = 0.77, embedding_model: str | None = None,
                judge_model: str = "claude-opus-4-6", client=None, instances=None,
                cache_dir=None, embedding_cache_dir=None) -> dict[str, object]:
    """Rule objects by name (see ``RULE_NAMES``), each ``mechaudit.rules.build(name, ...)``.

    mechanism_key: ground truth for simulator runs; paper_rates: ``PaperRateJudge()`` (simulator
    runs: each kind of chain change called different at the paper's LLM-judge rates); reference:
    ``ReferenceJudge(rubric="full")``;
    tfidf/embedding: the similarity rules at the given thresholds; llm: ``LLMJudge(rubric="full")``
    on ``backend`` (anthropic or replay), answering through ``client`` (default: a new client over
    ``cache_dir``). ``embedding_cache_dir``: the embedding rule's disk store of vectors (None: none;
    see ``mechaudit.paths.cache_path("embedding_cache")``). An unknown name raises
    ``MechauditError`` listing the valid ones.
    """
    config = {
        "reference": {"rubric": "full"},
        "tfidf": {"threshold": tfidf_threshold},
        "embedding": {"model": embedding_model, "threshold": embedding_threshold, "cache_dir": embedding_cache_dir},
        "llm": {"rubric": "full", "model": judge_model, "backend": backend, "client": client,
                "instances": instances, "cache_dir": cache_dir},
    }
    return {name: build(name, **config.get(name, {})) for name in names}


__all__ = ["RULE_NAMES", "SIMULATOR_ONLY", "build_rules", "rules_for_backend"]
