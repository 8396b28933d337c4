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
    """The rules a chapter can apply to its runs: simulator runs (``llm`` False) or LLM runs (True).

    Simulator runs keep ``names``. LLM runs have no canonical step ids, so the rules that read
    them as truth (``SIMULATOR_ONLY``: the mechanism key and the paper-rate judge) are dropped, and
    the LLM judge (``llm``) joins the rules.
    """
    if not llm:
        return list(names)
    return [n for n in names if n not in SIMULATOR_ONLY] + ([] if "llm" in names else ["llm"])


def build_rules(names: Sequence[str], client=None, tfidf_threshold: float = 0.25,
                embedding_threshold: float = 0.77, embedding_model: str | None = None,
                judge_model: str = "claude-opus-4-6", instances=None,
                embedding_cache_dir=None) -> dict[str, object]:
    """Rule objects by name (see ``RULE_NAMES``), each ``mechaudit.rules.build(name, ...)``.

    mechanism_key: ground truth for simulator runs; paper_rates: ``PaperRateJudge()`` (simulator
    runs: each kind of chain change called different at the paper's LLM-judge rates); reference:
    ``ReferenceJudge(rubric="full")``;
    tfidf/embedding: the similarity rules at the given thresholds; llm: ``LLMJudge(rubric="full")``
    answering through the LLM ``client`` (a ``mechaudit.llm.LLMClient``; asking for "llm" without
    one raises ``ValueError``). ``embedding_cache_dir``: the embedding rule's disk store of vectors
    (None: none; see ``mechaudit.paths.cache_path("embedding_cache")``). An unknown name raises
    ``MechauditError`` listing the valid ones.
    """
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
