"""Measured diversity of delivered hypothesis sets under different equivalence rules (paper §3, §5.2).

Each run's delivered set is judged pairwise, grouped (``diversity.group``: components, complete
linkage) and given a Vendi score: on the cosine matrix (clipped at 0) for similarity rules, on the
complete-linkage groups for yes/no rules (a non-transitive yes/no matrix need not be PSD).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np
import pandas as pd

from mechaudit.diversity import group, n_groups, vendi_score, vendi_score_from_labels
from mechaudit.schema import Hypothesis, hypothesis_text
from mechaudit.workflow.records import Run


def _pairs(hyps: Sequence[Hypothesis]) -> tuple[list[tuple[Hypothesis, Hypothesis]], np.ndarray, np.ndarray]:
    iu = np.array(list(combinations(range(len(hyps)), 2)), dtype=int).reshape(-1, 2)
    return [(hyps[i], hyps[j]) for i, j in iu], iu[:, 0], iu[:, 1]


def set_matrices(hyps: Sequence[Hypothesis], rule) -> tuple[np.ndarray, np.ndarray | None]:
    """All-pairs ``(same, similarity)`` of a set: bool ``(n, n)`` with True diagonal, and the float
    similarity matrix (unit diagonal) if the rule has ``similarity``, else None."""
    n = len(hyps)
    pairs, i, j = _pairs(hyps)
    same = np.eye(n, dtype=bool)
    sim = np.eye(n) if hasattr(rule, "similarity") else None
    if not pairs:
        return same, sim
    if sim is not None:
        raw = np.asarray(rule.similarity(pairs), dtype=float)
        # a similarity rule's verdicts from the same similarities (TF-IDF would refit its vectorizer)
        verdicts = rule.same_from_similarity(raw) if hasattr(rule, "same_from_similarity") else rule.same(pairs)
        sim[i, j] = sim[j, i] = np.clip(raw, 0.0, 1.0)
    else:
        verdicts = rule.same(pairs)
    same[i, j] = same[j, i] = np.asarray(verdicts, dtype=bool)
    return same, sim


def delivered_diversity(runs: Sequence[Run], rules: Mapping[str, object]) -> pd.DataFrame:
    """One row per run and rule: group counts (components, complete) and Vendi score."""
    texts = list(dict.fromkeys(hypothesis_text(h) for run in runs for h in run.delivered))
    for rule in rules.values():  # embedding rules: every text in one batched encode, not one per run
        if hasattr(rule, "embed") and texts:
            rule.embed(texts)
    rows = []
    for run in runs:
        hyps = list(run.delivered)
        for name, rule in rules.items():
            same, sim = set_matrices(hyps, rule)
            complete = group(same, method="complete")
            vendi = vendi_score(sim) if sim is not None else vendi_score_from_labels(complete)
            rows.append({"instance": run.instance, "depth": run.depth, "repetition": run.repetition,
                         "rule": name, "n_hypotheses": len(hyps),
                         "components": n_groups(group(same, method="components")),
                         "complete": n_groups(complete), "vendi": vendi})
    return pd.DataFrame(rows, columns=["instance", "depth", "repetition", "rule", "n_hypotheses", "components",
                                       "complete", "vendi"])


def diversity_table(div: pd.DataFrame, value: str = "complete") -> pd.DataFrame:
    """Mean of ``value`` over runs, one row per (instance, depth) and one column per rule."""
    return div.pivot_table(index=["instance", "depth"], columns="rule", values=value, aggfunc="mean",
                           sort=False).reset_index()
