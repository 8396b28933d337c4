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
# An LLM judge does not carry a fixed notion of mechanism equivalence: the rubric in its prompt
# supplies one. The paper {cite}`byun2026auditing` gave the same First Step Swapped pairs to the
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
#
# Offline, each rubric is applied by a deterministic **reference judge** that reads the structured
# causal chain (`mechaudit.rules.ReferenceJudge`): a literal reading of the rubric, not an LLM.

# %% tags=["parameters"]
seed = 0
backend = "reference"
data_dir = None
rubrics = ["full", "step", "none"]
jaccard_threshold = 0.5
judge_model = "claude-opus-4-6"
judge_models = []
judge_orders = ["ab", "ab", "ba"]
cache_dir = None
max_usd = None
llm_batch = False
out_dir = None

# %% tags=["remove-cell"]
from mechaudit.llm import usage as llm_usage

llm_usage.begin(max_usd=max_usd, batch=llm_batch)  # this chapter's LLM budget and batch mode

# %%
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display

from mechaudit.agreement import estimate_range, flip_rate, model_agreement, raw_agreement, verdict_matrix
from mechaudit.backends import Backend
from mechaudit.glue import glue
from mechaudit.outputs import save
from mechaudit.paper import compare, reported
from mechaudit.perturb import KINDS, describe_change, load_suite
from mechaudit.plots.rules import rubric_bars
from mechaudit.rules import LLMJudge, ReferenceJudge
from mechaudit.rules.audit import percent_different
from mechaudit.rules.llm_judge import judge_each_model, majority, stability
from mechaudit.schema import load_instances

pd.set_option("display.precision", 3)
pd.set_option("display.width", 120)

suite = load_suite(None if data_dir is None else Path(data_dir) / "perturbations.jsonl", valid_only=True)
pairs = [(p["original"], p["variant"]) for p in suite]
kinds = [p["kind"] for p in suite]
llm_run = Backend.parse(backend).is_llm
print(f"{len(pairs)} valid perturbation pairs; rubrics: {', '.join(rubrics)}; "
      f"LLM judge: {'run with backend ' + repr(backend) if llm_run else 'not run (offline)'}")

# %% [markdown]
# ## Reference judges: each rubric read literally
#
# The full and step reference judges follow their rubrics' wording. The **none** reference judge
# cannot: a prompt without a definition gives nothing to apply literally, so this book *chose* a rule
# for it, step overlap. It calls two hypotheses the same when at least `jaccard_threshold` (here
# {glue:text}`ch06_jaccard_threshold`) of all steps named by either chain are shared. Both the rule
# and the threshold are arbitrary choices of this book, not taken from the paper, and nothing says a
# judge without a rubric decides by overlap: the numbers of this judge describe the rule, not how a
# judge without a rubric behaves.

# %%
judges = {r: ReferenceJudge(r, jaccard_threshold=jaccard_threshold) for r in rubrics}
decisions = pd.DataFrame({f"reference {r}": j.same(pairs) for r, j in judges.items()})
if llm_run:
    instances = load_instances(None if data_dir is None else Path(data_dir) / "instances.yaml")
    llm_calls = {}
    for r in rubrics:
        judge = LLMJudge(rubric=r, model=judge_model, backend=backend, orders=judge_orders,
                         early_stop=False, cache_dir=cache_dir, instances=instances)  # order effects need every call
        llm_calls[r] = judge.judge(pairs)
        decisions[f"llm {r}"] = majority(llm_calls[r], len(pairs))["same"].to_numpy()
else:
    for r in rubrics:
        decisions[f"llm {r}"] = pd.array([pd.NA] * len(pairs), dtype="boolean")
pct = percent_different(decisions, kinds, order=KINDS)
glue("ch06_jaccard_threshold", jaccard_threshold)
for r in rubrics:
    glue(f"ch06_ref_{r}_fss_pct", pct.loc["first_step_swapped", f"reference {r}"], digits=1)
    glue(f"ch06_ref_{r}_mss_pct", pct.loc["middle_step_swapped", f"reference {r}"], digits=1)
for r in ("step", "full", "none"):
    glue(f"ch06_paper_{r}_fss_pct", reported(f"rubric.first_step_swapped_pct_different.{r}"))
glue("ch06_paper_reversal_pct", reported("rubric.order_reversal_changed_pct"))
save("percent_different", pct.round(1).astype(object).where(pct.notna(), "not run" if not llm_run else "undecided"),
     out_dir)

# %%
paper = pd.DataFrame(
    {f"llm {r}": [reported(f"rubric.first_step_swapped_pct_different.{r}") if k == "first_step_swapped" else np.nan
                  for k in KINDS] for r in rubrics},
    index=list(KINDS),
)
fig = rubric_bars(pct, paper, backend=backend,
                  extra="reference judges read the structured chain"
                  + ("" if llm_run else "; LLM judge not run (offline)"))
save("rubric_bars", fig, out_dir)
plt.show()

# %% [markdown]
# The step rubric's three component judgements show which component each kind of edit touches.
# Numbers are % of pairs whose component the step reference judge calls *different*.

# %%
components = judges["step"].components(pairs) if "step" in judges else ReferenceJudge("step").components(pairs)
comp_pct = (100 * (1 - components[["initiating", "route", "terminal"]].astype(float))
            .groupby(pd.Series(kinds, name="kind")).mean())
is_swap = np.array([k.endswith("_swapped") for k in kinds])
glue("ch06_min_jaccard_swapped", components["jaccard"][is_swap].min(), digits=3)
glue("ch06_min_chain_swapped", min(len(a.chain) for (a, _), s in zip(pairs, is_swap) if s))
save("components_percent_different", comp_pct.reindex(KINDS).round(1), out_dir)

# %% [markdown]
# One pair of each kind, drawn with `seed`, with the text the perturbation changed, the chains side
# by side (step texts) and the step reference judge's components. A `wording_only` variant
# rewrites only the explanation, so its chain is the original's word for word:

# %%
rng = np.random.default_rng(seed)
example_rows = []
for kind in KINDS:
    i = int(rng.choice(np.flatnonzero(np.array(kinds) == kind)))
    a, b = pairs[i]
    example_rows.append({"kind": kind, "what changed": describe_change(a, b),
                         "original chain": " -> ".join(s.text for s in a.chain),
                         "variant chain": " -> ".join(s.text for s in b.chain),
                         **components.loc[i, ["initiating", "route", "terminal"]].to_dict()})
with pd.option_context("display.max_colwidth", 200):
    display(pd.DataFrame(example_rows).set_index("kind"))

# %% [markdown]
# ## Presentation order
#
# The reference judges compare sets and ordered subsequences symmetrically, so they are
# order-invariant by construction. The check below judges every pair again with the two
# hypotheses swapped and counts changed decisions.

# %%
reversed_pairs = [(b, a) for a, b in pairs]
order_rows = [
    {"judge": f"reference {r}", "pairs": len(pairs),
     "decisions changed by reversal": int(np.sum(j.same(pairs) != j.same(reversed_pairs)))}
    for r, j in judges.items()
]
pd.DataFrame(order_rows)

# %% [markdown]
# With an LLM backend the judge sees each pair in the orders `judge_orders` (by default A-B twice
# and B-A once). The table below then counts, per prompt, the decisions changed by repeating the
# A-B call and by reversing it, and which flipped pairs the prompts share.

# %%
if llm_run:
    stab = {r: stability(llm_calls[r], len(pairs)) for r in rubrics}
    rows = []
    for r in rubrics:
        s = stab[r]
        rows.append({"prompt": r, "pairs compared": int(s["order_changed"].notna().sum()),
                     "order reversal changed": int(s["order_changed"].sum()),
                     "order reversal changed %": round(100 * flip_rate(s["ab"], s["ba"]), 1),
                     "repetition changed": int(s["repeat_changed"].sum())})
    flipped = {r: set(stab[r].loc[stab[r]["order_changed"].fillna(False).astype(bool), "pair"]) for r in rubrics}
    shared = pd.DataFrame([[len(flipped[a] & flipped[b]) for b in rubrics] for a in rubrics],
                          index=rubrics, columns=rubrics)
    print("pairs whose decision flipped under reversal, shared between prompts:")
    print(shared.to_string())
    print("LLM vs the reference judge of the same rubric (raw agreement on decided pairs):")
    for r in rubrics:
        print(f"  {r}: {raw_agreement(decisions[f'llm {r}'], decisions[f'reference {r}']):.3f}")
    display_table = pd.DataFrame(rows)
else:
    display_table = pd.DataFrame({"prompt": rubrics, "order reversal changed": "not run (offline)"})
save("order_reversal", display_table, out_dir)

# %% [markdown]
# ## Judge models
#
# Is the rubric effect a property of one model? With an LLM backend and more than one model in
# `judge_model` + `judge_models`, every rubric's pairs also go through the other models (same
# prompts and orders, one cache; early stop, which never changes a majority decision; a name like
# `gpt-5.5` routes to OpenAI with the optional extra `mechaudit[openai]`). The first table gives,
# per rubric, raw agreement and Cohen's kappa between the models' decisions; the second, per
# rubric and swap kind, the "% judged different" range over the models. The paper ran its rubric
# variants with one judge (Opus 4.6), so it has no figure to compare these with. Offline nothing
# is judged, and the table below says so.

# %%
axis_models = list(dict.fromkeys([judge_model, *judge_models]))
if llm_run and len(axis_models) > 1:
    agree_tables, estimates = [], {}
    for r in rubrics:
        more = judge_each_model(pairs, axis_models[1:], backend=backend, client=judge.client, rubric=r,
                                orders=judge_orders, early_stop=True, instances=instances)
        verdicts = verdict_matrix({judge_model: decisions[f"llm {r}"],
                                   **{m: majority(c, len(pairs))["same"] for m, c in more.items()}})
        agree_tables.append(model_agreement(verdicts).assign(rubric=r))
        per_kind = percent_different(verdicts.T, kinds, order=KINDS).T  # models x kinds
        for kind in ("first_step_swapped", "middle_step_swapped"):
            estimates[f"{r}: {kind}"] = per_kind[kind]
    display(pd.concat(agree_tables, ignore_index=True).set_index(["rubric", "model_a", "model_b"]).round(3))
    model_ranges = estimate_range(pd.DataFrame(estimates)).round(1)
else:
    model_ranges = pd.DataFrame({"judge-model axis": [
        "not run: offline backend" if not llm_run
        else f"not run: one judge model ({judge_model})"]})
save("judge_model_ranges", model_ranges, out_dir)

# %% [markdown]
# ## Paper vs this run
#
# The paper's numbers are LLM results. Offline, "this run" says "not run" and the note gives the
# reference judge's value for orientation only.

# %%
fss = pct.loc["first_step_swapped"]


def llm_value(column: str):
    return None if pd.isna(fss[column]) else round(float(fss[column]), 1)


rows = [
    (f"rubric.first_step_swapped_pct_different.{r}", llm_value(f"llm {r}"),
     f"{backend} backend" if llm_run else f"offline; reference judge (not an LLM): {fss[f'reference {r}']:.1f}")
    for r in ("step", "full", "none") if r in rubrics
]
if llm_run:
    rows.append(("rubric.order_reversal_changed_pct",
                 round(float(np.mean([100 * flip_rate(stab[r]["ab"], stab[r]["ba"]) for r in rubrics])), 1),
                 "mean over prompts"))
    rows.append(("rubric.order_reversal_changed_per_prompt",
                 round(float(np.mean([stab[r]["order_changed"].sum() for r in rubrics])), 1), "mean over prompts"))
    if {"full", "step"} <= set(rubrics):
        rows.append(("rubric.order_reversal_shared_full_step", len(flipped["full"] & flipped["step"])))
        if "none" in rubrics:
            rows.append(("rubric.order_reversal_shared_with_none",
                         len((flipped["full"] | flipped["step"]) & flipped["none"])))
    rows.append(("rubric.repetition_changed", int(sum(stab[r]["repeat_changed"].sum() for r in rubrics)),
                 "all prompts"))
else:
    rows.append(("rubric.order_reversal_changed_pct", None, "offline; reference judges: 0 by construction"))
    rows.append(("rubric.order_reversal_changed_per_prompt", None, "offline; reference judges: 0 by construction"))
    rows.append(("rubric.repetition_changed", None, "offline; reference judges are deterministic: 0"))
save("paper_comparison", compare(rows), out_dir)

# %% [markdown]
# ## LLM usage
#
# What this run asked of the LLM API: calls sent (`api`, or `batch` at the batch discount) and
# requests answered from the response cache (`cache`), tokens, and the cost estimated from
# `params/prices.yaml`. With the offline backend no LLM is called.

# %%
llm_usage.report(backend, pairs=len(pairs))

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
# ## Try it
#
# - `jaccard_threshold = 0.7`: a stricter overlap rule for the no-rubric reference judge (swaps in
#   short chains start to count as different).
# - `rubrics = ["full"]`: one prompt only.
# - `backend = "replay"` (recorded answers in `data/llm_cache/`) or `"anthropic"` (needs
#   `ANTHROPIC_API_KEY`): run the LLM judge under every rubric; `judge_orders = ["ab", "ba", "ba"]`
#   changes how often each order is asked, and `judge_model` the model; `judge_models` adds
#   further models to the judge-model section (e.g. `["claude-sonnet-4-6"]`).
