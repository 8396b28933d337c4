"""Chapter 02c (robustness and power): set-up, grid look-ups and readable summaries of the grids.

Inputs are the tables of ``mechaudit.workflow.robustness`` (``truth_grid`` after
``diminishing_returns``, ``rule_bias``) and ``mechaudit.workflow.power`` (``power_table``,
``runs_needed``). Values in pp are percentage points of extra divergence. The chapter needs the
simulator's ground truth, so it never calls an LLM; :func:`mechaudit.chapters.status.simulation_only_note` is its one
backend-dependent step.
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
from mechaudit.workflow.power import EffectSetting, find_setting

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


def conclusion_counts(truths: pd.DataFrame) -> pd.DataFrame:
    """Grid points per status (columns holds / unclear / fails, ints) for the raw and the
    ceiling-aware criterion (index "criterion")."""
    counts = {name: truths[column].value_counts().reindex(list(STATUSES), fill_value=0).astype(int)
              for column, name in (("raw", "raw"), ("normalised", "ceiling-aware"))}
    return pd.DataFrame(counts).transpose().rename_axis("criterion")


def fail_pfind_max(truths: pd.DataFrame) -> float:
    """Largest ``p_find`` at which the raw criterion fails at every grid point (NaN: none)."""
    everywhere = truths.groupby("p_find").raw.apply(lambda s: (s == "fails").all())
    low = everywhere[everywhere].index
    return float(low.max()) if len(low) else float("nan")


def hold_pfind_min(truths: pd.DataFrame) -> float:
    """Smallest ``p_find`` at which the raw criterion holds at some grid point (NaN: none)."""
    holds = truths[truths.raw == "holds"].p_find
    return float(holds.min()) if len(holds) else float("nan")


def peak_along(truths: pd.DataFrame, factors: Mapping[str, float], axes: Sequence[str], along: str = "p_find",
               column: str = "truth_1v5_pp") -> pd.Series:
    """The row with the largest ``column`` along the ``along`` axis, the other ``axes`` at ``factors``."""
    line = truths.loc[np.logical_and.reduce([np.isclose(truths[k], factors[k]) for k in axes if k != along])]
    return line.loc[line[column].idxmax()]


def max_change_pp(alt: pd.DataFrame, by: str, columns: Sequence[str]) -> float:
    """Largest range (max - min, pp) of any of ``columns`` within a group of ``by``."""
    spread = alt.groupby(by)[list(columns)].agg(lambda s: s.max() - s.min())
    return float(spread.to_numpy().max())


def bias_summary(bias: pd.DataFrame, rule: str = "tfidf") -> dict[str, dict[str, float | int | None]]:
    """Per comparison tag (``COMPARISONS``): points where ``rule`` lies under / over the truth by more
    than z standard errors, its bias range (pp), and the largest truth among the points it does not
    underestimate (None when it underestimates everywhere)."""
    part = bias[bias.rule == rule]
    out = {}
    for comp, tag in COMPARISONS.items():
        sub = part[part.comparison == comp]
        others = sub[sub.direction != "under"]
        out[tag] = {"under": int((sub.direction == "under").sum()), "over": int((sub.direction == "over").sum()),
                    "bias_min": float(sub.bias_pp.min()), "bias_max": float(sub.bias_pp.max()),
                    "other_truth_max": float(others.truth_pp.max()) if len(others) else None}
    return out


def alternatives_table(alt: pd.DataFrame, axes: Sequence[str]) -> pd.DataFrame:
    """The evidence-weight grid, readable: index the ``axes``, truths and the 1 v 5 ceiling in pp,
    the same-depth divergence at depth 1 (a level) in %."""
    names = {"truth_0v1_pp": "0 v 1 (pp)", "truth_1v5_pp": "1 v 5 (pp)", "same_K1_pp": "same-depth K=1 (%)",
             "max_1v5_pp": "1 v 5 ceiling (pp)"}
    return alt.set_index(list(axes))[list(names)].rename(columns=names).round(1)


def power_settings(bench: Benchmark, instances: Sequence[str], base: SimulatorParams,
                   targets: Sequence[Mapping], *, runs_per_depth: int, check_runs_per_depth: int,
                   seed: int) -> list[EffectSetting]:
    """``workflow.power.find_setting`` for each of ``targets`` (dicts with target_pp, factor, bracket,
    fixed). A target its bracket does not straddle on this benchmark (e.g. your own data) is left out
    with a one-line note; ``MechauditError`` when none is left."""
    settings = []
    for t in targets:
        try:
            settings.append(find_setting(bench, instances, base, t["target_pp"], factor=t["factor"],
                                         bracket=t["bracket"], fixed=t["fixed"], runs_per_depth=runs_per_depth,
                                         check_runs_per_depth=check_runs_per_depth, seed=seed))
        except ValueError as err:
            if "not bracketed" not in str(err):
                raise
            print(f"power_targets: {err}; this target is left out (widen or move its bracket)")
    if not settings:
        raise MechauditError("no power target is bracketed on this benchmark: adjust power_targets' brackets",
                             field="power_targets")
    return settings


def settings_table(settings: Sequence) -> pd.DataFrame:
    """One row per power setting (index "target (pp)"): the factors set, the achieved 1 v 5 truth and
    its standard error (pp)."""
    rows = [{"target (pp)": s.target_pp, "setting": ", ".join(f"{k} = {v:.3g}" for k, v in s.factors.items()),
             "true 1 v 5 (pp)": round(s.truth_pp, 2), "s.e. (pp)": round(s.truth_se_pp, 2)} for s in settings]
    return pd.DataFrame(rows).set_index("target (pp)")


def design_powers(power: pd.DataFrame) -> pd.DataFrame:
    """The power of each named design (rows ``role == "design"`` of ``power_table``), readable: index
    true effect (pp) and design ("4 x 5": instances x runs per depth); power and its MC s.e."""
    d = power[power.role == "design"]
    table = pd.DataFrame({"true 1 v 5 (pp)": d.truth_pp.round(1).to_numpy(),
                          "design": [f"{int(k)} x {int(r)}" for k, r in zip(d.n_instances, d.runs_per_depth)],
                          "power": d.power.round(2).to_numpy(), "MC s.e.": d.power_se.round(2).to_numpy()})
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
