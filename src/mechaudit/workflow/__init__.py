"""The proposer/critic workflow (anthropic/replay) and its offline simulator (reference).

The model is documented in ``mechaudit.workflow.simulator``, the LLM workflow in ``...agents``. The
names below are imported on first use, so ``mechaudit execute`` reads design and simulator files
without loading the rules, the LLM layer and the analyses.
"""

from __future__ import annotations

import importlib
from typing import Any

#: public name -> home module
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(("Delivery", "WorkflowSetup", "deliver", "excluded_note", "report_dropped", "show_excluded",
                     "workflow_setup"), "delivery"),
    **dict.fromkeys(("InstanceMatrix", "by_instance", "counts", "depth_table", "instance_matrices", "key_matrix",
                     "per_instance_effects", "rule_tables"), "depth"),
    **dict.fromkeys(("Design", "load_design"), "design"),
    **dict.fromkeys(("delivered_diversity", "diversity_table", "set_matrices"), "measured"),
    **dict.fromkeys(("LABELS", "Demand", "Exclusion", "Reply", "Revision", "Run", "demands_frame", "excluded_frame",
                     "run_id"), "records"),
    **dict.fromkeys(("RULE_NAMES", "build_rules", "rules_for"), "rulesets"),
    **dict.fromkeys(("SimulatorParams", "instance_models", "load_simulator_params", "null_params", "simulate",
                     "simulate_run"), "simulator"),
    **dict.fromkeys(("population_truth", "replicate", "replication_seed", "validity_summary"), "validity"),
}
#: re-exported for the chapters, documented in its home (``mechaudit.rules``)
_ALIASES = {"MechanismKeyRule": "depth"}

__all__ = list(_EXPORTS)  # the API page lists them in this order, by home module


def __getattr__(name: str) -> Any:
    """Import a public name from its home module on first access and keep it on the package."""
    home = _EXPORTS.get(name) or _ALIASES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS) | set(_ALIASES))
