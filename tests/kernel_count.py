"""How many kernels ran each chapter during a test session (``make test`` allows two: nbval's and
the shared fake-API run's, or the wheel install's for chapter 01).

Every Jupyter kernel the session starts (nbval's, papermill's in-process, a ``mechaudit execute``
subprocess's, the installed wheel's) inherits ``IPYTHONDIR`` from the session, so it runs the
startup file written here: it appends the SHA-1 of each cell's source to a log file of its own. A
kernel ran chapter ``NN_x`` if it ran a cell whose source belongs to that chapter alone
(``chapter_fingerprints``); kernels of other notebooks (the tests' tiny chapters) match none.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

#: the most kernels one chapter may run per session
MAX_KERNELS_PER_CHAPTER = 2

STARTUP = '''\
def _mechaudit_log_cells(folder):
    import hashlib, os, uuid
    from IPython import get_ipython

    log = os.path.join(folder, f"kernel-{os.getpid()}-{uuid.uuid4().hex[:8]}.txt")

    def record(info):
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(hashlib.sha1(info.raw_cell.encode()).hexdigest() + "\\n")

    get_ipython().events.register("pre_run_cell", record)


_mechaudit_log_cells(LOG_DIR)
del _mechaudit_log_cells
'''


def cell_hash(source: str) -> str:
    return hashlib.sha1(source.encode()).hexdigest()


def install(ipython_dir: Path, log_dir: Path) -> None:
    """An IPython folder whose default profile runs the cell logger (logs go to ``log_dir``)."""
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    log_dir.mkdir(parents=True, exist_ok=True)
    (startup / "00-mechaudit-kernel-count.py").write_text(STARTUP.replace("LOG_DIR", repr(str(log_dir))),
                                                              encoding="utf-8")


def chapter_fingerprints(sources: Iterable[Path]) -> dict[str, str]:
    """Cell hash -> chapter stem, for every code cell whose source occurs in one chapter only."""
    import jupytext

    owners: dict[str, set[str]] = {}
    for source in sources:
        for cell in jupytext.read(source).cells:
            if cell.cell_type == "code" and cell.source.strip():
                owners.setdefault(cell_hash(cell.source), set()).add(source.stem)
    return {h: next(iter(stems)) for h, stems in owners.items() if len(stems) == 1}


def kernel_chapters(log_dir: Path, fingerprints: Mapping[str, str]) -> list[set[str]]:
    """Per kernel log in ``log_dir``: the chapters whose cells that kernel ran (usually one, or none)."""
    return [{fingerprints[h] for h in path.read_text(encoding="utf-8").split() if h in fingerprints}
            for path in sorted(log_dir.glob("kernel-*.txt"))]


def chapter_counts(log_dir: Path, fingerprints: Mapping[str, str]) -> Counter:
    """Kernels per chapter stem."""
    return Counter(stem for stems in kernel_chapters(log_dir, fingerprints) for stem in stems)


def too_many(counts: Mapping[str, int], limit: int = MAX_KERNELS_PER_CHAPTER) -> dict[str, int]:
    return {stem: n for stem, n in sorted(counts.items()) if n > limit}
