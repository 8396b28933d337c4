"""Blind, tau-calibrated scoring (the MultiAgentReview method of Idea2Paper).

A judge only says better / tie / worse (with a strength) against anonymised anchor cards; a
logistic model with an offline-calibrated scale tau turns that into a 1-10 score. Modules:
``inference``, ``fitting``, ``taufile``, ``anchors``, ``cards``, ``rubric``, ``judge``, ``critic``,
``simulate``, ``studies`` (chapter 08's experiments) and ``realjudge`` (tau from an LLM judge). The names
below are imported on first use, so importing one module does not load the others (SciPy, pandas).
"""

from __future__ import annotations

import lazy_loader

#: home module -> its public names, imported on first use (SPEC 1's lazy_loader)
__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs=dict((
    ("anchors", ("anchor_papers", "anchor_table", "pass_thresholds", "passes", "review_stats_from_ratings",
                 "score10_from_review_stats", "select_bucket_anchors", "select_initial_anchors")),
    ("cards", ("CARD_VERSION", "FIELD_CAPS", "FORBIDDEN_TERMS", "Card", "build_paper_card", "build_story_card")),
    ("critic", ("CoachReviewer", "MultiAgentCritic", "coach_unavailable", "densify_reasons")),
    ("fitting", ("TauFit", "fit_tau", "fit_tau_detailed", "pair_nll", "sample_pairs", "tau_grid")),
    ("inference", ("infer_score", "score_grid")),
    ("judge", ("BlindJudge", "JudgeReply", "PairReply", "build_pair_prompt", "build_prompt", "judge_sampled_pairs",
               "judge_schema")),
    ("realjudge", ("LLMCalibration", "llm_tau_calibration")),
    ("rubric", ("ROLES", "RUBRIC_VERSION", "get_rubric")),
    ("simulate", ("PERCEPTION_SOURCES", "SimulatedJudge", "SyntheticPool", "make_pool", "make_story",
                  "perceived_values", "simulate_judgements", "simulate_pairs")),
    ("taufile", ("TauConfig", "TauFileMismatchError", "load_tau_file", "write_tau_file")),
)))
