"""What each chapter's parameters may hold: type, range and choices, declared in one place.

Every size (replications, resamples, runs, pairs) has an upper bound: far above what any chapter
needs for its error to stop mattering, and far below what would exhaust a machine's memory, so a
mistyped ``-p n_boot 1000000000000`` is one line before any kernel starts.

``mechaudit execute`` checks every value from a parameter file or ``-p`` against these
declarations before any kernel starts (``mechaudit.book.params.check_value``), so a bad value is one
line naming the field instead of a failure inside a cell. ``SHARED`` declares the names that mean
the same in every chapter that defines them; ``CHAPTERS`` the names one chapter gives its own
meaning (looked up first). ``tests/test_paramspec.py`` checks that every parameter of every chapter
is declared here and that every notebook default passes its declaration.

This module imports nothing heavy: rule and rubric names are literals, pinned to their home
modules (``mechaudit.rules``) by the tests.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

from mechaudit.backends import CHOICES as BACKENDS

#: the rule names of ``mechaudit.rules.registry.NAMES``
RULE_NAMES = ("mechanism_key", "reference", "tfidf", "embedding", "llm", "paper_rates")
#: the rubric names of ``mechaudit.rules.reference.RUBRICS``
RUBRIC_NAMES = ("full", "step", "none")
#: the presentation orders of ``mechaudit.rules.llm_judge.ORDERS``
ORDER_NAMES = ("ab", "ba")
#: the densify rules of ``mechaudit.tau.anchors.DENSIFY_MODES``
DENSIFY_NAMES = ("original", "fill", "floor")
#: the joblib backends of ``mechaudit.workflow.parallel.BACKENDS``
PARALLEL_BACKENDS = ("loky", "multiprocessing", "threading", "sequential", "dask")

#: what each type name reads as in an error message
TYPE_WORDS = {"int": "an integer", "number": "a number", "str": "a string", "bool": "a boolean (true/false)",
              "list": "a list", "mapping": "a mapping"}


@dataclass(frozen=True)
class Spec:
    """One parameter: its type (``int``, ``number``, ``str``, ``bool``, ``list``, ``mapping``),
    whether None is allowed, a closed range ``[low, high]`` (``above``: an open lower bound, the
    value must be greater), choices for a string (``nonempty``: not blank), and for a list ``item``,
    the spec of each item (``min_items``: the shortest list allowed), or ``items``, one spec per
    position of a list of exactly that length."""

    type: str
    nullable: bool = False
    low: float | None = None
    high: float | None = None
    above: float | None = None
    choices: tuple[str, ...] | None = None
    item: Spec | None = None
    min_items: int = 0
    nonempty: bool = False
    items: tuple[Spec, ...] | None = None


def _int(low: int | None = 0, high: int | None = None) -> Spec:
    return Spec("int", low=low, high=high)


def _share(low: float = 0.0, high: float = 1.0) -> Spec:
    return Spec("number", low=low, high=high)


def _numbers(**kw: Any) -> Spec:
    return Spec("list", item=Spec("number", **kw), min_items=1)


#: upper bounds of sizes: runs per depth and instance, replications, resamples, pairs, papers
MAX_RUNS = 2000
MAX_REPLICATIONS = 100_000
MAX_RESAMPLES = 1_000_000
MAX_PAIRS = 100_000
MAX_SWEEP_POINTS = 10_000

_STR = Spec("str")
_FILE = Spec("str", nonempty=True)
_PATH = Spec("str", nullable=True, nonempty=True)
_MODEL = Spec("str", nonempty=True)
#: a threshold sweep ``[start, stop, count]``
_SWEEP = Spec("list", items=(Spec("number", low=0.0, high=1.0), Spec("number", low=0.0, high=1.0),
                             _int(2, MAX_SWEEP_POINTS)))

#: names with the same meaning in every chapter that defines them
SHARED: dict[str, Spec] = {
    "seed": _int(0),
    "backend": Spec("str", choices=BACKENDS),
    "data_dir": _PATH,
    "compare_paper": Spec("bool", nullable=True),
    "out_dir": _PATH,
    "cache_dir": _PATH,
    "design_file": _FILE,
    "simulator_file": _FILE,
    "null_simulator_file": _FILE,
    "calibration_file": _FILE,
    "rules": Spec("list", item=Spec("str", choices=RULE_NAMES), min_items=1),
    "main_rule": Spec("str", choices=RULE_NAMES),
    "tfidf_threshold": _share(),
    "embedding_threshold": _share(),
    "jaccard_threshold": _share(),
    "embedding_model": Spec("str", nullable=True, nonempty=True),
    "embedding_cache": Spec("bool"),
    "generator_model": _MODEL,
    "judge_model": _MODEL,
    "judge_models": Spec("list", item=_MODEL),
    "json_retries": _int(0, 20),
    "max_usd": Spec("number", nullable=True, above=0.0),
    "llm_batch": Spec("bool"),
    "truth_runs_per_depth": _int(1, MAX_RUNS),
    "n_text_replications": _int(1, MAX_REPLICATIONS),
    "tfidf_fit_on": Spec("str", choices=("compared", "pair")),
    "reference_rubric": Spec("str", choices=RUBRIC_NAMES),
    "judge_rubric": Spec("str", choices=RUBRIC_NAMES),
    "rubrics": Spec("list", item=Spec("str", choices=RUBRIC_NAMES), min_items=1),
    "judge_orders": Spec("list", item=Spec("str", choices=ORDER_NAMES), min_items=1),
    "judge_early_stop": Spec("bool"),
    "regenerate_suite": Spec("bool"),
    "alpha": Spec("number", above=0.0, high=1.0),
    "tfidf_sweep": _SWEEP,
    "embedding_sweep": _SWEEP,
    "stability_pairs": _int(1, MAX_PAIRS),
    "n_jobs": _int(-1, 1024),
    "parallel_backend": Spec("str", nullable=True, choices=PARALLEL_BACKENDS),
    # a Dask scheduler address (tcp://host:8786); its form and its backend: mechaudit.book.preflight
    "scheduler": Spec("str", nullable=True, nonempty=True),
}

#: names a chapter defines with a meaning of its own (looked up before ``SHARED``)
CHAPTERS: dict[str, dict[str, Spec]] = {
    "01_problem": {
        "n_openings": _int(1, 1000), "n_runs": _int(2, 1000), "rerun_noise": _share(), "critique_change": _share(),
        "initiator_change": _share(), "instance_id": Spec("str", nullable=True, nonempty=True),
    },
    "02_critique_depth": {"contrast_p_find": _share(), "interval_level": Spec("number", above=0.0, high=1.0),
                          "compare_runs_per_depth": _int(2, MAX_RUNS)},
    "02b_validity": {"n_replications": _int(1, MAX_REPLICATIONS), "n_null_replications": _int(1, MAX_REPLICATIONS),
                     "n_boot": _int(1, MAX_REPLICATIONS)},
    "02c_robustness": {
        "robust_axes": Spec("mapping"), "alternatives_axes": Spec("mapping"),
        "truth_runs_per_depth": _int(3, MAX_RUNS), "truth_seeds": _int(1, 100), "diminishing_ratio": _share(),
        "z": Spec("number", above=0.0), "pick_quantiles": _numbers(low=0.0, high=1.0),
        "n_pools": _int(1, 1000),
        # each design: (instances, runs per depth)
        "power_designs": Spec("list", item=Spec("list", items=(_int(1, 1000), _int(2, MAX_RUNS))), min_items=1),
        "power_ladder": Spec("list", item=_int(2, MAX_RUNS), min_items=1),
        "power_level": Spec("number", above=0.0, high=1.0),
        "n_power_replications": _int(1, MAX_REPLICATIONS), "pool_runs_per_depth": _int(1, MAX_RUNS),
        "n_resamples": _int(1, MAX_RESAMPLES),
    },
    "08_tau_calibration": {
        "n_patterns": _int(1, 1000), "papers_per_pattern": _int(2, 1000), "review_noise": Spec("number", low=0.0),
        "true_taus": _numbers(above=0.0), "n_pairs": _int(1, MAX_PAIRS), "n_reps": _int(1, MAX_REPLICATIONS),
        "role_taus": Spec("mapping"), "tie_rate": _share(), "tie_width": Spec("number", low=0.0),
        "n_stories": _int(1, MAX_PAIRS),
        "weight_scales": _numbers(above=0.0), "loss_thresholds": _numbers(low=0.0),
        "heavy_tie_rates": _numbers(low=0.0, high=1.0), "heavy_tie_width": Spec("number", low=0.0),
        "perception_noises": _numbers(low=0.0), "misspec_reps": _int(1, MAX_REPLICATIONS),
        "llm_pairs": _int(1, MAX_PAIRS),
        "densify_mode": Spec("str", choices=DENSIFY_NAMES),
    },
}


def spec_for(stem: str | None, name: str) -> Spec | None:
    """The declaration of parameter ``name`` of chapter ``stem`` (None if it has none: a notebook
    outside the book, checked against its default's type only)."""
    if stem is not None and name in CHAPTERS.get(stem, {}):
        return CHAPTERS[stem][name]
    return SHARED.get(name)


def _is_type(value: Any, kind: str) -> bool:
    if kind == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    return {"int": isinstance(value, numbers.Integral), "number": isinstance(value, numbers.Real),
            "str": isinstance(value, str), "list": isinstance(value, list),
            "mapping": isinstance(value, dict)}[kind]


def describe(spec: Spec) -> str:
    """What a value of ``spec`` is, in words (``"a list of strings"``, ``"a number > 0"``)."""
    words = TYPE_WORDS[spec.type]
    if spec.type == "list" and spec.item is not None:
        words += " of " + TYPE_WORDS[spec.item.type].split(" ", 1)[1] + "s"
    return words


def problem(value: Any, spec: Spec, default: Any = None) -> str | None:
    """Why ``value`` does not fit ``spec`` (one clause, no field name), or None if it fits;
    ``default`` (the notebook's value) is quoted when the type is wrong."""
    if value is None:
        return None if spec.nullable else f"must be {describe(spec)}, got None"
    if not _is_type(value, spec.type):
        like = "" if default is None else f" like the default {default!r}"
        return f"must be {describe(spec)}{like}, got {value!r}"
    if spec.type in ("int", "number"):
        return _range_problem(value, spec)
    if spec.type == "str":
        if spec.choices is not None and value not in spec.choices:
            return f"must be one of {', '.join(map(repr, spec.choices))}, got {value!r}{_close(value, spec.choices)}"
        if spec.nonempty and not value.strip():
            return "must not be empty"
        return None
    if spec.type == "list":
        return _list_problem(value, spec)
    return None


def _range_problem(value: float, spec: Spec) -> str | None:
    what = "an integer" if spec.type == "int" else "a number"
    if math.isnan(value) or (spec.above is not None and not math.isfinite(value)):
        return f"must be a finite {what.split(' ', 1)[1]}, got {value!r}"
    if spec.above is not None and not (value > spec.above and (spec.high is None or value <= spec.high)):
        upper = "" if spec.high is None else f" and <= {spec.high:g}"
        return f"must be {what} > {spec.above:g}{upper}, got {value!r}"
    low = spec.low if spec.above is None else None
    if (low is not None and value < low) or (spec.high is not None and value > spec.high):
        lo = "-inf" if low is None else _bound(low)
        hi = "inf" if spec.high is None else _bound(spec.high)
        return f"must be {what} in [{lo}, {hi}], got {value!r}"
    return None


def _bound(x: float) -> str:
    """A range's end as written in a message: whole numbers in full (100000, not 1e+05)."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _list_problem(value: list, spec: Spec) -> str | None:
    if spec.items is not None:
        if len(value) != len(spec.items):
            return f"must be a list of exactly {len(spec.items)} items, got {value!r}"
        for i, (item, item_spec) in enumerate(zip(value, spec.items)):
            why = problem(item, item_spec)
            if why is not None:
                return f"item {i}: {why}"
        return None
    if len(value) < spec.min_items:
        return f"must be a list of at least {spec.min_items} item{'s' if spec.min_items > 1 else ''}, got {value!r}"
    if spec.item is None:
        return None
    for i, item in enumerate(value):
        if not _is_type(item, spec.item.type):
            return f"must be {describe(spec)}, got {item!r} at position {i}"
        why = problem(item, spec.item)
        if why is not None:
            return f"item {i}: {why}"
    return None


def _close(value: str, choices: tuple[str, ...]) -> str:
    import difflib

    near = difflib.get_close_matches(value, choices, n=1)
    return f"; did you mean {near[0]!r}?" if near else ""


__all__ = ["Spec", "SHARED", "CHAPTERS", "spec_for", "problem", "describe", "RULE_NAMES", "RUBRIC_NAMES"]
