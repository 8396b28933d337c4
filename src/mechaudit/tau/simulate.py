"""Offline stand-ins with known ground truth: a synthetic paper pool and a simulated judge.

Synthetic pool (:func:`make_pool`)
    Pattern ``k`` has mean quality ``m_k ~ N(pool_mean, pattern_spread)``, its papers latent quality
    ``q ~ N(m_k, paper_spread)`` clipped to [1.5, 9.8] (score10 scale). Each of 3..6 reviewers
    perceives ``q + N(0, review_noise)`` and gives the nearest 1..10 rating, so score10 and the
    anchor weight are noisy, discretised measurements of ``q``. Card texts come from templates, some
    with leaks on purpose, to exercise the card mask.

Simulated judge (:class:`SimulatedJudge`) -- a documented random model, never an LLM
    It perceives a pool paper at its ``score10`` (or, with ``pool.truth("quality")``, its latent
    quality: a misspecified judge) and a story at its true score, plus an optional fixed per-card,
    per-role offset ``N(0, perception_noise)``. For a perceived gap ``d`` and the role's ``tau``:

    * ``p = sigmoid(d / tau)``; tie probability ``t = tie_rate * exp(-(d / tie_width)^2)``
      (ties happen near equal quality).
    * ``tie_mode="calibrated"`` (default): P(better) = p - t/2, P(tie) = t, P(worse) = 1 - p - t/2,
      with ``t`` capped at ``2 min(p, 1 - p)``. The expected soft label is exactly ``p``, so the
      soft-label fit recovers the true ``tau``.
    * ``tie_mode="abstain"``: the judge says tie with probability ``t`` and otherwise decides
      with ``p``; the expected label ``0.5 + (1 - t)(p - 0.5)`` is flatter, so fitted tau grows.
    * Strength grows with the gap, independently of the outcome: ``z = |d| / tau + N(0,
      strength_noise)``; weak if ``z < 0.5``, medium if ``z < 1.5``, else strong.

    All draws come from ``np.random.default_rng`` seeded by ``seed`` and the content of the call,
    so the same call always gets the same answer, whatever the call order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import expit

from mechaudit.tau.anchors import RATING_TO_UNIT, review_stats_from_ratings, score10_from_review_stats
from mechaudit.tau.cards import Card, build_paper_card, build_story_card
from mechaudit.tau.rubric import ROLES, RUBRIC_VERSION

STRENGTH_CUTS = (0.5, 1.5)
TIE_MODES = ("calibrated", "abstain")
#: What the simulated judge perceives a pool paper at (see :meth:`SyntheticPool.truth`).
PERCEPTION_SOURCES = ("score10", "quality")
_RATINGS = np.array(sorted(RATING_TO_UNIT))
_RATING_SCORE10 = 1 + 9 * np.array([RATING_TO_UNIT[r] for r in _RATINGS])

_TOPICS = ["protein folding", "traffic forecasting", "code repair", "crop monitoring", "speech translation",
           "fraud detection", "drug screening", "robot grasping", "climate downscaling", "legal retrieval",
           "medical triage", "chip placement", "weather nowcasting", "music tagging", "map matching"]
_GAPS = ["labels are scarce", "inputs drift over time", "signals are sparse and noisy",
         "several sources disagree", "rare cases dominate the cost", "long contexts exceed memory",
         "errors compound over steps", "the data is heavily imbalanced"]
_HARMS = ["which hides failures until deployment", "which makes results hard to reproduce",
          "which wastes expert effort", "which inflates reported gains", "which blocks real-time use"]
_METHODS = ["a contrastive encoder", "a graph message-passing model", "a retrieval-augmented generator",
            "a diffusion prior", "a mixture of experts", "a causal discovery step", "a Bayesian ensemble",
            "a program synthesis loop", "a state-space model", "a curriculum of synthetic tasks"]
_TWISTS = ["an uncertainty-aware gate", "a self-consistency filter", "a learned cost model",
           "an active sampling policy", "a physics-informed penalty", "a hierarchical memory",
           "a counterfactual data generator", "a sparse attention kernel"]
_CLAIMS = ["a benchmark of {n} curated tasks", "a theory of when the gate helps", "an open toolkit",
           "ablations over {n} settings", "a failure analysis of {n} cases", "a {n}x cheaper inference path",
           "a calibration study across {n} sites", "a user study with {n} experts"]
#: Raw-text leaks that the card mask must remove (they never reach a prompt).
_LEAKS = ["It lifts the F1 score by {n} points.", "See the arXiv preprint by the same author.",
          "The title says it all.", "Code and DOI link in the appendix."]


@dataclass(frozen=True)
class SyntheticPool:
    """Synthetic papers (dicts with paper_id, pattern_id, title, quality, ratings, review_stats,
    score10, weight, problem, method, contrib) and each pattern's exemplar ids."""

    papers: list[dict[str, Any]]
    exemplars: dict[str, list[str]]
    seed: int

    def table(self) -> pd.DataFrame:
        """One row per paper: paper_id, pattern_id, quality, score10, weight, review_count."""
        return pd.DataFrame([{k: p[k] for k in ("paper_id", "pattern_id", "quality", "score10", "weight")}
                             | {"review_count": p["review_stats"]["review_count"]} for p in self.papers])

    @cached_property
    def card_keys(self) -> dict[str, str]:
        """Paper id -> the key of its blind card (computed once)."""
        return {p["paper_id"]: build_paper_card(p).key for p in self.papers}

    def by_id(self) -> dict[str, dict[str, Any]]:
        return {p["paper_id"]: p for p in self.papers}

    def truth(self, source: str = "score10") -> dict[str, dict[str, float]]:
        """Card key -> role -> perceived value: ``score10`` or the latent ``quality`` (misspecified)."""
        if source not in PERCEPTION_SOURCES:
            raise ValueError(f"source must be one of {PERCEPTION_SOURCES}, got {source!r}")
        return {self.card_keys[p["paper_id"]]: {r: p[source] for r in ROLES} for p in self.papers}


def _pick(rng: np.random.Generator, items: Sequence[str]) -> str:
    return items[int(rng.integers(len(items)))]


def _texts(rng: np.random.Generator, leak_rate: float) -> dict[str, str]:
    n = int(rng.integers(3, 60))
    problem = f"{_pick(rng, _TOPICS).capitalize()} fails when {_pick(rng, _GAPS)}, {_pick(rng, _HARMS)}."
    method = (f"We pair {_pick(rng, _METHODS)} with {_pick(rng, _TWISTS)} and tune it on "
              f"{int(rng.integers(2, 40))} public corpora.")
    contrib = "; ".join(c.format(n=n) for c in rng.choice(_CLAIMS, size=2, replace=False)) + "."
    if rng.random() < leak_rate:
        method += " " + _pick(rng, _LEAKS).format(n=int(rng.integers(1, 9)))
    return {"problem": problem, "method": method, "contrib": contrib}


def ratings_for(quality: float, n_reviews: int, review_noise: float, rng: np.random.Generator) -> list[int]:
    """Ratings 1..10 of ``n_reviews`` reviewers who perceive ``quality + N(0, review_noise)``."""
    seen = quality + review_noise * rng.standard_normal(n_reviews)
    nearest = np.abs(seen[:, None] - _RATING_SCORE10[None, :]).argmin(axis=1)
    return [int(r) for r in _RATINGS[nearest]]


def make_pool(
    n_patterns: int = 8,
    papers_per_pattern: int = 40,
    seed: int = 0,
    pool_mean: float = 5.5,
    pattern_spread: float = 1.0,
    paper_spread: float = 1.5,
    review_noise: float = 0.8,
    reviews: tuple[int, int] = (3, 6),
    leak_rate: float = 0.1,
) -> SyntheticPool:
    """A seeded synthetic pool (see the module docstring for the generative model)."""
    rng = np.random.default_rng(seed)
    papers, exemplars, keys = [], {}, set()
    for k in range(n_patterns):
        pattern_id = f"pattern_{k + 1:02d}"
        mean = pool_mean + pattern_spread * rng.standard_normal()
        ids = []
        for _ in range(papers_per_pattern):
            quality = float(np.clip(mean + paper_spread * rng.standard_normal(), 1.5, 9.8))
            ratings = ratings_for(quality, int(rng.integers(reviews[0], reviews[1] + 1)), review_noise, rng)
            stats = review_stats_from_ratings(ratings)
            score10, weight = score10_from_review_stats(stats)
            texts = _texts(rng, leak_rate)
            while build_paper_card(texts).key in keys:  # cards must be unique for the judge's lookup
                texts = _texts(rng, leak_rate)
            keys.add(build_paper_card(texts).key)
            paper_id = f"P{len(papers) + 1:04d}"
            ids.append(paper_id)
            papers.append({"paper_id": paper_id, "pattern_id": pattern_id,
                           "title": f"Synthetic study {len(papers) + 1}", "quality": quality,
                           "ratings": ratings, "review_stats": stats, "score10": score10,
                           "weight": weight, **texts})
        exemplars[pattern_id] = [str(e) for e in rng.choice(ids, size=min(2, len(ids)), replace=False)]
    return SyntheticPool(papers, exemplars, seed)


def make_story(
    scores: float | Mapping[str, float], seed: int = 0
) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """``(story, {its card key: {role: true score}})`` for :class:`SimulatedJudge`."""
    rng = np.random.default_rng(seed)
    texts = _texts(rng, leak_rate=0.5)
    story = {"title": f"Synthetic story {seed}", "abstract": texts["problem"] + " " + texts["method"],
             "problem_framing": texts["problem"], "method_skeleton": texts["method"],
             "innovation_claims": texts["contrib"], "experiments_plan": "Compare against two baselines."}
    per_role = scores if isinstance(scores, Mapping) else {r: float(scores) for r in ROLES}
    return story, {build_story_card(story).key: dict(per_role)}


def _content_seed(*parts: str) -> int:
    return int(hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:15], 16)


def perception_draw(seed: int, role: str, key: str) -> float:
    """The simulated judge's fixed standard-normal perception draw for one card and role."""
    return float(np.random.default_rng(_content_seed(str(seed), role, key)).standard_normal())


def simulate_judgements(
    gap: np.ndarray,
    tau: float,
    rng: np.random.Generator,
    tie_rate: float = 0.3,
    tie_width: float = 0.3,
    tie_mode: str = "calibrated",
    strength_noise: float = 0.3,
) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised judge model: ``(judgement, strength)`` string arrays for perceived gaps ``gap``."""
    if tie_mode not in TIE_MODES:
        raise ValueError(f"tie_mode must be one of {TIE_MODES}, got {tie_mode!r}")
    if not tau > 0:
        raise ValueError(f"the simulated judge needs tau > 0, got {tau}")
    gap = np.asarray(gap, dtype=float)
    p = expit(gap / tau)
    t = tie_rate * np.exp(-((gap / tie_width) ** 2)) if tie_width > 0 else np.zeros_like(gap)
    if tie_mode == "calibrated":
        t = np.minimum(t, 2 * np.minimum(p, 1 - p))
        p_better = p - t / 2
    else:
        p_better = (1 - t) * p
    u = rng.random(gap.shape)
    judgement = np.where(u < p_better, "better", np.where(u < p_better + t, "tie", "worse"))
    z = np.abs(gap) / tau + strength_noise * rng.standard_normal(gap.shape)
    strength = np.where(z < STRENGTH_CUTS[0], "weak", np.where(z < STRENGTH_CUTS[1], "medium", "strong"))
    return judgement, strength


@dataclass(frozen=True)
class SimulatedJudge:
    """The ``reference`` backend's judge (module docstring): ``truth`` (card key -> role -> perceived
    value) and the true ``taus`` per role."""

    truth: Mapping[str, Mapping[str, float]]
    taus: Mapping[str, float] = field(default_factory=lambda: {"Methodology": 0.8, "Novelty": 1.2,
                                                                "Storyteller": 1.0})
    seed: int = 0
    tie_rate: float = 0.3
    tie_width: float = 0.3
    tie_mode: str = "calibrated"
    strength_noise: float = 0.3
    perception_noise: float = 0.0
    name: str = "simulated-judge"

    def with_truth(self, extra: Mapping[str, Mapping[str, float]]) -> SimulatedJudge:
        """A copy that also knows the cards in ``extra`` (e.g. stories)."""
        return replace(self, truth={**self.truth, **extra})

    def value(self, card: Card, role: str) -> float:
        """Perceived value of ``card`` for ``role``; ``KeyError`` for a card without ground truth."""
        if card.key not in self.truth:
            raise KeyError(f"the simulated judge has no ground truth for the card starting "
                           f"{card.problem[:40]!r}; add it with with_truth()")
        offset = 0.0
        if self.perception_noise > 0:
            offset = self.perception_noise * perception_draw(self.seed, role, card.key)
        return float(self.truth[card.key][role]) + offset

    def compare(self, role: str, story: Card, anchors: Sequence[Card]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(judgement, strength, gap)`` of the story against each anchor."""
        gap = self.value(story, role) - np.array([self.value(a, role) for a in anchors])
        rng = np.random.default_rng(_content_seed(str(self.seed), role, story.key, *(a.key for a in anchors)))
        judgement, strength = simulate_judgements(gap, self.taus[role], rng, self.tie_rate, self.tie_width,
                                                  self.tie_mode, self.strength_noise)
        return judgement, strength, gap

    def reply(self, role: str, story: Card, anchors: Sequence[Card]) -> dict[str, Any]:
        """A reply in the judge's JSON schema; each rationale states the simulated perceived gap."""
        judgement, strength, gap = self.compare(role, story, anchors)
        return {"rubric_version": RUBRIC_VERSION, "comparisons": [
            {"anchor_id": f"A{i + 1}", "judgement": str(j), "strength": str(s),
             "rationale": f"simulated judge: perceived gap {g:+.2f}"}
            for i, (j, s, g) in enumerate(zip(judgement, strength, gap))]}

    def pair_reply(self, role: str, card_x: Card, card_y: Card) -> dict[str, Any]:
        """A pairwise reply (X against Y) in the tau-fitting schema."""
        judgement, strength, gap = self.compare(role, card_x, [card_y])
        return {"rubric_version": RUBRIC_VERSION, "judgement": str(judgement[0]), "strength": str(strength[0]),
                "rationale": f"simulated judge: perceived gap {gap[0]:+.2f}"}


def perceived_values(
    pool: SyntheticPool,
    role: str,
    source: str = "score10",
    perception_noise: float = 0.0,
    seed: int = 0,
) -> dict[str, float]:
    """Paper id -> the value at which ``SimulatedJudge(pool.truth(source), seed=seed,
    perception_noise=perception_noise)`` perceives it for ``role`` (the same numbers, no judge built)."""
    if source not in PERCEPTION_SOURCES:
        raise ValueError(f"source must be one of {PERCEPTION_SOURCES}, got {source!r}")
    if perception_noise < 0:
        raise ValueError(f"perception_noise must be >= 0, got {perception_noise}")
    keys = pool.card_keys
    out = {}
    for p in pool.papers:
        value = float(p[source])
        if perception_noise > 0:
            value = value + perception_noise * perception_draw(seed, role, keys[p["paper_id"]])
        out[str(p["paper_id"])] = value
    return out


def simulate_pairs(
    pairs: pd.DataFrame,
    tau: float,
    seed: int = 0,
    perceived: Mapping[str, float] | None = None,
    **judge_model: Any,
) -> pd.DataFrame:
    """``pairs`` with the simulated ``judgement`` and ``strength`` (one vectorised draw) on the gap
    ``delta``, or ``perceived[a] - perceived[b]`` (paper id -> value, :func:`perceived_values`) while
    ``delta`` stays what the fitter sees; ``judge_model``: as in :func:`simulate_judgements`."""
    if perceived is None:
        gap = pairs["delta"].to_numpy(dtype=float)
    else:
        lookup = pd.Series(perceived, dtype=float)
        a, b = (lookup.reindex(pairs[col].to_numpy()).to_numpy() for col in ("a", "b"))
        missing = np.isnan(a) | np.isnan(b)
        if missing.any():
            i = int(np.flatnonzero(missing)[0])
            raise KeyError(f"pair {i}: no perceived value for paper {pairs['a'].iloc[i]!r} or {pairs['b'].iloc[i]!r}")
        gap = a - b
    judgement, strength = simulate_judgements(gap, tau, np.random.default_rng(seed), **judge_model)
    return pairs.assign(judgement=judgement, strength=strength)
