"""Checks of a chapter run that need no kernel: the data each chapter reads, the settings files its
``*_file`` parameters name, the paper switch, the parallel engine and the run folders.
``mechaudit execute`` calls :func:`check_plans` before the first kernel starts, so a bad input is
one line naming the file, the line and the field, and the command that fixes it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mechaudit import paths
from mechaudit.book.settings import MAX_RUNS
from mechaudit.errors import MechauditError
from mechaudit.workflow.parallel import NEEDS_DASK, check_engine

#: the benchmark's source files, which every chapter with a ``data_dir`` reads
SOURCE_FILES = ("vocabulary.yaml", "instances.yaml", "hypotheses.jsonl")
SUITE_FILE = "perturbations.jsonl"
#: chapters that read the perturbation suite from their data folder (05 unless it rebuilds it)
SUITE_CHAPTERS = ("05_perturbations", "06_rubric_sensitivity", "07_sensitivity")
#: chapters whose ``data_dir = None`` means a folder other than the data folder (unless
#: ``MECHAUDIT_DATA`` names one: the variable sets the data folder of every chapter)
DEFAULT_DATA = {"09_your_data": paths.EXAMPLE_DIR}
#: a file in a chapter's output folder that marks it as written by ``mechaudit execute``
RUN_MARK = ".mechaudit-run"
#: parameters naming a settings file under ``params/`` (or a path), as the chapters read them
FILE_PARAMETERS = ("design_file", "simulator_file", "null_simulator_file", "calibration_file")
#: chapters that compare runs within a depth (extra divergence, its interval and test): their
#: design needs two depths and at least two runs per depth
WITHIN_DEPTH_CHAPTERS = ("02_critique_depth", "02b_validity", "02c_robustness")


def data_folder(stem: str, values: dict[str, Any]) -> tuple[Path, str] | None:
    """``(folder, field)`` of the benchmark chapter ``stem`` reads with parameters ``values``: its
    ``data_dir``, else ``MECHAUDIT_DATA`` if set, else its default folder (the shipped data; the
    example set for chapter 09). None for a chapter without a ``data_dir`` parameter."""
    if "data_dir" not in values:
        return None
    if values["data_dir"] is not None:
        return Path(values["data_dir"]).expanduser(), "data_dir"
    if os.environ.get(paths.DATA_ENV):
        return paths.DATA_DIR, paths.DATA_ENV
    return DEFAULT_DATA.get(stem, paths.DATA_DIR), "data_dir"


def env_data_dir(stem: str, values: dict[str, Any]) -> dict[str, Any]:
    """The ``data_dir`` to inject so that chapter ``stem`` reads ``MECHAUDIT_DATA`` although its own
    default is another folder (chapter 09's example set); ``{}`` when nothing needs injecting."""
    where = data_folder(stem, values)
    if stem in DEFAULT_DATA and where is not None and where[1] == paths.DATA_ENV:
        return {"data_dir": str(where[0].resolve())}
    return {}


def needed_files(stem: str, values: dict[str, Any], folder: Path | None = None) -> tuple[str, ...]:
    """The files chapter ``stem`` reads from its data folder: the sources, and for the suite
    chapters the template-built suite and any other suite file present in ``folder``."""
    from mechaudit.perturb import SUITE_FILES  # defers pandas: fast `mechaudit --help`

    if stem not in SUITE_CHAPTERS:
        return SOURCE_FILES
    suites = () if stem == "05_perturbations" and values.get("regenerate_suite") else (SUITE_FILE,)
    others = tuple(f for f in SUITE_FILES.values() if f != SUITE_FILE and folder is not None
                   and (folder / f).exists())
    return SOURCE_FILES + suites + others


def fix_for(folder: Path, name: str) -> str:
    """What makes file ``name`` of a benchmark folder: ``mechaudit perturb`` for a suite (with
    ``--reworded`` for the reworded one), the data format page for the sources."""
    if name.endswith(".jsonl") and name != SOURCE_FILES[-1]:
        from mechaudit.perturb import rebuild_command  # defers pandas: fast `mechaudit --help`

        return f"make it with `{rebuild_command(folder / name)}`"
    return "write it as book/data.md describes"


def check_data(stem: str, values: dict[str, Any], checked: dict | None = None) -> None:
    """Raise ``MechauditError`` unless the data folder of chapter ``stem`` exists and holds every
    file the chapter reads, non-empty and valid (``load_benchmark``; the suite with at least one
    valid pair). ``checked`` memoises folders already checked in this run."""
    where = data_folder(stem, values)
    if where is None:
        return
    folder, field = where
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise MechauditError(f"{folder} {what}: give a benchmark folder (book/data.md)", field=field)
    checked = {} if checked is None else checked
    for name in needed_files(stem, values, folder):
        if (folder, name) not in checked:
            checked[(folder, name)] = _check_file(folder, name, field)


def _check_file(folder: Path, name: str, field: str) -> bool:
    path = folder / name
    if not path.is_file():
        raise MechauditError(f"missing: {fix_for(folder, name)}", file=path, field=field)
    if not path.read_bytes().strip():
        raise MechauditError(f"empty: {fix_for(folder, name)}", file=path, field=field)
    if name.endswith(".jsonl") and name != SOURCE_FILES[-1]:  # a perturbation suite
        from mechaudit.perturb import load_suite  # defers pandas: fast `mechaudit --help`

        if not load_suite(path, valid_only=True):
            raise MechauditError(f"no valid perturbation pair (every pair was excluded): {fix_for(folder, name)}",
                                 file=path, field=field)
    elif name == SOURCE_FILES[-1]:
        from mechaudit.schema import load_benchmark  # defers the pydantic data model: fast `mechaudit --help`

        load_benchmark(folder)  # the three sources checked against each other (file, line, field)
    return True


def check_files(stem: str, values: dict[str, Any], checked: dict | None = None) -> None:
    """Raise ``MechauditError`` unless every ``*_file`` parameter of chapter ``stem`` names a valid
    settings file (a design within the benchmark, with two depths and two runs per depth for
    ``WITHIN_DEPTH_CHAPTERS``); ``checked`` memoises files already checked."""
    checked = {} if checked is None else checked
    for name in FILE_PARAMETERS:
        if name not in values:
            continue
        path = paths.PARAMS_DIR / values[name]  # as the chapters read it (an absolute value as given)
        if not path.is_file():
            what = "is a folder" if path.is_dir() else "does not exist"
            shipped = ", ".join(sorted(p.name for p in paths.PARAMS_DIR.glob("*.yaml")))
            raise MechauditError(f"{path} {what}: name a file in params/ ({shipped}) or give the path of one",
                                 field=name)
        key = (name, path, stem in WITHIN_DEPTH_CHAPTERS, data_folder(stem, values))
        if key not in checked:
            checked[key] = _check_param_file(stem, name, path, values)


def _check_param_file(stem: str, name: str, path: Path, values: dict[str, Any]) -> bool:
    """Load one settings file with the loader the chapter uses (one ``DataError`` naming file, line and
    field if it is malformed) and check a design against the chapter's benchmark and analysis."""
    if name == "calibration_file":
        from mechaudit.workflow.calibrate import load_calibration  # defers pandas: fast `mechaudit --help`

        load_calibration(path)
    elif name.endswith("simulator_file"):
        from mechaudit.workflow.simulator import load_simulator_params  # defers pandas: fast `mechaudit --help`

        load_simulator_params(path)
    else:
        _check_design(stem, path, values)
    return True


def _check_design(stem: str, path: Path, values: dict[str, Any]) -> None:
    from mechaudit.schema import load_instances, read_yaml  # defers the pydantic data model: fast `mechaudit --help`
    from mechaudit.workflow.design import load_design  # defers the pydantic data model: fast `mechaudit --help`

    where = data_folder(stem, values)
    folder = where[0] if where is not None else paths.DATA_DIR
    design = load_design(path, instances=[i.id for i in load_instances(folder / "instances.yaml")])
    line = read_yaml(path)["design"].get("__line__")
    if design.runs_per_depth > MAX_RUNS:
        raise MechauditError(f"must be at most {MAX_RUNS}, got {design.runs_per_depth}", file=path, line=line,
                             field="design.runs_per_depth")
    if stem not in WITHIN_DEPTH_CHAPTERS:
        return
    if design.runs_per_depth < 2:
        raise MechauditError(f"is {design.runs_per_depth}: {stem} compares runs within a depth, which needs at least "
                             "2 runs per depth", file=path, line=line, field="design.runs_per_depth")
    if len(design.depths) < 2:
        raise MechauditError(f"{list(design.depths)}: {stem} compares depths, which needs at least two",
                             file=path, line=line, field="design.depths")


def check_cache_dir(values: dict[str, Any]) -> None:
    """A ``cache_dir`` (the LLM response cache, created on first use) must not be an existing file."""
    folder = values.get("cache_dir")
    if folder is not None and Path(folder).expanduser().exists() and not Path(folder).expanduser().is_dir():
        raise MechauditError(f"{folder} is a file: give the folder of the LLM response cache (made if missing)",
                             field="cache_dir")


def check_compare_paper(values: dict[str, Any]) -> None:
    """``compare_paper: true`` only on the shipped benchmark (``comparison.compare_paper_default``)."""
    if values.get("compare_paper") is True:
        from mechaudit.report.comparison import compare_paper_default  # defers pandas: fast `mechaudit --help`

        compare_paper_default(True, values.get("data_dir"))


def check_parallel(values: dict[str, Any]) -> None:
    """``parallel_backend`` and ``scheduler`` together (``workflow.parallel.check_engine``: a scheduler
    is a Dask address and goes only with ``dask``), and ``dask`` needs ``dask.distributed`` installed."""
    if "parallel_backend" not in values and "scheduler" not in values:
        return

    check_engine(values.get("parallel_backend"), values.get("scheduler"))
    if values.get("parallel_backend") == "dask" and importlib.util.find_spec("distributed") is None:
        raise MechauditError(NEEDS_DASK, field="parallel_backend")


def check_out_folder(folder: Path, field: str) -> None:
    """A chapter's output folder is replaced whole after a successful run, so it must be new, empty
    or one ``mechaudit execute`` wrote (it holds ``RUN_MARK``); anything else is refused."""
    if folder.exists() and (not folder.is_dir() or (any(folder.iterdir()) and not (folder / RUN_MARK).exists())):
        raise MechauditError(f"{folder} exists and holds files mechaudit did not write: a chapter's output "
                             "folder is replaced whole after each run, so choose a new or empty folder", field=field)


def check_plans(plans: Iterable[tuple[Any, dict[str, Any]]], full: dict[str, dict[str, Any]]) -> None:
    """Every check of this module for a run: ``plans`` as ``[(chapter, injected parameters)]``,
    ``full`` every parameter of each chapter by stem (defaults included)."""
    checked: dict = {}
    for chapter, _ in plans:
        values = full[chapter.stem]
        check_data(chapter.stem, values, checked)
        check_files(chapter.stem, values, checked)
        check_cache_dir(values)
        check_compare_paper(values)
        check_parallel(values)


__all__ = ["check_plans", "check_data", "check_files", "check_cache_dir", "check_compare_paper", "check_parallel",
           "check_out_folder", "needed_files", "fix_for", "env_data_dir", "RUN_MARK", "FILE_PARAMETERS"]
