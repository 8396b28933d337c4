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
# is known, and many independent replications of the paper's {glue:text}`ch02b_n_runs`-run design show
#
# - the **bias** of each equivalence rule's estimate: mean estimate minus the truth, over
#   replications of the default simulator;
# - the **size** of the exact permutation test {cite}`good2005permutation`: the share of replications
#   with p <= alpha under the **null** simulator, which is identical except that no reply ever changes
#   a chain id (the true extra divergence is then zero). Its Monte Carlo standard error is
#   sqrt(r(1 - r)/n) for a rate r over n replications.
#
# Every number in this chapter comes from the simulator (backend reference); none is an LLM result.
# The mechanism-key rule is fast enough for hundreds of replications ({glue:text}`ch02b_n_null_reps`
# under the null, {glue:text}`ch02b_n_reps` under the default simulator); TF-IDF, which needs a
# vectoriser per instance and replication, is run on {glue:text}`ch02b_n_text_reps`. The reference
# judge (full rubric) agrees with the mechanism key on every simulated pair (the simulator replaces
# steps but never adds detail), so it is not repeated here; embeddings are too slow for a
# replication study on this machine.

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
out_dir = None

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mechaudit.backends import Backend
from mechaudit.glue import glue
from mechaudit.outputs import save
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

if Backend.parse(backend).is_llm:
    print(f"backend {backend!r}: this chapter is simulation-only (it needs the simulator's ground truth), "
          "so it runs its offline part with the simulator and sends no LLM request.")
pd.set_option("display.precision", 3)
bench = load_benchmark(data_dir)
design = load_design(PARAMS_DIR / design_file, instances=[i.id for i in bench.instances])
sim_default = load_simulator_params(PARAMS_DIR / simulator_file)
sim_null = load_simulator_params(PARAMS_DIR / null_simulator_file)
truth = population_truth(bench, design, sim_default, runs_per_depth=truth_runs_per_depth, seed=seed)
glue("ch02b_n_runs", design.n_runs)
glue("ch02b_n_reps", n_replications)
glue("ch02b_n_null_reps", n_null_replications)
glue("ch02b_n_text_reps", n_text_replications)
save("truth", truth.round(2), out_dir)

# %% [markdown]
# The truth above is the instance-averaged population value under the mechanism key, estimated from one
# large simulated design with `truth_runs_per_depth` runs per depth and instance; `max_extra_pp` is the
# largest extra divergence the true same-depth divergence allows (one minus the pooled same-depth
# divergence of the two depths).

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
save("bias", bias[["rule", "comparison", "n_reps", "truth_pp", "mean_pp", "bias_pp", "bias_se_pp", "rmse_pp",
                   "rejection_rate"]].round(3), out_dir)

# %% [markdown]
# ## Size of the test (null simulator)

# %%
save("size", size[["rule", "comparison", "n_reps", "mean_pp", "rejection_rate", "rejection_se"]].round(3), out_dir)

# %%
fig = validity_figure(bias, size, backend="reference (simulator replications)", alpha=alpha)
save("validity", fig, out_dir)
plt.show()

# %%
key_bias = bias[bias.rule == "mechanism_key"]
key_size = size[size.rule == "mechanism_key"].set_index("comparison")
glue("ch02b_key_max_bias_z", (key_bias.bias_pp.abs() / key_bias.bias_se_pp).max(), digits=1)
glue("ch02b_alpha", alpha)
glue("ch02b_size_rates", ", ".join(f"{r:.3f} ({c})" for c, r in key_size.rejection_rate.items()))
glue("ch02b_size_se", key_size.rejection_se.max(), digits=3)
glue("ch02b_size_mean", key_size.rejection_rate.mean(), digits=3)
z = (key_size.rejection_rate - alpha) / np.sqrt(alpha * (1 - alpha) / key_size.n_reps)
glue("ch02b_size_verdict",
     "every rate lies within two Monte Carlo standard errors of alpha, consistent with a test whose size is "
     "at most alpha" if (z.abs() <= 2).all() else
     "at least one rate lies more than two Monte Carlo standard errors from alpha")
text_bias = bias[(bias.rule == "tfidf") & (bias.comparison == "0 v 1")]
glue("ch02b_tfidf_bias_0v1_pp", text_bias.bias_pp.iloc[0] if len(text_bias) else float("nan"), digits=1)
text_size = size[size.rule == "tfidf"]
glue("ch02b_tfidf_null_max", text_size.rejection_rate.max() if len(text_size) else float("nan"), digits=2)
glue("ch02b_tfidf_null_n", int(text_size.n_reps.iloc[0]) if len(text_size) else 0)
se_1000 = glue("ch02b_se_1000", float(np.sqrt(alpha * (1 - alpha) / 1000)), digits=3)

# %% [markdown]
# The mechanism-key estimate is unbiased up to Monte Carlo error (the all-pairs extra divergence is a
# difference of U-statistics): the largest bias is {glue:text}`ch02b_key_max_bias_z` times its Monte
# Carlo standard error. Under the null simulator its rejection rates at alpha = {glue:text}`ch02b_alpha`
# are {glue:text}`ch02b_size_rates` (Monte Carlo standard error up to {glue:text}`ch02b_size_se`;
# mean {glue:text}`ch02b_size_mean`): {glue:text}`ch02b_size_verdict`. When the runs of two depths are
# exchangeable, as they are for the mechanism key under the null, the exact test's true size cannot
# exceed alpha, so a rate above alpha here is Monte Carlo noise; ties among the split statistics can
# make the test conservative. TF-IDF estimates a different quantity: it reacts to wording (aliases,
# hedges added after concessions) and only partly to replaced steps, so its bias against the mechanism
# truth is large ({glue:text}`ch02b_tfidf_bias_0v1_pp` pp for 0 v 1), and under the null simulator,
# where critique still rewrites wording, its rejection rate reaches {glue:text}`ch02b_tfidf_null_max`
# over {glue:text}`ch02b_tfidf_null_n` replications: it measures a real change of text, not of mechanism.
#
# ## Try it
#
# - `n_null_replications = 1000` narrows the Monte Carlo error of the size (about
#   {glue:text}`ch02b_se_1000` at alpha = {glue:text}`ch02b_alpha`).
# - `alpha = 0.01` checks the size at a stricter level.
# - `tfidf_threshold = 0.5` changes what TF-IDF calls the same, and with it its bias.
