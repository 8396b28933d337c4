"""Chapter 02b (validity): set-up, readable bias and size tables and the verdicts the prose quotes.

``bias`` and ``size`` below are ``workflow.validity_summary`` tables (columns rule, measure,
comparison, n_reps, truth_pp, mean_pp, bias_pp, bias_se_pp, sd_pp, rmse_pp, coverage,
rejection_rate, rejection_se) over the default and the null simulator; effects in percentage
points (pp), rates as fractions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import pandas as pd

from mechaudit.book.chapter import SIMULATED, headline_provenance
from mechaudit.book.settings import ValiditySettings
from mechaudit.model import Benchmark
from mechaudit.paths import PARAMS_DIR
from mechaudit.report.facts import fact
from mechaudit.report.tables import Column, with_columns
from mechaudit.workflow import (
    Design,
    SimulatorParams,
    build_rules,
    committed,
    load_simulator_params,
    population_truth,
    replicate,
    validity_summary,
)
from mechaudit.workflow.calibrate import CalibrationSpec, label_of, load_calibration
from mechaudit.workflow.depth import MEASURES
from mechaudit.workflow.simulator import load_simulation
from mechaudit.workflow.validity import coverage_range, low_coverage, max_bias_z, mc_se, size_z

#: glue key -> the table cells its prose value restates (format: tests/test_table_prose.py)
CITED_CELLS = {
    key: tuple(("tbl-ch02b-size", (rule, depths), "Rejection rate") for depths in ("0 v 1", "0 v 5", "1 v 5"))
    for key, rule in (("ch02b_size_rates", "Mechanism key"), ("ch02b_rate_size_rates", "Paper-rate judge"))
}


@dataclass(frozen=True)
class ValiditySetup:
    """The benchmark, the design, the default and null simulator parameters, the default's
    ``population_truth`` under both truth measures and the calibration spec (its sampling SDs)."""

    bench: Benchmark
    design: Design
    default: SimulatorParams
    null: SimulatorParams
    truth: pd.DataFrame
    spec: CalibrationSpec


def validity_setup(p: ValiditySettings) -> ValiditySetup:
    """Load the benchmark and the parameter files the settings ``p`` name (``simulator.load_simulation``)
    and estimate the default simulator's truth with ``p.truth_runs_per_depth`` runs per depth."""
    bench, design, default = load_simulation(p.data_dir, p.design_file, p.simulator_file)
    null = load_simulator_params(PARAMS_DIR / p.null_simulator_file)
    truth = population_truth(bench, design, default, runs_per_depth=p.truth_runs_per_depth, seed=p.seed,
                             measures=MEASURES)
    return ValiditySetup(bench, design, default, null, truth, load_calibration(PARAMS_DIR / p.calibration_file))


#: the rules read from the simulator's step ids (fast enough for hundreds of replications)
FAST = ("mechanism_key", "paper_rates")


@dataclass(frozen=True)
class Replications:
    """The chapter's replication tables (``validity.replicate`` rows, fast rules then TF-IDF) under the
    default and the null simulator, and where each came from (name -> "committed" / "computed now")."""

    default: pd.DataFrame
    null: pd.DataFrame
    sources: dict[str, str]


def replications(s: ValiditySetup, p: ValiditySettings, *, level: float = 0.95, write: bool = False,
                 force: bool = False) -> Replications:
    """Replications of the design under the default simulator (``p.n_replications`` for the fast rules
    with ``p.n_boot`` bootstrap resamples; seed ``p.seed + 1``) and the null simulator
    (``p.n_null_replications``; seed ``p.seed + 2``), TF-IDF over ``p.n_text_replications``; each read
    from ``data/computed/`` when computed with these settings (``write``, ``force``: for ``mechaudit calibrate``)."""
    fast = build_rules(list(FAST))
    text = build_rules(["tfidf"], tfidf_threshold=p.tfidf_threshold)["tfidf"]
    jobs = {"n_jobs": p.n_jobs, "parallel_backend": p.parallel_backend}

    def run(simulator: SimulatorParams, n_fast: int, rep_seed: int, boot: int) -> pd.DataFrame:
        return pd.concat([replicate(s.bench, s.design, simulator, fast, n_reps=n_fast, seed=rep_seed, n_boot=boot,
                                    level=level, **jobs),
                          replicate(s.bench, s.design, simulator, {"tfidf": text.same}, n_reps=p.n_text_replications,
                                    seed=rep_seed, **jobs)], ignore_index=True)

    tables, sources = {}, {}
    for name, simulator, n_fast, rep_seed, boot in (
            ("validity_default", s.default, p.n_replications, p.seed + 1, p.n_boot),
            ("validity_null", s.null, p.n_null_replications, p.seed + 2, 0)):
        settings = committed.with_benchmark({
            "design": s.design.model_dump(), "simulator": simulator.model_dump(), "fast_rules": list(FAST),
            "tfidf_threshold": p.tfidf_threshold, "n_fast": n_fast, "n_text": p.n_text_replications, "seed": rep_seed,
            "n_boot": boot, "level": level})
        tables[name], sources[name] = committed.cached(name, settings, partial(run, simulator, n_fast, rep_seed, boot),
                                                       write=write, force=force)
    return Replications(tables["validity_default"], tables["validity_null"], sources)


def write_replications(n_jobs: int = -1, force: bool = False) -> str:
    """``mechaudit calibrate``'s validity part: the replications at the chapter's defaults, written
    to ``data/computed/`` when stale (``force``: always); returns a summary."""
    p = ValiditySettings(n_jobs=n_jobs)
    r = replications(validity_setup(p), p, write=True, force=force)
    return committed.summary({"validity_default": r.default, "validity_null": r.null}, r.sources)


def truth_view(truth: pd.DataFrame) -> pd.DataFrame:
    """The truth for reading: index (measure, quantity, depths); truth, SE (% for same-depth
    divergence, pp for extra divergence) and the ceiling (pp)."""
    names = {"truth_pp": "truth", "truth_se_pp": "SE", "max_extra_pp": "ceiling (pp)"}
    view = truth.set_index(["measure", "panel", "label"])[list(names)].rename(columns=names).round(2)
    return view.rename_axis(["measure", "quantity", "depths"])


def bias_view(bias: pd.DataFrame) -> pd.DataFrame:
    """Bias table for reading: index (rule, comparison); replications, truth, bias and its Monte Carlo
    SE, SD, RMSE (pp), interval coverage and power."""
    names = {"n_reps": "replications", "measure": "truth of", "truth_pp": "truth (pp)", "bias_pp": "bias (pp)",
             "bias_se_pp": "bias SE (pp)", "sd_pp": "SD (pp)", "rmse_pp": "RMSE (pp)", "coverage": "coverage",
             "rejection_rate": "power"}
    view = bias.set_index(["rule", "comparison"])[[c for c in names if c in bias]].rename(columns=names).round(2)
    return view.astype({"replications": int})


def sampling_check(reps: pd.DataFrame, spec) -> pd.DataFrame:
    """The sampling SDs and correlation the calibration ``spec`` records beside what the replications
    ``reps`` measured under ``spec.measure``; index quantity, columns "recorded", "measured"."""
    wide = reps[reps.rule == spec.measure].pivot(index="rep", columns="comparison", values="extra_pp")
    rows = {f"SD {label_of(k)} (pp)": {"recorded": sd, "measured": float(wide[label_of(k)].std(ddof=1))}
            for k, sd in spec.sampling_sd().items() if label_of(k) in wide}
    labels = [label_of(k) for k in spec.targets]
    if len(labels) == 2 and set(labels) <= set(wide.columns):
        rows[f"correlation {labels[0]}, {labels[1]}"] = {"recorded": spec.target_correlation,
                                                         "measured": float(wide[labels].corr().iloc[0, 1])}
    return pd.DataFrame(rows).transpose().rename_axis("quantity").round(2)


def size_view(size: pd.DataFrame) -> pd.DataFrame:
    """Size table for reading: index (rule, comparison); replications (int), mean estimate (pp), the
    rejection rate at alpha under the null simulator and its Monte Carlo SE."""
    names = {"n_reps": "replications", "mean_pp": "mean (pp)", "rejection_rate": "rejection rate",
             "rejection_se": "MC SE"}
    view = size.set_index(["rule", "comparison"])[list(names)].rename(columns=names).round(3)
    rate = Column.of(ValidityFacts, "size_se")  # rates to 3 decimals, as ``rates_text`` writes them
    return with_columns(view.astype({"replications": int}),
                        {"mean (pp)": Column.of(ValidityFacts, "tfidf_null_mean_0v1"), "rejection rate": rate,
                         "MC SE": rate})


def size_verdict(z: pd.Series) -> str:
    """What the rejection rates say about the size (``validity.size_z``): all within two Monte Carlo
    SEs of alpha, conservative, or some more than two above."""
    if (z.abs() <= 2).all():
        return ("every rate lies within two Monte Carlo standard errors of alpha, consistent with a test "
                "whose size is at most alpha")
    if (z <= 2).all():
        return ("no rate lies more than two Monte Carlo standard errors above alpha and some lie more than two "
                "below it: the test holds its size and is conservative here")
    return "at least one rate lies more than two Monte Carlo standard errors above alpha"


def rates_text(size: pd.DataFrame, rule: str) -> str:
    """The rejection rates of ``rule`` per comparison as text, e.g. "0.050 (0 v 1), 0.047 (0 v 5)"."""
    sub = size[size.rule == rule]
    return ", ".join(f"{r:.3f} ({c})" for c, r in zip(sub.comparison, sub.rejection_rate))


def coverage_verdict(bias: pd.DataFrame, rules: Sequence[str], level: float = 0.95) -> str:
    """Whether the coverage of ``rules`` is consistent with ``level`` or above it, or below it by more
    than two Monte Carlo SEs for some (``validity.low_coverage``)."""
    if bias[bias.rule.isin(list(rules))].coverage.dropna().empty:
        return "not computed"
    low = low_coverage(bias, rules, level)
    if low.empty:
        return f"consistent with the nominal {100 * level:g} % or above it"
    names = ", ".join(f"{r.rule} {r.comparison}" for r in low.itertuples())
    return f"below the nominal {100 * level:g} % by more than two Monte Carlo standard errors for {names}"


@dataclass(frozen=True)
class ValidityFacts:
    """The numbers chapter 02b's prose quotes (glued under ``ch02b``); rates are fractions."""

    n_runs: int = fact(unit="runs", doc="runs of the design")
    n_reps: int = fact(unit="replications", doc="replications under the default simulator (fast rules)")
    n_null_reps: int = fact(unit="replications", doc="replications under the null simulator (fast rules)")
    n_text_reps: int = fact(unit="replications", doc="TF-IDF replications under each simulator")
    truth_runs: int = fact(unit="runs", doc="runs per depth that estimate the truth")
    alpha: float = fact(doc="level of the exact test")
    n_boot: int = fact(unit="resamples", doc="bootstrap resamples per interval")
    key_max_bias_z: float = fact(unit="MC SE", digits=1, doc="largest |bias| / its SE of the fast rules")
    coverage: str = fact(doc='coverage of the fast rules\' intervals: "a to b" or one value')
    coverage_verdict: str = fact(doc="whether that coverage is consistent with 95 % (:func:`coverage_verdict`)")
    size_rates: str = fact(doc="the mechanism key's rejection rates under the null (:func:`rates_text`)")
    rate_size_rates: str = fact(doc="the same for the paper-rates measure")
    size_se: float = fact(digits=3, doc="largest MC SE of the mechanism key's rejection rates")
    size_mean: float = fact(digits=3, doc="mean of the mechanism key's rejection rates")
    size_verdict: str = fact(doc="what the fast rules' rejection rates say about the size (:func:`size_verdict`)")
    headline_status: str = fact(doc="the intro's status: simulated under every backend")
    headline_provenance: str = fact(doc="the intro's provenance cell")
    headline_verdict: str = fact(doc="the intro's verdict")
    tfidf_bias_0v1_pp: float | None = fact(unit="pp", digits=1, missing="not run", doc="TF-IDF bias, 0 v 1")
    tfidf_bias_se_0v1_pp: float | None = fact(unit="pp", digits=1, missing="not run", doc="its MC SE")
    tfidf_null_max: float | None = fact(digits=2, missing="not run", doc="TF-IDF's largest rejection rate, null")
    tfidf_null_mean_0v1: float | None = fact(unit="pp", digits=1, missing="not run",
                                             doc="TF-IDF's mean estimate under the null, first comparison")
    tfidf_null_n: int = fact(unit="replications", doc="TF-IDF replications under the null (0: not run)")
    se_1000: float = fact(digits=3, doc="MC SE of a rate alpha over 1000 replications")
    se_alpha: float = fact(digits=3, doc="MC SE of a rate alpha over the null replications")
    se_01: float = fact(digits=3, doc="MC SE of a rate 0.01 over the null replications")
    size_rates_01: str = fact(doc="the mechanism key's rejection rates at alpha 0.01")
    tfidf_null_max_01: float = fact(digits=2, doc="TF-IDF's largest rejection rate at alpha 0.01")


def validity_facts(design: Design, bias: pd.DataFrame, size: pd.DataFrame, null_reps: pd.DataFrame,
                   p: ValiditySettings) -> ValidityFacts:
    """:class:`ValidityFacts` of the ``bias`` and ``size`` tables (``validity_summary`` at ``p.alpha``
    of the default and the null replications; ``null_reps``: the null replications, summarised
    again at alpha 0.01) and the chapter's settings ``p``."""
    fast = list(FAST)
    key_size = size[size.rule == "mechanism_key"]
    low, high = coverage_range(bias, fast)
    text_bias = bias[(bias.rule == "tfidf") & (bias.comparison == "0 v 1")]
    text_size = size[size.rule == "tfidf"]
    strict = validity_summary(null_reps, {c: 0.0 for c in bias.comparison.unique()}, alpha=0.01)
    provenance, verdict = headline_provenance("ch02b", llm=False)  # simulated under every backend
    alpha, n_null_reps = p.alpha, p.n_null_replications
    return ValidityFacts(
        n_runs=design.n_runs, n_reps=p.n_replications, n_null_reps=n_null_reps, n_text_reps=p.n_text_replications,
        truth_runs=p.truth_runs_per_depth, alpha=alpha, n_boot=p.n_boot, key_max_bias_z=max_bias_z(bias, fast),
        coverage=f"{low:.2f} to {high:.2f}" if low != high else f"{low:.2f}",
        coverage_verdict=coverage_verdict(bias, fast), size_rates=rates_text(size, "mechanism_key"),
        rate_size_rates=rates_text(size, "paper_rates"), size_se=key_size.rejection_se.max(),
        size_mean=key_size.rejection_rate.mean(), size_verdict=size_verdict(size_z(size, alpha, fast)),
        headline_status=SIMULATED, headline_provenance=provenance, headline_verdict=verdict,
        tfidf_bias_0v1_pp=text_bias.bias_pp.iloc[0] if len(text_bias) else None,
        tfidf_bias_se_0v1_pp=text_bias.bias_se_pp.iloc[0] if len(text_bias) else None,
        tfidf_null_max=text_size.rejection_rate.max() if len(text_size) else None,
        tfidf_null_mean_0v1=text_size.mean_pp.iloc[0] if len(text_size) else None,
        tfidf_null_n=int(text_size.n_reps.iloc[0]) if len(text_size) else 0,
        se_1000=mc_se(alpha, 1000), se_alpha=mc_se(alpha, n_null_reps), se_01=mc_se(0.01, n_null_reps),
        size_rates_01=rates_text(strict, "mechanism_key"),
        tfidf_null_max_01=strict[strict.rule == "tfidf"].rejection_rate.max())


@dataclass(frozen=True)
class SamplingFacts:
    """The sampling check in one sentence (glued under ``ch02b``)."""

    tolerance_text: str = fact(doc='per quantity of :func:`sampling_check`: "q: recorded r, measured m"')


def sampling_facts(sampling: pd.DataFrame) -> SamplingFacts:
    """:class:`SamplingFacts` of a :func:`sampling_check` table."""
    return SamplingFacts("; ".join(f"{q}: recorded {r.recorded:g}, measured {r.measured:.2f}"
                                   for q, r in sampling.iterrows()))
