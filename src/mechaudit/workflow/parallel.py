"""One place where replication loops fan out: ``joblib`` with a switchable backend.

Every task carries its own seed, so results never depend on ``n_jobs`` or on the backend. The default
(``n_jobs=1``) runs in the calling process. ``n_jobs=2`` uses joblib's default process pool (loky);
a cluster user passes another joblib backend by name, e.g. ``parallel_backend="dask"`` after
creating a ``dask.distributed.Client`` (see ``book/rerun.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from joblib import Parallel, delayed


def parallel_map(fn: Callable[..., Any], tasks: Iterable[tuple], n_jobs: int = 1,
                 parallel_backend: str | None = None) -> list[Any]:
    """``[fn(*task) for task in tasks]``, fanned out with ``joblib.Parallel``; results in task order.

    ``n_jobs``: joblib's worker count (1: sequential, -1: every core); ``parallel_backend``: a joblib
    backend name (``None``: joblib's default, loky). ``fn`` and the task arguments must pickle.
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0:
        raise ValueError(f"n_jobs: expected a non-zero int, got {n_jobs!r}")
    tasks = list(tasks)
    if n_jobs == 1 and parallel_backend in (None, "loky", "sequential"):
        return [fn(*task) for task in tasks]
    return list(Parallel(n_jobs=n_jobs, backend=parallel_backend)(delayed(fn)(*task) for task in tasks))


def chunks(n: int, size: int) -> list[tuple[int, int]]:
    """``(start, stop)`` ranges covering ``range(n)`` in pieces of at most ``size`` (>= 1)."""
    size = max(1, int(size))
    return [(start, min(n, start + size)) for start in range(0, n, size)]
