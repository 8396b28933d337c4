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
# # Your own data: a complete audit in six steps
#
# ````{admonition} Question, answer and how we know
# :class: note
# :name: ch09-answer
# **Question.** On a new, small benchmark, which rules notice that a causal chain starts elsewhere?
#
# **Answer.** On {glue:text}`ch09_data`: of the {glue:text}`ch09_n_pairs` perturbation pairs built
# from {glue:text}`ch09_n_hypotheses` hypotheses, {glue:text}`ch09_n_valid` pass the check. Among the
# first-step-swapped pairs of the reworded suite, whose variants were written as rewrites,
# {term}`TF-IDF <TF-IDF>` calls {glue:text}`ch09_rw_fss_tfidf` %, embeddings
# {glue:text}`ch09_rw_fss_embedding` % and the reference judge {glue:text}`ch09_rw_fss_reference` %
# different. On the template-built suite the same rules give {glue:text}`ch09_fss_tfidf` %,
# {glue:text}`ch09_fss_embedding` % and {glue:text}`ch09_fss_reference` %.
#
# **How we know.** TF-IDF and all-MiniLM-L6-v2 embeddings are computed locally; the
# {term}`reference judge <Reference judge>` is a deterministic reading of the rubric (not an LLM), so
# its result on swaps is true by construction, and so are the text rules' results on the
# template-built swaps, which keep every word of the original but one name. Status:
# {glue:text}`ch09_status`. The LLM judge is not run offline. The example data are invented (see its README).
# ````
#
# ```{admonition} Learning objectives
# :class: tip
# After this chapter you can
# - write a benchmark folder (vocabulary, instances, hypotheses) and validate it with one call;
# - build and check the controlled {term}`perturbations <Perturbation>` of your hypotheses;
# - audit every {term}`equivalence rule <Equivalence rule>` on them and compare the rules with each other;
# - re-run the audit on your own folder and find its tables and figures on disk.
# ```
#
# The chapters before this one audit the book's own benchmark. This chapter does the same for a
# benchmark you bring: it writes nothing new into the package, opens no source file and uses only
# names you get from `import mechaudit`. It runs on a small example set shipped with the book
# (`data/examples/urate_nitrate/`, invented for this tutorial); point `data_dir` at your folder
# to audit yours.
#
# The six steps, one call each:
#
# 1. **Write** the files in your editor (format in {doc}`../book/data`): a folder of three files.
# 2. **Validate** with `mechaudit.load_benchmark(folder)`: the checked benchmark, or a one-line error.
# 3. **Perturb** with `mechaudit.make_suite(hypotheses, vocabulary=...)`: pairs with a validity
#    verdict.
# 4. **Audit** with `mechaudit.decisions_table(pairs, rules)`: one same/different column per rule.
# 5. **Compare** the rules with `mechaudit.agreement_table(decisions)`: raw agreement and kappa per
#    pair of rules.
# 6. **Report** with `mechaudit.report.outputs.save(name, table, out_dir)`: CSV, PNG and SVG files.

# %% tags=["parameters", "remove-cell"]
# -p values land after this cell; every parameter and its default: book/rerun.md (mechaudit.book.settings)

# %% tags=["remove-cell"]
from mechaudit.book.chapter import ChapterContext, broken_copy, swap_shares, your_data

ctx = ChapterContext.open(globals(), "09_your_data")  # checked parameters, backend, LLM client
p = ctx.settings

# %% tags=["remove-cell"]
import shutil
from pathlib import Path

import pandas as pd

import mechaudit as ma
from mechaudit.paths import EXAMPLE_DIR, data_folder_or, embedding_store
from mechaudit.plots import cosine_strips
from mechaudit.report.facts import glue_facts
from mechaudit.report.glue import glue
from mechaudit.report.outputs import save
from mechaudit.report.tables import book_table

folder = data_folder_or(p.data_dir, EXAMPLE_DIR)  # data_dir, else MECHAUDIT_DATA, else the example set
store = embedding_store(p.embedding_cache)  # data/embedding_cache in a clone

# %% [markdown]
# `data_dir` is the folder to audit (`None`: the example set). Step 6 writes its files to `out_dir`,
# a parameter the book does not show: `None` (nowhere) unless `mechaudit execute ... --out DIR` sets
# it to `DIR/09_your_data`.
#
# ## 1. Write the files
#
# A benchmark folder holds three files, described field by field in {doc}`../book/data`:
#
# - `vocabulary.yaml`: every entity a {term}`causal chain <Causal chain>` may pass through, with a
#   type and its names (`{id: URAT1, type: urate_transporter, name: URAT1, aliases: [SLC22A12]}`).
#   A swap replaces an entity by another of the same type, so give each type two or more members.
# - `instances.yaml`: the findings to explain, each with an evidence pack and the ids of its
#   {term}`opening hypotheses <Opening hypothesis>`.
# - `hypotheses.jsonl`: one hypothesis a line (statement, explanation, chain of `{id, text}` steps
#   ending at the finding; optionally a `template` that marks every entity as `{ID}` and gives a
#   second phrasing of the explanation, needed for the two wording perturbations).
#
# The folder this run audits, {glue:text}`ch09_data`, asks {glue:text}`ch09_questions`, one per
# instance: {glue:text}`ch09_instances`.

# %%
sorted(path.name for path in folder.iterdir())

# %% [markdown]
# ## 2. Validate
#
# `load_benchmark` reads the three files and checks them against each other: known ids, each step
# text naming its entity, templates that render to the stored text, openings that exist, chains that
# end at their instance's finding. It returns a `Benchmark` with `instances`, `vocabulary` and
# `hypotheses`.

# %%
bench = ma.load_benchmark(folder)


def role(h):
    if h.id == h.opening_id:
        return "opening"
    return "near-duplicate" if h.near_duplicate_of else "detail variant"


rows = [{"hypothesis": h.id, "opening": h.opening_id, "steps": len(h.chain),
         "first step": h.chain[0].id, "role": role(h)}
        for h in bench.hypotheses]
book_table(pd.DataFrame(rows).set_index("hypothesis"),
           name="tbl-ch09-hypotheses",
           caption="The hypotheses: opening, steps, first step and role.")

# %% tags=["remove-cell"]
glue_facts("ch09", your_data(bench, folder, own=p.data_dir is not None))
broken = broken_copy(folder, bench)  # its first hypothesis has a misspelt step id

# %% [markdown]
# Anything wrong is one `MechauditError` whose message names the file, the line and the field to
# fix. Here a copy of the folder has a misspelt step id in its first hypothesis:

# %%
try:
    ma.load_benchmark(broken)
except ma.MechauditError as err:
    where = f"{Path(err.file).name}:{err.line}"
    print(f"{where}: field '{err.field}': {err.message}")

# %% tags=["remove-cell"]
shutil.rmtree(broken.parent)

# %% [markdown]
# On the command line, `mechaudit perturb --hypotheses FOLDER/hypotheses.jsonl --vocabulary
# FOLDER/vocabulary.yaml` reports the same error as the one line `mechaudit: error: ...` (exit code 1).
#
# ## 3. Perturb
#
# `make_suite` builds the four controlled {term}`perturbations <Perturbation>` of every hypothesis:
# two keep the mechanism (`wording_only`, `wording_chain`), two change it (`first_step_swapped`,
# `middle_step_swapped`). Pass your own vocabulary, so that swaps draw from your entities. Each pair
# is a dict with `kind`, `original`, `variant`, `valid` and, when the check fails, its `reason`.

# %%
suite = ma.make_suite(bench.hypotheses, seed=p.seed,
                      vocabulary=bench.vocabulary)
built = pd.DataFrame({"kind": [item["kind"] for item in suite],
                      "valid": [item["valid"] for item in suite]})
counts = (built.groupby("kind", sort=False).valid
          .agg(pairs="size", kept="sum").astype(int))
book_table(counts, name="tbl-ch09-counts",
           caption="Pairs built and kept by the validity check, per kind.")

# %% [markdown]
# An excluded pair is kept with its reason, never judged. Here {glue:text}`ch09_n_excluded` pair(s)
# are excluded ({glue:text}`ch09_excluded_first`). In the example set this is on purpose: a second
# phrasing of a hypothesis names an extra entity, so the rewording changes which entities the
# explanation names.

# %%
excluded = [(item["original"].id, item["kind"], item["reason"])
            for item in suite if not item["valid"]]
columns = ["hypothesis", "kind", "reason"]
book_table(pd.DataFrame(excluded, columns=columns).set_index("hypothesis"),
           name="tbl-ch09-excluded",
           caption="The excluded pairs and why the check excludes them.")

# %% tags=["remove-cell"]
glue("ch09_n_excluded", len(excluded))
glue("ch09_excluded_first", f"the first: {excluded[0][0]}, {excluded[0][1]}" if excluded else "none")

# %% [markdown]
# **A second, reworded suite.** `make_suite` renders each hypothesis' template again, so a swap
# variant keeps every word of the original but one name, and a text rule sees it as similar by
# construction (chapter 05). A reworded suite avoids that: each variant's statement and explanation
# are written as a rewrite in a YAML file (`perturbations_reworded.yaml`, format in
# {doc}`../book/data`), `load_rewrites` reads it and `reworded_suite` builds the pairs, gated by the
# same check. The example folder ships one; without the file this chapter audits the template-built
# suite alone.

# %%
suites = {"template-built suite": suite}
rewrites = folder / "perturbations_reworded.yaml"
if rewrites.exists():
    suites["reworded suite"] = ma.reworded_suite(
        bench.hypotheses, ma.load_rewrites(rewrites),
        vocabulary=bench.vocabulary)
sizes = pd.DataFrame([{"suite": name, "pairs": len(s),
                       "kept": sum(item["valid"] for item in s)}
                      for name, s in suites.items()]).set_index("suite")
book_table(sizes, name="tbl-ch09-suites",
           caption="Pairs built and kept in each suite.")

# %% [markdown]
# The rules judge the valid pairs only, as `(original, variant)` tuples; `kinds` keeps each pair's
# kind for the summary.

# %%
valid = {name: [item for item in s if item["valid"]]
         for name, s in suites.items()}
pairs = {name: [(item["original"], item["variant"]) for item in v]
         for name, v in valid.items()}
kinds = {name: [item["kind"] for item in v] for name, v in valid.items()}

# %% [markdown]
# ## 4. Audit with each rule
#
# A rule answers "same mechanism?" for a list of `(a, b)` hypothesis pairs. Three run offline:
#
# - `TfidfRule(threshold=...)`: same iff the TF-IDF cosine of the two texts is at least the threshold
#   (the paper's value 0.25);
# - `EmbeddingRule(threshold=...)`: the same with all-MiniLM-L6-v2 sentence embeddings (0.77;
#   `model=` names another sentence-transformers model; `cache_dir=` keeps the vectors on disk, so
#   a re-run need not load the model);
# - `ReferenceJudge(rubric="full")`: applies the rubric to the chains' step ids (same initiating
#   event, and one chain a sub-sequence of the other), a stand-in for the LLM judge.
#
# `LLMJudge` needs an LLM {term}`backend <Backend>` (`"anthropic"` with `ANTHROPIC_API_KEY`, or
# `"replay"` with recorded answers under `cache_dir`). Configuration is keyword-only.
# `decisions_table` then gives one row per pair and one column per rule (True = same, shown as yes); here, one
# table per suite.

# %%
rules = {
    "TF-IDF": ma.TfidfRule(threshold=p.tfidf_threshold),
    "embeddings": ma.EmbeddingRule(model=p.embedding_model, cache_dir=store,
                                   threshold=p.embedding_threshold),
    "reference judge": ma.ReferenceJudge(rubric=p.reference_rubric),
}
if ctx.llm:
    rules["LLM judge"] = ma.LLMJudge(model=p.judge_model, client=ctx.client,
                                     instances=bench.instances)
decisions = {name: ma.decisions_table(pairs[name], rules)
             for name in suites}
for name, table in decisions.items():
    table.index = pd.Index([f"{item['original'].id} {item['kind']}"
                            for item in valid[name]], name="pair")
book_table(decisions["template-built suite"].head(3),
           name="tbl-ch09-decisions",
           caption="Each rule's decision on the first three pairs "
                   "(yes: same mechanism).")

# %% [markdown]
# `percent_different` turns the decisions into the share of pairs each rule calls "different
# mechanism", per perturbation kind. A good rule shows 0 on the two wording rows and 100 on the two
# swap rows of each suite.

# %%
pct = pd.concat({name: ma.percent_different(decisions[name],
                                            kinds=kinds[name],
                                            order=ma.KINDS)
                 for name in suites}, names=["suite"])

# %% tags=["hide-input"]
book_table(pct, name="tbl-ch09-percent", unit="%",
           caption="Valid pairs of the example set judged \"different mechanism\" (%), per suite, kind and rule.")

# %% [markdown]
# Where the pairs sit on each similarity rule's scale explains those rows: a rule calls a pair
# different when its cosine is below the threshold.

# %% tags=["remove-cell"]
sims = pd.concat([pd.DataFrame({"suite": name, "kind": kinds[name], "rule": rule,
                                "cosine": rules[column].similarity(pairs[name])})
                  for name in suites for rule, column in (("tfidf", "TF-IDF"), ("embedding", "embeddings"))],
                 ignore_index=True)
glue("ch09_n_pairs", len(suite))
glue("ch09_n_valid", len(valid["template-built suite"]))
glue_facts("ch09", swap_shares(pct, "template-built suite"))
glue_facts("ch09_rw", swap_shares(pct, "reworded suite"))
glue("ch09_status", ctx.status(p.judge_model, "computed locally (no LLM)"))
fig = cosine_strips(sims, {"tfidf": {f"threshold {p.tfidf_threshold:g}": p.tfidf_threshold},
                           "embedding": {f"threshold {p.embedding_threshold:g}": p.embedding_threshold}},
                    caption=ctx.caption("TF-IDF and embeddings computed locally"))
fig = ctx.figure("cosine_by_kind", fig, glue_as="ch09_fig_cosines")

# %% [markdown]
# ```{glue:figure} ch09_fig_cosines
# :name: fig-ch09-cosines
# :figwidth: 100%
#
# Cosine similarity between each valid perturbation pair's original and variant in the audited
# folder, per kind (rows; the two above the grey line keep the mechanism) and suite (colour); top
# TF-IDF, bottom all-MiniLM-L6-v2 embeddings, with the thresholds in use as vertical lines. A black
# bar marks each strip's median; a pair left of a threshold is called different. No paper values:
# the paper never saw these data.
# ```
#
# {numref}`fig-ch09-cosines` shows why the template-built swaps are hard for a text rule: they sit
# at least as close to their originals as the rewordings do. The reworded swaps show what the rules
# do when a swap is worded afresh, as it would be by a second author.
#
# ## 5. Agreement between the rules
#
# `agreement_table` compares every two rules on the same pairs: raw agreement (share of pairs with
# the same verdict) and {term}`Cohen's kappa <Cohen's kappa (κ)>` (agreement beyond chance; 0 when a
# rule gives the same verdict to every pair, NaN when both do). Here on the template-built suite.

# %%
first = decisions["template-built suite"]
agreement = ma.agreement_table({name: first[name].to_numpy()
                                for name in rules})
pair = agreement.method_a + " v " + agreement.method_b
shown = pd.DataFrame({"rules": pair, "pairs": agreement.n,
                      "% agreement": 100 * agreement.raw_agreement,
                      "kappa": agreement.kappa}).set_index("rules")
book_table(shown, name="tbl-ch09-agreement",
           caption="Raw agreement and Cohen's κ of every two rules, "
                   "template-built suite.")

# %% [markdown]
# ## 6. Report: files on disk
#
# `mechaudit.report.outputs.save(name, table_or_figure, out_dir)` writes a table as `name.csv` and a figure
# as `name.png` and `name.svg` under `out_dir` (created if needed), and does nothing when `out_dir`
# is None. `write_suite` stores the suite in the data format, so other chapters (and
# `mechaudit judge`) can read it.

# %%
tables = {"suite_counts": counts,
          "decisions": pd.concat(decisions, names=["suite"]),
          "percent_different": pct, "agreement": agreement}
for name, table in tables.items():
    save(name, table, p.out_dir)
files = {"template-built suite": "perturbations.jsonl",
         "reworded suite": "perturbations_reworded.jsonl"}
if p.out_dir is not None:
    for name in suites:
        ma.write_suite(suites[name], Path(p.out_dir) / files[name])
    written = sorted(f.name for f in Path(p.out_dir).iterdir())
    print("written to out_dir: " + ", ".join(written))
else:
    print("out_dir is None: nothing written (--out DIR fills it)")

# %% [markdown]
# With `--out runs/mine`, the folder `runs/mine/09_your_data/` holds `suite_counts.csv`,
# `decisions.csv`, `percent_different.csv`, `cosine_by_kind.png` (and `.svg`), `agreement.csv`,
# `perturbations.jsonl` and, when the folder has rewrites, `perturbations_reworded.jsonl`, beside
# the executed notebook `runs/mine/09_your_data.ipynb`.
#
# ## Your data in every chapter
#
# Every chapter with a `data_dir` parameter (01 to 07) runs on your folder too. Save the suites
# into the folder first, since chapters 05 to 07 read them from there: the template-built suite as
# `perturbations.jsonl` (`write_suite(suite, FOLDER / "perturbations.jsonl")`, or `mechaudit
# perturb`) and, if you wrote rewrites, the reworded suite as `perturbations_reworded.jsonl`
# (`mechaudit perturb --reworded FOLDER/perturbations_reworded.yaml ...`). Chapters 05 and 07 then
# show every suite they find side by side. For example
#
# ```bash
# mechaudit execute 05_perturbations -p data_dir my_data --out runs/mine
# ```
#
# A relative `data_dir` is read from the folder you run the command in. The paper's markers,
# comparison tables and calibration appear only on the book's own benchmark, recognised by the
# contents of its files (`data/benchmark.sha256`), however the data were chosen (`data_dir` or the
# `MECHAUDIT_DATA` environment variable): on your data they mean nothing, and `compare_paper true`
# is refused there.
#
# ## Exercises
#
# ```{exercise}
# :label: ch09-ex1
#
# Before running: predict what happens to the TF-IDF column of the two swap rows if you raise
# `tfidf_threshold` to 0.6, and what happens to its two wording rows. Then re-execute with
# `.venv/bin/mechaudit execute notebooks/09_your_data.py -p tfidf_threshold 0.6 --out runs/ex1`
# and compare `runs/ex1/09_your_data/percent_different.csv` with {numref}`tbl-ch09-percent`.
# ```
#
# ````{solution} ch09-ex1
# :class: dropdown
#
# A higher threshold asks for more shared wording before calling two texts "same", so no TF-IDF
# percentage can go down. The template-built swaps change one entity name in a few places, so they
# keep a high cosine (about 0.9 on the example set) and their rows do not move. The reworded swaps
# sit around 0.6 and start to be caught. The wording-and-chain pairs, whose explanation is rewritten
# and whose names are replaced by aliases, sit around 0.5 in both suites and are the first to be
# called "different". In the run we did with `tfidf_threshold = 0.6`, TF-IDF called 0 % of the
# template-built swaps different, 40 % of both reworded swap kinds, and 89 % (template) and 80 %
# (reworded) of the wording-and-chain pairs. So a stricter threshold flags rewordings before it
# catches most swaps, which is chapter 07's point.
# ````
#
# ```{exercise}
# :label: ch09-ex2
#
# Make the excluded pairs of `U-01` valid: in a copy of the example folder, edit the second
# explanation phrasing of `U-01` in `hypotheses.jsonl` (inside `template.explanations`) so that it
# names the same entities as the first, validate the copy with `mechaudit.load_benchmark`, and
# re-run with `-p data_dir YOUR_COPY`.
# ```
#
# ````{solution} ch09-ex2
# :class: dropdown
#
# Delete the clause that mentions `{PROBENECID}` (for example the sentence "This is the classic
# uricosuric route, the one {PROBENECID} is thought to use."). The check compares the set of
# entities each phrasing names; without probenecid both phrasings name velorastat, URAT1, the two
# urate fluxes and the finding, so `make_suite` keeps both wording pairs of `U-01` and the counts
# table shows every pair kept. If you delete a sentence that marks a step entity instead, the
# wording pairs stay excluded with the same reason.
# ````
#
# ```{exercise}
# :label: ch09-ex3
#
# Audit the book's own benchmark with this chapter: predict whether the first-step-swapped row will
# look different from the example set's, then run with `-p data_dir data` from the repository root.
# ```
#
# ````{solution} ch09-ex3
# :class: dropdown
#
# On the template-built suites the pattern is built in, whatever the data: a swap changes one name
# in a few places, so text similarity stays high, while the reference judge compares step ids and
# catches every swap. The reworded suites are where the data matter: how far a rewritten swap moves
# away from its original depends on how it was written. The percentages differ in detail (80
# hypotheses instead of 10), and chapter 05 shows the same audit with the paper's values beside it.
# ````
#
# ## Try it
#
# - `data_dir = "path/to/my_data"`: your own folder (relative paths are read from where you run
#   `mechaudit execute`).
# - `embedding_threshold = 0.9` or `embedding_model = "path/or/name"` (any sentence-transformers
#   model available offline).
# - `reference_rubric = "step"` or `"none"`: looser definitions of "same mechanism".
# - `backend = "anthropic"` with `ANTHROPIC_API_KEY` set adds the LLM judge column (`judge_model`);
#   `max_usd` caps the spend.
#
# ## Key takeaways
#
# 1. A benchmark of your own is three files; `load_benchmark` checks them against each other and names
#    the file, line and field of any mistake.
# 2. The controlled perturbations and the rules' decisions on them show which edits each rule notices:
#    on the example set too, TF-IDF ({glue:text}`ch09_fss_tfidf` %) and embeddings
#    ({glue:text}`ch09_fss_embedding` %) call few template-built first-step swaps different.
# 3. Every table and figure of the audit can be written to a run folder with one call, and every
#    chapter with a `data_dir` parameter runs on your folder too.
