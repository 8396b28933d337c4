"""Chapter 08's real-judge branch (:func:`llm_tau_calibration`) against a faked Anthropic HTTP API:
it completes, a second run sends nothing (answers from ``cache_dir``), replay reproduces it, and an
invalid reply is excluded and counted."""

from __future__ import annotations

import json

import httpx
import pytest
from fake_anthropic import message_response

from mechaudit.backends import BackendError
from mechaudit.llm import ResponseCache, get_client
from mechaudit.tau import RUBRIC_VERSION, build_paper_card, llm_tau_calibration, make_pool
from mechaudit.tau.realjudge import calibration_requests

FAKE_KEY = "sk-ant-" + "test-realjudge-0"  # split so no key-like string is tracked
PRICES = {"batch_discount": 0.5,
          "models": {"claude-opus-4-6": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_read": 0.5}}}
N_PAIRS = 12


@pytest.fixture(scope="module")
def pool():
    return make_pool(n_patterns=2, papers_per_pattern=15, seed=3)


class ScoreAwareFake:
    """Answers each pairwise prompt from the two cards' score10 (a judge that knows the truth), so
    every decided verdict agrees with the sign of the gap; ``broken`` cards get an invalid reply."""

    def __init__(self, pool, broken=()):
        self.score = {build_paper_card(p).render(): p["score10"] for p in pool.papers}
        self.broken = set(broken)
        self.bodies = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        user = body["messages"][0]["content"]
        x, y = user.removeprefix("CANDIDATE\n").split("\n\nREFERENCE\n")
        if x in self.broken or y.split("\n\n")[0] in self.broken:
            text = "{}"
        else:
            gap = self.score[x] - self.score[y.split("\n\n")[0]]
            judgement = "tie" if abs(gap) < 0.2 else ("better" if gap > 0 else "worse")
            text = json.dumps({"rubric_version": RUBRIC_VERSION, "judgement": judgement,
                               "strength": "strong" if abs(gap) > 1 else "medium",
                               "rationale": "The method is more concrete."})
        return message_response(
            text, body["model"], f"msg_{len(self.bodies)}", {"input_tokens": 80, "output_tokens": 20}
        )


def client_for(fake, cache_dir):
    http = httpx.Client(transport=httpx.MockTransport(fake))
    return get_client(backend="anthropic", cache_dir=cache_dir, http_client=http, max_retries=0, prices=PRICES)


def test_runs_under_anthropic_then_from_the_cache_then_replay(pool, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    fake = ScoreAwareFake(pool)
    first = llm_tau_calibration(pool, "anthropic", n_pairs=N_PAIRS, seed=1, client=client_for(fake, tmp_path))
    assert len(fake.bodies) == 3 * N_PAIRS and first.requests_sent == 3 * N_PAIRS
    fits = first.fits.set_index(["role", "method"])
    assert (fits["n_pairs"] == N_PAIRS).all() and (fits["n_excluded"] == 0).all()
    assert (fits["sign_agreement"] == 1.0).all()  # the fake knows the scores
    assert (fits["tau"] < 1.0).all()  # a judge that follows the gaps gets a steep curve
    assert set(first.judged["role"]) == {"Methodology", "Novelty", "Storyteller"}
    # the requests built without sending are exactly those sent
    planned = calibration_requests(pool, n_pairs=N_PAIRS, seed=1)
    assert sorted(r.key for r in planned) == sorted(ResponseCache(tmp_path).keys())

    again_fake = ScoreAwareFake(pool)
    again = llm_tau_calibration(pool, "anthropic", n_pairs=N_PAIRS, seed=1, client=client_for(again_fake, tmp_path))
    assert again_fake.bodies == [] and again.requests_sent == 0 and again.served_from_cache == 3 * N_PAIRS
    assert again.fits.equals(first.fits)

    replayed = llm_tau_calibration(pool, "replay", n_pairs=N_PAIRS, seed=1, cache_dir=tmp_path)
    assert replayed.requests_sent == 0 and replayed.fits.equals(first.fits)


def test_replay_honours_cache_dir(pool, tmp_path):
    from mechaudit.llm import ReplayMissError

    with pytest.raises(ReplayMissError):
        llm_tau_calibration(pool, "replay", n_pairs=N_PAIRS, seed=1, cache_dir=tmp_path / "empty")


def test_invalid_reply_is_excluded_and_counted(pool, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    fake = ScoreAwareFake(pool)
    first = llm_tau_calibration(pool, "anthropic", n_pairs=N_PAIRS, seed=1, roles=["Novelty"],
                                client=client_for(fake, tmp_path / "ok"))
    a = first.judged["a"].iloc[0]
    broken = build_paper_card(pool.by_id()[a]).render()
    bad = ScoreAwareFake(pool, broken=[broken])
    out = llm_tau_calibration(pool, "anthropic", n_pairs=N_PAIRS, seed=1, roles=["Novelty"],
                              client=client_for(bad, tmp_path / "bad"))
    hit = int(first.judged["a"].eq(a).sum() + first.judged["b"].eq(a).sum())
    assert (out.fits["n_excluded"] == hit).all() and (out.fits["n_pairs"] == N_PAIRS - hit).all()
    assert len(bad.bodies) == N_PAIRS + 2 * hit  # each invalid reply got two repair requests


def test_reference_backend_and_bad_sizes_are_refused(pool):
    with pytest.raises(BackendError, match="not an LLM backend"):
        llm_tau_calibration(pool, "reference")
    with pytest.raises(ValueError, match="llm_pairs"):
        llm_tau_calibration(pool, "replay", n_pairs=0)


def test_estimate_counts_exactly_the_requests_the_chapter_sends(tmp_path, monkeypatch):
    from mechaudit.llm.estimate import estimate_chapters, totals
    from mechaudit.tau.realjudge import plan_chapter

    params = {"backend": "anthropic", "llm_pairs": 5, "n_patterns": 2, "papers_per_pattern": 15,
              "cache_dir": str(tmp_path)}
    estimate = estimate_chapters(["08_tau_calibration"], overrides=params)
    assert totals(estimate)["requests"] == 3 * 5 and totals(estimate)["to_send"] == 3 * 5
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    pool = make_pool(n_patterns=2, papers_per_pattern=15, seed=0)
    fake = ScoreAwareFake(pool)
    llm_tau_calibration(pool, "anthropic", n_pairs=5, seed=0, client=client_for(fake, tmp_path))
    planned = plan_chapter({**params, "seed": 0, "review_noise": 0.8, "judge_model": "claude-opus-4-6"})
    assert sorted(p.request.key for p in planned) == sorted(ResponseCache(tmp_path).keys())
    assert totals(estimate_chapters(["08_tau_calibration"], overrides=params))["to_send"] == 0
