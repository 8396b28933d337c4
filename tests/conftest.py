"""Shared fixtures: the repository layout, the fake Anthropic API and one book build per test session."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_anthropic import FAKE_KEY, FakeAnthropic

from mechaudit.book.params import toc_chapters
from mechaudit.paths import REPO_ROOT

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def bench():
    """The shipped benchmark (``data/``), loaded once per session; tests must not mutate it."""
    from mechaudit.schema import load_benchmark

    return load_benchmark()


@pytest.fixture
def api_key(monkeypatch) -> str:
    """A fake ``ANTHROPIC_API_KEY`` in the environment for this test; returns it."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    return FAKE_KEY


@pytest.fixture
def fake_api() -> FakeAnthropic:
    """A fresh in-memory Anthropic API (``fake_anthropic.FakeAnthropic``, default reply)."""
    return FakeAnthropic()


@pytest.fixture(scope="session")
def chapters():
    return toc_chapters()


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> Path:
    """Build the book once (warnings are errors) into a temporary folder; return its html dir.

    The sources are copied (without the venv and build output) so the build cannot touch the
    working tree.
    """
    root = tmp_path_factory.mktemp("book")
    src = root / "src"
    ignore = shutil.ignore_patterns(".venv", "_build", ".git", "__pycache__", ".pytest_cache", "runs")
    shutil.copytree(REPO_ROOT, src, ignore=ignore)
    jb = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run(
        [str(jb), "build", str(src), "-W", "--keep-going"],
        capture_output=True, text=True, timeout=1200,
    )
    if proc.returncode != 0:
        pytest.fail(
            f"jupyter-book build failed (exit {proc.returncode}):\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
        )
    return src / "_build" / "html"
