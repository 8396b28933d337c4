"""The proposer/critic workflow (anthropic/replay) and its offline simulator (reference).

See ``mechaudit.workflow.simulator`` for the documented stochastic model and
``mechaudit.workflow.llm`` for the real workflow's prompts and steps.
"""

from mechaudit.workflow.delivery import (
    Delivery,
    WorkflowSetup,
    deliver,
    excluded_note,
    report_dropped,
    show_excluded,
    workflow_setup,
)
from mechaudit.workflow.depth import (
    InstanceMatrix,
    MechanismKeyRule,  # noqa: F401 - re-exported for the chapters; documented in its home, mechaudit.rules
    by_instance,
    counts,
    depth_table,
    instance_matrices,
    key_matrix,
    per_instance_effects,
    rule_tables,
)
from mechaudit.workflow.design import Design, load_design
from mechaudit.workflow.measured import delivered_diversity, diversity_table, set_matrices
from mechaudit.workflow.records import (
    LABELS,
    Demand,
    Exclusion,
    Reply,
    Revision,
    Run,
    demands_frame,
    excluded_frame,
    run_id,
)
from mechaudit.workflow.rulesets import RULE_NAMES, build_rules, rules_for
from mechaudit.workflow.simulator import (
    SimulatorParams,
    instance_models,
    load_simulator_params,
    null_params,
    simulate,
    simulate_run,
)
from mechaudit.workflow.validity import population_truth, replicate, replication_seed, validity_summary

__all__ = [
    "Delivery", "deliver", "WorkflowSetup", "workflow_setup", "report_dropped",
    "Exclusion", "excluded_frame", "excluded_note", "show_excluded",
    "RULE_NAMES", "LABELS", "Demand", "Design", "InstanceMatrix", "Reply",
    "Revision", "Run", "SimulatorParams", "by_instance", "counts",
    "demands_frame", "depth_table", "instance_matrices", "instance_models", "key_matrix",
    "load_design", "load_simulator_params", "null_params", "per_instance_effects", "rule_tables",
    "run_id", "simulate", "simulate_run", "build_rules", "rules_for", "delivered_diversity",
    "diversity_table", "set_matrices", "population_truth", "replicate", "replication_seed",
    "validity_summary",
]
