"""A fake OpenAI-compatible server (``POST /v1/chat/completions``) on loopback, as vLLM, Ollama and
llama.cpp's server expose one. It answers every prompt the book sends (through
``fake_anthropic.workflow_reply``, given the chat messages in the Messages API's shape) and records
each request body and its ``Authorization`` header. Loopback only: it binds 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fake_anthropic import workflow_reply


def as_messages_body(chat: dict) -> dict:
    """A chat-completions body in the Messages API's shape (system apart, user turns as messages)."""
    system = "\n".join(m["content"] for m in chat["messages"] if m["role"] == "system")
    turns = [{"role": m["role"], "content": m["content"]} for m in chat["messages"] if m["role"] != "system"]
    return {"model": chat["model"], "system": system, "messages": turns}


def completion_json(text: str, model: str, n: int) -> dict:
    """A chat completion whose one choice says ``text``, with token counts."""
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}}


class FakeOpenAIServer:
    """``with FakeOpenAIServer() as server:`` serves chat completions on ``server.base_url``
    (``http://127.0.0.1:PORT/v1``); ``bodies`` and ``auth`` list what it received, in order."""

    def __init__(self, reply=workflow_reply) -> None:
        self.bodies: list[dict] = []
        self.auth: list[str | None] = []
        lock, outer = threading.Lock(), self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self.send_error(404)
                    return
                with lock:
                    outer.bodies.append(body)
                    outer.auth.append(self.headers.get("authorization"))
                    n = len(outer.bodies)
                payload = json.dumps(completion_json(reply(as_messages_body(body)), body["model"], n)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
