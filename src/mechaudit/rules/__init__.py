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
_EXPORTS: dict[str, str] = {name: f"mechaudit.rules.{home}" for home, names in (
    ("registry", ("NAMES", "build")),
    ("base", ("Pair", "Rule", "check_pairs")),
    ("mechanism_key", ("MechanismKeyRule",)),
    ("reference", ("RUBRICS", "ReferenceJudge")),
    ("tfidf", ("TfidfRule",)),
    ("embedding", ("EmbeddingRule", "ModelCache", "marginal_same_rate", "matched_threshold")),
    ("llm_judge", ("LLMJudge", "UndecidedError")),
    ("paper_rates", ("PaperRateJudge",)),
) for name in names}

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
