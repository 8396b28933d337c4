"""Equivalence rules: does a pair of hypotheses describe the same mechanism?

Every rule has ``same(pairs) -> np.ndarray[bool]`` over a list of ``(Hypothesis, Hypothesis)``;
the similarity rules (TF-IDF, embeddings) also have ``similarity(pairs) -> np.ndarray[float]``.
All rules see the same text, ``mechaudit.schema.hypothesis_text`` (statement, explanation, chain),
except the reference judges, the mechanism key and the paper-rate judge, which read only the structured chain.

``build(name, **config)`` makes a rule from its name (``NAMES``, ``mechaudit.rules.registry``).
Rules follow scikit-learn's conventions (the constructor stores keyword parameters, ``fit`` sets
trailing-underscore attributes). The names below are imported on first use, so importing one rule
does not load scikit-learn, torch or the LLM layer.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> home module.
_EXPORTS: dict[str, str] = {
    "NAMES": "mechaudit.rules.registry",
    "build": "mechaudit.rules.registry",
    "Pair": "mechaudit.rules.base",
    "Rule": "mechaudit.rules.base",
    "check_pairs": "mechaudit.rules.base",
    "MechanismKeyRule": "mechaudit.rules.mechanism_key",
    "RUBRICS": "mechaudit.rules.reference",
    "ReferenceJudge": "mechaudit.rules.reference",
    "TfidfRule": "mechaudit.rules.tfidf",
    "EmbeddingRule": "mechaudit.rules.embedding",
    "ModelCache": "mechaudit.rules.embedding",
    "marginal_same_rate": "mechaudit.rules.embedding",
    "matched_threshold": "mechaudit.rules.embedding",
    "LLMJudge": "mechaudit.rules.llm_judge",
    "UndecidedError": "mechaudit.rules.llm_judge",
    "PaperRateJudge": "mechaudit.rules.paper_rates",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import a public name on first access and cache it on the package."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
