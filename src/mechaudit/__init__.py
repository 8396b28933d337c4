"""mechaudit: audit pairwise mechanism-equivalence judgments and blind tau-calibrated scoring.

The names a researcher needs are available from the package itself (``mechaudit.load_benchmark``,
``mechaudit.TfidfRule``, ...), documented in their home modules and imported on first use, so
``import mechaudit`` loads neither the models (torch) nor pandas.
"""

from __future__ import annotations

import lazy_loader

from mechaudit.deprecation import install_moved_modules

__version__ = "0.1.0"

install_moved_modules()  # the old paths of modules that moved into packages import for one release

#: Home module -> its public names, imported on first use (SPEC 1's lazy_loader). The book's API
#: reference lists the same names.
_HOMES = dict((
    # data model and loaders
    ("schema", ("DataError", "Step", "Hypothesis", "Instance", "Vocabulary", "Benchmark", "load_benchmark",
                "load_hypotheses", "load_instances", "load_vocabulary", "hypothesis_text", "mechanism_key")),
    # controlled perturbations
    ("perturb", ("KINDS", "PerturbationError", "make_suite", "load_suite", "write_suite", "suite_path",
                 "available_suites")),
    ("reworded", ("load_rewrites", "reworded_suite")),
    # equivalence rules and their audit tables
    ("rules", ("Rule", "TfidfRule", "EmbeddingRule", "ReferenceJudge", "LLMJudge")),
    ("rules.audit", ("decisions_table", "percent_different")),
    # run divergence, diversity, agreement
    ("divergence", ("run_divergence", "divergence_matrix", "extra_divergence", "permutation_test",
                    "PermutationResult")),
    ("diversity", ("group", "n_groups", "vendi_score")),
    ("agreement", ("raw_agreement", "cohen_kappa", "flip_rate", "agreement_table")),
    # blind tau-calibrated scoring
    ("tau", ("infer_score", "fit_tau", "score10_from_review_stats")),
    # the proposer/critic workflow simulator
    ("workflow", ("simulate", "load_design")),
    # backends
    ("backends", ("Backend",)),
    # one error style: expected failures raise MechauditError; warn prints a one-line warning
    ("errors", ("MechauditError", "warn")),
))

#: Modules and subpackages reachable as attributes (``mechaudit.rules``) without an explicit import.
_SUBMODULES = ["agreement", "backends", "book", "divergence", "diversity", "engagement", "errors", "llm", "paper",
               "paths", "perturb", "plots", "render", "report", "reworded", "rules", "schema", "tau", "workflow"]
__getattr__, __dir__, _ = lazy_loader.attach(__name__, submodules=_SUBMODULES, submod_attrs=_HOMES)
#: Public name -> home module
_EXPORTS: dict[str, str] = {name: f"{__name__}.{home}" for home, names in _HOMES.items() for name in names}
__all__ = ["__version__", *_EXPORTS]
