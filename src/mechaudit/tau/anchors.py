"""Anchor papers: score10 and reliability weight from review statistics, selection and densify.

Everything here is program-only: anchor ids, score10 and weights never reach a judge prompt.

* ``score10 = 1 + 9 * avg_score`` with ``avg_score`` in 0..1 (ratings mapped 10->1.0, 9->0.95,
  8->0.85, 7->0.7, 6->0.6, 5->0.5, 4->0.4, 3->0.3, 2->0.2, 1->0.1 and averaged);
  ``dispersion10 = 9 * (highest - lowest)``; ``weight = log(1 + review_count) / (1 + max(dispersion10, 0))``.
* Initial anchors of a pattern: papers sorted by (score10, paper_id), indices
  ``round(q * (n - 1))`` for the quantiles (all papers when n <= number of quantiles), then up
  to 2 exemplars, capped at 11 keeping the highest weights.
* Densify: up to ``bucket_count`` more papers from the score bucket (width ``bucket_size``) that
  contains the current score, highest weight first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

#: Rating (1..10) -> normalised score in 0..1, as in the original pipeline.
RATING_TO_UNIT = {10: 1.0, 9: 0.95, 8: 0.85, 7: 0.7, 6: 0.6, 5: 0.5, 4: 0.4, 3: 0.3, 2: 0.2, 1: 0.1}
QUANTILES = (0.05, 0.15, 0.25, 0.35, 0.5, 0.65, 0.75, 0.85, 0.95)
MAX_EXEMPLARS = 2
MAX_INITIAL = 11
MAX_TOTAL = 14
BUCKET_SIZE = 1.0
BUCKET_COUNT = 3
#: Pass rule: patterns with fewer papers use the global quantiles.
PASS_MIN_PATTERN_PAPERS = 20


def review_stats_from_ratings(ratings: Sequence[int]) -> dict[str, float]:
    """``{avg_score, highest_score, lowest_score, review_count}`` (0..1 scale) from 1..10 ratings."""
    if len(ratings) == 0:
        raise ValueError("review_stats_from_ratings needs at least one rating")
    try:
        unit = [RATING_TO_UNIT[int(r)] for r in ratings]
    except KeyError as exc:
        raise ValueError(f"rating {exc.args[0]!r} is not an integer in 1..10") from None
    return {"avg_score": float(np.mean(unit)), "highest_score": max(unit),
            "lowest_score": min(unit), "review_count": len(unit)}


def score10_from_review_stats(stats: Mapping[str, Any]) -> tuple[float, float]:
    """``(score10, weight)`` from review stats with ``avg_score`` (0..1) and ``review_count``.

    ``highest_score``/``lowest_score`` (0..1) give the dispersion; missing means no dispersion.
    Raises ``ValueError`` naming the field when ``avg_score`` or ``review_count`` is missing.
    """
    for key in ("avg_score", "review_count"):
        if stats.get(key) is None:
            raise ValueError(f"review_stats lacks field {key!r}")
    avg = float(stats["avg_score"])
    count = float(stats["review_count"])
    if not 0.0 <= avg <= 1.0:
        raise ValueError(f"review_stats field 'avg_score' must be in [0, 1], got {avg}")
    if count < 0:
        raise ValueError(f"review_stats field 'review_count' must be >= 0, got {count}")
    high = stats.get("highest_score", avg)
    low = stats.get("lowest_score", avg)
    dispersion10 = 9.0 * (float(high) - float(low))
    return 1.0 + 9.0 * avg, float(np.log1p(count) / (1.0 + max(dispersion10, 0.0)))


#: Columns of the program-only anchor index.
ANCHOR_COLUMNS = ("paper_id", "pattern_id", "score10", "weight")


def anchor_papers(papers: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The papers that can be anchors, each a dict with ``score10`` and ``weight``.

    A paper keeps its own ``score10`` and ``weight`` when it has both; otherwise they are derived
    from its ``review_stats`` (:func:`score10_from_review_stats`); a paper with neither is skipped.
    """
    usable = []
    for paper in papers:
        if paper.get("score10") is None or paper.get("weight") is None:
            if not paper.get("review_stats"):
                continue  # no reviews: cannot be an anchor
            score10, weight = score10_from_review_stats(paper["review_stats"])
            paper = {**paper, "score10": score10, "weight": weight}
        usable.append(dict(paper))
    return usable


def anchor_table(papers: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Program-only anchor index of the usable papers (:func:`anchor_papers`): one row per paper
    with ``paper_id``, ``pattern_id``, ``score10`` and ``weight``."""
    rows = [{k: p.get(k) for k in ANCHOR_COLUMNS} for p in anchor_papers(papers)]
    return pd.DataFrame(rows, columns=list(ANCHOR_COLUMNS))


def select_initial_anchors(
    table: pd.DataFrame,
    pattern_id: Any,
    exemplar_ids: Sequence[str] = (),
    quantiles: Sequence[float] = QUANTILES,
    max_exemplars: int = MAX_EXEMPLARS,
    max_initial: int = MAX_INITIAL,
) -> pd.DataFrame:
    """Quantile anchors of one pattern plus up to ``max_exemplars`` exemplars, capped by weight.

    Returns rows of ``table`` in selection order (quantile anchors by ascending score, then
    exemplars). An unknown or empty pattern raises ``ValueError``.
    """
    own = table[table["pattern_id"] == pattern_id].sort_values(["score10", "paper_id"], kind="stable")
    if own.empty:
        raise ValueError(f"pattern {pattern_id!r} has no papers with review stats")
    n = len(own)
    if n <= len(quantiles):
        idx = list(range(n))
    else:
        idx = list(dict.fromkeys(int(round(q * (n - 1))) for q in quantiles))
    chosen = list(own["paper_id"].iloc[idx])
    known = set(table["paper_id"])
    exemplars = [e for e in exemplar_ids if e in known and e not in chosen][:max_exemplars]
    chosen += exemplars
    picked = table.set_index("paper_id").loc[chosen].reset_index()
    if len(picked) > max_initial:
        keep = set(picked.sort_values("weight", ascending=False, kind="stable")["paper_id"].iloc[:max_initial])
        picked = picked[picked["paper_id"].isin(keep)]
    return picked.reset_index(drop=True)


def select_bucket_anchors(
    table: pd.DataFrame,
    score: float,
    exclude: Iterable[str] = (),
    pattern_id: Any = None,
    bucket_size: float = BUCKET_SIZE,
    bucket_count: int = BUCKET_COUNT,
) -> pd.DataFrame:
    """Densify anchors: papers in the score bucket ``floor(score / bucket_size)``, highest weight first.

    Searches the pattern's papers first and tops up from the whole table; ``exclude`` lists ids
    already in use.
    """
    bucket = np.floor(score / bucket_size)
    excluded = set(exclude)
    pool = table[(np.floor(table["score10"] / bucket_size) == bucket) & ~table["paper_id"].isin(excluded)]
    own = pool[pool["pattern_id"] == pattern_id] if pattern_id is not None else pool.iloc[:0]
    rest = pool[~pool["paper_id"].isin(own["paper_id"])]
    order = [own.sort_values(["weight", "paper_id"], ascending=[False, True], kind="stable"),
             rest.sort_values(["weight", "paper_id"], ascending=[False, True], kind="stable")]
    return pd.concat(order).iloc[:bucket_count].reset_index(drop=True)


def pass_thresholds(table: pd.DataFrame, pattern_id: Any) -> dict[str, Any]:
    """The q50 and q75 of score10 used by the pass rule, from the pattern (>= 20 papers) or all."""
    own = table[table["pattern_id"] == pattern_id]["score10"]
    source = "pattern" if len(own) >= PASS_MIN_PATTERN_PAPERS else "global"
    values = own if source == "pattern" else table["score10"]
    return {"q50": float(np.quantile(values, 0.5)), "q75": float(np.quantile(values, 0.75)),
            "source": source}


def passes(scores: Sequence[float], thresholds: Mapping[str, float]) -> bool:
    """Pass rule: at least 2 role scores >= q75 and their mean >= q50."""
    arr = np.asarray(scores, dtype=float)
    return bool(np.sum(arr >= thresholds["q75"]) >= 2 and arr.mean() >= thresholds["q50"])
