"""Chapter 02c (robustness and power): set-up, grid look-ups and readable summaries of the grids.

Inputs are the tables of ``mechaudit.workflow.robustness`` (``truth_grid`` after ``consistent`` and
``diminishing_returns``, ``rule_bias``) and ``mechaudit.workflow.power`` (``power_table``,
``runs_needed``). Values in pp are percentage points of extra divergence; same-depth divergence is a
level, in %. The chapter needs the simulator's ground truth, so it never calls an LLM;
:func:`mechaudit.book.chapter.simulation_only_note` is its one backend-dependent step. Every
summary here describes the simulator, not the paper's workflow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mechaudit.errors import MechauditError
from mechaudit.paths import PARAMS_DIR
from mechaudit.schema import Benchmark, load_benchmark
from mechaudit.workflow import Design, SimulatorParams, load_design, load_simulator_params
from mechaudit.workflow.power import EffectSetting, setting_at
from mechaudit.workflow.robustness import pick

#: conclusion statuses in display order
STATUSES = ("holds", "unclear", "fails")
#: depth comparisons of the rule-bias grid, and their glue tags
COMPARISONS = {"0 v 1": "0v1", "0 v 5": "0v5", "1 v 5": "1v5"}


@dataclass(frozen=True)
class RobustnessSetup:
    """The benchmark, its instance ids, the design and the default simulator parameters."""

    bench: Benchmark
    instances: list[str]
    design: Design
    base: SimulatorParams


def setup(data_dir: str | Path | None = None, design_file: str = "paper.yaml",
          simulator_file: str = "simulator.yaml") -> RobustnessSetup:
    """Load the benchmark (``data_dir``, default the shipped data) and the design and simulator
    files (names under ``params/``). No runs are delivered: every grid point simulates its own."""
    bench = load_benchmark(data_dir)
    instances = [i.id for i in bench.instances]
    return RobustnessSetup(bench, instances, load_design(PARAMS_DIR / design_file, instances=instances),
                           load_simulator_params(PARAMS_DIR / simulator_file))


def defaults(base: SimulatorParams) -> dict[str, float]:
    """The default value of every grid factor (``workflow.robustness.FACTORS``) in ``base``."""
    return {"p_find": base.p_find, "weak_scale": 1.0, "conceded": base.reply_weak.conceded,
            "evidence_weight": base.evidence_weight, "p_challenge_sound": base.p_challenge_sound}


def grid_cell(table: pd.DataFrame, factors: Mapping[str, float], axes: Sequence[str],
              **where: float) -> pd.Series | None:
    """The one row of ``table`` at the factor values ``where``, the other ``axes`` at ``factors``
    (their defaults); None when the grid has no such row (or more than one)."""
    where = {k: factors[k] for k in axes if k in table} | where
    rows = table.loc[np.logical_and.reduce([np.isclose(table[k], v) for k, v in where.items()])]
    return rows.iloc[0] if len(rows) == 1 else None


def observed_and_sd(spec, key: str = "critique_depth.extra_divergence_pp.k0_vs_k1") -> tuple[float, float]:
    """The paper's observed extra divergence under ``key`` and its sampling SD: the calibration's
    tolerance for that target (``CalibrationSpec.targets``, the SD chapter 02b measures)."""
    from mechaudit.paper import reported

    if key not in spec.targets:
        raise MechauditError(f"{key} is not a calibration target, so no sampling SD is recorded for it",
                             field="calibration.targets")
    return float(reported(key)), float(spec.targets[key])


def span(table: pd.DataFrame, column: str, digits: int = 2) -> str:
    """The range of ``column`` as text: "a" when constant, else "a to b" (values rounded to ``digits``)."""
    lo, hi = round(float(table[column].min()), digits), round(float(table[column].max()), digits)
    return f"{lo:g}" if lo == hi else f"{lo:g} to {hi:g}"


def status_sentence(truths: pd.DataFrame, column: str = "raw") -> str:
    """What conclusion (a) does at the consistent grid points (``truths`` after ``consistent`` and
    ``diminishing_returns``), as a verb phrase: "holds at every consistent setting of the grid", or
    which statuses occur and at which ``p_find`` values ("is unclear at the consistent settings with
    p_find 0.7 and holds at those with p_find 0.85 to 1"). Never a count of grid points."""
    inside = truths[truths.consistent]
    if inside.empty:
        return "cannot be read: no grid setting is consistent with the observed effect"
    statuses = [st for st in ("fails", "unclear", "holds") if (inside[column] == st).any()]
    if statuses == ["holds"]:
        return "holds at every consistent setting of the grid"
    verbs = {"fails": "fails", "unclear": "is unclear", "holds": "holds"}
    parts = [f"{verbs[st]} at {'the consistent settings' if k == 0 else 'those'} with p_find "
             f"{span(inside[inside[column] == st], 'p_find')}" for k, st in enumerate(statuses)]
    return ", ".join(parts[:-1]) + (" and " if len(parts) > 1 else "") + parts[-1]


def choose_settings(truths: pd.DataFrame, quantiles: Sequence[float]) -> pd.DataFrame:
    """Grid points to study further: ``robustness.pick`` of the consistent points at ``quantiles`` of
    the 1 v 5 truth; when no point is consistent (another benchmark, a coarse grid), the points nearest
    the observation (smallest ``|distance_sd|``), one per quantile, with a one-line note."""
    inside = truths[truths.consistent]
    if len(inside):
        return pick(inside, quantiles)
    nearest = truths.assign(_d=truths.distance_sd.abs()).nsmallest(max(1, len(set(quantiles))), "_d")
    print("no grid setting is consistent with the observed 0 v 1 effect; the settings nearest to it are "
          "studied instead (their conclusions say little about the paper's workflow)")
    return pick(nearest.drop(columns="_d"), quantiles)


def fails_outside(truths: pd.DataFrame, column: str = "raw") -> float | None:
    """The largest 0 v 1 truth (pp) among the grid points where conclusion (a) fails (None: nowhere)."""
    fails = truths[truths[column] == "fails"]
    return float(fails.truth_0v1_pp.max()) if len(fails) else None


def fail_pfind_max(truths: pd.DataFrame) -> float | None:
    """Largest ``p_find`` at which the raw criterion fails at every grid point (None: at none)."""
    everywhere = truths.groupby("p_find").raw.apply(lambda s: (s == "fails").all())
    low = everywhere[everywhere].index
    return float(low.max()) if len(low) else None


def fail_pfind_text(truths: pd.DataFrame) -> str:
    """Where conclusion (a) fails along ``p_find``, as the clause after "fails where the critic finds
    weak links slowly:" (the grid may have no ``p_find`` at which every point fails)."""
    low = fail_pfind_max(truths)
    if low is None:
        return "in this grid, though, no value of p_find makes conclusion (a) fail at every point"
    return (f"every point with p_find at or below {round(low, 2):g} fails, because one round leaves most weak "
            "links open and rounds two to five keep changing mechanisms")


def peak_along(truths: pd.DataFrame, factors: Mapping[str, float], axes: Sequence[str], along: str = "p_find",
               column: str = "truth_1v5_pp") -> pd.Series:
    """The row with the largest ``column`` along the ``along`` axis, the other ``axes`` at ``factors``."""
    line = truths.loc[np.logical_and.reduce([np.isclose(truths[k], factors[k]) for k in axes if k != along])]
    return line.loc[line[column].idxmax()]


def max_change_pp(alt: pd.DataFrame, by: str, columns: Sequence[str]) -> float:
    """Largest range (max - min, pp) of any of ``columns`` within a group of ``by``."""
    spread = alt.groupby(by)[list(columns)].agg(lambda s: s.max() - s.min())
    return float(spread.to_numpy().max())


def setting_labels(points: pd.DataFrame, factors: Sequence[str]) -> list[str]:
    """A short label per row of ``points``: "S1 (p_find 0.9, weak_scale 1, conceded 1)"."""
    return [f"S{i + 1} (" + ", ".join(f"{f} {r[f]:g}" for f in factors) + ")"
            for i, (_, r) in enumerate(points.iterrows())]


def rule_view(bias: pd.DataFrame, labels: Sequence[str]) -> pd.DataFrame:
    """``robustness.rule_bias`` for reading: index (setting label, rule, comparison); mean estimate,
    truth of the rule's quantity, bias and its Monte Carlo SE (pp), replications (int)."""
    names = {"n_reps": "replications", "mean_pp": "mean (pp)", "truth_pp": "truth (pp)", "bias_pp": "bias (pp)",
             "bias_se_pp": "bias SE (pp)"}
    view = bias.assign(setting=[labels[int(p)] for p in bias.point])
    return view.set_index(["setting", "rule", "comparison"])[list(names)].rename(columns=names).round(2).astype(
        {"replications": int})


def rule_gap(bias: pd.DataFrame, comparison: str, a: str, b: str) -> tuple[float, float]:
    """Smallest and largest difference of mean estimates, rule ``a`` minus rule ``b`` (pp), over the
    points of ``bias`` for ``comparison``."""
    sub = bias[bias.comparison == comparison].pivot_table(index="point", columns="rule", values="mean_pp")
    diff = sub[a] - sub[b]
    return float(diff.min()), float(diff.max())


def max_bias_text(bias: pd.DataFrame, rules: Sequence[str] = ("mechanism_key", "paper_rates")) -> str:
    """The largest |bias| of ``rules`` in Monte Carlo standard errors, as the clause "the largest bias
    is ...". A single replication per setting has no standard error: the clause says so."""
    sub = bias[bias.rule.isin(list(rules))]
    z = (sub.bias_pp.abs() / sub.bias_se_pp).replace([np.inf, -np.inf], np.nan)
    if sub.empty or z.isna().any():
        return "not measured in standard errors: a single replication per setting has none"
    return f"{round(float(z.max()), 1):g} Monte Carlo standard errors"


def alternatives_table(alt: pd.DataFrame, axes: Sequence[str]) -> pd.DataFrame:
    """The evidence-weight grid, readable: index the ``axes``; the 0 v 1 and 1 v 5 truths and the 1 v 5
    ceiling in pp, the same-depth divergence at depth 1 (a level) in %."""
    names = {"truth_0v1_pp": "0 v 1 (pp)", "truth_1v5_pp": "1 v 5 (pp)", "same_K1_pp": "same-depth K=1 (%)",
             "max_1v5_pp": "1 v 5 ceiling (pp)"}
    return alt.set_index(list(axes))[list(names)].rename(columns=names).round(1)


def power_settings(bench: Benchmark, instances: Sequence[str], base: SimulatorParams, picks: pd.DataFrame,
                   factors: Sequence[str], *, check_runs_per_depth: int, seed: int,
                   measure: str = "paper_rates") -> list[EffectSetting]:
    """``workflow.power.setting_at`` for each row of ``picks`` (grid points, e.g. consistent ones from
    ``robustness.pick``): its ``factors`` set, its grid truth of 1 v 5 as the target, the truth
    re-estimated with ``check_runs_per_depth`` runs per depth and seed ``seed``."""
    if picks.empty:
        raise MechauditError("no consistent grid setting to study: widen robust_axes or consistent_z",
                             field="robust_axes")
    return [setting_at(bench, instances, base, {f: float(r[f]) for f in factors}, round(float(r.truth_1v5_pp), 2),
                       check_runs_per_depth=check_runs_per_depth, seed=seed, measure=measure)
            for _, r in picks.iterrows()]


def settings_table(settings: Sequence) -> pd.DataFrame:
    """One row per power setting (index "grid 1 v 5 (pp)": the truth on the grid): the factors set,
    the re-estimated 1 v 5 truth and its standard error (pp)."""
    rows = [{"grid 1 v 5 (pp)": s.target_pp, "setting": ", ".join(f"{k} = {v:.3g}" for k, v in s.factors.items()),
             "true 1 v 5 (pp)": round(s.truth_pp, 2), "s.e. (pp)": round(s.truth_se_pp, 2)} for s in settings]
    return pd.DataFrame(rows).set_index("grid 1 v 5 (pp)")


def design_powers(power: pd.DataFrame) -> pd.DataFrame:
    """The power of each named design (rows ``role == "design"`` of ``power_table``), readable: index
    true effect (pp) and design ("4 x 5": instances x runs per depth); power, its Monte Carlo SE over
    the independent pools and the binomial SE (which ignores that replications share a pool)."""
    d = power[power.role == "design"]
    table = pd.DataFrame({"true 1 v 5 (pp)": d.truth_pp.round(1).to_numpy(),
                          "design": [f"{int(k)} x {int(r)}" for k, r in zip(d.n_instances, d.runs_per_depth)],
                          "power": d.power.round(2).to_numpy(), "MC s.e. (pools)": d.power_se.round(2).to_numpy(),
                          "binomial s.e.": d.binomial_se.round(2).to_numpy()})
    return table.set_index(["true 1 v 5 (pp)", "design"])


def runs_vs_instances(power: pd.DataFrame, target_pp: float, runs: tuple[int, int] = (4, 10),
                      instances: tuple[int, int] = (8, 5), margin: float = 0.05) -> str:
    """Which doubling helped the power at ``target_pp`` more: more runs (``runs``: instances x runs)
    or more instances (``instances``); "n/a" when either design is missing."""
    d = power[power.role == "design"].set_index(["target_pp", "n_instances", "runs_per_depth"]).power
    if (target_pp, *runs) not in d or (target_pp, *instances) not in d:
        return "n/a"
    more_runs, more_inst = d[(target_pp, *runs)], d[(target_pp, *instances)]
    if more_runs > more_inst + margin:
        return "more runs helped more"
    return "more instances helped more" if more_inst > more_runs + margin else "the two help about equally"


def needed_table(needed: pd.DataFrame) -> pd.DataFrame:
    """``power.runs_needed`` readable: index true effect (pp); runs per depth needed (int, or "more
    than <largest tried>") and the power there."""
    def runs(r) -> int | str:
        return int(r.runs_needed) if np.isfinite(r.runs_needed) else f"more than {int(r.largest_tried)}"

    return pd.DataFrame({"true 1 v 5 (pp)": needed.truth_pp.round(1).to_numpy(),
                         "instances": needed.n_instances.astype(int).to_numpy(),
                         "runs per depth needed": [runs(r) for r in needed.itertuples()],
                         "power there": needed.power_there.round(2).to_numpy()}).set_index("true 1 v 5 (pp)")
