"""The one fake of the Anthropic HTTP API (Messages + Message Batches) that the tests use.

Tests never mock our own functions: they hand the real SDK an ``httpx.MockTransport`` whose handler
is a :class:`FakeAnthropic` (``client_for``), or point a separate process at the same fake behind a
loopback HTTP server (:class:`FakeAnthropicServer`, reached through ``ANTHROPIC_BASE_URL``, which
the SDK reads itself). ``workflow_reply`` answers every prompt the book's chapters send.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

FAKE_KEY = "sk-ant-" + "test-0123456789abcdef"  # split so no key-like string is tracked
DEFAULT_USAGE = {"input_tokens": 100, "output_tokens": 10, "cache_read_input_tokens": 1000,
                 "cache_creation_input_tokens": 0}


def message_json(text: str, model: str = "claude-opus-4-6", msg_id: str = "msg_0",
                 usage: dict[str, int] | None = None) -> dict:
    """A successful Messages API reply whose single text block is ``text``."""
    return {
        "id": msg_id, "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": usage if usage is not None else {"input_tokens": 1, "output_tokens": 1},
    }


def message_response(text: str, model: str = "claude-opus-4-6", msg_id: str = "msg_0",
                     usage: dict[str, int] | None = None) -> httpx.Response:
    """``message_json`` as an HTTP 200 response for a ``MockTransport`` handler."""
    return httpx.Response(200, json=message_json(text, model, msg_id, usage))


def error_response(status: int, kind: str, message: str) -> httpx.Response:
    """An Anthropic error body (``{"type": "error", "error": {...}}``) with HTTP ``status``."""
    return httpx.Response(status, json={"type": "error", "error": {"type": kind, "message": message}})


def body_text(body: dict) -> str:
    """The system prompt and every message's text of a Messages request body, concatenated."""
    system = body.get("system", "")
    text = system if isinstance(system, str) else "".join(b["text"] for b in system)
    return text + "".join(
        m["content"] if isinstance(m["content"], str) else "".join(b.get("text", "") for b in m["content"])
        for m in body["messages"]
    )


def usage_by_length(body: dict, text: str) -> dict[str, int]:
    """Token counts of about four characters a token: the request's JSON in, ``text`` out."""
    return {"input_tokens": len(json.dumps(body)) // 4, "output_tokens": len(text) // 4}


def fixed_usage(body: dict, text: str) -> dict[str, int]:
    """``DEFAULT_USAGE`` whatever was asked and answered."""
    return dict(DEFAULT_USAGE)


def echo_verdict(body: dict) -> str:
    """The default reply: ``{"same": true, "reason": <first 20 characters of the last message>}``."""
    return json.dumps({"same": True, "reason": body["messages"][-1]["content"][:20]})


def replies_in_order(texts: list[str]) -> Callable[[dict], str]:
    """A reply function giving ``texts`` one per call, in order; the last one repeats."""
    calls = itertools.count()
    return lambda body: texts[min(next(calls), len(texts) - 1)]


class FakeAnthropic:
    """The Anthropic HTTP API in memory: POST /v1/messages and the Message Batches endpoints.

    ``reply(body) -> str`` chooses the assistant text (an exception becomes a 400 reply, not
    retried, and is listed in ``errors``); ``usage(body, text)`` the token counts (default
    :func:`fixed_usage`); ``fail_after`` makes every Messages call after that many raise a connection
    error (a dying network); a batch reports ``in_progress`` for ``polls_in_progress`` polls.
    ``message_bodies`` lists every Messages request body received, ``headers`` every request's
    headers. An instance is an ``httpx.MockTransport`` handler (see ``client_for``).
    """

    def __init__(self, reply: Callable[[dict], str] = echo_verdict, *, usage: Callable[[dict, str], dict] = fixed_usage,
                 fail_after: int | None = None, polls_in_progress: int = 1) -> None:
        self.reply, self.usage = reply, usage
        self.fail_after, self.polls_in_progress = fail_after, polls_in_progress
        self.message_bodies: list[dict] = []
        self.headers: list[httpx.Headers] = []
        self.errors: list[str] = []
        self.batches: dict[str, dict] = {}  # batch id -> {"requests": [...], "polls": n}
        self.batch_result_type: dict[str, str] = {}  # custom_id -> "errored" (default "succeeded")
        self.batch_creates = self.batch_polls = self.result_fetches = 0
        self._lock = threading.Lock()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path, base = request.url.path, f"{request.url.scheme}://{request.url.netloc.decode()}"
        with self._lock:
            self.headers.append(request.headers)
            if request.method == "POST" and path == "/v1/messages":
                return self._message(request)
            if request.method == "POST" and path == "/v1/messages/batches":
                return self._create_batch(request, base)
            if request.method == "GET" and path.startswith("/v1/messages/batches/") and path.endswith("/results"):
                return self._results(path.split("/")[-2])
            if request.method == "GET" and path.startswith("/v1/messages/batches/"):
                return self._poll(path.rsplit("/", 1)[-1], base)
        return error_response(404, "not_found_error", path)

    def _answer(self, body: dict) -> dict | None:
        """The Messages reply JSON for ``body``, or None after recording the reply's exception."""
        try:
            text = self.reply(body)
        except Exception as exc:  # reported to the test through ``errors``
            self.errors.append(repr(exc))
            return None
        return message_json(text, body["model"], f"msg_{len(self.message_bodies)}", self.usage(body, text))

    def _message(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if self.fail_after is not None and len(self.message_bodies) >= self.fail_after:
            raise httpx.ConnectError("fake network died", request=request)
        self.message_bodies.append(body)
        answer = self._answer(body)
        if answer is None:
            return error_response(400, "invalid_request_error", self.errors[-1])
        return httpx.Response(200, json=answer)

    def _batch_json(self, batch_id: str, base: str) -> dict:
        state = self.batches[batch_id]
        ended, n = state["polls"] > self.polls_in_progress, len(state["requests"])
        return {
            "id": batch_id, "type": "message_batch",
            "processing_status": "ended" if ended else "in_progress",
            "request_counts": {"processing": 0 if ended else n, "succeeded": n if ended else 0,
                               "errored": 0, "canceled": 0, "expired": 0},
            "created_at": "2026-11-30T00:00:00Z", "expires_at": "2026-12-01T00:00:00Z",
            "ended_at": "2026-11-30T01:00:00Z" if ended else None,
            "results_url": f"{base}/v1/messages/batches/{batch_id}/results" if ended else None,
            "archived_at": None, "cancel_initiated_at": None,
        }

    def _create_batch(self, request: httpx.Request, base: str) -> httpx.Response:
        self.batch_creates += 1
        batch_id = f"msgbatch_{len(self.batches)}"
        self.batches[batch_id] = {"requests": json.loads(request.content)["requests"], "polls": 0}
        return httpx.Response(200, json=self._batch_json(batch_id, base))

    def _poll(self, batch_id: str, base: str) -> httpx.Response:
        self.batch_polls += 1
        if batch_id not in self.batches:
            return error_response(404, "not_found_error", batch_id)
        self.batches[batch_id]["polls"] += 1
        return httpx.Response(200, json=self._batch_json(batch_id, base))

    def _result(self, item: dict) -> dict:
        if self.batch_result_type.get(item["custom_id"], "succeeded") == "succeeded":
            answer = self._answer(item["params"])
            if answer is not None:
                return {"type": "succeeded", "message": answer}
        return {"type": "errored", "error": {"type": "error", "error": {"type": "api_error", "message": "boom"}}}

    def _results(self, batch_id: str) -> httpx.Response:
        self.result_fetches += 1
        lines = [json.dumps({"custom_id": item["custom_id"], "result": self._result(item)})
                 for item in self.batches[batch_id]["requests"]]
        return httpx.Response(200, content=("\n".join(lines) + "\n").encode(),
                              headers={"content-type": "application/binary"})


def client_for(handler: Callable[[httpx.Request], httpx.Response], cache_dir: Path, **kw: Any):
    """``get_client("anthropic")`` whose SDK talks to ``handler`` (no retries unless ``max_retries``)."""
    from mechaudit.llm import get_client

    kw.setdefault("max_retries", 0)
    http = httpx.Client(transport=httpx.MockTransport(handler))
    return get_client("anthropic", cache_dir=cache_dir, http_client=http, **kw)


# --------------------------------------------------------------------------- a whole-workflow reply
# Valid JSON for every prompt the book's chapters send (workflow proposer/critic, engagement
# labeller, mechanism judges of every rubric, blind tau judge); deterministic.

_JSON_AFTER = re.compile(
    r"(Opening hypothesis to develop|Your current hypothesis|Hypothesis under review):\n(\{.*?\})\n", re.DOTALL
)
_NUMBERED = re.compile(r"^(\d+)\. ", re.MULTILINE)


def _system_text(body: dict) -> str:
    system = body.get("system", "")
    if isinstance(system, list):
        return "\n".join(block.get("text", "") for block in system)
    return system


def _user_text(body: dict) -> str:
    content = body["messages"][0]["content"]
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")
    return content


def _hypothesis_in(user: str, marker: str) -> dict:
    for name, blob in _JSON_AFTER.findall(user):
        if name == marker:
            return json.loads(blob)
    raise ValueError(f"fake: no {marker!r} JSON in the prompt")


def _numbers_between(user: str, start: str, end: str) -> int:
    block = user.split(start, 1)[1].split(end, 1)[0]
    return len(_NUMBERED.findall(block))


def _judge_reply(system: str, user: str) -> str:
    chains = re.findall(r"^Causal chain: (.*)$", user, re.MULTILINE)
    first = [c.split(" -> ")[0] for c in chains]
    verdict = "same" if len(chains) == 2 and first[0] == first[1] else "different"
    reply = {"verdict": verdict, "reason": "compared the initiating events"}
    if "one component at a time" in system:
        reply.update(initiating_event=verdict, route="same", terminal_outcome="same")
    return json.dumps(reply)


def _tau_reply(system: str, user: str) -> str:
    version = re.search(r'"rubric_version": "([^"]+)"', system).group(1)
    verdict = {"judgement": "tie", "strength": "weak", "rationale": "Comparable scope and method."}
    anchors = sorted({int(k) for k in re.findall(r"^REFERENCE A(\d+)$", user, re.MULTILINE)})
    if anchors:
        return json.dumps({"rubric_version": version,
                           "comparisons": [{"anchor_id": f"A{k}", **verdict} for k in anchors]})
    return json.dumps({"rubric_version": version, **verdict})


def workflow_reply(body: dict) -> str:
    """A valid JSON answer to any prompt the book sends (see the comment above); deterministic."""
    system, user = _system_text(body), _user_text(body)
    if "You are the proposer" in system and "Opening hypothesis to develop:" in user:
        return json.dumps(_hypothesis_in(user, "Opening hypothesis to develop"))
    if "You are the proposer" in system and "The critic's demands:" in user:
        current = _hypothesis_in(user, "Your current hypothesis")
        n = _numbers_between(user, "The critic's demands:\n", "\n\n")
        replies = [{"number": k, "reply": f"Step {k} is supported by the evidence pack."} for k in range(1, n + 1)]
        return json.dumps({"replies": replies, "revised": current})
    if "You are the critic" in system:
        chain = _hypothesis_in(user, "Hypothesis under review")["chain"]
        return json.dumps({"demands": [
            {"number": 1, "target_step": chain[0]["id"], "demand": f"Cite evidence for {chain[0]['id']}."},
            {"number": 2, "target_step": None, "demand": "Explain the route to the finding."}]})
    if "engaged with a critic" in system:
        n = _numbers_between(user, "Critic's demands:\n", "\n\nGenerator's replies")
        labels = ["conceded", "answered", "partial", "dropped"]
        return json.dumps({"labels": [{"number": k, "label": labels[(k - 1) % 4]} for k in range(1, n + 1)]})
    if "describe the same mechanism" in system:
        return _judge_reply(system, user)
    if "blind comparison of research ideas" in system:
        return _tau_reply(system, user)
    raise ValueError(f"fake: unknown prompt type (system starts {system[:80]!r})")


# --------------------------------------------------------------------------- the fake over loopback HTTP

class FakeAnthropicServer:
    """``with FakeAnthropicServer() as server:`` serves a :class:`FakeAnthropic` on ``server.base_url``.

    For a separate process (a notebook kernel, a CLI run) that reaches the API through
    ``ANTHROPIC_BASE_URL``. ``fake`` is the fake to serve (default: one answering with ``reply``,
    default :func:`workflow_reply`, and :func:`usage_by_length`); ``bodies`` and ``errors`` are the
    fake's Messages request bodies and reply errors.
    """

    def __init__(self, reply: Callable[[dict], str] = workflow_reply, fake: FakeAnthropic | None = None) -> None:
        self.fake = fake if fake is not None else FakeAnthropic(reply, usage=usage_by_length)
        served = self.fake

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _serve(self) -> None:
                content = self.rfile.read(int(self.headers.get("content-length") or 0))
                request = httpx.Request(self.command, f"http://{self.headers['host']}{self.path}",
                                        headers=list(self.headers.items()), content=content)
                try:
                    response = served(request)
                except httpx.TransportError:  # fail_after: drop the connection
                    self.close_connection = True
                    return
                self.send_response(response.status_code)
                self.send_header("content-type", response.headers.get("content-type", "application/json"))
                self.send_header("content-length", str(len(response.content)))
                self.end_headers()
                self.wfile.write(response.content)

            do_GET = do_POST = _serve

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def bodies(self) -> list[dict]:
        return self.fake.message_bodies

    @property
    def errors(self) -> list[str]:
        return self.fake.errors

    def __enter__(self) -> FakeAnthropicServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
