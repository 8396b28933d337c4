"""One place where replication loops fan out: ``joblib``, on any of its backends, Dask included.

Every task carries its own seed, so results never depend on ``n_jobs`` or on the backend. The default
(``n_jobs=1``) runs in the calling process; ``n_jobs=2`` uses joblib's default process pool (loky).

The one documented way to choose another backend, with joblib >= 1.4, is joblib's own
``parallel_config``; ``parallel_map(..., parallel_backend=NAME)`` opens it for the call, and a caller
may open it around any number of library calls instead::

    with joblib.parallel_config(backend="dask"):
        reps = power_replications(pools, runs_per_depth=10, n_reps=10_000, n_jobs=-1)

For ``"dask"`` (``pip install 'mechaudit[cluster]'``), joblib sends the tasks to the current
``dask.distributed`` client: :func:`connect` makes one (to a scheduler address, or to a new local
cluster of processes) and the cluster's workers, not ``n_jobs``, decide how many run at once.
See ``book/rerun.md``.
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
    """Raise ``MechauditError`` (one line, field ``parallel_backend``) unless the name is one of
    :data:`BACKENDS` or None (joblib's default, or the backend of an enclosing ``parallel_config``)."""
    if parallel_backend is not None and parallel_backend not in BACKENDS:
        near = difflib.get_close_matches(str(parallel_backend), BACKENDS, n=1)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        raise MechauditError(f"must be one of {', '.join(map(repr, BACKENDS))}, got {parallel_backend!r}{hint}",
                             field="parallel_backend")


def parallel_map(fn: Callable[..., Any], tasks: Iterable[tuple], n_jobs: int = 1,
                 parallel_backend: str | None = None) -> list[Any]:
    """``[fn(*task) for task in tasks]``, fanned out with ``joblib.Parallel``; results in task order.

    ``n_jobs``: joblib's worker count (1: in the calling process, -1: every core; ignored by
    ``"dask"``, whose cluster decides). ``parallel_backend``: one of :data:`BACKENDS`, opened with
    ``joblib.parallel_config`` for this call; None keeps the backend of an enclosing
    ``parallel_config`` (joblib's default, loky, when there is none). ``fn`` and the task arguments
    must pickle.
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
    """The ``dask.distributed.Client`` the replication loops use when ``parallel_backend`` is
    ``"dask"``, else None (nothing to connect). ``scheduler``: a scheduler address
    (``tcp://host:8786``); None starts a local cluster of ``n_workers`` processes (None: one per
    core) on this machine. The client becomes the current one; close it when done (``client.close()``,
    and ``client.cluster.close()`` for a local cluster). Bad names are refused by :func:`check_engine`."""
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
    """Raise ``MechauditError`` (one line naming the field) for a backend name not in :data:`BACKENDS`,
    a ``scheduler`` that is not an address, or a ``scheduler`` with a backend other than ``"dask"``
    (it would be silently unused)."""
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
