"""Chapter 02c (robustness and power): the committed grids of ``workflow.robustness`` and
``workflow.power``, and readable summaries of them. Effects are in pp of extra divergence;
same-depth divergence is a level, in %. Every summary describes the simulator (it needs its ground
truth, so the chapter never calls an LLM), not the paper's workflow.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mechaudit.book.chapter import SIMULATED, headline_provenance
from mechaudit.book.settings import RobustnessSettings
from mechaudit.errors import MechauditError
from mechaudit.paper import reported, shown
from mechaudit.report.facts import fact
from mechaudit.report.tables import format_number
from mechaudit.schema import Benchmark
from mechaudit.workflow import Design, SimulatorParams, build_rules, committed
from mechaudit.workflow.calibrate import CalibrationSetup, calibration_setup, label_of
from mechaudit.workflow.power import EffectSetting, power_table
from mechaudit.workflow.robustness import (
    consistent,
    diminishing_returns,
    grid,
    max_change_pp,
    pick,
    rule_gap,
    rule_grid,
    truth_grid,
    vary,
)
from mechaudit.workflow.validity import max_bias_z


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


def with_consistency(truths: pd.DataFrame, spec) -> pd.DataFrame:
    """``truths`` (a ``truth_grid`` table) with ``distance`` and ``consistent``: the joint test of the
    paper's target estimates (``observed_and_sd``) at the calibration's level and correlation."""
    observed, sd = observed_and_sd(spec)
    return consistent(truths, observed, sd, spec.target_correlation, spec.consistent_level)


def targets_name(show_paper: bool) -> str:
    """Whose 0 v 1 and 0 v 5 effects the consistent settings fit, before "0 v 1 and 0 v 5 effects":
    "the paper's", or "the calibration's target" when the chapter does not show the paper's numbers."""
    return "the paper's" if show_paper else "the calibration's target"


def observed_and_sd(spec) -> tuple[dict[str, float], dict[str, float]]:
    """The paper's extra divergences the calibration targets (label -> pp) and the sampling SD of one
    design's estimate of each (the targets' tolerances, which chapter 02b measures)."""
    return ({label_of(k): float(reported(k)) for k in spec.targets},
            {label_of(k): float(tol) for k, tol in spec.targets.items()})


#: names of the committed tables (``workflow.committed``): the grid over ``robust_axes``, the one over
#: ``alternatives_axes``, and the truths of the chosen settings under each truth measure
MAP_NAME, ALTERNATIVES_NAME, PICKS_NAME = "robustness_map", "robustness_alternatives", "robustness_picks_{measure}"


def grid_truths(name: str, bench: Benchmark, design: Design, base: SimulatorParams, points: pd.DataFrame, *,
                runs_per_depth: int, n_seeds: int, seed: int, measure: str = "paper_rates", n_jobs: int = 1,
                parallel_backend: str | None = None, write: bool = False, force: bool = False
                ) -> tuple[pd.DataFrame, str]:
    """``robustness.truth_grid`` at ``points`` under ``measure``, and where it came from
    (``workflow.committed.cached`` under ``name``: "committed" or "computed now")."""
    settings = committed.with_benchmark({  # everything the table depends on
        "design": design.model_dump(), "simulator": base.model_dump(),
        "points": [{k: float(v) for k, v in r.items()} for r in points.to_dict("records")],
        "runs_per_depth": runs_per_depth, "n_seeds": n_seeds, "seed": seed, "measure": measure})
    return committed.cached(name, settings, lambda: truth_grid(
        bench, design, base, points, runs_per_depth=runs_per_depth, seed=seed, n_jobs=n_jobs,
        parallel_backend=parallel_backend, measure=measure, n_seeds=n_seeds), write=write, force=force)


@dataclass(frozen=True)
class Truths:
    """The chapter's truths: the map over ``robust_axes`` (with consistency and conclusion (a)), the
    grid over ``alternatives_axes``, the chosen settings (``picks``, map rows) and their truths per
    measure, and where each table came from (name -> "committed" / "computed now")."""

    map: pd.DataFrame
    alternatives: pd.DataFrame
    picks: pd.DataFrame
    pick_truths: dict[str, pd.DataFrame]
    sources: dict[str, str]


def chapter_truths(s: CalibrationSetup, p: RobustnessSettings, *, write: bool = False, force: bool = False) -> Truths:
    """Every truth the chapter reads at its settings ``p``, from its committed table when the settings
    match (``write``: commit what is computed, ``force``: compute even when current); the map gets the
    joint consistency test with ``s.spec`` and conclusion (a) at ``p.diminishing_ratio``, ``p.z``; the
    picks are :func:`choose_settings` at ``p.pick_quantiles``."""
    sizes = {"runs_per_depth": p.truth_runs_per_depth, "n_seeds": p.truth_seeds, "seed": p.seed, "n_jobs": p.n_jobs,
             "parallel_backend": p.parallel_backend, "write": write, "force": force}
    sources = {}
    truths, sources[MAP_NAME] = grid_truths(MAP_NAME, s.bench, s.design, s.base, grid(p.robust_axes), **sizes)
    truths = diminishing_returns(with_consistency(truths, s.spec), ratio=p.diminishing_ratio, z=p.z)
    alt, sources[ALTERNATIVES_NAME] = grid_truths(ALTERNATIVES_NAME, s.bench, s.design, s.base,
                                                  grid(p.alternatives_axes), **sizes)
    picks = choose_settings(truths, p.pick_quantiles)
    points = picks[list(p.robust_axes)].reset_index(drop=True)
    pick_truths = {}
    for m in ("mechanism_key", "paper_rates"):
        name = PICKS_NAME.format(measure=m)
        pick_truths[m], sources[name] = grid_truths(name, s.bench, s.design, s.base, points, measure=m, **sizes)
    return Truths(truths, alt, picks, pick_truths, sources)


def write_maps(n_jobs: int = -1, force: bool = False) -> str:
    """``mechaudit calibrate``'s robustness part: the chapter's committed tables at its default
    parameters, written to ``data/computed/`` when stale (``force``: always); returns a summary."""
    p = RobustnessSettings(n_jobs=n_jobs)
    s = calibration_setup(p.data_dir, p.design_file, p.simulator_file, p.calibration_file)
    t = chapter_truths(s, p, write=True, force=force)
    st = chapter_studies(s, t, p, write=True, force=force)
    tables = {MAP_NAME: t.map, ALTERNATIVES_NAME: t.alternatives,
              **{PICKS_NAME.format(measure=m): v for m, v in t.pick_truths.items()},
              "robustness_rules": st.rule_reps, "robustness_power": st.power}
    return committed.summary(tables, {**t.sources, **st.sources})


def span(table: pd.DataFrame, column: str, digits: int = 2) -> str:
    """The range of ``column`` as text: "a" when constant, else "a to b" (values rounded to ``digits``)."""
    lo, hi = (round(float(table[column].min()), digits) + 0.0, round(float(table[column].max()), digits) + 0.0)
    return f"{lo:g}" if lo == hi else f"{lo:g} to {hi:g}"  # + 0.0: a rounded -0.0 reads "0"


def status_sentence(truths: pd.DataFrame, column: str = "raw") -> str:
    """What conclusion (a) does at the consistent grid points, as a verb phrase naming the statuses
    and their ``p_find`` values ("is unclear at the consistent settings with p_find 0.7 and holds at
    those with p_find 0.85 to 1"); never a count of grid points."""
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
    """``robustness.pick`` of the consistent points at ``quantiles`` of the 1 v 5 truth; with no
    consistent point, the points nearest the observation (smallest ``distance``), with a note."""
    inside = truths[truths.consistent]
    if len(inside):
        return pick(inside, quantiles)
    nearest = truths.nsmallest(max(1, len(set(quantiles))), "distance")
    print("no grid setting is consistent with the observed effects; the settings nearest to them are "
          "studied instead (their conclusions say little about the workflow that was observed)")
    return pick(nearest, quantiles)


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


def outside_sentence(truths: pd.DataFrame) -> str:
    """Where conclusion (a) fails on the raw criterion, in one or two sentences: how many settings and
    how many of them consistent, their largest 0 v 1 truth, and the ``p_find`` pattern."""
    fails = truths[truths.raw == "fails"]
    if fails.empty:
        return "Conclusion (a) fails at no setting of the grid."
    inside = int(fails.consistent.sum())
    whose = "the paper's estimates" if shown() else "the targets"
    which = f"none of them consistent with {whose}" if inside == 0 else f"{inside} of them consistent with {whose}"
    return (f"Conclusion (a) fails at {len(fails)} of the grid's {len(truths)} settings, {which} (their 0 v 1 "
            f"truth is at most {fails.truth_0v1_pp.max():.1f} pp): {fail_pfind_text(truths)}.")


def ceiling_sentence(truths: pd.DataFrame, share: float = 0.25) -> str:
    """Whether the ceiling limits the 1 v 5 effect at the consistent settings: the largest share of its
    ceiling a 1 v 5 truth reaches there, against ``share``."""
    inside = truths[truths.consistent]
    if inside.empty:
        return "no setting is consistent, so there is nothing to read"
    top = float(inside.norm_1v5.max())
    if top <= share:
        return (f"no 1 v 5 truth there uses more than {top:.2f} of its ceiling, so the ceiling is not what keeps "
                "the effect small")
    return f"some 1 v 5 truths there use {top:.2f} of their ceiling, so the ceiling limits the effect at those settings"


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


def max_bias_text(bias: pd.DataFrame, rules: Sequence[str] = ("mechanism_key", "paper_rates")) -> str:
    """The largest |bias| of ``rules`` in Monte Carlo standard errors, as the clause "the largest bias
    is ...". A single replication per setting has no standard error: the clause says so."""
    z = max_bias_z(bias, rules)
    if math.isnan(z):
        return "not measured in standard errors: a single replication per setting has none"
    return f"{round(z, 1):g} Monte Carlo standard errors"


def consistent_view(inside: pd.DataFrame, axes: Sequence[str]) -> pd.DataFrame:
    """The consistent settings for reading: index the factors; the three truths and the 1 v 5 ceiling
    (pp, 0.1) and conclusion (a) under both criteria."""
    names = {"truth_0v1_pp": "0 v 1 (pp)", "truth_0v5_pp": "0 v 5 (pp)", "truth_1v5_pp": "1 v 5 (pp)",
             "max_1v5_pp": "1 v 5 ceiling (pp)", "raw": "(a) raw", "normalised": "(a) ceiling-aware"}
    return inside.set_index(list(axes))[list(names)].rename(columns=names).round(1)


def alternatives_table(alt: pd.DataFrame, axes: Sequence[str]) -> pd.DataFrame:
    """The evidence-weight grid, readable: index the ``axes``; the 0 v 1 and 1 v 5 truths and the 1 v 5
    ceiling in pp, the same-depth divergence at depth 1 (a level) in %."""
    names = {"truth_0v1_pp": "0 v 1 (pp)", "truth_1v5_pp": "1 v 5 (pp)", "same_K1_pp": "same-depth K=1 (%)",
             "max_1v5_pp": "1 v 5 ceiling (pp)"}
    return alt.set_index(list(axes))[list(names)].rename(columns=names).round(1)


@dataclass(frozen=True)
class ConsistentSpans:
    """The range (:func:`span`) of each grid factor and truth over the consistent settings (glued
    under ``ch02c``); "none" when none is consistent, "not varied" for a factor the grid keeps fixed."""

    consistent_p_find: str = fact(unit="probability", doc="the critic's p_find")
    consistent_weak_scale: str = fact(unit="factor", doc="scale of the weak-step probabilities")
    consistent_conceded: str = fact(unit="probability", doc="reply_weak.conceded")
    consistent_0v1: str = fact(unit="pp", doc="true 0 v 1 extra divergence")
    consistent_1v5: str = fact(unit="pp", doc="true 1 v 5 extra divergence")
    consistent_max_1v5: str = fact(unit="pp", doc="ceiling of the 1 v 5 effect")
    consistent_0v5: str = fact(unit="pp", doc="true 0 v 5 extra divergence")
    consistent_same_K1: str = fact(unit="pp", doc="share judged the same at depth 1")
    outside_sentence: str = fact(doc="where the conclusion fails outside the consistent set (:func:`outside_sentence`)")
    ceiling_sentence: str = fact(doc="how the 1 v 5 ceiling limits the effect (:func:`ceiling_sentence`)")


#: the factors and the truth columns (tag -> map column) whose spans ConsistentSpans holds
_SPAN_FACTORS = ("p_find", "weak_scale", "conceded")
_SPAN_TRUTHS = {"0v1": "truth_0v1_pp", "1v5": "truth_1v5_pp", "max_1v5": "max_1v5_pp", "0v5": "truth_0v5_pp",
                "same_K1": "same_K1_pp"}


def consistent_spans(truths: pd.DataFrame, axes: Sequence[str]) -> ConsistentSpans:
    """:class:`ConsistentSpans` of the consistent rows of the map ``truths`` over the factors ``axes``
    (factor spans to 2 decimals, truths to 1), and the map's two sentences."""
    inside = truths[truths.consistent]

    def text(column: str, digits: int) -> str:
        return span(inside, column, digits) if len(inside) else "none"

    factors = {f"consistent_{a}": text(a, 2) if a in axes else "not varied" for a in _SPAN_FACTORS}
    levels = {f"consistent_{tag}": text(column, 1) for tag, column in _SPAN_TRUTHS.items()}
    return ConsistentSpans(**factors, **levels, outside_sentence=outside_sentence(truths),
                           ceiling_sentence=ceiling_sentence(truths))


@dataclass(frozen=True)
class DefaultCell:
    """The map's truths at the default simulator (exercise 1; glued under ``ch02c_default``);
    ``None``: the grid has no row at the defaults."""

    truth_1v5_pp: float | None = fact(unit="pp", digits=1, missing="n/a", doc="true 1 v 5 extra divergence")
    max_1v5_pp: float | None = fact(unit="pp", digits=1, missing="n/a", doc="ceiling of the 1 v 5 effect")
    norm_1v5: float | None = fact(unit="ratio", digits=2, missing="n/a", doc="1 v 5 over 0 v 1")


def default_cell(truths: pd.DataFrame, factors: Mapping[str, float], axes: Sequence[str]) -> DefaultCell:
    """:class:`DefaultCell` of the map ``truths`` at ``factors`` (:func:`grid_cell`)."""
    row = grid_cell(truths, factors, axes)
    if row is None:
        return DefaultCell(None, None, None)
    return DefaultCell(float(row.truth_1v5_pp), float(row.max_1v5_pp), float(row.norm_1v5))


@dataclass(frozen=True)
class GridFacts:
    """The truth map and the joint test it is read with (glued under ``ch02c``)."""

    observed_text: str = fact(doc="the paper's effects the calibration targets, in pp (not named without the paper)")
    sd_text: str = fact(doc="the sampling SD of one design's estimate of each, in pp")
    correlation: float = fact(unit="correlation", doc="assumed correlation of the two estimates")
    level_pct: str = fact(unit="%", doc="level of the joint consistency test")
    default_p_find: float = fact(unit="probability", doc="the simulator's default p_find")
    default_conceded: float = fact(unit="probability", doc="its default reply_weak.conceded")
    truth_runs: int = fact(unit="runs per depth", doc="runs per depth behind each grid truth")
    truth_seeds: int = fact(unit="seeds", doc="seeds behind each grid truth")
    max_se: float = fact(unit="pp", digits=2, doc="largest Monte Carlo SE of a grid truth")
    n_consistent: int = fact(unit="settings", doc="grid settings consistent with the paper")
    n_points: int = fact(unit="settings", doc="grid settings")
    status_sentence: str = fact(doc="conclusion (a) over the grid, raw criterion (:func:`status_sentence`)")
    status_sentence_norm: str = fact(doc="the same under the normalised criterion")


def grid_facts(truths: pd.DataFrame, spec, factors: Mapping[str, float], runs_per_depth: int,
               n_seeds: int) -> GridFacts:
    """:class:`GridFacts` of the map ``truths`` (``runs_per_depth`` x ``n_seeds`` per point) read
    with the calibration ``spec``, the default simulator at ``factors`` (:func:`defaults`)."""
    observed, sd = observed_and_sd(spec)
    observed_text = (" and ".join(f"{v:g} pp for {k}" for k, v in observed.items()) if shown()
                     else "the calibration's targets")  # the targets are the paper's numbers
    return GridFacts(observed_text,
                     " and ".join(f"{v:g} pp" for v in sd.values()), spec.target_correlation,
                     f"{100 * spec.consistent_level:g}", factors["p_find"], factors["conceded"], runs_per_depth,
                     n_seeds, float(truths.filter(like="se_").to_numpy().max()), int(truths.consistent.sum()),
                     len(truths), status_sentence(truths), status_sentence(truths, "normalised"))


@dataclass(frozen=True)
class AlternativesFacts:
    """How far the truths move with the repair's concentration at one ``p_find`` (glued under ``ch02c``)."""

    ew_truth_change_pp: float = fact(unit="pp", digits=1, doc="largest move of the 0 v 1 and 1 v 5 truths")
    ew_same_change_pct: float = fact(unit="%", digits=1, doc="largest move of the same-depth share at depth 1")
    ew_ceiling_change_pp: float = fact(unit="pp", digits=1, doc="largest move of the 1 v 5 ceiling")


def alternatives_facts(alt: pd.DataFrame) -> AlternativesFacts:
    """:class:`AlternativesFacts` of the alternatives map ``alt`` (``robustness.max_change_pp``)."""
    return AlternativesFacts(max_change_pp(alt, "p_find", ["truth_0v1_pp", "truth_1v5_pp"]),
                             max_change_pp(alt, "p_find", ["same_K1_pp"]),
                             max_change_pp(alt, "p_find", ["max_1v5_pp"]))


@dataclass(frozen=True)
class RuleFacts:
    """The rules' estimates against the truth at the chosen settings (glued under ``ch02c``)."""

    n_text_reps: int = fact(unit="replications", doc="text-level replications per setting")
    tfidf_minus_rate_0v1: str = fact(unit="pp", doc="TF-IDF minus the paper-rate judge, 0 v 1, over the settings")
    key_minus_rate_0v1: str = fact(unit="pp", doc="mechanism key minus the paper-rate judge, 0 v 1")
    max_bias: str = fact(doc="the largest bias of the key and the paper-rate judge (:func:`max_bias_text`)")


def rule_facts(bias: pd.DataFrame, n_text_reps: int) -> RuleFacts:
    """:class:`RuleFacts` of a ``robustness.rule_bias`` table over ``n_text_reps`` replications."""
    low, high = rule_gap(bias, "0 v 1", "tfidf", "paper_rates")
    tfidf = f"{low:+.1f} to {high:+.1f}" if round(low, 1) != round(high, 1) else f"{low:+.1f}"
    low, high = rule_gap(bias, "0 v 1", "mechanism_key", "paper_rates")
    return RuleFacts(n_text_reps, tfidf, f"{low:+.1f} to {high:+.1f}", max_bias_text(bias))


@dataclass(frozen=True)
class ExerciseFacts:
    """Exercise 1: conclusion (a) under the stricter ratio 0.1, and the map at the default simulator
    (glued under ``ch02c``)."""

    ex1_status: str = fact(doc="conclusion (a) over the grid at ratio 0.1")
    ex1_fails_0v1_max: float = fact(unit="pp", digits=1, doc="largest 0 v 1 truth where it fails outside")
    default: DefaultCell


def exercise_facts(truths: pd.DataFrame, factors: Mapping[str, float], axes: Sequence[str], z: float) -> ExerciseFacts:
    """:class:`ExerciseFacts` of the map ``truths`` (``z``: its criterion's SEs) at ``factors``."""
    strict = diminishing_returns(truths, ratio=0.1, z=z)
    return ExerciseFacts(status_sentence(strict), fails_outside(strict) or 0.0, default_cell(truths, factors, axes))


def power_settings(base: SimulatorParams, picks: pd.DataFrame, factors: Sequence[str]) -> list[EffectSetting]:
    """One ``EffectSetting`` per row of ``picks``: its ``factors`` set on ``base``, its 1 v 5 truth
    (the target: rounded to 0.01 pp) and that truth's Monte Carlo SE from the map."""
    if picks.empty:
        raise MechauditError("no consistent grid setting to study: widen robust_axes", field="robust_axes")
    out = []
    for _, r in picks.iterrows():
        factors_set = {f: float(r[f]) for f in factors}
        out.append(EffectSetting(round(float(r.truth_1v5_pp), 2), factors_set, vary(base, **factors_set),
                                 float(r.truth_1v5_pp), float(r.se_1v5_pp)))
    return out


@dataclass(frozen=True)
class Studies:
    """The rule replications (``robustness.rule_grid``), the power settings and table
    (``power.power_table``) at the chosen settings, and where each table came from."""

    rule_reps: pd.DataFrame
    settings: list[EffectSetting]
    power: pd.DataFrame
    sources: dict[str, str]


def chapter_studies(s: CalibrationSetup, truths: Truths, p: RobustnessSettings, *, write: bool = False,
                    force: bool = False) -> Studies:
    """The rule study (key, paper-rate judge and TF-IDF over ``p.n_text_replications``, seed
    ``p.seed + 1``) and the power study (``p.power_designs`` and ``p.power_ladder``, seed ``p.seed + 3``)
    at each chosen setting, each read from ``data/computed/`` when computed with these settings
    (``write``, ``force``: as :func:`chapter_truths`)."""
    jobs = {"n_jobs": p.n_jobs, "parallel_backend": p.parallel_backend}
    axes = list(p.robust_axes)
    points = truths.picks[axes].reset_index(drop=True)
    rules = {**build_rules(["mechanism_key", "paper_rates"]),
             "tfidf": build_rules(["tfidf"], tfidf_threshold=p.tfidf_threshold)["tfidf"]}
    base = {"design": s.design.model_dump(), "simulator": s.base.model_dump()}
    sources = {}
    reps, sources["robustness_rules"] = committed.cached(
        "robustness_rules", committed.with_benchmark({
            **base, "points": points.to_dict("records"), "rules": list(rules), "tfidf_threshold": p.tfidf_threshold,
            "n_reps": p.n_text_replications, "seed": p.seed + 1}),
        lambda: rule_grid(s.bench, s.design, s.base, points, rules, n_reps=p.n_text_replications, seed=p.seed + 1,
                          **jobs),
        write=write, force=force)
    settings = power_settings(s.base, truths.picks, axes)
    designs = [tuple(d) for d in p.power_designs]
    study = {"n_reps": p.n_power_replications, "alpha": p.alpha, "ladder": list(p.power_ladder),
             "level": p.power_level, "pool_runs_per_depth": p.pool_runs_per_depth, "seed": p.seed + 3,
             "n_resamples": p.n_resamples, "n_pools": p.n_pools}
    power, sources["robustness_power"] = committed.cached(
        "robustness_power", committed.with_benchmark({
            "instances": s.instances, "settings": [{"target_pp": st.target_pp, "truth_pp": st.truth_pp,
                                                     "truth_se_pp": st.truth_se_pp, "params": st.params.model_dump()}
                                                    for st in settings], "designs": designs, **study}),
        lambda: power_table(s.bench, s.instances, settings, designs, **study, **jobs), write=write, force=force)
    return Studies(reps, settings, power, sources)


def settings_table(settings: Sequence) -> pd.DataFrame:
    """One row per power setting (index "grid 1 v 5 (pp)": the truth on the grid): the factors set,
    its 1 v 5 truth and that truth's Monte Carlo standard error (pp)."""
    rows = [{"grid 1 v 5 (pp)": s.target_pp, "setting": ", ".join(f"{k} = {v:.3g}" for k, v in s.factors.items()),
             "true 1 v 5 (pp)": round(s.truth_pp, 2), "s.e. (pp)": round(s.truth_se_pp, 2)} for s in settings]
    return pd.DataFrame(rows).set_index("grid 1 v 5 (pp)")


def design_powers(power: pd.DataFrame) -> pd.DataFrame:
    """The power of each named design, readable: index true effect (pp) and design ("4 x 5":
    instances x runs per depth); power, its Monte Carlo SE over the pools and the binomial SE."""
    d = power[power.role == "design"]
    table = pd.DataFrame({"true 1 v 5 (pp)": d.truth_pp.round(1).to_numpy(),
                          "design": [f"{int(k)} x {int(r)}" for k, r in zip(d.n_instances, d.runs_per_depth)],
                          "power": d.power.round(2).to_numpy(), "MC s.e. (pools)": d.power_se.round(2).to_numpy(),
                          "binomial s.e.": d.binomial_se.round(2).to_numpy()})
    return table.set_index(["true 1 v 5 (pp)", "design"])


def _power(doc: str) -> Any:
    return fact(unit="probability", digits=2, missing="not in this design", doc=doc)


@dataclass(frozen=True)
class TopPower:
    """Power of the 1 v 5 test at the largest true effect the consistent settings allow, per design
    instances x runs per depth (glued under ``ch02c_top``); ``None``: the design was not studied."""

    truth: float = fact(unit="pp", digits=1, doc="that largest true 1 v 5 effect")
    power_4x5: float | None = _power("4 instances x 5 runs (the paper's design)")
    power_4x10: float | None = _power("4 instances x 10 runs")
    power_se_4x10: float | None = _power("its Monte Carlo SE over the pools")
    power_8x5: float | None = _power("8 instances x 5 runs")
    power_se_8x5: float | None = _power("its Monte Carlo SE over the pools")


def top_power(power: pd.DataFrame, top) -> TopPower:
    """:class:`TopPower` of a ``workflow.power`` table at the ``EffectSetting`` ``top``."""
    d = power[power.role == "design"].set_index(["target_pp", "n_instances", "runs_per_depth"])

    def at(k: int, r: int, column: str) -> float | None:
        return float(d.loc[(top.target_pp, k, r), column]) if (top.target_pp, k, r) in d.index else None

    return TopPower(truth=top.truth_pp, power_4x5=at(4, 5, "power"), power_4x10=at(4, 10, "power"),
                    power_se_4x10=at(4, 10, "power_se"), power_8x5=at(8, 5, "power"),
                    power_se_8x5=at(8, 5, "power_se"))


@dataclass(frozen=True)
class PowerFacts:
    """The power study and the intro's row (glued under ``ch02c``; the largest effect's powers under
    ``ch02c_top``). The chapter is simulated under every backend."""

    n_power_reps: int = fact(unit="replications", doc="replications per design and setting")
    n_pools: int = fact(unit="pools", doc="run pools the replications draw from")
    top: TopPower
    runs_vs_instances: str = fact(doc="more runs or more instances (:func:`runs_vs_instances`)")
    power_range: str = fact(doc="power over the settings (:func:`power_range_text`)")
    headline_truth: float = fact(unit="pp", digits=1, doc="the largest true 1 v 5 effect the settings allow")
    headline_power: float | None = _power("its power in the paper's design (4 instances x 5 runs)")
    headline_status: str = fact(doc="where the headline's numbers come from")
    headline_provenance: str = fact(doc="the intro row's provenance")
    headline_verdict: str = fact(doc="the intro row's verdict")


def power_facts(power: pd.DataFrame, settings: Sequence, labels: Sequence[str], n_power_reps: int,
                n_pools: int) -> PowerFacts:
    """:class:`PowerFacts` of a ``workflow.power`` table over ``settings`` (named ``labels``)."""
    top = max(settings, key=lambda st: st.target_pp)
    at_top = top_power(power, top)
    provenance, verdict = headline_provenance("ch02c", llm=False)
    return PowerFacts(n_power_reps, n_pools, at_top, runs_vs_instances(power, top.target_pp),
                      power_range_text(power, settings, labels), at_top.truth, at_top.power_4x5, SIMULATED,
                      provenance, verdict)


@dataclass(frozen=True)
class NeededFacts:
    """The runs a study needs, beside the paper's 1 v 5 effect (glued under ``ch02c``)."""

    paper_1v5_pp: float = fact(unit="pp", digits=1, doc="the paper's 1 v 5 extra divergence")
    needed_text: str = fact(doc="runs per depth needed per setting (:func:`needed_text`)")
    ladder_max: int = fact(unit="runs per depth", doc="the largest design the ladder tries")
    paper_1v5_where: str = fact(doc="where the paper's effect lies among the settings (:func:`paper_inside`)")
    power_verdict: str = fact(doc="the paper's design's power in words (:func:`power_verdict`)")


def needed_facts(needed: pd.DataFrame, power: pd.DataFrame, settings: Sequence, ladder: Sequence[int],
                 level: float) -> NeededFacts:
    """:class:`NeededFacts` of ``workflow.power.runs_needed`` and the power table at ``level``."""
    paper = reported("critique_depth.extra_divergence_pp.k1_vs_k5")
    return NeededFacts(paper, needed_text(needed), max(ladder), paper_inside(paper, settings),
                       power_verdict(power, level))


def power_range_text(power: pd.DataFrame, settings: Sequence, labels: Sequence[str],
                     design: tuple[int, int] = (4, 5)) -> str:
    """The power of ``design`` over the studied ``settings`` (named by ``labels``), from the lowest to
    the highest: "0.06 at S1 (...; true 1 v 5 0.2 pp) to 0.31 at S2 (...; 1.5 pp)"."""
    d = power[(power.role == "design") & (power.n_instances == design[0]) & (power.runs_per_depth == design[1])]
    by_target = dict(zip(d.target_pp, d.power))
    found = sorted((by_target[st.target_pp], label, st.truth_pp) for st, label in zip(settings, labels)
                   if st.target_pp in by_target)
    if not found:
        return "not computed for this design"
    parts = [f"{p:.2f} at {label.replace(')', f'; true 1 v 5 {format_number(t, 1)} pp)')}" for p, label, t in found]
    return parts[0] if len(parts) == 1 else f"from {parts[0]} to {parts[-1]}"


def power_verdict(power: pd.DataFrame, level: float = 0.8, design: tuple[int, int] = (4, 5)) -> str:
    """What the power of ``design`` at the studied settings says about a non-significant 1 v 5 test:
    whether any studied effect reaches power ``level``."""
    d = power[(power.role == "design") & (power.n_instances == design[0]) & (power.runs_per_depth == design[1])]
    if d.empty:
        return "the design was not studied"
    top = d.loc[d.power.idxmax()]
    if top.power < level:
        return (f"no 1 v 5 effect the consistent settings allow reaches power {level:g} at that design (the "
                f"highest is {top.power:.2f}, at {top.truth_pp:.1f} pp), so a non-significant 1 v 5 test there "
                "rules out none of them")
    low = d.loc[d.power.idxmin()]
    return (f"the largest effect the consistent settings allow ({top.truth_pp:.1f} pp) reaches power {top.power:.2f}, "
            f"the smallest ({low.truth_pp:.1f} pp) {low.power:.2f}: a non-significant 1 v 5 test at that design "
            "argues against the first, not the second")


def paper_inside(value: float, settings: Sequence) -> str:
    """Where the paper's 1 v 5 estimate ``value`` (pp) lies against the re-estimated 1 v 5 truths of the
    studied settings: "between", "below" or "above" the range, with the range."""
    low, high = min(st.truth_pp for st in settings), max(st.truth_pp for st in settings)
    where = "between" if low <= value <= high else "below" if value < low else "above"
    return f"{where} the studied settings' {format_number(low, 1)} and {format_number(high, 1)} pp"


def _runs_needed(r) -> int | str:
    """A ``power.runs_needed`` row's runs per depth needed: an int, or "more than <largest tried>"."""
    return int(r.runs_needed) if np.isfinite(r.runs_needed) else f"more than {int(r.largest_tried)}"


def needed_text(needed: pd.DataFrame) -> str:
    """``power.runs_needed`` as text: "0.2 pp: more than 20; 1.7 pp: 10" (runs per depth per true effect)."""
    return "; ".join(f"{format_number(r.truth_pp, 1)} pp: {_runs_needed(r)}" for r in needed.itertuples())


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
    return pd.DataFrame({"true 1 v 5 (pp)": needed.truth_pp.round(1).to_numpy(),
                         "instances": needed.n_instances.astype(int).to_numpy(),
                         "runs per depth needed": [_runs_needed(r) for r in needed.itertuples()],
                         "power there": needed.power_there.round(2).to_numpy()}).set_index("true 1 v 5 (pp)")
