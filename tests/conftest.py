"""Shared fixtures: the repository layout, the fake Anthropic API, one book build and one shared
fake-API run of the chapters per test session (each computed once even under pytest-xdist), and
the count of kernels per chapter (``kernel_count``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import kernel_count
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


def once_per_session(tmp_path_factory, name: str, make) -> Path:
    """The folder in which ``make(folder)`` ran, once per test session: under pytest-xdist the first
    worker to ask runs it while the others wait on a file lock, then every worker reads the
    folder (xdist's documented recipe). If ``make`` failed, every later ask fails with its message
    instead of running it again."""
    from filelock import FileLock

    workers = os.environ.get("PYTEST_XDIST_WORKER")
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if workers else base) / name  # the parent is this session's, shared by its workers
    with FileLock(str(folder) + ".lock"):
        failed = folder.with_name(name + ".failed")
        if failed.exists():
            pytest.fail(f"{name} failed earlier in this session:\n{failed.read_text()}")
        if not (folder / ".done").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            try:
                make(folder)
            except BaseException as err:
                failed.write_text(f"{type(err).__name__}: {err}")
                raise
            (folder / ".done").write_text("")
    return folder


def _build_book(folder: Path) -> None:
    src = folder / "src"
    ignore = shutil.ignore_patterns(".venv", "_build", ".git", "__pycache__", ".pytest_cache", "runs")
    shutil.copytree(REPO_ROOT, src, ignore=ignore)
    jb = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run(
        [str(jb), "build", str(src), "-W", "--keep-going"],
        capture_output=True, text=True, timeout=1200,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"jupyter-book build failed (exit {proc.returncode}):\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
        )


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> Path:
    """Build the book once (warnings are errors) into a temporary folder; return its html dir.

    The sources are copied (without the venv and build output) so the build cannot touch the
    working tree.
    """
    return once_per_session(tmp_path_factory, "book", _build_book) / "src" / "_build" / "html"


@pytest.fixture(scope="session")
def shared_run(tmp_path_factory):
    """The session's one fake-API run of the chapters (``shared_run.SharedRun``)."""
    import shared_run as module

    return module.SharedRun.load(once_per_session(tmp_path_factory, "shared-run", module.run))


# ------------------------------------------------------------------------------ kernel count

KERNEL_LOG = pytest.StashKey[tuple]()
KERNEL_COUNTS = pytest.StashKey[dict]()


def pytest_configure(config) -> None:
    """In the controlling process (not an xdist worker, which inherits the environment): every
    kernel of the session logs the cells it runs (``kernel_count``)."""
    if hasattr(config, "workerinput"):
        return
    folder = Path(tempfile.mkdtemp(prefix="mechaudit-kernels-"))
    kernel_count.install(folder / "ipython", folder / "log")
    config.stash[KERNEL_LOG] = (folder, os.environ.get("IPYTHONDIR"))
    os.environ["IPYTHONDIR"] = str(folder / "ipython")


def pytest_sessionfinish(session) -> None:
    """No chapter ran in more than ``MAX_KERNELS_PER_CHAPTER`` kernels, or the session fails."""
    if KERNEL_LOG not in session.config.stash:
        return
    folder, _ = session.config.stash[KERNEL_LOG]
    fingerprints = kernel_count.chapter_fingerprints(sorted((REPO_ROOT / "notebooks").glob("*.py")))
    counts = dict(sorted(kernel_count.chapter_counts(folder / "log", fingerprints).items()))
    session.config.stash[KERNEL_COUNTS] = counts
    if kernel_count.too_many(counts):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(tryfirst=True)
def pytest_terminal_summary(terminalreporter, config) -> None:
    counts = config.stash.get(KERNEL_COUNTS, None)
    if counts is None:
        return
    limit = kernel_count.MAX_KERNELS_PER_CHAPTER
    shown = ", ".join(f"{stem} {n}" for stem, n in counts.items()) or "none"
    over = kernel_count.too_many(counts)
    terminalreporter.write_sep("=", "kernels per chapter")
    terminalreporter.write_line(f"{shown} (at most {limit} each)")
    if over:
        terminalreporter.write_line(f"FAILED: chapters executed more than {limit} times: {over}", red=True)


def pytest_unconfigure(config) -> None:
    if KERNEL_LOG in config.stash:
        folder, before = config.stash[KERNEL_LOG]
        if before is None:
            os.environ.pop("IPYTHONDIR", None)
        else:
            os.environ["IPYTHONDIR"] = before
        shutil.rmtree(folder, ignore_errors=True)
