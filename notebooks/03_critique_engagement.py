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
# In the paper {cite}`byun2026auditing` an LLM judge labelled each of
# {glue:text}`ch03_paper_demands` critic demands by how the proposer's reply dealt with it (the
# paper's figures): {glue:text}`ch03_paper_conceded_pct` % conceded,
# {glue:text}`ch03_paper_answered_pct` % answered, {glue:text}`ch03_paper_partial_pct` % partially
# addressed and {glue:text}`ch03_paper_dropped_pct` % dropped. The labels describe engagement, not
# whether the change was right, and the paper stresses that they do not measure how much critique
# changed the final hypotheses; that is the job of the divergence analysis in the critique-depth
# chapter.
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

# %% tags=["parameters"]
backend = "reference"
seed = 0
data_dir = None
design_file = "paper.yaml"
simulator_file = "simulator.yaml"
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
from mechaudit.engagement import (
    LABELS,
    engagement_table,
    excluded_challenges,
    label_demands,
    paper_comparison,
    paper_shares,
)
from mechaudit.glue import glue
from mechaudit.outputs import save
from mechaudit.paper import compare, reported
from mechaudit.paths import PARAMS_DIR
from mechaudit.plots.workflow import engagement_figure
from mechaudit.schema import load_benchmark
from mechaudit.workflow import deliver, load_design, load_simulator_params, show_excluded

pd.set_option("display.precision", 3)
bench = load_benchmark(data_dir)
design = load_design(PARAMS_DIR / design_file, instances=[i.id for i in bench.instances])
delivery = deliver(bench, design, backend, simulator=load_simulator_params(PARAMS_DIR / simulator_file),
                   seed=seed, generator_model=generator_model, cache_dir=cache_dir, json_retries=json_retries)
labelled = label_demands(delivery.runs, backend, client=delivery.client, model=judge_model,
                         json_retries=json_retries)
llm_run = Backend.parse(backend).is_llm
if llm_run:  # workflow hypotheses and judge challenges with replies still invalid
    show_excluded(delivery.excluded, json_retries)
    show_excluded(excluded_challenges(labelled), json_retries, what="challenges (engagement judge)")
    labelled = labelled[labelled["label"].notna()]
print(f"{len(labelled)} demands in {labelled.run_id.nunique()} runs; labels from: {labelled.label_source.iloc[0]}")
glue("ch03_n_demands", len(labelled))
glue("ch03_n_runs", labelled.run_id.nunique())
glue("ch03_paper_demands", reported("engagement.demands"))
for label in LABELS:
    glue(f"ch03_paper_{label}_pct", reported(f"engagement.{label}_pct"))

# %% [markdown]
# ## Labels of all demands, this run beside the paper

# %%
overall = engagement_table(labelled)
shares = overall.set_index("label")["pct"]
for label in LABELS:
    glue(f"ch03_{label}_pct", shares[label], digits=1)
glue("ch03_max_gap_pp", (shares - pd.Series(paper_shares())).abs().max(), digits=1)
save("engagement", overall.assign(paper_pct=overall.label.map(paper_shares())).round(1), out_dir)

# %%
save("paper_comparison", compare([(key, value, "simulator log" if not llm_run else f"LLM judge, {backend}")
                                  for key, value in paper_comparison(labelled)]), out_dir)

# %% [markdown]
# **Read this comparison as a calibration, not a reproduction.** With `backend = "reference"` the
# shares come from the simulator, whose reply probabilities were set so that the mixture lands near
# the paper's shares: in `params/simulator.yaml`, `reply_weak` is an assumption and `reply_sound` was
# fitted to the paper's mixture (the calibration is recorded in `params/calibration.yaml` and run in
# the last section of {doc}`02_critique_depth`). That this
# run's shares ({glue:text}`ch03_conceded_pct` % conceded, {glue:text}`ch03_answered_pct` % answered,
# {glue:text}`ch03_partial_pct` % partial, {glue:text}`ch03_dropped_pct` % dropped) sit within
# {glue:text}`ch03_max_gap_pp` percentage points of the paper's is therefore true by choice; it says
# the simulator was set up as intended, not that the workflow behaves like the paper's.
#
# The number of demands is not comparable either. The simulator produced
# {glue:text}`ch03_n_demands` demands in {glue:text}`ch03_n_runs` runs with critique, against the
# paper's {glue:text}`ch03_paper_demands`. The simulator's count follows from how often its critic
# finds a weak link or challenges a sound one (`p_find`, `p_challenge_sound`), over every hypothesis
# and round of every run with critique; nothing set it to match the paper, and the paper does not
# say how its demands are spread over runs and rounds. Only the shares are compared.
#
# The simulator's reply probabilities depend on whether a demand hits a *weak link* (a chain step with
# little support in the evidence pack, mostly conceded) or a sound one (mostly answered); see
# `params/simulator.yaml`. The overall shares above are a mixture that follows from how many weak links
# are still open, so they shift from round to round:

# %%
by_round = engagement_table(labelled, by="round")
round_pct = by_round.pivot(index="round", columns="label", values="pct")
glue("ch03_first_round", round_pct.index.min())
glue("ch03_last_round", round_pct.index.max())
glue("ch03_first_round_conceded_pct", round_pct["conceded"].iloc[0], digits=1)
glue("ch03_last_round_conceded_pct", round_pct["conceded"].iloc[-1], digits=1)
glue("ch03_last_round_answered_pct", round_pct["answered"].iloc[-1], digits=1)
save("engagement_by_round", round_pct.round(1), out_dir)

# %%
fig = engagement_figure(overall, paper_shares(), backend=backend, by_round=by_round,
                        ours_label="this run (simulator log)" if not llm_run else "this run (LLM judge)")
save("engagement", fig, out_dir)
plt.show()

# %% [markdown]
# In round {glue:text}`ch03_first_round` {glue:text}`ch03_first_round_conceded_pct` % of demands are
# conceded; by round {glue:text}`ch03_last_round` that share is {glue:text}`ch03_last_round_conceded_pct` %
# and {glue:text}`ch03_last_round_answered_pct` % are answered. With the reference backend this is how
# the simulator is built, not something it discovered: weak links are mostly conceded and then
# repaired, so later rounds mostly challenge sound steps, which the proposer mostly answers. The
# same built-in assumption (weak links get used up) produces the simulator's diminishing returns of
# critique depth in {doc}`02_critique_depth`; part of those diminishing returns is also a ceiling
# (when same-depth divergence is already high, little room is left for extra divergence). Neither is
# evidence that a real workflow behaves this way.

# %%
if not llm_run:
    weak = engagement_table(labelled.assign(target=labelled.weak_link.map({True: "weak link", False: "sound link"})),
                            by="target")
    display_table = weak.pivot(index="target", columns="label", values="pct").round(1)
else:
    display_table = labelled.groupby(["depth", "label"]).size().unstack(fill_value=0)
save("engagement_by_target", display_table, out_dir)

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
# - In a copy of `params/simulator.yaml`, lower `reply_weak.conceded` and raise `reply_weak.answered`
#   (a proposer that defends its weak steps), then set `simulator_file` to the copy: fewer concessions,
#   and in the critique-depth chapter a smaller 0 v 1 effect.
# - `p_challenge_sound = 0.5` in such a copy: the critic challenges sound steps more often and the share
#   of answered demands grows.
# - `backend = "replay"` or `"anthropic"`: label the real workflow's demands with the LLM judge.
