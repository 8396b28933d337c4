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
# # Validity of the critique-depth analysis: bias, intervals and test size
#
# ````{admonition} Question, answer and how we know
# :class: note
# :name: ch02b-answer
# **Question.** Does the critique-depth analysis estimate the true effect without bias, do its
# intervals cover the truth, and does its exact test reject a true null no more often than alpha?
#
# **Answer.** In the simulator, for the mechanism key and the paper-rate judge, yes within Monte Carlo
# error: the largest bias is {glue:text}`ch02b_key_max_bias_z` times its standard error, the 95 %
# intervals cover the truth in {glue:text}`ch02b_coverage` of the replications, and under the null the
# rejection rates at alpha = {glue:text}`ch02b_alpha` are {glue:text}`ch02b_size_rates` (mechanism
# key) and {glue:text}`ch02b_rate_size_rates` (paper-rate judge). TF-IDF measures something else: its
# 0 v 1 bias against the mechanism truth is {glue:text}`ch02b_tfidf_bias_0v1_pp` pp, and under the
# null it rejects in up to {glue:text}`ch02b_tfidf_null_max` of its replications.
#
# **How we know.** Simulated (reference backend): {glue:text}`ch02b_n_reps` replications of the default
# simulator and {glue:text}`ch02b_n_null_reps` of the null simulator, whose true effects are known by
# construction (zero under the null). Nothing here comes from an LLM; real LLM runs may behave
# differently.
# ````
#
# ```{admonition} Learning objectives
# :class: tip
# After this section you can
# - estimate the bias of an effect estimate, the coverage of its interval and the size of a test by
#   simulated replication against a known truth;
# - compute and use the Monte Carlo standard error of a rejection rate;
# - tell apart an estimator that is unbiased for the quantity it targets from one that measures a
#   different quantity (a change of text);
# - re-run the study at another alpha or threshold and predict the result first.
# ```
#
# The paper {cite}`byun2026auditing` could not check its analysis against a known truth. The workflow
# **simulator** can: its mechanisms are known, so the true {term}`extra divergence <Extra divergence>`
# of each depth comparison is known, and many independent replications of the paper's
# {glue:text}`ch02b_n_runs`-run design show
#
# - the **bias** of each {term}`equivalence rule <Equivalence rule>`'s estimate: mean estimate minus
#   the truth, over replications of the default simulator;
# - the **sampling SD** of one design's estimate, which the calibration of chapter 02 uses as its
#   tolerance, and the **coverage** of the bootstrap interval that chapter 02 prints beside each
#   estimate;
# - the **size** of the exact permutation test {cite}`good2005permutation`: the share of replications
#   with p <= alpha under the **null** simulator, which is identical except that no reply ever changes
#   a chain id (the true extra divergence is then zero). Its Monte Carlo standard error is
#   sqrt(r(1 - r)/n) for a rate r over n replications.
#
# Every number in this chapter comes from the simulator (backend reference); none is an LLM result,
# and every conclusion is about the simulator. Two rules read the simulator's step ids and are fast
# enough for hundreds of replications ({glue:text}`ch02b_n_null_reps` under the null,
# {glue:text}`ch02b_n_reps` under the default simulator): the {term}`mechanism key <Mechanism key>`
# (every replaced step a new mechanism) and the paper-rate judge (each kind of change called
# different at the rate the paper measured for its LLM judge, chapter 02's main rule). Each is
# compared with its own truth. {term}`TF-IDF`, which needs a vectoriser per instance and replication,
# is run on {glue:text}`ch02b_n_text_reps` and compared with the mechanism key's truth. The
# {term}`reference judge <Reference judge>` (full rubric) agrees with the mechanism key on every
# simulated pair (the simulator replaces steps but never adds detail), so it is not repeated here;
# embeddings are too slow for a replication study on this machine.

# %% tags=["parameters", "remove-cell"]
# -p values land after this cell; every parameter and its default: book/rerun.md (mechaudit.book.settings)

# %% tags=["remove-cell"]
from IPython.display import display

from mechaudit.book import ch02b_validity as ch
from mechaudit.book.chapter import ChapterContext, simulation_only_note, source_note
from mechaudit.plots.workflow import validity_figure
from mechaudit.report.facts import glue_facts
from mechaudit.workflow import validity_summary
from mechaudit.workflow.parallel import connect

ctx = ChapterContext.open(globals(), "02b_validity")  # checked parameters, backend, LLM client
p = ctx.settings
simulation_only_note(ctx.backend)  # LLM backends: this chapter still runs the simulator only
if not ctx.show_paper:
    print("No comparison with published numbers (this chapter shows none in any case).")
cluster = connect(p.parallel_backend, p.scheduler)  # "dask": the client the loops use; None otherwise

# %%
setup = ch.validity_setup(p)

# %% tags=["hide-input"]
display(ctx.table("truth", setup.truth.round(2), shown=ch.truth_view(setup.truth), label="tbl-ch02b-truth",
                  caption="The simulator's truths under each measure: same-depth divergence per depth (%) "
                          "and extra divergence per depth comparison (pp), with its ceiling."))

# %% [markdown]
# The truth ({numref}`tbl-ch02b-truth`) is the instance-averaged population value under each measure,
# estimated from one
# large simulated design with `truth_runs_per_depth` ({glue:text}`ch02b_truth_runs`) runs per depth
# and instance, with its standard error; "Ceiling (pp)" is the largest extra divergence the true
# same-depth divergence allows (one minus the pooled same-depth divergence of the two depths).
# Same-depth rows are levels (in %), extra rows differences (in pp).
#
# The replications: every one simulates the whole design anew (its own seed) and computes the
# paper's Table 1 under each rule, with the bootstrap interval of chapter 02
# ({glue:text}`ch02b_n_boot` resamples per
# interval) for the two fast rules.

# %%
runs = ch.replications(setup, p)
print(source_note(runs.sources))
bias = validity_summary(runs.default, setup.truth, alpha=p.alpha)
size = validity_summary(runs.null,
                        {c: 0.0 for c in bias.comparison.unique()},
                        alpha=p.alpha)

# %% [markdown]
# ## Bias, spread and interval coverage (default simulator)
#
# In {numref}`tbl-ch02b-bias` each rule is compared with the truth of the quantity it targets (its
# own for the mechanism key and the paper-rate judge, the mechanism key's for TF-IDF; the CSV
# written with `--out` names it in its column `measure`); "Power" is the rejection rate of the test
# at alpha for the simulated effect; "Bias SE (pp)" combines the Monte Carlo errors of the mean
# estimate and of the truth; "SD (pp)" is the spread of one design's estimate over replications;
# "Coverage" is the share of replications whose 95 % bootstrap interval holds the truth.

# %% tags=["hide-input"]
ctx.table("bias", bias.round(3), shown=ch.bias_view(bias).drop(columns="truth of"), label="tbl-ch02b-bias",
          caption="Bias, spread and interval coverage of each rule's extra-divergence estimate against the "
                  "truth of the quantity it targets (TF-IDF: the mechanism key's), default simulator.")

# %% [markdown]
# ## Size of the test (null simulator)
#
# {numref}`tbl-ch02b-size` gives each rule's rejection rate under the null simulator, where the true
# extra divergence is zero.

# %% tags=["hide-input"]
ctx.table("size", size.round(3), shown=ch.size_view(size), label="tbl-ch02b-size",
          caption="Rejection rate of the exact test at alpha under the null simulator, with its Monte "
                  "Carlo standard error (MC SE).")

# %% tags=["remove-cell"]
fig = validity_figure(bias, size, caption="Backend: reference (simulator replications)", alpha=p.alpha)
fig = ctx.figure("validity", fig, glue_as="ch02b_fig_validity")

# %% [markdown]
# ```{glue:figure} ch02b_fig_validity
# :name: fig-ch02b-validity
# :figwidth: 100%
#
# Top: bias of each rule's extra-divergence estimate against its truth (pp), per depth comparison,
# over the replications of the default simulator. Bottom: share of the null simulator's replications in
# which the exact test rejected at alpha (dashed line). Error bars: ±2 Monte Carlo standard errors
# (`bias SE (pp)` and `MC SE` in the tables). Mechanism key and paper-rate judge:
# {glue:text}`ch02b_n_reps` and {glue:text}`ch02b_n_null_reps` replications; TF-IDF:
# {glue:text}`ch02b_n_text_reps` each. Simulated, no LLM.
# ```

# %% tags=["remove-cell"]
glue_facts("ch02b", ch.validity_facts(setup.design, bias, size, runs.null, p))

# %% [markdown]
# In {numref}`fig-ch02b-validity` the mechanism-key and paper-rate estimates are unbiased up to Monte
# Carlo error (the all-pairs extra divergence is a difference of U-statistics, whatever the run
# divergence is made of): the largest bias is {glue:text}`ch02b_key_max_bias_z` times its Monte Carlo
# standard error. Their bootstrap intervals cover the truth in {glue:text}`ch02b_coverage` of the
# replications: {glue:text}`ch02b_coverage_verdict`. Under the null simulator the mechanism key's
# rejection rates at alpha = {glue:text}`ch02b_alpha` are {glue:text}`ch02b_size_rates` (Monte Carlo
# standard error up to {glue:text}`ch02b_size_se`; mean {glue:text}`ch02b_size_mean`) and the
# paper-rate judge's {glue:text}`ch02b_rate_size_rates`: {glue:text}`ch02b_size_verdict`. When the runs
# of two depths are exchangeable, as they are under the null, the exact test's true size cannot
# exceed alpha, so a rate above alpha here is Monte Carlo noise; ties among the split statistics can
# make the test conservative.
#
# TF-IDF estimates a different quantity: it reacts to wording (aliases, hedges added after
# concessions) as well as to replaced steps. Against the mechanism truth its 0 v 1 bias is
# {glue:text}`ch02b_tfidf_bias_0v1_pp` pp (Monte Carlo SE {glue:text}`ch02b_tfidf_bias_se_0v1_pp` pp).
# The size and sign of that bias are properties of the simulator as much as of TF-IDF: its texts are
# templates in which a replaced step changes one entity's name, and the fitted simulator replaces
# nearly every step, which changes many words; with fewer replaced steps TF-IDF would see less of the
# change. Under the null simulator, where critique still rewrites wording, TF-IDF's mean
# 0 v 1 estimate is {glue:text}`ch02b_tfidf_null_mean_0v1` pp and its rejection rate reaches
# {glue:text}`ch02b_tfidf_null_max` over {glue:text}`ch02b_tfidf_null_n` replications: it measures a
# real change of text, not of mechanism.
#
# ## The sampling SDs and the calibration's tolerance
#
# Chapter 02 fits the simulator's expected 0 v 1 and 0 v 5 effects to the paper's, and chapter
# 02c keeps the settings whose expected effects could have produced both of the paper's estimates at
# once. Both need the sampling SD of one {glue:text}`ch02b_n_runs`-run design's estimate under the
# paper-rate judge, and 02c also the correlation of the two estimates (they share the depth-0 runs).
# `params/calibration.yaml` records them (the targets' tolerances, the 1 v 5 SD and the correlation);
# {numref}`tbl-ch02b-tolerance` sets the recorded values beside what these replications measured at the
# committed defaults.

# %%
sampling = ch.sampling_check(runs.default, setup.spec)

# %% tags=["hide-input"]
glue_facts("ch02b", ch.sampling_facts(sampling))
display(ctx.table("sampling_check", sampling, label="tbl-ch02b-tolerance",
                  caption="The sampling SDs and correlation recorded in params/calibration.yaml beside those "
                           "the replications measured."))

# %% [markdown]
# ({glue:text}`ch02b_tolerance_text`.) The SDs are those of one design's estimate around the truth at
# these instances; the paper's estimates come from other instances and a real workflow, whose spread
# may be larger.
#
# ## Exercises
#
# ```{exercise}
# :label: ch02b-ex1
#
# Before running: at `alpha = 0.01`, what rejection rate do you expect for the mechanism key under the
# null, and how large is its Monte Carlo standard error with {glue:text}`ch02b_n_null_reps`
# replications? Then re-execute with
# `.venv/bin/mechaudit execute notebooks/02b_validity.py -p alpha 0.01 --out runs/ex1`.
# ```
#
# ````{solution} ch02b-ex1
# :class: dropdown
#
# A valid exact test rejects a true null at most a share alpha of the time, so about 0.01 or a little
# less (ties make it conservative). The standard error of a rate near 0.01 over n replications is
# sqrt(0.01 x 0.99 / n): with n = {glue:text}`ch02b_n_null_reps` about {glue:text}`ch02b_se_01`, so a
# rate within about two of those of 0.01 is consistent with a size of 0.01. The null replications of
# this chapter, read at `alpha = 0.01`, give {glue:text}`ch02b_size_rates_01` for the mechanism key
# (computed in a hidden cell, so these numbers follow the parameter files). TF-IDF, over its
# {glue:text}`ch02b_n_text_reps` replications, still rejects in up to {glue:text}`ch02b_tfidf_null_max_01`
# of them: it reacts to the wording that critique changes even under the null.
# ````
#
# ```{exercise}
# :label: ch02b-ex2
#
# How many null replications would you need for the Monte Carlo standard error of a rejection rate near
# alpha = 0.05 to fall to 0.005?
# ```
#
# ````{solution} ch02b-ex2
# :class: dropdown
#
# Solve sqrt(0.05 x 0.95 / n) = 0.005: n = 0.0475 / 0.000025 = 1900. With this chapter's
# {glue:text}`ch02b_n_null_reps` replications the standard error at alpha is
# {glue:text}`ch02b_se_alpha`; with 1000 it would be {glue:text}`ch02b_se_1000`.
# ````
#
# ```{exercise}
# :label: ch02b-ex3
#
# A stricter TF-IDF rule (`tfidf_threshold = 0.5`) calls more pairs different. Predict whether its
# bias against the mechanism truth shrinks, and whether its rejection rate under the null moves towards
# alpha. Then re-execute with `-p tfidf_threshold 0.5 --out runs/ex3`.
# ```
#
# ````{solution} ch02b-ex3
# :class: dropdown
#
# Neither need improve. A stricter threshold flags more wording changes in same-depth and cross-depth
# run pairs alike; those cancel in the extra divergence only in part, and the higher same-depth
# divergence lowers the ceiling, so the estimate can even fall further from the truth. It does not
# make TF-IDF see the replaced steps it misses, and under the null the wording changes that critique
# makes are still there to detect. Compare your run with this chapter's values at the default
# threshold: a 0 v 1 bias of {glue:text}`ch02b_tfidf_bias_0v1_pp` pp and a null rejection rate of up
# to {glue:text}`ch02b_tfidf_null_max` (with {glue:text}`ch02b_n_text_reps` replications a rate has a
# standard error of about 0.1).
# ````
#
# ## Try it
#
# - `n_null_replications = 1000` narrows the Monte Carlo error of the size (about
#   {glue:text}`ch02b_se_1000` at alpha = {glue:text}`ch02b_alpha`).
# - `alpha = 0.01` checks the size at a stricter level ({ref}`ch02b-ex1`).
# - `tfidf_threshold = 0.5` changes what TF-IDF calls the same, and with it its bias
#   ({ref}`ch02b-ex3`).
#
# ## Key takeaways
#
# 1. Against the simulator's known truth, the estimates of the rules that read the chain are unbiased
#    up to Monte Carlo error (largest bias {glue:text}`ch02b_key_max_bias_z` standard errors).
# 2. Under a null workflow the exact test keeps its size (mean rejection rate
#    {glue:text}`ch02b_size_mean` at alpha = {glue:text}`ch02b_alpha`).
# 3. A text rule measures a change of text, not of mechanism: TF-IDF is biased by
#    {glue:text}`ch02b_tfidf_bias_0v1_pp` pp for 0 v 1 and rejects a true null in up to
#    {glue:text}`ch02b_tfidf_null_max` of its replications.
