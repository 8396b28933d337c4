"""Execute the book's chapters: jupytext source -> papermill -> executed ``.ipynb``.

A chapter's source of truth is ``notebooks/NN_topic.py`` (jupytext py:percent). Executing it
writes ``notebooks/NN_topic.ipynb`` (the committed reference that the book renders and nbval
checks) or, with ``out_dir``, a copy in a run folder that leaves the reference untouched.

Parameters come from a parameter-set file (``params/default.yaml``): its ``common`` section is
offered to every notebook (a notebook takes the names its parameters cell defines), and the
section named after the notebook's stem must only hold names that notebook defines. Overrides
(``-p NAME VALUE``) must name a defined parameter too: unlike plain papermill, an unknown name is
an error. Only values that differ from the notebook's own defaults are injected, so executing with
the defaults leaves the notebook's cells exactly those of its source.
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import yaml

from mechaudit.paths import PARAMS_DIR, REPO_ROOT

DEFAULT_PARAMS = PARAMS_DIR / "default.yaml"
KERNEL = "python3"
#: Environment given to every executed notebook: no hub access, deterministic hashing.
KERNEL_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONHASHSEED": "0",
              "TOKENIZERS_PARALLELISM": "false"}


class ParameterError(ValueError):
    """A parameter that a notebook does not define, or a malformed parameters cell or file."""


class NotebookExecutionError(RuntimeError):
    """A cell of a notebook raised; the message names the notebook, the cell and the error."""


@dataclass(frozen=True)
class Chapter:
    """One notebook of the book: its jupytext source and its paired executed notebook."""

    source: Path

    @property
    def stem(self) -> str:
        return self.source.stem

    @property
    def ipynb(self) -> Path:
        return self.source.with_suffix(".ipynb")


def toc_chapters(toc: Path = REPO_ROOT / "_toc.yml") -> list[Chapter]:
    """The notebooks listed in the book's table of contents, in reading order."""
    with open(toc, encoding="utf-8") as fh:
        tree = yaml.safe_load(fh)
    files: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("file"), str):
                files.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(tree)
    root = toc.parent
    return [Chapter(root / f"{f}.py") for f in files if f.startswith("notebooks/") and (root / f"{f}.py").exists()]


def resolve_chapter(name: str | Path, chapters: Iterable[Chapter] | None = None) -> Chapter:
    """A chapter from a path (``notebooks/01_problem.py`` or ``.ipynb``) or a stem (``01_problem``)."""
    path = Path(name)
    if path.suffix in {".py", ".ipynb"} and path.with_suffix(".py").exists():
        return Chapter(path.with_suffix(".py").resolve())
    for chapter in chapters if chapters is not None else toc_chapters():
        if chapter.stem == path.stem or chapter.stem.startswith(f"{path.stem}_"):
            return chapter
    raise FileNotFoundError(f"no notebook source for {str(name)!r} (expected notebooks/NN_topic.py)")


def notebook_parameters(source: Path) -> dict[str, Any]:
    """Names and default values of the cell tagged ``parameters`` in a py:percent source.

    The cell may hold only assignments of literals (numbers, strings, None, lists, dicts).
    """
    import jupytext

    nb = jupytext.read(source)
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if len(cells) != 1:
        raise ParameterError(f"{source.name}: expected exactly one cell tagged 'parameters', found {len(cells)}")
    params: dict[str, Any] = {}
    tree = ast.parse(cells[0].source, filename=str(source))
    for node in tree.body:
        if not (isinstance(node, (ast.Assign, ast.AnnAssign))):
            raise ParameterError(f"{source.name}: parameters cell line {node.lineno}: only assignments allowed")
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            if not isinstance(target, ast.Name):
                raise ParameterError(f"{source.name}: parameters cell line {node.lineno}: assign to a plain name")
            try:
                params[target.id] = ast.literal_eval(node.value)
            except ValueError as err:
                raise ParameterError(
                    f"{source.name}: parameters cell line {node.lineno}: {target.id} is not a literal"
                ) from err
    return params


def load_param_set(path: Path, stem: str, defined: dict[str, Any]) -> dict[str, Any]:
    """Parameters for notebook ``stem`` from a parameter-set file (``common`` + the notebook's section)."""
    with open(path, encoding="utf-8") as fh:
        tree = yaml.safe_load(fh) or {}
    if not isinstance(tree, dict):
        raise ParameterError(f"{path}: expected a mapping of sections")
    common = tree.get("common") or {}
    section = tree.get(stem) or {}
    unknown = sorted(set(section) - set(defined))
    if unknown:
        raise ParameterError(f"{path}: section {stem!r} sets {unknown}, which {stem} does not define")
    values = {k: v for k, v in common.items() if k in defined}
    values.update(section)
    return values


def parse_override(value: str) -> Any:
    """A ``-p NAME VALUE`` value: YAML scalar/list syntax (``7`` -> 7, ``0.3``, ``[1, 2]``, ``anthropic``)."""
    return yaml.safe_load(value)


def resolve_parameters(
    chapter: Chapter, params_file: Path | None = DEFAULT_PARAMS, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The parameters to inject: file values and overrides that differ from the notebook's defaults."""
    defined = notebook_parameters(chapter.source)
    values = load_param_set(params_file, chapter.stem, defined) if params_file else {}
    overrides = overrides or {}
    unknown = sorted(set(overrides) - set(defined))
    if unknown:
        raise ParameterError(
            f"{chapter.stem} does not define parameter(s) {', '.join(unknown)}; it defines: {', '.join(defined)}"
        )
    values.update(overrides)
    return {k: v for k, v in values.items() if not (defined[k] == v and type(defined[k]) is type(v))}


def _strip_volatile_metadata(nb) -> None:
    """Remove timings and paths that papermill records, so re-execution gives identical files."""
    nb.metadata.pop("papermill", None)
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)


def execute_chapter(
    chapter: Chapter,
    parameters: dict[str, Any] | None = None,
    out_dir: Path | None = None,
    log: Callable[[str], None] | None = None,
) -> Path:
    """Execute one chapter with papermill and return the path of the executed notebook.

    The notebook runs in ``notebooks/`` with ``KERNEL_ENV`` set; it is written to a temporary file
    first and moved into place only when every cell succeeded, so a failure never clobbers the
    committed reference.
    """
    import jupytext
    import nbformat
    import papermill

    target = (Path(out_dir) / chapter.ipynb.name) if out_dir else chapter.ipynb
    target.parent.mkdir(parents=True, exist_ok=True)
    nb = jupytext.read(chapter.source)
    nb.metadata.setdefault("jupytext", {})["formats"] = "ipynb,py:percent"
    for i, cell in enumerate(nb.cells):  # stable ids: re-execution gives an identical file
        cell.id = f"cell-{i:03d}"
    with tempfile.TemporaryDirectory(prefix="mechaudit-") as tmp:
        src = Path(tmp) / f"{chapter.stem}.in.ipynb"
        out = Path(tmp) / f"{chapter.stem}.ipynb"
        nbformat.write(nb, src)
        saved = {k: os.environ.get(k) for k in KERNEL_ENV}
        os.environ.update(KERNEL_ENV)
        try:
            papermill.execute_notebook(
                str(src), str(out), parameters=parameters or {}, kernel_name=KERNEL,
                cwd=str(chapter.source.parent), progress_bar=False, log_output=False,
            )
        except papermill.PapermillExecutionError as err:
            raise NotebookExecutionError(
                f"{chapter.source.name}: cell {err.cell_index} (execution count {err.exec_count}) raised "
                f"{err.ename}: {err.evalue}"
            ) from None
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
        executed = nbformat.read(out, as_version=4)
        _strip_volatile_metadata(executed)
        nbformat.write(executed, out)
        shutil.move(str(out), target)
    return target


def execute_chapters(
    names: Iterable[str | Path] = (),
    params_file: Path | None = DEFAULT_PARAMS,
    overrides: dict[str, Any] | None = None,
    out_dir: Path | None = None,
    stream=sys.stderr,
) -> list[Path]:
    """Execute the named chapters (default: every chapter in TOC order), one progress line each."""
    chapters = [resolve_chapter(n) for n in names] or toc_chapters()
    plans = [(c, resolve_parameters(c, params_file, overrides)) for c in chapters]  # fail before running
    written = []
    for i, (chapter, params) in enumerate(plans, start=1):
        shown = ", ".join(f"{k}={v!r}" for k, v in params.items()) or "defaults"
        print(f"[{i}/{len(plans)}] {chapter.stem} ({shown}) ...", file=stream, flush=True)
        start = time.perf_counter()
        path = execute_chapter(chapter, params, out_dir)
        print(f"[{i}/{len(plans)}] {chapter.stem} done in {time.perf_counter() - start:.1f} s -> "
              f"{_display_path(path)}", file=stream, flush=True)
        written.append(path)
    return written


def _display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)
