"""One place where replication loops fan out: ``joblib``, on any of its backends, Dask included.

Every task carries its own seed, so results never depend on ``n_jobs`` or on the backend. A backend
is chosen with joblib's ``parallel_config``, opened by ``parallel_map(..., parallel_backend=NAME)``
or by a caller around any number of library calls::

    with joblib.parallel_config(backend="dask"):
        reps = power_replications(pools, runs_per_depth=10, n_reps=10_000, n_jobs=-1)

For ``"dask"`` (``pip install 'mechaudit[cluster]'``) the tasks go to the current ``dask.distributed``
client (:func:`connect`), whose workers decide how many run at once. See ``book/rerun.md``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from mechaudit.errors import MechauditError

#: the joblib backends the replication loops accept by name (``dask``: a ``dask.distributed`` cluster)
BACKENDS = ("loky", "multiprocessing", "threading", "sequential", "dask")
#: why the Dask engine cannot run, and what installs it
NEEDS_DASK = "the 'dask' backend needs dask.distributed: pip install 'mechaudit[cluster]'"


def check_backend(parallel_backend: str | None) -> None:
    """``MechauditError`` (field ``parallel_backend``) unless the name is in :data:`BACKENDS` or None."""
    if parallel_backend is not None and parallel_backend not in BACKENDS:
        near = difflib.get_close_matches(str(parallel_backend), BACKENDS, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise MechauditError(f"must be one of {', '.join(map(repr, BACKENDS))}, got {parallel_backend!r}{hint}",
                             field="parallel_backend")


def parallel_map(fn: Callable[..., Any], tasks: Iterable[tuple], n_jobs: int = 1,
                 parallel_backend: str | None = None) -> list[Any]:
    """``[fn(*task) for task in tasks]`` through ``joblib.Parallel``, in task order.

    ``n_jobs``: joblib's worker count (1: in this process, -1: every core; ignored by ``"dask"``).
    ``parallel_backend``: one of :data:`BACKENDS` for this call; None keeps the enclosing
    ``parallel_config``'s (default loky). ``fn`` and the tasks must pickle.
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0:
        raise ValueError(f"n_jobs: expected a non-zero int, got {n_jobs!r}")
    check_backend(parallel_backend)
    tasks = list(tasks)
    if n_jobs == 1 and parallel_backend != "dask":
        return [fn(*task) for task in tasks]
    from joblib import Parallel, delayed, parallel_config  # defers joblib: fast `mechaudit --help`

    if parallel_backend is None:
        return list(Parallel(n_jobs=n_jobs)(delayed(fn)(*task) for task in tasks))
    if parallel_backend == "dask":
        _require_client()
    with parallel_config(backend=parallel_backend):
        return list(Parallel(n_jobs=n_jobs)(delayed(fn)(*task) for task in tasks))


def _distributed():
    try:
        import distributed  # defers dask (the optional cluster extra)
    except ImportError:
        raise MechauditError(NEEDS_DASK, field="parallel_backend") from None
    return distributed


def _require_client() -> None:
    """A one-line error unless a ``dask.distributed`` client is current (joblib's dask backend uses it)."""
    distributed = _distributed()
    try:
        distributed.get_client()
    except ValueError:
        raise MechauditError("the 'dask' backend needs a dask.distributed client: call "
                             "mechaudit.workflow.parallel.connect(scheduler) first (a chapter does it from its "
                             "'scheduler' parameter)", field="parallel_backend") from None


def connect(parallel_backend: str | None, scheduler: str | None = None, n_workers: int | None = None):
    """The current ``dask.distributed.Client`` for ``"dask"`` (else None): to ``scheduler``
    (``tcp://host:8786``) or a new local cluster of ``n_workers`` processes; close it when done."""
    check_engine(parallel_backend, scheduler)
    if parallel_backend != "dask":
        return None
    distributed = _distributed()
    if scheduler is not None:
        return distributed.Client(scheduler)
    cluster = distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    return distributed.Client(cluster)


#: the address schemes of ``dask.distributed``'s transports
SCHEDULER_SCHEMES = ("tcp", "tls", "ucx", "ws", "wss")


def scheduler_problem(scheduler: str | None) -> str | None:
    """Why ``scheduler`` is not a Dask scheduler address (``scheme://host:port``; one clause), or None."""
    if scheduler is None:
        return None

    parts = urlsplit(scheduler)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in SCHEDULER_SCHEMES or not parts.hostname or port is None:
        return (f"must be a scheduler address like 'tcp://host:8786' ({'/'.join(SCHEDULER_SCHEMES)}), "
                f"got {scheduler!r}")
    return None


def check_engine(parallel_backend: str | None, scheduler: str | None = None) -> None:
    """``MechauditError`` for a backend not in :data:`BACKENDS`, a ``scheduler`` that is not an
    address, or a ``scheduler`` without the ``"dask"`` backend (it would be unused)."""
    check_backend(parallel_backend)
    why = scheduler_problem(scheduler)
    if why is not None:
        raise MechauditError(why, field="scheduler")
    if scheduler is not None and parallel_backend != "dask":
        raise MechauditError(f"a scheduler is only used with parallel_backend 'dask', not {parallel_backend!r}",
                             field="scheduler")


def chunks(n: int, size: int) -> list[tuple[int, int]]:
    """``(start, stop)`` ranges covering ``range(n)`` in pieces of at most ``size`` (>= 1)."""
    size = max(1, int(size))
    return [(start, min(n, start + size)) for start in range(0, n, size)]
