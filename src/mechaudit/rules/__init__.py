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

import lazy_loader

#: home module -> its public names, imported on first use (SPEC 1's lazy_loader)
__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs=dict((
    ("registry", ("NAMES", "build")),
    ("base", ("Pair", "Rule", "check_pairs")),
    ("mechanism_key", ("MechanismKeyRule",)),
    ("reference", ("RUBRICS", "ReferenceJudge")),
    ("tfidf", ("TfidfRule",)),
    ("embedding", ("EmbeddingRule", "ModelCache", "marginal_same_rate", "matched_threshold")),
    ("llm_judge", ("LLMJudge", "UndecidedError")),
    ("paper_rates", ("PaperRateJudge",)),
)))
