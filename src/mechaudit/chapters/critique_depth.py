"""Chapter 02 (critique depth): Table 1 with the simulator's truth, the shape checks, the headline,
the "paper vs this run" rows and the calibration summary, one call each.

``table`` below is ``workflow.rule_tables``'s Table 1 (columns rule, comparison, extra_pp, p_value,
n_partitions, n_instances, max_extra_pp, normalised); ``main`` is one rule's rows indexed by
comparison label (``"0 v 1"``). Effects are in percentage points (pp).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from mechaudit.backends import Backend
from mechaudit.chapters.status import SIMULATED, headline_status
from mechaudit.errors import MechauditError
from mechaudit.model import Benchmark
from mechaudit.paper import entries, format_p, power_of_ten, reported
from mechaudit.workflow import Design, SimulatorParams, population_truth

#: the comparisons the paper reports, as (a, b) depth pairs
PAPER_COMPARISONS = ((0, 1), (0, 5), (1, 5))


def paper_key(a: int, b: int) -> str:
    """The ``data/paper_reported.yaml`` key of the paper's extra divergence for depths a v b."""
    return f"critique_depth.extra_divergence_pp.k{a}_vs_k{b}"


def status(backend: str, generator_model: str) -> str:
    """Where the runs come from, in the book's status vocabulary."""
    return headline_status(backend, generator_model, SIMULATED)


def report_llm_judge(rule_objects: Mapping[str, Any]) -> None:
    """With the LLM judge among the rules: print how many matched pairs it left undecided (no
    majority of valid verdicts; excluded from their run pair's divergence). Otherwise nothing."""
    if "llm" in rule_objects:
        print(f"LLM judge: {rule_objects['llm'].undecided_} matched pairs undecided (no majority of valid "
              "verdicts), excluded from their run pair's divergence")


def simulator_truth(bench: Benchmark, design: Design, simulator: SimulatorParams, backend: str,
                    runs_per_depth: int, seed: int = 0) -> pd.DataFrame | None:
    """The simulator's population values (``population_truth``) for simulator runs; ``None`` for LLM
    runs, which have no ground truth."""
    if Backend.parse(backend).is_llm:
        return None
    return population_truth(bench, design, simulator, runs_per_depth=runs_per_depth, seed=seed)


def add_truth(table: pd.DataFrame, truth: pd.DataFrame | None) -> pd.DataFrame:
    """``table`` with columns truth_pp and truth_se_pp matched on the comparison label (unchanged
    when ``truth`` is None)."""
    if truth is None:
        return table
    by_label = truth.set_index("label")
    return table.assign(truth_pp=table.comparison.map(by_label.truth_pp),
                        truth_se_pp=table.comparison.map(by_label.truth_se_pp))


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


def table1(table: pd.DataFrame) -> pd.DataFrame:
    """Table 1 for reading: index (rule, comparison); extra divergence, exact p, its ceiling, the
    share of the ceiling reached and, for simulator runs, the truth and its standard error. Values
    unrounded: :class:`mechaudit.tables.BookTable` writes them (p-values in the book's style)."""
    names = {"extra_pp": "extra (pp)", "p_value": "exact p", "max_extra_pp": "ceiling (pp)",
             "normalised": "share of ceiling", "truth_pp": "truth (pp)", "truth_se_pp": "truth SE (pp)"}
    return table.set_index(["rule", "comparison"])[[c for c in names if c in table.columns]].rename(columns=names)


def p_floor_text(n_partitions: int, n_instances: int) -> str:
    """The exact test's smallest p (one split combination in ``n_partitions ** n_instances``) as
    text, e.g. "1/126⁴ ≈ 4.0 × 10⁻⁹"."""
    floor = 1 / n_partitions**n_instances
    exponent = math.floor(math.log10(floor))
    power = str(n_instances).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"1/{n_partitions}{power} ≈ {floor / 10.0**exponent:.1f} × {power_of_ten(exponent)}"


def headline(main: pd.DataFrame) -> dict[str, Any]:
    """The intro's headline values: extra divergence 0 v 1 and 1 v 5 (pp, or "not in this design")
    and the 0 v 1 p-value as text."""
    missing = "not in this design"
    out: dict[str, Any] = {label: main.loc[label, "extra_pp"] if label in main.index else missing
                           for label in ("0 v 1", "1 v 5")}
    if "0 v 1" in main.index:
        row = main.loc["0 v 1"]
        floor = 1 / int(row["n_partitions"]) ** int(row["n_instances"])
        out["p 0 v 1"] = format_p(float(row["p_value"]), smallest=floor)
    else:
        out["p 0 v 1"] = missing
    return out


def shape_table(bench: Benchmark, design: Design, simulator: SimulatorParams, truth: pd.DataFrame | None,
                contrast_p_find: float, runs_per_depth: int, seed: int = 0) -> pd.DataFrame:
    """The simulator's population values (pp, index: comparison or depth label) at its own ``p_find``
    (``truth`` if given, else simulated now) and at ``contrast_p_find``; one column each."""
    if truth is None:
        truth = population_truth(bench, design, simulator, runs_per_depth=runs_per_depth, seed=seed)
    contrast = population_truth(bench, design, simulator.model_copy(update={"p_find": contrast_p_find}),
                                runs_per_depth=runs_per_depth, seed=seed)
    return pd.DataFrame({f"p_find = {simulator.p_find:g}": truth.set_index("label").truth_pp,
                         f"p_find = {contrast_p_find:g}": contrast.set_index("label").truth_pp})


def shape_verdict(shape: pd.DataFrame) -> str:
    """Whether the 1 v 5 effect stops being small at the contrast ``p_find`` (second column of
    ``shape_table``): more than 2 pp and three times the default's."""
    small = shape.iloc[:, 0].get("1 v 5", float("nan"))
    if shape.iloc[:, 1].get("1 v 5", float("nan")) > max(2.0, 3 * small):
        return ("the change spreads over several rounds and 1 v 5 is no longer small, so diminishing returns "
                "are a property of a critic that finds most weak links at once, not of the weak-link model as such")
    return "the shape changes little, so diminishing returns do not hinge on this value of p_find"


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


def pattern_sentence(table: pd.DataFrame, alpha: float = 0.05) -> str:
    """Which rules show the paper's pattern: a 0 v 1 effect significant at ``alpha`` and at least four
    times the 1 v 5 effect (and 1 pp). A sentence opening, e.g. "Under the rules a and b the pattern of
    the paper appears"."""
    found = []
    for rule, sub in table.groupby("rule", sort=False):
        by = sub.set_index("comparison")
        if {"0 v 1", "1 v 5"} <= set(by.index) and by.p_value["0 v 1"] <= alpha and (
                by.extra_pp["0 v 1"] >= 4 * max(by.extra_pp["1 v 5"], 1.0)):
            found.append(str(rule))
    if not found:
        return "Under none of the rules does the pattern of the paper appear"
    if len(found) == table.rule.nunique():
        return f"Under every rule ({', '.join(found)}) the pattern of the paper appears"
    return f"Under the rules {', '.join(found)} (not the others) the pattern of the paper appears"


def design_rows(design_counts: Mapping[str, int], source: str) -> list[tuple]:
    """"Paper vs this run" rows of the design's size (runs, run pairs, matched pairs)."""
    return [("design.runs", design_counts["runs"]), ("design.run_pairs", design_counts["run_pairs"]),
            ("design.matched_pairs", design_counts["matched_pairs"], source)]


def paper_rows(main: pd.DataFrame, main_rule: str, source: str) -> list[tuple]:
    """"Paper vs this run" rows of Table 1 under ``main_rule``: the three extra divergences (pp), the
    exact p of 0 v 1 and 0 v 5 (a comparison the design lacks gives ``None``: "not run") and the
    splits per instance."""
    rows: list[tuple] = [(paper_key(a, b), round(main.loc[f"{a} v {b}", "extra_pp"], 1)
                          if f"{a} v {b}" in main.index else None, f"{main_rule}, {source}")
                         for a, b in PAPER_COMPARISONS]
    rows += [(f"critique_depth.p_value_bound.k{a}_vs_k{b}", float(main.loc[f"{a} v {b}", "p_value"])
              if f"{a} v {b}" in main.index else None, "exact two-sided p") for a, b in ((0, 1), (0, 5))]
    rows.append(("design.partitions_per_instance", int(main.n_partitions.iloc[0])))
    return rows


def calibration_values(cal, fit: pd.DataFrame, spec, design: Design, committed: SimulatorParams
                       ) -> dict[str, tuple[Any, int | None]]:
    """What the calibration section's prose quotes: name -> (value, digits for ``glue``).

    ``cal``: ``calibrate``'s result; ``fit``: its ``fit_table``; ``spec``: the ``CalibrationSpec``;
    ``design``: the design it ran; ``committed``: the parameters in ``params/simulator.yaml``.
    """
    from mechaudit.workflow.calibrate import matches

    grid_name = next(iter(spec.grid))
    within = cal.scan[cal.scan.objective <= 1.0][grid_name]
    best = cal.scan[cal.scan.best].iloc[0]
    mix = fit.set_index("parameter").loc["reply_sound"]
    differ = [k for k, ok in matches(committed, cal.values()).items() if not ok]
    grid = (f"{grid_name} in {{{', '.join(f'{v:g}' for v in spec.grid[grid_name])}}}" if len(spec.grid) == 1
            else ", ".join(spec.grid))
    return {
        "p_exact": (cal.p_extra_exact, 3), "p_extra": (cal.params.p_extra_hypothesis, None),
        "grid_name": (grid, None), "runs": (spec.runs_per_depth, None), "tol": (spec.extra_tolerance_pp, None),
        "best": (", ".join(f"{k} = {best[k]:g}" for k in spec.grid), None), "best_pp": (best.extra_0v1_pp, 1),
        "plateau": (f"{grid_name} from {within.min():g} to {within.max():g}" if len(within) else "none", None),
        "mix_target": (mix["target value"], None), "mix_achieved": (mix["achieved"], None),
        "reply_sound": ("conceded / answered / partial / dropped = " + mix["calibrated"], None),
        "demands": (cal.measured.demands_per_runs(design.runs_per_depth), 0), "n_runs": (design.n_runs, None),
        "verdict": ("the calibration reproduces every committed default" if not differ else
                    f"the committed values of {' and '.join(differ)} differ from the scan's (the committed set "
                    "predates this calibration; adopting the scan's values would change the simulated numbers "
                    "of chapters 02-04)", None),
    }


def scan_view(scan: pd.DataFrame, grid: Sequence[str]) -> pd.DataFrame:
    """The calibration scan for reading: index the grid parameters, the 0 v 1 effect (pp), the
    objective (squared distance to the target in tolerances) and whether the point is the best."""
    return (scan.set_index(list(grid))[["extra_0v1_pp", "objective", "best"]].round(2)
            .rename(columns={"extra_0v1_pp": "0 v 1 (pp)"}))


# --------------------------------------------------------------------------- judge-model axis (the paper's Figure 5)

#: the judge models of the paper's Figure 5 (Opus 4.6, Sonnet 4.6, GPT-5.5); ``gpt-5.5`` routes to
#: OpenAI and needs the optional extra ``mechaudit[openai]``
PAPER_JUDGE_MODELS = ("claude-opus-4-6", "claude-sonnet-4-6", "gpt-5.5")
#: the estimate's stage name of the axis's extra requests (``mechaudit.llm.estimate.plan_02``)
AXIS_STAGE = "judge-model axis"


def judge_range_key(label: str, end: str) -> str:
    """The ``data/paper_reported.yaml`` key of the paper's lowest or highest judge (``end`` "low" or
    "high") for the comparison ``label`` ("0 v 1")."""
    a, b = label.split(" v ")
    return f"critique_depth.judge_range_pp.k{a}_vs_k{b}_{end}"


def judge_model_axis(runs, design: Design, models: Sequence[str], *, backend: str, client,
                     instances) -> pd.DataFrame | None:
    """Extra divergence (pp) of every design comparison per judge model: one row per model (in the
    order given, each name once), one column per comparison label ("0 v 1", ...). Every model judges
    every matched pair of ``runs`` exactly as the chapter's ``llm`` rule does (``build_rules``: full
    rubric, the same orders and early stop) through ``client``, so the main judge's calls are
    answered from the cache. Offline: None (no judge model runs, and nothing stands in for one)."""
    from mechaudit.workflow import build_rules, rule_tables

    if not Backend.parse(backend).is_llm:
        return None
    rules = {m: build_rules(["llm"], backend=backend, judge_model=m, client=client, instances=instances)["llm"]
             .same_or_undecided for m in dict.fromkeys(models)}
    _, table = rule_tables(runs, rules, design.comparisons())
    labels = [f"{a} v {b}" for a, b in design.comparisons()]
    return (table.pivot(index="rule", columns="comparison", values="extra_pp")
            .reindex(index=list(rules), columns=labels).rename_axis(index="judge model", columns=None))


def judge_model_ranges(per_model: pd.DataFrame) -> pd.DataFrame:
    """Per comparison the range of extra divergence over the judge models (pp; columns of
    ``agreement.estimate_range``) beside the paper's range over its three judges (``paper low``,
    ``paper high``; NaN for a comparison it does not report)."""
    from mechaudit.agreement import estimate_range

    ranges = estimate_range(per_model)
    known = entries()
    for end in ("low", "high"):
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


def judge_axis_estimate(models: Sequence[str], parameters: Mapping[str, Any]) -> pd.DataFrame:
    """What running the judge-model axis would ask of the API: the judge rows of ``mechaudit
    estimate`` for this chapter under ``backend = "anthropic"`` with ``judge_models = models``
    (``parameters``: the chapter's other parameters that shape the requests, e.g. ``design_file``,
    ``rules``, ``judge_model``). Columns: stage, model, requests, cached, to_send, usd_plain,
    usd_batch (USD NaN for a model ``params/prices.yaml`` does not price)."""
    from mechaudit.llm.estimate import estimate_chapters

    table = estimate_chapters(["02_critique_depth"],
                              overrides={**parameters, "backend": "anthropic", "judge_models": list(models)})
    judge = table[table.stage.str.startswith("judge ")]
    return judge[["stage", "model", "requests", "cached", "to_send", "usd_plain", "usd_batch"]].reset_index(drop=True)


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
