"""Chapter 02 (critique depth): Table 1 with the simulator's truth, the shape checks, the headline,
the "paper vs this run" rows, the calibration summary and the judge-model axis; :func:`plan` is the
chapter's cost plan (``mechaudit estimate``).

``table`` below is ``workflow.rule_tables``'s Table 1; ``main`` is one rule's rows indexed by
comparison label (``"0 v 1"``). Effects are in percentage points (pp).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import pandas as pd

from mechaudit.agreement import estimate_range
from mechaudit.backends import Backend
from mechaudit.book.chapter import headline_provenance, judge_models
from mechaudit.errors import MechauditError
from mechaudit.llm.pricing import Planned
from mechaudit.model import Benchmark
from mechaudit.paper import entries, reported, shown
from mechaudit.report import labels
from mechaudit.report.comparison import format_p, power_of_ten
from mechaudit.report.facts import fact
from mechaudit.report.tables import format_number
from mechaudit.rules.paper_rates import paper_rates
from mechaudit.schema import load_benchmark
from mechaudit.workflow import (
    Design,
    SimulatorParams,
    committed,
    instance_matrices,
    null_params,
    population_truth,
    rule_tables,
    simulate,
)
from mechaudit.workflow.calibrate import (
    CONSTRAINED_NAME,
    SCAN_NAME,
    SHARE_COLUMNS,
    Calibration,
    CalibrationSpec,
    calibrate,
    calibration_setup,
    closed_form_base,
    constrained_by_fit,
    extra_column,
    label_of,
    matches,
    mixture_reachable,
    paper_targets,
    scan,
    scan_settings,
    se_column,
)
from mechaudit.workflow.depth import MEASURES, judge_model_table, measure_of
from mechaudit.workflow.plan import plan_delivered_judges, plan_workflow
from mechaudit.workflow.rulesets import build_rules, rules_for

#: the comparisons the paper reports, as (a, b) depth pairs
PAPER_COMPARISONS = ((0, 1), (0, 5), (1, 5))


#: glue key -> the table cells its prose value restates (format: tests/test_table_prose.py)
CITED_CELLS = {
    f"ch02_extra_{k}_pp": (("tbl-ch02-paper", (f"Extra divergence, {k[0]} v {k[2]} rounds (pp)",), "This run"),)
    for k in ("0v1", "0v5", "1v5")
}


def paper_key(a: int, b: int) -> str:
    """The ``data/paper_reported.yaml`` key of the paper's extra divergence for depths a v b."""
    return f"critique_depth.extra_divergence_pp.k{a}_vs_k{b}"


def report_llm_judge(rule_objects: Mapping[str, Any]) -> None:
    """With the LLM judge among the rules: print how many matched pairs it left undecided (no
    majority of valid verdicts; excluded from their run pair's divergence). Otherwise nothing."""
    if "llm" in rule_objects:
        print(f"LLM judge: {rule_objects['llm'].undecided_} matched pairs undecided (no majority of valid "
              "verdicts), excluded from their run pair's divergence")


def simulator_truth(bench: Benchmark, design: Design, simulator: SimulatorParams, llm: bool,
                    runs_per_depth: int, seed: int = 0) -> pd.DataFrame | None:
    """``population_truth`` under both truth measures; ``None`` for LLM runs (no ground truth)."""
    if llm:
        return None
    return population_truth(bench, design, simulator, runs_per_depth=runs_per_depth, seed=seed, measures=MEASURES)


def truth_map(truth: pd.DataFrame | None, measure: str, panel: str | None = None) -> dict[str, float] | None:
    """label -> truth (pp) of one measure (all panels, or ``panel``); None without a truth."""
    if truth is None:
        return None
    sub = truth[truth.measure == measure]
    if panel is not None:
        sub = sub[sub.panel == panel]
    return dict(zip(sub.label, sub.truth_pp))


def add_truth(table: pd.DataFrame, truth: pd.DataFrame | None) -> pd.DataFrame:
    """``table`` with columns truth_pp and truth_se_pp: per row the truth of ``measure_of(rule)`` for
    its comparison (unchanged when ``truth`` is None)."""
    if truth is None:
        return table
    by = truth.set_index(["measure", "label"])
    keys = list(zip(table.rule.map(measure_of), table.comparison))
    return table.assign(truth_pp=[by.truth_pp.get(k, float("nan")) for k in keys],
                        truth_se_pp=[by.truth_se_pp.get(k, float("nan")) for k in keys])


def resolve_main_rule(main_rule: str, backend: Backend, rules: Sequence[str]) -> str:
    """The headline's rule: ``main_rule`` if it runs on ``backend`` and is among ``rules``, else the
    LLM judge on LLM runs, else the first of ``rules``; prints a note when it changes the choice."""
    run = rules_for(rules, backend.is_llm)
    if main_rule in run:
        return main_rule
    chosen = "llm" if "llm" in run else run[0]
    print(f"main_rule {main_rule!r} is not run here (backend {backend.value!r}, rules {list(run)}); "
          f"the headline uses {chosen!r}")
    return chosen


def truth_table(truth: pd.DataFrame) -> pd.DataFrame:
    """``population_truth`` for reading: index quantity ("extra 0 v 1 (pp)", "same-depth K=1 (%)",
    "ceiling 1 v 5 (pp)"), one column per measure, values rounded to 0.1."""
    rows = {}
    for m, g in truth.groupby("measure", sort=False):
        col = {}
        for r in g.itertuples():
            if r.panel == "extra":
                col[f"extra {r.label} (pp)"] = r.truth_pp
            else:
                col[f"same-depth {r.label} (%)"] = r.truth_pp
        for r in g[g.panel == "extra"].itertuples():
            col[f"ceiling {r.label} (pp)"] = r.max_extra_pp
        rows[m] = col
    return pd.DataFrame(rows).rename_axis("quantity").round(1)


def paper_values(comparisons: Sequence[tuple[int, int]]) -> dict[str, float]:
    """The paper's extra divergence (pp) for each of the design's comparisons the paper reports."""
    known = entries()
    return {f"{a} v {b}": reported(paper_key(a, b)) for a, b in comparisons if paper_key(a, b) in known}


def main_table(table: pd.DataFrame, main_rule: str) -> pd.DataFrame:
    """The rows of ``main_rule`` indexed by comparison label; ``MechauditError`` if the rule was not run."""
    if main_rule not in set(table.rule):
        raise MechauditError(f"{main_rule!r} is not among the rules run ({', '.join(dict.fromkeys(table.rule))})",
                             field="main_rule")
    return table[table.rule == main_rule].set_index("comparison")


def interval_text(low: float, high: float, digits: int = 1) -> str:
    """An interval as text, e.g. "31.2 to 37.9" (NaN bounds: "not computed")."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return "not computed"
    return f"{low:.{digits}f} to {high:.{digits}f}"


def table1(table: pd.DataFrame, level: float = 0.95) -> pd.DataFrame:
    """Table 1 for reading: index (rule, comparison); extra divergence with its interval at ``level``,
    exact p, ceiling, share of the ceiling and, for simulator runs, the truth and its SE (unrounded)."""
    interval = f"{100 * level:g} % interval (pp)"
    names = {"extra_pp": "extra (pp)", "interval": interval, "p_value": "exact p", "max_extra_pp": "ceiling (pp)",
             "normalised": "share of ceiling", "truth_pp": "truth (pp)", "truth_se_pp": "truth SE (pp)"}
    table = table.assign(interval=[interval_text(lo, hi) for lo, hi in zip(table.ci_low_pp, table.ci_high_pp)])
    return table.set_index(["rule", "comparison"])[[c for c in names if c in table.columns]].rename(columns=names)


def p_floor_text(n_partitions: int, n_instances: int) -> str:
    """The exact test's smallest p (one split combination in ``n_partitions ** n_instances``) as
    text, e.g. "1/126⁴ ≈ 4.0 × 10⁻⁹"."""
    floor = 1 / n_partitions**n_instances
    exponent = math.floor(math.log10(floor))
    power = str(n_instances).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"1/{n_partitions}{power} ≈ {floor / 10.0**exponent:.1f} × {power_of_ten(exponent)}"


def headline(main: pd.DataFrame, level: float = 0.95) -> dict[str, Any]:
    """The intro's values: extra divergence 0 v 1 and 1 v 5 (pp), each also as text with its interval
    at ``level`` ("0 v 1 text": "34.6 (95 % interval 29.9 to 39.0)"), and the 0 v 1 p as text."""
    out: dict[str, Any] = {}
    for label in ("0 v 1", "1 v 5"):
        row = main.loc[label] if label in main.index else None
        out[label] = _NOT_IN if row is None else row.extra_pp
        out[f"{label} text"] = _NOT_IN if row is None else (
            f"{row.extra_pp:.1f} ({100 * level:g} % interval {interval_text(row.ci_low_pp, row.ci_high_pp)})")
    row = main.loc["0 v 1"] if "0 v 1" in main.index else None
    out["p 0 v 1"] = _NOT_IN if row is None else format_p(float(row.p_value),
                                                         smallest=1 / int(row.n_partitions) ** int(row.n_instances))
    return out


def settings_table(bench: Benchmark, design: Design, simulator: SimulatorParams, settings: Mapping[str, Mapping],
                   runs_per_depth: int, seed: int = 0) -> pd.DataFrame:
    """The simulator's population values (pp) at its committed setting and at each of ``settings``
    (label -> parameter updates): index (measure, label), one column per setting, "committed" first."""
    columns = {}
    for name, update in {"committed": {}, **settings}.items():
        truth = population_truth(bench, design, simulator.model_copy(update=dict(update)),
                                 runs_per_depth=runs_per_depth, seed=seed, measures=MEASURES)
        columns[name] = truth.set_index(["measure", "label"]).truth_pp
    return pd.DataFrame(columns)


def shape_verdict(settings: pd.DataFrame, contrast: str, measure: str = "paper_rates") -> str:
    """Whether the 1 v 5 effect stops being small at the ``contrast`` setting (a column of
    ``settings_table``): more than 2 pp and three times the committed setting's."""
    small = settings["committed"].get((measure, "1 v 5"), float("nan"))
    if settings[contrast].get((measure, "1 v 5"), float("nan")) > max(2.0, 3 * small):
        return ("the change spreads over several rounds and 1 v 5 is no longer small, so in the simulator "
                "diminishing returns are a property of a critic that finds most weak links at once, not of "
                "the weak-link model as such")
    return "the shape changes little, so in the simulator diminishing returns do not hinge on this value of p_find"


def rule_pair_text(table: pd.DataFrame, a: str, b: str) -> str:
    """Rule ``a``'s extra divergence beside rule ``b``'s per comparison, e.g. "0 v 1: 31.1 against
    35.3 pp, 0 v 5: 38.9 against 35.2 pp" ("not run" when either rule is missing)."""
    rows = table.set_index(["rule", "comparison"]).extra_pp
    comps = [c for c in dict.fromkeys(table.comparison) if (a, c) in rows and (b, c) in rows]
    if not comps:
        return "not run"
    return ", ".join(f"{c}: {rows[(a, c)]:.1f} against {rows[(b, c)]:.1f} pp" for c in comps)


def test_note(main: pd.DataFrame, truth: Mapping[str, float] | None, label: str, alpha: float = 0.05) -> str:
    """A clause reading the exact test of ``label`` against the simulator's truth: whether it rejects at
    ``alpha``, and whether that is a false alarm (truth below 1 pp)."""
    if label not in main.index:
        return "the design lacks this comparison"
    p = float(main.loc[label, "p_value"])
    t = None if truth is None else truth.get(label)
    if p > alpha:
        return f"the exact test does not reject at {alpha:g}"
    if t is not None and abs(t) < 1.0:
        return (f"the exact test rejects at {alpha:g} although the simulator's truth is only {t:.1f} pp, a false "
                "alarm of the kind the test's size allows (the next chapter counts how often)")
    return f"the exact test rejects at {alpha:g}"


def fitted_comparisons(spec) -> tuple[list[str], list[str]]:
    """The paper's extra-divergence comparisons the calibration ``spec`` fitted and those it did not
    (labels such as "0 v 1"), from its ``targets``."""
    fitted = [label_of(k) for k in spec.targets]
    return fitted, [f"{a} v {b}" for a, b in PAPER_COMPARISONS if f"{a} v {b}" not in fitted]


def inside_sentence(main: pd.DataFrame, paper: Mapping[str, float], level: float = 0.95) -> str:
    """Which of the paper's values lie inside this run's intervals, e.g. "the paper's 0 v 1 and 1 v 5
    values lie inside the 95 % intervals"."""
    labels = [lab for lab in paper if lab in main.index]
    inside = [lab for lab in labels if main.loc[lab, "ci_low_pp"] <= paper[lab] <= main.loc[lab, "ci_high_pp"]]
    outside = [lab for lab in labels if lab not in inside]
    level_text = f"{100 * level:g} % interval"
    if not outside:
        return f"each of the paper's values lies inside this run's {level_text}"
    if not inside:
        return f"none of the paper's values lies inside this run's {level_text}"
    return (f"the paper's {' and '.join(inside)} values lie inside this run's {level_text}s, its "
            f"{' and '.join(outside)} value outside")


def norm_verdict(main: pd.DataFrame) -> str:
    """Whether 1 v 5 reaches less than half the share of its ceiling that 0 v 1 reaches (no contrast to
    judge when 0 v 1 reaches less than a tenth of its own)."""
    if not {"0 v 1", "1 v 5"} <= set(main.index):
        return "the design lacks one of the two comparisons"
    first, later = main.loc["0 v 1", "normalised"], main.loc["1 v 5", "normalised"]
    if not first >= 0.1:
        return "not even 0 v 1 reaches a tenth of its ceiling, so there is no contrast to normalise"
    if later < first / 2:
        return "the contrast survives the normalisation"
    return "the normalisation removes most of the contrast"


def ceiling_reading(effect_pp: float, ceiling_pp: float, share: float = 0.25) -> str:
    """Whether an extra divergence of ``effect_pp`` is small because of its ceiling ``ceiling_pp``
    (both pp): far below it (at most ``share`` of it) or close to it."""
    if not ceiling_pp > 0:
        return "the ceiling leaves no room at all, so the ceiling alone keeps it small"
    if effect_pp <= share * ceiling_pp:
        return "far below its ceiling, so the ceiling is not what keeps it small"
    return "a large share of its ceiling, so the ceiling limits it"


def pattern_sentence(table: pd.DataFrame, alpha: float = 0.05) -> str:
    """Which rules show the paper's pattern (0 v 1 significant at ``alpha`` and at least four times
    1 v 5 and 1 pp), as a sentence opening ("Under the rules a and b the pattern of the paper appears")."""
    pattern = "the pattern of the paper" if shown() else "the depth pattern"
    found = []
    for rule, sub in table.groupby("rule", sort=False):
        by = sub.set_index("comparison")
        if {"0 v 1", "1 v 5"} <= set(by.index) and by.p_value["0 v 1"] <= alpha and (
                by.extra_pp["0 v 1"] >= 4 * max(by.extra_pp["1 v 5"], 1.0)):
            found.append(str(rule))
    if not found:
        return f"Under none of the rules does {pattern} appear"
    if len(found) == table.rule.nunique():
        return f"Under every rule ({', '.join(found)}) {pattern} appears"
    return f"Under the rules {', '.join(found)} (not the others) {pattern} appears"


def design_rows(design_counts: Mapping[str, int], source: str) -> list[tuple]:
    """"Paper vs this run" rows of the design's size (runs, run pairs, matched pairs)."""
    return [("design.runs", design_counts["runs"]), ("design.run_pairs", design_counts["run_pairs"]),
            ("design.matched_pairs", design_counts["matched_pairs"], source)]


def paper_rows(main: pd.DataFrame, main_rule: str, source: str) -> list[tuple]:
    """"Paper vs this run" rows of Table 1 under ``main_rule``: the three extra divergences (pp), the
    exact p of 0 v 1 and 0 v 5 (``None``: not in the design) and the splits per instance."""
    rows: list[tuple] = [(paper_key(a, b), round(main.loc[f"{a} v {b}", "extra_pp"], 1)
                          if f"{a} v {b}" in main.index else None, f"{main_rule}, {source}")
                         for a, b in PAPER_COMPARISONS]
    rows += [(f"critique_depth.p_value_bound.k{a}_vs_k{b}", float(main.loc[f"{a} v {b}", "p_value"])
              if f"{a} v {b}" in main.index else None, "exact two-sided p") for a, b in ((0, 1), (0, 5))]
    rows.append(("design.partitions_per_instance", int(main.n_partitions.iloc[0])))
    return rows


_SIM_ONLY = "(simulator runs only)"


@dataclass(frozen=True)
class ExerciseFacts:
    """What the exercise solutions quote (glued under ``ch02``); ``None``: not computed (LLM runs)."""

    ex1_mechanism_key_pp: float | None = fact(unit="pp", digits=1, missing=_SIM_ONLY, doc="0 v 1, null simulator")
    ex1_mechanism_key_p: str | None = fact(missing=_SIM_ONLY, doc="its exact p")
    ex1_paper_rates_pp: float | None = fact(unit="pp", digits=1, missing=_SIM_ONLY, doc="the same, paper rates")
    ex1_paper_rates_p: str | None = fact(missing=_SIM_ONLY, doc="its exact p")
    ex1_tfidf_pp: float | None = fact(unit="pp", digits=1, missing=_SIM_ONLY, doc="the same, TF-IDF")
    ex1_tfidf_p: str | None = fact(missing=_SIM_ONLY, doc="its exact p")
    ex3_strict_pp: float | None = fact(unit="pp", digits=1, missing=_SIM_ONLY, doc="0 v 1, TF-IDF at 0.5")
    ex3_strict_same_pct: float | None = fact(unit="%", digits=0, missing=_SIM_ONLY, doc="its same-depth divergence")
    ex3_strict_max_pp: float | None = fact(unit="pp", digits=1, missing=_SIM_ONLY, doc="its ceiling")
    ex3_default_pp: float | None = fact(unit="pp", digits=1, missing=_SIM_ONLY, doc="0 v 1, TF-IDF, default")
    ex3_default_same_pct: float | None = fact(unit="%", digits=0, missing=_SIM_ONLY, doc="its same-depth divergence")


def exercise_facts(bench: Benchmark, design: Design, simulator: SimulatorParams, runs: Sequence,
                   table: pd.DataFrame, simulated: bool, tfidf_threshold: float, seed: int = 0) -> ExerciseFacts:
    """What the exercise solutions quote (nothing for LLM runs, ``simulated`` false): ``ex1_*``, 0 v 1
    under the null simulator for the key, the paper-rate judge and TF-IDF; ``ex3_*``, TF-IDF at 0.5
    beside the default threshold (extra divergence, and same-depth divergence = 100 - ceiling)."""
    if not simulated:
        return ExerciseFacts(*[None] * 11)
    out: dict[str, Any] = {}
    rules = build_rules(["mechanism_key", "paper_rates", "tfidf"], tfidf_threshold=tfidf_threshold)
    _, null_table = rule_tables(simulate(bench, design, null_params(simulator), seed=seed, log=False), rules,
                                [(0, 1)], seed=seed)
    for r in null_table.itertuples():
        out[f"ex1_{r.rule}_pp"], out[f"ex1_{r.rule}_p"] = r.extra_pp, f"{r.p_value:.2g}"
    _, strict_table = rule_tables(runs, build_rules(["tfidf"], tfidf_threshold=0.5), [(0, 1)], seed=seed)
    rows = {"strict": strict_table.iloc[0]}
    default = table[(table.rule == "tfidf") & (table.comparison == "0 v 1")]
    if len(default):
        rows["default"] = default.iloc[0]
    for which, row in rows.items():
        out[f"ex3_{which}_pp"], out[f"ex3_{which}_same_pct"] = row.extra_pp, 100 - row.max_extra_pp
    out["ex3_strict_max_pp"] = rows["strict"].max_extra_pp
    return ExerciseFacts(**{f.name: out.get(f.name) for f in fields(ExerciseFacts)})


@dataclass(frozen=True)
class CalibrationRun:
    """The calibration's inputs, the result of ``calibrate`` and where its scan came from ("committed":
    ``data/computed/calibration_scan.csv``; "computed now": settings differ from it)."""

    bench: Benchmark
    design: Design
    committed: SimulatorParams
    spec: CalibrationSpec
    cal: Calibration
    source: str


def run_calibration(calibration_file: str = "calibration.yaml", n_jobs: int = 1, *, write: bool = False,
                    force: bool = False) -> CalibrationRun:
    """The calibration on the shipped benchmark with the paper's design, the committed simulator
    parameters and ``params/<calibration_file>``: the committed scan when its settings match, else the
    whole scan computed now (slow: prints a note unless ``write``, which commits it; ``force``: compute
    even when current)."""
    s = calibration_setup(calibration_file=calibration_file)
    params, _ = closed_form_base(s.base, s.spec, paper_targets(list(s.spec.targets)))

    def compute() -> pd.DataFrame:
        if not write:
            print("The committed calibration scan was computed with other settings: computing the scan now "
                  "(`mechaudit calibrate` writes it to data/computed/).")
        return scan(s.bench, s.design, params, s.spec, n_jobs=n_jobs)

    table, source = committed.cached(SCAN_NAME, scan_settings(s.design, params, s.spec), compute, write=write,
                                     force=force)
    cal = calibrate(s.bench, s.design, s.base, s.spec, table=table)
    return CalibrationRun(s.bench, s.design, s.base, s.spec, cal, source)


def write_calibration(n_jobs: int = -1, force: bool = False) -> str:
    """``mechaudit calibrate``'s scan part: the scan at the committed settings, written to
    ``data/computed/`` with the record of what the fit constrains when stale (``force``: always);
    returns a summary of the best point, the near points and the calibrated values."""
    run = run_calibration(n_jobs=n_jobs, write=True, force=force)
    cal, spec = run.cal, run.spec
    found = constrained_by_fit(cal.scan, spec)
    changed = committed.write_record(CONSTRAINED_NAME, found)
    differ = [k for k, ok in matches(run.committed, cal.values()).items() if not ok]
    lines = [committed.summary({SCAN_NAME: cal.scan}, {SCAN_NAME: run.source}, unit="points"),
             f"{CONSTRAINED_NAME}.json ({'written' if changed else 'current, kept'}): "
             f"{', '.join(found) or 'nothing'}",
             "best point: " + fit_point_text(cal.scan, spec, best_only=True),
             "within half a tolerance of every target: " + (fit_point_text(cal.scan, spec) or "no point"),
             "calibrated values: " + ", ".join(f"{k} = {v}" for k, v in cal.values().items()),
             "params/simulator.yaml " + ("holds every calibrated value" if not differ else
                                         f"differs in {', '.join(differ)}: copy the values above into it")]
    return "\n".join(lines)


def fit_point_text(scan: pd.DataFrame, spec, best_only: bool = False) -> str:
    """The scan's points within half a tolerance of every target (or the best point) as
    "(p_weak_supported 0.9, p_find 1): 34.4 ± 0.2 / 38.9 ± 0.2 pp" (extra divergence ± Monte Carlo SE)."""
    rows = scan[scan.best] if best_only else scan[scan.within_half_tolerance]
    labels = [label_of(k) for k in spec.targets]
    return "; ".join("(" + ", ".join(f"{k} {r[k]:g}" for k in spec.grid) + "): "
                     + " / ".join(f"{r[extra_column(lab)]:.1f} ± {r[se_column(lab)]:.1f}" for lab in labels) + " pp"
                     for _, r in rows.iterrows())


def fit_set_sentence(scan: pd.DataFrame, spec) -> str:
    """Whether the targets pin the fitted parameters down: how many grid points lie within half a
    tolerance of every target, and over what range of each parameter."""
    names = list(spec.grid)
    close = scan[scan.within_half_tolerance]
    if close.empty:
        return ("no grid point's expected values lie within half a tolerance of every target: the fit is the "
                "least bad point")
    if len(close) == 1:
        return ("only the best point's expected values lie within half a tolerance of every target, so on this grid "
                "the targets pin the fitted parameters down to it")
    ranges = ", ".join(f"{k} {close[k].min():g} to {close[k].max():g}" for k in names)
    return (f"{len(close)} grid points have expected values within half a tolerance of every target ({ranges}); "
            "they fit the paper's two estimates about equally well, so the targets pin the fitted parameters down "
            "only to that set, not to the best point")


@dataclass(frozen=True)
class CalibrationFacts:
    """What the calibration section's prose quotes (glued under ``ch02_cal``)."""

    p_exact: float = fact(digits=3, doc="p_extra_hypothesis solved exactly")
    p_extra: float = fact(doc="the calibrated p_extra_hypothesis")
    grid_name: str = fact(doc="the grid, per parameter: range and steps")
    n_points: int = fact(unit="points", doc="grid points scanned")
    runs: int = fact(unit="runs", doc="runs per depth of each scan point")
    seeds: int = fact(unit="seeds", doc="seeds per scan point")
    tol: str = fact(doc="each target's tolerance")
    half_tol: str = fact(doc="half of each tolerance")
    max_se: float = fact(unit="pp", digits=2, doc="largest Monte Carlo SE of the scan")
    se_limit: float = fact(unit="pp", digits=2, doc="the largest SE the spec allows")
    best: str = fact(doc="the best point's parameters")
    best_pp: str = fact(doc="its expected extra divergences")
    fit_set: str = fact(doc="what the points near every target say (:func:`fit_set_sentence`)")
    n_consistent: int = fact(unit="points", doc="points consistent with the targets")
    level_pct: str = fact(unit="%", doc="the level of that consistency")
    source: str = fact(doc="where the scan came from")
    mix_target: str = fact(doc="the paper's engagement shares")
    mix_achieved: str = fact(doc="the shares at the fitted point")
    mix_sentence: str = fact(doc="whether reply_sound can reach the paper's shares")
    reply_sound: str = fact(doc="the calibrated reply_sound")
    demands: float = fact(unit="demands", digits=0, doc="critic demands per design")
    n_runs: int = fact(unit="runs", doc="runs of the paper's design")
    verdict: str = fact(doc="whether params/simulator.yaml holds every calibrated value")
    fit_points: str = fact(doc="the points within half a tolerance of every target (:func:`fit_point_text`)")
    recheck: str = fact(doc="this chapter's truth beside the scan's best point (:func:`recheck_sentence`)")
    targets: str = fact(doc="the paper's values the fit targets")


def calibration_facts(run: CalibrationRun, fit: pd.DataFrame, truth: pd.DataFrame | None) -> CalibrationFacts:
    """:class:`CalibrationFacts` of a calibration; ``fit``: the ``fit_table`` of ``run.cal``; ``truth``:
    the chapter's own simulator truth (None for LLM runs)."""
    cal, spec, design = run.cal, run.spec, run.design
    names = list(spec.grid)
    best = cal.scan[cal.scan.best].iloc[0]
    mix = fit.set_index("parameter").loc["reply_sound"]
    shares = cal.measured.shares(cal.params.reply_sound.as_array())
    gap = max(abs(x - cal.targets[c]) for x, c in zip(shares, SHARE_COLUMNS))
    differ = [k for k, ok in matches(run.committed, cal.values()).items() if not ok]
    labels = [label_of(k) for k in spec.targets]
    weak_pct = 100 * cal.measured.weak_share()
    reachable = mixture_reachable(cal.measured, np.array([cal.targets[c] for c in SHARE_COLUMNS]))
    mix_sentence = (f"a match up to the rounding of reply_sound (largest gap {gap:.1f} pp)" if reachable else
                    f"at the fitted point {weak_pct:.0f} % of the demands hit a weak link and are conceded at the "
                    f"chosen rate, so no reply to sound links reaches the paper's shares: the closest mixture "
                    f"misses a share by up to {gap:.1f} pp, a misfit")
    se_cols = [c for c in cal.scan.columns if c.startswith("se_") and c.endswith("_pp")]
    return CalibrationFacts(
        p_exact=cal.p_extra_exact, p_extra=cal.params.p_extra_hypothesis,
        grid_name="; ".join(f"{k} from {min(spec.grid[k]):g} to {max(spec.grid[k]):g} in "
                            f"{len(spec.grid[k])} steps" for k in names),
        n_points=len(cal.scan), runs=spec.runs_per_depth, seeds=spec.n_seeds,
        tol=", ".join(f"{tol:g} pp for {label_of(k)}" for k, tol in spec.targets.items()),
        half_tol=", ".join(f"{tol / 2:g} pp" for tol in spec.targets.values()),
        max_se=float(cal.scan[se_cols].to_numpy().max()), se_limit=spec.max_se_share * min(spec.targets.values()),
        best=", ".join(f"{k} = {best[k]:g}" for k in names),
        best_pp=", ".join(f"{best[extra_column(lab)]:.1f} pp ({lab})" for lab in labels),
        fit_set=fit_set_sentence(cal.scan, spec), n_consistent=int(cal.scan.consistent.sum()),
        level_pct=f"{100 * spec.consistent_level:g}",
        source=("read from the committed file data/computed/calibration_scan.csv, which `mechaudit calibrate` "
                "writes and the test suite re-checks" if run.source == "committed"
                else "computed in this run (its settings differ from the committed file's)"),
        mix_target=mix["target value"], mix_achieved=mix["achieved"], mix_sentence=mix_sentence,
        reply_sound="conceded / answered / partial / dropped = " + mix["calibrated"],
        demands=cal.measured.demands_per_runs(design.runs_per_depth), n_runs=design.n_runs,
        verdict=("the committed file holds every calibrated value" if not differ else
                 f"the committed values of {' and '.join(differ)} differ from the calibration's"),
        fit_points=fit_point_text(cal.scan, spec), recheck=recheck_sentence(cal.scan, truth, spec),
        targets=", ".join(f"{reported(k):g} pp for {lab}" for k, lab in zip(spec.targets, fitted_comparisons(spec)[0])))


def recheck_sentence(scan: pd.DataFrame, truth: pd.DataFrame | None, spec, z: float = 3.0) -> str:
    """The chapter's own truth beside the committed scan's best point, per target comparison, and
    whether every difference lies within ``z`` combined standard errors."""
    if truth is None:
        return "(no simulator truth for LLM runs)"
    best = scan[scan.best].iloc[0]
    own = truth[(truth.measure == spec.measure) & (truth.panel == "extra")].set_index("label")
    parts, agree = [], True
    for lab in (label_of(k) for k in spec.targets):
        diff = own.truth_pp[lab] - best[extra_column(lab)]
        se = float(np.hypot(own.truth_se_pp[lab], best[se_column(lab)]))
        agree &= abs(diff) <= z * se
        parts.append(f"{lab}: {own.truth_pp[lab]:.1f} ± {own.truth_se_pp[lab]:.1f} against "
                     f"{best[extra_column(lab)]:.1f} ± {best[se_column(lab)]:.1f} pp")
    verdict = (f"every difference is within {z:g} combined standard errors" if agree else
               f"a difference exceeds {z:g} combined standard errors: the committed scan may be stale")
    return "; ".join(parts) + f"; {verdict}"


def scan_view(scan: pd.DataFrame, grid: Sequence[str]) -> pd.DataFrame:
    """The calibration scan for reading: index the grid parameters; per comparison the extra divergence
    ± its Monte Carlo SE (pp), the objective, and the within-half-tolerance, consistent and best flags."""
    extras = [c for c in scan.columns if c.startswith("extra_") and c.endswith("_pp")]
    view = pd.DataFrame(index=pd.MultiIndex.from_frame(scan[list(grid)]) if len(grid) > 1 else
                        pd.Index(scan[grid[0]], name=grid[0]))
    for c in extras:
        label = c.removeprefix("extra_").removesuffix("_pp").replace("v", " v ")
        se = scan["se_" + c.removeprefix("extra_")]
        view[f"{label} (pp)"] = [f"{format_number(v, 1)} ± {e:.1f}" for v, e in zip(scan[c], se)]
    view["objective"] = scan.objective.round(2).to_numpy()
    for column, name in (("within_half_tolerance", "within half a tolerance"), ("consistent", "consistent"),
                         ("best", "best")):
        view[name] = scan[column].to_numpy()
    return view


# --------------------------------------------------------------------------- judge-model axis (the paper's Figure 5)

#: the judge models of the paper's Figure 5 (Opus 4.6, Sonnet 4.6, GPT-5.5); ``gpt-5.5`` routes to
#: OpenAI and needs the optional extra ``mechaudit[openai]``
PAPER_JUDGE_MODELS = ("claude-opus-4-6", "claude-sonnet-4-6", "gpt-5.5")
#: the estimate's stage name of the axis's extra requests (:func:`plan`)
AXIS_STAGE = "judge-model axis"


def judge_range_key(label: str, end: str) -> str:
    """The ``data/paper_reported.yaml`` key of the paper's lowest or highest judge (``end`` "low" or
    "high") for the comparison ``label`` ("0 v 1")."""
    a, b = label.split(" v ")
    return f"critique_depth.judge_range_pp.k{a}_vs_k{b}_{end}"


def judge_model_axis(runs, design: Design, models: Sequence[str], *, client, instances) -> pd.DataFrame | None:
    """Extra divergence (pp) of every comparison per judge model (``workflow.depth.judge_model_table``);
    None offline (``client`` None)."""
    return None if client is None else judge_model_table(runs, design.comparisons(), models, client,
                                                         instances=instances)


def judge_model_ranges(per_model: pd.DataFrame) -> pd.DataFrame:
    """Per comparison the range of extra divergence over the judge models (pp, ``estimate_range``)
    and, when the chapter shows the paper's numbers, the paper's range over its judges."""
    ranges = estimate_range(per_model)
    known = entries() if shown() else {}
    for end in ("low", "high") if shown() else ():
        ranges[f"paper {end}"] = [reported(judge_range_key(c, end)) if judge_range_key(c, end) in known
                                  else float("nan") for c in ranges.index]
    return ranges


def judge_range_rows(ranges: pd.DataFrame | None) -> list[tuple]:
    """"Paper vs this run" rows of the judge-model ranges (0 v 1, 0 v 5, 1 v 5; lowest and highest
    model): the range's ends, or None ("not run") offline or for a comparison the design lacks."""
    rows = []
    for a, b in PAPER_COMPARISONS:
        label = f"{a} v {b}"
        for end in ("low", "high"):
            ours = None if ranges is None or label not in ranges.index else round(float(ranges.loc[label, end]), 1)
            rows.append((judge_range_key(label, end), ours))
    return rows


def paper_judge_ranges(comparisons: Sequence[str]) -> dict[str, tuple[float, float]]:
    """The paper's (lowest, highest) judge value per comparison label it reports, for the figure."""
    known = entries()
    return {c: (reported(judge_range_key(c, "low")), reported(judge_range_key(c, "high")))
            for c in comparisons if judge_range_key(c, "low") in known}


def judge_axis_plan_models(judge_model: str, judge_models: Sequence[str]) -> list[str]:
    """The further judge models an offline estimate plans for: ``judge_models`` if given, else the
    paper's other two judges (``PAPER_JUDGE_MODELS``), never ``judge_model`` itself."""
    wanted = list(judge_models) or list(PAPER_JUDGE_MODELS)
    return [m for m in dict.fromkeys(wanted) if m != judge_model]


def judge_axis_note(plan: pd.DataFrame, models: Sequence[str]) -> str:
    """One line for the offline section: how many judge requests ``models`` would add (the estimate's
    judge-model axis rows, early-stop upper bounds included) and their plain USD."""
    extra = plan[plan.stage.str.contains(f"({AXIS_STAGE}", regex=False)]
    unpriced = list(dict.fromkeys(extra.model[extra.usd_plain.isna()]))
    priced = extra.usd_plain.sum()
    cost = f"about {priced:.2f} USD at plain prices" + (
        f" plus the requests to {', '.join(unpriced)}, which params/prices.yaml does not price" if unpriced else "")
    return (f"Offline: no judge model runs, so no judge-model numbers are shown. With backend 'anthropic' and "
            f"judge_models = {list(models)}, the axis adds at most {int(extra.requests.sum()):,} judge requests "
            f"({int(extra.to_send.sum()):,} not in the response cache; {cost}).")


# --------------------------------------------------------------------------- cost plan

def plan(p: Mapping[str, Any]) -> list[Planned]:
    """The chapter's requests: the workflow, then the LLM judge on every matched pair of delivered
    hypotheses, once per judge model."""
    bench = load_benchmark(p.get("data_dir"))
    work, runs, exact = plan_workflow(p, bench)
    return work + plan_delivered_judges(p, bench, runs, exact, lambda rs, rec: instance_matrices(rs, rec.same),
                                        judge_models(p))


# --------------------------------------------------------------------------- facts the prose quotes

_NOT_IN = "not in this design"
_NO_TRUTH = "(no simulator truth for LLM runs)"


def _tag(label: str) -> str:
    """A comparison or depth label as a key part: "0 v 1" -> "0v1", "K=1" -> "K1"."""
    return label.replace(" v ", "v").replace("=", "")


@dataclass(frozen=True)
class DesignFacts:
    """The design's size, the simulator's extra hypotheses and the paper's numbers (under ``ch02``)."""

    run_pairs_per_instance: int = fact(unit="run pairs", doc="run pairs per instance")
    matched_pairs: str = fact(unit="pairs", doc="matched pairs of this run, with thousands separators")
    extra_max: int = fact(unit="hypotheses", doc="most extra hypotheses a run delivers")
    p_extra: float = fact(doc="probability of one more extra hypothesis")
    paper_density: float = fact(unit="pairs", digits=1, doc="the paper's matched pairs per run pair")
    paper_matched_pairs: str = fact(unit="pairs", doc="the paper's matched pairs")
    paper_0v1_pp: float = fact(unit="pp", digits=1, doc="the paper's extra divergence, 0 v 1")
    paper_0v5_pp: float = fact(unit="pp", digits=1, doc="the same, 0 v 5")
    paper_1v5_pp: float = fact(unit="pp", digits=1, doc="the same, 1 v 5")
    paper_judges_0v1: str = fact(unit="pp", doc="the paper's range over its three judges, 0 v 1")
    paper_judges_0v5: str = fact(unit="pp", doc="the same, 0 v 5")
    paper_judges_1v5: str = fact(unit="pp", doc="the same, 1 v 5")
    paper_demands: int = fact(unit="demands", doc="critic demands the paper labelled")


def design_facts(design: Design, design_counts: Mapping[str, int], simulator: SimulatorParams) -> DesignFacts:
    """:class:`DesignFacts` of ``design`` (``design_counts``: ``workflow.counts`` of its runs)."""
    paper = {f"paper_{a}v{b}_pp": reported(paper_key(a, b)) for a, b in PAPER_COMPARISONS}
    judges = {f"paper_judges_{a}v{b}": f"{reported(judge_range_key(f'{a} v {b}', 'low')):g} to "
              f"{reported(judge_range_key(f'{a} v {b}', 'high')):g}" for a, b in PAPER_COMPARISONS}
    return DesignFacts(
        run_pairs_per_instance=design.n_run_pairs // len(design.instances),
        matched_pairs=f'{design_counts["matched_pairs"]:,}', extra_max=simulator.extra_hypotheses_max,
        p_extra=simulator.p_extra_hypothesis,
        paper_density=reported("design.matched_pairs") / reported("design.run_pairs"),
        paper_matched_pairs=f'{reported("design.matched_pairs"):,}', paper_demands=reported("engagement.demands"),
        **paper, **judges)


@dataclass(frozen=True)
class Table1Facts:
    """Table 1 under the main rule and beside the other rules, as the prose quotes it (under ``ch02``)."""

    rate_first: int = fact(unit="%", doc="the paper-rate judge's rate for a changed initiating event")
    rate_middle: int = fact(unit="%", doc="its rate for a changed middle step")
    level_pct: str = fact(unit="%", doc="the intervals' level")
    partitions: int = fact(unit="splits", doc="splits per instance of the exact test")
    n_instances: int = fact(unit="instances", doc="instances of the design")
    p_floor: str = fact(doc="the smallest attainable p, as text")
    paper_p_bound: str = fact(doc="the paper's bound on the 0 v 1 p, a power of ten")
    headline_0v1: str = fact(doc="the intro's 0 v 1 with its interval")
    headline_1v5: str = fact(doc="the intro's 1 v 5 with its interval")
    headline_p_0v1: str = fact(doc="the intro's 0 v 1 p")
    headline_status: str = fact(doc="where the headline's numbers come from")
    headline_provenance: str = fact(doc="the intro's provenance cell")
    headline_verdict: str = fact(doc="the intro's verdict")
    main_rule_name: str = fact(doc="the main rule, as a sentence names it")
    inside: str = fact(doc="whether the paper's values lie inside this run's intervals")
    fitted_labels: str = fact(doc="the comparisons the calibration fitted")
    unfitted_labels: str = fact(doc="those it did not")
    key_0v1_pp: float | None = fact(unit="pp", digits=1, missing="not run", doc="the mechanism key's 0 v 1")
    extra_0v1_pp: float | None = fact(unit="pp", digits=1, missing=_NOT_IN, doc="extra divergence, 0 v 1")
    extra_0v5_pp: float | None = fact(unit="pp", digits=1, missing=_NOT_IN, doc="the same, 0 v 5")
    extra_1v5_pp: float | None = fact(unit="pp", digits=1, missing=_NOT_IN, doc="the same, 1 v 5")
    ci_0v1: str = fact(unit="pp", doc="its interval, 0 v 1")
    ci_0v5: str = fact(unit="pp", doc="its interval, 0 v 5")
    ci_1v5: str = fact(unit="pp", doc="its interval, 1 v 5")
    p_1v5: str = fact(doc="the exact p of 1 v 5")
    max_0v1_pp: float | None = fact(unit="pp", digits=1, missing=_NOT_IN, doc="the ceiling of 0 v 1")
    max_1v5_pp: float | None = fact(unit="pp", digits=1, missing=_NOT_IN, doc="the ceiling of 1 v 5")
    norm_0v1: float | None = fact(digits=2, missing=_NOT_IN, doc="0 v 1 over its ceiling")
    norm_1v5: float | None = fact(digits=2, missing=_NOT_IN, doc="1 v 5 over its ceiling")
    norm_verdict: str = fact(doc="whether the contrast survives the normalisation (:func:`norm_verdict`)")
    ceiling_reading: str = fact(doc="what the ceiling says about 1 v 5 (:func:`ceiling_reading`)")
    rate_vs_key: str = fact(doc="the paper-rate judge beside the mechanism key (:func:`rule_pair_text`)")
    text_0v1: str = fact(doc="the text rules' 0 v 1")
    pattern: str = fact(doc="the pattern over the rules (:func:`pattern_sentence`)")


def table1_facts(table: pd.DataFrame, main_rule: str, design: Design, spec, *, level: float, status: str,
                 llm: bool, show_paper: bool) -> Table1Facts:
    """:class:`Table1Facts` of Table 1 (``table``) under ``main_rule``; ``spec``: the calibration spec;
    ``status``: the headline's status; ``llm``: an LLM backend; ``show_paper``: the comparison is on."""
    main = main_table(table, main_rule)
    head = headline(main, level)
    partitions, n_instances = int(main.n_partitions.iloc[0]), int(main.n_instances.iloc[0])
    provenance, verdict = headline_provenance("ch02", llm, head)
    fitted, unfitted = fitted_comparisons(spec)
    key_rows = table[table.rule == "mechanism_key"].set_index("comparison")
    per: dict[str, Any] = {}
    for label in ("0 v 1", "0 v 5", "1 v 5"):
        row = main.loc[label] if label in main.index else None
        per[f"extra_{_tag(label)}_pp"] = None if row is None else row.extra_pp
        per[f"ci_{_tag(label)}"] = _NOT_IN if row is None else interval_text(row.ci_low_pp, row.ci_high_pp)
        if label != "0 v 5":
            per[f"max_{_tag(label)}_pp"] = None if row is None else row.max_extra_pp
            per[f"norm_{_tag(label)}"] = None if row is None else row.normalised
    first = table[table.comparison == "0 v 1"].set_index("rule").extra_pp
    text_0v1 = ", ".join(f"{labels.label(r)} {first[r]:.1f} pp" for r in ("tfidf", "embedding")
                         if r in first.index and "0 v 1" in main.index)
    return Table1Facts(
        rate_first=round(100 * paper_rates()["first_step"]), rate_middle=round(100 * paper_rates()["middle_step"]),
        level_pct=f"{100 * level:g}", partitions=partitions, n_instances=n_instances,
        p_floor=p_floor_text(partitions, n_instances),
        paper_p_bound=power_of_ten(round(math.log10(reported("critique_depth.p_value_bound.k0_vs_k1")))),
        headline_0v1=head["0 v 1 text"], headline_1v5=head["1 v 5 text"], headline_p_0v1=head["p 0 v 1"],
        headline_status=status, headline_provenance=provenance, headline_verdict=verdict,
        main_rule_name=labels.in_sentence(main_rule),
        inside=inside_sentence(main, paper_values(design.comparisons()), level) if show_paper
        else "no comparison with published numbers",
        fitted_labels=" and ".join(fitted), unfitted_labels=" and ".join(unfitted) or "no comparison",
        key_0v1_pp=key_rows.extra_pp.get("0 v 1"),
        p_1v5=format_p(float(main.loc["1 v 5", "p_value"])) if "1 v 5" in main.index else _NOT_IN,
        norm_verdict=norm_verdict(main),
        ceiling_reading=ceiling_reading(main.loc["1 v 5", "extra_pp"], main.loc["1 v 5", "max_extra_pp"])
        if "1 v 5" in main.index else "the design lacks 1 v 5",
        rate_vs_key=rule_pair_text(table, "paper_rates", "mechanism_key"), text_0v1=text_0v1 or "not run",
        pattern=pattern_sentence(table), **per)


@dataclass(frozen=True)
class TruthFacts:
    """The simulator's truths the prose quotes (under ``ch02_truth``; pp, same-depth values in %)."""

    key_K1: float | None = fact(unit="%", digits=1, missing=_NO_TRUTH, doc="same-depth divergence at K=1, key")
    key_K5: float | None = fact(unit="%", digits=1, missing=_NO_TRUTH, doc="the same at K=5")
    key_max_1v5: float | None = fact(unit="pp", digits=1, missing=_NO_TRUTH, doc="ceiling of 1 v 5, key")
    rate_K1: float | None = fact(unit="%", digits=1, missing=_NO_TRUTH, doc="same-depth divergence at K=1, rates")
    rate_K5: float | None = fact(unit="%", digits=1, missing=_NO_TRUTH, doc="the same at K=5")
    rate_1v5: float | None = fact(unit="pp", digits=1, missing=_NO_TRUTH, doc="extra divergence 1 v 5, rates")
    rate_max_1v5: float | None = fact(unit="pp", digits=1, missing=_NO_TRUTH, doc="its ceiling")
    rate_ceiling_reading: str = fact(doc="what that ceiling says (:func:`ceiling_reading`)")
    runs: int = fact(unit="runs", doc="runs per depth that estimate the truth")


def truth_facts(truth: pd.DataFrame | None, runs_per_depth: int) -> TruthFacts:
    """:class:`TruthFacts` of :func:`simulator_truth` (None for LLM runs: every value missing)."""
    if truth is None:
        return TruthFacts(*[None] * 7, rate_ceiling_reading=_NO_TRUTH, runs=runs_per_depth)
    values = {}
    for measure, tag in (("mechanism_key", "key"), ("paper_rates", "rate")):
        rows = truth[truth.measure == measure].set_index("label")
        values |= {f"{tag}_K1": rows.truth_pp.get("K=1"), f"{tag}_K5": rows.truth_pp.get("K=5"),
                   f"{tag}_1v5": rows.truth_pp.get("1 v 5"), f"{tag}_max_1v5": rows.max_extra_pp.get("1 v 5")}
    reading = ("the design lacks 1 v 5" if values["rate_1v5"] is None
               else ceiling_reading(values["rate_1v5"], float(values["rate_max_1v5"])))
    return TruthFacts(**{k: v for k, v in values.items() if k != "key_1v5"}, runs=runs_per_depth,
                      rate_ceiling_reading=reading)


def _truth_pp(doc: str) -> Any:
    """A truth in pp of :class:`SettingTruths` (missing: the design lacks its comparison)."""
    return fact(unit="pp", digits=1, missing=_NOT_IN, doc=doc)


#: the settings table's columns (:func:`settings_table`: the committed setting first), as key parts
SETTING_TAGS = ("committed", "dev", "unsup", "contrast", "keyfit")


@dataclass(frozen=True)
class SettingTruths:
    """The truths at other simulator settings the prose quotes (under ``ch02_set``; pp): the column
    (:data:`SETTING_TAGS`), the measure (key: mechanism key, rate: paper rates) and the comparison."""

    committed_key_0v1: float | None = _truth_pp("committed setting, mechanism key, 0 v 1")
    committed_rate_0v1: float | None = _truth_pp("committed setting, paper rates, 0 v 1")
    committed_rate_1v5: float | None = _truth_pp("committed setting, paper rates, 1 v 5")
    dev_rate_0v1: float | None = _truth_pp("p_develop_swap changed, paper rates, 0 v 1")
    dev_rate_1v5: float | None = _truth_pp("the same, 1 v 5")
    unsup_rate_0v1: float | None = _truth_pp("p_weak_unsupported changed, paper rates, 0 v 1")
    unsup_rate_1v5: float | None = _truth_pp("the same, 1 v 5")
    contrast_rate_0v1: float | None = _truth_pp("p_find changed, paper rates, 0 v 1")
    contrast_rate_0v5: float | None = _truth_pp("the same, 0 v 5")
    contrast_rate_1v5: float | None = _truth_pp("the same, 1 v 5")
    keyfit_key_0v1: float | None = _truth_pp("fitted to the mechanism key, mechanism key, 0 v 1")
    keyfit_rate_0v1: float | None = _truth_pp("the same, paper rates")


@dataclass(frozen=True)
class SettingsFacts:
    """The section on the simulator's settings (under ``ch02``)."""

    set: SettingTruths
    contrast_p_find: float = fact(doc="the contrasting p_find")
    p_find: float = fact(doc="the committed p_find")
    compare_runs: int = fact(unit="runs", doc="runs per depth at each other setting")
    shape_verdict: str = fact(doc="what the contrasting p_find does to the shape (:func:`shape_verdict`)")
    first_changed_k1: float | None = fact(unit="%", digits=0, missing="(not known for LLM runs)",
                                          doc="depth-1 hypotheses whose initiating event changed")
    middle_changed_k1: float | None = fact(unit="%", digits=0, missing="(not known for LLM runs)",
                                           doc="depth-1 hypotheses whose middle steps changed")


def settings_facts(settings: pd.DataFrame, simulator: SimulatorParams, *, contrast_p_find: float, compare_runs: int,
                   profile: pd.DataFrame | None) -> SettingsFacts:
    """:class:`SettingsFacts` of :func:`settings_table` (columns in :data:`SETTING_TAGS` order) and the
    change profile of the runs (``workflow.depth.change_profile``; None for LLM runs)."""
    def value(name: str) -> float:
        tag, measure, label = name.split("_")
        column = settings.iloc[:, SETTING_TAGS.index(tag)]
        return column.get(("mechanism_key" if measure == "key" else "paper_rates", label.replace("v", " v ")))

    known = profile is not None and 1 in profile.index
    return SettingsFacts(
        set=SettingTruths(**{f.name: value(f.name) for f in fields(SettingTruths)}), contrast_p_find=contrast_p_find,
        p_find=simulator.p_find, compare_runs=compare_runs,
        shape_verdict=shape_verdict(settings, f"p_find = {contrast_p_find:g}"),
        first_changed_k1=profile.loc[1, "initiating event changed (%)"] if known else None,
        middle_changed_k1=profile.loc[1, "middle steps changed (%)"] if known else None)
