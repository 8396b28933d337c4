"""Power of the permutation test to detect a 1 v 5 effect, and the design needed for 80 % power.

1. ``find_setting``: a simulator setting whose true (mechanism-key, population) 1 v 5 extra
   divergence is near a target, by Brent root-finding on one factor of ``robustness.vary`` (e.g.
   ``p_find``); the achieved truth is then re-estimated from a larger, independently seeded design
   and reported, never the target.
2. ``simulate_pool``: per instance a large pool of runs at the two depths (``simulate_outcomes``,
   mechanism keys only) and its divergence matrix, simulated once per setting. More instances than
   the benchmark's four are *replicate instances*: copy ``c`` of instance A is instance A simulated
   with another seed (``replication_seed(seed, c)``); they share A's opening hypotheses and
   vocabulary, so they are less different from each other than new instances would be.
3. ``power_replications``: replication ``rep`` draws ``runs_per_depth`` runs per depth and instance
   from the pools **without replacement** (``numpy.random.default_rng(replication_seed(seed, rep))``)
   and tests the 1 v 5 difference: the exact test (``divergence.permutation_test``) when its null
   distribution can be counted fast (``divergence.exact_test_feasible`` with ``EXACT_LIMIT``, e.g.
   the paper's 4 x (5 + 5)), otherwise the Monte Carlo permutation test
   (``divergence.monte_carlo_permutation_test``). A pool's runs are independent draws of the
   simulator, so each replication's runs are too; replications of one setting share the pool, which
   makes them slightly dependent (the binomial standard error ``sqrt(power (1 - power) / n_reps)``
   ignores that; a test checks the pooled estimate against fresh simulation).
4. ``power_table`` / ``runs_needed``: power per target effect and design; the smallest runs per depth
   on a ladder that reaches a power level.

Replications go through ``parallel.parallel_map`` (joblib): each has its own seed, so results do not
depend on ``n_jobs`` or the backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import brentq

from mechaudit.divergence import exact_test_feasible, monte_carlo_permutation_test, permutation_test
from mechaudit.schema import Benchmark
from mechaudit.workflow.depth import outcome_matrices
from mechaudit.workflow.design import Design
from mechaudit.workflow.parallel import chunks, parallel_map
from mechaudit.workflow.robustness import vary
from mechaudit.workflow.simulator import SimulatorParams, instance_models, simulate_outcomes
from mechaudit.workflow.validity import population_truth, replication_seed


def true_effect(bench: Benchmark, instances: Sequence[str], params: SimulatorParams, depths: tuple[int, int] = (1, 5),
                runs_per_depth: int = 40, seed: int = 0) -> tuple[float, float]:
    """Population extra divergence of ``depths`` (pp) and its jackknife standard error (pp)."""
    design = Design(instances=tuple(instances), depths=depths, runs_per_depth=2)
    truth = population_truth(bench, design, params, runs_per_depth=runs_per_depth, seed=seed)
    row = truth[truth.label == f"{depths[0]} v {depths[1]}"].iloc[0]
    return float(row.truth_pp), float(row.truth_se_pp)


@dataclass(frozen=True)
class EffectSetting:
    """A simulator setting chosen for a target effect: ``factors`` passed to ``robustness.vary``;
    ``truth_pp`` / ``truth_se_pp``: its re-estimated true effect (independent seed, larger design)."""

    target_pp: float
    factors: dict = field(hash=False)
    params: SimulatorParams
    truth_pp: float
    truth_se_pp: float


def find_setting(bench: Benchmark, instances: Sequence[str], base: SimulatorParams, target_pp: float,
                 factor: str = "p_find", bracket: Sequence[float] = (0.35, 0.95),
                 fixed: Mapping[str, float] | None = None, depths: tuple[int, int] = (1, 5),
                 runs_per_depth: int = 40, check_runs_per_depth: int = 100, xtol: float = 0.005,
                 seed: int = 0) -> EffectSetting:
    """The value of ``factor`` in ``bracket`` whose true ``depths`` effect equals ``target_pp``.

    Brent's method on ``true_effect(vary(base, **fixed, factor=x)) - target`` (truth from
    ``runs_per_depth`` runs per depth, one seed for every evaluation, so the function of ``x`` is
    deterministic). The effect is not continuous in ``x`` (runs change by discrete events), so the
    root is a point where it crosses the target, to within ``xtol``. The returned truth is
    re-estimated with ``check_runs_per_depth`` runs and seed ``seed + 1``. ``ValueError`` if the
    bracket's ends do not straddle the target.
    """
    fixed = dict(fixed or {})

    def f(x: float) -> float:
        p = vary(base, **fixed, **{factor: x})
        return true_effect(bench, instances, p, depths, runs_per_depth, seed)[0] - target_pp

    lo, hi = map(float, bracket)
    f_lo, f_hi = f(lo), f(hi)
    if f_lo * f_hi > 0:
        raise ValueError(f"target {target_pp} pp not bracketed: {factor}={lo} gives {f_lo + target_pp:.2f} pp, "
                         f"{factor}={hi} gives {f_hi + target_pp:.2f} pp")
    x = float(brentq(f, lo, hi, xtol=xtol)) if f_lo * f_hi < 0 else (lo if f_lo == 0 else hi)
    factors = {**fixed, factor: round(x, 4)}
    params = vary(base, **factors)
    truth, se = true_effect(bench, instances, params, depths, check_runs_per_depth, seed + 1)
    return EffectSetting(float(target_pp), factors, params, truth, se)


def simulate_pool(bench: Benchmark, instances: Sequence[str], params: SimulatorParams, n_instances: int,
                  depths: tuple[int, int] = (1, 5), runs_per_depth: int = 100, seed: int = 0) -> list[np.ndarray]:
    """Divergence matrices of ``n_instances`` run pools, shape ``(2 P, 2 P)`` each (P =
    ``runs_per_depth``; the first P runs at ``depths[0]``).

    Pool ``j`` is instance ``instances[j % len(instances)]``, copy ``c = j // len(instances)``,
    simulated with seed ``replication_seed(seed, c)`` (replicate instances; see the module docstring).
    """
    if n_instances < 1:
        raise ValueError(f"n_instances must be >= 1, got {n_instances}")
    models = instance_models(bench, params.evidence_weight)
    copies = -(-n_instances // len(instances))
    design = Design(instances=tuple(instances), depths=depths, runs_per_depth=runs_per_depth)
    pools: list[np.ndarray] = []
    for c in range(copies):
        mats = outcome_matrices(simulate_outcomes(bench, design, params, seed=replication_seed(seed, c),
                                                  models=models))
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
    """``n_reps`` replicated designs drawn from ``pools`` (``simulate_pool``), one test each.

    Columns: rep, extra_pp, p_value, test ("exact" or "monte carlo"). Replication ``rep`` is seeded by
    ``replication_seed(seed, rep)`` (its run draws and its Monte Carlo splits), so the table does not
    depend on ``n_jobs``, ``parallel_backend`` or ``chunk`` (replications per joblib task).
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
    """Rejection rate at ``alpha`` with its binomial Monte Carlo standard error, and the mean estimate."""
    rate = float(np.mean(reps.p_value.to_numpy() <= alpha))
    n = len(reps)
    return {"n_reps": n, "mean_extra_pp": float(reps.extra_pp.mean()), "power": rate,
            "power_se": float(np.sqrt(rate * (1 - rate) / n)), "test": reps.test.iloc[0]}


def power_table(bench: Benchmark, instances: Sequence[str], settings: Sequence[EffectSetting],
                designs: Sequence[tuple[int, int]], n_reps: int, alpha: float = 0.05,
                ladder: Sequence[int] = (), level: float = 0.8, pool_runs_per_depth: int = 100,
                depths: tuple[int, int] = (1, 5), seed: int = 0, n_resamples: int = 199, n_jobs: int = 1,
                parallel_backend: str | None = None) -> pd.DataFrame:
    """Power of the ``depths`` test per setting and design ``(n_instances, runs_per_depth)``.

    ``designs`` are always evaluated. ``ladder``: runs per depth for ``len(instances)`` instances,
    walked upwards per setting until the power reaches ``level`` (the rest of the ladder is skipped;
    ``runs_needed`` reads the first rung that reaches it). One pool per setting (``simulate_pool``
    with enough replicate instances for the largest design, seed ``seed``); replications seeded
    ``seed + 1``, the same for every design (common random numbers). Columns: target_pp, truth_pp,
    truth_se_pp, n_instances, runs_per_depth, n_reps, mean_extra_pp, power, power_se, test, role
    ("design" or "ladder").
    """
    rows = []
    k0 = len(instances)
    most = max([k for k, _ in designs] + [k0])
    for s in settings:
        pools = simulate_pool(bench, instances, s.params, most, depths, pool_runs_per_depth, seed)
        done: dict[tuple[int, int], dict] = {}
        wanted = [(k, n, "design") for k, n in designs] + [(k0, n, "ladder") for n in sorted(ladder)]
        for k, n, role in wanted:
            if (k, n) not in done:
                reps = power_replications(pools[:k], n, n_reps, seed + 1, n_resamples, n_jobs, parallel_backend)
                done[(k, n)] = {"target_pp": s.target_pp, "truth_pp": s.truth_pp, "truth_se_pp": s.truth_se_pp,
                                "n_instances": k, "runs_per_depth": n, **power_summary(reps, alpha)}
            rows.append(done[(k, n)] | {"role": role})
            if role == "ladder" and done[(k, n)]["power"] >= level:
                break
    return pd.DataFrame(rows)


def runs_needed(table: pd.DataFrame, level: float = 0.8) -> pd.DataFrame:
    """Per target effect and number of instances, the smallest runs per depth in ``table`` (its ladder
    rows if it has a ``role`` column) whose power reaches ``level`` (NaN if none does), with that
    power and the largest design tried."""
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
