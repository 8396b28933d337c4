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
# In the paper {cite}`byun2026auditing` an LLM judge labelled each of 332 critic demands by how the
# proposer's reply dealt with it: 61 % conceded, 27 % answered, 9 % partially addressed and 3 %
# dropped. The labels describe engagement, not whether the change was right, and the paper stresses
# that they do not measure how much critique changed the final hypotheses; that is the job of the
# divergence analysis in the critique-depth chapter.
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

# %%
import matplotlib.pyplot as plt
import pandas as pd

from mechaudit.engagement import engagement_table, label_demands, paper_comparison, paper_shares
from mechaudit.paper import compare
from mechaudit.paths import PARAMS_DIR
from mechaudit.plots.workflow import engagement_figure
from mechaudit.schema import load_benchmark
from mechaudit.workflow import deliver, load_design, load_simulator_params

pd.set_option("display.precision", 3)
bench = load_benchmark(data_dir)
design = load_design(PARAMS_DIR / design_file, instances=[i.id for i in bench.instances])
delivery = deliver(bench, design, backend, simulator=load_simulator_params(PARAMS_DIR / simulator_file),
                   seed=seed, generator_model=generator_model, cache_dir=cache_dir)
labelled = label_demands(delivery.runs, backend, client=delivery.client, model=judge_model)
print(f"{len(labelled)} demands in {labelled.run_id.nunique()} runs; labels from: {labelled.label_source.iloc[0]}")

# %% [markdown]
# ## Labels of all demands, this run beside the paper

# %%
overall = engagement_table(labelled)
overall.assign(paper_pct=overall.label.map(paper_shares())).round(1)

# %%
compare([(key, value, "simulator log" if backend == "reference" else f"LLM judge, {backend}")
         for key, value in paper_comparison(labelled)])

# %% [markdown]
# The simulator's reply probabilities depend on whether a demand hits a *weak link* (a chain step with
# little support in the evidence pack, mostly conceded) or a sound one (mostly answered); see
# `params/simulator.yaml`. The overall shares above are a mixture that follows from how many weak links
# are still open, so they shift from round to round:

# %%
by_round = engagement_table(labelled, by="round")
by_round.pivot(index="round", columns="label", values="pct").round(1)

# %%
fig = engagement_figure(overall, paper_shares(), backend=backend, by_round=by_round,
                        ours_label="this run (simulator log)" if backend == "reference" else "this run (LLM judge)")
plt.show()

# %% [markdown]
# In the first round most demands hit weak links and are conceded; once the weak links are repaired
# or defended, later rounds mostly challenge sound steps, which the proposer answers. The same
# mechanism gives the diminishing returns of critique depth in the critique-depth chapter.

# %%
if backend == "reference":
    weak = engagement_table(labelled.assign(target=labelled.weak_link.map({True: "weak link", False: "sound link"})),
                            by="target")
    display_table = weak.pivot(index="target", columns="label", values="pct").round(1)
else:
    display_table = labelled.groupby(["depth", "label"]).size().unstack(fill_value=0)
display_table

# %% [markdown]
# ## Try it
#
# - In a copy of `params/simulator.yaml`, lower `reply_weak.conceded` and raise `reply_weak.answered`
#   (a proposer that defends its weak steps), then set `simulator_file` to the copy: fewer concessions,
#   and in the critique-depth chapter a smaller 0 v 1 effect.
# - `p_challenge_sound = 0.5` in such a copy: the critic challenges sound steps more often and the share
#   of answered demands grows.
# - `backend = "replay"` or `"anthropic"`: label the real workflow's demands with the LLM judge.
