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
# # Blind, tau-calibrated scoring: when it works and where it breaks
#
# The second method in this book scores an idea without ever asking a model for a number
# {cite}`idea2paper2026review`. A judge sees short anonymised cards and only says whether the
# idea is *better*, *tied* or *worse* than each of a handful of anchor papers, with a strength
# (weak, medium, strong). Code then finds the score $S$ on a 1-10 grid that best explains those
# answers under a logistic model,
#
# $$p_i(S) = \sigma\!\left(\frac{S - s_i}{\tau}\right), \qquad
#   \mathcal{L}(S) = \sum_i w_i\,\mathrm{CE}(y_i, p_i(S)),$$
#
# where $s_i$ is anchor $i$'s score from its reviews, $y_i \in \{1, 0.5, 0\}$ the answer,
# $w_i$ the anchor's reliability times the strength weight (1, 2, 3), and $\tau$ a scale that
# is calibrated once per judge, rubric and card format from judged pairs of papers.
#
# This chapter checks the implementation in `mechaudit.tau` on a **synthetic paper pool with a
# simulated judge whose tau is known**: how well tau and scores are recovered, when scores stick
# at 10, what the original "loss + 1.92" interval really measures, how often the densify
# triggers fire, what a judge that likes to say "tie" does to tau, and how far tau and the scores
# drift when the judge does not perceive the papers the way the inference model assumes.
#
# **What is simulated, and what is true by construction.** Every section except "Calibrating with
# a real judge" uses the offline simulated judge, whatever `backend` is: a documented random
# model, not a language model. That judge answers with exactly the logistic model the fitter and
# the inference assume, on exactly the scores they use. Where a section recovers the true tau or
# the true score under that judge, the result is a check that the code is right, not evidence
# that the method works with a real judge; the section says so. The misspecification section
# breaks the assumption on purpose, and the real-judge section runs only with an LLM backend.

# %% tags=["parameters"]
seed = 0
backend = "reference"
n_patterns = 8
papers_per_pattern = 40
review_noise = 0.8
true_taus = [0.5, 0.8, 1.5]
n_pairs = 2000
n_reps = 10
role_taus = {"Methodology": 0.8, "Novelty": 1.2, "Storyteller": 1.0}
tie_rate = 0.3
tie_width = 0.3
n_stories = 100
weight_scales = [0.25, 0.5, 1, 2, 4]
loss_thresholds = [0.05, 1.0, 5.0, 10.0]
heavy_tie_rates = [0.0, 0.3, 0.6, 0.9]
heavy_tie_width = 1.0
perception_noises = [0.0, 0.5, 1.0]
misspec_reps = 3
judge_model = "claude-opus-4-6"
llm_pairs = 200
cache_dir = None
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
from mechaudit.glue import glue
from mechaudit.outputs import save
from mechaudit.plots.tau import (
    loss_band_plot,
    misspecified_score_plot,
    misspecified_tau_plot,
    score_recovery_plot,
    tau_recovery_plot,
    tie_effect_plot,
    weight_scale_plot,
)
from mechaudit.tau import (
    CARD_VERSION,
    FIELD_CAPS,
    RUBRIC_VERSION,
    SimulatedJudge,
    llm_tau_calibration,
    make_pool,
    studies,
)

pd.set_option("display.precision", 3)
pd.set_option("display.width", 120)
llm_run = Backend.parse(backend).is_llm
SIM = "reference"  # the simulated sections run offline under every backend; their figures say so
print("simulated sections: offline simulated judge (not an LLM), with every backend\n"
      f"real-judge section: {'run with backend ' + repr(backend) if llm_run else 'not run (offline backend)'}")

# %% [markdown]
# ## The synthetic pool and the simulated judge
#
# The pool has `n_patterns` research patterns of `papers_per_pattern` papers. Each paper has a
# latent quality; three to six simulated reviewers perceive it with noise (`review_noise`) and
# give integer ratings, from which the anchor score and weight follow exactly as in the original
# pipeline: $s = 1 + 9\,\bar u$ with ratings mapped to $u \in [0.1, 1]$, and
# $w = \log(1 + n_\text{reviews}) / (1 + 9\,(u_\max - u_\min))$.
#
# The simulated judge perceives a pool paper at its reviewers' consensus score and a story at
# its true score. For a perceived gap $d$ it answers *better* with probability
# $\sigma(d/\tau) - t/2$, *tie* with probability $t = t_0\,e^{-(d/h)^2}$ (ties happen near equal
# quality) and *worse* otherwise, so the expected answer is exactly $\sigma(d/\tau)$; its strength
# grows with $|d|/\tau$. The model is documented in `mechaudit.tau.simulate`.

# %%
pool = make_pool(n_patterns=n_patterns, papers_per_pattern=papers_per_pattern, seed=seed,
                 review_noise=review_noise)
table = pool.table()
glue("ch08_n_papers", len(table))
glue("ch08_score10_quality_rmse", ((table["score10"] - table["quality"]) ** 2).mean() ** 0.5, digits=2)
save("pool_summary",
     table[["quality", "score10", "weight", "review_count"]].describe().loc[["mean", "std", "min", "max"]].round(3),
     out_dir)

# %% [markdown]
# The pool has {glue:text}`ch08_n_papers` papers. Their anchor scores measure the latent quality
# with a root-mean-square error of {glue:text}`ch08_score10_quality_rmse` score points (review noise
# and rounding to the rating scale); the simulated judge above ignores that error, because it sees
# score10 itself. The misspecification section lets it see the quality instead.

# %% [markdown]
# ## Recovering tau
#
# For each true tau the fitter draws `n_pairs` stratified pairs (four bins of the score gap, 80%
# within one pattern, as in the original), the simulated judge answers them, and tau is fitted
# twice: on the original grid 0.10..3.00 (first minimum) and by bounded continuous maximum
# likelihood, which also gives a standard error from the observed information.

# %%
recovery = studies.tau_recovery(pool, true_taus, n_pairs=n_pairs, n_reps=n_reps, seed=seed,
                                tie_rate=tie_rate, tie_width=tie_width)
rec_table = studies.recovery_table(recovery)
wide = recovery.pivot_table(index=["true_tau", "rep"], columns="method", values="tau_hat")
mle_rows = rec_table.xs("mle", level="method")
glue("ch08_within10_pct", 100 * (recovery["rel_error"].abs() < 0.10).mean(), digits=0)
glue("ch08_n_fits", len(recovery))
glue("ch08_grid_mle_maxdiff", (wide["grid"] - wide["mle"]).abs().max(), digits=3)
glue("ch08_tau_small", min(true_taus))
glue("ch08_tau_large", max(true_taus))
glue("ch08_sd_small", mle_rows["sd_tau"].iloc[0], digits=3)
glue("ch08_sd_large", mle_rows["sd_tau"].iloc[-1], digits=3)
glue("ch08_se_over_sd", (mle_rows["mean_se"] / mle_rows["sd_tau"]).mean(), digits=2)
glue("ch08_se_robust_over_sd", (mle_rows["mean_se_robust"] / mle_rows["sd_tau"]).mean(), digits=2)
save("tau_recovery", rec_table.round(3), out_dir)

# %%
fig = tau_recovery_plot(recovery, SIM)
save("tau_recovery", fig, out_dir)
plt.show()

# %% [markdown]
# **A check of the code, not a finding.** The simulated judge answers each pair with
# $\sigma(d/\tau)$ on the very score gap $d$ the fitter uses, and its ties are built so that the
# expected label stays exactly $\sigma(d/\tau)$. That the fits land near the true tau
# ({glue:text}`ch08_within10_pct` % of the {glue:text}`ch08_n_fits` fits are within 10 %) shows that
# the pair sampler and both fitters are implemented correctly; it says nothing about a real judge,
# whose answers need not follow this model at all (see the misspecification section).
#
# Grid and mle differ by at most {glue:text}`ch08_grid_mle_maxdiff` on the same answers. The
# spread across repetitions (mle `sd_tau`) is {glue:text}`ch08_sd_small` at tau
# {glue:text}`ch08_tau_small` and {glue:text}`ch08_sd_large` at tau {glue:text}`ch08_tau_large`:
# a flatter curve is pinned down less well by pairs that are never more than 3 points apart. The
# mle reports two standard errors. The one from the observed information (`mean_se`) treats the
# weights as counts of independent answers, which they are not (a "strong" answer is one answer,
# not three); on average it is {glue:text}`ch08_se_over_sd` times the observed spread. The sandwich
# standard error (`mean_se_robust`) does not depend on the weights' scale; it is
# {glue:text}`ch08_se_robust_over_sd` times the observed spread. With `n_reps` repetitions the
# observed spread is itself uncertain, so read these ratios roughly.

# %% [markdown]
# ## Recovering scores, and the saturation at 10
#
# Next, `n_stories` synthetic stories with true scores spread over 1.5-10 are reviewed by
# `MultiAgentCritic` exactly as a real story would be: anchors are chosen by quantiles of the
# story's pattern plus exemplars, the judge answers one call per role against all anchors, the
# score is inferred with the role's true tau, and densify adds anchors when a trigger fires.

# %%
judge = SimulatedJudge(pool.truth(), taus=role_taus, seed=seed, tie_rate=tie_rate, tie_width=tie_width)
reviews, rounds = studies.simulated_reviews(pool, judge, n_stories=n_stories, seed=seed, densify=True)
summary = studies.recovery_summary(reviews)
interior = reviews[~reviews["saturated"]]
glue("ch08_interior_mae", interior["error"].abs().mean(), digits=2)
glue("ch08_interior_n", len(interior))
glue("ch08_saturated_pct", 100 * reviews["saturated"].mean(), digits=1)
glue("ch08_saturated_low_n", int((reviews["saturated_at"] == "low").sum()))
save("score_recovery", summary.round(3), out_dir)

# %%
fig = score_recovery_plot(reviews, SIM)
save("score_recovery", fig, out_dir)
plt.show()

# %% [markdown]
# For the {glue:text}`ch08_interior_n` scores with an interior optimum the mean absolute error is
# {glue:text}`ch08_interior_mae` score points. As for tau, this is a check of the code: the judge
# perceives the anchors at the very scores the inference uses, and the critic is given the true
# tau. The orange points ({glue:text}`ch08_saturated_pct` % of all scores) are optima on a grid
# end. When the story is better than every anchor, the judge says "better" to all of them, the
# loss keeps falling as $S$ grows, and the optimum is the grid's upper end, 10, whatever the
# story's true quality. The table shows when that happens: by how far the true score lies above
# the highest anchor used.

# %%
saturation = studies.saturation_table(reviews)
glue("ch08_sat_below_pct", 100 * saturation["saturated_high"].iloc[0], digits=0)
glue("ch08_sat_below_bin", saturation.index[0])
glue("ch08_sat_above_pct", 100 * saturation["saturated_high"].iloc[-1], digits=0)
glue("ch08_sat_above_bin", saturation.index[-1])
save("saturation", saturation.round(3), out_dir)

# %% [markdown]
# Saturation is not the judge "giving a 10": it is the inference running out of anchors. Of the
# stories whose true score lies {glue:text}`ch08_sat_below_bin` points from the highest anchor,
# {glue:text}`ch08_sat_below_pct` % are stuck at 10; of those {glue:text}`ch08_sat_above_bin`
# points from it, {glue:text}`ch08_sat_above_pct` %. The mirror effect, scores stuck at 1 below
# the lowest anchor, occurs {glue:text}`ch08_saturated_low_n` times here. The `saturated` flag in
# the diagnostics marks such scores.

# %% [markdown]
# ## What the 1.92 band measures
#
# The original interval is every grid point whose loss is within 1.92 of the minimum. For an
# unweighted log-likelihood, 1.92 is half the 95% point of $\chi^2_1$, so the band would be a
# likelihood-ratio interval. Here the loss is weighted, and the weights have no natural unit:
# multiplying all of them by a constant leaves the score unchanged but stretches or shrinks the
# loss, so the band's width, and its coverage, follow the weight scale rather than the evidence.
# `infer_score` therefore also reports `profile_ci_low`/`profile_ci_high`: the same likelihood
# ratio rule after rescaling the weights to Kish's effective sample size
# $(\sum w)^2 / \sum w^2$, which does not change when all weights are multiplied by a constant.

# %%
example = rounds[0]
profile = studies.loss_profile(example["anchors"], example["comparisons"], example["tau"], scales=weight_scales)
fig = loss_band_plot(profile, SIM)
save("loss_band", fig, out_dir)
plt.show()

# %%
scale_effect = studies.weight_scale_effect(rounds, scales=weight_scales)
first, last = scale_effect.iloc[0], scale_effect.iloc[-1]
glue("ch08_score_changed_max", scale_effect["score_changed"].max(), digits=3)
glue("ch08_scale_first", first["scale"])
glue("ch08_scale_last", last["scale"])
glue("ch08_band_width_first", first["band_width"], digits=2)
glue("ch08_band_width_last", last["band_width"], digits=2)
glue("ch08_band_cov_first", first["band_coverage"], digits=2)
glue("ch08_band_cov_last", last["band_coverage"], digits=2)
glue("ch08_profile_width_min", scale_effect["profile_width"].min(), digits=2)
glue("ch08_profile_width_max", scale_effect["profile_width"].max(), digits=2)
glue("ch08_profile_cov", scale_effect["profile_coverage"].iloc[0], digits=2)
save("scale_effect", scale_effect.round(3), out_dir)

# %%
fig = weight_scale_plot(scale_effect, SIM)
save("weight_scale", fig, out_dir)
plt.show()

# %% [markdown]
# The share of scores that move when the weights are rescaled is at most
# {glue:text}`ch08_score_changed_max` (the optimum does not depend on the scale). The band's mean
# width goes from {glue:text}`ch08_band_width_first` points with all weights times
# {glue:text}`ch08_scale_first` to {glue:text}`ch08_band_width_last` with weights times
# {glue:text}`ch08_scale_last`, and its coverage of the true score from
# {glue:text}`ch08_band_cov_first` to {glue:text}`ch08_band_cov_last`. The rescaled interval's width
# stays between {glue:text}`ch08_profile_width_min` and {glue:text}`ch08_profile_width_max`, by
# construction (the Kish rescaling removes the scale). Its coverage here,
# {glue:text}`ch08_profile_cov`, is again a property of the simulation: the simulated judge's
# answers are independent given the scores and follow the assumed model, which a real judge's
# answers on one call need not do.

# %% [markdown]
# ## The densify triggers
#
# After the first round the original re-runs all roles with extra anchors if, for any role,
# the loss exceeds 0.05, any monotonic violation occurs, or the average strength is below 0.35.
# Below, first-round diagnostics (reviews without densify) are checked against each trigger for
# several loss thresholds.

# %%
reviews_first, rounds_first = studies.simulated_reviews(pool, judge, n_stories=n_stories, seed=seed,
                                                        densify=False)
triggers = studies.densify_trigger_rates(rounds_first, loss_thresholds)
original = triggers.iloc[0]
glue("ch08_loss_threshold", original["loss_threshold"])
glue("ch08_loss_trigger_pct", 100 * original["loss"], digits=1)
glue("ch08_strength_trigger_pct", 100 * original["strength"], digits=1)
glue("ch08_monotonic_extra_pct", 100 * (original["any"] - original["loss"]), digits=1)
save("triggers", triggers.round(3), out_dir)

# %% [markdown]
# The strength trigger can never fire (here {glue:text}`ch08_strength_trigger_pct` %): strength
# weights are 1, 2 or 3, so their average is at least 1 > 0.35; that follows from the original
# code, not from the simulation. The loss trigger with the original threshold
# {glue:text}`ch08_loss_threshold` fires for {glue:text}`ch08_loss_trigger_pct` % of first-round
# reviews, because the minimum of a sum of cross-entropies over ten or more anchors is rarely that
# small (any tie alone contributes at least $0.69\,w_i$). The monotonic trigger adds
# {glue:text}`ch08_monotonic_extra_pct` % of reviews that the loss trigger would not have sent to a
# second round. The extra anchors come from the score bucket around the first estimate; compare
# the error and the share of saturated scores with and without the second round.

# %%
densify_effect = pd.concat({"with densify": studies.recovery_summary(reviews).loc["all"],
                            "first round only": studies.recovery_summary(reviews_first).loc["all"]}, axis=1)
glue("ch08_mae_densify", densify_effect.loc["mae", "with densify"], digits=2)
glue("ch08_mae_first", densify_effect.loc["mae", "first round only"], digits=2)
glue("ch08_sat_densify_pct", 100 * densify_effect.loc["saturated_share", "with densify"], digits=1)
glue("ch08_sat_first_pct", 100 * densify_effect.loc["saturated_share", "first round only"], digits=1)
save("densify_effect", densify_effect.round(3), out_dir)

# %% [markdown]
# With the second round the mean absolute error is {glue:text}`ch08_mae_densify` points against
# {glue:text}`ch08_mae_first` for the first round alone, and {glue:text}`ch08_sat_densify_pct` % of
# scores are saturated against {glue:text}`ch08_sat_first_pct` % (same simulated judge, same
# stories).

# %% [markdown]
# ## A judge that likes ties
#
# How ties enter matters. If ties replace better and worse answers evenly, the expected answer
# is unchanged and tau stays right, however many ties there are ("calibrated"). If instead the
# judge *abstains* to "tie" whenever unsure, each tie pulls the expected answer towards 0.5, the
# fitted curve flattens and tau grows with the share of ties ("abstain"). The wider band of
# near-equal pairs here (`heavy_tie_width`) makes the effect visible.

# %%
ties = studies.tie_effect(pool, tau=0.8, tie_rates=heavy_tie_rates, tie_width=heavy_tie_width,
                          n_pairs=n_pairs, seed=seed)
calibrated, abstain = ties[ties["tie_mode"] == "calibrated"], ties[ties["tie_mode"] == "abstain"]
glue("ch08_ties_true_tau", ties["true_tau"].iloc[0])
glue("ch08_ties_cal_min", calibrated["tau_mle"].min(), digits=2)
glue("ch08_ties_cal_max", calibrated["tau_mle"].max(), digits=2)
glue("ch08_ties_abstain_share_pct", 100 * abstain["tie_share"].iloc[-1], digits=0)
glue("ch08_ties_abstain_tau", abstain["tau_mle"].iloc[-1], digits=2)
save("ties", ties.round(3), out_dir)

# %%
fig = tie_effect_plot(ties, SIM)
save("tie_effect", fig, out_dir)
plt.show()

# %% [markdown]
# With calibrated ties the fitted tau (mle) stays between {glue:text}`ch08_ties_cal_min` and
# {glue:text}`ch08_ties_cal_max` (true {glue:text}`ch08_ties_true_tau`); that is true by
# construction, since calibrated ties leave the expected label unchanged. The abstaining judge is
# the informative case: at {glue:text}`ch08_ties_abstain_share_pct` % ties the fitted tau is
# {glue:text}`ch08_ties_abstain_tau`. An inflated tau makes every later interval wider than the
# evidence warrants. The remedy is to fit tau with the very judge, rubric and card format that
# will be used, which is what the tau file's metadata enforces.
#
# ## A judge that does not see what the fitter sees
#
# So far the simulated judge perceived each paper at exactly the score10 the fitter and the
# inference use. A real judge reads a card, not a score. Two departures, alone and together:
#
# - **perception noise**: the judge perceives each paper with its own fixed error,
#   $N(0, \sigma)$ score points ($\sigma$ = `perception_noises`), the same in every comparison;
# - **latent quality**: the judge perceives the pool papers at their latent quality, which the
#   anchors' score10 measures only through three to six noisy, rounded reviews.
#
# The fitter still sees score10 gaps. For each of `misspec_reps` repetitions the pairs and the
# answer draws are shared by all conditions (common random numbers), and the condition
# "score10, noise 0" repeats the first repetitions of the recovery study above exactly.

# %%
misspec = studies.tau_misspecification(pool, true_taus, perception_noises=perception_noises, n_pairs=n_pairs,
                                       n_reps=misspec_reps, seed=seed, tie_rate=tie_rate, tie_width=tie_width)
misspec_table = studies.misspecification_table(misspec)
mean_tau = misspec_table["mean_tau"]
t_lo, t_mid, t_hi, s_max = (min(true_taus), sorted(true_taus)[len(true_taus) // 2], max(true_taus),
                            max(perception_noises))
q_runs = misspec[(misspec["source"] == "quality") & (misspec["perception_noise"] == 0) & (misspec["method"] == "mle")]
for name, tau in (("lo", t_lo), ("mid", t_mid)):
    glue(f"ch08_ms_tau_{name}", tau)
    glue(f"ch08_ms_quality_{name}", mean_tau[("quality", 0.0, tau, "mle")], digits=2)
    glue(f"ch08_ms_quality_{name}_min", q_runs.loc[q_runs["true_tau"] == tau, "tau_hat"].min(), digits=2)
    glue(f"ch08_ms_quality_{name}_max", q_runs.loc[q_runs["true_tau"] == tau, "tau_hat"].max(), digits=2)
    glue(f"ch08_ms_base_{name}", mean_tau[("score10", 0.0, tau, "mle")], digits=2)
glue("ch08_ms_noise_max", s_max)
glue("ch08_ms_tau_hi", t_hi)
for name, tau in (("lo", t_lo), ("hi", t_hi)):
    glue(f"ch08_ms_noisy_{name}", mean_tau[("score10", s_max, tau, "mle")], digits=2)
    glue(f"ch08_ms_noisy_{name}_plain", mean_tau[("score10", s_max, tau, studies.NO_STRENGTH)], digits=2)
    glue(f"ch08_ms_approx_{name}", studies.noisy_judge_tau(tau, s_max), digits=2)
glue("ch08_ms_base_hi", mean_tau[("score10", 0.0, t_hi, "mle")], digits=2)
both = misspec.pivot_table(index=["source", "perception_noise", "true_tau", "rep"], columns="method", values="tau_hat")
glue("ch08_ms_grid_mle_maxdiff", (both["grid"] - both["mle"]).abs().max(), digits=3)
save("mean_tau", mean_tau.unstack(["true_tau", "method"]).round(3), out_dir)

# %%
fig = misspecified_tau_plot(misspec, SIM)
save("misspecified_tau", fig, out_dir)
plt.show()

# %% [markdown]
# The judge that sees latent quality instead of score10 already moves tau: mean fitted tau
# (mle) {glue:text}`ch08_ms_quality_lo` for a true {glue:text}`ch08_ms_tau_lo` (repetitions
# {glue:text}`ch08_ms_quality_lo_min`-{glue:text}`ch08_ms_quality_lo_max`; well-specified
# {glue:text}`ch08_ms_base_lo`) and {glue:text}`ch08_ms_quality_mid` for a true
# {glue:text}`ch08_ms_tau_mid` (repetitions {glue:text}`ch08_ms_quality_mid_min`-{glue:text}`ch08_ms_quality_mid_max`;
# well-specified {glue:text}`ch08_ms_base_mid`). The review noise in score10 acts like perception
# noise seen from the fitter's side, and the fitted curve flattens.
#
# How perception noise moves tau depends on tau, because two effects pull in opposite directions.
# Noise alone flattens the curve: fitted on the same answers with every strength weighing 1
# (`mle_no_strength`), tau at noise {glue:text}`ch08_ms_noise_max` is
# {glue:text}`ch08_ms_noisy_lo_plain` for a true {glue:text}`ch08_ms_tau_lo` and
# {glue:text}`ch08_ms_noisy_hi_plain` for {glue:text}`ch08_ms_tau_hi`, close to the approximation
# $\sqrt{\tau^2 + 2\sigma^2/1.702^2}$ ({glue:text}`ch08_ms_approx_lo` and
# {glue:text}`ch08_ms_approx_hi`; dotted line). But the judge's strength follows its *perceived*
# gap, so the answers the fitter weighs three times are those where the judge's error pushed the
# gap out, and they make the curve look steeper. With the strength weights of the method, tau at
# noise {glue:text}`ch08_ms_noise_max` is {glue:text}`ch08_ms_noisy_lo` for a true
# {glue:text}`ch08_ms_tau_lo`, but {glue:text}`ch08_ms_noisy_hi` for a true
# {glue:text}`ch08_ms_tau_hi` (well-specified {glue:text}`ch08_ms_base_hi`). A fitted tau near the
# truth is therefore no proof that the judge perceives the scores the way the model assumes. Grid
# and mle agree to {glue:text}`ch08_ms_grid_mle_maxdiff` in every condition, so the choice of
# fitter does not matter here; the judge model does.
#
# What does that do to the scores? Tau is fitted per role from the misspecified judge's answers, as
# a user would calibrate it, and then the stories reviewed above are judged again against the same
# anchors by that judge (the story perceived at its true score plus its own perception error) and
# scored with the fitted tau.

# %%
misspec_scores = studies.score_misspecification(pool, rounds, role_taus, perception_noises=perception_noises,
                                                n_pairs=n_pairs, seed=seed, tie_rate=tie_rate, tie_width=tie_width)
score_table = studies.score_misspecification_table(misspec_scores)
glue("ch08_ms_mae_base", score_table.loc[("score10", 0.0), "mae"], digits=2)
glue("ch08_ms_mae_quality", score_table.loc[("quality", 0.0), "mae"], digits=2)
glue("ch08_ms_moved_quality", score_table.loc[("quality", 0.0), "moved"], digits=2)
glue("ch08_ms_mae_noisy", score_table.loc[("score10", s_max), "mae"], digits=2)
glue("ch08_ms_moved_noisy", score_table.loc[("score10", s_max), "moved"], digits=2)
glue("ch08_ms_cov_base", score_table.loc[("score10", 0.0), "profile_coverage"], digits=2)
glue("ch08_ms_cov_noisy", score_table.loc[("score10", s_max), "profile_coverage"], digits=2)
glue("ch08_ms_cov_worst", score_table["profile_coverage"].min(), digits=2)
save("score_table", score_table.round(3), out_dir)

# %%
fig = misspecified_score_plot(score_table, SIM)
save("misspecified_score", fig, out_dir)
plt.show()

# %% [markdown]
# The judge that sees latent quality moves each score by {glue:text}`ch08_ms_moved_quality` points
# on average from the well-specified score; its mean absolute error against the true score is
# {glue:text}`ch08_ms_mae_quality` (well-specified {glue:text}`ch08_ms_mae_base`), since the story's
# true score is itself on the quality scale.
# Perception noise of {glue:text}`ch08_ms_noise_max` point moves scores by
# {glue:text}`ch08_ms_moved_noisy` points, and the mean absolute error is {glue:text}`ch08_ms_mae_noisy`; the
# scale-free interval then covers the true score in {glue:text}`ch08_ms_cov_noisy` of cases
# (well-specified {glue:text}`ch08_ms_cov_base`; lowest over the conditions
# {glue:text}`ch08_ms_cov_worst`): the interval accounts for the logistic noise of the answers, not
# for a judge that misreads the cards. All of this is still a simulated judge; how a language model
# perceives cards has to be measured with one (see "Calibrating with a real judge" below).

# %% [markdown]
# ## Original method vs this run
#
# The paper this book reproduces reports no numbers for this chapter; the table sets the
# original method's settings {cite}`idea2paper2026review` beside this run's.

# %%
within = recovery.assign(ok=recovery["rel_error"].abs() < 0.10)["ok"].mean()
studies.original_vs_this_run({
    "judged pairs per role for tau": (2000, n_pairs, "stratified, 80% same pattern"),
    "tau grid": ("0.10..3.00 step 0.01", "0.10..3.00 step 0.01", "plus bounded mle"),
    "score grid points": (901, 901, "rounded grid, so 10.0 is a point"),
    "card caps problem/method/contrib": ("220/280/320", "/".join(str(v) for v in FIELD_CAPS.values()), CARD_VERSION),
    "rubric version": ("rubric_v1", RUBRIC_VERSION, "own wording"),
    "fits within 10% of the true tau": ("not reported", round(float(within), 3),
                                        "simulated judge; a check of the code (true by construction)"),
    f"fitted tau, judge sees latent quality (true {t_lo:g})": (
        "not reported", round(float(mean_tau[("quality", 0.0, t_lo, "mle")]), 3), "simulated judge, mle"),
    "densify loss trigger rate (0.05)": ("not reported",
                                         round(float(studies.densify_trigger_rates(rounds_first)["loss"][0]), 3),
                                         "simulated judge"),
})

# %% [markdown]
# ## Calibrating with a real judge
#
# With `backend = "anthropic"` (needs `ANTHROPIC_API_KEY`) or `"replay"` (recorded answers in
# `cache_dir`), the cell below sends `llm_pairs` stratified pairs of the chapter's pool to the blind
# judge `judge_model`, once per role, and fits tau per role from its verdicts (grid and mle). Each
# prompt carries only the role's rubric and two blind cards and is checked for forbidden terms
# before it is sent; a reply still invalid after two repair requests is excluded and counted
# (`n_excluded`). Answers are cached, so a second run sends nothing. With the offline backend the
# cell only says that it did not run.
#
# **The limit of a synthetic anchor pool.** The pool's card texts are drawn from templates
# independently of the papers' scores. A judge that reads the cards therefore has no information
# about the score gaps the fitter uses: an honest judge's verdicts agree with the sign of the gap
# about half the time (`sign_agreement`) and drive tau towards the grid's upper end, 3.00. On this
# pool the real-judge fit shows that the pipeline runs end to end and what it costs; it measures
# nothing about the judge's calibration. That needs a pool of real papers with their reviews, in
# the same format (`llm_tau_calibration` takes any list of paper dicts with `paper_id`,
# `pattern_id`, the card fields and `score10`/`weight` or `review_stats`).

# %%
if llm_run:
    calibration = llm_tau_calibration(pool, backend, model=judge_model, n_pairs=llm_pairs, seed=seed,
                                      cache_dir=cache_dir)
    print(f"{calibration.requests_sent} requests sent, {calibration.served_from_cache} answers from the cache")
    display_fits = calibration.fits.round(3)
else:
    display_fits = pd.DataFrame({"real judge": [f"not run: backend {backend!r} has no language model"]})
save("real_judge_fits", display_fits, out_dir)

# %% [markdown]
# The same code scores single stories with an LLM: `MultiAgentCritic` with
# `BlindJudge(backend="anthropic")` builds the identical blind prompts and adds the separate coach
# call. Fit tau per role from your own judged pairs with
# `mechaudit fit-tau --pairs pairs.jsonl --method mle`, store it with `write_tau_file`, and the
# critic refuses a tau file from another rubric, card format or judge model. Single scores can be
# recomputed from logged comparisons with `mechaudit infer-score --input comparisons.json`.
#
# ## LLM usage
#
# What this run asked of the LLM API: calls sent (`api`, or `batch` at the batch discount),
# requests answered from the response cache (`cache`), tokens, and the cost estimated from
# `params/prices.yaml`. With the offline backend no LLM is called.

# %%
llm_usage.report(backend)

# %% [markdown]
#
# ## Try it
#
# - Set `review_noise = 2.0`: reviewers disagree more, anchor weights shrink and the 1.92 band
#   widens, although the judge's information is unchanged.
# - Set `true_taus = [0.2, 2.5]`: a small tau is pinned down tightly, a large one spreads widely.
# - Set `tie_rate = 0.9`: calibrated ties leave tau unbiased, only noisier.
# - Set `heavy_tie_width = 2.0`: the abstaining judge inflates tau even more.
# - Set `weight_scales = [0.1, 10]`: the 1.92 band's coverage swings from almost 1 to far below 95%.
# - Set `perception_noises = [0.0, 0.25, 0.5, 1.0, 2.0]` and `misspec_reps = 10`: a finer and
#   steadier picture of where the strength weights stop hiding the noise.
# - Set `review_noise = 1.5`: score10 measures quality worse, and the judge that sees quality
#   moves tau further.
# - Run with `-p backend anthropic` (and a key) to calibrate a real judge on this pool; read the
#   limits above first.
