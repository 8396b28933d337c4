"""``mechaudit judge`` options of the rules: orders, early stop, the no-rubric overlap threshold."""

from __future__ import annotations

import json

import pytest
from fake_anthropic import FakeAnthropic, client_for
from rule_hypotheses import hyp

from mechaudit.cli import main


@pytest.fixture
def pairs_file(tmp_path):
    a = hyp("a", ["KRAS", "MEK", "ERK", "PROLIF"], statement="Alpha statement.")
    b = hyp("b", ["EGFR", "MEK", "ERK", "PROLIF"], statement="Beta statement.")
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({"a": a.model_dump(mode="json"), "b": b.model_dump(mode="json")}) + "\n")
    return path


def test_reference_none_jaccard_threshold(pairs_file, capsys):
    # the chains share 3 of 5 step ids: Jaccard 0.6
    for threshold, same in ((0.6, True), (0.7, False)):
        assert main(["judge", "--pairs", str(pairs_file), "--rule", "reference", "--rubric", "none",
                     "--jaccard-threshold", str(threshold), "--quiet"]) == 0
        assert json.loads(capsys.readouterr().out)["same"] is same


def test_llm_orders_and_early_stop(pairs_file, tmp_path, monkeypatch, capsys, api_key):
    fake = FakeAnthropic(lambda body: json.dumps({"verdict": "different", "reason": "other trigger"}))
    client = client_for(fake, tmp_path / "cache")
    monkeypatch.setattr("mechaudit.llm.get_client", lambda *a, **k: client)
    instances = tmp_path / "instances.yaml"
    instances.write_text("instances:\n  - id: I1\n    title: t\n    finding: a finding\n    terminal_id: PROLIF\n"
                         "    evidence: [e]\n    openings: [a]\n")
    base = ["judge", "--pairs", str(pairs_file), "--rule", "llm", "--backend", "anthropic",
            "--instances", str(instances), "--quiet"]
    assert main(base + ["--orders", "ab,ab,ba", "--early-stop"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["same"] is False and out["n_calls"] == 2 and len(fake.headers) == len(fake.message_bodies) == 2
    assert main(base + ["--orders", "ab,xy"]) == 1
    assert "'ab' or 'ba'" in capsys.readouterr().err


def test_embedding_uses_the_disk_store(pairs_file, tmp_path, monkeypatch, capsys):
    store = tmp_path / "emb"
    args = ["judge", "--pairs", str(pairs_file), "--rule", "embedding", "--embedding-cache", str(store), "--quiet"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert any(store.iterdir())

    from mechaudit.rules import embedding

    loads = []

    def refuse(*a, **k):
        loads.append(1)
        raise ValueError("model refused by the test")

    monkeypatch.setattr(embedding, "load_model", refuse)
    assert main(args) == 0
    assert capsys.readouterr().out == first and loads == []  # every embedding came from the store
    assert main(args + ["--no-embedding-cache"]) != 0
    assert loads == [1]  # without the store the model is needed


def _llm_judge(pairs_file, tmp_path, monkeypatch, reply):
    """``mechaudit judge --rule llm`` argv over a fake Anthropic API answering ``reply(body)``; the fake."""
    fake = FakeAnthropic(reply)
    client = client_for(fake, tmp_path / "cache")
    monkeypatch.setattr("mechaudit.llm.get_client", lambda *a, **k: client)
    instances = tmp_path / "instances.yaml"
    instances.write_text("instances:\n  - id: I1\n    title: t\n    finding: a finding\n    terminal_id: PROLIF\n"
                         "    evidence: [e]\n    openings: [a]\n")
    return fake, client, ["judge", "--pairs", str(pairs_file), "--rule", "llm", "--backend", "anthropic",
                          "--instances", str(instances), "--quiet"]


def test_llm_verdict_lines_carry_the_votes_with_sorted_keys(pairs_file, tmp_path, monkeypatch, capsys, api_key):
    _, _, argv = _llm_judge(pairs_file, tmp_path, monkeypatch,
                            lambda body: json.dumps({"verdict": "same", "reason": "one trigger"}))
    assert main(argv) == 0
    out, err = capsys.readouterr()
    line = out.splitlines()[0]
    verdict = json.loads(line)
    assert list(verdict) == sorted(verdict)  # sort_keys
    assert verdict["decided"] is True and verdict["same"] is True
    assert {k: verdict[k] for k in ("n_valid", "n_invalid", "n_same", "n_different")} == {
        "n_valid": 2, "n_invalid": 0, "n_same": 2, "n_different": 0}
    assert err == ""


def test_an_undecided_pair_is_null_and_counted_on_stderr(pairs_file, tmp_path, monkeypatch, capsys, api_key):
    _, _, argv = _llm_judge(pairs_file, tmp_path, monkeypatch, lambda body: "no verdict here")
    assert main(argv) == 0
    out, err = capsys.readouterr()
    verdict = json.loads(out)
    assert verdict["same"] is None and verdict["decided"] is False and verdict["n_valid"] == 0
    assert err.strip().splitlines()[-1] == ('mechaudit: warning: 1 pair(s) undecided (tie or no valid verdict): '
                                            '"same": null')


def test_batch_prefetches_the_rules_requests(pairs_file, tmp_path, monkeypatch, capsys, api_key):
    _, client, argv = _llm_judge(pairs_file, tmp_path, monkeypatch,
                                 lambda body: json.dumps({"verdict": "different", "reason": "other trigger"}))
    calls = []
    monkeypatch.setattr(client, "prefetch_batch", lambda requests, **kw: calls.append((list(requests), kw)))
    assert main(argv + ["--batch", "--poll-interval", "0.5"]) == 0
    ((requests, kw),) = calls
    assert kw == {"poll_interval": 0.5, "progress": False}
    assert len(requests) == 3 and {r.model for r in requests} == {"claude-opus-4-6"}  # orders ab, ab, ba of one pair
    assert json.loads(capsys.readouterr().out)["same"] is False
