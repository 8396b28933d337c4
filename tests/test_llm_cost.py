"""Cost before calls, budget, chapter ledger and run total (issue 10 items 2 and 3).

A fake Anthropic API (``httpx.MockTransport`` handed to the real SDK) counts what it receives; the
estimate is built by the chapter planner without sending, then the chapter's own judge sends.
"""

from __future__ import annotations

import io
import itertools
import json
import math
import shutil
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic, FakeAnthropicServer, body_text, client_for, workflow_reply

from mechaudit.book.chapter import ChapterContext
from mechaudit.book.estimate import estimate_chapters
from mechaudit.book.execute import execute_chapters
from mechaudit.llm.ledger import cache_spend, load_prices
from mechaudit.llm.pricing import CHARS_PER_TOKEN, input_tokens, totals
from mechaudit.llm.session import BudgetExceededError, LLMSession
from mechaudit.paths import data_path
from mechaudit.perturb import load_suite
from mechaudit.rules import LLMJudge
from mechaudit.schema import load_benchmark

N_PAIRS = 8
CHAPTER = "05_perturbations"


def counting_api() -> FakeAnthropic:
    """A fake API answering every request with a valid verdict (every third one ``same``); it reports
    the received text's length / ``CHARS_PER_TOKEN`` input tokens and 20 output tokens."""
    count = itertools.count(1)
    return FakeAnthropic(
        reply=lambda body: json.dumps({"verdict": "different" if next(count) % 3 else "same", "reason": "fake"}),
        usage=lambda body, text: {"input_tokens": math.ceil(len(body_text(body)) / CHARS_PER_TOKEN),
                                  "output_tokens": 20},
    )


@pytest.fixture
def small_data(tmp_path) -> Path:
    """A data folder with the committed benchmark and the first ``N_PAIRS`` valid suite pairs."""
    folder = tmp_path / "data"
    folder.mkdir()
    for name in ("vocabulary.yaml", "instances.yaml", "hypotheses.jsonl"):
        shutil.copy(data_path(name), folder / name)
    lines = [line for line in data_path("perturbations.jsonl").read_text().splitlines() if line.strip()]
    valid = [line for line in lines if json.loads(line)["valid"]][:N_PAIRS]
    (folder / "perturbations.jsonl").write_text("\n".join(valid) + "\n")
    return folder


@pytest.fixture
def api_env(api_key):
    yield


def overrides(small_data: Path, cache: Path, early_stop: bool = False) -> dict:
    return {"backend": "anthropic", "data_dir": str(small_data), "cache_dir": str(cache),
            "judge_early_stop": early_stop}


def run_judge(small_data: Path, cache: Path, api: FakeAnthropic, max_concurrency: int = 4, early_stop: bool = False,
              session: LLMSession | None = None):
    """What chapter 05 does with an LLM backend: judge every valid pair under the default orders,
    spending from ``session`` (default: the client's own, unlimited)."""
    bench = load_benchmark(small_data)
    pairs = [(p["original"], p["variant"]) for p in load_suite(small_data / "perturbations.jsonl", valid_only=True)]
    client = client_for(api, cache, max_concurrency=max_concurrency, session=session)
    judge = LLMJudge(rubric="full", orders=("ab", "ab", "ba"), client=client, instances=bench.instances,
                     early_stop=early_stop)
    return judge.decide(pairs), client


def test_estimate_equals_what_the_server_receives(small_data, tmp_path, api_env):
    cache = tmp_path / "cache"
    est = estimate_chapters([CHAPTER], overrides=overrides(small_data, cache))
    t = totals(est)
    assert t["requests"] == t["to_send"] == 3 * N_PAIRS and t["cached"] == 0
    assert est["exact"].all()

    api = counting_api()
    run_judge(small_data, cache, api)
    assert len(api.message_bodies) == t["to_send"]  # exactly the planned requests, none more
    received_tokens = sum(len(body_text(body)) for body in api.message_bodies) / CHARS_PER_TOKEN
    assert abs(t["input_tokens"] - received_tokens) <= 0.10 * received_tokens
    prices = load_prices()
    expected_plain = (t["input_tokens"] * 5.0 + t["output_tokens"] * 25.0) / 1e6
    assert t["usd_plain"] == pytest.approx(expected_plain) and t["usd_batch"] == pytest.approx(expected_plain / 2)
    assert prices["models"]["claude-opus-4-6"]["input"] == 5.0  # the table the numbers above assume

    again = totals(estimate_chapters([CHAPTER], overrides=overrides(small_data, cache)))
    assert again["cached"] == again["requests"] and again["to_send"] == 0 and again["usd_plain"] == 0


def test_early_stop_estimate_brackets_what_is_sent(small_data, tmp_path, api_env):
    cache = tmp_path / "cache"
    est = estimate_chapters([CHAPTER], overrides=overrides(small_data, cache, early_stop=True))
    extra = est["stage"].str.contains("early-stop extra")
    assert est.loc[~extra, "to_send"].sum() == 2 * N_PAIRS and est.loc[extra, "to_send"].sum() == N_PAIRS
    api = counting_api()
    run_judge(small_data, cache, api, early_stop=True)
    assert 2 * N_PAIRS <= len(api.message_bodies) <= 3 * N_PAIRS


def test_budget_below_estimate_stops_before_the_first_request(small_data, tmp_path, api_env):
    cache, out, stream = tmp_path / "cache", tmp_path / "run", io.StringIO()
    with pytest.raises(
        BudgetExceededError, match=r"max_usd=0\.00 is below the estimated .* nothing was sent.*larger budget"
    ):
        execute_chapters([CHAPTER], overrides=overrides(small_data, cache), out_dir=out, stream=stream,
                         max_usd=0.001)
    assert "LLM cost estimate" in stream.getvalue() and "total: 24 requests" in stream.getvalue()
    assert not out.exists() and not cache.exists()  # no chapter ran, nothing was sent or cached


def test_budget_hit_midway_then_continue(small_data, tmp_path, api_env):
    cache = tmp_path / "cache"
    prices = load_prices()
    reqs = [p.request for p in _plan(small_data, cache)]
    worst = [(input_tokens(r)[1] * 5.0 + r.max_tokens * 25.0) / 1e6 for r in reqs]
    session = LLMSession(max_usd=sum(worst[:5]) + 1e-9)  # room for 5 worst-case requests, spent is less
    api = counting_api()
    with pytest.raises(BudgetExceededError, match="Answers paid for are cached"):
        run_judge(small_data, cache, api, max_concurrency=1, session=session)
    first = len(api.message_bodies)
    assert 5 <= first < len(reqs)
    assert cache_spend(cache, 0, prices)["calls"] == first  # everything paid for is cached
    assert session.spent() <= session.max_usd

    session = LLMSession(max_usd=10.0)
    run_judge(small_data, cache, api, session=session)
    assert len(api.message_bodies) == len(reqs)  # the re-run sent only the missing requests
    table = session.usage_table(pairs=N_PAIRS)
    rows = table.set_index("mode")
    assert rows.loc["api", "calls"] == len(reqs) - first and rows.loc["cache", "calls"] == first
    assert table.iloc[-1]["model"] == "total" and table.iloc[-1]["calls"] == len(reqs)
    assert table.iloc[-1]["calls_per_pair"] == 3.0


def _plan(small_data, cache):
    from mechaudit.book.estimate import PLANS, chapter_params
    from mechaudit.book.params import resolve_chapter

    return PLANS[CHAPTER](chapter_params(resolve_chapter(CHAPTER), None, overrides(small_data, cache)))


def test_ledger_report_and_run_total_agree(small_data, tmp_path, api_env):
    cache = tmp_path / "cache"
    _, client = run_judge(small_data, cache, counting_api())
    table = client.session.usage_table(pairs=N_PAIRS)
    api_row = table[table["mode"] == "api"].iloc[0]
    spent = cache_spend(cache, 0, load_prices())
    assert spent["calls"] == api_row["calls"] == 3 * N_PAIRS
    assert spent["input_tokens"] == api_row["input_tokens"] and spent["output_tokens"] == 20 * 3 * N_PAIRS
    assert spent["cost_usd"] == pytest.approx(api_row["cost_usd"], abs=1e-4)
    offline = ChapterContext.open({"backend": "reference"}, CHAPTER).usage()
    assert offline.iloc[0, 0] == "no LLM calls (backend 'reference' is offline)"
    unused = ChapterContext.open({"backend": "anthropic", "cache_dir": str(cache)}, CHAPTER).usage()
    assert unused.iloc[0, 0] == "no LLM calls (backend 'anthropic')"


def test_bad_budget_and_cli_estimate(small_data, tmp_path, capsys):
    with pytest.raises(ValueError, match="max_usd"):
        LLMSession(max_usd=-1)
    with pytest.raises(ValueError, match="max_usd"):
        ChapterContext.open({"max_usd": float("nan")}, CHAPTER)
    from mechaudit.cli import main

    code = main(["estimate", CHAPTER, "-p", "backend", "anthropic", "-p", "data_dir", str(small_data),
                 "-p", "cache_dir", str(tmp_path / "cache")])
    assert code == 0
    out = capsys.readouterr().out
    assert f"total: {3 * N_PAIRS} requests, 0 cached, {3 * N_PAIRS} to send" in out


def test_progress_goes_to_the_terminal_not_the_notebook(tmp_path):
    """A tqdm bar on ``progress_stream()`` inside a kernel leaves no output in the notebook."""
    import nbformat
    import papermill

    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(
        "from tqdm import tqdm\nfrom mechaudit.llm.session import LLMSession\n"
        "for _ in tqdm(range(50), file=LLMSession().progress_stream()):\n    pass"))
    src, out = tmp_path / "in.ipynb", tmp_path / "out.ipynb"
    nbformat.write(nb, src)
    papermill.execute_notebook(str(src), str(out), kernel_name="python3", progress_bar=False)
    assert nbformat.read(out, as_version=4).cells[0].outputs == []


def test_batch_mode_checks_the_budget_per_batch(small_data, tmp_path, api_env):
    fake = FakeAnthropic(reply=lambda body: json.dumps({"verdict": "same", "reason": "fake"}), polls_in_progress=0)
    bench = load_benchmark(small_data)
    pairs = [(p["original"], p["variant"]) for p in load_suite(small_data / "perturbations.jsonl", valid_only=True)]

    def judge(session):
        client = client_for(fake, tmp_path / "cache", session=session)
        return LLMJudge(rubric="full", client=client, instances=bench.instances, early_stop=False)

    with pytest.raises(BudgetExceededError, match=f"next {N_PAIRS} requests \\(one batch\\)"):
        judge(LLMSession(max_usd=1e-4, batch=True)).judge(pairs)
    assert fake.batch_creates == 0 and not fake.message_bodies  # stopped before submitting

    session = LLMSession(max_usd=10.0, batch=True)
    calls = judge(session).judge(pairs)
    assert len(calls) == 3 * N_PAIRS and fake.batch_creates == 3 and not fake.message_bodies
    table = session.usage_table().set_index("mode")
    assert table.loc["batch", "calls"] == 3 * N_PAIRS and "api" not in table.index
    assert cache_spend(tmp_path / "cache", 0, load_prices())["batch_calls"] == 3 * N_PAIRS


def test_dry_run_and_run_budget_injection(small_data, tmp_path):
    from mechaudit.book.account import RunAccount
    from mechaudit.book.params import resolve_chapter, resolve_parameters

    stream = io.StringIO()
    ov = overrides(small_data, tmp_path / "cache")
    assert execute_chapters([CHAPTER], overrides=ov, stream=stream, dry_run=True) == []
    assert f"total: {3 * N_PAIRS} requests" in stream.getvalue() and not (tmp_path / "cache").exists()

    chapter = resolve_chapter(CHAPTER)
    offline = resolve_chapter("01_problem")
    plans = [(offline, resolve_parameters(offline)), (chapter, resolve_parameters(chapter, overrides=ov))]
    run = RunAccount(plans, None, ov, max_usd=1.0, batch=True)
    assert run.llm
    run.totals["cost_usd"] = 0.25  # as if an earlier chapter had spent this
    injected = run.inject(chapter, plans[1][1])
    assert injected["max_usd"] == 0.75 and injected["llm_batch"] is True
    assert run.inject(offline, plans[0][1]) == plans[0][1]  # offline chapters get nothing


def prompt_counts(bodies) -> dict[str, int]:
    """Received requests by kind (develop, critique, revise, label, judge)."""
    counts: dict[str, int] = {}
    for body in bodies:
        system = body["system"] if isinstance(body["system"], str) else body["system"][0]["text"]
        user = body["messages"][0]["content"]
        if "You are the proposer" in system:
            kind = "develop" if "Opening hypothesis to develop" in user else "revise"
        elif "You are the critic" in system:
            kind = "critique"
        elif "engaged with a critic" in system:
            kind = "label"
        else:
            kind = "judge"
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def varied_reply(body: dict) -> str:
    """``fake_anthropic.workflow_reply`` with the run id worked into every generated hypothesis and
    critique, so that runs differ in text as real sampled runs do."""
    import re

    text = workflow_reply(body)
    run = re.search(r"Workflow run (\S+?)[.,]", body["messages"][0]["content"])
    if run is None:
        return text
    reply = json.loads(text)
    if "revised" in reply or "chain" in reply:
        hypothesis = reply.get("revised", reply)
        hypothesis["explanation"] += f" (as argued in run {run.group(1)})"
    elif "demands" in reply:
        user = body["messages"][0]["content"]
        where = (
            re.search(r"critique round (\d+)", user).group(1),
            re.search(r'"statement": "([^"]{0,40})', user).group(1),
        )
        reply["demands"][0]["demand"] += f" (raised in run {run.group(1)}, round {where[0]}, on '{where[1]}')"
    return json.dumps(reply)


def test_workflow_chapters_estimate_counts_what_they_send(tmp_path, monkeypatch, api_key):
    """Chapters 02-04 on a one-instance design: the planned workflow, label and judge requests are
    what the workflow, the engagement labeller and the judge then send; afterwards every request
    replays from the cache and the estimate is exact with nothing to send."""
    import yaml

    from mechaudit.engagement import label_demands
    from mechaudit.llm import get_client
    from mechaudit.workflow import (
        build_rules,
        deliver,
        delivered_diversity,
        instance_matrices,
        load_design,
    )

    bench = load_benchmark()
    design_file = tmp_path / "design.yaml"
    design_file.write_text(yaml.safe_dump({"design": {"instances": [bench.instances[0].id], "depths": [0, 2],
                                                      "runs_per_depth": 2}}))
    cache = tmp_path / "cache"
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({
        "common": {"backend": "anthropic", "design_file": str(design_file), "cache_dir": str(cache)},
        "02_critique_depth": {"rules": ["reference"]}, "04_equivalence_rules": {"rules": ["reference"]}}))
    chapters = ["02_critique_depth", "03_critique_engagement", "04_equivalence_rules"]
    est = estimate_chapters(chapters, params_file=params)
    by_stage = est.groupby("stage")["to_send"].sum()
    n_open = len(bench.openings(bench.instances[0].id))
    assert by_stage["workflow develop"] == 4 * n_open  # 4 runs
    assert by_stage["workflow critique"] == by_stage["workflow revise"] == 2 * 2 * n_open  # 2 runs x 2 rounds

    with FakeAnthropicServer(reply=varied_reply) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        design = load_design(design_file, instances=[i.id for i in bench.instances])
        delivery = deliver(bench, design, get_client("anthropic", cache_dir=cache))
        judge = build_rules(["llm"], delivery.client, instances=bench.instances)["llm"]
        instance_matrices(delivery.runs, judge.same)       # chapter 02
        label_demands(delivery.runs, delivery.client)  # chapter 03
        delivered_diversity(delivery.runs, {"llm": judge})  # chapter 04
    assert server.errors == []
    sent = prompt_counts(server.bodies)
    for kind in ("develop", "critique", "revise"):
        assert sent[kind] == by_stage[f"workflow {kind}"], kind
    assert sent["label"] == by_stage["engagement labels"]  # one per critique
    judge_rows = est[est["stage"].str.startswith("judge")]
    certain = judge_rows.loc[~judge_rows["stage"].str.contains("early-stop"), "to_send"].sum()
    assert sent["judge"] == certain  # the fake judge never disagrees with itself: no third calls
    assert judge_rows["to_send"].sum() == certain * 3 // 2  # the upper bound: every third call

    again = estimate_chapters(chapters, params_file=params)
    extra = again["stage"].str.contains("early-stop")
    # replayed: the real requests, all cached; only the never-needed third judge calls stay listed
    assert again.loc[~extra, "to_send"].sum() == 0 and again.loc[~extra, "exact"].all()
    assert again.loc[extra, "to_send"].sum() == certain // 2


def test_every_llm_chapter_has_budget_batch_and_usage_table():
    """Each chapter with a cost plan takes ``max_usd`` and ``llm_batch`` and ends with the
    usage table: its context (``ChapterContext.open``: budget and batch mode) opens before its LLM
    work, and ``ctx.usage`` shows the table after it."""
    from mechaudit.book.estimate import PLANS
    from mechaudit.book.params import notebook_parameters, toc_chapters

    llm_chapters = [c for c in toc_chapters() if c.stem in PLANS]
    assert {c.stem[:2] for c in llm_chapters} >= {"02", "03", "04", "05", "06", "07"}
    for chapter in llm_chapters:
        defaults = notebook_parameters(chapter.source)
        assert defaults.get("max_usd", "missing") is None and defaults.get("llm_batch") is False, chapter.stem
        source = chapter.source.read_text()
        begin, report = (
            source.find(f'ctx = ChapterContext.open(globals(), "{chapter.stem}")'),
            source.rfind("ctx.usage("),
        )
        assert 0 < begin < report, chapter.stem
        first_judge = source.find("LLMJudge(")
        assert first_judge == -1 or begin < first_judge, chapter.stem


def test_typical_output_sizes_follow_the_planners_demands_per_critique():
    """``llm.pricing`` writes the workflow reply sizes as numbers; they assume the planner's proxy
    critique (``DEMANDS_PER_CRITIQUE`` demands of about 60 tokens each)."""
    from mechaudit.llm.pricing import TYPICAL_OUTPUT
    from mechaudit.workflow.plan import DEMANDS_PER_CRITIQUE

    assert TYPICAL_OUTPUT["critique"] == 60 * DEMANDS_PER_CRITIQUE
    assert TYPICAL_OUTPUT["revise"] == 450 + 60 * DEMANDS_PER_CRITIQUE
    assert TYPICAL_OUTPUT["label"] == 20 * DEMANDS_PER_CRITIQUE + 10


def test_chapter_05_plan_counts_every_suite_of_the_data_folder(small_data, tmp_path):
    cache = tmp_path / "cache"
    one = _plan(small_data, cache)
    assert {p.stage.split(", ")[1].split(")")[0] for p in one} == {"template suite"}
    lines = [line for line in data_path("perturbations_reworded.jsonl").read_text().splitlines() if line.strip()]
    (small_data / "perturbations_reworded.jsonl").write_text("\n".join(lines[:3]) + "\n")
    two = _plan(small_data, cache)
    reworded = [p for p in two if "reworded suite" in p.stage]
    assert len(two) == len(one) + len(reworded) and len(reworded) == 3 * 3  # 3 pairs, 3 orders each
    assert {p.request.key for p in reworded}.isdisjoint({p.request.key for p in one})


def test_judge_estimate_is_one_row_per_judge_with_every_valid_pair_once_per_order():
    from mechaudit.book.estimate import judge_estimate

    pairs = len(load_suite(data_path("perturbations.jsonl"), valid_only=True))
    table = judge_estimate("06_rubric_sensitivity", {"rubrics": ["none", "step"], "judge_orders": ["ab", "ba"]})
    assert list(table.columns) == ["stage", "model", "requests", "cached", "to_send", "usd_plain", "usd_batch"]
    assert table.stage.tolist() == ["judge claude-opus-4-6 (none)", "judge claude-opus-4-6 (step)"]
    assert table.requests.tolist() == [2 * pairs] * 2 and list(table.index) == [0, 1]
    assert (table.to_send == table.requests - table.cached).all() and (table.usd_batch < table.usd_plain).all()


def test_estimate_without_a_parameter_file_reads_the_default_set(tmp_path, monkeypatch):
    from mechaudit.book import estimate

    default = tmp_path / "default.yaml"
    default.write_text('"06_rubric_sensitivity": {backend: anthropic, rubrics: [none], judge_orders: [ab]}\n')
    monkeypatch.setattr(estimate, "DEFAULT_PARAMS", default)
    table = estimate_chapters(["01_problem", "06_rubric_sensitivity"])  # 01 sends nothing: no row, and on
    assert table.stage.tolist() == ["judge claude-opus-4-6 (none)"]
    assert estimate_chapters(["06_rubric_sensitivity"], params_file=data_path("..") / "params" / "default.yaml").empty
