# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Measured diversity depends on the equivalence rule
#
# How many distinct mechanisms does a run deliver? The paper {cite}`byun2026auditing` answers by
# grouping the delivered hypotheses with an equivalence rule and counting the groups, and shows that the
# count is a measurement choice: TF-IDF similarity {cite}`pedregosa2011sklearn`, dense embeddings
# {cite}`reimers2019sbert` and an LLM judge group the same hypotheses differently.
#
# This chapter measures each run's delivered set under several rules, with two ways of turning
# pairwise verdicts into groups (`mechaudit.diversity.group`): *connected components* of the "same"
# graph (sameness taken as transitive: the most lumping reading) and *complete linkage* (a group only
# when all members are pairwise the same: the most splitting reading), plus the Vendi score
# {cite}`friedman2023vendi`, a continuous diversity. With `backend = "reference"` the runs are
# **simulator** runs, and `mechanism_key` (distinct true mechanisms) is the ground truth.

# %% tags=["parameters"]
backend = "reference"
seed = 0
data_dir = None
design_file = "paper.yaml"
simulator_file = "simulator.yaml"
rules = ["mechanism_key", "reference", "tfidf", "embedding"]
tfidf_threshold = 0.25
embedding_threshold = 0.77
embedding_model = None
generator_model = "claude-sonnet-4-6"
judge_model = "claude-opus-4-6"
cache_dir = None

# %%
import matplotlib.pyplot as plt
import pandas as pd

from mechaudit.paper import compare
from mechaudit.paths import PARAMS_DIR
from mechaudit.plots.workflow import cluster_count_figure
from mechaudit.schema import load_benchmark
from mechaudit.workflow import (
    build_rules,
    deliver,
    delivered_diversity,
    diversity_table,
    load_design,
    load_simulator_params,
    rules_for_backend,
)

pd.set_option("display.precision", 3)
bench = load_benchmark(data_dir)
design = load_design(PARAMS_DIR / design_file, instances=[i.id for i in bench.instances])
delivery = deliver(bench, design, backend, simulator=load_simulator_params(PARAMS_DIR / simulator_file),
                   seed=seed, generator_model=generator_model, cache_dir=cache_dir)
runs, client = delivery.runs, delivery.client
rules = rules_for_backend(rules, backend)
rule_objects = build_rules(rules, backend=backend, tfidf_threshold=tfidf_threshold,
                           embedding_threshold=embedding_threshold, embedding_model=embedding_model,
                           judge_model=judge_model, client=client, instances=bench.instances)
div = delivered_diversity(runs, rule_objects)
print(f"{len(runs)} runs, {div.groupby('rule').n_hypotheses.sum().iloc[0]} delivered hypotheses, rules: {', '.join(rules)}")

# %% [markdown]
# ## Cluster counts per instance and depth
#
# Mean number of complete-linkage groups per delivered set (each run delivers about 7.6 hypotheses
# that grew from 5 opening hypotheses), by instance, depth and rule:

# %%
diversity_table(div, "complete").round(2)

# %% [markdown]
# The same with connected components (transitive grouping):

# %%
diversity_table(div, "components").round(2)

# %%
fig = cluster_count_figure(div, backend=backend, value="complete", ylabel="groups per run (complete linkage)")
plt.show()

# %% [markdown]
# ## How much the rule and the grouping move the count
#
# Averaged over all runs: delivered hypotheses per run, groups under each grouping and the Vendi score
# (for similarity rules computed from the cosine matrix; for yes/no rules from the complete-linkage
# groups).

# %%
summary = div.groupby("rule", sort=False)[["n_hypotheses", "components", "complete", "vendi"]].mean()
summary.round(2)

# %%
fig = cluster_count_figure(div, backend=backend, value="vendi", ylabel="Vendi score per run")
plt.show()

# %% [markdown]
# The reference judge coincides with the mechanism key on simulator runs (their lines overlap): the
# simulator never adds or drops detail, so the full rubric reduces to the key. A lenient text rule
# lumps hypotheses that share vocabulary around the same finding (few groups), while a strict one
# splits rewordings of one mechanism (many groups); which way a text rule errs depends on its
# threshold. Components never give more groups than complete linkage, and the gap between the two
# shows how far a rule's verdicts are from transitive.

# %%
compare([
    ("sensitivity.tfidf_threshold", tfidf_threshold, "TF-IDF threshold used here"),
    ("sensitivity.embedding_threshold", embedding_threshold,
     "embedding threshold used here (model all-MiniLM-L6-v2 unless embedding_model is set)"),
    ("models.embedding", "all-MiniLM-L6-v2" if embedding_model is None else embedding_model),
])

# %% [markdown]
# ## Try it
#
# - `tfidf_threshold = 0.5`: TF-IDF splits more; see its cluster count rise towards or past the truth.
# - `embedding_threshold = 0.9`: the same for embeddings.
# - `rules = ["mechanism_key", "reference"]` runs in a second; add `"llm"` with `backend = "replay"`
#   to group with the LLM judge.
# - `simulator_file = "simulator_null.yaml"`: critique changes no mechanism, so the true count no
#   longer changes with depth.
