"""Checks of a chapter run that need no kernel: the data each chapter reads, the paper switch, the
parallel engine and the run folders. ``mechaudit execute`` calls :func:`check_plans` after the parameters are resolved
and before the first kernel starts, so a wrong folder, a missing or empty file, or a request for the
paper's numbers on other data is one line naming the field and the command that fixes it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mechaudit import paths
from mechaudit.errors import MechauditError

#: the benchmark's source files, which every chapter with a ``data_dir`` reads
SOURCE_FILES = ("vocabulary.yaml", "instances.yaml", "hypotheses.jsonl")
SUITE_FILE = "perturbations.jsonl"
#: chapters that read the perturbation suite from their data folder (05 unless it rebuilds it)
SUITE_CHAPTERS = ("05_perturbations", "06_rubric_sensitivity", "07_sensitivity")
#: chapters whose ``data_dir = None`` means a folder other than the data folder
DEFAULT_DATA = {"09_your_data": paths.EXAMPLE_DIR}
#: a file in a chapter's output folder that marks it as written by ``mechaudit execute``
RUN_MARK = ".mechaudit-run"


def data_folder(stem: str, values: dict[str, Any]) -> tuple[Path, str] | None:
    """``(folder, field)`` of the benchmark chapter ``stem`` reads with parameters ``values``: its
    ``data_dir``, else its default folder (``MECHAUDIT_DATA`` or the shipped data; the example set
    for chapter 09). None for a chapter without a ``data_dir`` parameter."""
    if "data_dir" not in values:
        return None
    if values["data_dir"] is not None:
        return Path(values["data_dir"]).expanduser(), "data_dir"
    if stem in DEFAULT_DATA:
        return DEFAULT_DATA[stem], "data_dir"
    return paths.DATA_DIR, paths.DATA_ENV if os.environ.get(paths.DATA_ENV) else "data_dir"


def needed_files(stem: str, values: dict[str, Any], folder: Path | None = None) -> tuple[str, ...]:
    """The files chapter ``stem`` reads from its data folder: the sources, and for the suite
    chapters the template-built suite and any other suite file present in ``folder``."""
    from mechaudit.perturb import SUITE_FILES

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
        reworded = f" --reworded {folder / name.replace('.jsonl', '.yaml')}" if name != SUITE_FILE else ""
        return (f"make it with `mechaudit perturb --hypotheses {folder / 'hypotheses.jsonl'} --vocabulary "
                f"{folder / 'vocabulary.yaml'}{reworded} --out {folder / name}`")
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
        from mechaudit.perturb import load_suite

        if not load_suite(path, valid_only=True):
            raise MechauditError(f"no valid perturbation pair (every pair was excluded): {fix_for(folder, name)}",
                                 file=path, field=field)
    elif name == SOURCE_FILES[-1]:
        from mechaudit.schema import load_benchmark

        load_benchmark(folder)  # the three sources checked against each other (file, line, field)
    return True


def check_compare_paper(values: dict[str, Any]) -> None:
    """``compare_paper: true`` only on the shipped benchmark (``paper.compare_paper_default``)."""
    if values.get("compare_paper") is True:
        from mechaudit.paper import compare_paper_default

        compare_paper_default(True, values.get("data_dir"))


def check_parallel(values: dict[str, Any]) -> None:
    """``parallel_backend`` and ``scheduler`` together (``workflow.parallel.check_engine``: a scheduler
    is a Dask address and goes only with ``dask``), and ``dask`` needs ``dask.distributed`` installed."""
    import importlib.util

    if "parallel_backend" not in values and "scheduler" not in values:
        return
    from mechaudit.workflow.parallel import NEEDS_DASK, check_engine

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
        check_compare_paper(values)
        check_parallel(values)


__all__ = ["check_plans", "check_data", "check_compare_paper", "check_parallel", "check_out_folder", "needed_files",
           "fix_for", "RUN_MARK"]
