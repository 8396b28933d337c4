"""Anchor papers: score10 and reliability weight from review statistics, selection and densify.

Everything here is program-only: anchor ids, score10 and weights never reach a judge prompt.

* ``score10 = 1 + 9 * avg_score`` (ratings mapped by ``RATING_TO_UNIT`` and averaged);
  ``weight = log(1 + review_count) / (1 + max(9 * (highest - lowest), 0))``.
* Initial anchors (:func:`select_initial_anchors`): a pattern's quantile papers plus exemplars.
* Densify (:func:`select_bucket_anchors`): papers near the first round's mean score.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

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
    """``(score10, weight)`` from review stats: ``avg_score`` (0..1), ``review_count`` and the
    optional ``highest_score``/``lowest_score`` (dispersion); ``ValueError`` naming a missing field."""
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
    """The papers that can be anchors, each with ``score10`` and ``weight``: its own, else from its
    ``review_stats`` (:func:`score10_from_review_stats`); a paper with neither is skipped."""
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
    """Program-only anchor index (``ANCHOR_COLUMNS``) of the usable papers (:func:`anchor_papers`)."""
    rows = [{k: p.get(k) for k in ANCHOR_COLUMNS} for p in anchor_papers(papers)]
    return pd.DataFrame(rows, columns=list(ANCHOR_COLUMNS))


class _Columns(NamedTuple):
    """The anchor table as arrays (row positions index all of them); ``id_rank`` orders paper ids."""

    ids: np.ndarray
    pattern: np.ndarray
    score: np.ndarray
    weight: np.ndarray
    id_rank: np.ndarray


def _columns(table: pd.DataFrame) -> _Columns:
    ids = table["paper_id"].to_numpy()
    return _Columns(ids, table["pattern_id"].to_numpy(), table["score10"].to_numpy(dtype=float),
                    table["weight"].to_numpy(dtype=float), np.unique(ids, return_inverse=True)[1])


def _own(cols: _Columns, pattern_id: Any) -> np.ndarray:
    """Positions of the pattern's papers (none for ``pattern_id=None``)."""
    if pattern_id is None:
        return np.empty(0, dtype=int)
    return np.flatnonzero(np.array([p == pattern_id for p in cols.pattern], dtype=bool))


def _by_weight(cols: _Columns, pos: np.ndarray) -> np.ndarray:
    """``pos`` ordered by (weight descending, score10 ascending, paper_id ascending)."""
    return pos[np.lexsort((cols.id_rank[pos], cols.score[pos], -cols.weight[pos]))]


def _by_distance(cols: _Columns, pos: np.ndarray, centre: float) -> np.ndarray:
    """``pos`` ordered by (|score10 - centre| ascending, weight descending); remaining ties by
    (score10, paper_id), the order in which the original keeps a pattern's papers."""
    distance = np.abs(cols.score[pos] - centre)
    return pos[np.lexsort((cols.id_rank[pos], cols.score[pos], -cols.weight[pos], distance))]


def _in_bucket(cols: _Columns, pos: np.ndarray, centre: float, size: float) -> np.ndarray:
    """The positions with ``centre - size/2 <= score10 <= centre + size/2`` (both ends inclusive)."""
    half = size / 2.0
    score = cols.score[pos]
    return pos[(score >= centre - half) & (score <= centre + half)]


def _rows(table: pd.DataFrame, pos: Sequence[int]) -> pd.DataFrame:
    return table.iloc[list(pos)].reset_index(drop=True)


def select_initial_anchors(
    table: pd.DataFrame,
    pattern_id: Any,
    exemplar_ids: Sequence[str] = (),
    quantiles: Sequence[float] = QUANTILES,
    max_exemplars: int = MAX_EXEMPLARS,
    max_initial: int = MAX_INITIAL,
) -> pd.DataFrame:
    """Rows of ``table``: the pattern's papers at ``quantiles`` of (score10, paper_id) order (all when
    fewer), then up to ``max_exemplars`` exemplars; above ``max_initial``, the first by (weight desc,
    score10, paper_id), in that order, as the original. ``ValueError`` for a pattern without papers.
    """
    cols = _columns(table)
    own = _own(cols, pattern_id)
    if len(own) == 0:
        raise ValueError(f"pattern {pattern_id!r} has no papers with review stats")
    own = own[np.lexsort((cols.id_rank[own], cols.score[own]))]
    n = len(own)
    idx = range(n) if n <= len(quantiles) else dict.fromkeys(int(round(q * (n - 1))) for q in quantiles)
    chosen = [int(own[i]) for i in idx]
    position = {pid: k for k, pid in enumerate(cols.ids)}
    taken = {cols.ids[k] for k in chosen}
    exemplars = [e for e in dict.fromkeys(exemplar_ids) if e in position and e not in taken][:max_exemplars]
    chosen += [position[e] for e in exemplars]
    if len(chosen) > max_initial:
        chosen = list(_by_weight(cols, np.array(chosen))[:max_initial])
    return _rows(table, chosen)


def bucket_centre(score_hint: float) -> float:
    """Centre of the densify bucket, the nearest half point ``round(2 * score_hint) / 2`` (an exact
    half rounds to even, as the original: 6.25 -> 6.0, 6.75 -> 7.0)."""
    return round(2 * float(score_hint)) / 2


def original_bucket_selection(table: pd.DataFrame, pattern_id: Any, centre: float, size: float,
                              count: int) -> list[str]:
    """The original densify selection (paper ids, present anchors not yet dropped): up to ``count``
    papers of the pattern in the inclusive bucket ``centre +- size / 2`` by weight, topped up from
    the pattern's other papers nearest ``centre``; no or an unknown pattern selects nothing."""
    cols = _columns(table)
    own = _own(cols, pattern_id)
    chosen = _by_weight(cols, _in_bucket(cols, own, centre, size))[:count]
    if len(chosen) < count:
        rest = np.setdiff1d(own, chosen)
        chosen = np.concatenate([chosen, _by_distance(cols, rest, centre)[:count - len(chosen)]])
    return [cols.ids[k] for k in chosen]


def _fill_selection(cols: _Columns, pattern_id: Any, centre: float, size: float, count: int,
                    excluded: set[str]) -> list[int]:
    """Mode "fill": present anchors are left out *before* selecting, so ``count`` new papers come
    whenever the pool has them; the bucket is searched in the own pattern, then in the others (both
    by weight, as the original), and the top-up is the own pattern's papers nearest to ``centre``."""
    free = np.array([pid not in excluded for pid in cols.ids], dtype=bool)
    own_mask = np.zeros(len(free), dtype=bool)
    own_mask[_own(cols, pattern_id)] = True
    own, other = np.flatnonzero(free & own_mask), np.flatnonzero(free & ~own_mask)
    order = np.concatenate([_by_weight(cols, _in_bucket(cols, own, centre, size)),
                            _by_weight(cols, _in_bucket(cols, other, centre, size)), _by_distance(cols, own, centre)])
    return list(dict.fromkeys(int(k) for k in order))[:count]


def _floor_selection(cols: _Columns, score_hint: float, pattern_id: Any, size: float, count: int,
                     excluded: set[str]) -> list[int]:
    """Mode "floor" (this book's first version): the bucket ``[k * size, (k + 1) * size)`` holding
    ``score_hint``, own pattern first, then the other patterns, highest weight first (ties by
    paper_id); present anchors are left out before selecting; no top-up outside the bucket."""
    inside = (np.floor(cols.score / size) == np.floor(score_hint / size))
    inside &= np.array([pid not in excluded for pid in cols.ids], dtype=bool)
    own_mask = np.zeros(len(inside), dtype=bool)
    own_mask[_own(cols, pattern_id)] = True
    order = []
    for pos in (np.flatnonzero(inside & own_mask), np.flatnonzero(inside & ~own_mask)):
        order += list(pos[np.lexsort((cols.id_rank[pos], -cols.weight[pos]))])
    return order[:count]


#: Densify selection rules: the original (default) and two named alternatives (see
#: :func:`select_bucket_anchors`).
DENSIFY_MODES = ("original", "fill", "floor")


def select_bucket_anchors(
    table: pd.DataFrame,
    score_hint: float,
    exclude: Iterable[str] = (),
    pattern_id: Any = None,
    bucket_size: float = BUCKET_SIZE,
    bucket_count: int = BUCKET_COUNT,
    mode: str = "original",
    cache: dict[tuple[Any, ...], list[str]] | None = None,
) -> pd.DataFrame:
    """Rows of ``table`` (selection order) to add for a story whose first-round mean score is ``score_hint``.

    ``"original"``: :func:`original_bucket_selection` around :func:`bucket_centre`, minus ``exclude``
    (so possibly fewer, or none), reused from ``cache`` (a dict kept per table) as the original does;
    ``"fill"``, ``"floor"``: :func:`_fill_selection`, :func:`_floor_selection`.
    """
    if mode not in DENSIFY_MODES:
        raise ValueError(f"densify mode must be one of {DENSIFY_MODES}, got {mode!r}")
    excluded = set(exclude)
    centre = bucket_centre(score_hint)
    cols = _columns(table)
    if mode == "original":
        key = (pattern_id, centre, bucket_size, bucket_count)
        chosen = cache.get(key) if cache is not None else None
        if chosen is None:
            chosen = original_bucket_selection(table, pattern_id, centre, bucket_size, bucket_count)
            if cache is not None:
                cache[key] = chosen
        position = {pid: k for k, pid in enumerate(cols.ids)}
        return _rows(table, [position[pid] for pid in chosen if pid not in excluded])
    if mode == "fill":
        return _rows(table, _fill_selection(cols, pattern_id, centre, bucket_size, bucket_count, excluded))
    return _rows(table, _floor_selection(cols, float(score_hint), pattern_id, bucket_size, bucket_count, excluded))


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
