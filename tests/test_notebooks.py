"""The committed notebooks: paired with their sources, executed, clean, consistent with params."""

from __future__ import annotations

import os
import re

import jupytext
import nbformat
import pytest
import yaml

from mechaudit.book.settings import CHAPTERS, defaults
from mechaudit.paths import PARAMS_DIR, REPO_ROOT

SOURCES = sorted((REPO_ROOT / "notebooks").glob("*.py"))
KEY_PATTERN = re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")
ABSOLUTE_PATHS = [str(REPO_ROOT), "/root/", "/home/", "/tmp/", "site-packages"]


def _code(nb) -> list[str]:
    return [
        c.source.strip()
        for c in nb.cells
        if c.cell_type == "code" and "injected-parameters" not in c.metadata.get("tags", [])
    ]


def _texts(nb):
    """Every text a reader (or nbval) sees in a notebook: sources and text outputs."""
    for cell in nb.cells:
        yield cell.source
        for out in cell.get("outputs", []):
            if "text" in out:
                yield out["text"]
            for mime, value in out.get("data", {}).items():
                if mime.startswith("text/"):
                    yield value if isinstance(value, str) else "".join(value)
            if out.get("output_type") == "error":
                yield "\n".join(out.get("traceback", []))


def test_every_toc_chapter_has_a_source(chapters):
    assert chapters, "no notebook in _toc.yml"
    for chapter in chapters:
        assert chapter.source.exists(), chapter.source


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_ipynb_has_the_code_of_its_source(source):
    ipynb = source.with_suffix(".ipynb")
    assert ipynb.exists(), f"{ipynb.name} missing: run mechaudit execute {source.name}"
    assert _code(nbformat.read(ipynb, as_version=4)) == _code(jupytext.read(source)), (
        f"{ipynb.name} is stale: its code cells differ from {source.name}; re-execute it"
    )


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_committed_notebook_is_executed_and_clean(source):
    nb = nbformat.read(source.with_suffix(".ipynb"), as_version=4)
    assert nb.metadata.kernelspec.name == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), "a code cell was not executed"
    assert any(c.outputs for c in code), "no outputs"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"error output: {errors[0].get('ename')}: {errors[0].get('evalue')}"
    stderr = [o.text for c in code for o in c.outputs if o.output_type == "stream" and o.name == "stderr"]
    assert not stderr, f"stderr output (a warning or a progress bar): {stderr[0][:300]}"
    env_values = {v for k, v in os.environ.items() if len(v) >= 12 and not v.isdigit() and "/" not in v}
    for text in _texts(nb):
        assert not KEY_PATTERN.search(text), "something that looks like an API key"
        for path in ABSOLUTE_PATHS:
            assert path not in text, f"machine path {path!r} in an output"
        leaked = [v for v in env_values if v in text]
        assert not leaked, f"environment variable value in the notebook: {leaked[0][:20]}..."


def test_default_params_hold_only_overrides_of_the_models():
    """params/default.yaml repeats no default of mechaudit.book.settings: it holds overrides only."""
    tree = yaml.safe_load((PARAMS_DIR / "default.yaml").read_text())
    for section, values in tree.items():
        stems = list(CHAPTERS) if section == "common" else [section]
        for stem, (name, value) in ((s, item) for s in stems for item in (values or {}).items()):
            assert defaults(stem).get(name, value) != value, f"default.yaml repeats {stem}.{name} = {value!r}"
    assert all(defaults(stem)["backend"] == "reference" for stem in CHAPTERS), "the committed chapters run offline"
