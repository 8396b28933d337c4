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
# # Sensitivity: thresholds, agreement between rules, and judge stability
#
# ````{admonition} Question, answer and how we know
# :class: note
# :name: ch07-answer
# **Question.** At the paper's thresholds, how far do three equivalence methods agree on pairs of
# hypotheses about the same instance?
#
# **Answer.** Raw agreement {glue:text}`ch07_headline_agreement` of pairs, Cohen's kappa
# {glue:text}`ch07_headline_kappa` (the paper:
# {glue:text}`ch07_paper_raw_agreement_pct_low`-{glue:text}`ch07_paper_raw_agreement_pct_high` %,
# kappa {glue:text}`ch07_paper_kappa_low`-{glue:text}`ch07_paper_kappa_high`).
# {glue:text}`ch07_complete_sentence`
#
# **How we know.** TF-IDF and all-MiniLM-L6-v2 embeddings are computed locally on the committed
# hypotheses; status of the third method: {glue:text}`ch07_headline_status`. Offline it is the
# {term}`reference judge <Reference judge>`, not an LLM, and the LLM stability check is not run; a
# small real LLM served on this machine (SmolLM2-135M) joins from its recorded answers where they
# are complete.
# ````
#
# ```{admonition} Learning objectives
# :class: tip
# After this chapter you can
# - read a threshold sweep, tell whether any threshold separates swapped from reworded pairs, and
#   say how the answer depends on how the perturbation suite was built;
# - compute raw agreement and {term}`Cohen's kappa <Cohen's kappa (κ)>` between two rules, and tell
#   them apart;
# - test exactly (not only on a grid) whether any threshold gives complete agreement;
# - re-run the stability check of an LLM judge (repetition, order reversal, judge model).
# ```
#
# The similarity rules need a threshold, and the paper's values ({glue:text}`ch07_paper_tfidf_threshold`
# for {term}`TF-IDF <TF-IDF>`, {glue:text}`ch07_paper_embedding_threshold` for embeddings) are choices.
# This chapter moves the thresholds, measures how far the rules agree with each other, and checks how
# stable a judge's decisions are.
#
# Its Appendix D {cite}`byun2026auditing` asks three questions that this chapter repeats: how do the
# decisions move with the threshold, does any threshold make the rules agree completely (the paper's
# figures: at its chosen thresholds the three methods agreed on
# {glue:text}`ch07_paper_raw_agreement_pct_low`-{glue:text}`ch07_paper_raw_agreement_pct_high` % of
# pairs, Cohen's kappa {cite}`cohen1960kappa`
# {glue:text}`ch07_paper_kappa_low`-{glue:text}`ch07_paper_kappa_high`, and no threshold gave complete
# agreement), and how stable is the LLM judge under repetition, order reversal and a change of judge
# model?
#
# Two sets of pairs are used. The **perturbation suites** have a known answer per kind: the
# template-built suite (`data/perturbations.jsonl`, whose swap variants re-render the original's
# template with one entity changed) and the reworded suite (`data/perturbations_reworded.jsonl`,
# the same swaps with every statement and explanation written afresh; chapter 05 describes both).
# The **committed-set pairs** are all pairs of committed hypotheses about the same instance
# (`data/hypotheses.jsonl`), the closest open analogue of the paper's generated sets: they have no
# perturbation labels, so only agreement between rules can be measured on them.

# %% tags=["parameters", "remove-cell"]
# -p values land after this cell; every parameter and its default: book/rerun.md (mechaudit.book.settings)

# %% tags=["remove-cell"]
from IPython.display import display

from mechaudit.book import ch07_sensitivity as ch
from mechaudit.book.chapter import ChapterContext
from mechaudit.book.selfserved import recorded
from mechaudit.perturb import KINDS, SUITE_LABELS
from mechaudit.plots.rules import agreement_vs_threshold, threshold_sweep_lines
from mechaudit.report.facts import glue_facts

ctx = ChapterContext.open(globals(), "07_sensitivity")  # checked parameters, backend, LLM client
p = ctx.settings
thresholds = {"tfidf": p.tfidf_threshold, "embedding": p.embedding_threshold}
selfserved = recorded(ctx.llm, p.data_dir)  # offline: the recorded answers of the self-served SmolLM2-135M

# %%
s = ch.setup(p)
suites = ch.suites_of(p.data_dir)

# %% tags=["hide-input"]
print("; ".join(f"{SUITE_LABELS[n]}: {len(pairs)} valid pairs" for n, (pairs, _) in suites.items())
      + f"; committed-set pairs: {len(s.set_pairs)} (same-instance pairs of {len(s.bench.hypotheses)} hypotheses)")

# %% [markdown]
# ## Threshold sweeps on the perturbation suites
#
# For each threshold, the share of pairs of each kind that the rule calls different, on each suite.
# A good rule would keep the two meaning-preserving kinds near 0 % while the two swap kinds rise
# towards 100 %.

# %%
suite_sim = {n: ch.similarities(s, pairs)
             for n, (pairs, _) in suites.items()}
suite_kinds = {n: kinds for n, (_, kinds) in suites.items()}
sweep = ch.sweep_by_suite(suite_sim, s.grids, kinds=suite_kinds)

# %% tags=["hide-input"]
wide = sweep.pivot_table(index=["suite", "rule", "threshold"], columns="kind", values="pct_different").round(1)
ctx.save("percent_different_by_threshold", wide.reindex(columns=[k for k in KINDS if k in wide.columns]))
print(f"{len(wide)} (suite, rule, threshold) rows x {wide.shape[1]} kinds; the figure below shows them")

# %% tags=["remove-cell"]
fig = threshold_sweep_lines(sweep, thresholds,
                            caption=ctx.caption("TF-IDF and all-MiniLM-L6-v2 embeddings computed locally"))
fig = ctx.figure("threshold_sweep", fig, glue_as="ch07_fig_sweep")

# %% [markdown]
# ```{glue:figure} ch07_fig_sweep
# :name: fig-ch07-sweep
# :figwidth: 100%
#
# Percent of valid perturbation pairs called different (cosine below the threshold) against the
# threshold, per perturbation kind; left TF-IDF, right all-MiniLM-L6-v2 embeddings; top the
# template-built suite, bottom the reworded suite. One point per grid threshold (no error bars:
# every valid pair is judged once). Lines that coincide are drawn with different markers, marker
# sizes and line styles. Dashed vertical lines: the thresholds in use (`tfidf_threshold`,
# `embedding_threshold`; by default the paper's).
# ```
#
# Is there *any* threshold, not just one on the grid of {numref}`fig-ch07-sweep`, at which a rule
# calls every meaning-preserving pair the same and every swapped pair different?
# `complete_agreement_interval` answers exactly: it exists only if every meaning-preserving pair is
# more similar than every swapped pair. The table gives, per suite and rule, the two cosines that
# decide it and how often a rewording is the more similar member when one rewording and one swap
# are compared (100 % for a perfect separation, 50 % for a coin, below 50 % when swaps look more
# alike than rewordings).

# %%
separating, seps = ch.separation_by_suite(suite_sim, s.grids,
                                          kinds=suite_kinds)

# %% tags=["hide-input"]
ctx.table("separating_thresholds", separating, label="tbl-ch07-separating",
          caption="Per suite and similarity rule: the threshold range that would separate meaning-preserving "
                  "from swapped pairs, if any.")

# %% [markdown]
# ## Agreement between rules on the committed-set pairs
#
# Raw agreement and Cohen's kappa (`mechaudit.agreement`, checked against scikit-learn in the
# tests) of each similarity rule, across its threshold range, with the other methods at their
# fixed settings: the reference judge (`reference_rubric`) and the other similarity rule at the
# paper's threshold. With an LLM backend the first of `judge_models` joins as a fourth method.
# Offline on the shipped benchmark, the self-served SmolLM2-135M of chapter 05 (a real LLM on
# llama.cpp's server on this machine, its answers recorded by `make local-judge` and replayed here,
# sent nowhere) joins as a further method, with the same prompt, rubric and orders, once its answers
# for every pair are recorded. {glue:text}`ch07_selfserved_coverage`

# %%
set_sim = ch.similarities(s, s.set_pairs)
fixed = ch.fixed_decisions(s, set_sim, client=ctx.client,
                           model=p.judge_models[0], rubric=p.judge_rubric,
                           orders=p.judge_orders, selfserved=selfserved)
agree = ch.agreement_sweep(set_sim, s.grids, fixed)

# %% tags=["hide-input"]
if selfserved is not None:  # replayed, or how much of it is recorded
    print(f"{selfserved.label}: {fixed.selfserved_pairs} of {len(s.set_pairs)} pairs recorded")

# %% tags=["remove-cell"]
fig = agreement_vs_threshold(agree, thresholds, caption=ctx.caption("committed-set pairs"))
fig = ctx.figure("agreement_vs_threshold", fig, glue_as="ch07_fig_agreement")

# %% [markdown]
# ```{glue:figure} ch07_fig_agreement
# :name: fig-ch07-agreement
# :figwidth: 100%
#
# Raw agreement (left, fraction of pairs with the same decision) and Cohen's kappa (right, agreement
# corrected for chance; 0 = chance level, grey line) of each similarity rule with every other method,
# against the rule's threshold, on all same-instance pairs of committed hypotheses. Top row TF-IDF,
# bottom row embeddings. No error bars: every pair is judged once. Dashed vertical lines: the
# thresholds in use (by default the paper's).
# ```
#
# {numref}`fig-ch07-agreement` shows the whole threshold range. At the paper's thresholds, every pair
# of methods, with each method's rate of "same" decisions:

# %%
at_thresholds = ch.agreement_at_thresholds(fixed)

# %% tags=["hide-input"]
ctx.table("agreement_at_thresholds", at_thresholds, label="tbl-ch07-agreement",
          caption="Raw agreement and Cohen's κ between the rules at the "
                  + ("paper's" if ctx.show_paper else "default") + " thresholds, committed-set pairs.")

# %% [markdown]
# {glue:text}`ch07_selfserved_answer`
#
# The best each similarity rule can do on the grid, and whether any real threshold gives complete
# agreement with each other method (exact, as above):

# %%
best = ch.best_agreement(agree, set_sim, fixed)

# %% tags=["hide-input"]
ctx.table("best_kappa", best, label="tbl-ch07-best",
          caption="The threshold of highest κ for each similarity rule and other method, and whether any "
                  "threshold gives complete agreement.")

# %% [markdown]
# ## Stability of the LLM judge
#
# The paper judged 180 generated-set pairs again with the same order (0 decisions changed), with
# the order reversed (5 changed, 3 %), and with three judge models (96.1-98.3 % agreement, kappa
# 0.86-0.94). With an LLM backend, this section draws `stability_pairs` committed-set pairs with
# `seed`, judges them with every model in `judge_models` under `judge_orders` (one client: one
# cache and one ledger; a model name may name another provider, e.g. `gpt-5.5` with the optional
# OpenAI extra), and reports the same three numbers: per model its repeat and order-reversal
# changes and "same" rate, the agreement between models (raw agreement and kappa of their majority
# decisions, pairs undecided by either model left out), and the range of each per-model estimate
# over models, the kind of range the paper's Fig. 5 gives for its {term}`extra divergence <Extra divergence>`.
# The deterministic rules need no such check: TF-IDF, embeddings and the reference judges give the
# same answer on every call and in both orders (tested in `tests/test_rules_reference.py`), so
# offline this section shows only that, and one sentence says the judge models were not run.
# Offline on the shipped benchmark the self-served SmolLM2-135M joins the table when its answers
# for every drawn pair, in every order, are recorded.

# %%
sample = ch.stability_sample(s, p.stability_pairs, p.seed)
check = ch.stability_check(s, sample, client=ctx.client,
                           models=p.judge_models, rubric=p.judge_rubric,
                           orders=p.judge_orders, selfserved=selfserved)

# %% tags=["hide-input"]
if check.agreement is not None:
    display(check.agreement)
display(ctx.table("stability", check.table, label="tbl-ch07-stability",
                  caption="Stability of the judges: decisions changed by repeating and by reversing the order."))
if selfserved is not None:  # replayed, or how much of it is recorded
    print(f"{selfserved.label}: {check.selfserved_pairs} of {len(sample)} pairs recorded")
ctx.save("judge_model_ranges", ch.model_ranges(check, p.judge_models))

# %% [markdown]
# {glue:text}`ch07_selfserved_stability`

# %% [markdown]
# ## Paper vs this run
#
# The paper's agreement range is over TF-IDF, Titan embeddings and its LLM judge. With an LLM
# backend the range below is over TF-IDF, all-MiniLM-L6-v2 embeddings ("MiniLM") and the first judge
# model. Offline the third method is the reference judge, and the range is not an LLM result; the
# stability check's pairs are drawn and judged by the offline rules, and the rows that count an LLM
# judge's changed decisions say "not run". Rows marked "self-served SmolLM2" follow for each step
# whose answers are all recorded: the range with it as the third method, and its stability, measured
# by a real but small LLM.

# %% tags=["hide-input"]
three = ch.three_methods(fixed)
paper = ctx.paper_table(ch.paper_table(three, fixed, check, llm=ctx.llm, tfidf_threshold=p.tfidf_threshold,
                                       embedding_threshold=p.embedding_threshold),
                        caption="The paper's agreement and stability numbers and this run's.", label="tbl-ch07-paper")
if paper is not None:
    display(paper)

# %% tags=["remove-cell"]
glue_facts("ch07", ch.chapter_facts(ctx, p.judge_models[0], s, fixed, three, at_thresholds, best, seps, check))

# %% [markdown]
# ## LLM usage
#
# What this run asked of the LLM API: calls sent (`api`, or `batch` at the batch discount) and
# requests answered from the response cache (`cache`), tokens, and the cost estimated from
# `params/prices.yaml`. With the offline backend no LLM is called.

# %%
ctx.usage(pairs=len(s.set_pairs))

# %% [markdown]
# ## Reading the result
#
# **On the template-built suite the outcome is built in.** A swapped variant there is its original
# with one name changed, so a text rule sees it as about as similar as a reworded pair, or more: the
# mean TF-IDF cosine is {glue:text}`ch07_tfidf_mean_sim_swapped` for swapped and
# {glue:text}`ch07_tfidf_mean_sim_mp` for meaning-preserving pairs, the mean embedding cosine
# {glue:text}`ch07_embedding_mean_sim_swapped` and {glue:text}`ch07_embedding_mean_sim_mp`, and a
# rewording is the more similar member of a (rewording, swap) comparison in only
# {glue:text}`ch07_tfidf_rewording_more_similar_pct` % (TF-IDF) and
# {glue:text}`ch07_embedding_rewording_more_similar_pct` % (embeddings) of cases. Whether a threshold
# separates the kinds on this suite is therefore decided by how the suite was built (true by
# construction), not by the rules: here {glue:text}`ch07_separating_sentence`.
#
# **On the reworded suite it is measured.** Every variant's statement and explanation were written
# afresh, so a swap changes wording as well as mechanism. The mean TF-IDF cosine is
# {glue:text}`ch07_rw_tfidf_mean_sim_swapped` for swapped and {glue:text}`ch07_rw_tfidf_mean_sim_mp`
# for meaning-preserving pairs, the mean embedding cosine {glue:text}`ch07_rw_embedding_mean_sim_swapped`
# and {glue:text}`ch07_rw_embedding_mean_sim_mp`; a rewording is the more similar member in
# {glue:text}`ch07_rw_tfidf_rewording_more_similar_pct` % (TF-IDF) and
# {glue:text}`ch07_rw_embedding_rewording_more_similar_pct` % (embeddings) of comparisons. The lowest
# grid threshold that calls at least half of the swapped pairs different
# ({glue:text}`ch07_rw_tfidf_half_threshold` for TF-IDF, {glue:text}`ch07_rw_embedding_half_threshold`
# for embeddings) also calls {glue:text}`ch07_rw_tfidf_half_mp_pct` % and
# {glue:text}`ch07_rw_embedding_half_mp_pct` % of the meaning-preserving pairs different. A threshold
# that separates the two groups exactly exists only if the least similar meaning-preserving pair
# (TF-IDF {glue:text}`ch07_rw_tfidf_min_sim_mp`, embeddings {glue:text}`ch07_rw_embedding_min_sim_mp`)
# is more similar than the most similar swapped pair ({glue:text}`ch07_rw_tfidf_max_sim_swapped` and
# {glue:text}`ch07_rw_embedding_max_sim_swapped`); on this suite
# {glue:text}`ch07_rw_separating_sentence`. This, not the template suite's result, is the measurement of
# whether a threshold can tell the kinds apart; chapter 05 lists which of its conclusions change
# between the suites.
#
# On the committed-set pairs: {glue:text}`ch07_complete_sentence` The best kappa with the
# structure-reading reference judge on the grid is
# {glue:text}`ch07_tfidf_best_kappa_reference` for TF-IDF and
# {glue:text}`ch07_embedding_best_kappa_reference` for embeddings. The paper found no threshold
# giving complete agreement. The levels are a different matter: at the paper's thresholds the three
# methods here agree on {glue:text}`ch07_agreement_pct_low`-{glue:text}`ch07_agreement_pct_high` % of
# pairs (kappa {glue:text}`ch07_kappa_low`-{glue:text}`ch07_kappa_high`), against the paper's
# {glue:text}`ch07_paper_raw_agreement_pct_low`-{glue:text}`ch07_paper_raw_agreement_pct_high` %
# (kappa {glue:text}`ch07_paper_kappa_low`-{glue:text}`ch07_paper_kappa_high`). The two ranges cannot
# be compared number for number: the pairs differ (every same-instance pair of hypotheses written for
# this book, against the paper's generated sets), so does the embedding model, and offline the third
# method is the reference judge, not an LLM.
#
# ## Exercises
#
# ```{exercise}
# :label: ch07-ex1
#
# At the paper's thresholds, raw agreement between the reference judge and TF-IDF is
# {glue:text}`ch07_ref_tfidf_agreement`, yet kappa is only {glue:text}`ch07_ref_tfidf_kappa`. Using
# the "same" rates in the table at the paper's thresholds, explain how both can be true.
# ```
#
# ````{solution} ch07-ex1
# :class: dropdown
#
# Kappa subtracts the agreement two methods would reach by chance given how often each says "same".
# The reference judge calls {glue:text}`ch07_ref_same_pct` % of committed-set pairs the same and
# TF-IDF {glue:text}`ch07_tfidf_same_pct` %, so two independent coin-flippers with these rates would
# already agree on a share of pairs that kappa discounts (mostly both saying "different"). The closer
# the observed raw agreement is to that chance level, the closer kappa is to 0: the two methods
# then rarely agree on *which* pairs are the same.
# ````
#
# ```{exercise}
# :label: ch07-ex2
#
# Before running: with `reference_rubric = "none"` (the step-overlap reference judge of chapter 06),
# will the best kappa of TF-IDF with the reference judge go up or down? Then re-execute with
# `.venv/bin/mechaudit execute notebooks/07_sensitivity.py -p reference_rubric none --out runs/ex2`
# and compare the "best" table.
# ```
#
# ````{solution} ch07-ex2
# :class: dropdown
#
# Up is the better guess: step overlap counts shared steps, and shared steps mean shared words, which
# is what TF-IDF measures; the full rubric instead hinges on one step (the initiating event) that
# changes few words. The run we did with `reference_rubric = "none"` gave a best kappa with the
# reference judge of 0.80 for TF-IDF (at threshold 0.5) and 0.75 for embeddings (at 0.84), against
# {glue:text}`ch07_tfidf_best_kappa_reference` and {glue:text}`ch07_embedding_best_kappa_reference`
# with the full rubric on this page. Complete agreement was still impossible for every combination.
# ````
#
# ## Try it
#
# - `tfidf_sweep = [0.2, 0.6, 41]`: a finer grid around the paper's TF-IDF threshold.
# - `reference_rubric = "none"`: compare the similarity rules with the overlap-based reference judge,
#   which is closer to what lexical similarity measures.
# - `embedding_model = "path/or/name"`: another sentence-transformers model.
# - `backend = "replay"` or `"anthropic"` with `judge_models = ["claude-opus-4-6", "claude-sonnet-4-6"]`:
#   the LLM judge joins the agreement tables and the stability section reports repeat and
#   order-reversal changes and the agreement between judge models on `stability_pairs` pairs.
#
# ## Key takeaways
#
# 1. The threshold of a similarity rule is a choice with consequences: sweeping it moves the share of
#    pairs called different for every kind of edit, and on the reworded suite no threshold separates
#    swaps from rewordings cleanly.
# 2. The rules agree on many pairs ({glue:text}`ch07_headline_agreement`), but Cohen's κ
#    ({glue:text}`ch07_headline_kappa`) shows how much of that agreement chance alone would give.
# 3. Offline the third method is the reference judge, not an LLM: the judge's own stability (repeats,
#    order reversal, other models) needs an LLM backend, or recorded answers such as those of the
#    self-served SmolLM2-135M, a model far below the paper's judges.
