"""The Anthropic Messages API as the tests fake it: one reply body, built in one place.

Tests never mock our own functions; they hand the SDK an ``httpx.MockTransport`` whose handler
answers with these bodies.
"""

from __future__ import annotations

import httpx


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


# --------------------------------------------------------------------------- a whole-workflow fake
# A real HTTP server on 127.0.0.1 that answers every prompt the book's chapters send (workflow
# proposer/critic, engagement labeller, mechanism judges of every rubric, blind tau judge) with
# valid JSON. Notebooks run in a separate kernel process; they reach it through ANTHROPIC_BASE_URL,
# which the anthropic SDK reads itself.

import json  # noqa: E402
import re  # noqa: E402
import threading  # noqa: E402
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402

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


def workflow_reply(body: dict) -> str:
    """A valid JSON answer to any prompt the book sends (see module comment); deterministic."""
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
        chains = re.findall(r"^Causal chain: (.*)$", user, re.MULTILINE)
        first = [c.split(" -> ")[0] for c in chains]
        verdict = "same" if len(chains) == 2 and first[0] == first[1] else "different"
        reply = {"verdict": verdict, "reason": "compared the initiating events"}
        if "one component at a time" in system:
            reply.update(initiating_event=verdict, route="same", terminal_outcome="same")
        return json.dumps(reply)
    if "blind comparison of research ideas" in system:
        version = re.search(r'"rubric_version": "([^"]+)"', system).group(1)
        verdict = {"judgement": "tie", "strength": "weak", "rationale": "Comparable scope and method."}
        anchors = sorted({int(k) for k in re.findall(r"^REFERENCE A(\d+)$", user, re.MULTILINE)})
        if anchors:
            return json.dumps({"rubric_version": version,
                               "comparisons": [{"anchor_id": f"A{k}", **verdict} for k in anchors]})
        return json.dumps({"rubric_version": version, **verdict})
    raise ValueError(f"fake: unknown prompt type (system starts {system[:80]!r})")


class FakeAnthropicServer:
    """``with FakeAnthropicServer() as server:`` serves POST /v1/messages on ``server.base_url``.

    ``reply(body) -> str`` picks the text (default :func:`workflow_reply`); ``raw(body)`` may return
    ``(status, content_type, bytes)`` to send instead. ``bodies`` lists every request body received.
    """

    def __init__(self, reply=workflow_reply, raw=None) -> None:
        self.reply, self.raw = reply, raw
        self.bodies: list[dict] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
                with fake._lock:
                    fake.bodies.append(body)
                    n = len(fake.bodies)
                if self.path.rstrip("/") != "/v1/messages":
                    return self._send(
                        404,
                        "application/json",
                        b'{"type":"error","error":{"type":"not_found_error","message":"fake: only /v1/messages"}}',
                    )
                if fake.raw is not None and (answer := fake.raw(body)) is not None:
                    return self._send(*answer)
                try:
                    text = fake.reply(body)
                except Exception as exc:  # report to the test, answer 400 (not retried)
                    fake.errors.append(repr(exc))
                    return self._send(400, "application/json", json.dumps(
                        {"type": "error", "error": {"type": "invalid_request_error", "message": repr(exc)}}).encode())
                usage = {"input_tokens": len(json.dumps(body)) // 4, "output_tokens": len(text) // 4}
                self._send(
                    200, "application/json", json.dumps(message_json(text, body["model"], f"msg_{n}", usage)).encode()
                )

            def _send(self, status: int, content_type: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeAnthropicServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
