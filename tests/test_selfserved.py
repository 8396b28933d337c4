"""The self-served real LLM judge (``make local-judge``): its recorded answers in ``data/llm_cache``
replay offline through the judge's own path, with no server; a request never recorded is reported,
never answered."""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from mechaudit.book import selfserved
from mechaudit.book.ch05_perturbations import judge_with_llm, setup
from mechaudit.llm.request import LLMRequest
from mechaudit.report import provenance
from mechaudit.report.comparison import compare
from mechaudit.rules import LLMJudge
from mechaudit.rules.llm_judge import StepMechanismVerdict, majority

SLICE = 16  # pairs of the reworded suite


def test_a_slice_of_the_recorded_answers_replays_without_a_server():
    own = selfserved.recorded(False)
    assert own is not None and own.client.openai_base_url == selfserved.ENDPOINT
    s = setup(suite="reworded")
    pairs = s.pairs[:SLICE]
    judge = LLMJudge(model=own.model, client=own.client, instances=s.bench.instances)
    calls = judge.judge(pairs)
    assert len(calls) >= 2 * SLICE and calls["cached"].all()  # every answer from the cache
    assert set(own.client.ledger()["mode"]) == {"cache"}  # a replay client never sends
    verdicts = []
    for key in calls["key"]:
        record = own.client.cache.record(key)
        assert record["endpoint"] == selfserved.ENDPOINT and record["request"]["temperature"] == 0.0
        assert record["request"]["json_schema"]["title"] == "MechanismVerdict"
        verdicts.append(json.loads(record["response"]["text"])["verdict"])  # the server's own words
    assert list(calls["verdict"]) == verdicts
    decided = judge_with_llm(pairs, s.bench.instances, client=own.client, model=own.model)
    assert list(decided.same) == list(majority(calls, len(pairs))["same"])


def test_a_request_never_recorded_is_not_answered():
    own = selfserved.recorded(False)
    ask = LLMRequest(model=own.model, messages=[{"role": "user", "content": "never asked"}])
    assert own.replay(lambda client: client.complete(ask)) is None


def test_only_an_offline_run_on_the_shipped_benchmark_replays_it(tmp_path):
    assert selfserved.recorded(True) is None  # an LLM backend: the chapter's own judge answers
    assert selfserved.recorded(False, tmp_path) is None  # other data: nothing was recorded for it


def local_judge_script():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import local_judge

    return local_judge


def one_slot_server(busy: list[int]) -> ThreadingHTTPServer:
    """A fake one-slot judge server on a free loopback port: answers its port and the request body
    after 0.05 s, records in ``busy`` how many requests it was answering at once, and answers 503
    to the path /fail."""
    lock, active = threading.Lock(), [0]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with lock:
                active[0] += 1
                busy.append(active[0])
            time.sleep(0.05)
            with lock:
                active[0] -= 1
            data = json.dumps({"port": self.server.server_address[1], "body": body.decode()}).encode()
            self.send_response(503 if self.path == "/fail" else 200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_the_front_hands_each_request_to_a_free_server_and_passes_replies_through():
    """``LOCAL_JUDGE_SERVERS``: 8 requests 4 at a time through the front reach both one-slot servers,
    never two at once on one server; each reply (and an error status) comes back unchanged."""
    local_judge = local_judge_script()
    busy: list[int] = []
    backends = [one_slot_server(busy), one_slot_server(busy)]
    ports = [b.server_address[1] for b in backends]
    front = local_judge.serve_balanced(ports, front_port=0)
    url = f"http://127.0.0.1:{front.server_address[1]}"

    def post(i, path="/v1/chat/completions"):
        request = urllib.request.Request(url + path, json.dumps({"i": i}).encode(), method="POST")
        with urllib.request.urlopen(request, timeout=10) as r:
            return json.load(r)

    try:
        with ThreadPoolExecutor(4) as pool:
            replies = list(pool.map(post, range(8)))
        assert [json.loads(r["body"])["i"] for r in replies] == list(range(8))
        assert {r["port"] for r in replies} == set(ports) and max(busy) == 1 and len(busy) == 8
        with pytest.raises(urllib.error.HTTPError) as failed:
            post(9, "/fail")
        assert failed.value.code == 503 and json.load(failed.value)["port"] in ports
        assert post(10)["port"] in ports  # the failed request gave its server back
    finally:
        front.shutdown()
        for server in [front, *backends]:
            server.server_close()


def test_recheck_sends_the_step_rubrics_schema_in_the_judges_own_order():
    """The cache log sorts keys, so a rebuilt step-rubric schema lists its properties alphabetically;
    llama.cpp's grammar follows that order, so ``--recheck`` must send the judge's own order."""
    local_judge = local_judge_script()

    step = [(r, key) for r, key, _ in local_judge.recorded_requests()
            if (r.json_schema or {}).get("title") == "StepMechanismVerdict"]
    assert step, "no step-rubric answer is recorded"
    own = list(StepMechanismVerdict.model_json_schema()["properties"])
    assert own != sorted(own)  # the order the log loses
    for request, key in step[:: max(len(step) // 20, 1)]:
        assert list(request.json_schema["properties"]) == own and request.key == key
    assert local_judge.as_sent(None) is None
    wrong = {**StepMechanismVerdict.model_json_schema(), "required": ["verdict"]}
    with pytest.raises(SystemExit, match="not the judge's own"):
        local_judge.as_sent(wrong)


def test_its_comparison_rows_are_its_own_and_an_independent_computation():
    assert (selfserved.own_label("First step swapped, called different: LLM judge (%)")
            == "First step swapped, called different: self-served SmolLM2 (%)")
    assert (selfserved.own_label("Decisions changed by reversing the order (% of pairs per prompt)")
            == "Decisions changed by reversing the order, self-served SmolLM2 (% of pairs per prompt)")
    assert (selfserved.own_label("Decisions changed by repeating the prompt")
            == "Decisions changed by repeating the prompt, self-served SmolLM2")
    table = selfserved.comparison([("rubric.first_step_swapped_pct_different.full", 50.0, "replayed")])
    assert table.index.name == "quantity"  # the header every paper table has
    row = table.loc["First step swapped, called different: full rubric, self-served SmolLM2 (%)"]
    assert (row["this run"], row["provenance"]) == ("50.0", "independent computation")  # never "fitted"
    assert row["verdict"] == provenance.ANOTHER_MODEL
    # a number that meets the paper's (83 % under the full rubric) is still not a reproduction
    rows = [("rubric.first_step_swapped_pct_different.full", 83.0)]
    assert compare(rows, llm=True)["verdict"].iloc[0] == provenance.REPRODUCED  # the paper's own judge
    assert selfserved.comparison(rows)["verdict"].iloc[0] == provenance.ANOTHER_MODEL


def test_coverage_sentences_for_complete_partial_and_no_parts():
    complete = selfserved.coverage({"the reworded suite": (4, 4)}, "suite", "its column replays them")
    assert complete == ("The answers of the self-served SmolLM2-135M are recorded for every pair of the reworded "
                        "suite, and its column replays them.", None)
    partial = selfserved.coverage({"the reworded suite": (4, 4), "the template suite": (1, 3)}, "suite", "x")
    assert partial == ("The answers of the self-served SmolLM2-135M are recorded for 4 of 4 pairs of the reworded "
                       "suite and 1 of 3 pairs of the template suite; this chapter shows its numbers only for a "
                       "suite whose pairs are all recorded (the reworded suite), and make local-judge records the "
                       "rest.", None)
    none = selfserved.coverage({"the template suite": (0, 3)}, "suite", "x")
    assert none[0].endswith("(none yet), and make local-judge records the rest.")
    assert none[1] == ("No suite has all its pairs recorded yet, so this chapter quotes no number of the "
                       "self-served SmolLM2-135M.")


def test_percent_as_the_prose_quotes_it():
    assert selfserved.percent(12.345) == "12.3 %" and selfserved.percent(0.0) == "0.0 %"
    assert selfserved.percent(None) == "n/a (every pair undecided)"


def test_replay_pairs_counts_the_pairs_whose_answers_are_all_recorded():
    from mechaudit.llm.errors import ReplayMissError

    own = selfserved.SelfServed(client="the client")
    seen = []

    def step(client, pairs):
        seen.append((client, list(pairs)))
        if "missing" in pairs:
            raise ReplayMissError(LLMRequest(model="m", messages=[{"role": "user", "content": "x"}]), Path("c"))
        return len(pairs)

    assert own.replay_pairs(["a", "b"], step) == (2, 2)
    assert seen == [("the client", ["a", "b"])]
    assert own.replay_pairs(["a", "missing", "b"], step) == (None, 2)
    assert own.replay_pairs(["missing"], step) == (None, 0)
