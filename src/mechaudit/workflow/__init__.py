"""The proposer/critic workflow (anthropic/replay) and its offline simulator (reference).

The model is documented in ``mechaudit.workflow.simulator``, the LLM workflow in ``...agents``. The
names below are imported on first use, so ``mechaudit execute`` reads design and simulator files
without loading the rules, the LLM layer and the analyses.
"""

from __future__ import annotations

import lazy_loader

#: home module -> its public names, imported on first use (SPEC 1's lazy_loader)
__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs={
    "delivery": ("Delivery", "WorkflowSetup", "deliver", "excluded_note", "report_dropped", "show_excluded",
                 "workflow_setup"),
    "depth": ("InstanceMatrix", "by_instance", "counts", "depth_table", "instance_matrices", "key_matrix",
              "per_instance_effects", "rule_tables", "MechanismKeyRule"),
    "design": ("Design", "load_design"),
    "measured": ("delivered_diversity", "diversity_table", "set_matrices"),
    "records": ("LABELS", "Demand", "Exclusion", "Reply", "Revision", "Run", "demands_frame", "excluded_frame",
                "run_id"),
    "rulesets": ("RULE_NAMES", "build_rules", "rules_for"),
    "simulator": ("SimulatorParams", "instance_models", "load_simulator_params", "null_params", "simulate",
                  "simulate_run"),
    "validity": ("population_truth", "replicate", "replication_seed", "validity_summary"),
})
__all__.remove("MechanismKeyRule")  # re-exported for the chapters, documented in its home (mechaudit.rules)
