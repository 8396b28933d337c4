"""The critic's output (:mod:`mechaudit.tau.critic`): its exact keys, the per-role feedback text, the densify
thresholds it passes on, the coach's prompt and its refusal of an invalid reply; and the tau file's
text and configuration checks (:mod:`mechaudit.tau.taufile`)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from mechaudit.errors import MechauditError
from mechaudit.tau import (
    CARD_VERSION,
    ROLES,
    RUBRIC_VERSION,
    BlindJudge,
    CoachReviewer,
    MultiAgentCritic,
    SimulatedJudge,
    TauConfig,
    coach_unavailable,
    densify_reasons,
    make_pool,
    make_story,
    write_tau_file,
)
from mechaudit.tau.critic import _feedback


@pytest.fixture(scope="module")
def pool():
    return make_pool(n_patterns=2, papers_per_pattern=12, seed=1)


def _critic(pool, story_score=6.0, **kwargs):
    story, truth = make_story(story_score, seed=3)
    judge = SimulatedJudge(pool.truth()).with_truth(truth)
    return story, MultiAgentCritic(pool.papers, BlindJudge(simulator=judge), pool.exemplars, taus=judge.taus, **kwargs)


def test_review_keys_rows_and_audit(pool):
    story, critic = _critic(pool)
    out = critic.review(story, {"pattern_id": "pattern_01"})
    assert [sorted(r) for r in out["reviews"]] == [["feedback", "reviewer", "role", "score"]] * 3
    assert [r["reviewer"] for r in out["reviews"]] == [f"{r} reviewer" for r in ROLES]
    audit = out["audit"]
    assert list(audit) == ["backend", "judge_model", "rubric_version", "card_version", "anchors", "role_details",
                           "densify", "pass_thresholds"]
    assert (audit["rubric_version"], audit["card_version"]) == (RUBRIC_VERSION, CARD_VERSION)
    assert audit["pass_thresholds"] == critic._thresholds["pattern_01"]
    for role, d in audit["role_details"].items():
        assert (d["invalid"], d["error"], d["attempts"], d["tau_source"]) == (False, None, 1, "given")
        assert next(r["feedback"] for r in out["reviews"] if r["role"] == role) == _feedback(d)


def test_densify_passes_the_critics_own_thresholds(pool):
    story, critic = _critic(pool, loss_threshold=1e9, min_avg_strength=0.0, densify=False)
    audit = critic.review(story, {"pattern_id": "pattern_01"})["audit"]
    info, details = audit["densify"], audit["role_details"]  # without densify: the round the reasons come from
    assert info["reasons"] == {r: densify_reasons(d, 1e9, 0.0) for r, d in details.items()}
    assert not any("loss" in r or "strength" in r for r in info["reasons"].values())
    _, strict = _critic(pool, loss_threshold=1e9, min_avg_strength=1e9)
    assert all("strength" in r for r in strict.review(story, {"pattern_id": "pattern_01"})["audit"]["densify"][
        "reasons"].values())


def test_unknown_context_anchors_are_named_with_their_field(pool):
    story, critic = _critic(pool)
    with pytest.raises(MechauditError) as err:
        critic.review(story, {"anchors": [pool.papers[0]["paper_id"], "P9999"]})
    assert err.value.field == "anchors" and err.value.message == "context anchors not in the pool: ['P9999']"


def test_feedback_counts_each_verdict_and_quotes_the_rationales():
    comparisons = [{"judgement": "worse", "rationale": "thin method"}, {"judgement": "tie", "rationale": "similar"},
                   {"judgement": "worse", "rationale": "vague claim"}]
    assert _feedback({"n_anchors": 3, "comparisons": comparisons}) == (
        "Against 3 anchors: 0 better, 1 tie, 2 worse. Rationales: thin method; similar; vague claim")
    assert _feedback({"n_anchors": 0, "comparisons": []}) == "Against 0 anchors: 0 better, 0 tie, 0 worse."


def test_coach_prompt_word_for_word():
    coach = CoachReviewer(client=None)
    system, user = coach.prompt({"title": "T", "abstract": "A", "innovation_claims": "C"}, ["Novelty", "Storyteller"],
                                {"Novelty": ["too close to prior work", "routine"], "Methodology": ["never shown"]})
    assert system == (
        "You are a writing coach for research ideas. Given the idea's fields, the review roles ordered from weakest "
        "to strongest, and reviewers' short remarks, return one JSON object with keys field_feedback (per field: "
        "issue, edit_instruction, expected_effect), suggested_edits (field, action rewrite|add|delete|expand, "
        "content) and priority (fields, most urgent first). Allowed fields: title, abstract, problem_framing, "
        "method_skeleton, innovation_claims, experiments_plan.")
    assert user.splitlines() == [
        "title: T", "abstract: A", "problem_framing: ", "method_skeleton: ", "innovation_claims: C",
        "experiments_plan: ", "Roles, weakest first: Novelty, Storyteller",
        "Novelty remarks: too close to prior work | routine", "Storyteller remarks: "]


def test_an_invalid_coach_reply_is_the_unavailable_payload_with_its_reason():
    client = SimpleNamespace(backend="anthropic", complete_json=lambda *a, **k: SimpleNamespace(
        invalid=True, error="no JSON object", value=None))
    out = CoachReviewer(client=client).review({"title": "T"}, ["Novelty"], {})
    assert out == {**coach_unavailable("anthropic"), "reason": "invalid coach reply: no JSON object"}


def test_tau_file_text_is_sorted_json_and_keeps_pairs_per_role(tmp_path):
    path = tmp_path / "tau.json"
    content = write_tau_file(path, {"Novelty": 1.25}, "m", pairs_used={"Novelty": 40}, created_at="2026-01-01")
    assert content["pairs_used"] == {"Novelty": 40}
    assert path.read_text(encoding="utf-8") == json.dumps(content, indent=2, sort_keys=True) + "\n"
    assert list(json.loads(path.read_text(encoding="utf-8"))) == sorted(content)


def test_resolve_checks_the_file_against_the_given_card_version(tmp_path):
    path = tmp_path / "tau.json"
    write_tau_file(path, {"Novelty": 1.25}, "m", pairs_used=40, card_version="cards_v9", rubric_version="rubric_v9")
    got = TauConfig(path=path).resolve(["Novelty"], "m", rubric_version="rubric_v9", card_version="cards_v9")
    assert got == {"Novelty": (1.25, "file:tau.json")}
