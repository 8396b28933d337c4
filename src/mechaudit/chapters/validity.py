"""Chapter 02b (validity): set-up, readable bias and size tables and the verdicts the prose quotes.

``bias`` and ``size`` below are ``workflow.validity_summary`` tables (columns rule, comparison,
n_reps, truth_pp, mean_pp, bias_pp, bias_se_pp, rmse_pp, rejection_rate, rejection_se) over the
default and the null simulator; effects in percentage points (pp), rates as fractions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mechaudit.model import Benchmark
from mechaudit.paths import PARAMS_DIR
from mechaudit.schema import load_benchmark
from mechaudit.workflow import Design, SimulatorParams, load_design, load_simulator_params, population_truth


@dataclass(frozen=True)
class ValiditySetup:
    """The benchmark, the design, the default and null simulator parameters and the default's truth
    (``population_truth``: one row per same-depth and comparison label)."""

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
    truth = population_truth(bench, design, default, runs_per_depth=truth_runs_per_depth, seed=seed)
    return ValiditySetup(bench, design, default, null, truth)


def truth_view(truth: pd.DataFrame) -> pd.DataFrame:
    """The truth for reading: index (panel, label); truth, its standard error and the ceiling (pp).
    The unit of truth and SE is the panel's: % for same-depth divergence (a level), pp for extra
    divergence (a difference)."""
    names = {"truth_pp": "truth", "truth_se_pp": "SE", "max_extra_pp": "ceiling (pp)"}
    view = truth.set_index(["panel", "label"])[list(names)].rename(columns=names).round(2)
    return view.rename_axis(["quantity", "depths"])


def bias_view(bias: pd.DataFrame) -> pd.DataFrame:
    """Bias table for reading: index (rule, comparison); replications (int), truth, bias, its Monte
    Carlo SE and the RMSE (pp), and the power (rejection rate at alpha under the default simulator)."""
    names = {"n_reps": "replications", "truth_pp": "truth (pp)", "bias_pp": "bias (pp)",
             "bias_se_pp": "bias SE (pp)", "rmse_pp": "RMSE (pp)", "rejection_rate": "power"}
    view = bias.set_index(["rule", "comparison"])[list(names)].rename(columns=names).round(2)
    return view.astype({"replications": int})


def size_view(size: pd.DataFrame) -> pd.DataFrame:
    """Size table for reading: index (rule, comparison); replications (int), mean estimate (pp), the
    rejection rate at alpha under the null simulator and its Monte Carlo SE."""
    names = {"n_reps": "replications", "mean_pp": "mean (pp)", "rejection_rate": "rejection rate",
             "rejection_se": "MC SE"}
    view = size.set_index(["rule", "comparison"])[list(names)].rename(columns=names).round(3)
    return view.astype({"replications": int})


def max_bias_z(bias: pd.DataFrame, rule: str = "mechanism_key") -> float:
    """The largest ``|bias| / bias SE`` of ``rule`` over its comparisons."""
    sub = bias[bias.rule == rule]
    return float((sub.bias_pp.abs() / sub.bias_se_pp).max())


def size_z(size: pd.DataFrame, alpha: float, rule: str = "mechanism_key") -> pd.Series:
    """Per comparison of ``rule``: (rejection rate - alpha) in units of the rate's Monte Carlo SE
    under a test of exact size alpha, sqrt(alpha (1 - alpha) / n)."""
    sub = size[size.rule == rule].set_index("comparison")
    return (sub.rejection_rate - alpha) / np.sqrt(alpha * (1 - alpha) / sub.n_reps)


def size_verdict(z: pd.Series) -> str:
    """Whether every rejection rate lies within two Monte Carlo SEs of alpha (``size_z`` output)."""
    if (z.abs() <= 2).all():
        return ("every rate lies within two Monte Carlo standard errors of alpha, consistent with a test "
                "whose size is at most alpha")
    return "at least one rate lies more than two Monte Carlo standard errors from alpha"


def mc_se(rate: float, n: int) -> float:
    """Monte Carlo standard error of a rejection rate ``rate`` over ``n`` replications."""
    return float(np.sqrt(rate * (1 - rate) / n))
