"""Power of the permutation test to detect a 1 v 5 effect, and the design needed for 80 % power.

1. ``EffectSetting``: a simulator setting (``robustness.vary`` factors) with its true extra divergence.
2. ``simulate_pool``: per instance a large pool of runs at the two depths and its divergence matrix.
   Beyond the benchmark's instances come *replicate instances*: instance A simulated with another
   seed, sharing A's openings and vocabulary (so less different than new instances would be).
3. ``power_replications``: each replication draws its runs from the pools **without replacement** and
   tests the 1 v 5 difference, exactly when ``divergence.exact_test_feasible`` (``EXACT_LIMIT``), else
   by Monte Carlo permutations. Replications sharing a pool share runs: they are not independent.
4. ``power_table``: a setting's replications are spread over ``n_pools`` **independent pools**; the
   power's SE is the batch-means SE over the pools, which includes the pool-to-pool variation a
   binomial SE would miss (both are reported). ``runs_needed``: the first rung reaching a power level.

Each replication has its own seed: results do not depend on ``n_jobs`` or the backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mechaudit.divergence import exact_test_feasible, monte_carlo_permutation_test, permutation_test
from mechaudit.schema import Benchmark
from mechaudit.workflow.depth import outcome_matrices
from mechaudit.workflow.design import Design
from mechaudit.workflow.parallel import chunks, parallel_map
from mechaudit.workflow.simulator import SimulatorParams, instance_models, simulate_outcomes
from mechaudit.workflow.validity import mc_se, replication_seed


@dataclass(frozen=True)
class EffectSetting:
    """A setting of the power study: ``robustness.vary`` ``factors``, the effect it was chosen for
    (``target_pp``, its key in the tables) and its true effect (``truth_pp``, ``truth_se_pp``)."""

    target_pp: float
    factors: dict = field(hash=False)
    params: SimulatorParams
    truth_pp: float
    truth_se_pp: float


def simulate_pool(bench: Benchmark, instances: Sequence[str], params: SimulatorParams, n_instances: int,
                  depths: tuple[int, int] = (1, 5), runs_per_depth: int = 100, seed: int = 0,
                  measure: str = "paper_rates") -> list[np.ndarray]:
    """Divergence matrices (under ``measure``) of ``n_instances`` pools, ``(2 P, 2 P)`` each (P =
    ``runs_per_depth``, first P at ``depths[0]``); pool ``j`` is ``instances[j % len(instances)]`` with
    seed ``replication_seed(seed, j // len(instances))``."""
    if n_instances < 1:
        raise ValueError(f"n_instances must be >= 1, got {n_instances}")
    models = instance_models(bench, params.evidence_weight)
    copies = -(-n_instances // len(instances))
    design = Design(instances=tuple(instances), depths=depths, runs_per_depth=runs_per_depth)
    pools: list[np.ndarray] = []
    for c in range(copies):
        mats = outcome_matrices(simulate_outcomes(bench, design, params, seed=replication_seed(seed, c),
                                                  models=models), measure)
        pools.extend(m.D for m in mats)
    return pools[:n_instances]


#: Largest half of the exact test's meet-in-the-middle used in power loops (126**2 for 4 x (5 + 5)
#: takes milliseconds; 231**2 for 4 x (6 + 6) already takes a fifth of a second).
EXACT_LIMIT = 20_000


def _test(Ds: list[np.ndarray], n_a: int, n_resamples: int, seed: int) -> tuple[float, float, str]:
    if exact_test_feasible(2 * n_a, n_a, len(Ds), limit=EXACT_LIMIT):
        res = permutation_test(Ds, n_a)
        return res.extra, res.p_value, "exact"
    res = monte_carlo_permutation_test(Ds, n_a, n_resamples=n_resamples, seed=seed)
    return res.extra, res.p_value, "monte carlo"


def _replication_chunk(pools: list[np.ndarray], runs_per_depth: int, start: int, stop: int, seed: int,
                       n_resamples: int) -> list[dict]:
    rows = []
    for rep in range(start, stop):
        rep_seed = replication_seed(seed, rep)
        rng = np.random.default_rng(rep_seed)
        Ds = []
        for D in pools:
            P = D.shape[0] // 2
            idx = np.concatenate([rng.choice(P, runs_per_depth, replace=False),
                                  P + rng.choice(P, runs_per_depth, replace=False)])
            Ds.append(D[np.ix_(idx, idx)])
        extra, p, test = _test(Ds, runs_per_depth, n_resamples, rep_seed)
        rows.append({"rep": rep, "extra_pp": 100 * extra, "p_value": p, "test": test})
    return rows


def power_replications(pools: Sequence[np.ndarray], runs_per_depth: int, n_reps: int, seed: int = 0,
                       n_resamples: int = 199, n_jobs: int = 1, parallel_backend: str | None = None,
                       chunk: int = 25) -> pd.DataFrame:
    """``n_reps`` designs drawn from ``pools`` (``simulate_pool``), one test each: rep, extra_pp,
    p_value, test ("exact" or "monte carlo"). Replication ``rep`` is seeded ``replication_seed(seed,
    rep)``: the table does not depend on ``n_jobs``, ``parallel_backend`` or ``chunk`` (per task).
    """
    if n_reps < 1:
        raise ValueError(f"n_reps must be >= 1, got {n_reps}")
    pools = list(pools)
    P = min(D.shape[0] // 2 for D in pools)
    if not 2 <= runs_per_depth <= P:
        raise ValueError(f"runs_per_depth={runs_per_depth}: needs 2 <= runs_per_depth <= pool size {P}")
    tasks = [(pools, runs_per_depth, a, b, seed, n_resamples) for a, b in chunks(n_reps, chunk)]
    rows = [r for part in parallel_map(_replication_chunk, tasks, n_jobs, parallel_backend) for r in part]
    return pd.DataFrame(rows, columns=["rep", "extra_pp", "p_value", "test"])


def power_summary(reps: pd.DataFrame, alpha: float = 0.05) -> dict:
    """Rejection rate at ``alpha``, its SE (batch means over two or more ``pool``s, else binomial)."""
    reject = reps.p_value.to_numpy() <= alpha
    rate, n = float(np.mean(reject)), len(reps)
    binomial = mc_se(rate, n)
    pools = reps["pool"].nunique() if "pool" in reps else 1
    se = (float(pd.Series(reject).groupby(reps["pool"].to_numpy()).mean().std(ddof=1) / np.sqrt(pools))
          if pools > 1 else binomial)
    return {"n_reps": n, "n_pools": pools, "mean_extra_pp": float(reps.extra_pp.mean()), "power": rate,
            "power_se": se, "binomial_se": binomial, "test": reps.test.iloc[0]}


def _pooled_replications(pool_sets: Sequence[Sequence[np.ndarray]], k: int, runs_per_depth: int, n_reps: int,
                         seed: int, n_resamples: int, n_jobs: int, parallel_backend: str | None) -> pd.DataFrame:
    """``n_reps`` replications spread evenly over the independent pool sets (first ``k`` instances of
    each), replication seeds ``replication_seed(seed, pool)``; a ``pool`` column names the set."""
    sizes = [n_reps // len(pool_sets) + (g < n_reps % len(pool_sets)) for g in range(len(pool_sets))]
    parts = [power_replications(pools[:k], runs_per_depth, m, replication_seed(seed, g), n_resamples, n_jobs,
                                parallel_backend).assign(pool=g)
             for g, (pools, m) in enumerate(zip(pool_sets, sizes)) if m > 0]
    return pd.concat(parts, ignore_index=True)


def power_table(bench: Benchmark, instances: Sequence[str], settings: Sequence[EffectSetting],
                designs: Sequence[tuple[int, int]], n_reps: int, alpha: float = 0.05,
                ladder: Sequence[int] = (), level: float = 0.8, pool_runs_per_depth: int = 100,
                depths: tuple[int, int] = (1, 5), seed: int = 0, n_resamples: int = 199, n_jobs: int = 1,
                parallel_backend: str | None = None, n_pools: int = 4, measure: str = "paper_rates") -> pd.DataFrame:
    """Power of the ``depths`` test per setting and design ``(n_instances, runs_per_depth)``.

    ``designs`` are always evaluated; the ``ladder`` (runs per depth, ``len(instances)`` instances) is
    walked upwards until the power reaches ``level``. Per setting, ``n_pools`` pools (seeds
    ``replication_seed(seed, pool)``) share the ``n_reps`` replications, seeded from ``seed + 1`` for
    every design. Columns: target_pp, truth_pp, truth_se_pp, n_instances, runs_per_depth, n_reps,
    n_pools, mean_extra_pp, power, power_se, binomial_se, test, role ("design" or "ladder").
    """
    if n_pools < 1:
        raise ValueError(f"n_pools must be >= 1, got {n_pools}")
    rows = []
    k0 = len(instances)
    most = max([k for k, _ in designs] + [k0])
    for s in settings:
        pool_sets = [simulate_pool(bench, instances, s.params, most, depths, pool_runs_per_depth,
                                   replication_seed(seed, g), measure) for g in range(n_pools)]
        done: dict[tuple[int, int], dict] = {}
        wanted = [(k, n, "design") for k, n in designs] + [(k0, n, "ladder") for n in sorted(ladder)]
        for k, n, role in wanted:
            if (k, n) not in done:
                reps = _pooled_replications(pool_sets, k, n, n_reps, seed + 1, n_resamples, n_jobs, parallel_backend)
                done[(k, n)] = {"target_pp": s.target_pp, "truth_pp": s.truth_pp, "truth_se_pp": s.truth_se_pp,
                                "n_instances": k, "runs_per_depth": n, **power_summary(reps, alpha)}
            rows.append(done[(k, n)] | {"role": role})
            if role == "ladder" and done[(k, n)]["power"] >= level:
                break
    return pd.DataFrame(rows)


def runs_needed(table: pd.DataFrame, level: float = 0.8) -> pd.DataFrame:
    """Per target and number of instances: the first ladder rung reaching ``level`` (NaN if none),
    its power and the largest design tried."""
    rows = []
    if "role" in table:
        table = table[table.role == "ladder"]
    for (target, k), g in table.groupby(["target_pp", "n_instances"], sort=False):
        g = g.sort_values("runs_per_depth")
        ok = g[g.power >= level]
        first = ok.iloc[0] if len(ok) else None
        rows.append({"target_pp": target, "truth_pp": g.truth_pp.iloc[0], "n_instances": k,
                     "runs_needed": int(first.runs_per_depth) if first is not None else np.nan,
                     "power_there": float(first.power) if first is not None else np.nan,
                     "largest_tried": int(g.runs_per_depth.max()),
                     "power_at_largest": float(g.power.iloc[-1])})
    return pd.DataFrame(rows)
