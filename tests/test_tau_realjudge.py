"""Chapter 08's real-judge branch (:func:`llm_tau_calibration`) against the fake Anthropic HTTP API:
it completes, a second run sends nothing (answers from the client's cache), replay reproduces it, and
an invalid reply is excluded and counted."""

from __future__ import annotations

import json

import pytest
from fake_anthropic import FAKE_KEY, FakeAnthropic, client_for

from mechaudit.backends import Backend
from mechaudit.llm import ResponseCache, get_client
from mechaudit.tau import RUBRIC_VERSION, build_paper_card, llm_tau_calibration, make_pool
from mechaudit.tau.realjudge import calibration_requests

PRICES = {"batch_discount": 0.5,
          "models": {"claude-opus-4-6": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_read": 0.5}}}
N_PAIRS = 12


@pytest.fixture(scope="module")
def pool():
    return make_pool(n_patterns=2, papers_per_pattern=15, seed=3)


def judge_usage(body: dict, text: str) -> dict[str, int]:
    return {"input_tokens": 80, "output_tokens": 20}


def score_aware_fake(pool, broken=()) -> FakeAnthropic:
    """The fake API answering each pairwise prompt from the two cards' score10 (a judge that knows
    the truth), so every decided verdict agrees with the sign of the gap; ``broken`` cards get an
    invalid reply."""
    score = {build_paper_card(p).render(): p["score10"] for p in pool.papers}
    broken = set(broken)

    def reply(body: dict) -> str:
        user = body["messages"][0]["content"]
        x, y = user.removeprefix("CANDIDATE\n").split("\n\nREFERENCE\n")
        y = y.split("\n\n")[0]
        if x in broken or y in broken:
            return "{}"
        gap = score[x] - score[y]
        judgement = "tie" if abs(gap) < 0.2 else ("better" if gap > 0 else "worse")
        return json.dumps({"rubric_version": RUBRIC_VERSION, "judgement": judgement,
                           "strength": "strong" if abs(gap) > 1 else "medium",
                           "rationale": "The method is more concrete."})

    return FakeAnthropic(reply, usage=judge_usage)


def judge_client(fake, cache_dir):
    return client_for(fake, cache_dir, prices=PRICES)


def test_runs_under_anthropic_then_from_the_cache_then_replay(pool, tmp_path, api_key):
    fake = score_aware_fake(pool)
    first = llm_tau_calibration(pool, judge_client(fake, tmp_path), n_pairs=N_PAIRS, seed=1)
    assert len(fake.message_bodies) == 3 * N_PAIRS and first.requests_sent == 3 * N_PAIRS
    fits = first.fits.set_index(["role", "method"])
    assert (fits["n_pairs"] == N_PAIRS).all() and (fits["n_excluded"] == 0).all()
    assert (fits["sign_agreement"] == 1.0).all()  # the fake knows the scores
    assert (fits["tau"] < 1.0).all()  # a judge that follows the gaps gets a steep curve
    assert set(first.judged["role"]) == {"Methodology", "Novelty", "Storyteller"}
    # the requests built without sending are exactly those sent
    planned = calibration_requests(pool, n_pairs=N_PAIRS, seed=1)
    assert sorted(r.key for r in planned) == sorted(ResponseCache(tmp_path).keys())

    again_fake = score_aware_fake(pool)
    again = llm_tau_calibration(pool, judge_client(again_fake, tmp_path), n_pairs=N_PAIRS, seed=1)
    assert again_fake.message_bodies == [] and again.requests_sent == 0 and again.served_from_cache == 3 * N_PAIRS
    assert again.fits.equals(first.fits)

    replayed = llm_tau_calibration(pool, get_client("replay", cache_dir=tmp_path), n_pairs=N_PAIRS, seed=1)
    assert replayed.requests_sent == 0 and replayed.fits.equals(first.fits)
    assert (first.backend, replayed.backend) == (Backend.ANTHROPIC, Backend.REPLAY)


def test_replay_answers_from_its_clients_cache_only(pool, tmp_path):
    from mechaudit.llm import ReplayMissError

    with pytest.raises(ReplayMissError):
        llm_tau_calibration(pool, get_client("replay", cache_dir=tmp_path / "empty"), n_pairs=N_PAIRS, seed=1)


def test_invalid_reply_is_excluded_and_counted(pool, tmp_path, api_key):
    fake = score_aware_fake(pool)
    first = llm_tau_calibration(pool, judge_client(fake, tmp_path / "ok"), n_pairs=N_PAIRS, seed=1,
                                roles=["Novelty"])
    a = first.judged["a"].iloc[0]
    broken = build_paper_card(pool.by_id()[a]).render()
    bad = score_aware_fake(pool, broken=[broken])
    out = llm_tau_calibration(pool, judge_client(bad, tmp_path / "bad"), n_pairs=N_PAIRS, seed=1,
                              roles=["Novelty"])
    hit = int(first.judged["a"].eq(a).sum() + first.judged["b"].eq(a).sum())
    assert (out.fits["n_excluded"] == hit).all() and (out.fits["n_pairs"] == N_PAIRS - hit).all()
    assert len(bad.message_bodies) == N_PAIRS + 2 * hit  # each invalid reply got two repair requests


def test_no_client_and_bad_sizes_are_refused(pool, tmp_path):
    with pytest.raises(ValueError, match=r"^llm_tau_calibration needs an LLM client \(mechaudit.llm.get_client\)$"):
        llm_tau_calibration(pool, None)
    with pytest.raises(ValueError, match="llm_pairs"):
        llm_tau_calibration(pool, get_client("replay", cache_dir=tmp_path), n_pairs=0)


def test_estimate_counts_exactly_the_requests_the_chapter_sends(tmp_path, monkeypatch):
    from mechaudit.book.estimate import PLANS, estimate_chapters
    from mechaudit.llm.pricing import totals

    params = {"backend": "anthropic", "llm_pairs": 5, "n_patterns": 2, "papers_per_pattern": 15,
              "cache_dir": str(tmp_path)}
    estimate = estimate_chapters(["08_tau_calibration"], overrides=params)
    assert totals(estimate)["requests"] == 3 * 5 and totals(estimate)["to_send"] == 3 * 5
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)  # set only after the estimate
    pool = make_pool(n_patterns=2, papers_per_pattern=15, seed=0)
    fake = score_aware_fake(pool)
    llm_tau_calibration(pool, judge_client(fake, tmp_path), n_pairs=5, seed=0)
    plan = PLANS["08_tau_calibration"]
    planned = plan({**params, "seed": 0, "review_noise": 0.8, "judge_model": "claude-opus-4-6"})
    assert sorted(p.request.key for p in planned) == sorted(ResponseCache(tmp_path).keys())
    assert totals(estimate_chapters(["08_tau_calibration"], overrides=params))["to_send"] == 0


def test_two_hundred_pairs_by_default(monkeypatch):
    from mechaudit.tau import realjudge

    papers, pairs = realjudge.calibration_pairs(make_pool(n_patterns=3, papers_per_pattern=20, seed=3))
    assert len(pairs) == 200 and len(papers) == 60
    asked = []

    def stop(pool, n_pairs, seed):
        asked.append(n_pairs)
        raise LookupError("stop here")

    monkeypatch.setattr(realjudge, "calibration_pairs", stop)
    for run in (lambda: realjudge.calibration_requests([]), lambda: llm_tau_calibration([], object())):
        with pytest.raises(LookupError, match="stop here"):
            run()
    assert asked == [200, 200]


def test_a_role_without_one_valid_reply_gets_no_fit(pool, tmp_path, api_key):
    every_card = [build_paper_card(p).render() for p in pool.papers]
    out = llm_tau_calibration(pool, judge_client(score_aware_fake(pool, broken=every_card), tmp_path), n_pairs=3,
                              seed=1, roles=["Novelty"])
    assert list(out.fits.columns) == ["role", "method", "tau", "se", "se_robust", "at_bound", "n_pairs", "n_excluded",
                                      "tie_share", "sign_agreement"]
    assert list(out.fits["method"]) == ["grid", "mle"] and out.judged.empty
    assert out.fits[["tau", "se", "se_robust", "tie_share", "sign_agreement"]].isna().all().all()
    assert not out.fits["at_bound"].any() and list(out.fits["n_pairs"]) == [0, 0]
    assert list(out.fits["n_excluded"]) == [3, 3]
