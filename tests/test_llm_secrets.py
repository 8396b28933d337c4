"""Secrets: with a fake key in the environment, the key ends up in no output, log or cache file.

The runs happen in subprocesses (as a reader's notebook or CLI run would), with the SDK's own debug
logging switched on; the fake API is the in-memory ``FakeAPI`` of ``test_llm`` (through
``httpx.MockTransport``) or, for the CLI, the same fake behind a loopback HTTP server.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import httpx

from mechaudit.paths import REPO_ROOT

TESTS_DIR = Path(__file__).resolve().parent
SECRET = "sk-ant-" + "test-SECRETc0ffee0123456789"  # split so no key-like string is tracked

SCRIPT = textwrap.dedent(
    """
    import json, logging, sys
    from pathlib import Path
    import httpx
    from pydantic import BaseModel
    from test_llm import FakeAPI, PRICES, req
    from mechaudit.llm import get_client

    out = Path(sys.argv[1])
    logging.basicConfig(filename=out / "run.log", level=logging.DEBUG, force=True)

    class Verdict(BaseModel):
        same: bool
        reason: str

    replies = iter(['not json'] + ['{"same": true, "reason": "x"}'] * 100)
    fake = FakeAPI(reply=lambda body: next(replies), polls_in_progress=1)
    http = httpx.Client(transport=httpx.MockTransport(fake))
    client = get_client("anthropic", cache_dir=out / "cache", http_client=http, max_retries=0, prices=PRICES)
    results = client.complete_many([req(f"pair {i}") for i in range(3)], schema=Verdict, progress=True, summary=True)
    client.complete_many([req(f"batch pair {i}") for i in range(3)], batch=True, poll_interval=0, progress=True)
    (out / "verdicts.jsonl").write_text("\\n".join(r.model_dump_json() if hasattr(r, "model_dump_json")
                                        else json.dumps({"same": r.value.same}) for r in results))
    client.ledger().to_csv(out / "ledger.csv")
    print(repr(client), client.sdk().messages.batches.retrieve("msgbatch_0"))
    get_client("replay", cache_dir=out / "cache").complete(req("never recorded"))  # traceback to stderr
    """
)


def all_text(folder: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())


def test_key_never_written_by_a_run(tmp_path):
    env = {**os.environ, "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_LOG": "debug",
           "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), os.environ.get("PYTHONPATH", "")])}
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run([sys.executable, str(script), str(out)], env=env, capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 1 and "ReplayMissError" in proc.stderr, proc.stderr[-2000:]
    files = {p.name for p in out.rglob("*")}
    assert {"responses.jsonl", "batches.jsonl", "run.log", "verdicts.jsonl", "ledger.csv"} <= files
    assert "Request options" in (out / "run.log").read_text()  # the SDK's debug logging was on
    for text in (all_text(out), proc.stdout, proc.stderr):
        assert SECRET not in text and SECRET[-12:] not in text
    assert "authorization" not in (out / "cache" / "responses.jsonl").read_text().lower()


class _Bridge(http.server.BaseHTTPRequestHandler):
    """Serves a FakeAPI over loopback HTTP (for subprocess CLI runs)."""

    fake = None

    def _serve(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        request = httpx.Request(self.command, f"http://{self.headers['host']}{self.path}",
                                headers=list(self.headers.items()), content=body)
        response = self.fake(request)
        self.send_response(response.status_code)
        self.send_header("content-type", response.headers.get("content-type", "application/json"))
        self.send_header("content-length", str(len(response.content)))
        self.end_headers()
        self.wfile.write(response.content)

    do_GET = do_POST = _serve

    def log_message(self, *args) -> None:  # keep pytest output clean
        pass


def test_cli_judge_with_fake_key_leaves_no_trace(tmp_path):
    from test_llm import FakeAPI

    pairs = tmp_path / "pairs.jsonl"
    hyp = {"id": "h1", "instance": "A", "statement": "A raises B.", "explanation": "A acts on B via C.",
           "chain": [{"id": "A", "text": "A"}, {"id": "C", "text": "C"}, {"id": "B", "text": "B"}]}
    pairs.write_text("\n".join(json.dumps({"kind": "wording_only", "original": hyp,
                                           "variant": {**hyp, "id": f"h{i}", "statement": f"A raises B ({i})."},
                                           "valid": True}) for i in (2, 3)) + "\n")
    fake = _Bridge.fake = FakeAPI(reply=lambda body: '{"verdict": "same", "reason": "x"}', polls_in_progress=1)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Bridge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {**os.environ, "ANTHROPIC_API_KEY": SECRET, "ANTHROPIC_LOG": "debug",
           "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}"}

    def judge(*extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "mechaudit.cli", "judge", "--pairs", str(pairs), "--rule", "llm",
             "--no-early-stop", *extra],  # every planned call, so the three runs send the same requests
            env=env, capture_output=True, text=True, timeout=300, cwd=REPO_ROOT,
        )

    try:
        direct = judge(
            "--backend", "anthropic", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "v1.jsonl")
        )
        n_direct = len(fake.message_bodies)
        batch = judge("--backend", "anthropic", "--batch", "--poll-interval", "0",
                      "--cache-dir", str(tmp_path / "cache_batch"), "--out", str(tmp_path / "v2.jsonl"))
        replay = judge(
            "--backend", "replay", "--cache-dir", str(tmp_path / "cache_batch"), "--out", str(tmp_path / "v3.jsonl")
        )
    finally:
        server.shutdown()
    for proc in (direct, batch, replay):
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert n_direct == 6  # 2 pairs x 3 calls (ab, ab, ba), no repairs
    assert len(fake.message_bodies) == n_direct and fake.batch_creates == 1  # batch run: no Messages call
    assert len(fake.batches["msgbatch_0"]["requests"]) == 6
    verdicts = [[json.loads(line) for line in (tmp_path / f"v{i}.jsonl").read_text().splitlines()] for i in (1, 2, 3)]
    assert verdicts[0] == verdicts[1] == [{**v, "backend": "anthropic"} for v in verdicts[2]]
    assert {v["backend"] for v in verdicts[2]} == {"replay"}
    assert ([(v["same"], v["n_same"], v["decided"], v["backend"]) for v in verdicts[0]]
            == [(True, 3, True, "anthropic")] * 2)
    assert "LLM usage" in direct.stderr and "batch" in batch.stderr
    for text in (all_text(tmp_path), *(p.stdout + p.stderr for p in (direct, batch, replay))):
        assert SECRET not in text
