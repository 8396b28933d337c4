"""Chapter 02b (validity): set-up, readable bias and size tables and the verdicts the prose quotes.

``bias`` and ``size`` below are ``workflow.validity_summary`` tables (columns rule, measure,
comparison, n_reps, truth_pp, mean_pp, bias_pp, bias_se_pp, sd_pp, rmse_pp, coverage,
rejection_rate, rejection_se) over the default and the null simulator; effects in percentage
points (pp), rates as fractions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mechaudit.model import Benchmark
from mechaudit.paths import PARAMS_DIR
from mechaudit.schema import load_benchmark
from mechaudit.workflow import Design, SimulatorParams, load_design, load_simulator_params, population_truth
from mechaudit.workflow.depth import MEASURES


@dataclass(frozen=True)
class ValiditySetup:
    """The benchmark, the design, the default and null simulator parameters and the default's truth
    (``population_truth`` under both truth measures: one row per measure and same-depth or comparison
    label)."""

    bench: Benchmark
    design: Design
    default: SimulatorParams
    null: SimulatorParams
    truth: pd.DataFrame


def validity_setup(*, data_dir: str | Path | None = None, design_file: str = "paper.yaml",
                   simulator_file: str = "simulator.yaml", null_simulator_file: str = "simulator_null.yaml",
                   truth_runs_per_depth: int = 100, seed: int = 0) -> ValiditySetup:
    """Load the benchmark (``data_dir``, default the shipped data) and the parameter files (names under
    ``params/``), and estimate the default simulator's truth with ``truth_runs_per_depth`` runs per depth."""
    bench = load_benchmark(data_dir)
    design = load_design(PARAMS_DIR / design_file, instances=[i.id for i in bench.instances])
    default = load_simulator_params(PARAMS_DIR / simulator_file)
    null = load_simulator_params(PARAMS_DIR / null_simulator_file)
    truth = population_truth(bench, design, default, runs_per_depth=truth_runs_per_depth, seed=seed,
                             measures=MEASURES)
    return ValiditySetup(bench, design, default, null, truth)


def truth_view(truth: pd.DataFrame) -> pd.DataFrame:
    """The truth for reading: index (measure, quantity, depths); truth, its standard error and the
    ceiling (pp). The unit of truth and SE is the quantity's: % for same-depth divergence (a level),
    pp for extra divergence (a difference)."""
    names = {"truth_pp": "truth", "truth_se_pp": "SE", "max_extra_pp": "ceiling (pp)"}
    view = truth.set_index(["measure", "panel", "label"])[list(names)].rename(columns=names).round(2)
    return view.rename_axis(["measure", "quantity", "depths"])


def bias_view(bias: pd.DataFrame) -> pd.DataFrame:
    """Bias table for reading: index (rule, comparison); replications (int), the truth it is compared
    with, bias, its Monte Carlo SE, the sampling SD and RMSE (pp), the coverage of the bootstrap
    interval (when computed) and the power (rejection rate at alpha under the default simulator)."""
    names = {"n_reps": "replications", "measure": "truth of", "truth_pp": "truth (pp)", "bias_pp": "bias (pp)",
             "bias_se_pp": "bias SE (pp)", "sd_pp": "SD (pp)", "rmse_pp": "RMSE (pp)", "coverage": "coverage",
             "rejection_rate": "power"}
    view = bias.set_index(["rule", "comparison"])[[c for c in names if c in bias]].rename(columns=names).round(2)
    return view.astype({"replications": int})


def tolerance_check(bias: pd.DataFrame, targets: dict[str, float], measure: str) -> pd.DataFrame:
    """The calibration's tolerances (``CalibrationSpec.targets``: paper key -> pp) beside the sampling
    SD these replications measured for the same comparison under ``measure`` (rule of that name).
    Index: comparison; columns "tolerance (pp)", "measured SD (pp)"."""
    from mechaudit.workflow.calibrate import label_of

    sd = bias[bias.rule == measure].set_index("comparison").sd_pp
    rows = {label_of(k): {"tolerance (pp)": tol, "measured SD (pp)": round(float(sd.get(label_of(k), np.nan)), 2)}
            for k, tol in targets.items()}
    return pd.DataFrame(rows).transpose().rename_axis("comparison")


def size_view(size: pd.DataFrame) -> pd.DataFrame:
    """Size table for reading: index (rule, comparison); replications (int), mean estimate (pp), the
    rejection rate at alpha under the null simulator and its Monte Carlo SE."""
    names = {"n_reps": "replications", "mean_pp": "mean (pp)", "rejection_rate": "rejection rate",
             "rejection_se": "MC SE"}
    view = size.set_index(["rule", "comparison"])[list(names)].rename(columns=names).round(3)
    return view.astype({"replications": int})


def max_bias_z(bias: pd.DataFrame, rule: str | Sequence[str] = "mechanism_key") -> float:
    """The largest ``|bias| / bias SE`` of ``rule`` (one name or several) over its comparisons."""
    sub = bias[bias.rule.isin([rule] if isinstance(rule, str) else list(rule))]
    return float((sub.bias_pp.abs() / sub.bias_se_pp).max())


def size_z(size: pd.DataFrame, alpha: float, rule: str | Sequence[str] = "mechanism_key") -> pd.Series:
    """Per comparison (and rule, when several are named) of ``rule``: (rejection rate - alpha) in
    units of the rate's Monte Carlo SE under a test of exact size alpha, sqrt(alpha (1 - alpha) / n)."""
    names = [rule] if isinstance(rule, str) else list(rule)
    sub = size[size.rule.isin(names)].set_index("comparison" if len(names) == 1 else ["rule", "comparison"])
    return (sub.rejection_rate - alpha) / np.sqrt(alpha * (1 - alpha) / sub.n_reps)


def size_verdict(z: pd.Series) -> str:
    """What the rejection rates say about the test's size (``size_z`` output): all within two Monte
    Carlo SEs of alpha; none more than two above but some more than two below (conservative); or some
    more than two above."""
    if (z.abs() <= 2).all():
        return ("every rate lies within two Monte Carlo standard errors of alpha, consistent with a test "
                "whose size is at most alpha")
    if (z <= 2).all():
        return ("no rate lies more than two Monte Carlo standard errors above alpha and some lie more than two "
                "below it: the test holds its size and is conservative here")
    return "at least one rate lies more than two Monte Carlo standard errors above alpha"


def mc_se(rate: float, n: int) -> float:
    """Monte Carlo standard error of a rejection rate ``rate`` over ``n`` replications."""
    return float(np.sqrt(rate * (1 - rate) / n))


def coverage_range(bias: pd.DataFrame, rules: Sequence[str]) -> tuple[float, float]:
    """Smallest and largest interval coverage (fractions) of ``rules`` over their comparisons."""
    cov = bias[bias.rule.isin(list(rules))].coverage.dropna()
    return (float(cov.min()), float(cov.max())) if len(cov) else (float("nan"), float("nan"))


def rates_text(size: pd.DataFrame, rule: str) -> str:
    """The rejection rates of ``rule`` per comparison as text, e.g. "0.050 (0 v 1), 0.047 (0 v 5)"."""
    sub = size[size.rule == rule]
    return ", ".join(f"{r:.3f} ({c})" for c, r in zip(sub.comparison, sub.rejection_rate))


def coverage_verdict(bias: pd.DataFrame, rules: Sequence[str], level: float = 0.95) -> str:
    """Whether the intervals' coverage of ``rules`` is consistent with ``level``: every coverage
    within two Monte Carlo SEs (sqrt(level (1 - level) / n)) of it or above it ("at or above the
    nominal ..."), or some below ("below the nominal ... for ...")."""
    sub = bias[bias.rule.isin(list(rules))].dropna(subset=["coverage"])
    if sub.empty:
        return "not computed"
    floor = level - 2 * np.sqrt(level * (1 - level) / sub.n_reps)
    low = sub[sub.coverage < floor]
    if low.empty:
        return f"consistent with the nominal {100 * level:g} % or above it"
    names = ", ".join(f"{r.rule} {r.comparison}" for r in low.itertuples())
    return f"below the nominal {100 * level:g} % by more than two Monte Carlo standard errors for {names}"
