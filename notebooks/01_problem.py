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
# # The problem: divergence needs an equivalence rule
#
# ````{admonition} Question, answer and how we know
# :class: note
# :name: ch01-answer
# **Question.** Does the measured effect of self-critique depend on the rule that decides whether two
# hypotheses are the same mechanism?
#
# **Answer.** It can, and by a lot: from the very same toy runs the exact rule measures
# {glue:text}`ch01_extra_pp_exact` pp of extra divergence and the coarser initiator rule
# {glue:text}`ch01_extra_pp_initiator` pp, and the {glue:text}`ch01_n_pool` pooled hypotheses hold
# {glue:text}`ch01_groups_exact` distinct mechanisms under the first rule and
# {glue:text}`ch01_groups_initiator` under the second.
#
# **How we know.** Simulated: a documented toy design (`mechaudit.workflow.toy`, one instance, a fixed seed),
# no language model. The rules read the toy's known labels, so every verdict is true by construction;
# the gap between the rules depends on the toy's settings, which the exercises change.
# ````
#
# ```{admonition} Learning objectives
# :class: tip
# After this chapter you can
# - compute the run divergence of two runs from their matched pairs, and the extra divergence of two
#   critique depths from a divergence matrix;
# - explain why the same runs give a different effect size and a different count of distinct
#   mechanisms under a different equivalence rule;
# - read an exact permutation p-value together with the smallest value the test can give;
# - re-run the toy design with other parameters and predict the direction of the change first.
# ```
#
# Before an experiment settles which mechanism is right, two questions about a hypothesis
# generator can still be asked: does self-critique change what it delivers beyond the noise of
# simply re-running it, and how many genuinely different mechanisms does it deliver? Both answers
# rest on one pairwise judgement, *do these two hypotheses describe the same mechanism?*
# {cite}`byun2026auditing`. This chapter defines the quantities the book measures and computes them
# on a toy design small enough to check by hand.

# %% tags=["parameters", "remove-cell"]
# -p values land after this cell; every parameter and its default: book/rerun.md (mechaudit.book.settings)

# %% tags=["remove-cell"]
from IPython.display import display

from mechaudit import divergence
from mechaudit.book import ch01_problem as problem
from mechaudit.book.chapter import ChapterContext
from mechaudit.plots.problem import divergence_heatmaps
from mechaudit.report.facts import glue_facts
from mechaudit.schema import load_benchmark
from mechaudit.workflow import toy

ctx = ChapterContext.open(globals(), "01_problem")  # checked parameters, backend, LLM client
p = ctx.settings
if not ctx.show_paper:
    print("No comparison with published numbers (this chapter shows none in any case).")

# %% [markdown]
# ## Definitions
#
# Each hypothesis is a {term}`causal chain <Causal chain>`: an initiating event, intermediate
# biological steps (the route), and the experimental finding it explains.
#
# {term}`Equivalence rule`
# : a function $s(h, h') \in \{\text{same}, \text{different}\}$ on two hypotheses about the same
#   instance. The book compares lexical similarity ({term}`TF-IDF`), dense embeddings, an LLM judge
#   and documented deterministic {term}`reference judges <Reference judge>`.
#
# {term}`Matched pairs <Matched pair>`
# : two runs of the workflow start from the same fixed
#   {term}`opening hypotheses <Opening hypothesis>`; a delivered hypothesis keeps the id of the
#   opening it grew from, and the matched pairs of two runs are the pairs of delivered hypotheses
#   that share an opening.
#
# {term}`Run divergence`
# : for runs $r, r'$ with matched pairs $M(r, r')$,
#   $d(r, r') = \frac{1}{|M|}\sum_{(h, h') \in M} \mathbf{1}[s(h, h') = \text{different}]$:
#   0 when every matched pair is judged the same.
#
# {term}`Extra divergence`
# : with runs at critique depths $a$ and $b$,
#   $\Delta_{ab} = \overline{d}_{\text{cross}} - \overline{d}_{\text{same}}$, the mean divergence of
#   cross-depth run pairs minus the mean over same-depth pairs (both depths pooled). Re-running
#   alone produces same-depth divergence; only what exceeds it is attributed to the depth change.
#   It is reported in {term}`percentage points <Percentage point (pp)>` (pp).
#
# {term}`Measured diversity`
# : group a set of hypotheses by the rule (connected components of the "same" graph, or
#   {term}`complete linkage <Complete linkage>`) and count the groups.
#
# ## A toy instance
#
# The toy design (documented in `mechaudit.workflow.toy`) has one instance with `n_openings` opening
# hypotheses (here {glue:text}`ch01_n_openings`), re-run `n_runs` times (here {glue:text}`ch01_n_runs`)
# without critique (depth 0) and as often with one critique round (depth 1).
# A rerun sometimes develops its own route (probability `rerun_noise`); a critique round replaces
# the route with probability `critique_change`, and then also the initiating event with probability
# `initiator_change`. Every delivered mechanism is listed below (one row per run, one column per
# opening, {numref}`tbl-ch01-runs`; `I` labels an initiating event, `R` a route, a prime a
# critique's replacement and `~` a rerun's own route).

# %%
runs = toy.toy_design(p.n_openings, p.n_runs, p.rerun_noise,
                      p.critique_change, p.initiator_change, seed=p.seed)

# %% tags=["hide-input"]
ctx.table("toy_runs", toy.toy_table(runs), label="tbl-ch01-runs",
          caption="The delivered mechanism of every toy run (rows) for each opening hypothesis (columns).")

# %% [markdown]
# ## Run divergence of one pair of runs
#
# The first depth-0 run against the first depth-1 run: {glue:text}`ch01_n_matched` matched pairs, one
# per opening, with each rule's verdict ({numref}`tbl-ch01-pairs`).

# %%
pairs = divergence.matched_pairs(runs[0], runs[p.n_runs])
verdicts = problem.verdict_table(pairs)
run_div = {rule: divergence.run_divergence(verdicts[f"same ({rule})"])
           for rule in toy.TOY_RULES}

# %% tags=["hide-input"]
ctx.table("matched_pairs", verdicts, label="tbl-ch01-pairs",
          caption="The matched pairs of the first depth-0 and the first depth-1 run, with each rule's verdict.")

# %% [markdown]
# The run divergence of this pair is the share of "no" in a rule's column:
# {glue:text}`ch01_run_div_exact` under the exact rule and {glue:text}`ch01_run_div_initiator`
# under the initiator rule.
#
# ## Divergence matrices and extra divergence
#
# Every pair of the {glue:text}`ch01_n_runs_total` runs gives one run divergence
# ({numref}`fig-ch01-heatmaps`).

# %% tags=["remove-cell"]
matrices = problem.divergence_matrices(runs)
fig = divergence_heatmaps(matrices, [run[0].run for run in runs], n_a=p.n_runs, caption=ctx.caption())
fig = ctx.figure("divergence_heatmaps", fig, glue_as="ch01_fig_heatmaps")

# %% [markdown]
# ```{glue:figure} ch01_fig_heatmaps
# :name: fig-ch01-heatmaps
# :figwidth: 100%
#
# Run divergence (colour, 0 to 1: the share of matched pairs judged different) of every pair of toy
# runs under each rule. The white lines separate depth 0 (first {glue:text}`ch01_n_runs` runs) from
# depth 1: the upper-left block holds depth-0 reruns, the lower-right block depth-1 reruns and the
# off-diagonal blocks the cross-depth pairs. The diagonal (a run against itself) is blank. Simulated
# toy design, no LLM.
# ```

# %%
summary, n_splits = problem.extra_summary(matrices, p.n_runs)

# %% tags=["hide-input"]
ctx.table("extra_divergence", summary.assign(splits=n_splits), shown=summary, label="tbl-ch01-extra",
          caption="Same-depth, cross-depth and extra divergence of the toy runs under each rule.")

# %% [markdown]
# {numref}`tbl-ch01-extra` gives, per rule, the mean same-depth divergence at each depth, the mean
# cross-depth divergence (as shares of matched pairs), the extra divergence in pp and its exact
# p-value. Extra divergence
# subtracts the same-depth mean from the cross-depth mean. The
# {term}`exact permutation test <Exact p-value>` asks how unusual the observed value is among all
# ways of splitting the {glue:text}`ch01_n_runs_total` runs into two groups of
# {glue:text}`ch01_n_runs` ({glue:text}`ch01_n_splits` unordered splits); with one instance the
# smallest attainable p-value is one over that number, {glue:text}`ch01_min_p`. A p-value at that
# floor means no other split gave an effect as large; it cannot be smaller however large the effect.
#
# The coarser `initiator` rule does not see route changes, so from the same runs it reports
# {glue:text}`ch01_extra_pp_initiator` pp of extra divergence where the `exact` rule reports
# {glue:text}`ch01_extra_pp_exact` pp. Every pair the exact rule calls the same, the initiator rule
# calls the same too, so its run divergences can only be lower: that part is true by construction.
# Its extra divergence could in principle be the larger of the two (its same-depth divergence is
# lower as well, see the exercises); which is larger in a given run follows from the toy's settings,
# and the point it illustrates is the book's: **the effect size is a property of the rule as much as
# of the workflow.**
#
# ## Measured diversity depends on the rule
#
# Pool the hypotheses delivered by all {glue:text}`ch01_n_runs_total` runs and group them: the two
# rules count different numbers of distinct mechanisms in the same set.

# %%
groups = problem.group_counts(runs)

# %% tags=["hide-input"]
ctx.table("group_counts", groups, label="tbl-ch01-groups",
          caption="Distinct mechanisms among the pooled toy hypotheses, per rule and grouping.")

# %% [markdown]
# The same {glue:text}`ch01_n_pool` hypotheses hold {glue:text}`ch01_groups_exact` distinct mechanisms
# under the exact rule and {glue:text}`ch01_groups_initiator` under the initiator rule (complete
# linkage), and, for a rule that is not transitive, the count also depends on how the pairwise verdicts
# are turned into groups (both toy rules are transitive, so here the two groupings agree).
# {doc}`02_critique_depth` and {doc}`04_equivalence_rules` measure both effects on an open benchmark.
#
# ## One benchmark instance end to end
#
# The paper's instances are proprietary; this book ships {glue:text}`ch01_n_instances` open ones (see
# {doc}`../book/data`). Each is a well-established finding with a short evidence pack and fixed
# opening hypotheses ({glue:text}`ch01_n_bench_openings` for the instance below), written as causal
# chains of vocabulary entities. The instance `instance_id` (default: the first):

# %%
bench = load_benchmark(p.data_dir)
instance = problem.pick_instance(bench, p.instance_id)
print(f"{instance.id}: {instance.title}\nfinding: {instance.finding}")
n_hypotheses = len(bench.by_instance(instance.id))
print(f"evidence facts: {len(instance.evidence)};",
      f"hypotheses: {n_hypotheses}")

# %% tags=["hide-input"]
glue_facts("ch01", problem.chapter_facts(runs, verdicts, run_div, summary, n_splits, groups, bench, instance))
ctx.table("openings", problem.openings_table(bench, instance.id), label="tbl-ch01-openings",
          caption=f"The opening hypotheses of instance {instance.id}, written as causal chains.")

# %% [markdown]
# The controlled {term}`perturbations <Perturbation>` of the paper's Appendix C edit one of these
# hypotheses in four ways: two keep the mechanism (only the wording, or the wording plus the names of
# the entities), and two replace one link of the chain (the initiating event, or one intermediate
# step). The suite holds every kind for every hypothesis; here is the first opening's row of it, with
# the text each perturbation changed and the {term}`mechanism key <Mechanism key>` (initiating event,
# route, terminal finding) that the ground truth compares. `wording_only` leaves the statement and the
# chain as they were and rewrites only the explanation, so its chain reads exactly like the original's;
# its "what changed" column and the two explanations printed below show the rewritten text.

# %%
opening = bench.openings(instance.id)[0]
suite = problem.example_suite(bench, opening, p.data_dir, seed=p.seed)
variants = problem.perturbation_table(suite)

# %% tags=["hide-input"]
display(ctx.table("perturbation_example", variants, label="tbl-ch01-perturbations",
                  caption="One opening hypothesis and its four controlled perturbations."))
print(problem.explanations(suite))

# %% [markdown]
# ## Exercises
#
# ```{exercise}
# :label: ch01-ex1
#
# Before running: if critique never changes a mechanism (`critique_change = 0.0`), what happens to the
# extra divergence under both rules, and to the exact p-value? Then re-execute with
# `.venv/bin/mechaudit execute notebooks/01_problem.py -p critique_change 0.0 --out runs/ex1` and
# compare the table of extra divergences.
# ```
#
# ````{solution} ch01-ex1
# :class: dropdown
#
# Depth-1 runs become plain reruns, so cross-depth and same-depth pairs differ only by the rerun noise:
# the extra divergence should fall to near zero under both rules and the p-value should rise far above
# the floor. That run (`critique_change = 0.0`, `seed = 0`) gave 0.2 pp under the exact rule and
# 0.0 pp under the initiator rule, with an exact p-value of 1.0 for both. The initiator rule then sees
# no difference at all (no pair changes its initiating event); the exact rule still sees the reruns'
# own routes, at both depths alike.
# ````
#
# ```{exercise}
# :label: ch01-ex2
#
# Using only the matched-pair table of the first depth-0 and first depth-1 run, compute by hand the
# run divergence of that pair under each rule. Why can the `initiator` value never exceed the `exact`
# one?
# ```
#
# ````{solution} ch01-ex2
# :class: dropdown
#
# Count the "no" entries of a rule's "same" column and divide by the {glue:text}`ch01_n_matched` matched
# pairs: {glue:text}`ch01_run_div_exact` under `exact`, {glue:text}`ch01_run_div_initiator` under
# `initiator`. A pair with the same initiating event and the same route certainly has the same
# initiating event, so every "same" of the exact rule is a "same" of the initiator rule: the initiator
# rule has at most as many "no" entries.
# ````
#
# ```{exercise}
# :label: ch01-ex3
#
# The initiator rule's run divergences are never larger than the exact rule's. Does that make its extra
# divergence smaller too? Predict for `initiator_change = 1.0` (every critique change also replaces the
# initiating event), then re-execute with `-p initiator_change 1.0 --out runs/ex3`.
# ```
#
# ````{solution} ch01-ex3
# :class: dropdown
#
# No. Extra divergence is a difference, and the initiator rule lowers both of its terms. With
# `initiator_change = 1.0` it sees every critique change, but it ignores the reruns' own routes, so its
# same-depth divergence falls more than its cross-depth divergence. That run (`seed = 0`) gave
# 20.0 pp under the initiator rule against 14.2 pp under the exact rule (exact p 0.008, the floor
# 1/126, against 0.016): same-depth divergence 0.00 at depth 0 and 0.48 at depth 1 for the initiator
# rule, 0.38 and 0.52 for the exact rule, cross-depth divergence 0.44 against 0.59.
# ````
#
# ## Try it
#
# - `critique_change = 0.0` removes the critique effect ({ref}`ch01-ex1`).
# - `rerun_noise = 0.4` makes reruns disagree with each other: same-depth divergence rises, and
#   averaged over many seeds the extra divergence under the exact rule shrinks even though critique
#   changes as much as before. With five runs per depth one draw is noisy: try a few seeds before
#   trusting one.
# - `initiator_change = 1.0` makes the coarse rule see every critique change
#   ({ref}`ch01-ex3`).
# - `instance_id = "C"` walks through another benchmark instance.
#
# Re-run with, for example, `mechaudit execute notebooks/01_problem.py -p critique_change 0.0 --out runs/try`.
#
# ## Key takeaways
#
# 1. The run divergence of two runs is the share of their matched pairs that an equivalence rule
#    calls different; the extra divergence of two depths subtracts the rerun noise (same-depth
#    divergence) from the cross-depth divergence.
# 2. The effect size belongs to the rule as much as to the workflow: the same toy runs give
#    {glue:text}`ch01_extra_pp_exact` pp under the exact rule and {glue:text}`ch01_extra_pp_initiator`
#    pp under the initiator rule, and different counts of distinct mechanisms.
# 3. An exact p-value cannot fall below one over the number of splits ({glue:text}`ch01_min_p` here):
#    a p at that floor says that no split was more extreme, not that the effect is large.
