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
# # Robustness and power: where the paper's conclusions can hold
#
# ````{admonition} Question, answer and how we know
# :class: note
# :name: ch02c-answer
# **Question.** At the simulator settings whose expected 0 v 1 and 0 v 5 effects are consistent with
# the paper's two estimates ({glue:text}`ch02c_observed_text`) jointly, does the paper's conclusion of
# diminishing returns hold, does the estimate depend on the equivalence rule, and how much power has
# the paper's design to detect a 1 v 5 effect?
#
# **Answer.** In the simulator, diminishing returns {glue:text}`ch02c_status_sentence`: at the
# {glue:text}`ch02c_n_consistent` consistent settings of the grid the true 1 v 5 effect is
# {glue:text}`ch02c_consistent_1v5` pp against {glue:text}`ch02c_consistent_0v1` pp for 0 v 1.
# {glue:text}`ch02c_outside_sentence` The estimate depends on the rule: at the two consistent settings
# studied with full texts, TF-IDF's 0 v 1 estimate lies {glue:text}`ch02c_tfidf_minus_rate_0v1` pp from
# the paper-rate judge's. The paper's design (4 instances, 5 runs per depth) detects a 1 v 5 effect
# with power {glue:text}`ch02c_power_range` over the consistent settings; at the largest 1 v 5 effect
# they allow ({glue:text}`ch02c_top_truth` pp) the power is {glue:text}`ch02c_top_power_4x5`.
#
# **How we know.** Simulated (reference backend), so every statement is conditional on the simulator's
# structure (weak links found and repaired one step at a time): the truths are population values of the
# simulator under the paper-rate judge (each kind of change called different at the paper's LLM-judge
# rates), true by construction of the simulator. "Consistent" is a joint test of the paper's 0 v 1 and
# 0 v 5 estimates at the {glue:text}`ch02c_level_pct` % level, with the sampling SDs and correlation of
# one 60-run design measured in {doc}`02b_validity`. TF-IDF is computed locally on simulated texts;
# power is the rejection rate over {glue:text}`ch02c_n_power_reps` simulated replications per design.
# No LLM is involved; a real workflow may behave otherwise.
# ````
#
# ```{admonition} Learning objectives
# :class: tip
# After this section you can
# - explain why a conclusion read at one simulator setting needs a check at the other settings that are
#   consistent with the observation, and why the rest of a grid is only context;
# - compute the ceiling of an {term}`extra divergence <Extra divergence>` and read a ceiling-aware
#   criterion;
# - tell apart a rule's bias and its noise, using Monte Carlo standard errors;
# - read a power curve, say why its standard error needs independent pools, and re-run the chapter to
#   check how a design choice changes it.
# ```
#
# Chapters 02 and 02b run the workflow simulator at one parameter setting, fitted to the paper. This
# chapter varies the setting over a grid and keeps the settings that could have produced the paper's
# observations, then asks whether the paper's conclusions hold there and how many runs a study needs to
# detect the small 1 v 5 effects those settings allow.
#
# The conclusions, each a stated criterion:
#
# - **(a) diminishing returns**: the 1 v 5 extra divergence is small next to the 0 v 1 one. Criterion:
#   the 1 v 5 truth is below a quarter (`diminishing_ratio`) of the 0 v 1 truth, by more than `z`
#   standard errors ("holds"), above it by more than `z` ("fails"), otherwise "unclear". Because the
#   cross-depth {term}`run divergence <Run divergence>` cannot exceed 1, the extra divergence of depths
#   a and b is at most 100 {term}`pp <Percentage point (pp)>` minus their pooled same-depth divergence
#   (the **ceiling**); the ceiling-aware criterion applies the same test to each effect divided by its
#   ceiling.
# - **(b) the estimate depends on the equivalence rule**: the paper's 60-run design replicated at a few
#   consistent settings under the mechanism key, the paper-rate judge and TF-IDF, each against the truth
#   of the quantity it targets.
#
# The truths are population values (`population_truth`); every grid point uses the same seeds and the
# simulator keys each run's random stream by (seed, instance, depth, repetition), so neighbouring points
# share their random numbers (common random numbers) and differences between points are not independent
# noise. The truths are expensive fixed computations: `mechaudit calibrate` computes them at this
# chapter's defaults and commits them (`data/computed/`), the test suite re-checks them, and the
# chapter reads them when its parameters are the defaults and computes them otherwise (other grids
# take minutes). The grids, replication counts and pools are parameters: the cell below shows the ones
# the exercises change, the folded cell before it all the others.

# %% tags=["parameters", "remove-cell"]
# -p values land after this cell; every parameter and its default: book/rerun.md (mechaudit.book.settings)

# %% tags=["remove-cell"]
from IPython.display import display

from mechaudit.book import ch02c_robustness as ch
from mechaudit.book.chapter import ChapterContext, simulation_only_note, source_note
from mechaudit.paper import reported
from mechaudit.plots import robustness as plots
from mechaudit.report.facts import glue_facts
from mechaudit.report.tables import book_table
from mechaudit.workflow.calibrate import calibration_setup
from mechaudit.workflow.parallel import connect
from mechaudit.workflow.power import runs_needed
from mechaudit.workflow.robustness import rule_bias

ctx = ChapterContext.open(globals(), "02c_robustness")  # checked parameters, backend, LLM client
p = ctx.settings
simulation_only_note(ctx.backend)  # LLM backends: this chapter still runs the simulator only
s = calibration_setup(p.data_dir, p.design_file, p.simulator_file, p.calibration_file)
defaults = ch.defaults(s.base)
cluster = connect(p.parallel_backend, p.scheduler)  # "dask": the client the loops use; None otherwise
fig_caption = "Backend: reference (simulator)"  # every figure here is simulated, under every backend

# %% [markdown]
# ## The grid and the settings consistent with the paper
#
# The factors (`mechaudit.workflow.robustness.vary`): `p_find`, the chance per round that the critic
# finds an open {term}`weak link <Weak link>`; `weak_scale`, a factor on both probabilities that a step
# is weak (capped at 1, so on the number of weak links); `conceded`, the conceded share of the replies
# to weak-link demands (the other three labels keep their ratios and share the rest). The committed
# simulator sits at `p_find` {glue:text}`ch02c_default_p_find`, `weak_scale` 1 and `conceded`
# {glue:text}`ch02c_default_conceded`. One call computes the truths at every grid point under the
# paper-rate judge, from {glue:text}`ch02c_truth_seeds` simulated designs of
# {glue:text}`ch02c_truth_runs` runs per depth and instance each (Monte Carlo SE at most
# {glue:text}`ch02c_max_se` pp). A setting is **consistent with the paper** when its expected 0 v 1
# and 0 v 5 effects could have produced the paper's two estimates ({glue:text}`ch02c_observed_text`)
# at once: their Mahalanobis distance from the estimates, with the sampling SDs of one 60-run design
# ({glue:text}`ch02c_sd_text`) and the two estimates' sampling correlation
# ({glue:text}`ch02c_correlation`), both measured in {doc}`02b_validity`, lies within the chi-square
# quantile at {glue:text}`ch02c_level_pct` % (two degrees of freedom). The two conditions are tested
# jointly, not one at a time: a setting that fits 0 v 1 but not 0 v 5 is not consistent. What happens
# outside the consistent set says little about the paper's workflow; the full grid is context only.

# %% tags=["hide-input"]
truths_all = ch.chapter_truths(s, p)
print(source_note(truths_all.sources))
truths = truths_all.map

# %% tags=["hide-input"]
ctx.table("truth_grid", truths.round(2))  # the whole grid, to the run folder
display(book_table(ch.consistent_view(truths[truths.consistent], list(p.robust_axes)), name="tbl-ch02c-consistent",
                   caption=f"The grid's settings consistent with {ch.targets_name(ctx.show_paper)} 0 v 1 and "
                           "0 v 5 effects jointly: truths (pp) and the status of conclusion (a) under both "
                           "criteria."))

# %% tags=["remove-cell"]
glue_facts("ch02c", ch.grid_facts(truths, s.spec, defaults, p.truth_runs_per_depth, p.truth_seeds))
glue_facts("ch02c", ch.consistent_spans(truths, list(p.robust_axes)))
fig = plots.consistency_figure(truths, x="p_find", y="weak_scale", facet="conceded", caption=fig_caption,
                               observed=ch.observed_and_sd(s.spec)[0]["0 v 1"],
                               legend=f"consistent with {ch.targets_name(ctx.show_paper)} 0 v 1 and 0 v 5 jointly")
fig = ctx.figure("consistent_settings", fig, glue_as="ch02c_fig_consistent")

# %% [markdown]
# {numref}`tbl-ch02c-consistent` lists the {glue:text}`ch02c_n_consistent` consistent settings of the
# {glue:text}`ch02c_n_points`-point grid (the whole grid is written to `truth_grid.csv` with `--out`).
# They have `p_find` {glue:text}`ch02c_consistent_p_find`, `weak_scale`
# {glue:text}`ch02c_consistent_weak_scale` and `conceded` {glue:text}`ch02c_consistent_conceded`; their
# 0 v 1 truths are {glue:text}`ch02c_consistent_0v1` pp and their 0 v 5 truths
# {glue:text}`ch02c_consistent_0v5` pp ({numref}`fig-ch02c-consistent`).

# %% [markdown]
# ```{glue:figure} ch02c_fig_consistent
# :name: fig-ch02c-consistent
# :figwidth: 100%
#
# The simulator's true 0 v 1 extra divergence (pp, under the paper-rate judge) at every grid point: the
# chance that the critic finds an open weak link across, the number of weak links (a multiple of the
# default) up, one panel per conceded share. Black frames: settings consistent with the paper's 0 v 1
# and 0 v 5 estimates jointly. No error bars: each cell is one population value (Monte Carlo SE at
# most the stated value).
# ```
#
# ## Conclusion (a) at the consistent settings

# %% tags=["remove-cell"]
fig = plots.conclusion_figure(truths, x="p_find", y="weak_scale", facet="conceded", caption=fig_caption)
fig = ctx.figure("conclusion_map", fig, glue_as="ch02c_fig_conclusion")

# %% [markdown]
# ```{glue:figure} ch02c_fig_conclusion
# :name: fig-ch02c-conclusion
# :figwidth: 100%
#
# Status of conclusion (a), raw criterion, at the consistent settings: holds (blue), fails (vermillion)
# or unclear (grey: the 1 v 5 truth is within `z` standard errors of a quarter of the 0 v 1 truth). Pale
# cells: settings not consistent with the paper's estimates, shown for context. Cell text: the true
# 1 v 5 extra divergence (pp). Axes as in {numref}`fig-ch02c-consistent`.
# ```
#
# At the consistent settings the 1 v 5 truth is {glue:text}`ch02c_consistent_1v5` pp and the 0 v 1
# truth {glue:text}`ch02c_consistent_0v1` pp, so on the raw criterion (a)
# {glue:text}`ch02c_status_sentence`; on the ceiling-aware criterion it
# {glue:text}`ch02c_status_sentence_norm`. Under the paper-rate judge the same-depth divergence after
# one round is {glue:text}`ch02c_consistent_same_K1` % there, which leaves a 1 v 5 ceiling of
# {glue:text}`ch02c_consistent_max_1v5` pp: {glue:text}`ch02c_ceiling_sentence`. (Under the mechanism
# key, which counts every replaced step, the ceiling is far lower at the committed setting:
# {doc}`02_critique_depth`.)
#
# {glue:text}`ch02c_outside_sentence` Within the simulator, then, whether later rounds add little is
# read at the settings the paper's two estimates allow, and there conclusion (a)
# {glue:text}`ch02c_status_sentence`; that is not evidence about self-critique in general, and a
# workflow that is not built like this simulator could behave differently.
#
# ## The number of alternatives
#
# `evidence_weight` sets how strongly a repair favours entities named in the instance's evidence
# pack, i.e. how concentrated the alternatives a repair draws from are. The table gives the 0 v 1 and
# 1 v 5 truths and the 1 v 5 ceiling (pp) and the same-depth divergence at depth 1 (%).

# %%
alt = truths_all.alternatives

# %% tags=["hide-input"]
display(ctx.table("alternatives", ch.alternatives_table(alt, p.alternatives_axes), label="tbl-ch02c-alternatives",
                  caption="Truths as the repair's concentration on named entities changes."))

# %% tags=["remove-cell"]
glue_facts("ch02c", ch.alternatives_facts(alt))

# %% [markdown]
# Across `evidence_weight` from 1 to 1000, at each `p_find` of the table, the 0 v 1 and 1 v 5 truths move by at most
# {glue:text}`ch02c_ew_truth_change_pp` pp, the same-depth divergence at depth 1 by
# {glue:text}`ch02c_ew_same_change_pct` percentage points and the 1 v 5 ceiling by
# {glue:text}`ch02c_ew_ceiling_change_pp` pp. Concentrated alternatives make two repairs of the same
# step agree more often, which lowers the same-depth divergence and moves the ceiling; how much they
# move the effects themselves is read from the table, not assumed.
#
# ## The estimate depends on the rule (conclusion b)
#
# TF-IDF needs the full texts, far slower to simulate and compare than the step ids, so it runs at two
# consistent settings only (`pick_quantiles`): the ends of the consistent set, the settings with the
# smallest and the largest 1 v 5 truth. At each, the paper's design (4 instances, 5 runs per depth) is
# replicated `n_text_replications` times (the same replication seeds at every setting), and each
# rule's mean estimate is compared with the truth of the quantity it targets: the paper-rate judge
# with its own, the mechanism key and TF-IDF with the mechanism key's.

# %%
studies = ch.chapter_studies(s, truths_all, p)
print(source_note(studies.sources))
labels = ch.setting_labels(truths_all.picks, list(p.robust_axes))
bias = rule_bias(studies.rule_reps, truths_all.pick_truths, z=p.z)

# %% tags=["hide-input"]
ctx.table("rule_bias", bias.round(2))  # every comparison, to the run folder
display(book_table(ch.rule_view(bias[bias.comparison.isin(["0 v 1", "1 v 5"])], labels), name="tbl-ch02c-rules",
                   caption="Each rule's mean estimate against the truth of its quantity at the chosen settings."))

# %% tags=["remove-cell"]
glue_facts("ch02c", ch.rule_facts(bias, p.n_text_replications))
fig = plots.rule_estimates_figure(bias, labels, caption=fig_caption, rules={
    "mechanism_key": "mechanism key", "paper_rates": "paper-rate judge", "tfidf": "TF-IDF"})
fig = ctx.figure("rule_estimates", fig, glue_as="ch02c_fig_rules")

# %% [markdown]
# ```{glue:figure} ch02c_fig_rules
# :name: fig-ch02c-rules
# :figwidth: 100%
#
# Each rule's mean estimate of the extra divergence (pp) at the chosen consistent settings (S1, S2,
# named in {numref}`tbl-ch02c-rules`), over {glue:text}`ch02c_n_text_reps` replications of the paper's
# design per
# setting; error bars: ±2 Monte Carlo standard errors of the mean. Black ticks: the truth of the quantity
# each rule estimates (the paper-rate judge's own truth; the mechanism key's for the key and TF-IDF).
# ```
#
# In {numref}`fig-ch02c-rules` the mechanism key and the paper-rate judge sit on their truths (the
# largest bias is {glue:text}`ch02c_max_bias`), and the two truths
# differ: the key's 0 v 1 estimate lies {glue:text}`ch02c_key_minus_rate_0v1` pp from the paper-rate
# judge's at the same runs, and TF-IDF's {glue:text}`ch02c_tfidf_minus_rate_0v1` pp. So (b) holds in
# the simulator at both studied settings: the number depends on the rule, even on identical runs. How
# far TF-IDF lies from either truth is partly built into the simulator (its texts are templates in
# which a replaced step changes one entity's name), so the size of that gap is a property of the
# simulator as much as of TF-IDF; the paper itself reports no extra divergence under TF-IDF.
#
# ## Power of the 1 v 5 test
#
# How many runs does a study need to detect a 1 v 5 effect of the size the consistent settings allow?
# The power study uses the same two settings, the ends of the consistent set in 1 v 5 truth, so the
# powers it finds span what the paper's estimates allow (power grows with the effect). Each setting's
# 1 v 5 truth is its value on the map, with that value's Monte Carlo SE.

# %% tags=["hide-input"]
settings, power = studies.settings, studies.power
ctx.table("power_settings", ch.settings_table(settings), label="tbl-ch02c-settings",
          caption="The settings of the power study and their 1 v 5 truth.")

# %% [markdown]
# Each replication draws its runs without replacement from a pool of `pool_runs_per_depth` simulated
# runs per depth and instance; a pool's runs are independent draws of the simulator. Replications that
# draw from one pool share runs, so they are not independent, and a binomial standard error
# sqrt(power (1 - power) / n) would understate the Monte Carlo error. The replications of each setting
# are therefore spread over `n_pools` ({glue:text}`ch02c_n_pools`) independent pools, and the standard
# error reported is the batch-means SE over the pools: the SD of the per-pool rejection rates over
# sqrt(pools). With few pools that SE is itself rough; the binomial SE is shown beside it. Designs with
# more than four instances reuse the four benchmark instances as replicate instances with new seeds;
# they share the instances' openings, so real new instances would vary more. The paper's 4 x (5 + 5)
# design uses the {term}`exact permutation test <Exact p-value>`; larger designs, whose exact null
# distribution is too large to count quickly, use the Monte Carlo permutation test
# (`divergence.monte_carlo_permutation_test`, `n_resamples` random split combinations,
# p = (1 + hits) / (R + 1)). Power of each named design (instances x runs per depth):

# %% tags=["hide-input"]
display(ctx.table("power_by_design", ch.design_powers(power), label="tbl-ch02c-power",
                  caption="Power of the permutation test at alpha per design (instances x runs per depth) "
                          "and setting."))

# %% tags=["remove-cell"]
glue_facts("ch02c", ch.power_facts(power, settings, labels, p.n_power_replications, p.n_pools))

# %% [markdown]
# For the paper's design (4 instances, 5 runs per depth) the power at alpha 0.05 ranges
# {glue:text}`ch02c_power_range`. For the largest effect a consistent setting allows,
# {glue:text}`ch02c_top_truth` pp, doubling the runs per depth gives
# {glue:text}`ch02c_top_power_4x10` (SE {glue:text}`ch02c_top_power_se_4x10`) and doubling the instances
# instead gives {glue:text}`ch02c_top_power_8x5` (SE {glue:text}`ch02c_top_power_se_8x5`):
# {glue:text}`ch02c_runs_vs_instances`. Both doublings add about the same number of runs, and the
# information about the effect grows roughly in proportion to the runs: more runs per depth add
# cross-depth run pairs, but those pairs share runs, so they bring far less new evidence than their
# count suggests (the count rises much faster than the runs do). More instances add independent
# instance means; they also average over instance-to-instance differences of the effect, which more
# runs per instance cannot do.
#
# ## Design recommendation

# %%
needed = runs_needed(power, level=p.power_level)

# %% tags=["hide-input"]
display(ctx.table("runs_needed", ch.needed_table(needed), label="tbl-ch02c-needed",
                  caption="Runs per depth a four-instance study needs for the target power, per setting."))

# %% tags=["remove-cell"]
glue_facts("ch02c", ch.needed_facts(needed, power, settings, p.power_ladder, p.power_level))
fig = plots.power_figure(power, caption=fig_caption, level=p.power_level,
                         paper_runs=reported("design.runs_per_depth") if ctx.show_paper else None)
fig = ctx.figure("power", fig, glue_as="ch02c_fig_power")

# %% [markdown]
# With four instances, the runs per depth needed for 80 % power, per true 1 v 5 effect, are
# {glue:text}`ch02c_needed_text` ({numref}`fig-ch02c-power`; the ladder stops at
# {glue:text}`ch02c_ladder_max`). The paper reports a 1 v 5 estimate of {glue:text}`ch02c_paper_1v5_pp` pp
# {cite}`byun2026auditing`, {glue:text}`ch02c_paper_1v5_where`. In this simulator
# {glue:text}`ch02c_power_verdict`. A caution: these numbers are the simulator's, whose
# run-to-run variation of divergence is small (each hypothesis has a handful of discrete steps); LLM runs
# may vary more and need more runs.
#
# ```{glue:figure} ch02c_fig_power
# :name: fig-ch02c-power
# :figwidth: 100%
#
# Power of the 1 v 5 permutation test at alpha 0.05 against runs per depth and instance, one colour per
# chosen consistent setting (its true 1 v 5 effect, pp); filled circles: four instances, each ladder
# stopping at the first rung that reaches the dashed 80 % line; open squares: twice the instances
# (replicate instances) at five runs per depth. Error bars: ±2 Monte Carlo standard errors over
# independent pools ({glue:text}`ch02c_n_power_reps` replications per design). Pink dotted line (on the
# shipped data only): the paper's runs per depth.
# ```

# %% tags=["remove-cell"]
glue_facts("ch02c", ch.exercise_facts(truths, defaults, list(p.robust_axes), p.z))

# %% [markdown]
# ## Exercises
#
# ```{exercise}
# :label: ch02c-ex1
#
# The criterion of conclusion (a) calls returns "diminishing" when the 1 v 5 truth is below a quarter
# of the 0 v 1 truth. Before running, predict what a stricter tenth does at the consistent settings,
# then re-execute with
# `.venv/bin/mechaudit execute notebooks/02c_robustness.py -p diminishing_ratio 0.1 --out runs/ex1`
# and compare {numref}`fig-ch02c-conclusion`.
# ```
#
# ````{solution} ch02c-ex1
# :class: dropdown
#
# A stricter ratio moves the line a 1 v 5 effect must stay under; the truths themselves do not change
# (same seeds), so the answer can be read from this chapter's grid: with a tenth, conclusion (a)
# {glue:text}`ch02c_ex1_status`, and where it fails the 0 v 1 truth is at most
# {glue:text}`ch02c_ex1_fails_0v1_max` pp. Settings with a large first-round effect and a small 1 v 5
# effect pass either criterion; the stricter one only adds failures among the settings that were
# already far from the paper's observation, or turns settings with a 1 v 5 effect of a few pp into
# "unclear" or "fails".
# ````
#
# ```{exercise}
# :label: ch02c-ex2
#
# At the committed setting the pooled same-depth divergence of depths 1 and 5 leaves a 1 v 5 ceiling of
# {glue:text}`ch02c_default_max_1v5_pp` pp under the paper-rate judge. Explain why no rule and no number
# of runs can measure a 1 v 5 extra divergence above it, and why the ceiling matters far more under the
# mechanism key.
# ```
#
# ````{solution} ch02c-ex2
# :class: dropdown
#
# The extra divergence of depths 1 and 5 is the mean cross-depth run divergence minus the pooled
# same-depth divergence. A run divergence is a share of matched pairs judged different, so it is at
# most 1 (100 %); the extra divergence is therefore at most 100 pp minus the same-depth divergence,
# whatever the sample size. Under the paper-rate judge critiqued runs differ in about two thirds of
# their pairs, which leaves room for a 1 v 5 effect of tens of pp: the committed setting's truth of
# {glue:text}`ch02c_default_truth_1v5_pp` pp is {glue:text}`ch02c_default_norm_1v5` of its ceiling, so
# later rounds change little in the simulator for another reason (the critic has found nearly every weak
# link in round one). Under the mechanism key almost every critiqued chain differs from every other, the
# same-depth divergence is near 100 % and the ceiling near zero: a small key-measured 1 v 5 effect would
# then say nothing about later rounds.
# ````
#
# ```{exercise}
# :label: ch02c-ex3
#
# A study can afford twice the runs of the paper's design. Should it double the runs per depth or
# the instances to detect a small 1 v 5 effect? Use {numref}`tbl-ch02c-power`.
# ```
#
# ````{solution} ch02c-ex3
# :class: dropdown
#
# For the largest consistent effect the power is {glue:text}`ch02c_top_power_4x10` with twice the runs
# per depth and {glue:text}`ch02c_top_power_8x5` with twice the instances
# ({glue:text}`ch02c_runs_vs_instances`). Both add the same number of runs, and the information grows
# roughly in proportion to the runs either way: the extra cross-depth run pairs within an instance share
# runs, so they do not add evidence in proportion to their number. Two cautions before choosing: the
# extra instances here are replicates of the four benchmark instances, which share their openings, so
# real new instances would vary more (and more instances would then help more than here); and only more
# instances tell you whether the effect generalises beyond the benchmark's questions.
# ````
#
# ## Try it
#
# - `truth_seeds = 2`: the truths come from half the simulated designs, so their Monte Carlo SE grows
#   by about 1.4 (other settings than the committed ones are computed in the run: minutes).
# - `calibration_file` naming a copy of `params/calibration.yaml` with `consistent_level: 0.68`: only
#   settings close to both of the paper's estimates count as consistent.
# - `robust_axes` with `p_challenge_sound`: sound links challenged more often.
# - `n_jobs = 1` runs the grids and replications in one process; results are identical, because every
#   replication has its own seed. `parallel_backend = "dask"` sends them to a Dask cluster (see the
#   re-running page).
#
# ## Key takeaways
#
# 1. Only some settings of the simulator give 0 v 1 and 0 v 5 effects consistent with the paper's two
#    estimates jointly; at those settings conclusion (a) {glue:text}`ch02c_status_sentence`.
# 2. Read a 1 v 5 effect against its ceiling: the same-depth divergence after critique limits how
#    large any later round's effect can be.
# 3. Over the consistent settings, the paper's design (4 instances, 5 runs per depth) detects the 1 v 5
#    effect with power {glue:text}`ch02c_power_range`: {glue:text}`ch02c_power_verdict` (doubling the
#    design: {glue:text}`ch02c_runs_vs_instances`).
