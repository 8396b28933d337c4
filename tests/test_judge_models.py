"""The judge-model axis: agreement and kappa between judge models (checked against scikit-learn),
per-model estimate ranges, provider routing, and the OpenAI provider over a faked HTTP API with
the same cache, replay, ledger and blindness rules as the Anthropic one."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading

import httpx
import numpy as np
import pandas as pd
import pytest
from fake_anthropic import FAKE_KEY, FakeAnthropic, client_for
from rule_hypotheses import hyp
from sklearn.metrics import cohen_kappa_score

from mechaudit.agreement import (
    agreement_range,
    estimate_range,
    model_agreement,
    verdict_matrix,
)
from mechaudit.llm import (
    BlindnessError,
    LLMRequest,
    MissingAPIKeyError,
    ReplayMissError,
    ResponseCache,
    get_client,
)
from mechaudit.llm.providers import OPENAI_EXTRA, MissingProviderSDKError, import_openai, openai_params
from mechaudit.llm.routing import canonical_model, route_model
from mechaudit.rules.audit import percent_different
from mechaudit.rules.llm_judge import judge_each_model, majority, model_verdicts
from mechaudit.rules.model_axis import model_axis

HAS_OPENAI = importlib.util.find_spec("openai") is not None
needs_openai = pytest.mark.skipif(
    not HAS_OPENAI, reason="the optional OpenAI SDK is not installed (pip install 'mechaudit[openai]')"
)
FINDINGS = {"I1": "Tumour cells proliferate faster in the treated line."}
OPENAI_KEY = "sk-" + "fake-openai-for-tests"

# Two judges on 20 pairs with a known 2x2 table: both same 8, both different 8, only A says same
# 3, only B says same 1 -> raw agreement 16/20, p_A = 11/20, p_B = 9/20,
# p_e = .55 * .45 + .45 * .55 = .495, kappa = (.8 - .495) / .505.
VERDICTS_A = [True] * 8 + [False] * 8 + [True] * 3 + [False]
VERDICTS_B = [True] * 8 + [False] * 8 + [False] * 3 + [True]
KAPPA_AB = (0.8 - 0.495) / 0.505


def pair_list(n: int = 20):
    """``n`` pairs about one instance; pair i's statements carry ``P<i>`` so a fake can find it."""
    out = []
    for i in range(n):
        a = hyp(f"a{i}", ["KRAS", "MEK", "ERK", "PROLIF"], statement=f"P{i} first statement.")
        b = hyp(f"b{i}", ["EGFR", "MEK", "ERK", "PROLIF"], statement=f"P{i} second statement.")
        out.append((a, b))
    return out


class FakeProviders:
    """Anthropic (``FakeAnthropic``: Messages and Batches) and OpenAI Chat Completions over one
    ``httpx.MockTransport`` handler.

    ``verdicts[model][i]`` is the verdict (True = same) the model gives pair ``i`` in every order.
    ``bodies`` lists (path, body) of every Messages and Chat Completions request.
    """

    def __init__(self, verdicts: dict[str, list[bool]]):
        self.verdicts = verdicts
        self.anthropic = FakeAnthropic(self.reply, usage=lambda body, text: {"input_tokens": 100, "output_tokens": 20},
                                       polls_in_progress=0)
        self.bodies: list[tuple[str, dict]] = []  # (path, body)
        self.lock = threading.Lock()

    @staticmethod
    def pair_index(text: str) -> int:
        return int(text.split("Statement: P")[1].split(" ")[0])

    def reply(self, body: dict) -> str:
        same = self.verdicts[body["model"]][self.pair_index(body["messages"][-1]["content"])]
        return json.dumps({"verdict": "same" if same else "different", "reason": "test"})

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path in ("/v1/messages", "/v1/chat/completions"):
            with self.lock:
                self.bodies.append((path, json.loads(request.content)))
        if path.startswith("/v1/messages"):
            key = request.headers.get("x-api-key") or request.headers.get("authorization", "")
            assert key.endswith(FAKE_KEY)
            return self.anthropic(request)
        if path == "/v1/chat/completions":
            assert request.headers["authorization"] == f"Bearer {OPENAI_KEY}"
            body = json.loads(request.content)
            return httpx.Response(200, json=chat_json(self.reply(body), body["model"]))
        return httpx.Response(404, json={"error": {"message": path}})

    def count(self, path: str) -> int:
        return sum(p == path for p, _ in self.bodies)


def chat_json(text: str, model: str, prompt_tokens: int = 120, cached: int = 20, completion: int = 15) -> dict:
    """A Chat Completions reply (the fields the SDK's ``ChatCompletion`` needs)."""
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": text, "refusal": None}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                  "total_tokens": prompt_tokens + completion,
                  "prompt_tokens_details": {"cached_tokens": cached}},
    }


def renamed(request: LLMRequest, model: str) -> LLMRequest:
    """The same request for another model, validated anew (a fresh cache key)."""
    return LLMRequest.model_validate({**request.model_dump(), "model": model})


@pytest.fixture
def keys(monkeypatch, api_key):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)


# -- agreement and kappa between judge models -------------------------------------------------

def test_two_models_known_disagreements_end_to_end(tmp_path, keys):
    """Two fake Anthropic models through LLMJudge: the App. D table equals the 2x2 arithmetic and
    scikit-learn; a re-run makes no HTTP call."""
    pairs = pair_list()
    fake = FakeProviders({"claude-model-a": VERDICTS_A, "claude-model-b": VERDICTS_B})
    client = client_for(fake, tmp_path / "cache")
    calls = judge_each_model(pairs, ["claude-model-a", "claude-model-b", "claude-model-a"], client,
                             instances=FINDINGS, orders=("ab", "ab", "ba"), early_stop=False)
    assert list(calls) == ["claude-model-a", "claude-model-b"]  # duplicate judged once
    assert fake.count("/v1/messages") == 2 * 20 * 3
    verdicts = verdict_matrix({m: majority(c, len(pairs))["same"] for m, c in calls.items()})
    assert verdicts.shape == (2, 20)
    np.testing.assert_array_equal(verdicts.loc["claude-model-b"].to_numpy(dtype=bool), VERDICTS_B)
    table = model_agreement(verdicts)
    row = table.iloc[0]
    assert (row["model_a"], row["model_b"], row["n"]) == ("claude-model-a", "claude-model-b", 20)
    assert row["raw_agreement"] == pytest.approx(0.8)
    assert row["kappa"] == pytest.approx(KAPPA_AB)
    assert row["kappa"] == pytest.approx(cohen_kappa_score(VERDICTS_A, VERDICTS_B), abs=1e-12)
    assert agreement_range(table) == pytest.approx(
        {"raw_agreement_pct_low": 80.0, "raw_agreement_pct_high": 80.0, "kappa_low": KAPPA_AB, "kappa_high": KAPPA_AB})
    ledger = client.ledger()
    assert set(ledger["model"]) == {"claude-model-a", "claude-model-b"}
    judge_each_model(pairs, ["claude-model-a", "claude-model-b"], client,
                     instances=FINDINGS, orders=("ab", "ab", "ba"), early_stop=False)
    assert fake.count("/v1/messages") == 120  # all from the cache


def test_model_verdicts_reuse_the_first_models_decisions(tmp_path, keys):
    """The axis's verdict table on a hand-made case: each model's row is its known verdicts; with the
    first model's decisions given, only the others are asked (and an undecided pair stays NA)."""
    pairs = pair_list()
    fake = FakeProviders({"claude-model-a": VERDICTS_A, "claude-model-b": VERDICTS_B})
    client = client_for(fake, tmp_path / "cache")
    settings = {"instances": FINDINGS, "orders": ("ab", "ab", "ba"), "early_stop": False}
    verdicts, calls = model_verdicts(pairs, ["claude-model-a", "claude-model-b", "claude-model-a"], client, **settings)
    assert list(verdicts.index) == list(calls) == ["claude-model-a", "claude-model-b"]
    assert verdicts.loc["claude-model-a"].tolist() == VERDICTS_A
    assert verdicts.loc["claude-model-b"].tolist() == VERDICTS_B
    assert fake.count("/v1/messages") == 2 * 20 * 3
    first = pd.array([None, *VERDICTS_A[1:]], dtype="boolean")  # the main judge left pair 0 undecided
    fresh = FakeProviders(fake.verdicts)
    reused, asked = model_verdicts(pairs, ["claude-model-a", "claude-model-b"], client_for(fresh, tmp_path / "fresh"),
                                   first=first, **settings)
    assert list(asked) == ["claude-model-b"] and {body["model"] for _, body in fresh.bodies} == {"claude-model-b"}
    assert pd.isna(reused.loc["claude-model-a", 0])
    assert reused.loc["claude-model-a"].tolist()[1:] == VERDICTS_A[1:]
    assert reused.loc["claude-model-b"].tolist() == VERDICTS_B


def test_model_axis_gives_percent_per_model_and_kind_and_the_agreement(tmp_path, keys):
    """The axis on perturbation pairs: % judged different per model (rows) and kind (columns, in the
    given order) from the known verdicts, and the two models' agreement (16 of 20 pairs)."""
    kinds = ["wording_only"] * 10 + ["first_step_swapped"] * 10
    fake = FakeProviders({"claude-model-a": VERDICTS_A, "claude-model-b": VERDICTS_B})
    per_model, agreement = model_axis(pair_list(), ["claude-model-a", "claude-model-b"],
                                      client_for(fake, tmp_path / "cache"), kinds=kinds,
                                      order=["first_step_swapped", "wording_only"], instances=FINDINGS,
                                      orders=("ab",), early_stop=False)
    assert list(per_model.columns) == ["first_step_swapped", "wording_only"]
    assert per_model.loc["claude-model-a"].tolist() == pytest.approx([70.0, 20.0])  # A's last ten: 3 same
    assert per_model.loc["claude-model-b"].tolist() == pytest.approx([90.0, 20.0])  # B's last ten: 1 same
    row = agreement.iloc[0]
    assert (row["model_a"], row["model_b"], row["n"]) == ("claude-model-a", "claude-model-b", 20)
    assert row["raw_agreement"] == pytest.approx(0.8) and row["kappa"] == pytest.approx(KAPPA_AB)


def test_judge_each_model_needs_a_model_and_a_client(tmp_path):
    client = get_client("replay", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="^judge_each_model needs at least one model name$"):
        judge_each_model(pair_list(), [], client)
    with pytest.raises(ValueError, match=r"^judge_each_model needs an LLM client \(mechaudit.llm.get_client\)$"):
        judge_each_model(pair_list(), ["claude-model-a"], None)


@pytest.mark.parametrize("seed", range(4))
def test_three_models_match_sklearn_pairwise(seed):
    rng = np.random.default_rng(seed)
    base = rng.random(60) < 0.5
    models = {f"m{k}": np.where(rng.random(60) < 0.9, base, ~base) for k in range(3)}
    table = model_agreement(models)
    assert list(zip(table["model_a"], table["model_b"])) == [("m0", "m1"), ("m0", "m2"), ("m1", "m2")]
    for _, row in table.iterrows():
        a, b = models[row["model_a"]], models[row["model_b"]]
        assert row["kappa"] == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
        assert row["raw_agreement"] == pytest.approx(np.mean(a == b))
    rng_ = agreement_range(table)
    assert rng_["kappa_low"] == pytest.approx(table["kappa"].min())
    assert rng_["raw_agreement_pct_high"] == pytest.approx(100 * table["raw_agreement"].max())


def test_undecided_pairs_dropped_per_comparison():
    verdicts = verdict_matrix({"a": [True, False, None, True], "b": [True, True, True, pd.NA], "c": [1, 0, 1, 1]})
    assert str(verdicts.dtypes.iloc[0]) == "boolean"
    table = model_agreement(verdicts).set_index(["model_a", "model_b"])
    assert table.loc[("a", "b"), "n"] == 2 and table.loc[("a", "b"), "raw_agreement"] == pytest.approx(0.5)
    assert table.loc[("a", "c"), "n"] == 3 and table.loc[("a", "c"), "raw_agreement"] == pytest.approx(1.0)


def test_bad_verdicts():
    with pytest.raises(ValueError, match="has 1 decisions"):
        verdict_matrix({"a": [True, False], "b": [True]})
    with pytest.raises(ValueError, match="boolean or 0/1"):
        verdict_matrix({"a": ["same", "different"]})
    with pytest.raises(ValueError, match="two or more judges"):
        model_agreement({"a": [True, False]})
    with pytest.raises(ValueError, match="no judges"):
        verdict_matrix({})


# -- per-model estimate ranges ----------------------------------------------------------------

def test_estimate_range_over_models():
    kinds = ["fss"] * 4 + ["mss"] * 4
    verdicts = verdict_matrix({
        "opus": [False, False, False, True, True, True, True, True],  # fss 75 % different, mss 0 %
        "sonnet": [False, False, True, True, True, True, False, True],  # fss 50 %, mss 25 %
        "gpt": [False, False, False, False, None, None, None, None],  # fss 100 %, mss undecided
    })
    per_model = percent_different(verdicts.T, kinds=kinds, order=["fss", "mss"]).T  # models x kinds
    ranges = estimate_range(per_model)
    assert ranges.loc["fss", ["low", "high", "spread"]].tolist() == pytest.approx([50.0, 100.0, 50.0])
    assert (ranges.loc["fss", "model_low"], ranges.loc["fss", "model_high"]) == ("sonnet", "gpt")
    assert ranges.loc["mss", ["low", "high", "n_models"]].tolist() == pytest.approx([0.0, 25.0, 2])
    empty = estimate_range(pd.DataFrame({"x": [np.nan, np.nan]}, index=["a", "b"]))
    assert empty.loc["x", "n_models"] == 0 and np.isnan(empty.loc["x", "low"]) and empty.loc["x", "model_low"] is None
    with pytest.raises(ValueError):
        estimate_range(pd.DataFrame({"x": ["high"]}, index=["a"]))


# -- provider routing -------------------------------------------------------------------------

@pytest.mark.parametrize("name, route, canonical", [
    ("claude-opus-4-6", ("anthropic", "claude-opus-4-6"), "claude-opus-4-6"),
    ("anthropic:claude-sonnet-4-6", ("anthropic", "claude-sonnet-4-6"), "claude-sonnet-4-6"),
    ("gpt-5.5", ("openai", "gpt-5.5"), "gpt-5.5"),
    ("openai:gpt-5.5", ("openai", "gpt-5.5"), "gpt-5.5"),
    ("o3-mini", ("openai", "o3-mini"), "o3-mini"),
    ("openai:ft:my-judge", ("openai", "ft:my-judge"), "openai:ft:my-judge"),
    ("some-new-anthropic-model", ("anthropic", "some-new-anthropic-model"), "some-new-anthropic-model"),
    ("anthropic:gpt-like-name", ("anthropic", "gpt-like-name"), "anthropic:gpt-like-name"),
])
def test_route_and_canonical_names(name, route, canonical):
    assert route_model(name) == route
    assert canonical_model(name) == canonical
    assert LLMRequest(model=name, messages=[{"role": "user", "content": "x"}]).model == canonical


def test_prefixed_and_plain_names_share_a_cache_key():
    plain = LLMRequest(model="gpt-5.5", messages=[{"role": "user", "content": "x"}])
    prefixed = LLMRequest(model="openai:gpt-5.5", messages=[{"role": "user", "content": "x"}])
    other = LLMRequest(model="gpt-4.1", messages=[{"role": "user", "content": "x"}])
    assert plain.key == prefixed.key != other.key
    with pytest.raises(ValueError, match="no model name after"):
        route_model("openai:")


def test_openai_params_body():
    req = LLMRequest(model="gpt-4.1", system="rubric", messages=[{"role": "user", "content": "compare"}],
                     temperature=0.0, max_tokens=300)
    assert openai_params(req) == {
        "model": "gpt-4.1", "max_completion_tokens": 300, "temperature": 0.0,
        "messages": [{"role": "system", "content": "rubric"}, {"role": "user", "content": "compare"}],
    }
    reasoning = renamed(req, "gpt-5.5")
    assert "temperature" not in openai_params(reasoning)  # only the default temperature is accepted


def test_missing_openai_sdk_names_the_extra(monkeypatch, tmp_path, keys):
    monkeypatch.setitem(sys.modules, "openai", None)  # import openai -> ImportError
    with pytest.raises(MissingProviderSDKError, match=r"pip install 'mechaudit\[openai\]'") as info:
        import_openai()
    assert "\n" not in str(info.value) and OPENAI_EXTRA in str(info.value)
    client = client_for(FakeProviders({}), tmp_path)
    req = LLMRequest(model="gpt-5.5", messages=[{"role": "user", "content": "x"}])
    with pytest.raises(MissingProviderSDKError, match="mechaudit"):
        client.complete(req)
    # replaying a recorded OpenAI answer needs neither the SDK nor a key
    record = {"text": "recorded", "model": "gpt-5.5", "stop_reason": "stop", "id": "c1",
              "usage": {"input_tokens": 3, "output_tokens": 1}}
    ResponseCache(tmp_path / "rec").put(req.key, record, req, source="chat.completions")
    monkeypatch.delenv("OPENAI_API_KEY")
    assert get_client("replay", cache_dir=tmp_path / "rec").complete(req).text == "recorded"


# -- the OpenAI provider over a fake HTTP API -------------------------------------------------

@needs_openai
def test_openai_call_cache_ledger_and_replay(tmp_path, keys):
    fake = FakeProviders({"gpt-4.1": [True], "gpt-5.5": [False]})
    client = client_for(fake, tmp_path / "cache")
    req = LLMRequest(model="openai:gpt-4.1", system="Rubric text.", version="t-v1",
                     messages=[{"role": "user", "content": "Statement: P0 here"}], max_tokens=200)
    out = client.complete(req)
    assert json.loads(out.text)["verdict"] == "same" and not out.cached and out.model == "gpt-4.1"
    assert out.usage.input_tokens == 100 and out.usage.cache_read_input_tokens == 20 and out.usage.output_tokens == 15
    [(path, body)] = fake.bodies
    assert path == "/v1/chat/completions"
    assert body["model"] == "gpt-4.1" and body["temperature"] == 0.0 and body["max_completion_tokens"] == 200
    assert body["messages"][0] == {"role": "system", "content": "Rubric text."}
    record = [json.loads(line) for line in (tmp_path / "cache" / "responses.jsonl").read_text().splitlines()][-1]
    assert record["source"] == "chat.completions" and record["provider"] == "openai" and record["temperature_sent"]
    assert record["request"]["model"] == "gpt-4.1" and OPENAI_KEY not in json.dumps(record)
    # second call: from the cache, no HTTP; plain name = same key
    assert client.complete(renamed(req, "gpt-4.1")).cached and len(fake.bodies) == 1
    ledger = client.ledger().set_index(["model", "mode"])
    assert ledger.loc[("gpt-4.1", "api"), "calls"] == 1  # one paid call, under the canonical name
    assert ledger.loc[("gpt-4.1", "api"), "input_tokens"] == 100
    # replay: a fresh client over the same cache answers the OpenAI request without any key or HTTP
    replay = get_client("replay", cache_dir=tmp_path / "cache")
    assert replay.complete(req).text == out.text
    with pytest.raises(ReplayMissError, match="gpt-5.5"):
        replay.complete(renamed(req, "gpt-5.5"))


@needs_openai
def test_openai_blindness_key_and_bad_body(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fake = FakeProviders({"gpt-4.1": [True]})
    client = client_for(fake, tmp_path)
    leaky = LLMRequest(model="gpt-4.1", messages=[{"role": "user", "content": "a first step swapped pair"}],
                       forbidden_terms=("first step swapped",))
    with pytest.raises(BlindnessError):
        client.complete(leaky)
    ok = LLMRequest(model="gpt-4.1", messages=[{"role": "user", "content": "Statement: P0 x"}])
    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY"):
        client.complete(ok)
    assert fake.bodies == []
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    empty = {"id": "x", "object": "chat.completion", "created": 1, "model": "gpt-4.1", "choices": []}
    client = client_for(lambda request: httpx.Response(200, json=empty), tmp_path / "bad")
    with pytest.raises(Exception, match="no choices"):
        client.complete(ok)
    assert not (tmp_path / "bad" / "responses.jsonl").exists()  # nothing cached


@needs_openai
def test_mixed_providers_agreement_and_replay(tmp_path, keys):
    """Claude and GPT judges on the same pairs: one cache, then replay reproduces the table."""
    pairs = pair_list()
    fake = FakeProviders({"claude-opus-4-6": VERDICTS_A, "gpt-5.5": VERDICTS_B})
    kw = {"instances": FINDINGS, "orders": ("ab", "ba")}
    calls = judge_each_model(pairs, ["claude-opus-4-6", "openai:gpt-5.5"],
                             client_for(fake, tmp_path / "cache"), **kw)
    assert fake.count("/v1/messages") == 40 and fake.count("/v1/chat/completions") == 40
    table = model_agreement({m: majority(c, 20)["same"] for m, c in calls.items()})
    assert table.loc[0, "kappa"] == pytest.approx(cohen_kappa_score(VERDICTS_A, VERDICTS_B), abs=1e-12)
    replayed = judge_each_model(
        pairs, ["claude-opus-4-6", "gpt-5.5"], get_client("replay", cache_dir=tmp_path / "cache"), **kw
    )
    assert len(fake.bodies) == 80
    again = model_agreement({m: majority(c, 20)["same"] for m, c in replayed.items()})
    pd.testing.assert_frame_equal(
        table.drop(columns=["model_a", "model_b"]), again.drop(columns=["model_a", "model_b"])
    )
    assert replayed["gpt-5.5"]["cached"].all()


@needs_openai
def test_batch_leaves_openai_requests_to_chat_completions(tmp_path, keys):
    fake = FakeProviders({"claude-opus-4-6": [True] * 3, "gpt-4.1": [True] * 3})
    client = client_for(fake, tmp_path)
    reqs = [LLMRequest(model=m, messages=[{"role": "user", "content": f"Statement: P{i} x"}])
            for m in ("claude-opus-4-6", "gpt-4.1") for i in range(3)]
    out = client.complete_many(reqs, batch=True, poll_interval=0)
    assert len(out) == 6 and fake.anthropic.batch_creates == 1
    [batch] = fake.anthropic.batches.values()
    assert [item["custom_id"] for item in batch["requests"]] == [r.key for r in reqs[:3]]
    assert fake.count("/v1/chat/completions") == 3 and fake.anthropic.message_bodies == []


def test_estimate_plans_the_same_judge_models_as_the_chapters():
    from mechaudit.book.chapter import judge_models

    # chapters 05/06: judge_model first, then the further models of judge_models, each once
    assert judge_models({"judge_model": "claude-opus-4-6", "judge_models": []}) == ["claude-opus-4-6"]
    assert judge_models({"judge_model": "a", "judge_models": ["b", "a", "gpt-5.5"]}) == ["a", "b", "gpt-5.5"]
    # chapter 07 has only the list
    assert judge_models({"judge_models": ["x", "y"]}) == ["x", "y"]
