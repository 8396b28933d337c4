"""Calibration of the workflow simulator: how ``params/simulator.yaml``'s defaults are chosen.

Some numbers the paper reports are *targets* (``data/paper_reported.yaml``); every other simulator
parameter is an assumption (``params/calibration.yaml`` gives each its reason, and its section
``fitted`` each fitted parameter's paper numbers).

1. **Matched-pair density** (matched pairs per run pair): two runs of one instance share
   ``openings * (1 + m p)^2`` matched pairs on average, so ``p_extra_hypothesis`` follows in closed
   form (``p_extra_from_density``); ``m = extra_hypotheses_max`` is an assumption.
2. **Extra divergence** (the spec's ``targets``), scored under the spec's ``measure``: by default
   ``paper_rates`` (each kind of chain change called different at the paper's LLM-judge rate), not
   the mechanism key, which calls every replaced step a new mechanism and measures a larger
   quantity. ``scan`` simulates every grid point with the same seed (common random numbers) and
   ``score`` rates it; each tolerance is the sampling SD of one 60-run design's estimate.
3. **The engagement mixture** (the paper's demand shares): ``reply_sound`` is solved in closed form
   at the chosen point (``solve_reply_sound``). A reply on a sound link changes no chain, so the
   weak-link demands and the extra divergences do not depend on it. ``reply_weak`` is an assumption.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from mechaudit.divergence import comparison_matrix, extra_divergence
from mechaudit.paper import entries, reported
from mechaudit.paths import PARAMS_DIR
from mechaudit.schema import Benchmark
from mechaudit.workflow import committed
from mechaudit.workflow.depth import MEASURES, outcome_matrices
from mechaudit.workflow.design import Design
from mechaudit.workflow.parallel import parallel_map
from mechaudit.workflow.paramfile import load_section
from mechaudit.workflow.records import LABELS
from mechaudit.workflow.robustness import consistent
from mechaudit.workflow.simulator import (
    ReplyProbabilities,
    SimulatorParams,
    instance_models,
    load_simulation,
    simulate_outcomes,
)
from mechaudit.workflow.validity import population_truth

SHARE_COLUMNS = tuple(f"{label}_pct" for label in LABELS)
SOLVED = ("p_extra_hypothesis", "reply_sound")  # closed form, never scanned
#: the paper numbers each closed-form value is solved from (``fitted`` in the spec must list them)
SOLVED_TARGETS = {
    "p_extra_hypothesis": ("design.matched_pairs",),  # run pairs are fixed by the design, not fitted
    "reply_sound": tuple(f"engagement.{label}_pct" for label in LABELS),
}
#: prefix of the paper's extra-divergence keys; ``k{a}_vs_k{b}`` follows
EXTRA_KEY = "critique_depth.extra_divergence_pp."


def comparison_of(key: str) -> tuple[int, int]:
    """Depths ``(a, b)`` of an extra-divergence key such as ``critique_depth.extra_divergence_pp.k0_vs_k1``."""
    if not key.startswith(EXTRA_KEY):
        raise ValueError(f"{key!r} is not an extra-divergence key ({EXTRA_KEY}k<a>_vs_k<b>)")
    try:
        a, b = key[len(EXTRA_KEY):].split("_vs_")
        return int(a.removeprefix("k")), int(b.removeprefix("k"))
    except ValueError:
        raise ValueError(f"{key!r}: expected {EXTRA_KEY}k<a>_vs_k<b>") from None


def extra_column(label: str) -> str:
    """The scan's column of a comparison label: ``"0 v 1"`` -> ``"extra_0v1_pp"``."""
    return f"extra_{label.replace(' ', '')}_pp"


def label_of(key: str) -> str:
    """The comparison label (``"0 v 1"``) of an extra-divergence key."""
    a, b = comparison_of(key)
    return f"{a} v {b}"


class CalibrationSpec(BaseModel):
    """The scan's settings (``params/calibration.yaml``, key ``calibration``).

    ``measure``: one of ``depth.MEASURES``; ``targets``: extra-divergence paper key -> tolerance (pp,
    the sampling SD of one 60-run design's estimate); ``target_correlation``: the targets' sampling
    correlation; ``untargeted_sd``: sampling SD (pp) of the other extra divergences (chapter 02b checks
    all three); ``consistent_level``: of ``robustness.consistent``; ``grid``: parameter -> candidate
    values; ``runs_per_depth`` x ``n_seeds`` designs with common ``seed`` per point; ``max_se_share``:
    largest Monte Carlo SE as a share of the tolerance; ``mixture_runs_per_depth``: of the design that
    solves ``reply_sound``; ``digits``: of the closed-form values; ``fixed``: assumption -> why;
    ``fitted``: fitted parameter -> its paper keys; ``chosen``: fitted parameter -> how it was set by
    hand (not by this module).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    seed: int = 0
    measure: str = "paper_rates"
    runs_per_depth: int = Field(ge=3)
    n_seeds: int = Field(default=1, ge=1)
    mixture_runs_per_depth: int = Field(ge=2)
    targets: dict[str, float]
    target_correlation: float = Field(default=0.0, gt=-1, lt=1)
    untargeted_sd: dict[str, float] = Field(default_factory=dict)
    consistent_level: float = Field(default=0.95, gt=0, lt=1)
    max_se_share: float = Field(default=0.1, gt=0)
    digits: int = Field(default=2, ge=1, le=6)
    grid: dict[str, list[float]]
    fixed: dict[str, str]
    fitted: dict[str, list[str]] = Field(default_factory=dict)
    chosen: dict[str, str] = Field(default_factory=dict)

    @field_validator("measure")
    @classmethod
    def _measure_known(cls, measure: str) -> str:
        if measure not in MEASURES:
            raise ValueError(f"unknown measure {measure!r}; choose one of {', '.join(MEASURES)}")
        return measure

    @field_validator("targets", "untargeted_sd")
    @classmethod
    def _sds_ok(cls, sds: dict[str, float], info: ValidationInfo) -> dict[str, float]:
        if not sds and info.field_name == "targets":
            raise ValueError("give at least one extra-divergence target")
        for key, sd in sds.items():
            comparison_of(key)
            if not sd > 0:
                raise ValueError(f"the sampling SD of {key} must be > 0, got {sd}")
        return sds

    @field_validator("grid")
    @classmethod
    def _grid_ok(cls, grid: dict[str, list[float]]) -> dict[str, list[float]]:
        bad = [k for k in grid if k not in SimulatorParams.model_fields or k in SOLVED
               or k in ("name", "evidence_weight", "critique_changes_mechanism")]
        if bad:
            raise ValueError(f"cannot scan {bad}: not a scalar simulator parameter, or solved in closed form")
        empty = [k for k, v in grid.items() if not v]
        if empty:
            raise ValueError(f"no candidate values for {empty}")
        return grid

    @field_validator("fixed")
    @classmethod
    def _fixed_known(cls, fixed: dict[str, str]) -> dict[str, str]:
        bad = [k for k in fixed if k not in SimulatorParams.model_fields or k in SOLVED]
        if bad:
            raise ValueError(f"cannot list {bad} as assumptions: unknown, or solved in closed form")
        return fixed

    @model_validator(mode="after")
    def _fitted_matches_the_fit(self) -> CalibrationSpec:
        """``fitted`` names exactly the targets each parameter is fitted to (grid: the targets;
        closed form: ``SOLVED_TARGETS``); no parameter is both fitted and assumed."""
        expected = {name: sorted(self.targets) for name in self.grid} | {
            name: sorted(keys) for name, keys in SOLVED_TARGETS.items()}
        wrong = {name: keys for name, keys in self.fitted.items()
                 if name in expected and sorted(keys) != expected[name]}
        if wrong:
            raise ValueError(f"fitted names the wrong paper keys for {sorted(wrong)}: expected "
                             f"{ {k: expected[k] for k in wrong} }")
        clash = sorted(set(self.fitted) & set(self.fixed))
        if clash:
            raise ValueError(f"{clash} are listed both as fitted and as assumptions")
        unexplained = sorted(set(self.chosen) - set(self.fitted))
        if unexplained:
            raise ValueError(f"chosen explains {unexplained}, which fitted does not list")
        return self

    def sampling_sd(self) -> dict[str, float]:
        """Sampling SD (pp) of one design's estimate per extra-divergence key."""
        return {**self.targets, **self.untargeted_sd}


def load_calibration(path: str | Path | None = None) -> CalibrationSpec:
    """Read the scan settings (default ``params/calibration.yaml``); ``DataError`` on bad content."""
    path = Path(path) if path is not None else PARAMS_DIR / "calibration.yaml"
    return load_section(CalibrationSpec, path, "calibration", "a mapping of scan settings")


@dataclass(frozen=True)
class CalibrationSetup:
    """The benchmark, the design, the simulator parameters and the calibration spec (chapters 02, 02c)."""

    bench: Benchmark
    design: Design
    base: SimulatorParams
    spec: CalibrationSpec

    @property
    def instances(self) -> list[str]:
        """The benchmark's instance ids."""
        return [i.id for i in self.bench.instances]


def calibration_setup(data_dir: str | Path | None = None, design_file: str = "paper.yaml",
                      simulator_file: str = "simulator.yaml", calibration_file: str = "calibration.yaml"
                      ) -> CalibrationSetup:
    """``simulator.load_simulation`` and ``load_calibration`` (file names under ``params/``)."""
    return CalibrationSetup(*load_simulation(data_dir, design_file, simulator_file),
                            load_calibration(PARAMS_DIR / calibration_file))


# --------------------------------------------------------------------------- targets


def paper_targets(keys: Sequence[str] = (EXTRA_KEY + "k0_vs_k1",)) -> dict[str, float]:
    """The paper's numbers the calibration uses: ``keys``, the ``*_pct`` demand shares, ``demands``,
    ``matched_pairs``, ``run_pairs`` and ``openings`` (per instance)."""
    out = {key: float(reported(key)) for key in keys}
    for label, col in zip(LABELS, SHARE_COLUMNS):
        out[col] = float(reported(f"engagement.{label}_pct"))
    for key, name in [("engagement.demands", "demands"), ("design.matched_pairs", "matched_pairs"),
                      ("design.run_pairs", "run_pairs"),
                      ("design.opening_hypotheses_per_instance", "openings")]:
        out[name] = float(reported(key))
    return out


def p_extra_from_density(pairs_per_run_pair: float, openings: int, extra_max: int) -> float:
    """``p`` in [0, 1] solving ``openings * (1 + extra_max * p)^2 = pairs_per_run_pair``, else ValueError."""
    if openings < 1 or extra_max < 1:
        raise ValueError(f"need openings >= 1 and extra_max >= 1, got {openings}, {extra_max}")
    p = (math.sqrt(pairs_per_run_pair / openings) - 1.0) / extra_max
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"density {pairs_per_run_pair} is out of reach: p = {p:.3f} not in [0, 1]")
    return p


def expected_density(p: float, openings: int, extra_max: int) -> float:
    """Expected matched pairs per run pair, ``openings * (1 + extra_max * p)^2``."""
    return openings * (1.0 + extra_max * p) ** 2


def round_shares(shares: np.ndarray, digits: int) -> np.ndarray:
    """Probabilities rounded to ``digits`` decimals that still sum to 1 (largest remainder)."""
    unit = 10 ** digits
    scaled = np.asarray(shares, float) * unit
    base = np.floor(scaled + 1e-9)
    short = int(round(unit - base.sum()))
    order = np.argsort(-(scaled - base), kind="stable")
    base[order[:short]] += 1
    return base / unit


def project_simplex(v: np.ndarray) -> np.ndarray:
    """The probability vector closest to ``v`` in Euclidean distance (sort-based simplex projection)."""
    v = np.asarray(v, dtype=float)
    u = np.sort(v)[::-1]
    cum = np.cumsum(u) - 1.0
    k = np.nonzero(u - cum / np.arange(1, len(v) + 1) > 0)[0][-1]
    return np.maximum(v - cum[k] / (k + 1), 0.0)


# --------------------------------------------------------------------------- simulation side


def _extras(outcomes, design: Design, measure: str) -> dict[str, float]:
    """Instance-mean extra divergence (pp) of every comparison of ``design`` under ``measure``."""
    mats = outcome_matrices(outcomes, measure)
    return {f"{a} v {b}": 100.0 * float(np.mean([extra_divergence(*comparison_matrix(m.D, m.depths, a, b))
                                                 for m in mats]))
            for a, b in design.comparisons()}


@dataclass(frozen=True)
class Measured:
    """One simulated design (``measure``): ``extras_pp`` (label -> pp), ``weak_labels`` (weak-link
    demands per label, shape (4,)), ``n_sound``, ``pairs_per_run_pair`` and ``runs_per_depth``."""

    extras_pp: dict[str, float]
    weak_labels: np.ndarray
    n_sound: int
    pairs_per_run_pair: float
    runs_per_depth: int

    def shares(self, reply_sound: np.ndarray) -> np.ndarray:
        """Expected demand shares (%) when sound-link demands follow ``reply_sound``, shape (4,)."""
        total = self.weak_labels.sum() + self.n_sound
        return 100.0 * (self.weak_labels + self.n_sound * np.asarray(reply_sound)) / total

    def demands_per_runs(self, runs_per_depth: int) -> float:
        """Demands of a design with ``runs_per_depth`` runs per depth (5: the paper's 60 runs)."""
        return float(self.weak_labels.sum() + self.n_sound) * runs_per_depth / self.runs_per_depth

    def weak_share(self) -> float:
        """Share of the demands that hit a weak link (0..1)."""
        return float(self.weak_labels.sum() / (self.weak_labels.sum() + self.n_sound))


def _unit(label: str) -> ReplyProbabilities:
    return ReplyProbabilities(**{x: float(x == label) for x in LABELS})


def measure(bench: Benchmark, design: Design, params: SimulatorParams, runs_per_depth: int, seed: int = 0,
            models: Mapping | None = None, measure_name: str = "paper_rates") -> Measured:
    """Simulate ``design`` (depths including 0 and 1) with ``runs_per_depth`` runs per depth, twice
    with one seed: sound-link demands all "answered", then all "dropped" (identical runs but for
    those labels), so the label counts' difference separates weak-link from sound-link demands.
    Extra divergences under ``measure_name`` (``depth.MEASURES``)."""
    if not {0, 1} <= set(design.depths):
        raise ValueError(f"design.depths must include 0 and 1, got {design.depths}")
    big = design.model_copy(update={"runs_per_depth": runs_per_depth})
    models = instance_models(bench, params.evidence_weight) if models is None else models
    a = simulate_outcomes(bench, big, params.model_copy(update={"reply_sound": _unit("answered")}),
                          seed=seed, models=models)
    d = simulate_outcomes(bench, big, params.model_copy(update={"reply_sound": _unit("dropped")}),
                          seed=seed, models=models)
    count_a = np.sum([o.labels for o in a], axis=0)
    count_d = np.sum([o.labels for o in d], axis=0)
    i_ans, i_drop = LABELS.index("answered"), LABELS.index("dropped")
    n_sound = int(count_a[i_ans] - count_d[i_ans])
    weak = count_d.astype(float)
    weak[i_drop] -= n_sound
    return Measured(_extras(a, big, measure_name), weak, n_sound, pairs_per_run_pair(a), runs_per_depth)


def pairs_per_run_pair(outcomes) -> float:
    """Mean matched pairs per run pair of ``RunOutcome`` records, averaged over instances."""
    groups: dict[str, list] = {}
    for o in outcomes:
        groups.setdefault(o.instance, []).append(Counter(op for op, _ in o.keys))
    dens = []
    for runs in groups.values():
        openings = sorted({op for c in runs for op in c})
        N = np.array([[c.get(op, 0) for op in openings] for c in runs], dtype=float)
        M = N @ N.T
        dens.append(M[np.triu_indices(len(M), 1)].mean())
    return float(np.mean(dens))


def mixture_reachable(measured: Measured, shares_pct: np.ndarray) -> bool:
    """Whether some ``reply_sound`` completes the weak-link demands to ``shares_pct`` (%) exactly."""
    target = np.asarray(shares_pct, float) / 100.0
    total = measured.weak_labels.sum() + measured.n_sound
    return bool(measured.n_sound > 0 and (target * total - measured.weak_labels >= -1e-9).all())


def solve_reply_sound(measured: Measured, shares_pct: np.ndarray, digits: int = 2) -> np.ndarray:
    """Sound-link reply probabilities (``LABELS`` order, rounded to ``digits``, sum 1) that complete
    the weak-link demands to the shares ``shares_pct`` (%): exact when reachable, else the least-squares
    closest (``project_simplex``: the shares are an isotropic affine map of it). ValueError without
    sound-link demands."""
    target = np.asarray(shares_pct, float) / 100.0
    total = measured.weak_labels.sum() + measured.n_sound
    if measured.n_sound == 0:
        raise ValueError("no demands on sound links: reply_sound is not identified")
    raw = (target * total - measured.weak_labels) / measured.n_sound
    return round_shares(project_simplex(raw), digits)


def grid_points(spec: CalibrationSpec) -> list[dict[str, float]]:
    """Every combination of the grid's candidate values, in the file's order."""
    names = list(spec.grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*(spec.grid[n] for n in names))]


def se_column(label: str) -> str:
    """The scan's Monte Carlo standard-error column of a comparison label: ``"0 v 1"`` -> ``"se_0v1_pp"``."""
    return f"se_{label.replace(' ', '')}_pp"


def expected_extras(bench: Benchmark, design: Design, params: SimulatorParams, spec: CalibrationSpec
                    ) -> dict[str, tuple[float, float]]:
    """Comparison label -> (expected extra divergence, Monte Carlo SE), pp (``population_truth``)."""
    truth = population_truth(bench, design, params, runs_per_depth=spec.runs_per_depth, seed=spec.seed,
                             measures=(spec.measure,), n_seeds=spec.n_seeds)
    extra = truth[truth.panel == "extra"]
    return {r.label: (float(r.truth_pp), float(r.truth_se_pp)) for r in extra.itertuples()}


def _scan_row(bench: Benchmark, design: Design, base: SimulatorParams, spec: CalibrationSpec,
              values: dict[str, float]) -> dict[str, float]:
    params = SimulatorParams.model_validate(base.model_dump() | values)
    expected = expected_extras(bench, design, params, spec)
    return {**values, **{extra_column(k): v for k, (v, _) in expected.items()},
            **{se_column(k): se for k, (_, se) in expected.items()}}


def score(table: pd.DataFrame, spec: CalibrationSpec, targets: Mapping[str, float]) -> pd.DataFrame:
    """``table`` (``extra_*_pp``, ``se_*_pp`` per point) scored against the targets. Adds ``objective``
    (sum of ``((extra - target) / tolerance)^2``), ``max_abs_z``, ``within_half_tolerance``,
    ``consistent`` (``robustness.consistent``, all targets jointly), ``se_ok`` (every Monte Carlo SE
    at most ``spec.max_se_share`` of its tolerance) and ``best`` (lowest objective; ties: first)."""
    labels = {label_of(k): k for k in spec.targets}
    z = np.column_stack([(table[extra_column(lab)] - targets[k]) / spec.targets[k] for lab, k in labels.items()])
    se_share = np.column_stack([table[se_column(lab)] / spec.targets[k] for lab, k in labels.items()])
    out = table.assign(objective=np.sum(z**2, axis=1), max_abs_z=np.max(np.abs(z), axis=1))
    out["within_half_tolerance"] = out.max_abs_z <= 0.5
    out = consistent(out, {lab: targets[k] for lab, k in labels.items()},
                     {lab: spec.targets[k] for lab, k in labels.items()}, spec.target_correlation,
                     spec.consistent_level, prefix="extra")
    out["se_ok"] = np.max(se_share, axis=1) <= spec.max_se_share
    out["best"] = np.arange(len(out)) == int(out.objective.to_numpy().argmin())
    return out


def scan(bench: Benchmark, design: Design, base: SimulatorParams, spec: CalibrationSpec,
         targets: Mapping[str, float] | None = None, n_jobs: int = 1,
         parallel_backend: str | None = None) -> pd.DataFrame:
    """One row per grid point (grid order): the grid's parameters, ``extra_{a}v{b}_pp`` and
    ``se_{a}v{b}_pp`` (``expected_extras``) per comparison, then ``score``'s columns. ``base`` supplies
    every other parameter; ``targets``: paper key -> value (default the paper's). The table does not
    depend on ``n_jobs``.
    """
    targets = paper_targets(list(spec.targets)) if targets is None else targets
    rows = parallel_map(_scan_row, [(bench, design, base, spec, values) for values in grid_points(spec)],
                        n_jobs, parallel_backend)
    return score(pd.DataFrame(rows), spec, targets)


@dataclass(frozen=True)
class Calibration:
    """Result of ``calibrate``: the calibrated parameters, the scan table and the check run."""

    params: SimulatorParams
    scan: pd.DataFrame
    measured: Measured
    targets: dict[str, float]
    p_extra_exact: float

    def values(self) -> dict[str, Any]:
        """The calibrated values (``p_extra_hypothesis``, grid parameters, ``reply_sound``)."""
        best = self.scan[self.scan.best].iloc[0]
        out: dict[str, Any] = {"p_extra_hypothesis": self.params.p_extra_hypothesis}
        out.update({k: float(best[k]) for k in self.scan.columns if k in SimulatorParams.model_fields})
        out["reply_sound"] = self.params.reply_sound.model_dump()
        return out


def scan_settings(design: Design, base: SimulatorParams, spec: CalibrationSpec) -> dict[str, Any]:
    """Everything the scan's table depends on (``workflow.committed``): the spec's scan fields, the
    design, the simulator parameters the scan does not set (nor ``reply_sound``) and the benchmark."""
    scan_fields = ("seed", "measure", "runs_per_depth", "n_seeds", "targets", "target_correlation",
                   "consistent_level", "max_se_share", "grid")
    fixed = base.model_dump(exclude={"name", "reply_sound", *spec.grid})
    return committed.with_benchmark({"spec": spec.model_dump(include=set(scan_fields)), "design": design.model_dump(),
                                     "simulator": fixed})


def closed_form_base(base: SimulatorParams, spec: CalibrationSpec, targets: Mapping[str, float]
                     ) -> tuple[SimulatorParams, float]:
    """``(base with the rounded closed-form p_extra_hypothesis, the exact solution)``."""
    p_exact = p_extra_from_density(targets["matched_pairs"] / targets["run_pairs"], int(targets["openings"]),
                                   base.extra_hypotheses_max)
    return base.model_copy(update={"p_extra_hypothesis": round(p_exact, spec.digits)}), p_exact


def calibrate(bench: Benchmark, design: Design, base: SimulatorParams, spec: CalibrationSpec,
              targets: Mapping[str, float] | None = None, table: pd.DataFrame | None = None,
              n_jobs: int = 1, parallel_backend: str | None = None) -> Calibration:
    """Density -> ``p_extra_hypothesis``, extra divergences -> the grid's parameters (``scan``, or the
    given ``table`` re-scored), mixture -> ``reply_sound``; the rest keeps ``base``'s values."""
    targets = dict(paper_targets(list(spec.targets)) if targets is None else targets)
    params, p_exact = closed_form_base(base, spec, targets)
    if table is None:
        table = scan(bench, design, params, spec, targets, n_jobs=n_jobs, parallel_backend=parallel_backend)
    else:
        expected = pd.DataFrame(grid_points(spec))
        if not table[list(spec.grid)].reset_index(drop=True).equals(expected[list(spec.grid)]):
            raise ValueError("the given scan table does not hold the spec's grid points in grid order")
        table = score(table[[c for c in table.columns if c in spec.grid or c.startswith(("extra_", "se_"))]],
                      spec, targets)
    best = table[table.best].iloc[0]
    params = params.model_copy(update={k: float(best[k]) for k in spec.grid})
    measured = measure(bench, design, params, spec.mixture_runs_per_depth, seed=spec.seed,
                       measure_name=spec.measure)
    shares = np.array([targets[c] for c in SHARE_COLUMNS])
    reply = solve_reply_sound(measured, shares, spec.digits)
    params = SimulatorParams.model_validate(
        params.model_dump() | {"reply_sound": dict(zip(LABELS, map(float, reply)))})
    return Calibration(params, table, measured, targets, p_exact)


#: the name of the committed scan (``workflow.committed``)
SCAN_NAME = "calibration_scan"


def matches(params: SimulatorParams, values: Mapping[str, Any], atol: float = 1e-9) -> dict[str, bool]:
    """Per calibrated parameter whether ``params`` holds that value (reply vectors per label)."""
    out = {}
    for name, value in values.items():
        current = getattr(params, name)
        if isinstance(value, Mapping):
            out[name] = all(abs(getattr(current, lab) - float(value[lab])) <= atol for lab in LABELS)
        else:
            out[name] = abs(float(current) - float(value)) <= atol
    return out


def _fmt(value: Any) -> str:
    if isinstance(value, ReplyProbabilities):
        value = value.model_dump()
    if isinstance(value, Mapping):
        return " / ".join(f"{float(value[label]):g}" for label in LABELS)
    return f"{value:g}" if isinstance(value, float) else str(value)


def fit_table(cal: Calibration, committed_params: SimulatorParams, spec: CalibrationSpec) -> pd.DataFrame:
    """What was fitted to what: parameter, calibrated, committed, target, target value, achieved (best
    point's expected values ± Monte Carlo SE; ``cal.measured`` for density and mixture); then the
    values chosen by hand (``spec.chosen``) and the assumptions."""
    t, m, p = cal.targets, cal.measured, cal.params
    best = cal.scan[cal.scan.best].iloc[0]
    expected = expected_density(p.p_extra_hypothesis, int(t["openings"]), p.extra_hypotheses_max)
    labels = [label_of(k) for k in spec.targets]
    mix_achieved = " / ".join(f"{x:.1f}" for x in m.shares(p.reply_sound.as_array()))
    fitted = [("p_extra_hypothesis", "matched pairs per run pair (closed form)",
               f"{t['matched_pairs'] / t['run_pairs']:.2f}",
               f"{expected:.2f} expected ({m.pairs_per_run_pair:.2f} simulated)")]
    fitted += [(name, f"expected extra divergence {' and '.join(labels)}, pp, {spec.measure} (grid scan)",
                " / ".join(f"{t[k]:g}" for k in spec.targets),
                " / ".join(f"{best[extra_column(lab)]:.1f} ± {best[se_column(lab)]:.1f}" for lab in labels))
               for name in spec.grid]
    fitted.append(("reply_sound", "demand shares c / a / p / d, % (closed form)",
                   " / ".join(f"{t[c]:g}" for c in SHARE_COLUMNS), mix_achieved))
    mixture_keys = sorted(SOLVED_TARGETS["reply_sound"])
    rows = [(name, _fmt(getattr(p, name)), *rest) for name, *rest in fitted]
    rows += [(name, "(chosen)", "chosen: " + how, " / ".join(f"{reported(k):g}" for k in spec.fitted[name]),
              mix_achieved if sorted(spec.fitted[name]) == mixture_keys else "") for name, how in spec.chosen.items()]
    rows += [(name, "(assumed)", "assumption: " + reason, "", "") for name, reason in spec.fixed.items()]
    return pd.DataFrame([(name, calibrated, _fmt(getattr(committed_params, name)), *rest)
                         for name, calibrated, *rest in rows],
                        columns=["parameter", "calibrated", "committed", "target", "target value", "achieved"])


#: prefix of the paper's bounds on the exact p-value; ``k{a}_vs_k{b}`` follows
P_BOUND_KEY = "critique_depth.p_value_bound."
#: the name of the committed record of what the fit constrains (``workflow.committed``'s folder)
CONSTRAINED_NAME = "constrained_by_fit"


def constrained_by_fit(table: pd.DataFrame, spec: CalibrationSpec, level: float | None = None,
                       margin_sd: float = 2.0) -> dict[str, str]:
    """Paper key -> reason, for the keys whose simulated value the fit decides, over the consistent
    points of the scored scan ``table`` (empty when there are none):

    - an untargeted extra divergence whose expected values span less than ``z`` sampling SDs (``z``:
      the two-sided normal quantile at ``level``, default ``spec.consistent_level``);
    - a target's ``critique_depth.p_value_bound.*``: every expected effect exceeds the bound's normal
      quantile by ``margin_sd`` sampling SDs, so the exact p lies below the bound."""
    from scipy.stats import norm  # defers scipy

    inside = table[table.consistent]
    if inside.empty:
        return {}
    level = spec.consistent_level if level is None else level
    z = float(norm.ppf(1 - (1 - level) / 2))
    labels = " and ".join(label_of(k) for k in spec.targets)
    where = f"over the {len(inside)} fitted settings consistent with the paper's {labels} estimates"
    out: dict[str, str] = {}
    for key, sd in spec.untargeted_sd.items():
        column = extra_column(label_of(key))
        low, high = float(inside[column].min()), float(inside[column].max())
        if high - low < z * sd:
            out[key] = (f"{where}, the simulator's expected {label_of(key)} effect ranges from {low:.1f} to "
                        f"{high:.1f} pp, less than one design could tell apart ({z:.2f} sampling SDs of "
                        f"{sd:g} pp)")
    known = entries()
    for key, sd in spec.targets.items():
        a, b = comparison_of(key)
        bound_key = f"{P_BOUND_KEY}k{a}_vs_k{b}"
        if bound_key not in known:
            continue
        need = float(norm.ppf(1 - reported(bound_key) / 2)) + margin_sd
        smallest = float((inside[extra_column(f"{a} v {b}")] / sd).min())
        if smallest >= need:
            out[bound_key] = (f"{where}, the expected {a} v {b} effect is at least {smallest:.1f} sampling SDs "
                              f"({sd:g} pp each), so the exact p lies below the paper's bound of "
                              f"{reported(bound_key):g} whichever of them is true")
    return out
