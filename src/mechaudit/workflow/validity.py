"""Validity of the critique-depth analysis on simulated data with known ground truth.

- ``population_truth``: the simulator's true extra divergence per depth comparison under each truth
  measure (``depth.MEASURES``), from a large design (an instance's all-pairs extra divergence is an
  unbiased U-statistic of its population value) with a delete-one-run jackknife standard error.
- ``replicate``: independent replications of a design, per rule the estimate and its exact p-value.
- ``validity_summary``: per rule and comparison bias, sampling SD, RMSE, interval coverage and the
  rejection rate (the test's size under the null simulator), each with its Monte Carlo error.
- ``max_bias_z``, ``size_z``, ``coverage_range``, ``low_coverage``: what a summary says, in Monte
  Carlo SEs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from tqdm import tqdm

from mechaudit.divergence import comparison_matrix, extra_divergence, same_depth_divergence
from mechaudit.schema import Benchmark
from mechaudit.workflow.depth import (
    RuleLike,
    depth_table,
    extra_ceiling,
    instance_matrices,
    keys_function,
    measure_of,
    outcome_matrices,
)
from mechaudit.workflow.design import Design
from mechaudit.workflow.parallel import parallel_map
from mechaudit.workflow.simulator import SimulatorParams, instance_models, simulate, simulate_outcomes


def replication_seed(seed: int, rep: int) -> int:
    """Independent 32-bit seed of replication ``rep`` (``SeedSequence([seed, rep])``)."""
    return int(np.random.SeedSequence([seed, rep]).generate_state(1)[0])


def jackknife_se(D: np.ndarray, n_a: int) -> float:
    """Two-sample delete-one-run jackknife SE of ``extra_divergence(D, n_a)``:
    ``var = sum_g (n_g - 1) / n_g * sum_{i in g} (theta_-i - mean_g)^2``. ``D``: symmetric ``(n, n)``,
    first ``n_a`` runs at depth a; >= 3 runs per group."""
    D = np.asarray(D, dtype=float)
    n = D.shape[0]
    n_b = n - n_a
    if min(n_a, n_b) < 3:
        raise ValueError(f"jackknife needs >= 3 runs per depth, got {n_a} and {n_b}")
    D = D - np.diag(np.diag(D))
    C, WA, WB = D[:n_a, n_a:], D[:n_a, :n_a], D[n_a:, n_a:]
    cross, wa, wb = C.sum(), WA.sum() / 2, WB.sum() / 2

    def pairs(k: int) -> float:
        return k * (k - 1) / 2

    in_a = (cross - C.sum(axis=1)) / ((n_a - 1) * n_b) - (wa - WA.sum(axis=1) + wb) / (pairs(n_a - 1) + pairs(n_b))
    in_b = (cross - C.sum(axis=0)) / (n_a * (n_b - 1)) - (wa + wb - WB.sum(axis=1)) / (pairs(n_a) + pairs(n_b - 1))
    var = sum((len(t) - 1) / len(t) * np.sum((t - t.mean()) ** 2) for t in (in_a, in_b))
    return float(np.sqrt(var))


def truth_seed(seed: int, index: int = 0) -> int:
    """Seed of ``population_truth``'s ``index``-th design (counts down, apart from ``replicate``'s)."""
    return replication_seed(seed, 2**31 - 1 - index)


def mc_se(rate: float | np.ndarray | pd.Series, n: int | np.ndarray | pd.Series
          ) -> float | np.ndarray | pd.Series:
    """Monte Carlo SE ``sqrt(rate (1 - rate) / n)`` of a rate from ``n`` replications (numpy broadcast)."""
    se = np.sqrt(rate * (1 - rate) / n)
    return float(se) if np.ndim(se) == 0 else se


def max_bias_z(summary: pd.DataFrame, rule: str | Sequence[str] = "mechanism_key") -> float:
    """The largest ``|bias_pp| / bias_se_pp`` of ``rule`` (one name or several) over its rows of a
    ``validity_summary`` or ``robustness.rule_bias``; NaN without rows or with a non-finite ratio."""
    sub = summary[summary.rule.isin([rule] if isinstance(rule, str) else list(rule))]
    z = sub.bias_pp.abs() / sub.bias_se_pp
    return float(z.max()) if len(z) and np.isfinite(z).all() else float("nan")


def size_z(summary: pd.DataFrame, alpha: float, rule: str | Sequence[str] = "mechanism_key") -> pd.Series:
    """``(rejection rate - alpha) / mc_se(alpha, n_reps)`` per comparison (per (rule, comparison)
    for several rules) of a ``validity_summary`` under the null simulator."""
    names = [rule] if isinstance(rule, str) else list(rule)
    sub = summary[summary.rule.isin(names)].set_index("comparison" if len(names) == 1 else ["rule", "comparison"])
    return (sub.rejection_rate - alpha) / mc_se(alpha, sub.n_reps)


def coverage_range(summary: pd.DataFrame, rules: Sequence[str]) -> tuple[float, float]:
    """Smallest and largest ``coverage`` of ``rules`` in a ``validity_summary`` (nan, nan without)."""
    cov = summary[summary.rule.isin(list(rules))].coverage.dropna()
    return (float(cov.min()), float(cov.max())) if len(cov) else (float("nan"), float("nan"))


def low_coverage(summary: pd.DataFrame, rules: Sequence[str], level: float = 0.95) -> pd.DataFrame:
    """``rules``' summary rows whose coverage lies over two ``mc_se(level, n_reps)`` below ``level``."""
    sub = summary[summary.rule.isin(list(rules))].dropna(subset=["coverage"])
    return sub[sub.coverage < level - 2 * mc_se(level, sub.n_reps)]


def pooled_se(ses: Sequence[float]) -> float:
    """Standard error of the mean of independent estimates with standard errors ``ses``."""
    return float(ses[0]) if len(ses) == 1 else float(np.sqrt(np.sum(np.square(ses)))) / len(ses)


def population_truth(bench: Benchmark, design: Design, params: SimulatorParams, runs_per_depth: int = 40,
                     seed: int = 0, measures: Sequence[str] = ("mechanism_key",), n_seeds: int = 1) -> pd.DataFrame:
    """True divergences (pp) of the simulator under each of ``measures`` (``depth.MEASURES``), from
    ``n_seeds`` designs (``truth_seed(seed, i)``) of ``runs_per_depth`` runs per depth.

    Rows per measure: panel "extra" (label ``a v b``) and "same-depth" (``K=k``), instance means
    averaged over the designs. Columns: measure, panel, label, truth_pp, truth_se_pp (jackknife) and
    max_extra_pp (``depth.extra_ceiling``), the last two NaN on same-depth rows.
    """
    if n_seeds < 1:
        raise ValueError(f"n_seeds must be >= 1, got {n_seeds}")
    big = design.model_copy(update={"runs_per_depth": runs_per_depth})
    designs = [simulate_outcomes(bench, big, params, seed=truth_seed(seed, i)) for i in range(n_seeds)]
    rows = []
    for measure in measures:
        mats = [outcome_matrices(outcomes, measure) for outcomes in designs]
        for a, b in design.comparisons():
            subs = [[comparison_matrix(m.D, m.depths, a, b) for m in ms] for ms in mats]
            vals = [np.mean([extra_divergence(D, n_a) for D, n_a in sub]) for sub in subs]
            ses = [np.sqrt(sum(jackknife_se(D, n_a) ** 2 for D, n_a in sub)) / len(sub) for sub in subs]
            ceilings = [np.mean([extra_ceiling(D, n_a) for D, n_a in sub]) for sub in subs]
            rows.append({"measure": measure, "panel": "extra", "label": f"{a} v {b}",
                         "truth_pp": 100 * float(np.mean(vals)), "truth_se_pp": 100 * pooled_se(ses),
                         "max_extra_pp": 100 * float(np.mean(ceilings))})
        for k in design.depths:
            vals = [np.mean([same_depth_divergence(m.D, m.depths)[k] for m in ms]) for ms in mats]
            rows.append({"measure": measure, "panel": "same-depth", "label": f"K={k}",
                         "truth_pp": 100 * float(np.mean(vals)), "truth_se_pp": np.nan, "max_extra_pp": np.nan})
    return pd.DataFrame(rows, columns=["measure", "panel", "label", "truth_pp", "truth_se_pp", "max_extra_pp"])


def replicate(bench: Benchmark, design: Design, params: SimulatorParams, rules: Mapping[str, RuleLike],
              n_reps: int, seed: int = 0, progress: bool = False, n_jobs: int = 1,
              parallel_backend: str | None = None, level: float = 0.95, n_boot: int = 0) -> pd.DataFrame:
    """Table 1 of ``n_reps`` simulated replications of ``design`` under every rule: rep, rule,
    comparison, extra_pp, ci_low_pp, ci_high_pp (bootstrap, NaN when ``n_boot`` is 0), p_value.

    A rule with a fast path over ids (``depth.keys_function``) reads ``simulate_outcomes``. Each
    replication has its own seed: the table does not depend on ``n_jobs`` or ``parallel_backend``.
    """
    if n_reps < 1:
        raise ValueError(f"n_reps must be >= 1, got {n_reps}")
    models = instance_models(bench, params.evidence_weight)
    tasks = [(bench, design, params, dict(rules), rep, replication_seed(seed, rep), models, level, n_boot)
             for rep in tqdm(range(n_reps), disable=not progress, desc="replications")]
    out = parallel_map(_replicate_one, tasks, n_jobs=n_jobs, parallel_backend=parallel_backend)
    columns = ["rep", "rule", "comparison", "extra_pp", "ci_low_pp", "ci_high_pp", "p_value"]
    return pd.concat(out, ignore_index=True)[columns]


def _replicate_one(bench: Benchmark, design: Design, params: SimulatorParams, rules: dict[str, RuleLike],
                   rep: int, rep_seed: int, models: dict, level: float, n_boot: int) -> pd.DataFrame:
    """One replication of ``replicate``: its rows for every rule."""
    fast = {name: keys_function(rule) for name, rule in rules.items()}
    runs = (simulate(bench, design, params, seed=rep_seed, log=False, models=models)
            if any(fn is None for fn in fast.values()) else None)
    outcomes = (simulate_outcomes(bench, design, params, seed=rep_seed, models=models)
                if any(fn is not None for fn in fast.values()) else None)
    out = []
    for name, rule in rules.items():
        mats = outcome_matrices(outcomes, fast[name]) if fast[name] is not None else instance_matrices(runs, rule)
        table = depth_table(mats, design.comparisons(), level=level, n_boot=n_boot, seed=rep_seed)
        out.append(table[["comparison", "extra_pp", "ci_low_pp", "ci_high_pp", "p_value"]].assign(rep=rep, rule=name))
    return pd.concat(out, ignore_index=True)


def _truth_maps(truth: pd.DataFrame | Mapping[str, float], measure: str) -> tuple[dict, dict]:
    """(comparison -> truth pp, comparison -> its SE) of ``measure`` from ``population_truth`` output
    (a table without a ``measure`` column holds one measure), or a plain mapping (SE 0)."""
    if not isinstance(truth, pd.DataFrame):
        return dict(truth), {}
    extra = truth[truth.panel == "extra"]
    if "measure" in extra:
        extra = extra[extra.measure == measure]
    return dict(zip(extra.label, extra.truth_pp)), dict(zip(extra.label, extra.truth_se_pp))


def validity_summary(reps: pd.DataFrame, truth: pd.DataFrame | Mapping[str, float], alpha: float = 0.05
                     ) -> pd.DataFrame:
    """Per rule and comparison of ``replicate``'s table (pp; rates as fractions): rule, measure
    (``depth.measure_of``), comparison, n_reps, truth_pp, mean_pp, bias_pp, bias_se_pp (mean's and
    truth's Monte Carlo errors), sd_pp (one design's sampling SD), rmse_pp, coverage (NaN without
    intervals), rejection_rate, rejection_se. ``truth``: ``population_truth`` output or comparison ->
    pp (0 for the null).
    """
    rows = []
    for (rule, comp), g in reps.groupby(["rule", "comparison"], sort=False):
        measure = measure_of(rule)
        truths, truth_se = _truth_maps(truth, measure)
        est = g.extra_pp.to_numpy()
        t = float(truths[comp])
        n = len(est)
        rate = float(np.mean(g.p_value.to_numpy() <= alpha))
        low, high = (g.ci_low_pp.to_numpy(), g.ci_high_pp.to_numpy()) if "ci_low_pp" in g else (None, None)
        covered = float(np.mean((low <= t) & (t <= high))) if low is not None and np.isfinite(low).all() else np.nan
        rows.append({"rule": rule, "measure": measure, "comparison": comp, "n_reps": n, "truth_pp": t,
                     "mean_pp": est.mean(), "bias_pp": est.mean() - t,
                     "bias_se_pp": float(np.sqrt(est.var(ddof=1) / n + truth_se.get(comp, 0.0) ** 2))
                     if n > 1 else np.nan,
                     "sd_pp": float(est.std(ddof=1)) if n > 1 else np.nan,
                     "rmse_pp": float(np.sqrt(np.mean((est - t) ** 2))), "coverage": covered,
                     "rejection_rate": rate, "rejection_se": mc_se(rate, n)})
    return pd.DataFrame(rows)
