"""Chapter 08's helpers (:mod:`mechaudit.book.ch08_tau_calibration`): the facts the prose quotes and the readable
tables, on small hand-made frames whose answers are known, plus the offline real-judge step."""

from __future__ import annotations

import pandas as pd
import pytest

from mechaudit.book import ch08_tau_calibration as ch
from mechaudit.book.chapter import ChapterContext
from mechaudit.book.settings import RunSettings
from mechaudit.tau import make_pool, studies


@pytest.fixture(scope="module")
def recovery():
    rows = []
    for true, fits in ((0.5, [(0.50, 0.51), (0.54, 0.55)]), (1.5, [(1.20, 1.21), (1.50, 1.52)])):
        for rep, (grid, mle) in enumerate(fits):
            for method, tau in (("grid", grid), ("mle", mle)):
                se = float("nan") if method == "grid" else 0.01 * true
                rows.append({"true_tau": true, "rep": rep, "method": method, "tau_hat": tau, "se": se,
                             "se_robust": 2 * se if method == "mle" else se, "rel_error": tau / true - 1,
                             "n_pairs": 100})
    return pd.DataFrame(rows)


def test_recovery_facts_and_headline(recovery):
    facts = ch.recovery_facts(recovery)
    # strictly within 10 %: 0.50, 0.51, 0.54 and 1.50, 1.52 (not 0.55, 1.20, 1.21): 5 of 8
    assert facts.within10_pct == pytest.approx(62.5)
    assert facts.n_fits == 8
    assert facts.grid_mle_differ == "differ by at most 0.020"
    assert (facts.tau_small, facts.tau_large) == (0.5, 1.5)
    assert facts.sd_small == pytest.approx(pd.Series([0.51, 0.55]).std())
    mle_errors = [0.51 / 0.5 - 1, 0.55 / 0.5 - 1, 1 - 1.21 / 1.5, 1.52 / 1.5 - 1]
    assert facts.mean_error_pct == pytest.approx(100 * sum(mle_errors) / 4)
    sd = {0.5: pd.Series([0.51, 0.55]).std(), 1.5: pd.Series([1.21, 1.52]).std()}
    assert facts.se_over_sd == pytest.approx((0.005 / sd[0.5] + 0.015 / sd[1.5]) / 2)
    assert facts.se_robust_over_sd == pytest.approx(2 * facts.se_over_sd)
    assert facts.headline_tau_error == ch.headline_tau_error(facts.mean_error_pct, 62.5)
    assert ch.headline_tau_error(8.1667, 90.0) == "8.2 % mean error (mle); 90 % of fits within 10 %"


def test_recovery_display_is_narrow_and_readable(recovery):
    table = ch.DISPLAYS["tau_recovery"](studies.recovery_table(recovery))
    assert list(table.index.names) == ["true τ", "fitter"]
    assert table.shape == (4, 5)
    assert table.loc[(0.5, "grid"), "% within 10 %"] == 100 and table.loc[(1.5, "grid"), "% within 10 %"] == 50
    assert table.loc[(0.5, "grid"), "mean SE"] == ""  # the grid has no standard error
    assert table.loc[(0.5, "mle"), "mean SE"] == pytest.approx(0.005)


def test_review_saturation_and_scale_facts():
    reviews = pd.DataFrame({"error": [0.5, -1.0, 3.0, -2.0], "saturated": [False, False, True, True],
                            "saturated_at": [None, None, "high", "low"]})
    assert ch.review_facts(reviews, 3) == ch.ReviewFacts(interior_mae=0.75, interior_n=2, saturated_pct=50.0,
                                                         saturated_low_n=1, n_scores=4, n_stories=3)
    saturation = pd.DataFrame({"saturated_high": [0.0, 0.5, 0.8]}, index=["(-10, -1]", "(-1, 1]", "(1, 10]"])
    sentence = ch.saturation_sentence(saturation)
    assert sentence.endswith("none is stuck at 10; of those more than 1 point above it, 80 % are.")
    scale = pd.DataFrame({"scale": [0.5, 1.0, 2.0], "band_width": [4.0, 2.0, 1.0], "band_coverage": [1.0, 0.9, 0.6],
                          "profile_width": [3.0, 3.0, 3.0], "profile_coverage": [0.95, 0.96, 0.97],
                          "score_changed": [0.0, 0.0, 0.0]})
    facts = ch.scale_facts(scale, 7)
    assert (facts.scale_first, facts.scale_last, facts.band_cov_last, facts.profile_cov) == ("0.5", "2", 60.0, 95.0)
    assert facts.band_width_first == 4.0 and facts.kish_width_phrase == "is 3.00 points whatever the factor"
    assert facts.scale_moved_sentence.startswith("No score moves") and facts.n_rounds == 7
    display = ch.DISPLAYS["scale_effect"](scale)
    assert display.index.name == "factor on weights" and display.loc[2.0, "band width"] == 1.0


def test_trigger_facts_count_only_what_the_loss_trigger_misses():
    triggers = pd.DataFrame({"loss_threshold": [0.05, 1.0], "loss": [0.9, 0.2], "monotonic": [0.1, 0.1],
                             "strength": [0.0, 0.0], "any": [0.95, 0.3]})
    facts = ch.trigger_facts(triggers)
    assert facts.loss_trigger_pct == pytest.approx(90) and facts.monotonic_extra_share == "5.0 %"
    assert facts.strength_trigger_share == "none" and facts.loss_threshold == 0.05
    assert list(ch.DISPLAYS["triggers"](triggers).columns) == ["% loss", "% monotonic", "% strength", "% any"]


def test_tie_facts_and_display():
    ties = pd.DataFrame({"tie_mode": ["calibrated"] * 2 + ["abstain"] * 2, "tie_rate": [0.0, 0.9] * 2,
                         "tie_share": [0.0, 0.4, 0.0, 0.5], "tau_grid": [0.8, 0.81, 0.8, 1.2],
                         "tau_mle": [0.79, 0.82, 0.79, 1.25], "true_tau": 0.8})
    assert ch.tie_facts(ties) == ch.TieFacts(true_tau=0.8, cal_span="between 0.79 and 0.82", abstain_share_pct=50.0,
                                             abstain_tau=1.25)
    table = ch.DISPLAYS["ties"](ties)
    assert table.loc[("abstain", 0.9), "% ties"] == 50 and table["% ties"].dtype.kind == "i"


def _misspec_frame():
    rows = []
    for source in ("score10", "quality"):
        for noise in (0.0, 1.0):
            for true in (0.5, 0.8, 1.5):
                for rep in (0, 1):
                    shift = (0.1 if source == "quality" else 0.0) + 0.2 * noise + 0.02 * rep
                    for method, extra in (("grid", 0.001), ("mle", 0.0), (studies.NO_STRENGTH, 0.3)):
                        tau = true + shift + extra
                        rows.append({"source": source, "perception_noise": noise, "true_tau": true, "rep": rep,
                                     "method": method, "tau_hat": tau, "rel_error": tau / true - 1,
                                     "approx_tau": float("nan")})
    return pd.DataFrame(rows)


def test_misspec_facts_pick_the_right_conditions():
    facts = ch.misspec_facts(_misspec_frame())
    assert (facts.tau_lo, facts.tau_mid, facts.tau_hi, facts.noise_max) == (0.5, 0.8, 1.5, "1")
    assert facts.base_lo == pytest.approx(0.51)  # mean of reps 0 and 1: shift 0 and 0.02
    assert facts.quality_mid == pytest.approx(0.91)
    assert (facts.quality_lo_min, facts.quality_lo_max) == pytest.approx((0.6, 0.62))
    assert facts.noisy_hi == pytest.approx(1.71)
    assert facts.noisy_hi_plain == pytest.approx(2.01)
    assert facts.approx_lo == pytest.approx(studies.noisy_judge_tau(0.5, 1.0))
    assert facts.grid_mle_maxdiff == pytest.approx(0.001)
    table = ch.DISPLAYS["mean_tau"](studies.misspecification_table(_misspec_frame()))
    assert list(table.columns) == ["true τ 0.5", "true τ 0.8", "true τ 1.5"]
    assert table.loc[("quality", 1.0), "true τ 0.5"] == pytest.approx(0.81)


def test_score_misspec_facts():
    index = pd.MultiIndex.from_tuples([("score10", 0.0), ("score10", 1.0), ("quality", 0.0)],
                                      names=["source", "perception_noise"])
    table = pd.DataFrame({"tau_ratio": [1.0, 1.1, 1.05], "bias": 0.0, "mae": [0.6, 1.0, 0.65],
                          "rmse": 1.0, "moved": [0.0, 0.9, 0.3], "profile_coverage": [0.96, 0.8, 0.9],
                          "saturated_share": 0.2}, index=index)
    facts = ch.score_misspec_facts(table)
    assert facts == ch.ScoreMisspecFacts(mae_base=0.6, mae_quality=0.65, moved_quality=0.3, mae_noisy=1.0,
                                         moved_noisy=0.9, cov_base=96.0, cov_noisy=80.0, cov_worst=80.0)
    assert ch.DISPLAYS["score_table"](table).loc[("score10", 1.0), "% saturated"] == 20.0


def test_pool_facts_and_display():
    pool = make_pool(n_patterns=2, papers_per_pattern=10, seed=1)
    facts = ch.pool_facts(pool)
    table = pool.table()
    assert facts.n_papers == 20
    assert facts.score10_quality_rmse == pytest.approx(((table["score10"] - table["quality"]) ** 2).mean() ** 0.5)
    display = ch.pool_display(pool)
    assert list(display.index) == ["mean", "sd", "min", "max"] and display.shape == (4, 4)
    assert display.loc["max", "reviews"] == table["review_count"].max()


def test_real_judge_step_is_a_one_row_table_offline():
    pool = make_pool(n_patterns=2, papers_per_pattern=10, seed=1)
    table = ch.calibrate_with_llm(pool, None, model="claude-opus-4-6", n_pairs=5)
    assert table.shape == (1, 1) and "not run" in table.iloc[0, 0] and "'reference'" in table.iloc[0, 0]


def test_original_settings_table():
    recovery = pd.DataFrame({"rel_error": [0.01, 0.2, -0.05, 0.0]})
    misspec = _misspec_frame()
    rounds = [{"anchors": [{"anchor_id": "A1", "score10": 5.0, "weight": 1.0}],
               "comparisons": [{"anchor_id": "A1", "judgement": "tie", "strength": "weak"}], "tau": 1.0}]
    table = ch.original_settings(recovery, misspec, rounds, n_pairs=500)
    assert table.index.name == "quantity" and list(table.columns) == ["original", "this run", "note"]
    assert table.loc["pairs per role for τ", "this run"] == "500"
    assert table.loc["fits within 10 % of true τ", "this run"] == "75 %"  # as the prose glues it
    assert table.loc["τ, judge sees quality (true 0.5)", "this run"] == "0.61"
    assert table.loc["loss trigger rate (0.05)", "this run"] == "1.0"  # a lone tie: loss log 2 > 0.05
    assert table["note"].str.len().max() <= 40


# ---------------------------------------------------------------- densify comparison


def _run(story_rows):
    """A review table from ``(story, role score, true score, saturated, n_extra)`` rows, three roles each."""
    rows = []
    for story, score, true, saturated, extra in story_rows:
        for role in ("Methodology", "Novelty", "Storyteller"):
            rows.append({"story": story, "role": role, "score": score, "true_score": true, "error": score - true,
                         "covered": True, "ci_low": score - 1, "ci_high": score + 1, "profile_covered": saturated,
                         "profile_ci_low": score - 1, "profile_ci_high": score + 1, "saturated": saturated,
                         "n_extra": extra})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def densify_runs():
    # story 0 in the middle, story 1 with a first round stuck at 10 (hint 10 >= 9.75)
    return {studies.FIRST_ROUND: _run([(0, 5.0, 6.0, False, 0), (1, 10.0, 8.0, True, 0)]),
            "original": _run([(0, 5.5, 6.0, False, 1), (1, 9.0, 8.0, False, 2)]),
            "floor": _run([(0, 6.0, 6.0, False, 3), (1, 10.0, 8.0, True, 0)])}


def test_densify_effect_and_facts(densify_runs):
    effect = ch.densify_effect(densify_runs)
    assert list(effect.columns) == ["first round only", "original (default)", "floor (book's first version)"]
    assert effect.loc["MAE (score points)", "first round only"] == pytest.approx(1.5)  # (1 + 2) / 2
    assert effect.loc["MAE (score points)", "original (default)"] == pytest.approx(0.75)
    assert effect.loc["% saturated", "floor (book's first version)"] == pytest.approx(50.0)
    assert effect.loc["anchors added per story", "original (default)"] == pytest.approx(1.5)
    assert effect.loc["anchors added, first round ≥ 9.75", "original (default)"] == 2
    assert effect.loc["% saturated, first round ≥ 9.75", "floor (book's first version)"] == 100
    facts = ch.densify_facts(effect, densify_runs)
    assert facts.top_n == 1 and facts.mae_floor == pytest.approx(1.0) and facts.top_added_floor == 0
    assert facts.mae_fill is None and facts.top_hint == "9.75"  # no fill run
    display = ch.densify_display(effect)
    assert display.loc["% saturated", "first round only"] == "50.0"
    assert display.loc["MAE (score points)", "original (default)"] == "0.75"


def test_densify_by_hint_bands(densify_runs):
    table = studies.densify_by_hint(densify_runs, edges=(1.0, 7.0, 9.75, 10.0))
    original = table[table["run"] == "original"].set_index("band")
    assert list(original.index) == ["1-7", "7-9.75", "9.75-10"]
    assert list(original["stories"]) == [1, 0, 1]  # a hint of exactly 10 falls in the last band
    assert original.loc["9.75-10", "anchors_added"] == 2 and original.loc["1-7", "mae"] == pytest.approx(0.5)


def test_sentences_read_like_prose():
    assert ch.percent_or_none(0.04) == "none" and ch.percent_or_none(12.3) == "12 %"
    assert ch.percent_or_none(0.04, digits=1) == "none" and ch.percent_or_none(0.06, digits=1) == "0.1 %"
    same = ch.scale_sentences(pd.DataFrame({"score_changed": [0.0, 0.0], "profile_width": [3.041, 3.0399]}))
    assert same == ("No score moves when all weights are multiplied by the same factor",
                    "is 3.04 points whatever the factor")
    moved, width = ch.scale_sentences(pd.DataFrame({"score_changed": [0.02, 0.0], "profile_width": [2.9, 3.1]}))
    assert width == "stays between 2.90 and 3.10 points" and moved.startswith("At most 2.0 %")
    saturation = pd.DataFrame({"saturated_high": [0.0, 0.4, 0.83]},
                              index=["(-10.0, -1.0]", "(-1.0, 1.0]", "(1.0, 10.0]"])
    assert ch.saturation_sentence(saturation) == (
        "Of the stories whose true score lies 1 point or more below the highest anchor, none is stuck at 10; "
        "of those more than 1 point above it, 83 % are.")


def _legend_sizes(fig):
    sizes = [len(legend.get_texts()) for legend in fig.legends]
    sizes += [len(ax.get_legend().get_texts()) for ax in fig.axes if ax.get_legend() is not None]
    return sizes


def test_chapter_figures_have_short_legends_and_worded_axes(densify_runs):
    import matplotlib.pyplot as plt

    from mechaudit.plots import tau as plots

    mis = _misspec_frame().assign(approx_tau=1.0)
    profile = pd.DataFrame([{"scale": sc, "S": s, "excess_loss": sc * (s - 5) ** 2, "profile_excess": (s - 5) ** 2}
                            for sc in (0.25, 0.5, 1, 2, 4) for s in (1.0, 3.0, 5.0, 7.0, 9.0)])
    figures = {"misspecified_tau": plots.misspecified_tau_plot(mis, caption="Backend: reference"),
               "loss_band": plots.loss_band_plot(profile, caption="Backend: reference"),
               "densify": plots.densify_plot(studies.densify_by_hint(densify_runs), caption="Backend: reference")}
    for name, fig in figures.items():
        sizes = _legend_sizes(fig)
        assert sizes and max(sizes) <= 4, (name, sizes)
        for ax in fig.axes:
            for label in (ax.get_xlabel(), ax.get_ylabel()):
                assert "_" not in label and "tau" not in label, (name, label)
        plt.close(fig)
    # the loss band names each weight factor on its curve instead of in the legend
    texts = [t.get_text() for t in figures["loss_band"].axes[0].texts]
    assert texts == ["×0.25", "×0.5", "×1", "×2", "×4"]


def test_table_writes_the_raw_numbers_and_shows_the_reading_form(tmp_path):
    ctx = ChapterContext(RunSettings(out_dir=str(tmp_path)))
    raw = pd.DataFrame({"tie_mode": ["abstain"], "tie_rate": [0.3], "tie_share": [0.25], "tau_grid": [0.81234],
                        "tau_mle": [0.8166]})
    shown = ch.table(ctx, "ties", raw, "tbl-x", "Ties.")
    assert pd.read_csv(tmp_path / "ties.csv")["tau_grid"].tolist() == [0.812]
    html = shown._repr_html_()
    assert "0.82" in html and "0.8166" not in html and "% ties" in html and "Ties." in html
    assert ch.headline(7).n_reps == 7 and ch.headline(7).headline_status == ch.STATUS


# ---------------------------------------------------------------- the facts' declarations and the LLM step


def test_fact_helpers_declare_unit_rounding_and_the_missing_text():
    from mechaudit.report.facts import FactSpec

    spec = "mechaudit.fact"
    assert ch._pct("d").metadata[spec] == FactSpec("%", 1, "d", "not run")
    assert ch._score("d").metadata[spec] == FactSpec("score points", 2, "d", "not run")
    assert ch._tau("d").metadata[spec] == FactSpec("tau", 2, "d", None)


def test_densify_facts_name_each_measure_of_each_run(densify_runs):
    facts = ch.densify_facts(ch.densify_effect(densify_runs), densify_runs)
    assert (facts.mae_first, facts.sat_pct_first, facts.top_sat_pct_first) == (1.5, 50.0, 100.0)
    assert (facts.added_original, facts.top_added_original, facts.sat_pct_original) == (1.5, 2.0, 0.0)


def test_misspec_display_names_its_index():
    table = ch.misspec_display(studies.misspecification_table(_misspec_frame()))
    assert table.index.names == ["judge sees", "perception noise"]


def test_original_settings_quote_the_original_method():
    recovery = pd.DataFrame({"rel_error": [0.01]})
    rounds = [{"anchors": [{"anchor_id": "A1", "score10": 5.0, "weight": 1.0}],
               "comparisons": [{"anchor_id": "A1", "judgement": "tie", "strength": "weak"}], "tau": 1.0}]
    table = ch.original_settings(recovery, _misspec_frame(), rounds, n_pairs=500)
    assert table.loc["pairs per role for τ"].tolist() == ["2000", "500", "stratified, 80 % in one pattern"]
    assert table.loc["τ grid"].tolist() == ["0.10..3.00, step 0.01", "0.10..3.00, step 0.01", "plus bounded mle"]


def test_calibrate_with_llm_fits_tau_per_role_from_the_fake_api(tmp_path, api_key, capsys):
    from test_tau_realjudge import judge_client, score_aware_fake

    from mechaudit.tau import llm_tau_calibration

    pool = make_pool(n_patterns=2, papers_per_pattern=15, seed=3)
    fake = score_aware_fake(pool)
    table = ch.calibrate_with_llm(pool, judge_client(fake, tmp_path), model="claude-opus-4-6", n_pairs=6, seed=2)
    assert capsys.readouterr().out == "18 requests sent, 0 answers from the cache\n"
    assert table.index.names == ["role", "method"]
    assert list(table.columns) == ["τ", "SE", "verdicts", "excluded", "sign agreement"]
    assert table["verdicts"].dtype.kind == "i" and table["excluded"].dtype.kind == "i"
    expected = llm_tau_calibration(pool, judge_client(fake, tmp_path), model="claude-opus-4-6", n_pairs=6, seed=2)
    fits = expected.fits.set_index(["role", "method"])
    assert table["τ"].tolist() == fits["tau"].round(3).tolist()
    assert table["verdicts"].tolist() == fits["n_pairs"].tolist()
    assert len(fake.message_bodies) == 18  # the same pairs again: all from the cache
    ch.calibrate_with_llm(pool, judge_client(fake, tmp_path), model="claude-opus-4-6", n_pairs=6)
    llm_tau_calibration(pool, judge_client(fake, tmp_path), model="claude-opus-4-6", n_pairs=6, seed=0)
    assert len(fake.message_bodies) == 36  # the default seed is 0


def test_the_plan_rebuilds_the_pool_and_asks_each_role_per_pair():
    from mechaudit.tau.realjudge import ROLES, calibration_requests

    p = {"n_patterns": 2, "papers_per_pattern": 10, "seed": 4, "review_noise": 0.3, "judge_model": "m",
         "llm_pairs": 5}
    planned = ch.plan(p)
    pool = make_pool(n_patterns=2, papers_per_pattern=10, seed=4, review_noise=0.3)
    assert [x.request.key for x in planned] == [r.key for r in calibration_requests(pool, "m", 5, ROLES, 4)]
    assert len(planned) == 3 * 5 and {x.stage for x in planned} == {"blind judge m (tau pairs)"}
    assert all(x.exact for x in planned)
