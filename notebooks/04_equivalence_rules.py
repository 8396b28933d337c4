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
json_retries = 2
max_usd = None
llm_batch = False
out_dir = None

# %% tags=["remove-cell"]
from mechaudit.llm import usage as llm_usage

llm_usage.begin(max_usd=max_usd, batch=llm_batch)  # this chapter's LLM budget and batch mode

# %%
import matplotlib.pyplot as plt
import pandas as pd

from mechaudit.backends import Backend
from mechaudit.glue import glue
from mechaudit.outputs import save
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
    show_excluded,
)

pd.set_option("display.precision", 3)
bench = load_benchmark(data_dir)
design = load_design(PARAMS_DIR / design_file, instances=[i.id for i in bench.instances])
delivery = deliver(bench, design, backend, simulator=load_simulator_params(PARAMS_DIR / simulator_file),
                   seed=seed, generator_model=generator_model, cache_dir=cache_dir, json_retries=json_retries)
runs, client = delivery.runs, delivery.client
if Backend.parse(backend).is_llm:  # hypotheses dropped because a reply stayed invalid after repairs
    show_excluded(delivery.excluded, json_retries)
rules = rules_for_backend(rules, backend)
rule_objects = build_rules(rules, backend=backend, tfidf_threshold=tfidf_threshold,
                           embedding_threshold=embedding_threshold, embedding_model=embedding_model,
                           judge_model=judge_model, client=client, instances=bench.instances)
div = delivered_diversity(runs, rule_objects)
print(f"{len(runs)} runs, {div.groupby('rule').n_hypotheses.sum().iloc[0]} delivered hypotheses, "
      f"rules: {', '.join(rules)}")
openings = sorted({len(bench.openings(i.id)) for i in bench.instances})
glue("ch04_openings", openings[0] if len(openings) == 1 else f"{openings[0]}-{openings[-1]}")
glue("ch04_hypotheses_per_run", div.groupby("rule").n_hypotheses.mean().iloc[0], digits=2)

# %% [markdown]
# ## Cluster counts per instance and depth
#
# Mean number of complete-linkage groups per delivered set (a run delivers
# {glue:text}`ch04_hypotheses_per_run` hypotheses on average, grown from {glue:text}`ch04_openings`
# opening hypotheses), by instance, depth and rule:

# %%
save("diversity_complete", diversity_table(div, "complete").round(2), out_dir)

# %% [markdown]
# The same with connected components (transitive grouping):

# %%
save("diversity_components", diversity_table(div, "components").round(2), out_dir)

# %%
fig = cluster_count_figure(div, backend=backend, value="complete", ylabel="groups per run (complete linkage)")
save("groups_per_run", fig, out_dir)
plt.show()

# %% [markdown]
# ## How much the rule and the grouping move the count
#
# Averaged over all runs: delivered hypotheses per run, groups under each grouping and the Vendi score
# (for similarity rules computed from the cosine matrix; for yes/no rules from the complete-linkage
# groups).

# %%
summary = div.groupby("rule", sort=False)[["n_hypotheses", "components", "complete", "vendi"]].mean()
for rule, row in summary.iterrows():
    glue(f"ch04_{rule}_complete", row["complete"], digits=2)
    glue(f"ch04_{rule}_components", row["components"], digits=2)
save("mean_diversity", summary.round(2), out_dir)

# %%
fig = cluster_count_figure(div, backend=backend, value="vendi", ylabel="Vendi score per run")
save("vendi_per_run", fig, out_dir)
plt.show()

# %% [markdown]
# The reference judge coincides with the mechanism key on simulator runs (their lines overlap). That
# is close to true by construction, a check of the code and not a finding: the simulator replaces
# chain steps but never adds or drops one, and for chains of equal length the full rubric (same
# initiating event, one chain an ordered subsequence of the other) reduces to equal step ids, which is
# the key. Chains grown from different openings can differ in length, but no two opening chains of an
# instance are nested, so the two rules could only part if a replaced step happened to make one chain
# a subsequence of another; the equal counts show it did not happen in this run.
#
# In this run the mechanism key finds {glue:text}`ch04_mechanism_key_complete` distinct mechanisms
# per run on average. TF-IDF at its threshold counts {glue:text}`ch04_tfidf_complete` groups with
# complete linkage and {glue:text}`ch04_tfidf_components` with connected components; embeddings count
# {glue:text}`ch04_embedding_complete` and {glue:text}`ch04_embedding_components`. A lenient text rule
# lumps hypotheses that share vocabulary around the same finding (few groups), while a strict one
# splits rewordings of one mechanism (many groups); which way a text rule errs depends on its
# threshold (see "Try it"). Components never give more groups than complete linkage (true by
# definition: a complete-linkage group lies inside one component), and the gap between the two shows
# how far a rule's verdicts are from transitive.

# %%
save("paper_comparison", compare([
    ("sensitivity.tfidf_threshold", tfidf_threshold, "TF-IDF threshold used here"),
    ("sensitivity.embedding_threshold", embedding_threshold,
     "embedding threshold used here (model all-MiniLM-L6-v2 unless embedding_model is set)"),
    ("models.embedding", "all-MiniLM-L6-v2" if embedding_model is None else embedding_model),
]), out_dir)

# %% [markdown]
# ## LLM usage
#
# What this run asked of the LLM API: calls sent (`api`, or `batch` at the batch discount) and
# requests answered from the response cache (`cache`), tokens, and the cost estimated from
# `params/prices.yaml`. With the offline backend no LLM is called.

# %%
llm_usage.report(backend)

# %% [markdown]
# ## Try it
#
# - `tfidf_threshold = 0.5`: TF-IDF splits more; see its cluster count rise towards or past the truth.
# - `embedding_threshold = 0.9`: the same for embeddings.
# - `rules = ["mechanism_key", "reference"]` runs in a second; add `"llm"` with `backend = "replay"`
#   to group with the LLM judge.
# - `simulator_file = "simulator_null.yaml"`: critique changes no mechanism, so the true count no
#   longer changes with depth.
