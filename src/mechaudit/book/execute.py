"""Execute the book's chapters: jupytext source -> papermill -> executed ``.ipynb``.

Executing ``notebooks/NN_topic.py`` writes ``notebooks/NN_topic.ipynb`` (the committed reference the
book renders and nbval checks) or, with ``out_dir``, a copy in a run folder. The parameters come
from :mod:`mechaudit.book.params`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from mechaudit import paths
from mechaudit.book import preflight
from mechaudit.book.params import (
    DEFAULT_PARAMS,
    RUN_PARAMETERS,
    Chapter,
    ParameterError,
    book_tools,
    check_param_file,
    error_clause,
    full_parameters,
    notebook_parameters,
    read_param_file,
    resolve_chapter,
    resolve_parameters,
    resolve_params_file,
    toc_chapters,
)
from mechaudit.book.preflight import RUN_MARK, env_data_dir
from mechaudit.book.settings import Budget, RunSettings
from mechaudit.errors import warn
from mechaudit.paths import REPO_ROOT
from mechaudit.report.outputs import DEFER_MARK

KERNEL = "python3"
#: Environment given to every executed notebook: no hub access, deterministic hashing.
KERNEL_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONHASHSEED": "0",
              "TOKENIZERS_PARALLELISM": "false"}


class NotebookExecutionError(RuntimeError):
    """A cell of a notebook raised; the message names the notebook, the cell and the error."""


def _finish_notebook(nb, rename: dict[str, str]) -> None:
    """Remove timings and paths that papermill records, so re-execution gives identical files, and
    replace each key of ``rename`` by its value in the injected-parameters cell."""
    nb.metadata.pop("papermill", None)
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if "injected-parameters" in cell.metadata.get("tags", []):
            for old, new in rename.items():
                cell.source = cell.source.replace(old, new)


def source_notebook(chapter: Chapter):
    """The notebook papermill executes for ``chapter``: jupytext's reading of its source, paired with
    it, with stable cell ids (re-execution gives an identical file)."""
    jupytext, _, _ = book_tools()
    nb = jupytext.read(chapter.source)
    nb.metadata.setdefault("jupytext", {})["formats"] = "ipynb,py:percent"
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:03d}"
    return nb


def execute_chapter(chapter: Chapter, parameters: dict[str, Any] | None = None, out_dir: Path | None = None, *,
                    env: dict[str, str] | None = None, rename: dict[str, str] | None = None) -> Path:
    """Execute one chapter with papermill; return the path of the executed notebook.

    The kernel runs in ``notebooks/`` with this process's environment plus ``KERNEL_ENV`` and ``env``
    (:mod:`mechaudit.book.kernel`), over IPC sockets. The notebook is moved into place only when every
    cell succeeded. ``rename`` maps a string of the injected-parameters cell to the one the saved
    notebook shows. Ctrl-C stops the kernel quietly and raises ``KeyboardInterrupt``.
    """
    _, nbformat, papermill = book_tools()
    from mechaudit.book.kernel import EnvKernelManager, kernel_config  # defers jupyter_client: fast `mechaudit --help`

    target = (Path(out_dir) / chapter.ipynb.name) if out_dir else chapter.ipynb
    target.parent.mkdir(parents=True, exist_ok=True)
    nb = source_notebook(chapter)
    with tempfile.TemporaryDirectory(prefix="mechaudit-") as tmp:
        src = Path(tmp) / f"{chapter.stem}.in.ipynb"
        out = Path(tmp) / f"{chapter.stem}.ipynb"
        nbformat.write(nb, src)
        with _quiet_interrupt():
            try:
                papermill.execute_notebook(
                    str(src), str(out), parameters=parameters or {}, kernel_name=KERNEL,
                    cwd=str(chapter.source.parent), progress_bar=False, log_output=False,
                    config=kernel_config(Path(tmp), {**KERNEL_ENV, **(env or {})}),
                    kernel_manager_class=EnvKernelManager,
                    shutdown_kernel="immediate",  # no graceful shutdown to print ZMQ errors after Ctrl-C
                    # the notebook is written once, at the end: papermill's default rewrites the whole file
                    # before and after every cell, which the next cell waits for (seconds per chapter)
                    request_save_on_cell_execute=False,
                )
            except papermill.PapermillExecutionError as err:
                raise NotebookExecutionError(
                    f"{chapter.source.name}: cell {err.cell_index} (execution count {err.exec_count}) raised "
                    f"{err.ename}: {err.evalue}"
                ) from None
        executed = nbformat.read(out, as_version=4)
        _finish_notebook(executed, rename or {})
        nbformat.write(executed, out)
        shutil.move(str(out), target)
    return target


#: loggers of the kernel client: what they report reaches us as an exception (one line), so their
#: own lines (e.g. "Kernel died while waiting for execute reply" after Ctrl-C) are not shown
CLIENT_LOGGERS = ("papermill", "nbclient", "traitlets", "asyncio")


@contextlib.contextmanager
def _quiet_interrupt():
    """Run the block with the kernel client's loggers silenced; on Ctrl-C also silence what its
    threads and sockets print while they shut down, then re-raise ``KeyboardInterrupt``."""
    levels = {name: logging.getLogger(name).level for name in CLIENT_LOGGERS}
    for name in CLIENT_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)
    interrupted = False
    try:
        yield
    except KeyboardInterrupt:  # the process is about to exit: stay silent until then
        interrupted = True
        sys.unraisablehook = threading.excepthook = lambda *_: None
        raise
    finally:
        if not interrupted:
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)


def inject_out_dir(chapter: Chapter, params: dict[str, Any], out_dir: Path | None,
                   overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """With ``--out DIR``, ``out_dir = DIR/<chapter>`` for a chapter that defines an ``out_dir``
    parameter (its tables and figures go there, ``mechaudit.report.outputs.save``), unless the parameter
    file or ``-p out_dir ...`` set it (``-p out_dir null`` keeps it off)."""
    if out_dir is None or "out_dir" in params or "out_dir" in (overrides or {}):
        return params
    if "out_dir" not in notebook_parameters(chapter.source):
        return params
    return {**params, "out_dir": str((Path(out_dir) / chapter.stem).resolve())}


def run_settings(overrides: dict[str, Any], params_file: Path | None) -> dict[str, Any]:
    """Pop the run parameters (``RUN_PARAMETERS``) from ``overrides`` (they win) and read them from
    ``common`` of ``params_file``; a value that is not an http(s) URL is a ``ParameterError``."""
    common = (read_param_file(params_file)[0].get("common") or {}) if params_file else {}
    settings = {}
    for name in RUN_PARAMETERS:
        value = overrides.pop(name, common.get(name))
        if value is not None:
            from mechaudit.llm.providers import normalize_endpoint  # defers pandas: fast `mechaudit --help`

            try:
                value = normalize_endpoint(value) if isinstance(value, str) else normalize_endpoint(repr(value))
            except ValueError as err:
                raise ParameterError(str(err), field=name) from None
        settings[name] = value
    return settings


def check_budget_args(max_usd: Any, allow_unpriced: bool) -> float | None:
    """``max_usd`` as a float: a finite number > 0 (or None); ``--allow-unpriced`` never with it."""
    if max_usd is None:
        return None
    try:
        budget = TypeAdapter(Budget, config=RunSettings.model_config)
        budget.validate_python(max_usd)
    except ValidationError as err:
        raise ParameterError(error_clause(err.errors()[0], None, budget.json_schema()), field="--max-usd") from None
    if allow_unpriced:
        raise ParameterError("cannot be combined with --max-usd: a budget cannot be kept for a model without a "
                             "price; give the model a price (params/prices.yaml or --prices) instead",
                             field="--allow-unpriced")
    return float(max_usd)


def execute_chapters(names: Iterable[str | Path] = (), params_file: Path | None = DEFAULT_PARAMS,
                     overrides: dict[str, Any] | None = None, out_dir: Path | None = None, stream=None, *,
                     max_usd: float | None = None, batch: bool | None = None,
                     confirm: Callable[[str], bool] | None = None, dry_run: bool = False, prices: Path | None = None,
                     allow_unpriced: bool = False, timeout: float | None = None, jobs: int = 1) -> list[Path]:
    """Execute the named chapters (default: every chapter in TOC order), one progress line each.

    Everything is checked before the first kernel starts: parameters, data and files, run folders
    (``preflight``) and, for a run that sends LLM requests, prices and API keys (``RunAccount``; an
    unpriced model only with ``allow_unpriced``, never with a budget). ``max_usd``: a budget for the
    whole run (each chapter gets what is left); ``batch`` sets ``llm_batch``; ``prices``: a price table.
    With a budget, ``confirm`` or ``dry_run`` the estimate is printed first; an estimate above the
    budget stops before the first request, ``dry_run`` after the estimate, ``confirm(text)`` False
    cancels. ``timeout``: seconds per LLM request (``MECHAUDIT_LLM_TIMEOUT``). ``jobs``: chapters at
    once (an LLM run: one). Progress goes to ``stream`` (default ``sys.stderr``).
    """
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ParameterError(f"expected a whole number >= 1, got {jobs!r}", field="--jobs")
    stream = sys.stderr if stream is None else stream
    overrides = dict(overrides or {})
    if max_usd is None and overrides.get("max_usd") is not None:
        max_usd = overrides.pop("max_usd")
    max_usd = check_budget_args(max_usd, allow_unpriced)
    paths.require_root()  # no project folder: one line naming MECHAUDIT_ROOT
    params_file = resolve_params_file(params_file)
    settings = run_settings(overrides, params_file)
    env = _kernel_env(prices, settings["llm_base_url"], timeout)  # a bad --timeout fails here
    chapters = [resolve_chapter(n) for n in names] or toc_chapters()
    _check_out_dir(out_dir, chapters)
    plans = [(c, resolve_parameters(c, params_file, overrides)) for c in chapters]  # fail before running
    full = full_parameters(plans)
    run = _plan_run(plans, full, params_file, overrides, out_dir, max_usd=max_usd, batch=batch, prices=prices,
                    base_url=settings["llm_base_url"])
    if params_file:  # the sections of the chapters not run, after the run's own inputs
        _check_whole_file(params_file, chapters, stream)
    # a chapter whose default data is its own folder (09's example set) reads MECHAUDIT_DATA like the others
    plans = [(c, {**params, **env_data_dir(c.stem, full[c.stem])}) for c, params in plans]
    if not _check_money(run, stream, confirm=confirm, dry_run=dry_run, allow_unpriced=allow_unpriced):
        return []
    try:
        if out_dir is not None:
            Path(out_dir).mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ParameterError(f"cannot create the folder {out_dir}: {err.strerror or err}", field="--out") from None
    tasks = [(i, len(plans), c, params, run, out_dir, overrides, stream, env) for i, (c, params) in enumerate(plans, 1)]
    try:
        return _execute_all(tasks, 1 if run.llm else jobs)
    finally:
        if run.llm:
            print(run.total_line(), file=stream, flush=True)


def _execute_all(tasks: list[tuple], jobs: int) -> list[Path]:
    """``_execute_one`` of every task, ``jobs`` at a time (threads: each waits on its own kernel
    process), results in task order; after a failure (or Ctrl-C) no further chapter starts."""
    if jobs == 1 or len(tasks) == 1:
        return [_execute_one(*task) for task in tasks]

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(_execute_one, *task) for task in tasks]
        try:
            return [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise


def _check_whole_file(params_file: Path, chapters: list[Chapter], stream) -> None:
    """``check_param_file`` over the book's chapters (and any others run); a file without sections
    warns (``common: {}`` says "no overrides" on purpose)."""
    check_param_file(params_file, {**{c.stem: c for c in toc_chapters()}, **{c.stem: c for c in chapters}}.values())
    if not read_param_file(params_file)[0]:
        warn("the parameter file sets nothing: every chapter runs with its own defaults", file=params_file,
             stream=stream)


def _plan_run(plans, full, params_file, overrides, out_dir, **account):
    """The run's ``RunAccount`` after every check that needs no kernel (``mechaudit.book.preflight``),
    the data and files first (before the LLM side is even imported); ``full``: ``full_parameters(plans)``."""
    preflight.check_plans(plans, full)
    from mechaudit.book.account import RunAccount  # defers pandas: fast `mechaudit --help`

    run = RunAccount(plans, params_file, overrides, **account)
    owners: dict[Path, str] = {}
    for chapter, params in plans:
        target = inject_out_dir(chapter, params, out_dir, overrides).get("out_dir")
        if target is None:
            continue
        field = "--out" if "out_dir" not in params else "out_dir"
        if Path(target) in owners:  # each chapter's folder is replaced whole: one folder, one chapter
            raise ParameterError(f"{owners[Path(target)]} and {chapter.stem} would write to the same folder {target}: "
                                 "give each chapter its own (--out DIR uses DIR/<chapter>)", field=field)
        owners[Path(target)] = chapter.stem
        preflight.check_out_folder(Path(target), field)
    return run


def _check_money(run, stream, *, confirm, dry_run: bool, allow_unpriced: bool) -> bool:
    """The LLM checks before sending: estimate (printed with a budget, ``confirm`` or ``dry_run``),
    prices, keys, budget and the question. False when the run stops here (``dry_run``)."""
    from mechaudit.book.account import RunCancelled  # defers pandas: fast `mechaudit --help`

    shown = run.max_usd is not None or confirm is not None or dry_run
    if not run.llm:
        if dry_run:
            print("no chapter runs an LLM backend: nothing would be sent", file=stream)
        return not dry_run
    if dry_run:
        run.print_estimate(stream)
        return False
    if run.live:
        run.check_prices(allow_unpriced)  # UnpricedModelError: one line, nothing sent
        run.check_keys()  # MissingAPIKeyError before any kernel
    if shown:
        run.print_estimate(stream)
        run.check_budget()
        if confirm is not None and not confirm(run.prompt()):
            raise RunCancelled("cancelled after the estimate: nothing was sent")
    return True


def _kernel_env(prices: Path | None, base_url: str | None, timeout: float | None = None) -> dict[str, str]:
    """Environment for the kernels besides ``KERNEL_ENV``: the price table, the custom server and the
    request timeout (``--timeout``: a ``MechauditError`` unless a number of seconds > 0)."""
    env = {}
    if prices is not None:
        env[paths.PRICES_ENV] = str(Path(prices).expanduser().resolve())
    if base_url is None and timeout is None:
        return env  # the LLM layer is not imported for nothing: this runs before the parameter checks
    # defers pandas: fast `mechaudit --help`
    from mechaudit.llm.providers import OPENAI_BASE_URL_ENV, TIMEOUT_ENV, request_timeout

    if base_url is not None:
        env[OPENAI_BASE_URL_ENV] = base_url
    if timeout is not None:
        env[TIMEOUT_ENV] = repr(request_timeout(timeout, field="--timeout"))
    return env


def _check_out_dir(out_dir: Path | None, chapters: list[Chapter]) -> None:
    """``--out`` is needed for chapters shipped inside the installed package and must be a folder."""
    if out_dir is None and paths.PACKAGED and any(paths.REPO_ROOT.resolve() in c.source.resolve().parents
                                                  for c in chapters):
        raise ParameterError("the chapters come from the installed package: pass --out DIR for the "
                             "executed notebooks", field="--out")
    if out_dir is not None and Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise ParameterError(f"{out_dir} exists and is not a folder", field="--out")


def _execute_one(i: int, n: int, chapter: Chapter, params: dict[str, Any], run, out_dir: Path | None,
                 overrides: dict[str, Any], stream, env: dict[str, str]) -> Path:
    """Execute chapter ``i`` of ``n`` within the run's budget, with a progress line before and after;
    its output folder is written beside and replaces ``out_dir`` only when every cell succeeded."""
    params = run.inject(chapter, params)
    params = inject_out_dir(chapter, params, out_dir, overrides)
    shown = ", ".join(f"{k}={v!r}" for k, v in params.items()) or "defaults"
    _progress(stream, f"[{i}/{n}] {chapter.stem} ({shown}) ...")
    start = time.perf_counter()
    final = Path(params["out_dir"]) if params.get("out_dir") else None
    stage = _stage_folder(final) if final is not None else None
    drawer = _start_drawing(stage) if stage is not None else None
    try:
        with run.chapter(chapter):
            staged = {**params, "out_dir": str(stage)} if stage is not None else params
            path = execute_chapter(chapter, staged, out_dir, env=env,
                                   rename={str(stage): str(final)} if stage is not None else None)
        if drawer is not None:
            _finish_drawing(drawer, stage, chapter)
    except BaseException:
        if drawer is not None and drawer.poll() is None:
            drawer.kill()
            drawer.wait()
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        raise
    if final is not None and _place(stage, final):
        _progress(stream, f"[{i}/{n}] {chapter.stem}: {_display_path(final)} held an earlier run: replaced whole")
    _progress(stream, f"[{i}/{n}] {chapter.stem} done in {time.perf_counter() - start:.1f} s -> {_display_path(path)}")
    return path


_PROGRESS = threading.Lock()


def _progress(stream, line: str) -> None:
    """Write one progress line whole (``--jobs`` runs chapters in threads: ``print`` writes a line and
    its newline separately, so two threads' lines could run together)."""
    with _PROGRESS:
        stream.write(line + "\n")
        stream.flush()


def _start_drawing(stage: Path) -> subprocess.Popen:
    """The process that draws the chapter's figures into ``stage`` while the chapter runs, on another
    core (:mod:`mechaudit.report.outputs`: ``save`` only stores them in a folder marked ``DEFER_MARK``)."""
    (stage / DEFER_MARK).touch()
    return subprocess.Popen([sys.executable, "-m", "mechaudit.report.outputs", str(stage)], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "MPLBACKEND": "Agg"})


def _finish_drawing(drawer: subprocess.Popen, stage: Path, chapter: Chapter) -> None:
    """Let ``drawer`` draw the figures still stored and stop; a figure it could not draw fails the chapter."""
    _, err = drawer.communicate()
    if drawer.returncode != 0:
        why = err.strip().splitlines()[-1] if err.strip() else f"status {drawer.returncode}"
        raise NotebookExecutionError(f"{chapter.source.name}: a saved figure could not be drawn: {why}")
    (stage / DEFER_MARK).unlink()


def _stage_folder(final: Path) -> Path:
    """A new empty folder beside ``final`` (same file system, so the final move is a rename)."""
    final.parent.mkdir(parents=True, exist_ok=True)
    stage = final.parent / f".{final.name}.partial-{uuid.uuid4().hex[:12]}"
    stage.mkdir()
    return stage


def _place(stage: Path, final: Path) -> bool:
    """Move the finished ``stage`` folder to ``final``, marked as a run folder (``RUN_MARK``);
    True if an earlier ``final`` was replaced."""
    (stage / RUN_MARK).write_text("written by mechaudit execute; replaced whole by the next run\n",
                                  encoding="utf-8")
    replaced = final.exists()
    if replaced:
        shutil.rmtree(final)
    os.replace(stage, final)
    return replaced


def _display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)
