"""mechaudit: audit pairwise mechanism-equivalence judgments and blind tau-calibrated scoring.

The names a researcher needs are available from the package itself (``mechaudit.load_benchmark``,
``mechaudit.TfidfRule``, ``mechaudit.permutation_test``, ...); each is defined in, and documented
with, its home module (``mechaudit.schema``, ``mechaudit.rules``, ...). They are imported on first
use, so ``import mechaudit`` stays cheap: it imports neither the models (torch,
sentence-transformers) nor pandas.
"""

from __future__ import annotations

import importlib
from typing import Any

from mechaudit.deprecation import install_moved_modules

__version__ = "0.1.0"

install_moved_modules()  # the old paths of modules that moved into packages import for one release

#: Public name -> home module. The book's API reference lists the same names.
_EXPORTS: dict[str, str] = {
    # data model and loaders
    "DataError": "mechaudit.schema",
    "Step": "mechaudit.schema",
    "Hypothesis": "mechaudit.schema",
    "Instance": "mechaudit.schema",
    "Vocabulary": "mechaudit.schema",
    "Benchmark": "mechaudit.schema",
    "load_benchmark": "mechaudit.schema",
    "load_hypotheses": "mechaudit.schema",
    "load_instances": "mechaudit.schema",
    "load_vocabulary": "mechaudit.schema",
    "hypothesis_text": "mechaudit.schema",
    "mechanism_key": "mechaudit.schema",
    # controlled perturbations
    "KINDS": "mechaudit.perturb",
    "PerturbationError": "mechaudit.perturb",
    "make_suite": "mechaudit.perturb",
    "load_suite": "mechaudit.perturb",
    "write_suite": "mechaudit.perturb",
    "suite_path": "mechaudit.perturb",
    "available_suites": "mechaudit.perturb",
    "load_rewrites": "mechaudit.reworded",
    "reworded_suite": "mechaudit.reworded",
    # equivalence rules and their audit tables
    "Rule": "mechaudit.rules",
    "TfidfRule": "mechaudit.rules",
    "EmbeddingRule": "mechaudit.rules",
    "ReferenceJudge": "mechaudit.rules",
    "LLMJudge": "mechaudit.rules",
    "decisions_table": "mechaudit.rules.audit",
    "percent_different": "mechaudit.rules.audit",
    # run divergence, diversity, agreement
    "run_divergence": "mechaudit.divergence",
    "divergence_matrix": "mechaudit.divergence",
    "extra_divergence": "mechaudit.divergence",
    "permutation_test": "mechaudit.divergence",
    "PermutationResult": "mechaudit.divergence",
    "group": "mechaudit.diversity",
    "n_groups": "mechaudit.diversity",
    "vendi_score": "mechaudit.diversity",
    "raw_agreement": "mechaudit.agreement",
    "cohen_kappa": "mechaudit.agreement",
    "flip_rate": "mechaudit.agreement",
    "agreement_table": "mechaudit.agreement",
    # blind tau-calibrated scoring
    "infer_score": "mechaudit.tau",
    "fit_tau": "mechaudit.tau",
    "score10_from_review_stats": "mechaudit.tau",
    # the proposer/critic workflow simulator
    "simulate": "mechaudit.workflow",
    "load_design": "mechaudit.workflow",
    # backends
    "Backend": "mechaudit.backends",
    # one error style: expected failures raise MechauditError; warn prints a one-line warning
    "MechauditError": "mechaudit.errors",
    "warn": "mechaudit.errors",
}

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
