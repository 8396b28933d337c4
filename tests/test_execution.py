"""mechaudit execute: parameters, run folders, errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from mechaudit.book.execute import NotebookExecutionError, execute_chapter, source_notebook
from mechaudit.book.params import (
    Chapter,
    ParameterError,
    load_param_set,
    notebook_parameters,
    resolve_parameters,
    toc_chapters,
)
from mechaudit.paths import REPO_ROOT

MECHAUDIT = [sys.executable, "-m", "mechaudit.cli"]
HEADER = """# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---
"""


def _write_notebook(path: Path, body: str) -> Chapter:
    path.write_text(HEADER + body)
    return Chapter(path)


def test_toc_order_starts_with_the_problem_chapter():
    stems = [c.stem for c in toc_chapters()]
    assert stems[0] == "01_problem"
    assert stems == sorted(stems)


def test_notebook_parameters_reads_literals(tmp_path):
    ch = _write_notebook(tmp_path / "nb.py", '# %% tags=["parameters"]\nseed = 3\nname = "x"\nsizes = [1, 2]\n')
    assert notebook_parameters(ch.source) == {"seed": 3, "name": "x", "sizes": [1, 2]}


@pytest.mark.parametrize(
    "cell, message",
    [("seed = 1 + 1\n", "not a literal"), ("print(1)\n", "only assignments"), ("a.b = 1\n", "plain name")],
)
def test_bad_parameters_cell_names_the_line(tmp_path, cell, message):
    ch = _write_notebook(tmp_path / "nb.py", '# %% tags=["parameters"]\n' + cell)
    with pytest.raises(ParameterError, match=message):
        notebook_parameters(ch.source)


def test_missing_parameters_cell(tmp_path):
    ch = _write_notebook(tmp_path / "nb.py", "# %%\nseed = 3\n")
    with pytest.raises(ParameterError, match="exactly one cell tagged 'parameters'"):
        notebook_parameters(ch.source)


def test_a_book_chapters_parameters_are_its_models_whatever_its_cell_holds(tmp_path, monkeypatch):
    """A chapter of the book takes its parameters from its model, without reading the source (so
    without the book tools); a cell of its own would be a second declaration, which the book's
    chapters do not have (``test_settings``)."""
    from mechaudit.book.settings import defaults

    ch = _write_notebook(tmp_path / "01_problem.py", '# %% tags=["parameters"]\nseed = 3\n')
    monkeypatch.setattr("mechaudit.book.params.book_tools", lambda *a: pytest.fail("read the source"))
    assert notebook_parameters(ch.source) == defaults("01_problem") and defaults("01_problem")["seed"] == 0


class ReadOnlyEnviron(dict):
    """A stand-in for ``os.environ`` that fails the test on any write (copies are plain dicts)."""

    def _write(self, *args, **kwargs):
        raise AssertionError(f"os.environ written: {args}")

    __setitem__ = __delitem__ = update = pop = setdefault = clear = _write


def test_kernel_sees_the_run_environment_and_os_environ_is_never_written(tmp_path, monkeypatch):
    """KERNEL_ENV and ``env`` reach the kernel's environment on top of this process's, which the run
    leaves exactly as it was."""
    import os

    from mechaudit.book.execute import KERNEL_ENV

    monkeypatch.setenv("MECHAUDIT_TEST_INHERITED", "kept")
    monkeypatch.delenv("MECHAUDIT_TEST_EXTRA", raising=False)
    names = ["MECHAUDIT_TEST_EXTRA", "MECHAUDIT_TEST_INHERITED", *sorted(KERNEL_ENV)]
    ch = _write_notebook(tmp_path / "env.py", '# %% tags=["parameters"]\nseed = 0\n\n# %%\nimport json, os\n'
                         f"print(json.dumps({{k: os.environ.get(k) for k in {names!r}}}))\n")
    before = dict(os.environ)
    with monkeypatch.context() as m:
        m.setattr(os, "environ", ReadOnlyEnviron(before))  # a write during the run raises
        execute_chapter(ch, {}, env={"MECHAUDIT_TEST_EXTRA": "from env", "PYTHONHASHSEED": "7"})
    assert os.environ == before
    nb = nbformat.read(ch.ipynb, as_version=4)
    printed = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert json.loads(printed) == {**KERNEL_ENV, "MECHAUDIT_TEST_EXTRA": "from env",
                                   "MECHAUDIT_TEST_INHERITED": "kept", "PYTHONHASHSEED": "7"}


def test_param_set_common_and_section(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("common: {seed: 1, backend: reference, other: 2}\nnb: {alpha: 0.5}\n")
    assert load_param_set(f, "nb", {"seed": 0, "alpha": 1.0}) == {"seed": 1, "alpha": 0.5}
    f.write_text("nb: {beta: 1}\n")
    with pytest.raises(ParameterError, match=r"p.yaml:1: field 'beta': unknown parameter: nb does not define it"):
        load_param_set(f, "nb", {"seed": 0})


def test_only_changed_values_are_injected(tmp_path):
    ch = _write_notebook(tmp_path / "nb.py", '# %% tags=["parameters"]\nseed = 0\nrate = 0.5\n')
    assert resolve_parameters(ch, None, {"seed": 0}) == {}
    assert resolve_parameters(ch, None, {"seed": 7, "rate": 0.5}) == {"seed": 7}
    with pytest.raises(ParameterError, match="no_such_param"):
        resolve_parameters(ch, None, {"no_such_param": 1})


def test_failing_cell_names_notebook_and_cell_and_keeps_target(tmp_path):
    ch = _write_notebook(
        tmp_path / "boom.py", '# %% tags=["parameters"]\nseed = 0\n\n# %%\nx = 1\n\n# %%\nraise ValueError("kaput")\n'
    )
    ch.ipynb.write_text("previous")
    with pytest.raises(NotebookExecutionError, match=r"boom.py: cell 2 .*ValueError: kaput"):
        execute_chapter(ch, {})
    assert ch.ipynb.read_text() == "previous", "a failed run must not overwrite the target"


def test_overrides_go_to_the_run_folder_and_leave_the_committed_notebooks_alone(shared_run):
    """The shared run: one progress line per chapter, ``-p data_dir their_data`` (relative) read from
    the caller's folder and injected as an absolute path, nothing written under notebooks/."""
    for stem in shared_run.stems:
        assert re.search(rf"^\[\d+/\d+\] {stem} \(", shared_run.stderr[stem], re.MULTILINE), stem
    nb = nbformat.read(shared_run.notebook("05_perturbations"), as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1
    assert f'data_dir = "{Path(shared_run.root) / "their_data"}"' in injected[0].source
    assert shared_run.committed_after == shared_run.committed_before, "the committed notebooks must stay untouched"


def test_cli_unknown_parameter_fails_naming_it(tmp_path):
    proc = subprocess.run(
        MECHAUDIT + ["execute", "notebooks/01_problem.py", "-p", "no_such_param", "1", "--out", str(tmp_path)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode != 0
    assert "no_such_param" in proc.stderr
    assert not (tmp_path / "01_problem.ipynb").exists()


def _cells(nb) -> list[tuple]:
    """Type, id, source and metadata of every cell (papermill adds empty tags to untagged ones)."""
    return [(c.cell_type, c.id, c.source, {**c.metadata, "tags": c.metadata.get("tags", [])}) for c in nb.cells]


@pytest.mark.parametrize("chapter", toc_chapters(), ids=lambda c: c.stem)
def test_the_committed_notebook_is_what_execute_writes(chapter):
    """Its cells and metadata are those ``execute_chapter`` gives papermill (jupytext's reading of the
    source, stable ids); its outputs are nbval's to check, to the last digit for ``EXACT_NOTEBOOKS``
    (conftest.py), and the installed wheel's 01_problem must equal it (test_install.py)."""
    committed = nbformat.read(chapter.ipynb, as_version=4)
    source = source_notebook(chapter)
    assert _cells(committed) == _cells(source), f"{chapter.ipynb.name} is stale: re-execute {chapter.source.name}"
    assert {k: v for k, v in committed.metadata.items() if k != "language_info"} == source.metadata
    assert committed.metadata.language_info.name == "python"


PARAMETER_SETS = [p for p in sorted((REPO_ROOT / "params").glob("*.yaml")) if "\ncommon:" in p.read_text()]


def test_the_book_ships_default_and_paper_parameter_sets():
    assert {p.name for p in PARAMETER_SETS} >= {"default.yaml", "paper.yaml"}


@pytest.mark.parametrize("params_file", PARAMETER_SETS, ids=lambda p: p.name)
def test_every_parameter_set_resolves_for_every_chapter(params_file):
    """A parameter set (a file with a `common` section) must be usable with every chapter."""
    for chapter in toc_chapters():
        resolved = resolve_parameters(chapter, params_file)
        assert set(resolved) <= set(notebook_parameters(chapter.source)), chapter.stem


def test_paper_parameter_set_selects_the_real_backend():
    chapter = toc_chapters()[1]  # 02_critique_depth
    resolved = resolve_parameters(chapter, REPO_ROOT / "params" / "paper.yaml")
    assert resolved["backend"] == "anthropic"


def test_an_unknown_backend_fails_in_one_line_before_any_cell(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("common:\n  backend: antropic\n")
    for args in (["-p", "backend", "antropic"], ["--params", str(bad)]):
        proc = subprocess.run(MECHAUDIT + ["execute", *args, "--out", str(tmp_path / "out")],
                              cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("mechaudit: error: "), proc.stderr
        assert "field 'backend': must be one of 'reference', 'anthropic', 'replay', got 'antropic'" in lines[0]
        assert not (tmp_path / "out").exists()  # no chapter started


def test_relative_paths_resolve_against_the_caller_not_notebooks(tmp_path):
    chapter = Chapter(REPO_ROOT / "notebooks" / "02_critique_depth.py")
    (tmp_path / "my_design.yaml").write_text("design: {instances: [A], depths: [0, 1], runs_per_depth: 2}\n")
    got = resolve_parameters(chapter, None, {"cache_dir": "runs/cache", "data_dir": "../d",
                                             "design_file": "my_design.yaml", "simulator_file": "simulator.yaml"},
                             cwd=tmp_path)
    assert got == {"cache_dir": str(tmp_path / "runs" / "cache"), "data_dir": str(tmp_path.parent / "d"),
                   "design_file": str(tmp_path / "my_design.yaml")}  # simulator.yaml: the default under params/
    params = tmp_path / "sets" / "p.yaml"
    params.parent.mkdir()
    params.write_text("common:\n  cache_dir: cache\n")
    assert resolve_parameters(chapter, params, cwd=REPO_ROOT)["cache_dir"] == str(params.parent / "cache")


def test_stage_folder_is_new_and_empty_beside_the_final_folder(tmp_path):
    from mechaudit.book.execute import _stage_folder

    final = tmp_path / "a" / "b" / "05_perturbations"
    stage = _stage_folder(final)
    assert stage.parent == final.parent and stage.is_dir() and not any(stage.iterdir())
    assert re.fullmatch(r"\.05_perturbations\.partial-[0-9a-f]{12}", stage.name)
    assert _stage_folder(final) != stage


def test_place_marks_the_folder_and_replaces_an_earlier_run_whole(tmp_path):
    from mechaudit.book.execute import _place
    from mechaudit.book.preflight import RUN_MARK

    final = tmp_path / "ch"
    for content, replaced in (("first", False), ("second", True)):
        stage = tmp_path / f".ch.partial-{content}"
        stage.mkdir()
        (stage / f"{content}.csv").write_text(content)
        assert _place(stage, final) is replaced
        assert not stage.exists()
        assert sorted(p.name for p in final.iterdir()) == sorted([f"{content}.csv", RUN_MARK])
    assert (final / RUN_MARK).read_text() == "written by mechaudit execute; replaced whole by the next run\n"


def test_the_drawing_process_and_how_its_failure_reads(tmp_path, monkeypatch):
    from mechaudit.book import execute
    from mechaudit.report.outputs import DEFER_MARK

    started = []
    monkeypatch.setattr(execute.subprocess, "Popen", lambda *a, **kw: started.append((a, kw)) or "drawer")
    assert execute._start_drawing(tmp_path) == "drawer" and (tmp_path / DEFER_MARK).exists()
    ((args, kw),) = started
    assert args == ([sys.executable, "-m", "mechaudit.report.outputs", str(tmp_path)],)
    assert kw["env"]["MPLBACKEND"] == "Agg" and kw["stdin"] == kw["stderr"] == subprocess.PIPE
    assert kw["stdout"] == subprocess.DEVNULL and kw["text"] is True

    class Drawer:
        def __init__(self, code: int, err: str) -> None:
            self.returncode, self.err = code, err

        def communicate(self):
            return None, self.err

    chapter = Chapter(tmp_path / "07_x.py")
    with pytest.raises(execute.NotebookExecutionError,
                       match=r"^07_x\.py: a saved figure could not be drawn: ValueError: bad figure$"):
        execute._finish_drawing(Drawer(1, "Traceback\nValueError: bad figure\n"), tmp_path, chapter)
    with pytest.raises(execute.NotebookExecutionError, match=r"could not be drawn: status -9$"):
        execute._finish_drawing(Drawer(-9, " \n"), tmp_path, chapter)
    assert (tmp_path / DEFER_MARK).exists()
    execute._finish_drawing(Drawer(0, ""), tmp_path, chapter)
    assert not (tmp_path / DEFER_MARK).exists()


def test_a_parameter_file_that_sets_nothing_warns_once(tmp_path):
    import io

    from mechaudit.book.execute import _check_whole_file

    empty = tmp_path / "empty.yaml"
    empty.write_text("# nothing\n")
    stream = io.StringIO()
    _check_whole_file(empty, [], stream)
    assert stream.getvalue() == (f"mechaudit: warning: {empty}: the parameter file sets nothing: every chapter runs "
                                 "with its own defaults\n")
    stream = io.StringIO()
    _check_whole_file(REPO_ROOT / "params" / "paper.yaml", [], stream)
    assert stream.getvalue() == ""


def test_finish_notebook_drops_papermills_records_and_renames_in_the_injected_cell():
    from mechaudit.book.execute import _finish_notebook

    nb = nbformat.v4.new_notebook(metadata={"papermill": {"duration": 1.0}, "language_info": {"name": "python"}})
    injected = nbformat.v4.new_code_cell('out_dir = "/tmp/.x.partial-1"', metadata={
        "tags": ["injected-parameters"], "papermill": {"duration": 0.1}, "execution": {"iopub": "t"}})
    other = nbformat.v4.new_code_cell('print("/tmp/.x.partial-1")', metadata={"papermill": {}, "tags": []})
    nb.cells = [injected, other]
    _finish_notebook(nb, {"/tmp/.x.partial-1": "/tmp/x"})
    assert nb.metadata == {"language_info": {"name": "python"}}
    assert injected.metadata == {"tags": ["injected-parameters"]} and other.metadata == {"tags": []}
    assert injected.source == 'out_dir = "/tmp/x"' and other.source == 'print("/tmp/.x.partial-1")'


def test_execute_chapter_hands_papermill_the_kernel_and_writes_into_a_new_run_folder(tmp_path, monkeypatch):
    """papermill replaced by a recorder that copies the notebook: the arguments and the target."""
    import jupytext

    from mechaudit.book import execute
    from mechaudit.book.kernel import EnvKernelManager

    calls = []

    class FakePapermill:
        PapermillExecutionError = RuntimeError

        @staticmethod
        def execute_notebook(src, out, **kw):
            calls.append(kw)
            Path(out).write_bytes(Path(src).read_bytes())

    monkeypatch.setattr(execute, "book_tools", lambda: (jupytext, nbformat, FakePapermill))
    ch = _write_notebook(tmp_path / "nb.py", '# %% tags=["parameters"]\nseed = 0\n')
    target = execute.execute_chapter(ch, {"seed": 1}, tmp_path / "a" / "b", env={"X": "1"})
    assert target == tmp_path / "a" / "b" / "nb.ipynb" and target.exists()
    ((kw),) = calls
    assert kw["kernel_name"] == "python3" and kw["parameters"] == {"seed": 1} and kw["cwd"] == str(tmp_path)
    assert kw["kernel_manager_class"] is EnvKernelManager and kw["shutdown_kernel"] == "immediate"
    assert kw["progress_bar"] is False and kw["log_output"] is False and kw["request_save_on_cell_execute"] is False
    assert kw["config"]["KernelManager"]["extra_env"] == {**execute.KERNEL_ENV, "X": "1"}


def test_kernel_config_puts_the_ipc_sockets_in_the_given_folder(tmp_path):
    from mechaudit.book.kernel import kernel_config

    config = kernel_config(tmp_path, {"A": "1"})
    assert config.KernelManager.extra_env == {"A": "1"}
    assert config.KernelManager.transport == "ipc" and config.KernelManager.ip == str(tmp_path / "kernel")
