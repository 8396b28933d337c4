"""LLMJudge over the fake Messages API (``fake_anthropic.FakeAnthropic``): majority, order, repeats, early stop,
invalid JSON, blindness."""

from __future__ import annotations

import json
from collections import Counter

import fake_anthropic
import numpy as np
import pandas as pd
import pytest
from fake_anthropic import FakeAnthropic
from rule_hypotheses import hyp

from mechaudit import deprecation
from mechaudit.agreement import flip_rate
from mechaudit.backends import Backend
from mechaudit.llm import BlindnessError
from mechaudit.rules.llm_judge import (
    SYSTEM_PROMPTS,
    LLMJudge,
    UndecidedError,
    call_plan,
    call_verdicts,
    planning_judge,
    stability_summary,
)

FINDINGS = {"I1": "Tumour cells proliferate faster in the treated line."}


def judge_usage(body: dict, text: str) -> dict[str, int]:
    return {"input_tokens": 100, "output_tokens": 20}


@pytest.fixture
def scripted_api(api_key):
    """``scripted_api(script)`` is a FakeAnthropic answering ``script(first statement shown, k, user
    text)``, k counting how often this exact request body was sent before (0 for the first). At
    teardown every request of every such fake must have been a Messages call with the test key
    whose reply did not raise."""
    made: list[FakeAnthropic] = []

    def make(script) -> FakeAnthropic:
        def reply(body: dict) -> str:
            user = body["messages"][0]["content"]
            first = user.split("Hypothesis A\nStatement: ")[1].split("\n")[0]
            return script(first, fake.message_bodies.count(body) - 1, user)

        fake = FakeAnthropic(reply, usage=judge_usage)
        made.append(fake)
        return fake

    yield make
    for fake in made:
        assert fake.errors == []
        assert len(fake.headers) == len(fake.message_bodies)  # only POST /v1/messages
        assert all((h.get("x-api-key") or h.get("authorization", "")).endswith(api_key) for h in fake.headers)


def verdict(v: str) -> str:
    return json.dumps({"verdict": v, "reason": "test"})


@pytest.fixture
def pairs():
    a = hyp("a", ["KRAS", "MEK", "ERK", "PROLIF"], statement="Alpha statement.")
    b = hyp("b", ["EGFR", "MEK", "ERK", "PROLIF"], statement="Beta statement.")
    c = hyp("c", ["KRAS", "PI3K", "ERK", "PROLIF"], statement="Gamma statement.")
    d = hyp("d", ["KRAS", "MEK", "ERK", "PROLIF"], statement="Delta statement.")
    return [(a, b), (a, c), (a, d)]


def make_judge(tmp_path, api, **kw):
    """A judge over the fake API; every planned call is made unless a test asks for early stop."""
    kw.setdefault("early_stop", False)
    client = fake_anthropic.client_for(api, tmp_path / "cache")
    return LLMJudge(client=client, instances=FINDINGS, **kw)


def test_early_stop_is_the_default():
    assert LLMJudge().early_stop is True


def test_a_judge_without_a_client_builds_requests_and_refuses_to_judge(pairs):
    judge = planning_judge("step", "claude-model-a", ("ab", "ba"), FINDINGS)
    assert judge.client is None and judge.backend is None
    assert repr(judge) == ("LLMJudge(rubric='step', model='claude-model-a', backend=None, "
                           "orders=('ab', 'ba'), early_stop=True)")
    reqs = judge.requests(pairs)
    assert [(r.model, r.metadata["order"]) for r in reqs[:2]] == [("claude-model-a", "ab"), ("claude-model-a", "ba")]
    assert len(reqs) == 6 and reqs[0].system == SYSTEM_PROMPTS["step"]
    assert [r.metadata for r in reqs[2:4]] == [{"pair": 1, "order": "ab", "repeat": 0, "rubric": "step"},
                                               {"pair": 1, "order": "ba", "repeat": 0, "rubric": "step"}]
    with pytest.raises(ValueError, match=r"^this LLMJudge has no client and only builds requests"):
        judge.judge(pairs)


def test_a_given_client_wins_over_the_deprecated_backend_name(tmp_path, scripted_api):
    client = fake_anthropic.client_for(scripted_api(lambda first, k, user: verdict("same")), tmp_path / "cache")
    deprecation._warned.clear()
    with pytest.warns(FutureWarning):
        judge = LLMJudge(backend="replay", client=client)
    assert judge.client is client and judge.backend is Backend.ANTHROPIC
    assert "backend='anthropic'" in repr(judge)


def test_call_plan_repeats():
    assert call_plan(("ab", "ab", "ba")) == [("ab", 0), ("ab", 1), ("ba", 0)]
    with pytest.raises(ValueError, match="'ab' or 'ba'"):
        call_plan(("ab", "xy"))


def test_majority_order_reversal_and_repeats(tmp_path, scripted_api, pairs):
    replies = {  # (statement shown first, k-th identical request body) -> reply
        ("Alpha statement.", 0): verdict("same"),
        ("Alpha statement.", 1): verdict("same"),
        ("Beta statement.", 0): verdict("different"),
        ("Gamma statement.", 0): verdict("different"),
        ("Delta statement.", 0): verdict("same"),
    }
    api = scripted_api(lambda first, k, user: replies[(first, k)])
    judge = make_judge(tmp_path, api, rubric="full")
    calls = judge.judge(pairs)
    # 3 pairs x 3 calls, each a real HTTP request (the two "ab" calls are distinct requests)
    assert len(calls) == 9 and len(api.message_bodies) == 9
    sent = Counter(json.dumps(body, sort_keys=True) for body in api.message_bodies)
    assert sorted(sent.values()) == [1, 1, 1, 2, 2, 2]  # each "ab" body sent twice
    assert calls["key"].nunique() == 9
    decision = judge.decide(pairs)
    # (a,b) and (a,c): "ab" twice same, "ba" different -> same 2:1; (a,d): same 3:0
    np.testing.assert_array_equal(decision["n_same"], [2, 2, 3])
    np.testing.assert_array_equal(decision["n_different"], [1, 1, 0])
    np.testing.assert_array_equal(judge.same(pairs), [True, True, True])
    ab = call_verdicts(calls, 3, "ab", 0)
    ba = call_verdicts(calls, 3, "ba", 0)
    assert list(ab) == [True, True, True] and list(ba) == [False, False, True]
    assert flip_rate(ab, ba) == pytest.approx(2 / 3)
    assert flip_rate(ab, call_verdicts(calls, 3, "ab", 1)) == 0.0
    # second run: everything from the cache, no new HTTP call
    judge.judge(pairs)
    assert len(api.message_bodies) == 9


def test_ba_presents_b_first(tmp_path, scripted_api, pairs):
    api = scripted_api(lambda first, k, user: verdict("same"))
    judge = make_judge(tmp_path, api, orders=("ab", "ba"))
    judge.judge(pairs[:1])
    users = [r["messages"][0]["content"] for r in api.message_bodies]
    firsts = sorted(u.index("Alpha statement.") < u.index("Beta statement.") for u in users)
    assert firsts == [False, True]
    ba = next(u for u in users if u.index("Beta statement.") < u.index("Alpha statement."))
    assert "Hypothesis A\nStatement: Beta statement." in ba
    assert api.message_bodies[0]["system"][0]["text"] == SYSTEM_PROMPTS["full"]
    assert api.message_bodies[0]["temperature"] == 0.0
    assert "Tumour cells proliferate faster" in users[0]


def test_early_stop_same_verdicts_fewer_calls(tmp_path, scripted_api, pairs):
    def script(first, k, user):  # "ab" repeats agree for every pair; "ba" disagrees for (a,b), (a,c)
        return verdict("same" if first in ("Alpha statement.", "Delta statement.") else "different")

    api_full = scripted_api(script)
    full = make_judge(tmp_path / "full", api_full)
    api_stop = scripted_api(script)
    stop = make_judge(tmp_path / "stop", api_stop, early_stop=True)
    np.testing.assert_array_equal(full.same(pairs), stop.same(pairs))
    assert len(api_full.message_bodies) == 9
    # every pair's two "ab" calls agree, so the "ba" call is skipped for all three pairs
    assert len(api_stop.message_bodies) == 6
    calls_full = full.judge(pairs).groupby("pair").size().tolist()
    calls_stop = stop.judge(pairs).groupby("pair").size().tolist()
    assert calls_full == [3, 3, 3] and calls_stop == [2, 2, 2]


def test_early_stop_keeps_calling_when_undecided(tmp_path, scripted_api, pairs):
    # repeats disagree (same, then different) -> the third call is needed and decides
    def script(first, k, user):
        if first == "Alpha statement.":
            return verdict("same" if k == 0 else "different")
        return verdict("same")

    api = scripted_api(script)
    judge = make_judge(tmp_path, api, early_stop=True)
    decision = judge.decide(pairs)
    assert decision["n_calls"].tolist() == [3, 3, 3]
    assert decision["same"].tolist() == [True, True, True]


def test_invalid_json_counted_and_excluded(tmp_path, scripted_api, pairs):
    def script(first, k, user):
        if first in ("Beta statement.",):
            return "I think they are the same."  # never valid, also after repairs
        if first == "Gamma statement.":
            return verdict("different")
        return verdict("same")

    api = scripted_api(script)
    judge = make_judge(tmp_path, api, json_retries=1)
    calls = judge.judge(pairs)
    bad = calls[calls["invalid"]]
    assert len(bad) == 1 and bad.iloc[0]["order"] == "ba" and bad.iloc[0]["same"] is None
    assert bad.iloc[0]["attempts"] == 2
    assert bad.iloc[0]["error"].startswith("no JSON object found in the reply")
    assert calls.loc[~calls["invalid"], "error"].isna().all()
    decision = judge.decide(pairs)
    assert decision.loc[0, "n_invalid"] == 1 and decision.loc[0, "n_valid"] == 2
    assert bool(decision.loc[0, "same"])  # two valid "same" votes; the invalid one is not a vote


def test_tie_or_no_valid_verdict_is_undecided(tmp_path, scripted_api, pairs):
    def script(first, k, user):  # (a,b): same vs different -> tie; (a,c): never valid JSON
        if "Gamma statement." in user:
            return "no json"
        return verdict("same" if first == "Alpha statement." else "different")

    api = scripted_api(script)
    judge = make_judge(tmp_path, api, orders=("ab", "ba"), json_retries=0)
    decision = judge.decide(pairs[:2])
    assert decision["decided"].tolist() == [False, False] and decision["same"].isna().all()
    assert decision["n_valid"].tolist() == [2, 0] and decision["n_invalid"].tolist() == [0, 2]
    with pytest.raises(UndecidedError, match="no majority"):
        judge.same(pairs[:2])


def test_step_rubric_components(tmp_path, scripted_api, pairs):
    reply = json.dumps({"initiating_event": "different", "route": "same", "terminal_outcome": "same",
                        "verdict": "different", "reason": "other trigger"})
    api = scripted_api(lambda first, k, user: reply)
    judge = make_judge(tmp_path, api, rubric="step")
    calls = judge.judge(pairs[:1])
    assert (calls["initiating_event"] == "different").all() and (calls["route"] == "same").all()
    assert not judge.same(pairs[:1])[0]
    assert "initiating_event" in api.message_bodies[0]["system"][0]["text"]


def test_prompts_are_blind_and_bad_input(tmp_path, scripted_api, pairs):
    api = scripted_api(lambda first, k, user: verdict("same"))
    judge = make_judge(tmp_path, api)
    leaky = hyp("x", ["KRAS", "MEK", "ERK", "PROLIF"], statement="A first step swapped variant.")
    with pytest.raises(BlindnessError):
        judge.judge([(pairs[0][0], leaky)])
    assert api.message_bodies == []
    for _rubric, prompt in SYSTEM_PROMPTS.items():
        assert "swap" not in prompt.lower() and "perturb" not in prompt.lower()
    with pytest.raises(ValueError, match="rubric"):
        LLMJudge(rubric="strict", client=judge.client)
    with pytest.raises(ValueError, match="'reference' is not an LLM backend"):
        LLMJudge(backend="reference")
    other = hyp("o", ["KRAS", "MEK", "ERK", "PROLIF"], instance="I2")
    with pytest.raises(ValueError, match="mixes instances"):
        judge.judge([(pairs[0][0], other)])
    with pytest.raises(ValueError, match="no finding"):
        judge.judge([(other, other)])


def test_stability_and_requests(tmp_path, scripted_api, pairs):
    from mechaudit.rules.llm_judge import stability

    def script(first, k, user):  # (a,b) flips with order; (a,c) flips on repeat; (a,d) stable
        if "Beta statement." in user:
            return verdict("same" if first == "Alpha statement." else "different")
        if "Gamma statement." in user:
            return verdict("same" if k == 0 else "different")
        return verdict("same")

    api = scripted_api(script)
    judge = make_judge(tmp_path, api)
    table = stability(judge.judge(pairs), 3)
    assert table["order_changed"].tolist() == [True, False, False]
    assert table.columns.tolist() == ["pair", "ab", "ab_repeat", "ba", "repeat_changed", "order_changed"]
    assert table["repeat_changed"].tolist() == [False, True, False]
    reqs = judge.requests(pairs)
    assert len(reqs) == 9 and len({r.key for r in reqs}) == 9
    assert [r.version for r in reqs[:3]] == ["mechjudge-full-v1.r0", "mechjudge-full-v1.r1", "mechjudge-full-v1.r0"]
    # early stop leaves "ba" missing -> order change unknown, never guessed
    stop = make_judge(tmp_path / "stop", scripted_api(lambda first, k, user: verdict("same")), early_stop=True)
    unknown = stability(stop.judge(pairs), 3)["order_changed"]
    assert unknown.isna().all() and unknown.dtype == "boolean"


def test_a_judge_makes_no_client_of_its_own_and_the_old_shorthand_still_does(tmp_path, pairs):
    judge = LLMJudge(rubric="full", instances=FINDINGS)
    assert judge.client is None and judge.backend is None  # no replay client behind the caller's back
    with pytest.raises(ValueError, match=r"^this LLMJudge has no client .*client=mechaudit.llm.get_client"):
        judge.judge(pairs)
    deprecation._warned.clear()
    with pytest.warns(FutureWarning, match=r"^LLMJudge: LLMJudge\(backend=\.\.\., cache_dir=.*is deprecated"):
        old = LLMJudge(rubric="full", backend="replay", cache_dir=tmp_path, max_concurrency=3)
    assert old.backend is old.client.backend is Backend.REPLAY and old.client.max_concurrency == 3
    assert old.client.cache.directory == tmp_path


def test_stability_summary_counts_repeat_and_reversal_changes():
    calls = pd.DataFrame([
        {"pair": p, "call": c, "order": o, "repeat": r, "verdict": v, "same": v == "same", "invalid": False}
        for p, vs in {0: ["same", "same", "different"], 1: ["different", "same", "different"]}.items()
        for c, ((o, r), v) in enumerate(zip([("ab", 0), ("ab", 1), ("ba", 0)], vs))
    ])
    s = stability_summary(calls, 2)
    assert s.row == {"pairs": 2, "repeat changed": 1, "reversal changed": 1, "reversal changed %": 50.0,
                     "same %": 50.0}
    assert s.flipped == {0}
    # a third pair, "different" in every call: the rates are thirds, kept to one decimal
    third = pd.concat([calls, calls[calls.pair == 1].assign(pair=2, verdict="different", same=False)])
    t = stability_summary(third, 3)
    assert (t.row["same %"], t.row["reversal changed %"]) == (33.3, 33.3)
    # pair 1 without its "ba" call: its order change is unknown, so it is not among the flipped pairs
    missing = calls[~((calls.pair == 1) & (calls.order == "ba"))]
    m = stability_summary(missing, 2)
    assert m.flipped == {0} and m.row["reversal changed"] == 1 and m.row["reversal changed %"] == 100.0


def test_majority_of_pairs_without_calls_counts_nothing():
    from mechaudit.rules.llm_judge import majority

    calls = pd.DataFrame({"pair": [0, 0, 2], "verdict": ["same", "same", "different"], "invalid": [False] * 3})
    out = majority(calls, 4)
    assert out["n_calls"].tolist() == [2, 0, 1, 0] and out["n_valid"].tolist() == [2, 0, 1, 0]
    assert out["n_invalid"].tolist() == [0] * 4 and out["decided"].tolist() == [True, False, True, False]


def test_judging_shows_a_bar_only_when_asked(tmp_path, scripted_api, pairs, capsys):
    from mechaudit.rules.llm_judge import judge_each_model

    api = scripted_api(lambda first, k, user: verdict("same"))
    judge = make_judge(tmp_path, api)
    assert judge.same(pairs).tolist() == [True] * 3
    assert judge.same_or_undecided(pairs).tolist() == [True] * 3
    judge_each_model(pairs, [judge.model], judge.client, instances=FINDINGS, early_stop=False)
    judge.judge(pairs)
    judge.decide(pairs)
    assert "LLM calls" not in capsys.readouterr().err
    judge.decide(pairs, progress=True)
    assert "LLM calls" in capsys.readouterr().err


def test_call_verdicts_read_the_first_repeat_by_default_and_plans_are_exact_by_default(pairs):
    calls = pd.DataFrame({"pair": [0, 0, 1], "order": ["ab", "ab", "ab"], "repeat": [0, 1, 0],
                          "invalid": [False, False, False], "same": [True, False, False]})
    assert call_verdicts(calls, 3, "ab").tolist() == [True, False, None]
    from mechaudit.rules.llm_judge import judge_planned

    planned = judge_planned(planning_judge("full", "claude-model-a", ["ab"], FINDINGS), pairs[:1], "s", False)
    assert [(p.stage, p.exact) for p in planned] == [("s", True)]


def test_a_call_table_is_numbered_from_0_and_a_request_is_the_first_repeat_by_default(tmp_path, scripted_api, pairs):
    judge = make_judge(tmp_path, scripted_api(lambda first, k, user: verdict("same")))
    calls = judge.judge(pairs)
    assert calls.index.tolist() == list(range(len(calls))) and calls["pair"].is_monotonic_increasing
    request = judge.request(pairs[0], "ab")
    assert request.version.endswith(".r0") and request.metadata["repeat"] == 0
    assert request.json_schema == judge.schema.model_json_schema() and "verdict" in request.json_schema["properties"]

