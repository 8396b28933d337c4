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
# The similarity rules need a threshold, and the paper's values ({glue:text}`ch07_paper_tfidf_threshold`
# for TF-IDF, {glue:text}`ch07_paper_embedding_threshold` for embeddings) are choices. Its Appendix D
# {cite}`byun2026auditing` asks three questions that this chapter repeats: how do the decisions move
# with the threshold, does any threshold make the rules agree completely (the paper's figures: at its
# chosen thresholds the three methods agreed on
# {glue:text}`ch07_paper_raw_agreement_pct_low`-{glue:text}`ch07_paper_raw_agreement_pct_high` % of
# pairs, Cohen's kappa {cite}`cohen1960kappa`
# {glue:text}`ch07_paper_kappa_low`-{glue:text}`ch07_paper_kappa_high`, and no threshold gave complete
# agreement), and how stable is the LLM judge under repetition, order reversal and a change of judge
# model?
#
# Two sets of pairs are used. The **perturbation suite** (`data/perturbations.jsonl`) has a known
# answer per kind. The **committed-set pairs** are all pairs of committed hypotheses about the same
# instance (`data/hypotheses.jsonl`), the closest open analogue of the paper's generated sets: they
# have no perturbation labels, so only agreement between rules can be measured on them.

# %% tags=["parameters"]
seed = 0
backend = "reference"
data_dir = None
tfidf_sweep = [0.05, 0.95, 19]
embedding_sweep = [0.5, 0.98, 25]
tfidf_threshold = 0.25
embedding_threshold = 0.77
embedding_model = None
embedding_cache = True
reference_rubric = "full"
judge_models = ["claude-opus-4-6"]
judge_rubric = "full"
judge_orders = ["ab", "ab", "ba"]
stability_pairs = 180
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

from mechaudit.agreement import (
    agreement_range,
    agreement_table,
    complete_agreement_interval,
    estimate_range,
    flip_rate,
    model_agreement,
    threshold_sweep,
    verdict_matrix,
)
from mechaudit.backends import Backend
from mechaudit.glue import glue
from mechaudit.outputs import save
from mechaudit.paper import compare, reported
from mechaudit.paths import data_path
from mechaudit.perturb import KINDS, MEANING_PRESERVING, load_suite
from mechaudit.plots.rules import agreement_vs_threshold, threshold_sweep_lines
from mechaudit.rules import EmbeddingRule, LLMJudge, ReferenceJudge, TfidfRule
from mechaudit.rules.audit import subsample_pairs, sweep_percent_different, within_instance_pairs
from mechaudit.rules.llm_judge import judge_each_model, majority, stability
from mechaudit.schema import load_benchmark

pd.set_option("display.precision", 3)
pd.set_option("display.width", 120)

bench = load_benchmark(data_dir)
suite = load_suite(None if data_dir is None else Path(data_dir) / "perturbations.jsonl", valid_only=True)
suite_pairs = [(p["original"], p["variant"]) for p in suite]
kinds = [p["kind"] for p in suite]
set_pairs = within_instance_pairs(bench.hypotheses)
llm_run = Backend.parse(backend).is_llm
tfidf_grid = np.round(np.linspace(*tfidf_sweep[:2], int(tfidf_sweep[2])), 3)
embedding_grid = np.round(np.linspace(*embedding_sweep[:2], int(embedding_sweep[2])), 3)
tfidf = TfidfRule(threshold=tfidf_threshold)
embedding = EmbeddingRule(model=embedding_model, threshold=embedding_threshold,
                          cache_dir=data_path("embedding_cache") if embedding_cache else None)
reference = ReferenceJudge(reference_rubric)
print(f"perturbation suite: {len(suite_pairs)} valid pairs; committed-set pairs: {len(set_pairs)} "
      f"(same-instance pairs of {len(bench.hypotheses)} hypotheses)")

# %% [markdown]
# ## Threshold sweeps on the perturbation suite
#
# For each threshold, the share of pairs of each kind that the rule calls different. A good rule
# would keep the two meaning-preserving kinds near 0 % while the two swap kinds rise towards 100 %.

# %%
suite_sim = {"tfidf": tfidf.similarity(suite_pairs), "embedding": embedding.similarity(suite_pairs)}
sweep = pd.concat(
    [sweep_percent_different(suite_sim["tfidf"], tfidf_grid, kinds).assign(rule="tfidf"),
     sweep_percent_different(suite_sim["embedding"], embedding_grid, kinds).assign(rule="embedding")],
    ignore_index=True,
)
fig = threshold_sweep_lines(sweep, {"tfidf": tfidf_threshold, "embedding": embedding_threshold}, backend=backend,
                            extra="TF-IDF and all-MiniLM-L6-v2 embeddings computed locally; "
                                  "dashed: the paper's thresholds")
save("threshold_sweep", fig, out_dir)
plt.show()

# %%
wide = (sweep.pivot_table(index=["rule", "threshold"], columns="kind", values="pct_different")
        .reindex(columns=list(KINDS)))
save("percent_different_by_threshold", wide.round(1), out_dir)

# %% [markdown]
# Is there *any* threshold, not just one on the grid, at which a rule calls every
# meaning-preserving pair the same and every swapped pair different? `complete_agreement_interval`
# answers exactly: it exists only if every meaning-preserving pair is more similar than every
# swapped pair.

# %%
preserving = np.array([k in MEANING_PRESERVING for k in kinds])
rows = []
for rule, sim in suite_sim.items():
    interval = complete_agreement_interval(sim, preserving)
    rows.append({"rule": rule,
                 "separating thresholds": "none" if interval is None else f"({interval[0]:.3f}, {interval[1]:.3f}]",
                 "lowest similarity, meaning-preserving": sim[preserving].min().round(3),
                 "highest similarity, swapped": sim[~preserving].max().round(3)})
    glue(f"ch07_{rule}_mean_sim_mp", sim[preserving].mean(), digits=3)
    glue(f"ch07_{rule}_mean_sim_swapped", sim[~preserving].mean(), digits=3)
    glue(f"ch07_{rule}_min_sim_mp", sim[preserving].min(), digits=3)
    glue(f"ch07_{rule}_max_sim_swapped", sim[~preserving].max(), digits=3)
    grid = {"tfidf": tfidf_grid, "embedding": embedding_grid}[rule]
    # lowest grid threshold calling half the swaps different
    half = [t for t in grid if (sim[~preserving] < t).mean() >= 0.5]
    glue(f"ch07_{rule}_half_threshold", half[0] if half else "none on the grid")
    glue(f"ch07_{rule}_half_mp_pct", 100 * (sim[preserving] < half[0]).mean() if half else float("nan"), digits=1)
glue("ch07_n_separating", sum(r["separating thresholds"] != "none" for r in rows))
save("separating_thresholds", pd.DataFrame(rows), out_dir)

# %% [markdown]
# ## Agreement between rules on the committed-set pairs
#
# Raw agreement and Cohen's kappa (`mechaudit.agreement`, checked against scikit-learn in the
# tests) of each similarity rule, across its threshold range, with the other methods at their
# fixed settings: the reference judge (`reference_rubric`) and the other similarity rule at the
# paper's threshold.

# %%
set_sim = {"tfidf": tfidf.similarity(set_pairs), "embedding": embedding.similarity(set_pairs)}
fixed = {
    f"reference ({reference_rubric})": reference.same(set_pairs),
    f"tfidf {tfidf_threshold:g}": set_sim["tfidf"] >= tfidf_threshold,
    f"embedding {embedding_threshold:g}": set_sim["embedding"] >= embedding_threshold,
}
if llm_run:
    llm_judge = LLMJudge(rubric=judge_rubric, model=judge_models[0], backend=backend, orders=judge_orders,
                         cache_dir=cache_dir, instances=bench.instances)
    fixed[f"llm {judge_models[0]}"] = llm_judge.decide(set_pairs)["same"].to_numpy()
ref_name, tfidf_name, emb_name = list(fixed)[:3]
agree = pd.concat(
    [threshold_sweep(set_sim["tfidf"], tfidf_grid,
                     {k: v for k, v in fixed.items() if k != tfidf_name}).assign(rule="tfidf"),
     threshold_sweep(set_sim["embedding"], embedding_grid,
                     {k: v for k, v in fixed.items() if k != emb_name}).assign(rule="embedding")],
    ignore_index=True,
)
fig = agreement_vs_threshold(agree, {"tfidf": tfidf_threshold, "embedding": embedding_threshold}, backend=backend,
                             extra="committed-set pairs; dashed: the paper's thresholds")
save("agreement_vs_threshold", fig, out_dir)
plt.show()

# %% [markdown]
# At the paper's thresholds, every pair of methods:

# %%
at_paper = agreement_table(fixed)
same_rate = {m: pd.Series(v).astype("Float64").mean() for m, v in fixed.items()}  # undecided pairs left out
at_paper.assign(same_rate_a=at_paper["method_a"].map(same_rate).astype(float),
                same_rate_b=at_paper["method_b"].map(same_rate).astype(float)).round(3)

# %% [markdown]
# The best each similarity rule can do on the grid, and whether any real threshold gives complete
# agreement with each other method (exact, as above):

# %%
best = agree.loc[agree.groupby(["rule", "other"])["kappa"].idxmax(),
                 ["rule", "other", "threshold", "raw_agreement", "kappa"]]
best["complete agreement possible"] = [
    complete_agreement_interval(set_sim[r], fixed[o]) is not None for r, o in zip(best["rule"], best["other"])
]
glue("ch07_n_complete_possible", int(best["complete agreement possible"].sum()))
glue("ch07_n_best_rows", len(best))
for r in ("tfidf", "embedding"):
    glue(f"ch07_{r}_best_kappa_reference",
         best.loc[(best["rule"] == r) & (best["other"] == ref_name), "kappa"].iloc[0], digits=2)
save("best_kappa", best.rename(columns={"threshold": "threshold of max kappa"}).reset_index(drop=True).round(3),
     out_dir)

# %% [markdown]
# ## Stability of the LLM judge
#
# The paper judged 180 generated-set pairs again with the same order (0 decisions changed), with
# the order reversed (5 changed, 3 %), and with three judge models (96.1-98.3 % agreement, kappa
# 0.86-0.94). With an LLM backend, this section draws `stability_pairs` committed-set pairs with
# `seed`, judges them with every model in `judge_models` under `judge_orders` (one client: one
# cache and one ledger; a model name may name another provider, e.g. `gpt-5.5` with the optional
# OpenAI extra), and reports the same three numbers: the agreement table between models (raw
# agreement and kappa of their majority decisions, pairs undecided by either model left out), and
# per model its "same" rate and order-reversal rate with their range over models, the kind of
# range the paper's Fig. 5 gives for its extra-divergence estimate. The deterministic rules need
# no such check: TF-IDF, embeddings and the reference judges give the same answer on every call
# and in both orders (tested in `tests/test_rules_reference.py`), so offline this section reports
# only that, and the judge-model tables say they were not run.

# %%
stab_pairs = subsample_pairs(set_pairs, stability_pairs, seed)
stab_rows, model_decisions = [], {}
if llm_run:
    model_calls = judge_each_model(stab_pairs, judge_models, backend=backend, cache_dir=cache_dir,
                                   rubric=judge_rubric, orders=judge_orders, instances=bench.instances,
                                   early_stop=False)  # repeat and order stability need every call
    for model, calls in model_calls.items():
        s = stability(calls, len(stab_pairs))
        model_decisions[model] = majority(calls, len(stab_pairs))["same"]
        stab_rows.append({"model": model, "pairs": len(stab_pairs),
                          "repeat changed": int(s["repeat_changed"].sum()),
                          "reversal changed": int(s["order_changed"].sum()),
                          "reversal changed %": round(100 * flip_rate(s["ab"], s["ba"]), 1),
                          "same %": round(100 * float(model_decisions[model].astype(float).mean()), 1)})
    stab = pd.DataFrame(stab_rows)
    models_agree = model_agreement(verdict_matrix(model_decisions)) if len(model_decisions) > 1 else None
else:
    reversed_pairs = [(b, a) for a, b in stab_pairs]
    stab = pd.DataFrame([
        {"rule": name, "pairs": len(stab_pairs),
         "repeat changed": int(np.sum(rule.same(stab_pairs) != rule.same(stab_pairs))),
         "reversal changed": int(np.sum(rule.same(stab_pairs) != rule.same(reversed_pairs)))}
        for name, rule in {"tfidf": tfidf, "embedding": embedding, f"reference ({reference_rubric})": reference}.items()
    ])
    models_agree = None
save("stability", stab, out_dir)

# %%
if models_agree is not None:
    display(models_agree.round(3))
    # Fig. 5 of the paper in this chapter's terms: how far each per-model estimate moves with the judge
    display_models = estimate_range(stab.set_index("model")[["same %", "reversal changed %"]]).round(1)
else:
    display_models = pd.DataFrame({"judge-model axis": [
        "not run: offline backend" if not llm_run
        else f"not run: one judge model ({judge_models[0]})"]})
save("judge_model_ranges", display_models, out_dir)

# %% [markdown]
# ## Paper vs this run
#
# The paper's agreement range is over TF-IDF, Titan embeddings and its LLM judge. With an LLM
# backend the range below is over TF-IDF, all-MiniLM-L6-v2 embeddings and the first judge model.
# Offline the third method is the reference judge, and the range is not an LLM result.

# %%
third = list(fixed)[3] if llm_run else ref_name
three = agreement_table({k: fixed[k] for k in (tfidf_name, emb_name, third)})
methods_note = f"TF-IDF, embeddings, {third}" + ("" if llm_run else " (offline, no LLM)")
rows = [
    ("sensitivity.raw_agreement_pct_low", round(100 * three["raw_agreement"].min(), 1), methods_note),
    ("sensitivity.raw_agreement_pct_high", round(100 * three["raw_agreement"].max(), 1), methods_note),
    ("sensitivity.kappa_low", round(three["kappa"].min(), 3), methods_note),
    ("sensitivity.kappa_high", round(three["kappa"].max(), 3), methods_note),
    ("sensitivity.tfidf_threshold", tfidf_threshold),
    ("sensitivity.embedding_threshold", embedding_threshold, "all-MiniLM-L6-v2, not Titan v2"),
]
glue("ch07_agreement_pct_low", 100 * three["raw_agreement"].min(), digits=1)
glue("ch07_agreement_pct_high", 100 * three["raw_agreement"].max(), digits=1)
glue("ch07_kappa_low", three["kappa"].min(), digits=2)
glue("ch07_kappa_high", three["kappa"].max(), digits=2)
for key in ("raw_agreement_pct_low", "raw_agreement_pct_high", "kappa_low", "kappa_high",
            "tfidf_threshold", "embedding_threshold"):
    glue(f"ch07_paper_{key}", reported(f"sensitivity.{key}"))
if llm_run:
    first = stab.iloc[0]
    rows += [
        ("sensitivity.stability_pairs", int(first["pairs"])),
        ("sensitivity.repeat_changed", int(first["repeat changed"]), judge_models[0]),
        ("sensitivity.reversal_changed", int(first["reversal changed"]), judge_models[0]),
        ("sensitivity.reversal_changed_pct", float(first["reversal changed %"]), judge_models[0]),
    ]
else:
    rows += [(key, None, "offline: no LLM judge") for key in (
        "sensitivity.stability_pairs", "sensitivity.repeat_changed", "sensitivity.reversal_changed",
        "sensitivity.reversal_changed_pct")]
if models_agree is not None:
    span = agreement_range(models_agree)
    models_note = ", ".join(model_decisions)
    rows += [
        ("sensitivity.judge_models_agreement_pct_low", round(span["raw_agreement_pct_low"], 1), models_note),
        ("sensitivity.judge_models_agreement_pct_high", round(span["raw_agreement_pct_high"], 1), models_note),
        ("sensitivity.judge_models_kappa_low", round(span["kappa_low"], 3), models_note),
        ("sensitivity.judge_models_kappa_high", round(span["kappa_high"], 3), models_note),
    ]
else:
    rows += [(key, None, "needs an LLM backend and two or more judge_models") for key in (
        "sensitivity.judge_models_agreement_pct_low", "sensitivity.judge_models_agreement_pct_high",
        "sensitivity.judge_models_kappa_low", "sensitivity.judge_models_kappa_high")]
save("paper_comparison", compare(rows), out_dir)

# %% [markdown]
# ## LLM usage
#
# What this run asked of the LLM API: calls sent (`api`, or `batch` at the batch discount) and
# requests answered from the response cache (`cache`), tokens, and the cost estimated from
# `params/prices.yaml`. With the offline backend no LLM is called.

# %%
llm_usage.report(backend, pairs=len(set_pairs))

# %% [markdown]
# ## Reading the result
#
# The sweeps show the trade-off a threshold cannot escape on this suite. A swapped pair keeps almost
# all of its words, so it is about as similar to its original as a reworded pair, or more: the mean
# TF-IDF cosine is {glue:text}`ch07_tfidf_mean_sim_swapped` for swapped and
# {glue:text}`ch07_tfidf_mean_sim_mp` for meaning-preserving pairs, the mean embedding cosine
# {glue:text}`ch07_embedding_mean_sim_swapped` and {glue:text}`ch07_embedding_mean_sim_mp`. The lowest
# grid threshold that calls at least half of the swapped pairs different
# ({glue:text}`ch07_tfidf_half_threshold` for TF-IDF, {glue:text}`ch07_embedding_half_threshold` for
# embeddings) also calls {glue:text}`ch07_tfidf_half_mp_pct` % and
# {glue:text}`ch07_embedding_half_mp_pct` % of the meaning-preserving pairs different. A threshold
# that separates the two groups exactly exists only if the least similar meaning-preserving pair
# (TF-IDF {glue:text}`ch07_tfidf_min_sim_mp`, embeddings {glue:text}`ch07_embedding_min_sim_mp`) is
# more similar than the most similar swapped pair ({glue:text}`ch07_tfidf_max_sim_swapped` and
# {glue:text}`ch07_embedding_max_sim_swapped`); that holds for {glue:text}`ch07_n_separating` of the
# two rules.
#
# On the committed-set pairs, some threshold gives complete agreement with the other method for
# {glue:text}`ch07_n_complete_possible` of the {glue:text}`ch07_n_best_rows` combinations of a
# similarity rule and another method; the best kappa with the structure-reading reference judge on the grid is
# {glue:text}`ch07_tfidf_best_kappa_reference` for TF-IDF and
# {glue:text}`ch07_embedding_best_kappa_reference` for embeddings. The paper, too, found no threshold
# giving complete agreement. The levels are a different matter: at the paper's thresholds the three
# methods here agree on {glue:text}`ch07_agreement_pct_low`-{glue:text}`ch07_agreement_pct_high` % of
# pairs (kappa {glue:text}`ch07_kappa_low`-{glue:text}`ch07_kappa_high`), against the paper's
# {glue:text}`ch07_paper_raw_agreement_pct_low`-{glue:text}`ch07_paper_raw_agreement_pct_high` %
# (kappa {glue:text}`ch07_paper_kappa_low`-{glue:text}`ch07_paper_kappa_high`). The two ranges cannot
# be compared number for number: the pairs differ (every same-instance pair of hypotheses written for
# this book, against the paper's generated sets), so does the embedding model, and offline the third
# method is the reference judge, not an LLM.
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
