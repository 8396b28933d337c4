"""The session's two expensive steps, each made once per test session: the book build (``book``) and
the shared fake-API run of the chapters (``shared-run``, :mod:`shared_run`).

``made(folder, name)`` makes a step in ``folder`` under a file lock: the first process to ask makes
it while the others wait, then every one reads the folder (pytest-xdist's documented recipe). If the
step failed, every later ask fails with its message instead of making it again.

``python tests/session_steps.py FOLDER NAME`` makes one step in its own process: ``make test`` starts
both this way when the session starts (``--start-steps``), so they run beside the unit tests instead
of keeping a test worker waiting; it prints ``locked`` once it holds the lock.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from filelock import FileLock

from mechaudit.paths import REPO_ROOT


def build_book(folder: Path) -> None:
    """The book built with warnings as errors from a copy of the sources (without the venv and build
    output, so the build cannot touch the working tree) into ``folder/src/_build/html``."""
    src = folder / "src"
    ignore = shutil.ignore_patterns(".venv", "_build", ".git", "__pycache__", ".pytest_cache", "runs")
    shutil.copytree(REPO_ROOT, src, ignore=ignore)
    jb = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run([str(jb), "build", str(src), "-W", "--keep-going"], capture_output=True, text=True,
                          timeout=1200)
    if proc.returncode != 0:
        raise RuntimeError(
            f"jupyter-book build failed (exit {proc.returncode}):\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}"
        )


def shared_run(folder: Path) -> None:
    import shared_run as module

    module.run(folder)


STEPS = {"book": build_book, "shared-run": shared_run}


class StepFailed(RuntimeError):
    """A step failed, now or earlier in the session (the message is its error)."""


def made(base: Path, name: str, on_lock=None) -> Path:
    """``base/name`` with step ``name`` made in it (made now unless it already is); ``on_lock()`` is
    called once the lock is held. Raises :class:`StepFailed` if the step fails or failed before."""
    folder = base / name
    with FileLock(str(folder) + ".lock"):
        if on_lock is not None:
            on_lock()
        failed = folder.with_name(name + ".failed")
        if failed.exists():
            raise StepFailed(f"{name} failed earlier in this session:\n{failed.read_text()}")
        if not (folder / ".done").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            try:
                STEPS[name](folder)
            except BaseException as err:
                failed.write_text(f"{type(err).__name__}: {err}")
                raise StepFailed(f"{name} failed: {type(err).__name__}: {err}") from err
            (folder / ".done").write_text("")
    return folder


def start(base: Path, name: str) -> subprocess.Popen:
    """Make step ``name`` under ``base`` in a new process; returns once that process holds the lock."""
    proc = subprocess.Popen([sys.executable, __file__, str(base), name], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=Path(__file__).parent,
                            start_new_session=True)  # its own process group: stop() ends its children too
    proc.stdout.readline()  # "locked" (or nothing, if it failed to start: the tests then make the step)
    return proc


def stop(proc: subprocess.Popen) -> None:
    """End a step :func:`start` started, with every process it started, if it is still running."""
    import os
    import signal

    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        made(Path(sys.argv[1]), sys.argv[2], on_lock=lambda: print("locked", flush=True))
    except StepFailed:
        sys.exit(1)  # the reason is in NAME.failed, where the tests read it
