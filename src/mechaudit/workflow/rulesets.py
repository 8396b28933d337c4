"""Equivalence rules by name, as the chapters pick them from their parameters."""

from __future__ import annotations

from collections.abc import Sequence

from mechaudit.backends import Backend
from mechaudit.workflow.depth import MechanismKeyRule

#: Display names of the rules a chapter may ask for.
RULE_NAMES = ("mechanism_key", "reference", "tfidf", "embedding", "llm")


def rules_for_backend(names: Sequence[str], backend: str) -> list[str]:
    """The rules a chapter can apply to runs from ``backend``.

    Simulator runs (``reference``) keep ``names``. LLM runs have no ground truth, so
    ``mechanism_key`` is dropped, and the LLM judge (``llm``) joins the rules.
    """
    if not Backend.parse(backend).is_llm:
        return list(names)
    return [n for n in names if n != "mechanism_key"] + ([] if "llm" in names else ["llm"])


def build_rules(names: Sequence[str], backend: str = "reference", tfidf_threshold: float = 0.25,
                embedding_threshold: float = 0.77, embedding_model: str | None = None,
                judge_model: str = "claude-opus-4-6", client=None, instances=None,
                cache_dir=None) -> dict[str, object]:
    """Rule objects by name (see ``RULE_NAMES``); ``llm`` needs backend anthropic or replay and
    answers through ``client`` (default: a new client over ``cache_dir``).

    mechanism_key: ground truth for simulator runs; reference: ``ReferenceJudge("full")``;
    tfidf/embedding: the similarity rules at the given thresholds; llm: ``LLMJudge("full")``.
    """
    from mechaudit.rules import EmbeddingRule, LLMJudge, ReferenceJudge, TfidfRule

    out: dict[str, object] = {}
    for name in names:
        if name == "mechanism_key":
            out[name] = MechanismKeyRule()
        elif name == "reference":
            out[name] = ReferenceJudge("full")
        elif name == "tfidf":
            out[name] = TfidfRule(threshold=tfidf_threshold)
        elif name == "embedding":
            out[name] = EmbeddingRule(model=embedding_model, threshold=embedding_threshold)
        elif name == "llm":
            backend = Backend.llm(backend, field="backend (rule 'llm')")
            out[name] = LLMJudge("full", model=judge_model, backend=backend.value, client=client,
                                 instances=instances, cache_dir=cache_dir)
        else:
            raise ValueError(f"unknown rule {name!r}; known: {RULE_NAMES}")
    return out
