"""Every chapter's parameters, declared once: one pydantic model per chapter on :class:`RunSettings`.

A field's type, default, range (``ge``/``le``/``gt``), choices (``Literal``) and one-line
description live here and nowhere else; fields shared by several chapters are declared once as a
type (``TfidfThreshold``) or a group (``Workflow``, ``TextRules``, ``LLMRun``, ...). ``mechaudit
execute`` and ``mechaudit estimate`` check every value from a parameter file or ``-p`` against its
chapter's model before any kernel starts (``mechaudit.book.params.check_value``), so the cost
plans (``plan(p)``) see only checked values; ``mechaudit calibrate`` computes the committed tables
at the models' defaults; the re-run page shows each model as a table (``{parameter-table}``,
``mechaudit.sphinxext.parameter_table``). A chapter's notebook reads them from its context
(``ChapterContext.open``: this model with papermill's injected values over its defaults); its
parameters cell, which papermill needs, assigns nothing. Sizes have upper bounds far
above what any chapter needs and far below what would exhaust a machine's memory, so a mistyped
``-p n_boot 1000000000000`` is one line.

This module imports only pydantic: rule and rubric names are literals, pinned to their home
modules (``mechaudit.rules``, ``mechaudit.backends``, ...) by the tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

#: upper bounds of sizes: runs per depth and instance, replications, resamples, pairs, sweep points
MAX_RUNS = 2000
MAX_REPLICATIONS = 100_000
MAX_RESAMPLES = 1_000_000
MAX_PAIRS = 100_000
MAX_SWEEP_POINTS = 10_000

Backend = Literal["reference", "anthropic", "replay"]  # mechaudit.backends.CHOICES
RuleName = Literal["mechanism_key", "reference", "tfidf", "embedding", "llm", "paper_rates"]  # rules NAMES
Rubric = Literal["full", "step", "none"]  # mechaudit.rules.reference.RUBRICS
Order = Literal["ab", "ba"]  # mechaudit.rules.llm_judge.ORDERS
ParallelBackend = Literal["loky", "multiprocessing", "threading", "sequential", "dask"]  # workflow.parallel


def _as_tuple(value: Any) -> Any:
    """YAML has no tuples: a fixed-length item arrives as a list."""
    return tuple(value) if isinstance(value, list) else value


def size(low: int, high: int | None = None) -> Any:
    """An integer in ``[low, high]``."""
    return Annotated[int, Field(ge=low, le=high)]


Share = Annotated[float, Field(ge=0.0, le=1.0)]
Level = Annotated[float, Field(gt=0.0, le=1.0)]
Positive = Annotated[float, Field(gt=0.0)]
NonNegative = Annotated[float, Field(ge=0.0)]
Name = Annotated[str, Field(pattern=r"\S")]  # not blank
Folder = Name | None
#: a threshold sweep ``[start, stop, count]``
Sweep = Annotated[tuple[Share, Share, size(2, MAX_SWEEP_POINTS)], BeforeValidator(_as_tuple)]
#: a design ``[instances, runs per depth]``
Design = Annotated[tuple[size(1, 1000), size(2, MAX_RUNS)], BeforeValidator(_as_tuple)]
Budget = NonNegative | None


def doc(kind: Any, description: str, **kw: Any) -> Any:
    """``kind`` with a one-line description (and more ``Field`` arguments: bounds, a default)."""
    return Annotated[kind, Field(description=description, **kw)]


# fields that mean the same in every chapter with them: (type, bounds, meaning) once; a chapter's
# default is assigned where the chapter lists the field, unless every chapter shares it
TfidfThreshold = doc(Share, "TF-IDF cosine similarity from which two hypotheses are the same", default=0.25)
EmbeddingThreshold = doc(Share, "embedding cosine similarity from which two hypotheses are the same", default=0.77)
EmbeddingModel = doc(Folder, "sentence-transformers model name or path (None: all-MiniLM-L6-v2)", default=None)
EmbeddingCache = doc(bool, "cache embeddings on disk", default=True)
JudgeModel = doc(Name, "LLM judge", default="claude-opus-4-6")
JudgeModels = doc(list[Name], "further judge models (the judge-model axis)")
JudgeRubric = doc(Rubric, "rubric of the LLM judge", default="full")
JudgeOrders = doc(list[Order], "presentation orders of each judged pair", min_length=1, default=["ab", "ab", "ba"])
ReferenceRubric = doc(Rubric, "rubric of the reference judge", default="full")
Rules = doc(list[RuleName], "equivalence rules to compare", min_length=1)
TruthRuns = doc(int, "simulated runs per depth and instance for the true values", ge=1, le=MAX_RUNS)
TextReplications = doc(int, "replications of the text-level simulation", ge=1, le=MAX_REPLICATIONS)
Alpha = doc(Level, "significance level of the tests", default=0.05)
CacheDir = doc(Folder, "LLM response cache (None: data/llm_cache)", default=None)
MaxUsd = doc(Budget, "LLM budget of the chapter in USD (0: cached answers only; None: no limit)", default=None)


class RunSettings(BaseModel):
    """What every chapter takes: the backend, the seed of every random draw and the output folder."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, validate_default=True)

    backend: doc(Backend, "reference (offline), replay (recorded LLM answers) or anthropic (live)") = "reference"
    seed: doc(int, "seed of every random draw of the chapter", ge=0) = 0
    out_dir: doc(Folder, "folder for the chapter's CSV tables and figures (None: none written)") = None


class DataSettings(RunSettings):
    """A chapter of the paper's book: the data folder and the paper comparison."""

    data_dir: doc(Folder, "benchmark folder (None: MECHAUDIT_DATA or the shipped data)") = None
    compare_paper: doc(bool | None, "show the paper's numbers (None: only with the shipped data)") = None


class Simulated(DataSettings):
    """A chapter that simulates the workflow."""

    design_file: doc(Name, "design (instances, depths, runs per depth) under params/") = "paper.yaml"
    simulator_file: doc(Name, "simulator parameters under params/") = "simulator.yaml"


class Calibrated(Simulated):
    """A chapter that reads the simulator's fit to the paper."""

    calibration_file: doc(Name, "the simulator's fit to the paper under params/") = "calibration.yaml"


class LLMRun(RunSettings):
    """A chapter that may send LLM requests: the response cache, the budget and batch mode."""

    cache_dir: CacheDir
    max_usd: MaxUsd
    llm_batch: doc(bool, "send bulk LLM requests as Message Batches") = False


class Workflow(LLMRun):
    """A chapter that may run the proposer/critic workflow with an LLM."""

    generator_model: doc(Name, "LLM of the proposer/critic workflow") = "claude-sonnet-4-6"
    judge_model: JudgeModel
    json_retries: doc(int, "retries of an LLM reply that is not the JSON asked for", ge=0, le=20) = 2


class TextRules(RunSettings):
    """A chapter that compares hypotheses with TF-IDF and embeddings."""

    tfidf_threshold: TfidfThreshold
    embedding_threshold: EmbeddingThreshold
    embedding_model: EmbeddingModel
    embedding_cache: EmbeddingCache


class Parallel(RunSettings):
    """A chapter whose replication loops run on joblib (or Dask)."""

    n_jobs: doc(int, "joblib workers (-1: every core)", ge=-1, le=1024) = -1
    parallel_backend: doc(ParallelBackend | None, "joblib backend of the replication loops") = "loky"
    scheduler: doc(Folder, "Dask scheduler address tcp://host:8786 (None: a local cluster)") = None


class ProblemSettings(DataSettings):
    n_openings: doc(int, "opening hypotheses of the toy instance", ge=1, le=1000) = 5
    n_runs: doc(int, "re-runs of the toy workflow", ge=2, le=1000) = 5
    rerun_noise: doc(Share, "chance that a re-run changes a delivered mechanism") = 0.1
    critique_change: doc(Share, "chance that critique changes a delivered mechanism") = 0.5
    initiator_change: doc(Share, "share of critique changes that replace the initiating event") = 0.5
    instance_id: doc(Folder, "benchmark instance of the walk-through (None: the first)") = None


class CritiqueDepthSettings(Workflow, TextRules, Calibrated):
    rules: Rules = ["mechanism_key", "reference", "paper_rates", "tfidf", "embedding"]
    main_rule: doc(RuleName, "the rule whose verdicts the headline uses") = "paper_rates"
    judge_models: JudgeModels = []
    interval_level: doc(Level, "coverage of the intervals") = 0.95
    truth_runs_per_depth: TruthRuns = 100
    compare_runs_per_depth: doc(int, "runs per depth of the settings comparison", ge=2, le=MAX_RUNS) = 40
    contrast_p_find: doc(Share, "p_find of the contrasting simulator setting") = 0.5


class ValiditySettings(Parallel, Calibrated):
    null_simulator_file: doc(Name, "simulator without any critique effect under params/") = "simulator_null.yaml"
    truth_runs_per_depth: TruthRuns = 100
    n_boot: doc(int, "bootstrap resamples", ge=1, le=MAX_REPLICATIONS) = 500
    n_replications: doc(int, "replications of the simulated design", ge=1, le=MAX_REPLICATIONS) = 100
    n_null_replications: doc(int, "replications without a critique effect", ge=1, le=MAX_REPLICATIONS) = 300
    n_text_replications: TextReplications = 20
    tfidf_threshold: TfidfThreshold
    alpha: Alpha


class RobustnessSettings(Parallel, Calibrated):
    robust_axes: doc(dict[str, list[float]], "simulator settings swept for the consistency grid") = {
        "p_find": [0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0], "weak_scale": [0.9, 0.95, 1.0, 1.05, 1.1],
        "conceded": [0.6, 0.8, 1.0]}
    alternatives_axes: doc(dict[str, list[float]], "alternative simulator settings") = {
        "p_find": [0.85, 1.0], "evidence_weight": [1.0, 8.0, 1000.0]}
    truth_runs_per_depth: Annotated[TruthRuns, Field(ge=3)] = 200
    truth_seeds: doc(int, "simulated designs per setting for the true values", ge=1, le=100) = 4
    pick_quantiles: doc(list[Share], "quantiles of the consistent settings shown", min_length=1) = [0.0, 1.0]
    n_text_replications: TextReplications = 10
    power_designs: doc(list[Design], "designs [instances, runs per depth] of the power study",
                       min_length=1) = [[4, 5], [4, 10], [8, 5]]
    power_ladder: doc(list[size(2, MAX_RUNS)], "runs per depth of the power curve", min_length=1) = [3, 5, 10, 20]
    power_level: doc(Level, "power a design must reach") = 0.8
    n_power_replications: doc(int, "replications per design of the power study", ge=1, le=MAX_REPLICATIONS) = 200
    n_pools: doc(int, "independent pools of simulated runs", ge=1, le=1000) = 4
    pool_runs_per_depth: doc(int, "simulated runs per depth of each pool", ge=1, le=MAX_RUNS) = 40
    n_resamples: doc(int, "random split combinations of the permutation test", ge=1, le=MAX_RESAMPLES) = 199
    diminishing_ratio: doc(Share, "1 v 5 truth below this share of the 0 v 1 truth: diminishing") = 0.25
    z: doc(Positive, "standard errors a verdict must clear") = 2.0
    tfidf_threshold: TfidfThreshold
    alpha: Alpha


class EngagementSettings(Workflow, Simulated):
    """Chapter 03 takes only the shared settings of a simulated workflow."""


class RulesSettings(Workflow, TextRules, Simulated):
    rules: Rules = ["mechanism_key", "reference", "tfidf", "embedding"]


class PerturbationsSettings(TextRules, LLMRun, DataSettings):
    judge_model: JudgeModel
    judge_models: JudgeModels = []
    judge_rubric: JudgeRubric
    judge_orders: JudgeOrders
    judge_early_stop: doc(bool, "skip a pair's remaining orders once its verdict is settled") = True
    regenerate_suite: doc(bool, "rebuild the template suite from the data instead of reading it") = False
    tfidf_fit_on: doc(Literal["compared", "pair"],
                      "fit the TF-IDF vocabulary on a suite's compared texts or on each pair") = "compared"
    reference_rubric: ReferenceRubric


class RubricSettings(LLMRun, DataSettings):
    judge_model: JudgeModel
    judge_models: JudgeModels = []
    judge_orders: JudgeOrders
    rubrics: doc(list[Rubric], "rubrics compared", min_length=1) = ["full", "step", "none"]
    jaccard_threshold: doc(Share, "share of shared steps from which the step rubric says same") = 0.5


class SensitivitySettings(TextRules, LLMRun, DataSettings):
    judge_models: JudgeModels = ["claude-opus-4-6"]
    judge_rubric: JudgeRubric
    judge_orders: JudgeOrders
    stability_pairs: doc(int, "pairs judged again for the stability checks", ge=1, le=MAX_PAIRS) = 180
    tfidf_sweep: doc(Sweep, "TF-IDF thresholds swept [start, stop, count]") = [0.05, 0.95, 19]
    embedding_sweep: doc(Sweep, "embedding thresholds swept [start, stop, count]") = [0.5, 0.98, 25]
    reference_rubric: ReferenceRubric


class TauSettings(LLMRun):
    n_patterns: doc(int, "review patterns of the synthetic pool", ge=1, le=1000) = 8
    papers_per_pattern: doc(int, "papers per review pattern", ge=2, le=1000) = 40
    n_reps: doc(int, "repetitions of the tau recovery study", ge=1, le=MAX_REPLICATIONS) = 10
    role_taus: doc(dict[str, Positive], "true tau of each reviewer role") = {
        "Methodology": 0.8, "Novelty": 1.2, "Storyteller": 1.0}
    tie_width: doc(NonNegative, "score gap within which a judge may say tie") = 0.3
    n_stories: doc(int, "synthetic stories scored", ge=1, le=MAX_PAIRS) = 100
    loss_thresholds: doc(list[NonNegative], "fit losses from which anchors are densified",
                         min_length=1) = [0.05, 1.0, 5.0, 10.0]
    heavy_tie_rates: doc(list[Share], "tie rates of the heavy-tie study", min_length=1) = [0.0, 0.3, 0.6, 0.9]
    perception_noises: doc(list[NonNegative], "judge perception noise in score points",
                           min_length=1) = [0.0, 0.5, 1.0]
    misspec_reps: doc(int, "repetitions of the misspecification study", ge=1, le=MAX_REPLICATIONS) = 3
    judge_model: JudgeModel
    llm_pairs: doc(int, "pairs sent to the blind LLM judge", ge=1, le=MAX_PAIRS) = 200
    n_pairs: doc(int, "comparison pairs per tau fit", ge=1, le=MAX_PAIRS) = 2000
    review_noise: doc(NonNegative, "noise of the synthetic reviews in score points") = 0.8
    true_taus: doc(list[Positive], "true taus to recover", min_length=1) = [0.5, 0.8, 1.5]
    tie_rate: doc(Share, "share of near-equal pairs judged tie") = 0.3
    heavy_tie_width: doc(NonNegative, "tie band of the heavy-tie study") = 1.0
    densify_mode: doc(Literal["original", "fill", "floor"], "anchor densify rule") = "original"
    weight_scales: doc(list[Positive], "factors applied to every anchor weight", min_length=1) = [0.25, 0.5, 1, 2, 4]


class YourDataSettings(TextRules):
    judge_model: JudgeModel
    cache_dir: CacheDir
    max_usd: MaxUsd
    data_dir: doc(Folder, "your data folder (None: the chapter's example set)") = None
    reference_rubric: ReferenceRubric


#: each chapter's model by notebook stem
CHAPTERS: dict[str, type[RunSettings]] = {
    "01_problem": ProblemSettings, "02_critique_depth": CritiqueDepthSettings, "02b_validity": ValiditySettings,
    "02c_robustness": RobustnessSettings, "03_critique_engagement": EngagementSettings,
    "04_equivalence_rules": RulesSettings, "05_perturbations": PerturbationsSettings,
    "06_rubric_sensitivity": RubricSettings, "07_sensitivity": SensitivitySettings,
    "08_tau_calibration": TauSettings, "09_your_data": YourDataSettings,
}


def defaults(stem: str) -> dict[str, Any]:
    """The default parameters of chapter ``stem`` as plain data (lists, not tuples)."""
    return CHAPTERS[stem]().model_dump(mode="json")


def _num(x: float) -> str:
    """A bound as written: whole numbers in full (100000, not 1e+05), inf as ``inf``."""
    if not math.isfinite(x):
        return "inf" if x > 0 else "-inf"
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def allowed(schema: dict[str, Any]) -> str:
    """What a field's JSON schema allows, in words: ``"an integer in [2, 1000]"``, ``"a number > 0"``,
    ``"one of 'ab', 'ba'"``, ``"a list of strings"`` (the parameter tables and the error messages)."""
    if "anyOf" in schema:
        return " or ".join(allowed(s) for s in schema["anyOf"])
    kind = schema.get("type")
    if "enum" in schema:
        return "one of " + ", ".join(map(repr, schema["enum"]))
    if kind in ("integer", "number"):
        what = "an integer" if kind == "integer" else "a number"
        if "exclusiveMinimum" in schema:
            high = f" and <= {_num(schema['maximum'])}" if "maximum" in schema else ""
            return f"{what} > {_num(schema['exclusiveMinimum'])}{high}"
        if "minimum" in schema or "maximum" in schema:
            low, high = schema.get("minimum", -math.inf), schema.get("maximum", math.inf)
            return f"{what} in [{_num(low)}, {_num(high)}]"
        return what
    if kind == "array" and "prefixItems" in schema:
        return "a list [" + ", ".join(allowed(s) for s in schema["prefixItems"]) + "]"
    if kind == "array":
        least = f", at least {schema['minItems']}" if schema.get("minItems") else ""
        return f"a list of ({allowed(schema.get('items', {}))}{least})"
    if kind == "object":
        return f"a mapping of names to {allowed(schema.get('additionalProperties', {}))}"
    return {"string": "a string", "boolean": "true or false", "null": "null"}.get(kind, "anything")


def schema_at(schema: dict[str, Any], steps: Sequence[int | str]) -> dict[str, Any]:
    """The schema of the item at ``steps`` (list positions, mapping keys) of a value of ``schema``;
    a nullable value's non-null branch."""
    while "anyOf" in schema:
        schema = next(s for s in schema["anyOf"] if s.get("type") != "null")
    if not steps:
        return schema
    if "prefixItems" in schema:
        return schema_at(schema["prefixItems"][steps[0]], steps[1:])
    return schema_at(schema.get("items", schema.get("additionalProperties", {})), steps[1:])


__all__ = ["RunSettings", "DataSettings", "CHAPTERS", "defaults", "allowed", "schema_at", "MAX_RUNS"]
