"""The commands of ``mechaudit`` in-process (``main([...])``): what each hands on, prints and writes
(``cache``, ``calibrate``, ``estimate``, ``execute``, ``reproduce``, ``perturb``) and the exit codes of
``main`` itself. The library calls behind a command are replaced by recorders where running them would
start kernels or processes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tiny_data import VOCAB

from mechaudit import paths
from mechaudit.cli import main
from mechaudit.llm import LLMRequest
from mechaudit.llm.cache import ResponseCache


def one_error(capsys, argv: list[str]) -> str:
    """``main(argv)`` exits 1 with one stderr line; that line after ``mechaudit: error: ``."""
    assert main(argv) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("mechaudit: error: ")
    return line.removeprefix("mechaudit: error: ")


# --------------------------------------------------------------------------------------------- main


def test_no_command_prints_the_usage_and_exits_2(capsys):
    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage: mechaudit [-h] [--debug] COMMAND ...")


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch, capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("mechaudit.cli.execute.execute_chapters", interrupted)
    assert main(["execute", "01_problem"]) == 130
    assert capsys.readouterr().err == ("mechaudit: error: interrupted (Ctrl-C): the unfinished chapter's outputs "
                                       "were not kept\n")


def test_debug_raises_the_error_itself(tmp_path, capsys):
    missing = tmp_path / "none.json"
    assert main(["infer-score", "--input", str(missing)]) == 1
    assert capsys.readouterr().err == f"mechaudit: error: {missing}: No such file or directory\n"
    with pytest.raises(FileNotFoundError):
        main(["--debug", "infer-score", "--input", str(missing)])


# ----------------------------------------------------------------------------------- execute, reproduce


@pytest.fixture
def handed(monkeypatch) -> list[tuple[tuple, dict]]:
    """What ``execute`` and ``reproduce`` hand to ``execute_chapters`` (which then runs nothing)."""
    calls: list[tuple[tuple, dict]] = []

    def record(*args, **kwargs):
        calls.append((args, kwargs))
        return []

    monkeypatch.setattr("mechaudit.cli.execute.execute_chapters", record)
    monkeypatch.setattr("mechaudit.cli.reproduce.execute_chapters", record)
    return calls


def test_execute_hands_every_option_on(handed, tmp_path):
    from mechaudit.cli.execute import ask_terminal

    assert main(["execute", "01_problem", "02_critique_depth", "--params", "paper", "-p", "seed", "3",
                 "-p", "out_dir", "null", "--out", str(tmp_path), "--max-usd", "2.5", "--batch", "--confirm",
                 "--prices", "p.yaml", "--timeout", "9", "-j", "2"]) == 0
    assert main(["execute"]) == 0
    (args, kw), (args0, kw0) = handed
    assert args == (["01_problem", "02_critique_depth"],)
    assert kw == {"params_file": "paper", "overrides": {"seed": 3, "out_dir": None}, "out_dir": tmp_path,
                  "max_usd": 2.5, "batch": True, "dry_run": False, "confirm": ask_terminal,
                  "prices": Path("p.yaml"), "allow_unpriced": False, "timeout": 9.0, "jobs": 2}
    assert args0 == ([],)
    assert kw0 == {"params_file": "params/default.yaml", "overrides": {}, "out_dir": None, "max_usd": None,
                   "batch": None, "dry_run": False, "confirm": None, "prices": None, "allow_unpriced": False,
                   "timeout": None, "jobs": 1}


def test_reproduce_asks_batches_and_says_how_to_replay(handed, capsys):
    from mechaudit.cli.execute import ask_terminal

    assert main(["reproduce", "05_perturbations", "--max-usd", "10"]) == 0
    assert capsys.readouterr().out == ("done: runs/paper. Re-run from the cached answers, with no call: mechaudit "
                                       "execute --params paper -p backend replay --out runs/replay\n")
    assert main(["reproduce", "--yes", "--no-batch", "--dry-run", "--out", "x", "--params", "mine.yaml",
                 "--allow-unpriced", "--timeout", "5"]) == 0
    assert capsys.readouterr().out == ""  # a dry run says nothing more
    (args, kw), (args1, kw1) = handed
    assert args == (["05_perturbations"],) and args1 == ([],)
    assert kw == {"params_file": "paper", "out_dir": Path("runs/paper"), "max_usd": 10.0, "batch": True,
                  "dry_run": False, "confirm": ask_terminal, "prices": None, "allow_unpriced": False, "timeout": None}
    assert kw1 == {"params_file": "mine.yaml", "out_dir": Path("x"), "max_usd": None, "batch": False,
                   "dry_run": True, "confirm": None, "prices": None, "allow_unpriced": True, "timeout": 5.0}


@pytest.mark.parametrize(("typed", "yes"), [("y\n", True), (" YES \n", True), ("Yes", True), ("n", False),
                                           ("yess", False), ("", False), (None, False)])
def test_ask_terminal_takes_only_yes(monkeypatch, typed, yes):
    from mechaudit.cli.execute import ask_terminal

    asked = []

    def answer(question):
        asked.append(question)
        if typed is None:
            raise EOFError
        return typed

    monkeypatch.setattr("builtins.input", answer)
    assert ask_terminal("Send? ") is yes and asked == ["Send? "]


# ------------------------------------------------------------------------------------------- estimate


def test_estimate_reads_the_parameter_file_and_writes_the_csv(tmp_path, capsys):
    params = tmp_path / "p.yaml"
    params.write_text('common: {}\n'
                      '"06_rubric_sensitivity": {backend: anthropic, rubrics: [none], judge_orders: [ab]}\n')
    table = tmp_path / "e.csv"
    assert main(["estimate", "06_rubric_sensitivity", "--params", str(params), "-p", "max_usd", "1",
                 "--csv", str(table)]) == 0
    out = capsys.readouterr().out
    assert "judge claude-opus-4-6 (none)" in out and "total: 320 requests, 0 cached, 320 to send" in out
    assert "(this run: plain)" in out
    rows = pd.read_csv(table)
    assert rows[["chapter", "stage", "requests", "to_send"]].values.tolist() == [
        ["06_rubric_sensitivity", "judge claude-opus-4-6 (none)", 320, 320]]
    assert main(["estimate", "06_rubric_sensitivity", "--params", str(params), "--batch"]) == 0
    assert "(this run: batch)" in capsys.readouterr().out
    assert main(["estimate", "06_rubric_sensitivity"]) == 0  # the default set: offline, nothing to send
    assert capsys.readouterr().out.startswith("LLM cost estimate: no LLM requests")


def test_estimate_options_parse_to_paths_and_flags():
    from mechaudit.cli import build_parser

    args = build_parser().parse_args(["estimate", "02_critique_depth", "--csv", "t.csv", "--prices", "p.yaml"])
    assert (args.csv, args.prices, args.batch, args.params) == (Path("t.csv"), Path("p.yaml"), False,
                                                                "params/default.yaml")


# ---------------------------------------------------------------------------------------------- cache


def _filled(folder: Path, n: int) -> None:
    with ResponseCache(folder) as cache:
        for i in range(n):
            request = LLMRequest(model="claude-opus-4-6", system="Judge the pair.", version="v1", max_tokens=8,
                                 messages=[{"role": "user", "content": f"pair {i}"}])
            cache.put(request.key, {"text": f"a{i}", "model": "claude-opus-4-6", "stop_reason": "end_turn",
                                    "usage": {"input_tokens": 3, "output_tokens": 1}}, request)


def test_cache_export_import_and_info(tmp_path, capsys):
    _filled(tmp_path / "src", 3)
    out = tmp_path / "x.jsonl"
    assert main(["cache", "export", "--cache-dir", str(tmp_path / "src"), str(out)]) == 0
    assert capsys.readouterr().out == f"exported 3 responses and 1 system prompts to {out}\n"
    # import makes a missing cache folder
    assert main(["cache", "import", "--cache-dir", str(tmp_path / "dst"), str(out), str(out)]) == 0
    assert capsys.readouterr().out == (f"{out}: added 3 responses and 1 system prompts, skipped 0 already cached\n"
                                       f"{out}: added 0 responses and 0 system prompts, skipped 4 already cached\n")
    assert main(["cache", "info", "--cache-dir", str(tmp_path / "dst")]) == 0
    text = capsys.readouterr().out
    info = json.loads(text)
    assert text == json.dumps(info, indent=2) + "\n"
    dst = tmp_path / "dst"
    assert info == {"cache_dir": str(dst), "responses": 3, "duplicate_lines": 0,
                    "jsonl_bytes": (dst / "responses.jsonl").stat().st_size,
                    "index_bytes": info["index_bytes"], "pending_batches": []}
    assert info["index_bytes"] > 0 and info["jsonl_bytes"] > 0


@pytest.mark.parametrize("action", ["export", "info"])
def test_cache_export_and_info_need_an_existing_folder(tmp_path, capsys, action):
    afile = tmp_path / "afile"
    afile.write_text("x")
    argv = ["cache", action, "--cache-dir", str(afile)] + ([str(tmp_path / "o.jsonl")] if action == "export" else [])
    assert one_error(capsys, argv) == (f"field '--cache-dir': {afile} is not a folder: no response cache there (give "
                                       "--cache-dir the folder a run cached its answers in)")
    assert not (tmp_path / "o.jsonl").exists()


# ------------------------------------------------------------------------------------------ calibrate


def test_calibrate_hands_n_jobs_and_force_to_the_table_and_times_it(monkeypatch, capsys):
    from mechaudit.book import ch02b_validity

    calls = []
    monkeypatch.setattr(ch02b_validity, "write_replications", lambda **kw: calls.append(kw) or "replications: ok")
    assert main(["calibrate", "--only", "validity", "--force", "--n-jobs", "2"]) == 0
    assert calls == [{"n_jobs": 2, "force": True}]
    assert re.fullmatch(r"replications: ok\nvalidity: \d+ s\n", capsys.readouterr().out)


@pytest.fixture
def seed_dir(tmp_path, monkeypatch) -> Path:
    """An embedding seed of one vector ("a") in a temporary folder."""
    from mechaudit.rules.embedding import store_path, write_store

    folder = tmp_path / "seed"
    monkeypatch.setattr(paths, "EMBEDDING_SEED_DIR", folder)
    write_store(store_path(folder, None), {"a": np.ones(3, dtype=np.float32)})
    return folder


def test_calibrate_embeddings_adds_what_the_chapters_encoded(seed_dir, monkeypatch, capsys):
    import sys

    from mechaudit.rules.embedding import read_store, store_path, write_store

    runs = []

    def chapters_run(cmd, env, check):
        runs.append((cmd, check, read_store(store_path(seed_dir, None)).keys()))
        cache = Path(env[paths.CACHE_ENV])
        assert cmd[cmd.index("--out") + 1] == str(cache / "runs")
        write_store(store_path(cache / "embedding_cache", None), {"b": np.zeros(3, dtype=np.float32)})

    monkeypatch.setattr("mechaudit.cli.calibrate.subprocess.run", chapters_run)
    assert main(["calibrate", "--only", "embeddings", "--n-jobs", "1"]) == 0
    seed = store_path(seed_dir, None)
    assert re.fullmatch(rf"embedding seed {seed.name}: 1 -> 2 vectors\nembeddings: \d+ s\n", capsys.readouterr().out)
    assert sorted(read_store(seed)) == ["a", "b"]
    ((cmd, check, seen),) = runs
    assert cmd[:-4] == [sys.executable, "-m", "mechaudit.cli", "execute", "--params", "default"]
    assert cmd[-2:] == ["--jobs", "1"] and check is True and list(seen) == ["a"]  # the seed stayed for the run


def test_calibrate_embeddings_force_puts_the_seed_back_after_a_failure(seed_dir, monkeypatch, capsys):
    from mechaudit.rules.embedding import store_path

    seed = store_path(seed_dir, None)
    before = seed.read_bytes()
    seen = []

    def failing_run(cmd, env, check):
        seen.append(seed.exists())
        raise RuntimeError("a chapter failed")

    monkeypatch.setattr("mechaudit.cli.calibrate.subprocess.run", failing_run)
    line = one_error(capsys, ["calibrate", "--only", "embeddings", "--force"])
    assert line.startswith("RuntimeError: a chapter failed")
    assert seen == [False]  # set aside while the chapters ran
    assert seed.read_bytes() == before


# -------------------------------------------------------------------------------------------- perturb


@pytest.fixture
def tiny(tmp_path) -> Path:
    """Two hypotheses over the tiny vocabulary (beside them) of ``tests/tiny_data.py``."""
    chain = [{"id": "K1", "text": "kinase one"}, {"id": "K2", "text": "kinase two"},
             {"id": "O1", "text": "outcome one"}]
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "vocabulary.yaml").write_text(VOCAB)
    (folder / "hypotheses.jsonl").write_text("".join(
        json.dumps({"id": hid, "instance": "A", "statement": "kinase one acts.", "explanation": "kinase one acts.",
                    "chain": chain}) + "\n" for hid in ("h1", "h2")))
    return folder


def test_perturb_builds_only_the_kinds_asked_for(tiny, tmp_path, capsys):
    out = tmp_path / "suite.jsonl"
    assert main(["perturb", "--hypotheses", str(tiny / "hypotheses.jsonl"), "--kinds", "first_step_swapped",
                 "wording_only", "--seed", "2", "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    kinds = [json.loads(line)["kind"] for line in out.read_text().splitlines()]
    assert set(kinds) == {"first_step_swapped", "wording_only"}
    assert list(report) == ["out", "seed", "hypotheses", "counts"]
    assert report["out"] == str(out) and report["seed"] == 2 and report["hypotheses"] == 2
    assert list(report["counts"]) == ["first_step_swapped", "wording_only"]
    assert sum(c["kept"] + c["excluded"] for c in report["counts"].values()) == len(kinds)


def test_perturb_names_the_known_kinds_for_a_wrong_one(tiny, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["perturb", "--hypotheses", str(tiny / "hypotheses.jsonl"), "--kinds", "wording",
              "--out", str(tmp_path / "s.jsonl")])
    assert stop.value.code == 2
    assert ("argument --kinds: invalid choice: 'wording' (choose from wording_only, wording_chain, "
            "first_step_swapped, middle_step_swapped)") in capsys.readouterr().err


def test_perturb_against_the_shipped_vocabulary_names_the_field(tiny, tmp_path, capsys):
    (tiny / "vocabulary.yaml").unlink()
    line = one_error(capsys, ["perturb", "--hypotheses", str(tiny / "hypotheses.jsonl"),
                              "--out", str(tmp_path / "s.jsonl")])
    assert line.startswith(f"{tiny / 'hypotheses.jsonl'}:1: field 'chain[0].id': unknown vocabulary id 'K1'")
    assert line.endswith(f"(checked against the shipped vocabulary {paths.data_path('vocabulary.yaml')}: give "
                         "yours with --vocabulary FILE)")
