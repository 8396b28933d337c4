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
# # Rubric sensitivity: the definition of "same mechanism" is a parameter
#
# ````{admonition} Question, answer and how we know
# :class: note
# :name: ch06-answer
# **Question.** Does the rubric in the judge's prompt change which pairs count as the same mechanism?
#
# **Answer.** First-step swaps judged different with no rubric / the full rubric / the step rubric:
# {glue:text}`ch06_answer`. What this chapter shows offline is how each rubric reads when applied
# literally, and why such literal readings cannot stand in for an LLM.
#
# **How we know.** Status: {glue:text}`ch06_headline_status`. The question is about an LLM judge,
# and offline no LLM runs. The offline stand-ins settle nothing about it: the full and step
# {term}`reference judges <Reference judge>` compare the step ids of the structured
# {term}`causal chain <Causal chain>`, and every swap in the suite replaces a step id, so they call
# every swap different; the no-rubric stand-in is this book's own step-overlap (Jaccard) rule, which
# cannot call a single swap in a chain of three or more steps different. Their numbers are true by
# construction, checks of the code rather than findings.
# ````
#
# ```{admonition} Learning objectives
# :class: tip
# After this chapter you can
# - explain how the full, step-by-step and no-rubric prompts define "same mechanism";
# - compute the share of first-step swaps each rubric calls different (an LLM's with an LLM backend;
#   offline only the literal reference judges', which are true by construction) and read which
#   component broke;
# - explain why a literal no-rubric overlap rule can never catch a single swapped step;
# - re-run the rubric comparison with an LLM backend and read its order and repetition effects.
# ```
#
# An LLM judge does not carry a fixed notion of mechanism equivalence: the rubric in its prompt
# supplies one. This chapter gives the same perturbation pairs to judges that differ only in their
# rubric and counts how often each calls a swapped initiating event a different mechanism.
#
# The paper {cite}`byun2026auditing` gave the same First Step Swapped pairs to the
# same judge model under three prompts and saw the share judged "different" move (the paper's
# figures) from {glue:text}`ch06_paper_none_fss_pct` % (no rubric) over
# {glue:text}`ch06_paper_full_fss_pct` % (full rubric) to {glue:text}`ch06_paper_step_fss_pct` %
# (step-by-step rubric), while meaning-preserving pairs stayed "same" under all three. Reversing which
# hypothesis is shown first changed about {glue:text}`ch06_paper_reversal_pct` % of decisions under
# each prompt, and the affected pairs differed between prompts.
#
# The three prompts of this book (`mechaudit.rules.llm_judge.SYSTEM_PROMPTS`, written for this
# project after the paper's Appendix E criteria):
#
# - **full**: same mechanism = same initiating event and same essential route (detail may differ);
#   a different initiating event, a different load-bearing route or a reversed direction makes it
#   different; wording, names, added downstream biomarkers and detail alone do not.
# - **step**: the same criteria applied separately to initiating event, route and terminal
#   outcome, all three reported, then an overall verdict ("same" only if all three are the same).
# - **none**: no definition, only the question.

# %% tags=["parameters", "remove-cell"]
# -p values land after this cell; every parameter and its default: book/rerun.md (mechaudit.book.settings)

# %% tags=["remove-cell"]
import pandas as pd
from IPython.display import display

from mechaudit.book import ch06_rubric_sensitivity as ch
from mechaudit.book.chapter import ChapterContext
from mechaudit.book.selfserved import recorded
from mechaudit.perturb import KINDS
from mechaudit.plots.rubric import rubric_bars
from mechaudit.report.facts import glue_facts
from mechaudit.rules.audit import percent_different

ctx = ChapterContext.open(globals(), "06_rubric_sensitivity")  # checked parameters, backend, LLM client
p = ctx.settings
selfserved = recorded(ctx.llm, p.data_dir)  # offline: the recorded answers of the self-served SmolLM2-135M

# %% [markdown]
# ## Reference judges: each rubric read literally
#
# The full and step reference judges follow their rubrics' wording. The **none** reference judge
# cannot: a prompt without a definition gives nothing to apply literally, so this book *chose* a rule
# for it, step overlap. It calls two hypotheses the same when at least `jaccard_threshold` (here
# {glue:text}`ch06_jaccard_threshold`) of all steps named by either chain are shared. Both the rule
# and the threshold are arbitrary choices of this book, not taken from the paper, and nothing says a
# judge without a rubric decides by overlap: the numbers of this judge describe the rule, not how a
# judge without a rubric behaves. With an LLM {term}`backend <Backend>` the LLM judge runs under
# every rubric too (its columns say "not run" offline).
#
# Offline on the shipped benchmark a real but small LLM takes the LLM judge's place: SmolLM2-135M,
# served on this machine by llama.cpp's server. `make local-judge` asked it every pair under every
# rubric in every order of `judge_orders`, with the same prompts as the LLM judge, and recorded its
# answers in `data/llm_cache/`; this chapter replays them and sends nothing. A rubric gets its
# column only when every pair's answers are recorded; otherwise the column says how many are. With
# 135 million parameters it is far below the paper's judges: its columns show what a small real
# model does with each rubric, not what the paper's judge does.

# %%
s = ch.setup(p.data_dir)
judges = ch.reference_judges(p.rubrics, p.jaccard_threshold)
llm = ch.judge_rubrics_with_llm(s.pairs, p.rubrics, s.instances,
                                client=ctx.client, model=p.judge_model,
                                orders=p.judge_orders)
own = ch.replay_selfserved(s, p.rubrics, selfserved, orders=p.judge_orders)
decisions = pd.concat([ch.reference_decisions(s.pairs, judges),
                       llm.decisions, own.columns if own else None], axis=1)
pct = percent_different(decisions, kinds=s.kinds, order=KINDS)

# %% tags=["hide-input"]
print(f"{len(s.pairs)} valid perturbation pairs; rubrics: {', '.join(p.rubrics)}")
if own is not None:  # replayed, or how much of each rubric is recorded
    print(f"{ch.selfserved.SHORT} (self-served): " + "; ".join(
        f"{r}: {'replayed' if r in own.done else own.coverage(r)}" for r in own.recorded))
ctx.table("percent_different", ch.percent_table(pct, own, llm_run=ctx.llm),
          label="tbl-ch06-percent", unit="%",
          caption="Valid pairs judged \"different mechanism\" (%), per perturbation kind, judge and rubric.")

# %% tags=["remove-cell"]
caption = ctx.caption("reference judges read the structured chain"
                      + ("" if ctx.llm else "; LLM judge not run (offline)")
                      + ("; self-served: SmolLM2-135M, replayed" if own and own.done else ""))
fig = rubric_bars(pct, ch.paper_figure_values(p.rubrics) if ctx.show_paper else None, caption=caption)
fig = ctx.figure("rubric_bars", fig, glue_as="ch06_fig_bars")

# %% [markdown]
# ```{glue:figure} ch06_fig_bars
# :name: fig-ch06-bars
# :figwidth: 100%
#
# Percent of valid perturbation pairs judged "different mechanism" per perturbation kind (rows) and
# rubric (bar colour), with each value written at the end of its bar, so a 0 % bar reads "0". One
# panel per judge that ran: offline the reference judges (they read the structured chain; not an
# LLM) and, on the shipped data, the self-served SmolLM2-135M for each rubric whose answers are all
# recorded ("not run" for the others). No error bars: every valid pair is judged once by each
# deterministic judge, and the recorded model answers at temperature 0. Diamonds: the paper's LLM
# judge on first-step swaps, shown only on the shipped data, on the panel of an LLM.
# ```
#
# {numref}`fig-ch06-bars` sets the rubrics side by side; {numref}`tbl-ch06-percent` gives the same
# values. {glue:text}`ch06_selfserved_coverage`
# The step rubric's three component judgements show which component each kind of edit touches.
# Numbers are % of pairs whose component the step reference judge calls *different*.

# %%
step_judge = judges.get("step") or ch.reference_judges(["step"])["step"]
components = step_judge.components(s.pairs)

# %% tags=["hide-input"]
ctx.table("components_percent_different", ch.component_percent(components, kinds=s.kinds),
          label="tbl-ch06-components", unit="%",
          caption="Pairs whose component the step reference judge calls different (%), per perturbation kind.")

# %% [markdown]
# One pair of each kind, drawn with `seed`: the text the perturbation changed (for `wording_only`
# that is the rewritten explanation; its chain is the original's word for word), the chains side by
# side (step texts) and the components the step reference judge calls different.

# %% tags=["hide-input"]
ctx.table("examples", ch.examples(s.pairs, components, kinds=s.kinds, seed=p.seed), label="tbl-ch06-examples",
          caption="One pair of each kind: the changed text, both chains and the components judged different.")

# %% [markdown]
# ## Presentation order
#
# The reference judges compare sets and ordered subsequences symmetrically, so they are
# order-invariant by construction. The check below judges every pair again with the two
# hypotheses swapped and counts changed decisions.

# %%
ch.reversal_check(s.pairs, judges)

# %% [markdown]
# With an LLM backend the judge sees each pair in the orders `judge_orders` (by default A-B twice
# and B-A once). The table then counts, per prompt, the decisions changed by repeating the A-B call
# and by reversing it; below it come the flipped pairs the prompts share and each prompt's raw
# agreement with the reference judge of the same rubric. Offline one sentence says it was not run,
# and on the shipped benchmark a table gives the same counts for the self-served SmolLM2-135M, one
# row per rubric whose answers are all recorded, with its raw agreement with the reference judge.

# %%
effects = ch.order_effects(llm, decisions, p.rubrics, len(s.pairs))
own_effects = ch.selfserved_effects(own, decisions)

# %% tags=["hide-input"]
for extra in (effects.shared, effects.vs_reference):
    if extra is not None:
        display(extra)
if own_effects is not None:
    display(ctx.table("selfserved_order_effects", ch.selfserved_order_table(own_effects),
                      label="tbl-ch06-selfserved-order",
                      caption="Self-served SmolLM2-135M per prompt: decisions changed by repeating "
                              "and by reversing the order, and raw agreement with the reference judge."))
ctx.save("order_reversal", effects.table)

# %% [markdown]
# ## Judge models
#
# Is the rubric effect a property of one model? With an LLM backend and more than one model in
# `judge_model` + `judge_models`, every rubric's pairs also go through the other models (same
# prompts and orders, one cache; early stop, which never changes a majority decision; a name like
# `gpt-5.5` routes to OpenAI with the optional extra `mechaudit[openai]`). The first table gives,
# per rubric, raw agreement and {term}`Cohen's kappa <Cohen's kappa (κ)>` between the models'
# decisions; the second, per rubric and swap kind, the "% judged different" range over the models.
# The paper reports its rubric variants for one judge (Opus 4.6) only, so it gives no figure to compare
# these with. Offline nothing is judged, and one sentence says so.

# %%
models = [p.judge_model, *p.judge_models]
model_agree, model_ranges = ch.rubric_model_axis(
    s.pairs, llm, p.rubrics, models, kinds=s.kinds, orders=p.judge_orders,
    instances=s.instances)

# %% tags=["hide-input"]
if model_agree is not None:
    display(model_agree)
ctx.save("judge_model_ranges", model_ranges)

# %% [markdown]
# ## Paper vs this run
#
# The paper's numbers are LLM results. Offline, "this run" says "not run", the provenance column says
# "not run offline (LLM only)", and the note gives the reference judge's value for orientation only:
# it is true by construction, not an LLM result. The rows marked "self-served SmolLM2" are the
# recorded small model's, for the rubrics whose answers are all recorded: measured by a real LLM,
# an independent computation, but by a model far smaller than the paper's judge.

# %% tags=["hide-input"]
paper = ctx.paper_table(
    ch.paper_table(pct, effects, p.rubrics, backend=ctx.backend,
                   model=p.judge_model, own=own, own_effects=own_effects),
    caption="The paper's rubric effects and this run's.", label="tbl-ch06-paper")
if paper is not None:
    display(paper)

# %% tags=["remove-cell"]
glue_facts("ch06", ch.chapter_facts(ctx, p.judge_model, pct, components, s, p.jaccard_threshold,
                                    own, own_effects))

# %% [markdown]
# ## LLM usage
#
# What this run asked of the LLM API: calls sent (`api`, or `batch` at the batch discount) and
# requests answered from the response cache (`cache`), tokens, and the cost estimated from
# `params/prices.yaml`. With the offline backend no LLM is called.

# %%
ctx.usage(pairs=len(s.pairs))

# %% [markdown]
# ## Reading the result
#
# Read literally, the full and step rubrics call {glue:text}`ch06_ref_full_fss_pct` % and
# {glue:text}`ch06_ref_step_fss_pct` % of first-step swaps different (middle-step swaps:
# {glue:text}`ch06_ref_full_mss_pct` % and {glue:text}`ch06_ref_step_mss_pct` %). That is true by
# construction, a check of the code: the suite swaps a step id and these judges compare step ids, so a
# replaced first or middle step always breaks the "same initiating event and route" condition; the
# step rubric's component table shows which component broke.
#
# The overlap rule chosen for the no-rubric judge calls {glue:text}`ch06_ref_none_fss_pct` % of
# first-step swaps different, and that too follows from the choice, not from the pairs: replacing
# one step of an n-step chain leaves n - 1 of n + 1 distinct steps shared, a Jaccard index of
# (n - 1)/(n + 1), which is at least 0.5 once n is 3 or more. The shortest swapped chain here has
# {glue:text}`ch06_min_chain_swapped` steps and the lowest Jaccard index of a swapped pair is
# {glue:text}`ch06_min_jaccard_swapped`, so with a threshold of {glue:text}`ch06_jaccard_threshold`
# no swap can be called different. This says nothing about judges without a rubric: the paper's
# no-rubric LLM judge caught {glue:text}`ch06_paper_none_fss_pct` % of first-step swaps. Its
# full-rubric judge ({glue:text}`ch06_paper_full_fss_pct` %) sits below the literal reading, so
# setting an LLM's decisions beside the literal reference judges shows how closely it follows its
# rubric.
#
# **A real but small LLM.** {glue:text}`ch06_selfserved_answer`
#
# ## Exercises
#
# ```{exercise}
# :label: ch06-ex1
#
# Before running: with `jaccard_threshold = 0.7`, which swapped pairs will the no-rubric reference
# judge start to call different? Use the formula (n - 1)/(n + 1) for the overlap of an n-step chain
# with one step replaced. Then re-execute with
# `.venv/bin/mechaudit execute notebooks/06_rubric_sensitivity.py -p jaccard_threshold 0.7 --out runs/ex1`
# and compare the "Reference judge, no rubric" column.
# ```
#
# ````{solution} ch06-ex1
# :class: dropdown
#
# The overlap (n - 1)/(n + 1) is 0.5 for n = 3, 0.6 for n = 4, about 0.67 for n = 5 and 0.71 for
# n = 6. With a threshold of 0.7 a swapped pair is called different when its overlap is below 0.7,
# so swaps in chains of five or fewer steps are caught and swaps in longer chains are not. The share
# therefore depends on how long the chains are, not on where the swap sits: first- and middle-step
# swaps are treated alike, which no rubric of the paper intends. The run we did with
# `jaccard_threshold = 0.7` gave 86.2 % for first-step and 86.2 % for middle-step swaps, and still
# 0.0 % for both meaning-preserving kinds (a rewording keeps every step).
# ````
#
# ```{exercise}
# :label: ch06-ex2
#
# The step rubric calls a pair "same" only if all three components are the same. In the component
# table, which component does each kind of edit break? Would a judge that checked only the terminal
# outcome catch any swap?
# ```
#
# ````{solution} ch06-ex2
# :class: dropdown
#
# A first-step swap breaks the initiating event and a middle-step swap breaks the route; neither
# touches the terminal outcome, because the suite keeps the end of every chain (every hypothesis of
# an instance ends at that instance's outcome). A judge that looked only at the terminal outcome would
# call every swap "same", like the text-similarity rules of chapter 05.
# ````
#
# ## Try it
#
# - `jaccard_threshold = 0.7`: a stricter overlap rule for the no-rubric reference judge (swaps in
#   short chains start to count as different).
# - `rubrics = ["full"]`: one prompt only.
# - `backend = "replay"` (recorded answers in `data/llm_cache/`) or `"anthropic"` (needs
#   `ANTHROPIC_API_KEY`): run the LLM judge under every rubric; `judge_orders = ["ab", "ba", "ba"]`
#   changes how often each order is asked, and `judge_model` the model; `judge_models` adds
#   further models to the judge-model section (e.g. `["claude-sonnet-4-6"]`).
#
# ## Key takeaways
#
# 1. The definition of "same mechanism" is a parameter: the same pairs are called different at very
#    different rates under the full, step-by-step and no-rubric prompts (the paper's LLM:
#    {glue:text}`ch06_paper_none_fss_pct` %, {glue:text}`ch06_paper_full_fss_pct` % and
#    {glue:text}`ch06_paper_step_fss_pct` % of first-step swaps).
# 2. Read literally, the full and step rubrics catch every swap and the no-rubric overlap rule catches
#    none; offline both follow from how the rules are written, not from the pairs.
# 3. Setting an LLM judge's decisions beside these literal readings shows how closely the model follows
#    its rubric; that comparison needs an LLM backend.
