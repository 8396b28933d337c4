"""Shared fixtures: the repository layout, the fake Anthropic API, one book build and one shared
fake-API run of the chapters per test session (each made once even under pytest-xdist, see
``session_steps``; with ``--start-steps`` both from the session's start), and the count of kernels
per chapter (``kernel_count``)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import kernel_count
import pytest
import session_steps
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


@pytest.fixture(autouse=True)
def _paper_switch_reset():
    """Each test starts with the process's paper switch on (``mechaudit.paper.shown``), as outside a
    chapter: a test that opens a chapter context on other data turns it off for that test only."""
    from mechaudit import paper

    yield
    paper.show(True)


@pytest.fixture
def small_data_dir(tmp_path) -> Path:
    """A data folder in ``tmp_path``: the shipped benchmark and the first five pairs of the template-built
    perturbation suite (no reworded suite), for steps that read every pair of a suite."""
    from mechaudit.paths import DATA_DIR

    for name in ("vocabulary.yaml", "instances.yaml", "hypotheses.jsonl"):
        shutil.copyfile(DATA_DIR / name, tmp_path / name)
    lines = (DATA_DIR / "perturbations.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "perturbations.jsonl").write_text("".join(lines[:5]), encoding="utf-8")
    return tmp_path


@pytest.fixture
def openings_data_dir(tmp_path) -> Path:
    """A data folder in ``tmp_path``: the shipped benchmark with only its opening hypotheses (5 per
    instance: 40 same-instance pairs) and no perturbation suite, for steps that read every pair of the
    benchmark's hypotheses."""
    import json

    import yaml

    from mechaudit.paths import DATA_DIR

    for name in ("vocabulary.yaml", "instances.yaml"):
        shutil.copyfile(DATA_DIR / name, tmp_path / name)
    instances = yaml.safe_load((DATA_DIR / "instances.yaml").read_text(encoding="utf-8"))["instances"]
    openings = {o for i in instances for o in i["openings"]}
    lines = (DATA_DIR / "hypotheses.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "hypotheses.jsonl").write_text("".join(x for x in lines if json.loads(x)["id"] in openings),
                                               encoding="utf-8")
    return tmp_path


@pytest.fixture
def ascii_locale():
    """The C locale (ASCII) as the default text encoding for this test, as on a machine without a
    UTF-8 locale: a file opened without ``encoding="utf-8"`` then fails on non-ASCII text. (No
    effect in Python's UTF-8 mode, where the default is UTF-8 anyway.)"""
    import locale

    before = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    yield
    locale.setlocale(locale.LC_CTYPE, before)


@pytest.fixture(scope="session")
def chapters():
    return toc_chapters()


def session_base(config) -> Path:
    """The folder the session's steps are made in: the controlling process's base temporary folder,
    which is the parent of every xdist worker's."""
    base = config._tmp_path_factory.getbasetemp()
    return base.parent if hasattr(config, "workerinput") else base


def once_per_session(config, name: str) -> Path:
    """The folder in which the session step ``name`` (``session_steps.STEPS``) was made, made now if
    no process has yet; a step that failed fails the test with its message."""
    try:
        return session_steps.made(session_base(config), name)
    except session_steps.StepFailed as err:
        pytest.fail(str(err))


@pytest.fixture(scope="session")
def built_book(request) -> Path:
    """Build the book once (warnings are errors) into a temporary folder; return its html dir.

    The sources are copied (without the venv and build output) so the build cannot touch the
    working tree.
    """
    return once_per_session(request.config, "book") / "src" / "_build" / "html"


@pytest.fixture(scope="session")
def shared_run(request):
    """The session's one fake-API run of the chapters (``shared_run.SharedRun``)."""
    import shared_run as module

    return module.SharedRun.load(once_per_session(request.config, "shared-run"))


STARTED = pytest.StashKey[list]()


def pytest_addoption(parser) -> None:
    parser.addoption("--start-steps", action="store_true",
                     help="make the book and the shared fake-API run in processes of their own from the start "
                          "of the session (make test), instead of in the first test worker that needs them")


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session) -> None:
    """With ``--start-steps``, in the controlling process: start both session steps before any
    worker does, so they run beside the unit tests instead of keeping a worker waiting."""
    config = session.config
    if config.getoption("--start-steps") and not config.option.collectonly and not hasattr(config, "workerinput"):
        config.stash[STARTED] = [session_steps.start(session_base(config), name) for name in session_steps.STEPS]


def pytest_collection_modifyitems(session, config, items) -> None:
    """With ``--start-steps``: the wheel install (``install`` mark, the longest file: one to three
    minutes, most of it in subprocesses) starts first; the files whose tests read a session step run
    after the others, those reading the book (the shorter step) before those reading the shared run,
    by which time the step is made, so no worker waits for it; the notebooks (nbval, one file of 5 to
    30 s per chapter) run last, so both workers end within one notebook of each other. xdist hands out
    whole files in this order (``--no-loadscope-reorder``); every worker sorts its collection the same
    way, and the order within each part is kept."""
    if not config.getoption("--start-steps"):
        return
    rank: dict[Path, int] = {}
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        need = 3 if item.path.suffix == ".ipynb" else 2 if "shared_run" in names else 1 if "built_book" in names else 0
        rank[item.path] = -1 if item.get_closest_marker("install") else max(rank.get(item.path, 0), need)
    items.sort(key=lambda item: rank[item.path])


def _stop_steps(config) -> None:
    """Stop the steps still running (a session that ended before its tests needed them)."""
    for proc in config.stash.get(STARTED, []):
        session_steps.stop(proc)


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
    _stop_steps(session.config)
    if KERNEL_LOG not in session.config.stash:
        return
    folder, _ = session.config.stash[KERNEL_LOG]
    counts = {}
    if any((folder / "log").glob("kernel-*.txt")):  # reading every chapter costs 0.7 s: only when a kernel ran
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
