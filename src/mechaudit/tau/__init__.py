"""Blind, tau-calibrated scoring (the MultiAgentReview method of Idea2Paper).

A judge only says better / tie / worse (with a strength) against anonymised anchor cards; a
logistic model with an offline-calibrated scale tau turns that into a 1-10 score. Modules:
``inference``, ``fitting``, ``taufile``, ``anchors``, ``cards``, ``rubric``, ``judge``, ``critic``,
``simulate``, ``studies`` (chapter 08's experiments) and ``realjudge`` (tau from an LLM judge).
"""

from mechaudit.tau.anchors import (
    anchor_papers,
    anchor_table,
    pass_thresholds,
    passes,
    review_stats_from_ratings,
    score10_from_review_stats,
    select_bucket_anchors,
    select_initial_anchors,
)
from mechaudit.tau.cards import CARD_VERSION, FIELD_CAPS, FORBIDDEN_TERMS, Card, build_paper_card, build_story_card
from mechaudit.tau.critic import CoachReviewer, MultiAgentCritic, coach_unavailable, densify_reasons
from mechaudit.tau.fitting import TauFit, fit_tau, fit_tau_detailed, pair_nll, sample_pairs, tau_grid
from mechaudit.tau.inference import infer_score, score_grid
from mechaudit.tau.judge import (
    BlindJudge,
    JudgeReply,
    PairReply,
    build_pair_prompt,
    build_prompt,
    judge_sampled_pairs,
    judge_schema,
)
from mechaudit.tau.realjudge import LLMCalibration, llm_tau_calibration
from mechaudit.tau.rubric import ROLES, RUBRIC_VERSION, get_rubric
from mechaudit.tau.simulate import (
    PERCEPTION_SOURCES,
    SimulatedJudge,
    SyntheticPool,
    make_pool,
    make_story,
    perceived_values,
    simulate_judgements,
    simulate_pairs,
)
from mechaudit.tau.taufile import TauConfig, TauFileMismatchError, load_tau_file, write_tau_file

__all__ = [
    "CARD_VERSION", "FIELD_CAPS", "FORBIDDEN_TERMS", "PERCEPTION_SOURCES", "ROLES", "RUBRIC_VERSION",
    "BlindJudge", "Card", "CoachReviewer", "JudgeReply", "LLMCalibration", "MultiAgentCritic", "PairReply",
    "SimulatedJudge",
    "SyntheticPool", "TauConfig", "TauFit", "TauFileMismatchError",
    "anchor_papers", "anchor_table", "build_pair_prompt", "build_paper_card", "build_prompt", "build_story_card",
    "coach_unavailable", "densify_reasons", "fit_tau", "fit_tau_detailed", "get_rubric", "infer_score",
    "judge_sampled_pairs", "judge_schema", "llm_tau_calibration", "load_tau_file", "make_pool", "make_story",
    "pair_nll", "pass_thresholds", "passes", "perceived_values",
    "review_stats_from_ratings", "sample_pairs", "score10_from_review_stats", "score_grid",
    "select_bucket_anchors", "select_initial_anchors", "simulate_judgements", "simulate_pairs", "tau_grid",
    "write_tau_file",
]
