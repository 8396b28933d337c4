"""The replication loops on a real Dask cluster: a ``LocalCluster`` of two worker processes on this
machine runs a power study and a robustness grid with results identical to ``n_jobs=1``, by the two
routes ``book/rerun.md`` documents (``parallel_backend="dask"`` and ``joblib.parallel_config``), and
the tasks really run on the workers (their process ids are not ours)."""

from __future__ import annotations

import os

import joblib
import pandas as pd
import pytest

distributed = pytest.importorskip("distributed", reason="the [cluster] extra (dask[distributed]) is not installed")

from mechaudit.errors import MechauditError
from mechaudit.schema import load_benchmark
from mechaudit.workflow import load_design, load_simulator_params
from mechaudit.workflow.parallel import connect, parallel_map
from mechaudit.workflow.power import power_replications, simulate_pool
from mechaudit.workflow.robustness import grid, truth_grid, vary


def _pid(_: int) -> int:
    return os.getpid()


@pytest.fixture(scope="module")
def client():
    # what a chapter does with parallel_backend "dask" and no scheduler: a local cluster of processes
    client = connect("dask", n_workers=2)
    assert isinstance(client.cluster, distributed.LocalCluster) and len(client.cluster.workers) == 2
    yield client
    client.close()
    client.cluster.close()


@pytest.fixture(scope="module")
def sim():
    bench = load_benchmark()
    return bench, load_design(instances=[i.id for i in bench.instances]), load_simulator_params()


def test_dask_without_a_client_is_one_line() -> None:
    needs = "field 'parallel_backend': the 'dask' backend needs a dask.distributed client"
    with pytest.raises(MechauditError, match=needs):
        parallel_map(_pid, [(1,)], parallel_backend="dask")
    with pytest.raises(MechauditError, match="did you mean 'dask'"):
        parallel_map(_pid, [(1,)], n_jobs=2, parallel_backend="dsak")


def test_tasks_run_on_the_cluster_workers(client) -> None:
    pids = parallel_map(_pid, [(i,) for i in range(24)], parallel_backend="dask")
    workers = set(client.run(os.getpid).values())
    assert len(workers) == 2 and os.getpid() not in workers
    assert set(pids) <= workers and len(pids) == 24


def test_power_study_on_the_cluster_equals_n_jobs_1(client, sim) -> None:
    bench, design, base = sim
    pools = simulate_pool(bench, list(design.instances), vary(base, p_find=0.66), n_instances=4, runs_per_depth=12,
                          seed=4, measure="paper_rates")
    one = power_replications(pools, 5, 24, seed=9, n_jobs=1)
    dask = power_replications(pools, 5, 24, seed=9, n_jobs=-1, parallel_backend="dask", chunk=3)
    pd.testing.assert_frame_equal(one, dask)
    with joblib.parallel_config(backend="dask"):  # the other documented route: any library call inside
        pd.testing.assert_frame_equal(one, power_replications(pools, 5, 24, seed=9, n_jobs=-1, chunk=3))
    assert one["p_value"].between(0, 1).all() and one["p_value"].nunique() > 1


def test_robustness_grid_on_the_cluster_equals_n_jobs_1(client, sim) -> None:
    bench, design, base = sim
    points = grid({"p_find": [0.4, 0.8], "conceded": [0.6, 1.0]})
    one = truth_grid(bench, design, base, points, runs_per_depth=4, seed=5, n_jobs=1)
    dask = truth_grid(bench, design, base, points, runs_per_depth=4, seed=5, n_jobs=-1, parallel_backend="dask")
    pd.testing.assert_frame_equal(one, dask)
    assert len(one) == 4 and one.notna().all().all()


def test_connect_to_a_scheduler_address(client) -> None:
    """``connect(parallel_backend, scheduler)`` is what a chapter calls with ``-p scheduler tcp://...``."""
    other = connect("dask", client.scheduler.address)
    try:
        assert other.scheduler.address == client.scheduler.address
        workers = set(other.run(os.getpid).values())
        assert set(parallel_map(_pid, [(i,) for i in range(8)], parallel_backend="dask")) <= workers
    finally:
        other.close()
    assert connect("loky") is None
    with pytest.raises(MechauditError, match="field 'scheduler': a scheduler is only used with parallel_backend"):
        connect("loky", client.scheduler.address)
