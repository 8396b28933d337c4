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
# # Validity of the critique-depth analysis: bias and test size
#
# The paper {cite}`byun2026auditing` could not check its analysis against a known truth. The workflow
# **simulator** can: its mechanisms are known, so the true extra divergence of each depth comparison
# is known, and many independent replications of the paper's 60-run design show
#
# - the **bias** of each equivalence rule's estimate: mean estimate minus the truth, over
#   replications of the default simulator;
# - the **size** of the exact permutation test {cite}`good2005permutation`: the share of replications
#   with p <= alpha under the **null** simulator, which is identical except that no reply ever changes
#   a chain id (the true extra divergence is then zero). Its Monte Carlo standard error is
#   sqrt(r(1 - r)/n) for a rate r over n replications.
#
# Every number in this chapter comes from the simulator (backend reference); none is an LLM result.
# The mechanism-key rule is fast enough for hundreds of replications; TF-IDF, which needs a
# vectoriser per instance and replication, is run on fewer. The reference judge (full rubric) agrees
# with the mechanism key on every simulated pair (the simulator replaces steps but never adds
# detail), so it is not repeated here; embeddings are too slow for a replication study on this machine.

# %% tags=["parameters"]
backend = "reference"
seed = 0
data_dir = None
design_file = "paper.yaml"
simulator_file = "simulator.yaml"
null_simulator_file = "simulator_null.yaml"
truth_runs_per_depth = 100
n_replications = 100
n_null_replications = 300
n_text_replications = 20
tfidf_threshold = 0.25
alpha = 0.05

# %%
import matplotlib.pyplot as plt
import pandas as pd

from mechaudit.paths import PARAMS_DIR
from mechaudit.plots.workflow import validity_figure
from mechaudit.schema import load_benchmark
from mechaudit.workflow import (
    build_rules,
    load_design,
    load_simulator_params,
    population_truth,
    replicate,
    validity_summary,
)

if backend != "reference":
    raise ValueError("the validity study needs the simulator's ground truth: backend must be 'reference'")
pd.set_option("display.precision", 3)
bench = load_benchmark(data_dir)
design = load_design(PARAMS_DIR / design_file, instances=[i.id for i in bench.instances])
sim_default = load_simulator_params(PARAMS_DIR / simulator_file)
sim_null = load_simulator_params(PARAMS_DIR / null_simulator_file)
truth = population_truth(bench, design, sim_default, runs_per_depth=truth_runs_per_depth, seed=seed)
truth.round(2)

# %% [markdown]
# The truth above is the instance-averaged population value under the mechanism key, estimated from one
# large simulated design with `truth_runs_per_depth` runs per depth and instance.

# %%
tfidf = build_rules(["tfidf"], tfidf_threshold=tfidf_threshold)["tfidf"]
reps = pd.concat([
    replicate(bench, design, sim_default, {"mechanism_key": None}, n_reps=n_replications, seed=seed + 1),
    replicate(bench, design, sim_default, {"tfidf": tfidf.same}, n_reps=n_text_replications, seed=seed + 1),
], ignore_index=True)
null_reps = pd.concat([
    replicate(bench, design, sim_null, {"mechanism_key": None}, n_reps=n_null_replications, seed=seed + 2),
    replicate(bench, design, sim_null, {"tfidf": tfidf.same}, n_reps=n_text_replications, seed=seed + 2),
], ignore_index=True)
bias = validity_summary(reps, truth, alpha=alpha)
size = validity_summary(null_reps, {c: 0.0 for c in bias.comparison.unique()}, alpha=alpha)

# %% [markdown]
# ## Bias against the truth (default simulator)
#
# `rejection_rate` here is the power of the test at alpha for the simulated effect.

# %%
bias[["rule", "comparison", "n_reps", "truth_pp", "mean_pp", "bias_pp", "bias_se_pp", "rmse_pp",
      "rejection_rate"]].round(3)

# %% [markdown]
# ## Size of the test (null simulator)

# %%
size[["rule", "comparison", "n_reps", "mean_pp", "rejection_rate", "rejection_se"]].round(3)

# %%
fig = validity_figure(bias, size, backend="reference (simulator replications)", alpha=alpha)
plt.show()

# %% [markdown]
# The mechanism-key estimate is unbiased up to Monte Carlo error (the all-pairs extra divergence is a
# difference of U-statistics), and under the null its rejection rate stays at or below alpha: the exact
# test cannot exceed its level when the runs of two depths are exchangeable, and it is conservative
# here because many splits give tied statistics. TF-IDF estimates a different quantity: it reacts to
# wording (aliases, hedges added after concessions) and only partly to replaced steps, so its bias
# against the mechanism truth is large, and under the null simulator, where critique still rewrites
# wording, it can reject: it measures a real change of text, not of mechanism.
#
# ## Try it
#
# - `n_null_replications = 1000` narrows the Monte Carlo error of the size (about 0.007 at 0.05).
# - `alpha = 0.01` checks the size at a stricter level.
# - `tfidf_threshold = 0.5` changes what TF-IDF calls the same, and with it its bias.
