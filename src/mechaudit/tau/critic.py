"""``MultiAgentCritic``: blind comparisons per role -> deterministic scores -> pass rule -> coach.

Score Layer: program-chosen anchors (the pattern's quantiles plus exemplars, or
``context["anchors"]``) are compared with the story card once per role and
:func:`mechaudit.tau.infer_score` gives a 1-10 score per role. When a role looks unstable
(:func:`densify_reasons`) and densify is on, anchors near the first round's mean score
(:func:`mechaudit.tau.anchors.select_bucket_anchors`) are added and every role is judged again.

Coach Layer (:class:`CoachReviewer`): after the scores are fixed, a separate call sees the story, the
roles weakest first and the rationales, never a number, and returns field-level edits. Offline there
is no coach (:func:`coach_unavailable`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from mechaudit.errors import MechauditError
from mechaudit.llm import LLMRequest
from mechaudit.tau.anchors import (
    BUCKET_COUNT,
    BUCKET_SIZE,
    DENSIFY_MODES,
    MAX_TOTAL,
    anchor_papers,
    anchor_table,
    bucket_centre,
    pass_thresholds,
    passes,
    select_bucket_anchors,
    select_initial_anchors,
)
from mechaudit.tau.cards import CARD_VERSION, Card, build_paper_card, build_story_card
from mechaudit.tau.inference import infer_score
from mechaudit.tau.judge import BlindJudge
from mechaudit.tau.rubric import ROLES, RUBRIC_VERSION
from mechaudit.tau.taufile import TauConfig

LOSS_THRESHOLD = 0.05
MIN_AVG_STRENGTH = 0.35
COACH_FIELDS = ("title", "abstract", "problem_framing", "method_skeleton", "innovation_claims", "experiments_plan")


def densify_reasons(diag: Mapping[str, Any], loss_threshold: float = LOSS_THRESHOLD,
                    min_avg_strength: float = MIN_AVG_STRENGTH) -> list[str]:
    """The densify triggers ("loss", "monotonic", "strength") one role's diagnostics fire. Average
    strength is at least 1, so the original 0.35 never fires; the loss trigger fires almost always."""
    reasons = []
    if diag["loss"] > loss_threshold:
        reasons.append("loss")
    if diag["monotonic_violations"] >= 1:
        reasons.append("monotonic")
    if diag["avg_strength"] < min_avg_strength:
        reasons.append("strength")
    return reasons


def coach_unavailable(backend: str) -> dict[str, Any]:
    """The explicit offline coach payload: no generated text, only the reason."""
    return {"available": False, "backend": backend,
            "reason": "the coach layer needs an LLM; it is unavailable with the offline reference backend",
            "field_feedback": {}, "suggested_edits": [], "priority": []}


class FieldFeedback(BaseModel):
    model_config = ConfigDict(extra="forbid")
    issue: str
    edit_instruction: str
    expected_effect: str


class SuggestedEdit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field: Literal[COACH_FIELDS]  # type: ignore[valid-type]
    action: Literal["rewrite", "add", "delete", "expand"]
    content: str


class CoachReply(BaseModel):
    """The coach's JSON: field-level feedback, concrete edits and a priority order of fields."""

    model_config = ConfigDict(extra="forbid")
    field_feedback: dict[Literal[COACH_FIELDS], FieldFeedback]  # type: ignore[valid-type]
    suggested_edits: list[SuggestedEdit]
    priority: list[Literal[COACH_FIELDS]]  # type: ignore[valid-type]


@dataclass
class CoachReviewer:
    """The Coach Layer over the LLM layer (``client`` from :func:`mechaudit.llm.get_client`)."""

    client: Any
    model: str = "claude-sonnet-4-6"
    temperature: float = 0.2
    max_tokens: int = 2048
    json_retries: int = 2

    def prompt(
        self, story: Mapping[str, Any], weakest_first: Sequence[str], rationales: Mapping[str, list[str]]
    ) -> tuple[str, str]:
        """``(system, user)``: the story's fields, roles weakest first and rationales; no numbers."""
        system = ("You are a writing coach for research ideas. Given the idea's fields, the review roles "
                  "ordered from weakest to strongest, and reviewers' short remarks, return one JSON object "
                  "with keys field_feedback (per field: issue, edit_instruction, expected_effect), "
                  "suggested_edits (field, action rewrite|add|delete|expand, content) and priority "
                  f"(fields, most urgent first). Allowed fields: {', '.join(COACH_FIELDS)}.")
        lines = [f"{name}: {story.get(name, '')}" for name in COACH_FIELDS]
        lines.append("Roles, weakest first: " + ", ".join(weakest_first))
        for role in weakest_first:
            lines.append(f"{role} remarks: " + " | ".join(rationales.get(role, [])))
        return system, "\n".join(lines)

    def review(
        self, story: Mapping[str, Any], weakest_first: Sequence[str], rationales: Mapping[str, list[str]]
    ) -> dict[str, Any]:
        system, user = self.prompt(story, weakest_first, rationales)
        request = LLMRequest(model=self.model, system=system, messages=[{"role": "user", "content": user}],
                             temperature=self.temperature, max_tokens=self.max_tokens, version="coach-v1")
        result = self.client.complete_json(request, CoachReply, json_retries=self.json_retries, strict=False)
        if result.invalid:
            return {**coach_unavailable(self.client.backend), "reason": f"invalid coach reply: {result.error}"}
        return {"available": True, "backend": self.client.backend, "model": self.model, **result.value.model_dump()}


@dataclass
class MultiAgentCritic:
    """Blind, tau-calibrated review of a story against anchor papers.

    ``papers``: the anchor pool (:func:`mechaudit.tau.anchors.anchor_papers`); ``exemplars``: pattern
    -> paper ids; ``taus``: role -> tau, or a :class:`mechaudit.tau.taufile.TauConfig` (default: 1.0
    for every role); ``densify_mode``: see :func:`mechaudit.tau.anchors.select_bucket_anchors`.
    Selections, initial anchors and pass thresholds are cached per critic.
    """

    papers: Sequence[Mapping[str, Any]]
    judge: BlindJudge
    exemplars: Mapping[str, Sequence[str]] = field(default_factory=dict)
    taus: Mapping[str, float] | TauConfig = field(default_factory=TauConfig)
    coach: CoachReviewer | None = None
    roles: Sequence[str] = ROLES
    densify: bool = True
    loss_threshold: float = LOSS_THRESHOLD
    min_avg_strength: float = MIN_AVG_STRENGTH
    grid_step: float = 0.01
    max_total: int = MAX_TOTAL
    bucket_size: float = BUCKET_SIZE
    bucket_count: int = BUCKET_COUNT
    densify_mode: str = "original"

    def __post_init__(self) -> None:
        if self.densify_mode not in DENSIFY_MODES:
            raise MechauditError(f"must be one of {DENSIFY_MODES}, got {self.densify_mode!r}", field="densify_mode")
        self._bucket_cache: dict[tuple[Any, ...], list[str]] = {}
        self._cards: dict[str, Card] = {}
        self._thresholds: dict[Any, dict[str, Any]] = {}
        self._initial: dict[Any, list[str]] = {}
        usable = anchor_papers(self.papers)
        self._by_id = {p["paper_id"]: p for p in usable}
        self._table = anchor_table(usable)
        if isinstance(self.taus, TauConfig):
            config = self.taus
        else:
            missing = [r for r in self.roles if r not in self.taus]
            if missing:
                raise MechauditError(f"no tau for roles {missing}; pass a TauConfig to use a default", field="taus")
            config = TauConfig(taus=self.taus)
        self._taus = config.resolve(self.roles, self.judge.judge_model)

    @property
    def tau_sources(self) -> dict[str, tuple[float, str]]:
        """Role -> (tau, where it came from: "given", "file:<name>", a config label or "default")."""
        return dict(self._taus)

    def _round(self, story_card, anchor_ids: list[str]) -> dict[str, dict[str, Any]]:
        anchors = [{"anchor_id": f"A{i + 1}", "paper_id": pid, "score10": self._by_id[pid]["score10"],
                    "weight": self._by_id[pid]["weight"]} for i, pid in enumerate(anchor_ids)]
        for pid in anchor_ids:
            if pid not in self._cards:
                self._cards[pid] = build_paper_card(self._by_id[pid])
        cards = [self._cards[pid] for pid in anchor_ids]
        outcomes = self.judge.judge_roles(list(self.roles), story_card, cards)
        details = {}
        for outcome in outcomes:
            tau, source = self._taus[outcome.role]
            score, diag = infer_score(anchors, outcome.comparisons, tau, self.grid_step)
            details[outcome.role] = {"score": score, **diag, "tau_source": source,
                                     "comparisons": outcome.comparisons, "invalid": outcome.invalid,
                                     "error": outcome.error, "attempts": outcome.attempts}
        return details

    def _densify(self, story_card: Card, anchor_ids: list[str],
                 pattern_id: Any) -> tuple[list[str], dict[str, dict[str, Any]], dict[str, Any]]:
        """``(final anchor ids, final round, densify info)``, after a second round if one is due."""
        details = self._round(story_card, anchor_ids)
        reasons = {r: densify_reasons(d, self.loss_threshold, self.min_avg_strength) for r, d in details.items()}
        info: dict[str, Any] = {"enabled": self.densify, "reasons": reasons, "triggered": False,
                                "extra_anchor_ids": []}
        if not (self.densify and any(reasons.values())):
            return anchor_ids, details, info
        hint = float(np.mean([d["score"] for d in details.values()]))
        room = max(self.max_total - len(anchor_ids), 0)
        extra = select_bucket_anchors(self._table, hint, anchor_ids, pattern_id, self.bucket_size,
                                      min(self.bucket_count, room), self.densify_mode, self._bucket_cache)
        extra_ids = list(extra["paper_id"])
        info |= {"triggered": True, "mode": self.densify_mode, "score_hint": hint,
                 "bucket_centre": bucket_centre(hint), "extra_anchor_ids": extra_ids}
        if extra_ids:
            anchor_ids = anchor_ids + extra_ids
            details = self._round(story_card, anchor_ids)
        return anchor_ids, details, info

    def review(self, story: Mapping[str, Any], context: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Review ``story``; ``context`` may hold ``pattern_id`` and/or ``anchors`` (paper ids)."""
        context = dict(context or {})
        pattern_id = context.get("pattern_id")
        if context.get("anchors"):
            anchor_ids = [str(a) for a in context["anchors"]]
            unknown = [a for a in anchor_ids if a not in self._by_id]
            if unknown:
                raise MechauditError(f"context anchors not in the pool: {unknown}", field="anchors")
        elif pattern_id is not None:
            if pattern_id not in self._initial:  # the same for every story of the pattern
                chosen = select_initial_anchors(self._table, pattern_id, self.exemplars.get(pattern_id, ()))
                self._initial[pattern_id] = list(chosen["paper_id"])
            anchor_ids = list(self._initial[pattern_id])
        else:
            raise MechauditError("review needs context['pattern_id'] or context['anchors']")
        story_card = build_story_card(story)
        anchor_ids, details, densify_info = self._densify(story_card, anchor_ids, pattern_id)
        scores = [details[r]["score"] for r in self.roles]
        if pattern_id not in self._thresholds:
            self._thresholds[pattern_id] = pass_thresholds(self._table, pattern_id)
        thresholds = dict(self._thresholds[pattern_id])
        weakest_first = sorted(self.roles, key=lambda r: details[r]["score"])
        rationales = {r: [c["rationale"] for c in details[r]["comparisons"]] for r in self.roles}
        coach = (coach_unavailable(self.judge.backend) if self.coach is None
                 else self.coach.review(story, weakest_first, rationales))
        reviews = [{"reviewer": f"{r} reviewer", "role": r, "score": details[r]["score"],
                    "feedback": _feedback(details[r])} for r in self.roles]
        weakest = weakest_first[0]
        return {
            "pass": passes(scores, thresholds),
            "avg_score": float(np.mean(scores)),
            "reviews": reviews,
            "main_issue": f"{weakest} is the weakest role ({details[weakest]['score']:.2f} on 1-10)",
            "suggestions": [e["content"] for e in coach["suggested_edits"]],
            "audit": {
                "backend": self.judge.backend, "judge_model": self.judge.judge_model,
                "rubric_version": RUBRIC_VERSION, "card_version": CARD_VERSION,
                "anchors": [{"paper_id": pid, "score10": self._by_id[pid]["score10"],
                             "weight": self._by_id[pid]["weight"]} for pid in anchor_ids],
                "role_details": details, "densify": densify_info, "pass_thresholds": thresholds,
            },
            "field_feedback": coach["field_feedback"],
            "suggested_edits": coach["suggested_edits"],
            "priority": coach["priority"],
            "review_coach": coach,
        }


def _feedback(detail: Mapping[str, Any]) -> str:
    """Deterministic summary of one role's comparisons (counts plus the judge's rationales)."""
    counts = Counter(c["judgement"] for c in detail["comparisons"])
    head = (f"Against {detail['n_anchors']} anchors: {counts.get('better', 0)} better, "
            f"{counts.get('tie', 0)} tie, {counts.get('worse', 0)} worse.")
    rationales = "; ".join(c["rationale"] for c in detail["comparisons"])
    return f"{head} Rationales: {rationales}" if rationales else head
