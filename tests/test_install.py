"""A normal (non-editable) install works from any folder: build the wheel, install it into a
folder of its own, and run one chapter and two CLI commands from a temporary directory.

The wheel is installed with ``--no-deps --target`` and run by this venv's Python with that folder
first on ``PYTHONPATH`` (torch and the other dependencies come from the venv; the editable
checkout is shadowed, which the test checks), so no dependency is downloaded or reinstalled.
The same wheel is also installed with its dependencies and no extras into a fresh virtual
environment (``test_plain_install_estimates_from_an_empty_folder``): what ``pip install mechaudit``
gives a user, without jupytext or torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from mechaudit.paths import REPO_ROOT

pytestmark = pytest.mark.install

IGNORE = shutil.ignore_patterns(".venv", "_build", ".git", "__pycache__", ".pytest_cache", ".hypothesis", "runs",
                                "build", "dist", "*.egg-info", "embedding_cache", "cache-index.sqlite*",
                                ".ipynb_checkpoints", "*.ipynb")


def _run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(site folder, environment) of the wheel installed with ``--target``."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    shutil.copytree(REPO_ROOT, src, ignore=IGNORE)
    proc = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                 "-w", str(root / "dist"), str(src)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = (root / "dist").glob("mechaudit-*.whl")
    site = root / "site"
    proc = _run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "-q", "--target", str(site),
                 str(wheel)])
    assert proc.returncode == 0, proc.stderr[-3000:]
    env = {k: v for k, v in os.environ.items() if k not in ("MECHAUDIT_ROOT", "MECHAUDIT_DATA", "PYTHONPATH")}
    env["PYTHONPATH"] = str(site)
    return wheel, site, env


def test_wheel_ships_data_params_and_chapters(installed):
    wheel, _, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for rel in ["_toc.yml", "params/default.yaml", "params/paper.yaml", "data/hypotheses.jsonl",
                "data/vocabulary.yaml", "data/instances.yaml", "data/paper_reported.yaml", "notebooks/01_problem.py"]:
        assert f"mechaudit/_project/{rel}" in names, rel
    chapters = {p.name for p in (REPO_ROOT / "notebooks").glob("*.py")}
    shipped = {Path(n).name for n in names if n.startswith("mechaudit/_project/notebooks/")}
    assert shipped == chapters
    assert not [n for n in names if "embedding_cache" in n or "cache-index.sqlite" in n or n.endswith(".ipynb")]


def test_installed_package_finds_its_own_files(installed, tmp_path):
    _, site, env = installed
    code = ("import json, mechaudit, mechaudit.paths as p; "
            "print(json.dumps([mechaudit.__file__, str(p.REPO_ROOT), p.PACKAGED, str(p.DATA_DIR)]))")
    proc = _run([sys.executable, "-c", code], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    module, root, packaged, data = json.loads(proc.stdout)
    assert Path(module).is_relative_to(site), f"the editable checkout was imported: {module}"
    assert packaged and Path(root) == site / "mechaudit" / "_project" and Path(data) == Path(root) / "data"


def _content(path: Path) -> list:
    """Cells of a notebook without the injected-parameters cell and execution counts."""
    cells = []
    for cell in nbformat.read(path, as_version=4).cells:
        if "injected-parameters" in cell.metadata.get("tags", []):
            continue
        outputs = [{k: v for k, v in out.items() if k != "execution_count"} for out in cell.get("outputs", [])]
        cells.append((cell.cell_type, cell.source, outputs))
    return cells


def test_chapter_runs_from_a_temporary_folder(installed, tmp_path):
    _, site, env = installed
    cli = [str(site / "bin" / "mechaudit")]
    proc = _run(cli + ["execute", "01_problem", "--out", "out"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # --out also writes the chapter's tables and figures (mechaudit.report.outputs) beside the notebook
    tables = tmp_path / "out" / "01_problem"
    summary = pd.read_csv(tables / "extra_divergence.csv")
    assert list(summary["rule"]) == ["exact", "initiator"] and summary["splits"].eq(126).all()
    assert len(pd.read_csv(tables / "openings.csv")) == 5
    assert (tables / "divergence_heatmaps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert ET.parse(tables / "divergence_heatmaps.svg").getroot().tag.endswith("svg")
    # without --out the executed notebook would land inside the installed package: refused
    proc = _run(cli + ["execute", "01_problem"], cwd=tmp_path, env=env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("mechaudit: error: field '--out': ")
    assert not list((site / "mechaudit" / "_project" / "notebooks").glob("*.ipynb"))
    # the installed package computes the committed chapter: same cells, same outputs. This is chapter
    # 01's second kernel of the session (nbval's is the first; the shared fake-API run leaves 01 out)
    assert _content(tmp_path / "out" / "01_problem.ipynb") == _content(REPO_ROOT / "notebooks" / "01_problem.ipynb"), (
        "the installed package's 01_problem differs from the committed notebook (stale if "
        "test_execution's byte-for-byte check fails too)")


def test_cli_commands_run_from_a_temporary_folder(installed, tmp_path):
    _, site, env = installed
    cli = [str(site / "bin" / "mechaudit")]
    proc = _run(cli + ["perturb", "--out", "suite.jsonl"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # default inputs are the shipped data: the committed suite, byte for byte
    assert (tmp_path / "suite.jsonl").read_bytes() == (REPO_ROOT / "data" / "perturbations.jsonl").read_bytes()
    proc = _run(cli + ["judge", "--rule", "reference", "--pairs", "suite.jsonl", "--out", "verdicts.jsonl"],
                cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    verdicts = [json.loads(line) for line in (tmp_path / "verdicts.jsonl").read_text().splitlines()]
    suite = [json.loads(line) for line in (tmp_path / "suite.jsonl").read_text().splitlines()]
    assert len(verdicts) == sum(p["valid"] for p in suite) > 0
    # the full-rubric reference judge: rewordings are the same mechanism, a swapped first step is not
    by_kind = {}
    for v in verdicts:
        by_kind.setdefault(v["kind"], []).append(v["same"])
    assert all(by_kind["wording_only"]) and all(by_kind["wording_chain"])
    assert not any(by_kind["first_step_swapped"])


def test_bad_project_root_is_one_line_naming_it(installed, tmp_path):
    _, site, env = installed
    proc = _run([str(site / "bin" / "mechaudit"), "execute", "01_problem", "--out", "out"], cwd=tmp_path,
                env={**env, "MECHAUDIT_ROOT": str(tmp_path / "nowhere")})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (f"mechaudit: error: MECHAUDIT_ROOT={tmp_path / 'nowhere'} is not a mechaudit "
                                   "project folder (it needs params/default.yaml and notebooks/)")


def test_shipped_parameter_sets_and_reproduce_work_from_an_empty_folder(installed, tmp_path):
    """``--params paper`` resolves to the set inside the installed package, and ``mechaudit
    reproduce`` (what ``make reproduce`` calls) estimates, checks the budget and stops before sending."""
    from fake_anthropic import FAKE_KEY, FakeAnthropicServer

    _, site, env = installed
    cli = [str(site / "bin" / "mechaudit")]
    env = {**env, "MECHAUDIT_CACHE": str(tmp_path / "cache")}
    proc = _run(cli + ["estimate", "05_perturbations", "--params", "paper"], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    from mechaudit.book.estimate import estimate_chapters
    from mechaudit.llm.pricing import totals
    from mechaudit.paths import PARAMS_DIR

    expected = int(totals(estimate_chapters(["05_perturbations"], PARAMS_DIR / "paper.yaml"))["requests"])
    assert f"total: {expected} requests, " in proc.stdout and "claude-opus-4-6" in proc.stdout
    proc = _run(cli + ["reproduce", "05_perturbations", "--dry-run"], cwd=tmp_path, env=env)
    assert proc.returncode == 0 and "LLM cost estimate" in proc.stderr, proc.stderr[-3000:]
    with FakeAnthropicServer() as server:
        live = {**env, "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": FAKE_KEY}
        proc = _run(cli + ["reproduce", "05_perturbations", "--yes", "--max-usd", "0.01", "--out", "out"],
                    cwd=tmp_path, env=live)
        assert proc.returncode == 1 and server.bodies == [], proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1].startswith("mechaudit: error: BudgetExceededError: LLM budget "
                                                           "max_usd=0.01 is below the estimated")
    assert not (tmp_path / "out").exists()


def _core_requirements(wheel: Path) -> str:
    """The wheel's dependencies without extras (its METADATA's unconditional Requires-Dist lines)."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode().splitlines()
    return "\n".join(sorted(line for line in lines if line.startswith("Requires-Dist:") and "extra ==" not in line))


def plain_venv(wheel: Path) -> Path:
    """A venv without the system's packages holding ``wheel`` and its core dependencies only. The venv
    is kept beside the project's (``.venv/plain-install``) and rebuilt only when the core dependencies
    or the interpreter change; each call re-installs the wheel itself (``--no-deps``), as a plain
    ``pip install`` would leave it. The first build takes about two minutes on the 2-core machine."""
    venv = REPO_ROOT / ".venv" / "plain-install"
    key = hashlib.sha256(f"{sys.version}\n{_core_requirements(wheel)}".encode()).hexdigest()
    stamp = venv / "mechaudit-core.sha256"
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-compile"]
    if not (stamp.is_file() and stamp.read_text() == key):
        shutil.rmtree(venv, ignore_errors=True)
        proc = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
        assert proc.returncode == 0, proc.stderr[-3000:]
        # this venv's pip installs into the new one (--python): the wheel and its core dependencies only
        proc = subprocess.run([*pip, str(wheel)], capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        stamp.write_text(key)
    else:
        proc = subprocess.run([*pip, "--no-deps", "--force-reinstall", str(wheel)], capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
    return venv


def test_plain_install_estimates_from_an_empty_folder(installed, tmp_path, monkeypatch):
    """``pip install mechaudit`` alone (core dependencies, no extras) into a fresh venv without the
    system's packages: ``mechaudit estimate --params paper`` and ``reproduce --dry-run`` work from an
    empty folder, without jupytext or torch (the chapters' parameters come from their models),
    and the estimate fits a terminal of 100 columns."""
    from mechaudit.book.estimate import estimate_chapters
    from mechaudit.llm.pricing import TERMINAL_WIDTH, format_estimate, totals
    from mechaudit.paths import PARAMS_DIR

    wheel, _, env = installed
    venv = plain_venv(wheel)
    python = venv / "bin" / "python"
    env = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["MECHAUDIT_CACHE"] = str(tmp_path / "cache")
    probe = ("import importlib.util as u, json, sys; print(json.dumps([sys.prefix != sys.base_prefix, "
             "[m for m in ('jupytext', 'papermill', 'torch', 'sentence_transformers') if u.find_spec(m)]]))")
    proc = _run([str(python), "-c", probe], env=env, cwd=tmp_path)
    assert json.loads(proc.stdout) == [True, []], proc.stdout + proc.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    cli = str(venv / "bin" / "mechaudit")
    # the two installed commands and the checkout's own estimate run at the same time
    running = [subprocess.Popen(args, cwd=empty, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for args in ([cli, "estimate", "--params", "paper"], [cli, "reproduce", "--dry-run"])]
    monkeypatch.setenv("MECHAUDIT_CACHE", env["MECHAUDIT_CACHE"])  # the same empty cache, here
    table = estimate_chapters([], PARAMS_DIR / "paper.yaml")
    (out, err), (_, dry_err) = (p.communicate(timeout=300) for p in running)
    assert running[0].returncode == 0, err[-3000:]
    assert out.strip() == format_estimate(table)  # the installed estimate is the checkout's
    assert max(map(len, out.splitlines())) <= TERMINAL_WIDTH
    assert f"total: {int(totals(table)['requests'])} requests, " in out
    assert running[1].returncode == 0 and format_estimate(table, batch=True) in dry_err, dry_err[-3000:]
    assert not any(empty.iterdir())  # nothing written to the folder it ran in
    # what still needs the book tools says so in one line
    proc = _run([cli, "execute", "01_problem", "--out", "out"], cwd=empty, env=env)
    line = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 1 and line.startswith("mechaudit: error: running chapters needs the book tools (")
    assert line.endswith("is missing): pip install 'mechaudit[book]'") and "Traceback" not in proc.stderr
