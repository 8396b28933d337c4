"""mechaudit: audit pairwise mechanism-equivalence judgments and blind tau-calibrated scoring.

The names a researcher needs are available from the package itself (``mechaudit.load_benchmark``,
``mechaudit.TfidfRule``, ...), documented in their home modules and imported on first use, so
``import mechaudit`` loads neither the models (torch) nor pandas.
"""

from __future__ import annotations

import importlib
from typing import Any

from mechaudit.deprecation import install_moved_modules

__version__ = "0.1.0"

install_moved_modules()  # the old paths of modules that moved into packages import for one release

#: Public name -> home module. The book's API reference lists the same names.
_EXPORTS: dict[str, str] = {name: home for home, names in (
    # data model and loaders
    ("mechaudit.schema", ("DataError", "Step", "Hypothesis", "Instance", "Vocabulary", "Benchmark",
                          "load_benchmark", "load_hypotheses", "load_instances", "load_vocabulary", "hypothesis_text",
                          "mechanism_key")),
    # controlled perturbations
    ("mechaudit.perturb", ("KINDS", "PerturbationError", "make_suite", "load_suite", "write_suite", "suite_path",
                           "available_suites")),
    ("mechaudit.reworded", ("load_rewrites", "reworded_suite")),
    # equivalence rules and their audit tables
    ("mechaudit.rules", ("Rule", "TfidfRule", "EmbeddingRule", "ReferenceJudge", "LLMJudge")),
    ("mechaudit.rules.audit", ("decisions_table", "percent_different")),
    # run divergence, diversity, agreement
    ("mechaudit.divergence", ("run_divergence", "divergence_matrix", "extra_divergence", "permutation_test",
                              "PermutationResult")),
    ("mechaudit.diversity", ("group", "n_groups", "vendi_score")),
    ("mechaudit.agreement", ("raw_agreement", "cohen_kappa", "flip_rate", "agreement_table")),
    # blind tau-calibrated scoring
    ("mechaudit.tau", ("infer_score", "fit_tau", "score10_from_review_stats")),
    # the proposer/critic workflow simulator
    ("mechaudit.workflow", ("simulate", "load_design")),
    # backends
    ("mechaudit.backends", ("Backend",)),
    # one error style: expected failures raise MechauditError; warn prints a one-line warning
    ("mechaudit.errors", ("MechauditError", "warn")),
) for name in names}

#: Modules and subpackages reachable as attributes (``mechaudit.rules``) without an explicit import.
_SUBMODULES = frozenset({
    "agreement", "backends", "book", "divergence", "diversity", "engagement", "errors", "llm", "paper", "paths",
    "perturb", "plots", "render", "report", "reworded", "rules", "schema", "tau", "workflow",
})

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    """Import a public name (or a submodule) on first access and cache it on the package."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | _SUBMODULES)
