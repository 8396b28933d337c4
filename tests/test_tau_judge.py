"""Blind cards, prompts, the judge schema (also through a faked Anthropic HTTP API), tau files,
tau resolution, anchors and the critic's output."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from fake_anthropic import FakeAnthropic, client_for, replies_in_order
from pydantic import ValidationError

from mechaudit.backends import Backend
from mechaudit.llm import BlindnessError, InvalidJSONError, check_blind
from mechaudit.tau import (
    CARD_VERSION,
    FIELD_CAPS,
    FORBIDDEN_TERMS,
    ROLES,
    RUBRIC_VERSION,
    BlindJudge,
    CoachReviewer,
    MultiAgentCritic,
    SimulatedJudge,
    TauConfig,
    TauFileMismatchError,
    anchor_papers,
    anchor_table,
    build_paper_card,
    build_prompt,
    build_story_card,
    get_rubric,
    judge_schema,
    load_tau_file,
    make_pool,
    make_story,
    pass_thresholds,
    passes,
    review_stats_from_ratings,
    score10_from_review_stats,
    select_bucket_anchors,
    select_initial_anchors,
    write_tau_file,
)
from mechaudit.tau.critic import densify_reasons
from mechaudit.tau.judge import pair_requests

PRICES = {"batch_discount": 0.5,
          "models": {"claude-opus-4-6": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_read": 0.5}}}


@pytest.fixture(scope="module")
def pool():
    return make_pool(seed=0)


def substring_hits(text):
    low = text.lower()
    return [t for t in FORBIDDEN_TERMS if t in low]


# ---------------------------------------------------------------- cards and prompts


def test_cards_cap_fields_and_drop_identifiers():
    paper = {"paper_id": "P1", "title": "Secret", "pattern_id": "x", "score10": 9.1,
             "problem": "word " * 100, "method": "line one\nline two", "contrib": "c"}
    card = build_paper_card(paper)
    assert len(card.problem) == FIELD_CAPS["problem"] and card.problem.endswith("\u2026")
    assert card.method == "line one line two" and card.card_version == CARD_VERSION
    text = card.render()
    assert "Secret" not in text and "P1" not in text and "9.1" not in text


def test_cards_mask_forbidden_terms():
    card = build_story_card({"problem_framing": "A better Score, see arXiv and DOI link",
                             "method_skeleton": "m", "innovation_claims": "the author's title"})
    check_blind(card.render(), FORBIDDEN_TERMS)
    assert "[masked]" in card.problem


def test_rubrics_avoid_forbidden_terms_even_as_substrings():
    for role in ROLES:
        assert substring_hits(get_rubric(role)) == []
    with pytest.raises(ValueError, match="unknown role"):
        get_rubric("Judge")


def test_no_prompt_over_the_pool_contains_a_forbidden_term(pool):
    table = pool.table()
    by_id = pool.by_id()
    leaky_raw = sum(bool(substring_hits(p["method"])) for p in pool.papers)
    assert leaky_raw > 0  # the pool does try to leak; the cards must stop it
    n_prompts = 0
    for k, pattern in enumerate(sorted(pool.exemplars)):
        story, _ = make_story(6.0, seed=k)
        anchors = select_initial_anchors(table, pattern, pool.exemplars[pattern])
        cards = [build_paper_card(by_id[pid]) for pid in anchors["paper_id"]]
        for role in ROLES:
            system, user = build_prompt(role, build_story_card(story), cards)
            for text in (system, user):
                check_blind(text, FORBIDDEN_TERMS)
                for term in FORBIDDEN_TERMS:  # stricter than whole words for the template parts
                    assert not re.search(rf"(?<![\w\[]){term}(?!\w)", text, re.IGNORECASE)
            assert "P0" not in user and "pattern_" not in user and "Synthetic study" not in user
            n_prompts += 1
    assert n_prompts == 3 * len(pool.exemplars)
    # every paper card of the pool is blind
    for p in pool.papers:
        check_blind(build_paper_card(p).render(), FORBIDDEN_TERMS)


def test_prompt_guard_refuses_a_leaking_card():
    from mechaudit.tau.cards import Card

    leaky = Card(problem="its score is high", method="m", contrib="c")  # bypasses the builder's mask
    with pytest.raises(BlindnessError):
        build_prompt("Novelty", leaky, [leaky])


# ---------------------------------------------------------------- schema


def reply(n, **override):
    comps = [{"anchor_id": f"A{i + 1}", "judgement": "better", "strength": "weak", "rationale": "clearer method"}
             for i in range(n)]
    return {"rubric_version": RUBRIC_VERSION, "comparisons": comps, **override}


def test_schema_accepts_complete_reply_and_rejects_bad_ones():
    schema = judge_schema(3)
    assert len(schema.model_validate(reply(3)).comparisons) == 3
    bad = [
        reply(2),  # missing A3
        reply(3, rubric_version="rubric_v0"),
        {**reply(3), "extra": 1},
    ]
    r = reply(3)
    r["comparisons"][0]["rationale"] = "its score is clearly higher"
    bad.append(r)
    r = reply(3)
    r["comparisons"][1]["rationale"] = "word " * 26
    bad.append(r)
    r = reply(3)
    r["comparisons"][2]["judgement"] = "much better"
    bad.append(r)
    for b in bad:
        with pytest.raises(ValidationError):
            schema.model_validate(b)


# ---------------------------------------------------------------- the judge through a fake HTTP API


def judge_usage(body: dict, text: str) -> dict[str, int]:
    return {"input_tokens": 50, "output_tokens": 20}


def fake_messages(replies: list[str]) -> FakeAnthropic:
    """The fake API answering ``replies`` in order, then the last one repeats."""
    return FakeAnthropic(replies_in_order(replies), usage=judge_usage)


def anthropic_judge(fake, tmp_path, strict=True):
    client = client_for(fake, tmp_path, max_concurrency=1, prices=PRICES)
    return BlindJudge(client=client, strict=strict)


def _cards(pool, n):
    return [build_paper_card(p) for p in pool.papers[:n]]


def test_blind_judge_via_fake_http(pool, tmp_path, api_key):
    fake = fake_messages([json.dumps(reply(4))])
    judge = anthropic_judge(fake, tmp_path)
    story = build_story_card(make_story(5.0)[0])
    out = judge.judge("Methodology", story, _cards(pool, 4))
    assert not out.invalid and [c["anchor_id"] for c in out.comparisons] == ["A1", "A2", "A3", "A4"]
    body = fake.message_bodies[0]
    assert body["model"] == "claude-opus-4-6" and body["temperature"] == 0.0
    sent = json.dumps(body)
    check_blind(sent.replace(RUBRIC_VERSION, ""), FORBIDDEN_TERMS)
    assert api_key not in sent


def test_blind_judge_takes_exactly_one_of_a_client_and_a_simulator(pool, tmp_path, api_key):
    client = client_for(fake_messages(["{}"]), tmp_path)
    simulator = SimulatedJudge(pool.truth())
    for kwargs in ({}, {"client": client, "simulator": simulator}):
        with pytest.raises(ValueError, match="^BlindJudge needs exactly one of client"):
            BlindJudge(**kwargs)
    llm, offline = BlindJudge(client=client, model="claude-model-a"), BlindJudge(simulator=simulator)
    assert (llm.backend, llm.judge_model) == (Backend.ANTHROPIC, "claude-model-a")
    assert (offline.backend, offline.judge_model) == (Backend.REFERENCE, simulator.name)


def test_pair_requests_need_no_judge_and_match_the_judges(pool, tmp_path, api_key):
    cards = _cards(pool, 3)
    pairs = [(cards[0], cards[1]), (cards[2], cards[0])]
    judge = BlindJudge(client=client_for(fake_messages(["{}"]), tmp_path), model="claude-model-a", max_tokens=99)
    built = pair_requests("Novelty", pairs, "claude-model-a", max_tokens=99)
    assert [r.key for r in built] == [r.key for r in judge.pair_requests("Novelty", pairs)]
    assert [r.key for r in pair_requests("Novelty", pairs, "claude-model-a")] != [r.key for r in built]
    assert built[0].version == f"{RUBRIC_VERSION}+{CARD_VERSION}+pair" and built[0].temperature == 0.0


def test_blind_judge_repairs_then_succeeds(pool, tmp_path, api_key):
    leaky = reply(3)
    leaky["comparisons"][0]["rationale"] = "higher score than the reference"
    fake = fake_messages(["not json at all", json.dumps(leaky), json.dumps(reply(3))])
    out = anthropic_judge(fake, tmp_path).judge("Novelty", build_story_card(make_story(5.0)[0]), _cards(pool, 3))
    assert out.attempts == 3 and not out.invalid and len(fake.message_bodies) == 3
    assert "forbidden term 'score'" in fake.message_bodies[2]["messages"][-1]["content"]  # repair quotes the error


def test_blind_judge_strict_and_lenient(pool, tmp_path, api_key):
    story, cards = build_story_card(make_story(5.0)[0]), _cards(pool, 3)
    with pytest.raises(InvalidJSONError):
        anthropic_judge(fake_messages(["{}"]), tmp_path / "a").judge("Storyteller", story, cards)
    fake = fake_messages(["{}"])
    out = anthropic_judge(fake, tmp_path / "b", strict=False).judge("Storyteller", story, cards)
    assert out.invalid and out.comparisons == [] and len(fake.message_bodies) == 3  # 1 call + 2 repairs


def test_critic_with_llm_judge_and_coach_never_changes_scores(pool, tmp_path, api_key):
    def answer(body):
        user = body["messages"][0]["content"]
        if "Roles, weakest first" in user:
            return json.dumps({"field_feedback": {"abstract": {"issue": "vague", "edit_instruction": "be concrete",
                                                               "expected_effect": "clearer"}},
                               "suggested_edits": [{"field": "abstract", "action": "rewrite", "content": "x"}],
                               "priority": ["abstract", "method_skeleton"]})
        n = user.count("REFERENCE A")
        return json.dumps(reply(n))

    fake = FakeAnthropic(answer, usage=judge_usage)
    client = client_for(fake, tmp_path, prices=PRICES)
    judge = BlindJudge(client=client)
    story = make_story(5.0)[0]
    ctx = {"pattern_id": "pattern_01"}
    plain = MultiAgentCritic(pool.papers, judge, pool.exemplars, taus={r: 1.0 for r in ROLES}).review(story, ctx)
    coached = MultiAgentCritic(pool.papers, judge, pool.exemplars, taus={r: 1.0 for r in ROLES},
                               coach=CoachReviewer(client, model="claude-opus-4-6")).review(story, ctx)
    assert [r["score"] for r in plain["reviews"]] == [r["score"] for r in coached["reviews"]]
    assert plain["review_coach"]["available"] is False
    assert coached["priority"] == ["abstract", "method_skeleton"] and coached["suggestions"] == ["x"]
    coach_body = [b for b in fake.message_bodies if "Roles, weakest first" in b["messages"][0]["content"]][0]
    assert not re.search(r"\d\.\d", coach_body["messages"][0]["content"])  # no scores reach the coach
    assert fake.errors == []


# ---------------------------------------------------------------- critic offline


def test_critic_output_shape_and_offline_coach(pool):
    story, truth = make_story({"Methodology": 8.0, "Novelty": 3.0, "Storyteller": 6.0}, seed=9)
    judge = SimulatedJudge(pool.truth()).with_truth(truth)
    critic = MultiAgentCritic(pool.papers, BlindJudge(simulator=judge), pool.exemplars, taus=judge.taus)
    out = critic.review(story, {"pattern_id": "pattern_02"})
    assert set(out) == {"pass", "avg_score", "reviews", "main_issue", "suggestions", "audit", "field_feedback",
                        "suggested_edits", "priority", "review_coach"}
    assert [r["role"] for r in out["reviews"]] == list(ROLES)
    scores = {r["role"]: r["score"] for r in out["reviews"]}
    assert scores["Methodology"] > scores["Storyteller"] > scores["Novelty"]
    assert out["main_issue"].startswith("Novelty")
    assert out["review_coach"] == {**out["review_coach"], "available": False, "backend": "reference"}
    assert out["field_feedback"] == {} and out["suggested_edits"] == [] and out["priority"] == []
    assert out["avg_score"] == pytest.approx(np.mean(list(scores.values())))
    details = out["audit"]["role_details"]["Novelty"]
    for key in ("loss", "avg_strength", "monotonic_violations", "ci_low", "ci_high", "tau", "comparisons"):
        assert key in details
    assert out["audit"]["backend"] == "reference" and out["audit"]["judge_model"] == "simulated-judge"
    # the same call gives the same answer
    assert critic.review(story, {"pattern_id": "pattern_02"}) == out


def test_critic_densifies_as_the_original_and_caches_the_selection(pool):
    story, truth = make_story(9.9, seed=4)
    judge = SimulatedJudge(pool.truth()).with_truth(truth)
    blind = BlindJudge(simulator=judge)
    critic = MultiAgentCritic(pool.papers, blind, pool.exemplars, taus=judge.taus)
    out = critic.review(story, {"pattern_id": "pattern_05"})
    info = out["audit"]["densify"]
    assert info["triggered"] and info["mode"] == "original"
    initial = list(select_initial_anchors(pool.table(), "pattern_05", pool.exemplars["pattern_05"])["paper_id"])
    hint = info["score_hint"]
    assert info["bucket_centre"] == round(2 * hint) / 2
    papers = pool.table().to_dict("records")
    assert info["extra_anchor_ids"] == original_densify_loop(papers, "pattern_05", hint, set(initial))
    assert [a["paper_id"] for a in out["audit"]["anchors"]] == initial + info["extra_anchor_ids"]
    assert list(critic._bucket_cache) == [("pattern_05", info["bucket_centre"], 1.0, 3)]
    # without densify the same story keeps the initial anchors only
    plain = MultiAgentCritic(pool.papers, blind, pool.exemplars, taus=judge.taus, densify=False)
    assert [a["paper_id"] for a in plain.review(story, {"pattern_id": "pattern_05"})["audit"]["anchors"]] == initial
    with pytest.raises(ValueError, match="densify_mode"):
        MultiAgentCritic(pool.papers, blind, pool.exemplars, taus=judge.taus, densify_mode="nearest")


def test_reference_judge_answers_a_repeated_call_from_memory_with_its_own_copy(pool):
    calls = []

    class Counting(SimulatedJudge):
        def reply(self, role, story, anchors):
            calls.append(role)
            return super().reply(role, story, anchors)

    story, truth = make_story(6.0, seed=2)
    blind = BlindJudge(simulator=Counting(pool.truth()).with_truth(truth))
    cards = [build_paper_card(p) for p in pool.papers[:4]]
    first = blind.judge_roles(list(ROLES), build_story_card(story), cards)
    first[0].comparisons[0]["judgement"] = "changed by the caller"
    again = blind.judge_roles(list(ROLES), build_story_card(story), cards)
    assert calls == list(ROLES)  # the second call reached the simulator not at all
    assert again[0].comparisons[0]["judgement"] in {"better", "tie", "worse"}
    assert [o.comparisons for o in again[1:]] == [o.comparisons for o in first[1:]]
    blind.judge_roles(["Novelty"], build_story_card(story), cards[:3])  # other anchors: a new answer
    assert calls == [*ROLES, "Novelty"]


def test_densify_comparison_equals_separate_reviews(pool):
    from mechaudit.tau import studies

    judge = SimulatedJudge(pool.truth(), seed=3)
    runs = studies.densify_comparison(pool, judge, n_stories=6, seed=5, modes=("original", "fill"))
    assert list(runs) == [studies.FIRST_ROUND, "original", "fill"]
    for mode in ("original", "fill"):
        alone = studies.simulated_reviews(pool, judge, n_stories=6, seed=5, densify_mode=mode)[0]
        pd.testing.assert_frame_equal(runs[mode][0], alone)
    first = studies.simulated_reviews(pool, judge, n_stories=6, seed=5, densify=False)[0]
    pd.testing.assert_frame_equal(runs[studies.FIRST_ROUND][0], first)
    assert (runs["fill"][0]["n_extra"] == 3).all() and (runs[studies.FIRST_ROUND][0]["n_extra"] == 0).all()
    hints = runs["original"][0].groupby("story")["score_hint"].first()
    pd.testing.assert_series_equal(hints, studies.first_round_hints(first), check_names=False)


def test_critic_needs_context(pool):
    judge = SimulatedJudge(pool.truth())
    critic = MultiAgentCritic(pool.papers, BlindJudge(simulator=judge), pool.exemplars, taus=judge.taus)
    with pytest.raises(ValueError, match="pattern_id"):
        critic.review({}, {})
    with pytest.raises(ValueError, match="not in the pool"):
        critic.review({}, {"anchors": ["nope"]})


def test_densify_triggers():
    base = {"loss": 0.01, "monotonic_violations": 0, "avg_strength": 1.0}
    assert densify_reasons(base) == []
    assert densify_reasons({**base, "loss": 0.5}) == ["loss"]
    assert densify_reasons({**base, "monotonic_violations": 2}) == ["monotonic"]
    assert densify_reasons({**base, "avg_strength": 0.2}) == ["strength"]


# ---------------------------------------------------------------- anchors


def test_score10_and_weight():
    stats = review_stats_from_ratings([8, 6, 6])
    assert stats["avg_score"] == pytest.approx((0.85 + 0.6 + 0.6) / 3)
    score10, weight = score10_from_review_stats(stats)
    assert score10 == pytest.approx(1 + 9 * stats["avg_score"])
    assert weight == pytest.approx(np.log(4) / (1 + 9 * 0.25))
    assert score10_from_review_stats({"avg_score": 1.0, "review_count": 1}) == (10.0, pytest.approx(np.log(2)))
    with pytest.raises(ValueError, match="avg_score"):
        score10_from_review_stats({"review_count": 3})
    with pytest.raises(ValueError, match="rating 11"):
        review_stats_from_ratings([11])


def test_initial_anchors_quantiles_exemplars_cap(pool):
    table = pool.table()
    own = table[table.pattern_id == "pattern_03"].sort_values(["score10", "paper_id"])
    n = len(own)
    want = list(dict.fromkeys(own["paper_id"].iloc[round(q * (n - 1))]
                              for q in (0.05, 0.15, 0.25, 0.35, 0.5, 0.65, 0.75, 0.85, 0.95)))
    ex = [e for e in pool.exemplars["pattern_03"] if e not in want]
    got = select_initial_anchors(table, "pattern_03", pool.exemplars["pattern_03"])
    assert list(got["paper_id"]) == want + ex[:2]
    capped = select_initial_anchors(table, "pattern_03", pool.exemplars["pattern_03"], max_initial=5)
    assert len(capped) == 5 and capped["weight"].min() >= got["weight"].nlargest(5).min()
    small = table[table.pattern_id == "pattern_03"].iloc[:4]
    assert len(select_initial_anchors(small, "pattern_03")) == 4
    with pytest.raises(ValueError, match="no papers"):
        select_initial_anchors(table, "pattern_99")


def original_densify_loop(papers, pattern_id, hint, exclude, size=1.0, count=3):
    """Independent reference for the original densify rule: plain lists and ``sorted``."""
    centre = round(2 * hint) / 2
    own = sorted((p for p in papers if p["pattern_id"] == pattern_id), key=lambda p: (p["score10"], p["paper_id"]))
    inside = [p for p in own if centre - size / 2 <= p["score10"] <= centre + size / 2]
    chosen = sorted(inside, key=lambda p: (-p["weight"], p["score10"], p["paper_id"]))[:count]
    if len(chosen) < count:
        rest = [p for p in own if p not in chosen]
        chosen += sorted(rest, key=lambda p: (abs(p["score10"] - centre), -p["weight"]))[:count - len(chosen)]
    return [p["paper_id"] for p in chosen if p["paper_id"] not in exclude]


def test_bucket_anchors_match_a_plain_loop_over_the_pool(pool):
    table = pool.table()
    papers = table.to_dict("records")
    checked = 0
    for pattern in sorted(pool.exemplars):
        present = list(select_initial_anchors(table, pattern, pool.exemplars[pattern])["paper_id"])
        for hint in np.arange(1.0, 10.01, 0.23):
            got = list(select_bucket_anchors(table, hint, present, pattern)["paper_id"])
            assert got == original_densify_loop(papers, pattern, hint, set(present)), (pattern, hint)
            checked += len(got)
    assert checked > 100  # the comparison is not vacuous


def test_pass_rule(pool):
    table = pool.table()
    th = pass_thresholds(table, "pattern_01")
    assert th["source"] == "pattern"
    assert passes([th["q75"], th["q75"], 1.0], th) == (np.mean([th["q75"], th["q75"], 1.0]) >= th["q50"])
    assert not passes([th["q75"] - 0.01, 10, 1], th)
    assert pass_thresholds(table.iloc[:5], "pattern_01")["source"] == "global"


# ---------------------------------------------------------------- tau file


def test_tau_file_round_trip_and_refusal(tmp_path):
    path = tmp_path / "judge_tau.json"
    paper_file = tmp_path / "papers.json"
    paper_file.write_text("[]")
    from mechaudit.tau.taufile import file_sha256

    content = write_tau_file(path, {"Methodology": 0.7, "Novelty": 1.4, "Storyteller": 1.0}, "claude-opus-4-6",
                             pairs_used=2000, nodes_paper_hash=file_sha256(paper_file))
    assert set(content) == {"tau_methodology", "tau_novelty", "tau_storyteller", "rubric_version", "card_version",
                            "judge_model", "nodes_paper_hash", "created_at", "pairs_used"}
    assert load_tau_file(path, "claude-opus-4-6") == {"Methodology": 0.7, "Novelty": 1.4, "Storyteller": 1.0}
    with pytest.raises(TauFileMismatchError) as err:
        load_tau_file(path, "claude-opus-4-6", rubric_version="mechaudit_rubric_v2")
    assert RUBRIC_VERSION in str(err.value) and "mechaudit_rubric_v2" in str(err.value)
    with pytest.raises(TauFileMismatchError, match="card_version"):
        load_tau_file(path, "claude-opus-4-6", card_version="other")
    with pytest.raises(TauFileMismatchError, match="judge_model"):
        load_tau_file(path, "claude-sonnet-4-6")
    with pytest.raises(TauFileMismatchError, match="nodes_paper_hash"):
        load_tau_file(path, "claude-opus-4-6", nodes_paper_hash="0" * 64)
    old = tmp_path / "old.json"
    old.write_text(json.dumps({**content, "rubric_version": "rubric_v1"}))
    with pytest.raises(TauFileMismatchError, match=r"'rubric_v1'.*'mechaudit_rubric_v1'"):
        TauConfig(path=old).resolve(["Novelty"], "claude-opus-4-6")
    (tmp_path / "bad.json").write_text("{\n oops")
    with pytest.raises(ValueError, match="bad.json: line 2"):
        load_tau_file(tmp_path / "bad.json", "m")


def test_tau_resolution_priority(tmp_path):
    path = tmp_path / "t.json"
    write_tau_file(path, {"Methodology": 0.7}, "m", pairs_used=10)
    config = TauConfig(path=path, taus={"Methodology": 0.9, "Novelty": 1.3}, default=1.1)
    assert config.resolve(ROLES, "m") == {"Methodology": (0.7, "file:t.json"), "Novelty": (1.3, "given"),
                                          "Storyteller": (1.1, "default")}
    assert TauConfig().resolve(["Storyteller"], "m") == {"Storyteller": (1.0, "default")}
    with pytest.raises(ValueError, match="must be > 0"):
        TauConfig(taus={"Novelty": -1})
    with pytest.raises(ValueError, match="unknown role"):
        write_tau_file(path, {"Judge": 1.0}, "m", 1)


def test_tau_config_reads_the_environment_only_when_given_one(tmp_path, monkeypatch):
    path = tmp_path / "t.json"
    write_tau_file(path, {"Methodology": 0.7}, "m", pairs_used=10)
    env = {"MECHAUDIT_JUDGE_TAU_PATH": str(path), "MECHAUDIT_TAU_METHODOLOGY": "0.9",
           "MECHAUDIT_TAU_NOVELTY": "1.3", "MECHAUDIT_JUDGE_TAU_DEFAULT": "1.1"}
    assert TauConfig.from_env(env).resolve(ROLES, "m") == {
        "Methodology": (0.7, "file:t.json"), "Novelty": (1.3, "MECHAUDIT_TAU_NOVELTY"),
        "Storyteller": (1.1, "default")}
    with pytest.raises(ValueError, match="MECHAUDIT_TAU_NOVELTY must be > 0"):
        TauConfig.from_env({"MECHAUDIT_TAU_NOVELTY": "-1"})
    for name, value in env.items():  # the process environment is never read implicitly
        monkeypatch.setenv(name, value)
    assert TauConfig().resolve(["Methodology"], "m") == {"Methodology": (1.0, "default")}


def test_pairwise_judging_path_recovers_tau(pool):
    from mechaudit.tau import fit_tau, judge_sampled_pairs, sample_pairs

    pairs = sample_pairs(pool.table(), 2000, seed=5)
    judge = BlindJudge(simulator=SimulatedJudge(pool.truth(), taus={r: 0.8 for r in ROLES}))
    judged = judge_sampled_pairs(pairs, pool.by_id(), judge, "Novelty")
    assert len(judged) == 2000 and set(judged["judgement"]) == {"better", "tie", "worse"}
    assert abs(fit_tau(judged, "mle") / 0.8 - 1) < 0.10


def test_critic_refuses_tau_file_of_another_rubric(pool, tmp_path):
    path = tmp_path / "judge_tau.json"
    write_tau_file(path, {r: 1.0 for r in ROLES}, "simulated-judge", 10, rubric_version="rubric_v0")
    judge = BlindJudge(simulator=SimulatedJudge(pool.truth()))
    with pytest.raises(TauFileMismatchError, match="rubric_v0"):
        MultiAgentCritic(pool.papers, judge, pool.exemplars, taus=TauConfig(path=path))
    write_tau_file(path, {"Novelty": 1.4}, "simulated-judge", 10)
    critic = MultiAgentCritic(pool.papers, judge, pool.exemplars, taus=TauConfig(path=path))
    assert (critic.tau_sources["Novelty"] == (1.4, "file:judge_tau.json")
            and critic.tau_sources["Methodology"] == (1.0, "default"))
    assert MultiAgentCritic(pool.papers, judge).tau_sources["Storyteller"] == (1.0, "default")
    with pytest.raises(ValueError, match=r"no tau for roles \['Storyteller'\]"):
        MultiAgentCritic(pool.papers, judge, taus={"Methodology": 1.0, "Novelty": 1.0})


def test_anchor_table_is_the_one_anchor_index(pool):
    raw = [{k: v for k, v in p.items() if k not in ("score10", "weight")} for p in pool.papers[:3]]
    raw.append({"paper_id": "no-reviews", "pattern_id": "pattern_01"})
    raw.append({"paper_id": "given", "pattern_id": "pattern_01", "score10": 4.0, "weight": 0.5})
    usable = anchor_papers(raw)
    assert [p["paper_id"] for p in usable] == [p["paper_id"] for p in pool.papers[:3]] + ["given"]
    table = anchor_table(raw)
    assert list(table.columns) == ["paper_id", "pattern_id", "score10", "weight"]
    assert table["score10"].tolist() == pytest.approx([p["score10"] for p in pool.papers[:3]] + [4.0])
    assert table.loc[3, "weight"] == 0.5
    assert anchor_table([]).empty and list(anchor_table([]).columns) == list(table.columns)


def test_critic_derives_anchor_scores_from_review_stats(pool):
    raw = [{k: v for k, v in p.items() if k not in ("score10", "weight")} for p in pool.papers]
    raw.append({"paper_id": "no-reviews", "pattern_id": "pattern_01", "problem": "p", "method": "m", "contrib": "c"})
    story, truth = make_story(6.5, seed=4)
    judge = BlindJudge(simulator=SimulatedJudge(pool.truth()).with_truth(truth))
    from_stats = MultiAgentCritic(raw, judge, pool.exemplars, taus={r: 1.0 for r in ROLES})
    given = MultiAgentCritic(pool.papers, judge, pool.exemplars, taus={r: 1.0 for r in ROLES})
    ctx = {"pattern_id": "pattern_01"}
    assert from_stats.review(story, ctx)["avg_score"] == given.review(story, ctx)["avg_score"]
