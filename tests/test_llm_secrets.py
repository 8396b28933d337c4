"""Secrets: with a fake key in the environment, the key ends up in no output, log or cache file.

Runs happen in this process where they can, with the SDK's debug logging switched on as
``ANTHROPIC_LOG=debug`` would; one CLI run is a real subprocess (the key read from a fresh process's
environment, the SDK's logging set up by that variable, everything the process writes to its
stdout and stderr). The fake API is ``fake_anthropic.FakeAnthropic``, in memory or behind the
loopback ``FakeAnthropicServer``.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic, FakeAnthropicServer, client_for, replies_in_order
from pydantic import BaseModel

from mechaudit.cli import main
from mechaudit.llm import LLMRequest, ReplayMissError, get_client
from mechaudit.paths import REPO_ROOT

SECRET = "sk-ant-" + "test-SECRETc0ffee0123456789"  # split so no key-like string is tracked


class Verdict(BaseModel):
    same: bool
    reason: str


def req(text: str) -> LLMRequest:
    return LLMRequest(model="claude-opus-4-6", system="Compare the two hypotheses. " * 20, version="secrets-v1",
                      messages=[{"role": "user", "content": text}])


@contextmanager
def sdk_debug_logging(handler: logging.Handler):
    """Every log record at DEBUG and above to ``handler`` (as ``logging.basicConfig(level=DEBUG)``),
    the SDK's loggers at DEBUG (as ``ANTHROPIC_LOG=debug``); restored afterwards."""
    handler.setFormatter(logging.Formatter("[%(asctime)s - %(name)s:%(lineno)d - %(levelname)s] %(message)s"))
    loggers = [logging.getLogger(name) for name in ("", "anthropic", "httpx", "httpx2")]
    levels = [logger.level for logger in loggers]
    loggers[0].addHandler(handler)
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        loggers[0].removeHandler(handler)
        handler.close()
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def all_text(folder: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())


def test_key_never_written_by_a_run(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    out = tmp_path / "out"
    out.mkdir()
    fake = FakeAnthropic(replies_in_order(["not json", '{"same": true, "reason": "x"}']))
    with sdk_debug_logging(logging.FileHandler(out / "run.log")):
        client = client_for(fake, out / "cache")
        results = client.complete_many([req(f"pair {i}") for i in range(3)], schema=Verdict, progress=True,
                                       summary=True)
        client.complete_many([req(f"batch pair {i}") for i in range(3)], batch=True, poll_interval=0, progress=True)
        lines = [json.dumps({"same": r.value.same, "result": repr(r)}) for r in results]
        (out / "verdicts.jsonl").write_text("\n".join(lines))
        client.ledger().to_csv(out / "ledger.csv")
        print(repr(client), client.sdk().messages.batches.retrieve("msgbatch_0"))
        with pytest.raises(ReplayMissError) as err:
            get_client("replay", cache_dir=out / "cache").complete(req("never recorded"))
    print("".join(traceback.format_exception(err.value)), file=sys.stderr)  # as an uncaught error would
    captured = capfd.readouterr()
    assert "ReplayMissError" in captured.err and fake.errors == []
    assert len(fake.message_bodies) == 4 and fake.batch_creates == 1  # one repair, then one batch
    files = {p.name for p in out.rglob("*")}
    assert {"responses.jsonl", "batches.jsonl", "run.log", "verdicts.jsonl", "ledger.csv"} <= files
    assert "Request options" in (out / "run.log").read_text()  # the SDK's debug logging was on
    for text in (all_text(out), captured.out, captured.err):
        assert SECRET not in text and SECRET[-12:] not in text
    assert "authorization" not in (out / "cache" / "responses.jsonl").read_text().lower()


def write_pairs(path: Path) -> Path:
    hyp = {"id": "h1", "instance": "A", "statement": "A raises B.", "explanation": "A acts on B via C.",
           "chain": [{"id": "A", "text": "A"}, {"id": "C", "text": "C"}, {"id": "B", "text": "B"}]}
    path.write_text("\n".join(json.dumps({"kind": "wording_only", "original": hyp,
                                          "variant": {**hyp, "id": f"h{i}", "statement": f"A raises B ({i})."},
                                          "valid": True}) for i in (2, 3)) + "\n")
    return path


def test_cli_judge_with_fake_key_leaves_no_trace(tmp_path, monkeypatch, capfd):
    pairs = write_pairs(tmp_path / "pairs.jsonl")
    fake = FakeAnthropic(reply=lambda body: '{"verdict": "same", "reason": "x"}')
    # every planned call (no early stop), so the three runs send the same requests
    judge = ["judge", "--pairs", str(pairs), "--rule", "llm", "--no-early-stop"]
    with FakeAnthropicServer(fake=fake) as server:
        env = {**os.environ, "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_LOG": "debug",
               "ANTHROPIC_BASE_URL": server.base_url}
        direct = subprocess.run(  # the one real process: key and logging set up from its environment
            [sys.executable, "-m", "mechaudit.cli", *judge, "--backend", "anthropic",
             "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "v1.jsonl")],
            env=env, capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
        )
        assert direct.returncode == 0, direct.stderr[-2000:]
        n_direct = len(fake.message_bodies)
        for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
            monkeypatch.setenv(name, env[name])
        with sdk_debug_logging(logging.StreamHandler(sys.stderr)):
            batch_code = main([*judge, "--backend", "anthropic", "--batch", "--poll-interval", "0",
                               "--cache-dir", str(tmp_path / "cache_batch"), "--out", str(tmp_path / "v2.jsonl")])
            batch = capfd.readouterr()
            replay_code = main([*judge, "--backend", "replay", "--cache-dir", str(tmp_path / "cache_batch"),
                                "--out", str(tmp_path / "v3.jsonl")])
            replay = capfd.readouterr()
    assert (batch_code, replay_code) == (0, 0), batch.err[-2000:] + replay.err[-2000:]
    assert n_direct == 6  # 2 pairs x 3 calls (ab, ab, ba), no repairs
    assert len(fake.message_bodies) == n_direct and fake.batch_creates == 1  # batch run: no Messages call
    assert len(fake.batches["msgbatch_0"]["requests"]) == 6
    verdicts = [[json.loads(line) for line in (tmp_path / f"v{i}.jsonl").read_text().splitlines()] for i in (1, 2, 3)]
    assert verdicts[0] == verdicts[1] == [{**v, "backend": "anthropic"} for v in verdicts[2]]
    assert {v["backend"] for v in verdicts[2]} == {"replay"}
    assert ([(v["same"], v["n_same"], v["decided"], v["backend"]) for v in verdicts[0]]
            == [(True, 3, True, "anthropic")] * 2)
    assert "LLM usage" in direct.stderr and "batch" in batch.err
    assert "Request options" in direct.stderr + batch.err  # the SDK's debug logging was on
    for text in (all_text(tmp_path), direct.stdout + direct.stderr, batch.out + batch.err, replay.out + replay.err):
        assert SECRET not in text
