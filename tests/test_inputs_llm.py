"""Requests that hang or never come back: a ``--timeout`` for requests, answers cached as they
arrive while another request hangs, and a run's summary that says which requests an earlier,
interrupted run had already sent (and so were likely paid twice).

The SDK talks to an in-memory handler or, where a real socket is needed (a timeout), to the fake API
on loopback; no chapter runs (``book.execute.execute_chapter`` is replaced where ``execute`` is used).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import anthropic
import httpx
import pytest
from fake_anthropic import FAKE_KEY, FakeAnthropic, client_for, error_response, message_response
from test_inputs import one_error

from mechaudit.book import execute as book_execute
from mechaudit.book.account import RunAccount
from mechaudit.cli import main
from mechaudit.errors import MechauditError
from mechaudit.llm import LLMRequest, get_client
from mechaudit.llm.cache import ResponseCache
from mechaudit.llm.ledger import SENT_LOG, record_sent, unanswered
from mechaudit.llm.providers import DEFAULT_TIMEOUT, TIMEOUT_ENV, request_timeout

MODEL = "claude-sonnet-4-6"


def req(i: int) -> LLMRequest:
    return LLMRequest(model=MODEL, system="hang tests", messages=[{"role": "user", "content": f"question {i}"}],
                      max_tokens=16)


# ---------------------------------------------------------------- --timeout


def test_timeout_comes_from_the_argument_the_environment_or_the_default(monkeypatch):
    monkeypatch.delenv(TIMEOUT_ENV, raising=False)
    assert request_timeout() == DEFAULT_TIMEOUT == 600.0
    monkeypatch.setenv(TIMEOUT_ENV, "2.5")
    assert request_timeout() == 2.5
    assert request_timeout(7) == 7.0  # the argument wins
    for bad in ("0", "-1", "nan", "inf", "soon"):
        monkeypatch.setenv(TIMEOUT_ENV, bad)
        with pytest.raises(MechauditError, match=f"field '{TIMEOUT_ENV}': must be a number of seconds > 0"):
            request_timeout()
    with pytest.raises(MechauditError, match="field 'timeout'"):
        request_timeout(0.0)


def test_the_client_hands_its_timeout_to_the_sdk(monkeypatch, tmp_path, api_key):
    monkeypatch.setenv(TIMEOUT_ENV, "3.5")
    client = get_client("anthropic", cache_dir=tmp_path)  # as a chapter's context makes it, in its kernel
    assert client.timeout == 3.5 and client.sdk().timeout == 3.5
    assert get_client("anthropic", cache_dir=tmp_path, timeout=9.0).sdk().timeout == 9.0


class _SilentServer:
    """A loopback HTTP server that reads each request and never answers (until released: then it just
    closes the connection)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        release = self.release

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                release.wait(timeout=30)
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self._server.shutdown()
        self._server.server_close()


def test_a_request_longer_than_the_timeout_fails_instead_of_hanging(monkeypatch, tmp_path):
    server = _SilentServer()
    try:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        client = get_client("anthropic", cache_dir=tmp_path, max_retries=0, timeout=0.5)
        with pytest.raises(anthropic.APITimeoutError):
            client.complete(req(0))
    finally:
        server.close()
    assert req(0).key not in client.cache
    assert unanswered(tmp_path) == {req(0).key}  # sent, never answered


@pytest.fixture
def kernels(monkeypatch, tmp_path):
    started = []

    def fake(chapter, parameters=None, out_dir=None, *, env=None, **_):
        started.append((chapter.stem, dict(env or {})))
        return tmp_path / f"{chapter.stem}.ipynb"

    monkeypatch.setattr(book_execute, "execute_chapter", fake)
    return started


def test_execute_timeout_reaches_the_kernels(kernels):
    assert main(["execute", "01_problem", "--timeout", "2.5"]) == 0
    assert kernels[0][1][TIMEOUT_ENV] == "2.5"
    kernels.clear()
    assert main(["execute", "01_problem"]) == 0
    assert TIMEOUT_ENV not in kernels[0][1]


@pytest.mark.parametrize("value", ["0", "-3", "nan"])
def test_a_bad_timeout_is_one_line_before_any_kernel(capsys, kernels, value):
    one_error(capsys, ["execute", "01_problem", "--timeout", value],
              "field '--timeout': must be a number of seconds > 0")
    assert kernels == []


def test_judge_takes_a_timeout_too(capsys, tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("", encoding="utf-8")
    one_error(capsys, ["judge", "--pairs", str(pairs), "--rule", "llm", "--timeout", "0"], "field '--timeout'")


# ---------------------------------------------------------------- a hung request does not hold back the others


def test_answers_are_cached_as_they_arrive_while_another_request_hangs(tmp_path, api_key):
    release = threading.Event()

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        text = body["messages"][-1]["content"]
        if text == "question 1":
            release.wait(timeout=60)
        return message_response("answer to " + text, body["model"])

    client = client_for(handler, tmp_path, max_concurrency=4)
    out: list = []
    worker = threading.Thread(target=lambda: out.extend(client.complete_many([req(i) for i in range(4)])))
    worker.start()
    try:
        cache = ResponseCache(tmp_path)  # another reader of the same folder, as a second process would be
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(req(i).key in cache for i in (0, 2, 3)):
            time.sleep(0.05)
        assert all(req(i).key in cache for i in (0, 2, 3)), "the answers that came back were not cached"
        assert req(1).key not in cache and worker.is_alive()  # still waiting for the hung one
    finally:
        release.set()
        worker.join(timeout=60)
    assert [r.text for r in out] == [f"answer to question {i}" for i in range(4)]


# ---------------------------------------------------------------- an interrupted run's requests, sent again


def _account(folder) -> tuple[RunAccount, SimpleNamespace]:
    full = {"ch": {"backend": "anthropic", "cache_dir": str(folder), "max_usd": None, "llm_batch": False}}
    return RunAccount(plans=[], params_file=None, overrides={}, full=full), SimpleNamespace(stem="ch")


def test_a_resumed_run_says_which_requests_an_interrupted_run_had_sent(tmp_path, api_key):
    folder = tmp_path / "cache"
    client = client_for(FakeAnthropic(), folder)
    client.complete(req(0))  # the earlier run: one answer arrived ...
    record_sent(folder, req(1).key)  # ... two were in flight when it was stopped
    record_sent(folder, req(2).key)
    assert unanswered(folder) == {req(1).key, req(2).key}
    run, chapter = _account(folder)
    fake = FakeAnthropic()
    with run.chapter(chapter):  # the resumed run
        client_for(fake, folder).complete_many([req(0), req(1), req(2), req(3)])
    assert len(fake.message_bodies) == 3  # 1, 2 again and the new 3; 0 from the cache
    assert run.totals["calls"] == 3 and run.totals["resent"] == 2 and run.totals["unanswered"] == 0
    line = run.total_line()
    assert "3 requests sent" in line
    assert "2 of them had been sent by an earlier run that got no answer for them" in line
    assert "likely paid twice" in line and "got no answer (an error" not in line


def test_a_run_counts_the_requests_it_sent_without_an_answer(tmp_path, api_key):
    folder = tmp_path / "cache"

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if body["messages"][-1]["content"] == "question 1":
            return error_response(529, "overloaded_error", "busy")
        return message_response("ok", body["model"])

    run, chapter = _account(folder)
    with pytest.raises(anthropic.APIStatusError), run.chapter(chapter):
        client_for(handler, folder, max_concurrency=1).complete_many([req(0), req(1)])
    assert run.totals["unanswered"] == 1 and run.totals["resent"] == 0
    assert "1 request(s) sent got no answer (an error, or in flight when the run stopped" in run.total_line()
    # the log holds one line per request sent, nothing for answers read from the cache
    before = (folder / SENT_LOG).read_text(encoding="ascii").split()
    client_for(handler, folder).complete(req(0))
    assert (folder / SENT_LOG).read_text(encoding="ascii").split() == before


def test_a_run_without_interruptions_says_nothing_more(tmp_path, api_key):
    folder = tmp_path / "cache"
    run, chapter = _account(folder)
    with run.chapter(chapter):
        client_for(FakeAnthropic(), folder).complete_many([req(0), req(1)])
    line = run.total_line()
    assert run.totals["calls"] == 2 and "earlier run" not in line and "got no answer" not in line
