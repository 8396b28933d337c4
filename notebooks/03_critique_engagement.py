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
# # Critique engagement: how did the proposer answer the critic?
#
# ````{admonition} Question, answer and how we know
# :class: note
# :name: ch03-answer
# **Question.** How does the proposer answer the critic's demands?
#
# **Answer.** In this run {glue:text}`ch03_headline_conceded` % of the {glue:text}`ch03_n_demands`
# demands are conceded and {glue:text}`ch03_answered_pct` % answered (paper:
# {glue:text}`ch03_paper_conceded_pct` % and {glue:text}`ch03_paper_answered_pct` %). Concessions
# fall from {glue:text}`ch03_first_round_conceded_pct` % in round {glue:text}`ch03_first_round` to
# {glue:text}`ch03_last_round_conceded_pct` % in round {glue:text}`ch03_last_round`.
#
# **How we know.** Status: {glue:text}`ch03_headline_status`. The labels are the workflow
# simulator's own log, not an LLM judge's verdicts, and its replies to demands on sound links were
# **fitted to the paper's shares**: the closeness to the paper is a choice, not a finding (this run's
# shares lie within {glue:text}`ch03_max_gap_pp` pp of the paper's). The number
# of demands was not fitted and does not match: {glue:text}`ch03_n_demands` against the paper's
# {glue:text}`ch03_paper_demands`. The fall over rounds is built into the simulator. The LLM judge
# (`backend = "replay"` or `"anthropic"`) is not run offline.
# ````
#
# ```{admonition} Learning objectives
# :class: tip
# After this chapter you can
# - tell the four {term}`engagement labels <Engagement label>` apart and compute their shares;
# - explain why a share that matches the paper can be true by choice (calibration), not a finding;
# - explain why the conceded share falls from round to round in the simulator ({term}`weak links <Weak link>`
#   get used up);
# - re-run the chapter with another simulator setting and predict what the shares do.
# ```
#
# Every critique round, the critic raises demands and the proposer replies. This chapter labels each
# reply by how it dealt with its demand and counts the labels, as the paper does
# {cite}`byun2026auditing`.
#
# In the paper an LLM judge labelled each of {glue:text}`ch03_paper_demands` critic demands:
# {glue:text}`ch03_paper_conceded_pct` % conceded, {glue:text}`ch03_paper_answered_pct` % answered,
# {glue:text}`ch03_paper_partial_pct` % partially addressed and {glue:text}`ch03_paper_dropped_pct` %
# dropped. The labels describe engagement, not whether the change was right, and the paper stresses
# that they do not measure how much critique changed the final hypotheses; that is the job of the
# divergence analysis in {doc}`02_critique_depth`.
#
# Label definitions (our wording of the paper's App. E.1): *answered*: the reply takes the demand up
# with a reason, evidence or an explicit ground for not complying; *conceded*: it withdraws, corrects
# or weakens the challenged claim; *partial*: it takes the demand up but leaves part unmet; *dropped*:
# it does not take the demand up.
#
# With `backend = "reference"` the runs come from the workflow **simulator**, which decides each
# reply's engagement itself: the labels below are the simulator's own log, not the verdicts of an
# LLM judge, so there is no judge error in them. With `backend = "anthropic"` or `"replay"` the real
# workflow's demands are labelled by the LLM judge (`mechaudit.engagement.JUDGE_SYSTEM`).

# %% tags=["parameters", "remove-cell"]
# -p values land after this cell; every parameter and its default: book/rerun.md (mechaudit.book.settings)

# %% tags=["remove-cell"]
from mechaudit.book.chapter import SIMULATED, ChapterContext

ctx = ChapterContext.open(globals(), "03_critique_engagement")  # checked parameters, backend, LLM client
p = ctx.settings

# %% tags=["remove-cell"]
from IPython.display import display

from mechaudit.book import ch03_critique_engagement as ch
from mechaudit.engagement import engagement_table
from mechaudit.plots.workflow import engagement_figure
from mechaudit.report.facts import glue_facts
from mechaudit.report.glue import glue
from mechaudit.workflow import workflow_setup

glue("ch03_headline_status", ctx.status(p.judge_model, SIMULATED))
if ctx.show_paper:
    glue_facts("ch03_paper", ch.paper_engagement())
paper = ch.paper_shares() if ctx.show_paper else None
setup = workflow_setup(ctx.client, data_dir=p.data_dir, design_file=p.design_file, simulator_file=p.simulator_file,
                       seed=p.seed, generator_model=p.generator_model, json_retries=p.json_retries)

# %% [markdown]
# ## Labels of all demands, this run beside the paper
#
# One call labels every demand of the delivered runs (with an LLM backend it also shows and drops
# the demands whose judge reply stayed invalid); one more counts the labels.

# %%
labelled = ch.label_runs(setup.delivery, p.judge_model, p.json_retries)
shares = ch.shares_table(labelled, paper)

# %% tags=["hide-input"]
print(f"{len(labelled)} demands in {labelled.run_id.nunique()} critiqued runs (of {setup.design.n_runs}); "
      f"labels from: {ch.label_source(ctx.backend)}")
display(ctx.table("engagement", shares, label="tbl-ch03-shares",
                  caption="Share of all critic demands per engagement label"
                          + (", this run beside the paper." if ctx.show_paper else ".")))

# %% tags=["remove-cell"]
glue_facts("ch03", ch.run_shares(labelled, shares, ctx.llm))

# %% [markdown]
# The "paper vs this run" table (switched off with `compare_paper = False`, the default on your own
# data):

# %% tags=["hide-input"]
if (table := ctx.paper_table(ch.paper_rows(labelled, ctx.backend), label="tbl-ch03-paper",
                             caption="The paper's engagement shares and this run's.")) is not None:
    display(table)

# %% [markdown]
# **Read this comparison as a calibration, not a reproduction.** With `backend = "reference"` the
# shares come from the simulator, whose reply probabilities were set so that the mixture lands near
# the paper's shares: in `params/simulator.yaml`, `reply_weak` was set by hand with the paper's mixture
# in view and `reply_sound` was solved for it (both are listed as fitted in `params/calibration.yaml`,
# and the calibration is described in {doc}`Appendix 2A <../book/ch02_appendix>`). This run's shares
# ({glue:text}`ch03_conceded_pct` % conceded, {glue:text}`ch03_answered_pct` % answered,
# {glue:text}`ch03_partial_pct` % partial, {glue:text}`ch03_dropped_pct` % dropped) sit within
# {glue:text}`ch03_max_gap_pp`
# {term}`percentage points <Percentage point (pp)>` of the paper's because they were set to match them;
# {glue:text}`ch03_floor_sentence`. The match says the simulator was set up as intended, not that the
# workflow behaves like the paper's.
#
# ## The number of demands: a misfit
#
# The demand count was not a calibration target, and it does not fit. The table sets this run's count
# beside the paper's for the same design of {glue:text}`ch03_n_runs` runs, per design and per run and
# round of critique. Only the {glue:text}`ch03_critiqued_runs` runs with critique raise demands, and
# they hold {glue:text}`ch03_critique_rounds` run-rounds of critique: each run at depth 1 has one
# round, each at depth 5 has five.

# %%
runs = setup.delivery.runs
# delivered hypotheses per run
per_run = sum(len(r.delivered) for r in runs) / len(runs)
paper_demands = (ch.paper_engagement().demands if ctx.show_paper
                 else None)
density = ch.density_table(len(labelled), paper_demands, setup.design,
                           per_run)

# %% tags=["hide-input"]
ctx.table("demand_density", density, label="tbl-ch03-density",
          caption="How many demands: this run's count per design, per run and "
                  "round and per hypothesis and round"
                  + (", beside the paper's where the comparison is on."
                     if ctx.show_paper else "."))

# %% tags=["remove-cell"]
glue_facts("ch03", ch.misfit(labelled, density, setup, ctx.backend))

# %% [markdown]
# {glue:text}`ch03_misfit_scope`. {glue:text}`ch03_demand_sentence`. The simulator's critic
# raises one demand for every weak link it finds in every hypothesis ({glue:text}`ch03_per_hyp_round`
# per hypothesis and round), and the calibration of chapter 02 makes nearly every step weak (a step is
# weak with probability {glue:text}`ch03_p_weak_supported` if the evidence pack names it and
# {glue:text}`ch03_p_weak_unsupported` if not) and has the critic find an open weak link with
# probability {glue:text}`ch03_p_find` per round, because that is what it takes for a judge with the
# paper's sensitivity to see the paper's first-round effect. That reading rests on an assumption of
# this book, not of the paper: the paper-rate judge notices a change of several steps step by step, at
# the rates the paper measured for single swaps, independently. Under it, the paper's workflow produced
# that much judged change with far fewer demands: either one demand often changed more than one step,
# or the critic addressed several hypotheses at once; this simulator does neither. A real judge that
# notices a multi-step change more readily than independent single swaps suggest would need fewer
# changed steps, and so fewer demands, for the same effect. Three consequences for this chapter:
#
# - the shares above are shares of the simulator's {glue:text}`ch03_n_demands` demands,
#   {glue:text}`ch03_weak_share_pct` of which hit a weak link; the paper's
#   {glue:text}`ch03_paper_conceded_pct` % is a share of {glue:text}`ch03_paper_demands` demands whose
#   mix of targets is unknown, so the two shares describe different populations of demands even where
#   they agree;
# - the fitted `reply_sound` (a demand on a sound link is conceded with probability
#   {glue:text}`ch03_reply_sound_conceded`) is not an estimate of how a real
#   proposer answers a sound demand: it is whatever completes the mixture given too many weak-link
#   demands, and it would change if the simulator raised as few demands as the paper's critic;
# - the round-by-round shares below, and their fall, follow from the simulator's one-demand-per-weak-link
#   critic that finds nearly everything in round one; they are not a prediction of how the paper's
#   demands were spread over rounds (the paper does not say).
#
# ## Shares round by round
#
# The simulator's reply probabilities depend on whether a demand hits a weak link (a chain step with
# little support in the evidence pack, mostly conceded) or a sound one (mostly answered); see
# `params/simulator.yaml`. The overall shares above are a mixture that follows from how many weak links
# are still open, so they shift from round to round:

# %%
by_round = ch.round_shares(labelled)

# %% tags=["hide-input"]
display(ctx.table("engagement_by_round", by_round, label="tbl-ch03-rounds", unit="%",
                  caption="Share of demands per engagement label (%) in each critique round."))

# %% tags=["remove-cell"]
glue_facts("ch03", ch.round_facts(by_round))
fig = engagement_figure(engagement_table(labelled), paper, caption=ctx.caption(),
                        by_round=engagement_table(labelled, by="round"),
                        ours_label=f"this run ({ch.label_source(ctx.backend)})")
fig = ctx.figure("engagement", fig, glue_as="ch03_fig_engagement")

# %% [markdown]
# ```{glue:figure} ch03_fig_engagement
# :name: fig-ch03-engagement
# :figwidth: 100%
#
# Top: share of all demands (%) per engagement label in this run (blue) and, on the shipped data,
# in the paper (pink; the simulator was calibrated to these). Bottom: the shares per critique round;
# under each round its number of demands n. No error bars: the shares are of every demand of this
# simulated run, not estimates from a sample of them.
# ```
#
# In round {glue:text}`ch03_first_round` {glue:text}`ch03_first_round_conceded_pct` % of demands are
# conceded; by round {glue:text}`ch03_last_round` that share is {glue:text}`ch03_last_round_conceded_pct` %
# and {glue:text}`ch03_last_round_answered_pct` % are answered ({numref}`fig-ch03-engagement`, bottom).
# With the reference backend this is how the simulator is built, not something it discovered: weak
# links are mostly conceded and then repaired, so later rounds mostly challenge sound steps, which the
# proposer mostly answers. The same built-in assumption (weak links get used up) produces the
# simulator's diminishing returns of {term}`critique depth <Critique depth>` in
# {doc}`02_critique_depth`. Neither is evidence that a real workflow behaves this way.
#
# The two kinds of target, side by side (shares in %; with an LLM backend, which knows no weak links:
# demands per depth and label):

# %% tags=["hide-input"]
ctx.table("engagement_by_target", ch.target_table(labelled), label="tbl-ch03-target", unit="%",
          caption="Engagement labels of demands on weak links and on sound links.")

# %% [markdown]
# ## LLM usage
#
# What this run asked of the LLM API: calls sent (`api`, or `batch` at the batch discount) and
# requests answered from the response cache (`cache`), tokens, and the cost estimated from
# `params/prices.yaml`. With the offline backend no LLM is called.

# %% tags=["hide-input"]
ctx.usage()

# %% tags=["remove-cell"]
# numbers the exercise solutions quote, simulated here so that they follow the parameter files
glue_facts("ch03", ch.exercises(setup, p.seed, labelled, shares, by_round, ctx.llm))

# %% [markdown]
# ## Exercises
#
# ```{exercise}
# :label: ch03-ex1
#
# `params/simulator_null.yaml` is the simulator with `critique_changes_mechanism: false`: a critic's
# demand can still be conceded and its weak link "repaired", but the repair never changes the
# mechanism. Before running, predict: do the engagement shares change, and does the conceded share
# still fall over rounds? Then re-execute with
# `.venv/bin/mechaudit execute notebooks/03_critique_engagement.py -p simulator_file
# simulator_null.yaml --out runs/ex1` and compare the tables.
# ```
#
# ````{solution} ch03-ex1
# :class: dropdown
#
# Nothing changes. Simulated with the null file and the same seed (in a hidden cell of this chapter),
# the design gives {glue:text}`ch03_ex1_n` demands, {glue:text}`ch03_ex1_conceded` % conceded, and
# {glue:text}`ch03_ex1_same_rounds` shares round by round as the default run. The simulator decides
# whether a demand is raised and how it is answered before, and independently of, what a repair does
# to the mechanism, and a conceded weak link is closed either way. This is the paper's caution made
# concrete: engagement labels say how the proposer answered, not how much critique changed the
# hypotheses. Under the null setting the true extra divergence between depths is zero by
# construction ({doc}`02b_validity` uses it to check the test's size), with an unchanged engagement mix.
# ````
#
# ```{exercise}
# :label: ch03-ex2
#
# How much of the gap between this run's shares and the paper's is seed noise? Predict whether the
# conceded share moves by more or by less than {glue:text}`ch03_max_gap_pp` pp when the seed
# changes, then run `.venv/bin/mechaudit execute notebooks/03_critique_engagement.py -p seed 1 --out
# runs/ex2`.
# ```
#
# ````{solution} ch03-ex2
# :class: dropdown
#
# By more than the binomial standard error suggests. For a share p of n demands that error is
# sqrt(p (1 - p) / n), here about {glue:text}`ch03_binomial_se_pp` pp, but the demands of one run are not
# independent:
# the number of weak links a run's hypotheses carry sets both how many demands there are and how many
# are conceded, so whole runs move together. Simulated with seed {glue:text}`ch03_ex2_seed` (in a hidden
# cell), the design gives {glue:text}`ch03_ex2_n` demands with {glue:text}`ch03_ex2_conceded` % conceded,
# against {glue:text}`ch03_n_demands` and {glue:text}`ch03_conceded_pct` % with this run's seed. A match
# within a couple of points is all a calibration can promise at this number of runs.
# ````
#
# ```{exercise}
# :label: ch03-ex3
#
# The paper's labels come from an LLM judge, this chapter's offline labels from the simulator's log.
# Name one kind of error the paper's shares can contain that the offline shares cannot, and say how
# you would measure it with the tools of {doc}`07_sensitivity`.
# ```
#
# ````{solution} ch03-ex3
# :class: dropdown
#
# Judge error: an LLM can label an answered demand as conceded (or the reverse), and the shares then
# mix engagement with the judge's mistakes. The simulator's log has no judge, so its labels are right
# by construction. Chapter 07 measures the same kind of error for the equivalence judges: it asks
# the question again (another model, the order reversed) and reports raw agreement and
# {term}`Cohen's kappa <Cohen's kappa (κ)>`. Doing that for the engagement judge (label the same
# demands with two models; `mechaudit.agreement.cohen_kappa` per label, e.g. conceded or not) shows how far a
# share can move with the judge alone.
# ````
#
# ## Try it
#
# - In a copy of `params/simulator.yaml`, lower `reply_weak.conceded` and raise `reply_weak.answered`
#   (a proposer that defends its weak steps), then set `simulator_file` to the copy: fewer concessions,
#   and in the critique-depth chapter a smaller 0 v 1 effect.
# - In such a copy, lower `p_find`: the critic raises fewer demands per round, closer to the paper's
#   count, and the critique-depth chapter shows what that does to the 0 v 1 and 1 v 5 effects.
# - `p_challenge_sound = 0.5` in such a copy: the critic challenges sound steps more often and the share
#   of answered demands grows.
# - `backend = "replay"` or `"anthropic"`: label the real workflow's demands with the LLM judge.
#
# ## Key takeaways
#
# 1. Offline, the engagement shares ({glue:text}`ch03_conceded_pct` % conceded) match the paper's
#    because the simulator's reply probabilities were fitted to them: a calibration, not a
#    reproduction.
# 2. The conceded share falls from round to round ({glue:text}`ch03_first_round_conceded_pct` % to
#    {glue:text}`ch03_last_round_conceded_pct` %) because weak links get used up, an assumption built
#    into the simulator.
# 3. Engagement labels say how the proposer answered, not how much critique changed the hypotheses:
#    that is what extra divergence measures.
