"""Equivalence rules: does a pair of hypotheses describe the same mechanism?

Every rule has ``same(pairs) -> np.ndarray[bool]`` over a list of ``(Hypothesis, Hypothesis)``;
the similarity rules (TF-IDF, embeddings) also have ``similarity(pairs) -> np.ndarray[float]``.
All rules see the same text, ``mechaudit.schema.hypothesis_text`` (statement, explanation, chain),
except the reference judges, which read only the structured chain.
"""

from mechaudit.rules.base import Pair, Rule, check_pairs
from mechaudit.rules.embedding import EmbeddingRule, marginal_same_rate, matched_threshold
from mechaudit.rules.llm_judge import LLMJudge, UndecidedError
from mechaudit.rules.reference import RUBRICS, ReferenceJudge
from mechaudit.rules.tfidf import TfidfRule

__all__ = [
    "RUBRICS",
    "EmbeddingRule",
    "LLMJudge",
    "Pair",
    "ReferenceJudge",
    "Rule",
    "TfidfRule",
    "UndecidedError",
    "check_pairs",
    "marginal_same_rate",
    "matched_threshold",
]
