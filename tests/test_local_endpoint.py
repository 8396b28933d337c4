"""Local open-weights judges (issue 22, item 10): an OpenAI-compatible server named by
``OPENAI_BASE_URL`` or ``-p llm_base_url``, tested against a fake server on loopback.

The endpoint is part of the cache key (two servers never share answers), a loopback server needs
no key, its price is declared per endpoint in the price table, and the ledger labels its rows
``local``.
"""

from __future__ import annotations

import json

import nbformat
import pytest
import yaml
from fake_openai import FakeOpenAIServer
from shared_run import LOCAL_MODEL

from mechaudit.llm import get_client
from mechaudit.llm.errors import MissingAPIKeyError
from mechaudit.llm.ledger import load_prices
from mechaudit.llm.providers import is_loopback, normalize_endpoint, openai_base_url
from mechaudit.llm.request import LLMRequest
from mechaudit.llm.session import LLMSession, UnpricedModelError
from mechaudit.paths import REPO_ROOT

MODEL = LOCAL_MODEL
pytest.importorskip("openai")


def ok_reply(body: dict) -> str:
    return json.dumps({"verdict": "same", "reason": body["messages"][-1]["content"][:10]})


def request(text: str = "Are these the same?") -> LLMRequest:
    return LLMRequest(model=MODEL, system="You compare two mechanisms.", messages=[{"role": "user", "content": text}],
                      max_tokens=30)


@pytest.fixture
def no_openai_env(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def prices_for(*urls: str) -> dict:
    """The shipped price table plus a price of 0 for each server in ``urls``."""
    table = yaml.safe_load((REPO_ROOT / "params" / "prices.yaml").read_text())
    table["endpoints"] = {url: {"input": 0, "output": 0} for url in urls}
    return table


def test_endpoints_normalise_and_loopback_is_recognised():
    assert normalize_endpoint(" HTTP://LocalHost:8000/v1/ ") == "http://localhost:8000/v1"
    assert normalize_endpoint("http://[::1]:11434/v1") == "http://[::1]:11434/v1"
    assert openai_base_url("https://api.openai.com/v1/", environ={}) is None  # the vendor: no custom endpoint
    assert openai_base_url(None, environ={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}) == "http://127.0.0.1:9/v1"
    assert is_loopback("http://127.0.0.1:8000/v1") and is_loopback("http://[::1]:1/v1")
    assert is_loopback("http://localhost/v1") and not is_loopback("http://10.0.0.7:8000/v1")
    with pytest.raises(ValueError, match="not an http"):
        normalize_endpoint("localhost:8000")


def test_price_table_declares_a_price_per_endpoint(tmp_path):
    table = load_prices(prices_for("http://127.0.0.1:8000/v1/"))
    assert table["endpoints"] == {"http://127.0.0.1:8000/v1": dict.fromkeys(
        ("input", "output", "cache_write", "cache_read"), 0.0)}
    with pytest.raises(ValueError, match="endpoints.http://x/v1: prices must be finite numbers >= 0"):
        load_prices({"models": {}, "endpoints": {"http://x/v1": {"input": -1, "output": 0}}})


def test_local_server_needs_no_key_and_answers_are_keyed_by_endpoint(tmp_path, no_openai_env):
    with FakeOpenAIServer(ok_reply) as one, FakeOpenAIServer(ok_reply) as two:
        prices = prices_for(one.base_url, two.base_url)
        first = get_client("anthropic", cache_dir=tmp_path / "cache", openai_base_url=one.base_url, prices=prices)
        second = get_client("anthropic", cache_dir=tmp_path / "cache", openai_base_url=two.base_url, prices=prices)
        req = request()
        keys = {req.key, first.routed(req).key, second.routed(req).key}
        assert len(keys) == 3  # the vendor's, and one per server
        a = first.complete(req)
        b = second.complete(req)  # same request, same cache folder, other server: sent, not replayed
        again = first.complete(req)
        assert (len(one.bodies), len(two.bodies)) == (1, 1)
        assert not a.cached and not b.cached and again.cached and a.key != b.key
        assert one.auth[0] == "Bearer local-no-key"  # no OPENAI_API_KEY needed on loopback
        assert one.bodies[0]["model"] == "tiny-judge"
        table = first.ledger().set_index("mode")
        assert table.loc["local", "calls"] == 1 and table.loc["local", "cost_usd"] == 0.0
        assert list(table.index) == ["local"]  # the re-read answer was counted when it was sent
        record = first.cache.record(a.key)
        assert record["request"]["endpoint"] == one.base_url and record["endpoint"] == one.base_url


def test_an_unpriced_server_with_a_budget_sends_nothing(tmp_path, no_openai_env):
    with FakeOpenAIServer(ok_reply) as server:
        client = get_client("anthropic", cache_dir=tmp_path / "cache", openai_base_url=server.base_url,
                            session=LLMSession(max_usd=1.0))
        with pytest.raises(UnpricedModelError, match=r"no price for 'openai:tiny-judge'.*params/prices.yaml"):
            client.complete(request())
        assert server.bodies == []


def test_a_remote_server_still_needs_the_key(tmp_path, no_openai_env):
    client = get_client("anthropic", cache_dir=tmp_path / "cache", openai_base_url="http://192.0.2.1:8000/v1")
    with pytest.raises(MissingAPIKeyError, match="OPENAI_API_KEY is not set"):
        client.complete(request())


def test_a_chapter_judges_with_a_local_server_end_to_end(shared_run):
    """Chapter 05 in the session's shared run (on the example data) judged with an OpenAI-routed model
    on a loopback server (``-p llm_base_url``, price 0 from ``--prices``): no key, the server answered
    at most the requests the estimate counted, the ledger says "local" at 0 USD."""
    total = [line for line in shared_run.estimate.splitlines() if line.startswith("total:")][0]
    to_send = int(total.split(" cached, ")[1].split(" to send")[0])
    bodies = shared_run.openai_bodies
    assert 0 < len(bodies) <= to_send and "USD plain 0.00" in total
    assert {b["model"] for b in bodies} == {"tiny-judge"}
    err = shared_run.stderr["05_perturbations"]
    assert f"LLM run total: {len(bodies)} requests sent" in err and "0.00 USD" in err
    nb = nbformat.read(shared_run.notebook("05_perturbations"), as_version=4)
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and "ctx.usage(" in c.source]
    shown = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
    assert "local" in shown and MODEL in shown and "unknown" not in shown
    assert (shared_run.folder("05_perturbations") / "percent_different.csv").exists()


def test_an_endpoint_row_prices_cache_tokens_at_its_input_price():
    table = load_prices({"models": {}, "endpoints": {"http://127.0.0.1:8000/v1": {"input": 1.5, "output": 4}}})
    assert table["endpoints"]["http://127.0.0.1:8000/v1"] == {"input": 1.5, "output": 4.0, "cache_write": 1.5,
                                                             "cache_read": 1.5}


def test_cache_spend_prices_a_local_answer_at_its_endpoint(tmp_path, no_openai_env):
    from mechaudit.llm.ledger import cache_spend

    with FakeOpenAIServer(ok_reply) as server:
        table = prices_for(server.base_url)
        table["endpoints"][server.base_url] = {"input": 2.0, "output": 10.0}
        client = get_client("anthropic", cache_dir=tmp_path / "cache", openai_base_url=server.base_url, prices=table)
        reply = client.complete(request())
    tokens = client.cache.record(reply.key)["response"]["usage"]
    expected = (2.0 * tokens["input_tokens"] + 10.0 * tokens["output_tokens"]) / 1e6
    spent = cache_spend(tmp_path / "cache", 0, load_prices(table))
    assert spent["calls"] == 1 and spent["unpriced"] == set() and expected > 0
    assert spent["cost_usd"] == pytest.approx(expected)  # the vendor's table has no price for this model


def test_a_structured_request_to_a_local_server_sends_the_reply_schema(tmp_path, no_openai_env):
    """A local server gets the reply's JSON schema as ``response_format`` (its decoding is then
    constrained to it); the schema is part of that server's cache key but not of a vendor's."""
    from mechaudit.rules.llm_judge import MechanismVerdict

    schema = MechanismVerdict.model_json_schema()
    with FakeOpenAIServer(ok_reply) as server:
        client = get_client("anthropic", cache_dir=tmp_path / "cache", openai_base_url=server.base_url,
                            prices=prices_for(server.base_url))
        result = client.complete_json(request(), MechanismVerdict)
        plain = client.complete(request("no schema here"))
    assert not result.invalid and result.value.verdict == "same" and not plain.cached
    first, second = server.bodies
    assert first["response_format"] == {"type": "json_schema", "json_schema": {
        "name": "MechanismVerdict", "schema": schema, "strict": True}}
    assert "response_format" not in second  # no schema, nothing constrained
    bare = request()
    shaped = LLMRequest.model_validate({**bare.model_dump(), "json_schema": schema})
    assert shaped.key == bare.key  # a vendor's API: the schema is not sent, the key unchanged
    assert client.routed(shaped).key != client.routed(bare).key
    assert client.cache.record(result.response.key)["request"]["json_schema"] == schema


def test_cached_structured_requests_to_a_local_server_count_as_cached(tmp_path, no_openai_env, capsys):
    """The schema is part of a local server's cache key: complete_many counts the cached answers of
    20 structured requests as cached (no progress bar, which 20 uncached requests would show)."""
    from mechaudit.rules.llm_judge import MechanismVerdict

    requests = [request(f"pair {i}") for i in range(20)]
    with FakeOpenAIServer(ok_reply) as server:
        client = get_client("anthropic", cache_dir=tmp_path / "cache", openai_base_url=server.base_url,
                            prices=prices_for(server.base_url))
        client.complete_many(requests, MechanismVerdict)
        assert "LLM calls" in capsys.readouterr().err  # 20 uncached: a bar
        again = client.complete_many(requests, MechanismVerdict)
    assert all(r.response.cached for r in again) and len(server.bodies) == 20
    assert capsys.readouterr().err == ""


def test_a_local_servers_answer_is_recorded_as_a_chat_completion_and_a_bad_body_names_the_request(
        tmp_path, no_openai_env, monkeypatch):
    import mechaudit.llm.client as client_module
    from mechaudit.llm.errors import APIReplyError

    with FakeOpenAIServer(ok_reply) as server:
        client = get_client("anthropic", cache_dir=tmp_path / "cache", openai_base_url=server.base_url,
                            prices=prices_for(server.base_url))
        response = client.complete(request())
        assert client.cache.record(response.key)["source"] == "chat.completions"

        def not_a_completion(sdk, sent):
            raise ValueError("no choices in the body")

        monkeypatch.setattr(client_module, "openai_send", not_a_completion)
        with pytest.raises(APIReplyError) as caught:
            client.complete(request("another"))
    sent = client.routed(request("another"))
    assert caught.value.key == sent.key
    assert str(caught.value).startswith(f"request {sent.key} (model {MODEL}): the API answered HTTP 200 but "
                                        "no choices in the body; nothing was cached.")
    assert client.cache.get(sent.key) is None
