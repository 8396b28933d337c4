"""Chapter 08, blind tau-calibrated scoring: the facts the prose quotes (``*_facts``) and narrow
tables with human headers (:data:`DISPLAYS`) of the studies in :mod:`mechaudit.tau.studies`, whose
statistics :mod:`mechaudit.tau.summaries` computes. Every number comes from the offline simulated
judge; ``calibrate_with_llm`` is the one LLM step, :func:`plan` its cost plan.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import pandas as pd

from mechaudit.backends import Backend, caption_text
from mechaudit.book.chapter import ChapterContext, headline_provenance
from mechaudit.llm.pricing import Planned
from mechaudit.report.facts import fact
from mechaudit.report.glue import at_most_text, span_text
from mechaudit.report.tables import BookTable
from mechaudit.tau import FIELD_CAPS, RUBRIC_VERSION, SyntheticPool, llm_tau_calibration, studies, summaries
from mechaudit.tau.realjudge import ROLES, calibration_requests
from mechaudit.tau.simulate import make_pool

#: Caption of the simulated sections' figures: they run offline whatever ``backend`` is.
SIMULATED_CAPTION = caption_text(Backend.REFERENCE.value)
#: Status of the chapter's headline (intro's "results at a glance"): the judge is simulated.
STATUS = "simulated (reference backend)"
#: A fit counts as recovered when it is within this relative error of the true tau.
TOLERANCE = 0.10


#: glue key -> the table cells its prose value restates (format: tests/test_table_prose.py)
CITED_CELLS = {
    "ch08_within10_pct": (("tbl-ch08-original", ("Fits within 10 % of true τ",), "This run"),),
}


@dataclass(frozen=True)
class PoolFacts:
    """The synthetic pool (glued under ``ch08``)."""

    n_papers: int = fact(unit="papers", doc="papers in the pool")
    n_patterns: int = fact(unit="patterns", doc="research patterns of the pool")
    papers_per_pattern: int = fact(unit="papers", doc="papers of each pattern (the largest, if they differ)")
    score10_quality_rmse: float = fact(unit="score points", digits=2,
                                       doc="root-mean-square gap between anchor score and latent quality")


def pool_facts(pool: SyntheticPool) -> PoolFacts:
    """:class:`PoolFacts` of ``pool``."""
    return PoolFacts(**summaries.pool_summary(pool))


@dataclass(frozen=True)
class RecoveryFacts:
    """The tau-recovery study (:func:`mechaudit.tau.studies.tau_recovery`; glued under ``ch08``)."""

    within10_pct: float = fact(unit="%", digits=0, doc="fits within the tolerance (10 %) of the true tau")
    n_fits: int = fact(unit="fits", doc="fits, both fitters")
    grid_mle_differ: str = fact(doc='grid and mle on the same answers: "differ by at most x" or "do not differ"')
    tau_small: float = fact(unit="tau", doc="smallest true tau")
    tau_large: float = fact(unit="tau", doc="largest true tau")
    sd_small: float = fact(unit="tau", digits=3, doc="sd of the mle at the smallest true tau")
    sd_large: float = fact(unit="tau", digits=3, doc="sd of the mle at the largest true tau")
    se_over_sd: float = fact(unit="ratio", digits=2, doc="mean reported SE over the observed sd (mle)")
    se_robust_over_sd: float = fact(unit="ratio", digits=2, doc="the same for the robust SE")
    mean_error_pct: float = fact(unit="%", digits=1, doc="mean |fitted / true - 1| of the mle fits")
    headline_tau_error: str = fact(doc="the intro's one-line answer (:func:`headline_tau_error`)")


def recovery_facts(recovery: pd.DataFrame, tolerance: float = TOLERANCE) -> RecoveryFacts:
    """:class:`RecoveryFacts` of a :func:`mechaudit.tau.studies.tau_recovery` frame."""
    stats = summaries.recovery_summary(recovery, tolerance)
    gap = stats.pop("grid_mle_gap")
    return RecoveryFacts(**stats, grid_mle_differ=at_most_text(gap, digits=3),
                         headline_tau_error=headline_tau_error(stats["mean_error_pct"], stats["within10_pct"]))


@dataclass(frozen=True)
class Headline:
    """The intro row and the repetitions behind it (glued under ``ch08``); the simulated judge runs
    under every backend, so the row is never an LLM's."""

    n_reps: int = fact(unit="repetitions", doc="fits per true tau and fitter")
    headline_status: str = fact(doc="where the headline's numbers come from")
    headline_provenance: str = fact(doc="the intro row's provenance")
    headline_verdict: str = fact(doc="the intro row's verdict")


def headline(n_reps: int) -> Headline:
    """:class:`Headline` of a run with ``n_reps`` repetitions."""
    return Headline(n_reps, STATUS, *headline_provenance("ch08", llm=False))


def headline_tau_error(mean_error_pct: float, within_pct: float) -> str:
    """The intro's one-line answer, e.g. "2.9 % mean error (mle); 90 % of fits within 10 %"."""
    return (f"{mean_error_pct:.1f} % mean error (mle); {within_pct:.0f} % of fits "
            f"within {100 * TOLERANCE:.0f} %")


@dataclass(frozen=True)
class ReviewFacts:
    """The inferred scores of one densify run (glued under ``ch08``)."""

    interior_mae: float = fact(unit="score points", digits=2, doc="MAE of the scores with an interior optimum")
    interior_n: int = fact(unit="scores", doc="scores with an interior optimum")
    saturated_pct: float = fact(unit="%", digits=1, doc="scores on a grid end")
    saturated_low_n: int = fact(unit="scores", doc="scores stuck at 1")
    n_scores: int = fact(unit="scores", doc="all inferred scores")
    n_stories: int = fact(unit="stories", doc="stories per reviewer role")


def review_facts(reviews: pd.DataFrame, n_stories: int) -> ReviewFacts:
    """:class:`ReviewFacts` of a reviews frame of a run with ``n_stories`` stories per role."""
    return ReviewFacts(**summaries.review_summary(reviews), n_stories=n_stories)


def percent_or_none(pct: float, digits: int = 0) -> str:
    """A share for a sentence: "none" when it rounds to 0, else e.g. "12 %"."""
    text = f"{pct:.{digits}f}"
    return "none" if float(text) == 0 else f"{text} %"


def _gap_words(label: str) -> str:
    """Words for an outer gap bin of :func:`mechaudit.tau.studies.saturation_table`:
    "(-10.0, -1.0]" -> "1 point or more below", "(1.0, 10.0]" -> "more than 1 point above"."""
    low, high = (float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", label))
    if high <= 0:
        return f"{abs(high):g} point{'' if abs(high) == 1 else 's'} or more below"
    return f"more than {low:g} point{'' if low == 1 else 's'} above"


def saturation_sentence(saturation: pd.DataFrame) -> str:
    """The % stuck at 10 in the lowest and highest bin of :func:`mechaudit.tau.studies.saturation_table`,
    as a sentence."""
    below, above = (100 * float(saturation["saturated_high"].iloc[k]) for k in (0, -1))
    stuck = {pct: "none is" if percent_or_none(pct) == "none" else f"{pct:.0f} % are" for pct in (below, above)}
    return (f"Of the stories whose true score lies {_gap_words(saturation.index[0])} the highest anchor, "
            f"{stuck[below]} stuck at 10; of those {_gap_words(saturation.index[-1])} it, {stuck[above]}.")


@dataclass(frozen=True)
class ScaleFacts:
    """Every anchor weight multiplied by one factor (glued under ``ch08``): the first and last factor,
    the 1.92 band's width and coverage there, the Kish interval's coverage, and two sentences."""

    scale_moved_sentence: str = fact(doc="whether any score moves (:func:`scale_sentences`)")
    kish_width_phrase: str = fact(doc="the Kish interval's width over the factors")
    scale_first: str = fact(unit="factor", doc="the first factor, as written")
    scale_last: str = fact(unit="factor", doc="the last factor, as written")
    band_width_first: float = fact(unit="score points", digits=2, doc="band width at the first factor")
    band_width_last: float = fact(unit="score points", digits=2, doc="band width at the last factor")
    band_cov_first: float = fact(unit="%", digits=0, doc="band coverage at the first factor")
    band_cov_last: float = fact(unit="%", digits=0, doc="band coverage at the last factor")
    profile_cov: float = fact(unit="%", digits=0, doc="Kish coverage (the same at every factor)")
    n_rounds: int = fact(unit="reviews", doc="stored reviews the factors were applied to")


def scale_facts(scale_effect: pd.DataFrame, n_rounds: int) -> ScaleFacts:
    """:class:`ScaleFacts` of a :func:`mechaudit.tau.studies.weight_scale_effect` table over
    ``n_rounds`` stored reviews."""
    first, last = scale_effect.iloc[0], scale_effect.iloc[-1]
    moved, kish_width = scale_sentences(scale_effect)
    return ScaleFacts(scale_moved_sentence=moved, kish_width_phrase=kish_width,
                      scale_first=f"{float(first['scale']):g}", scale_last=f"{float(last['scale']):g}",
                      band_width_first=float(first["band_width"]), band_width_last=float(last["band_width"]),
                      band_cov_first=100 * float(first["band_coverage"]),
                      band_cov_last=100 * float(last["band_coverage"]),
                      profile_cov=100 * float(scale_effect["profile_coverage"].iloc[0]), n_rounds=n_rounds)


def scale_sentences(scale_effect: pd.DataFrame) -> tuple[str, str]:
    """Two sentences on a :func:`mechaudit.tau.studies.weight_scale_effect` table: whether any score
    moves under rescaling, and the Kish interval's width (one value when it does not change)."""
    changed = float(scale_effect["score_changed"].max())
    moved = ("No score moves when all weights are multiplied by the same factor" if changed == 0 else
             f"At most {100 * changed:.1f} % of the scores move when all weights are multiplied by the same factor")
    low, high = (f"{float(scale_effect['profile_width'].agg(how)):.2f}" for how in ("min", "max"))
    width = (f"is {low} points whatever the factor" if low == high else f"stays between {low} and {high} points")
    return moved, width


@dataclass(frozen=True)
class TriggerFacts:
    """The densify triggers at the original loss threshold (the first row of
    :func:`mechaudit.tau.studies.densify_trigger_rates`; glued under ``ch08``)."""

    loss_threshold: float = fact(unit="loss", doc="the original loss threshold")
    loss_trigger_pct: float = fact(unit="%", digits=1, doc="first-round reviews the loss trigger sends on")
    strength_trigger_share: str = fact(doc='the same for the strength trigger ("none" or "x %")')
    monotonic_extra_share: str = fact(doc="reviews only the monotonic trigger sends on")


def trigger_facts(triggers: pd.DataFrame) -> TriggerFacts:
    """:class:`TriggerFacts` of a :func:`mechaudit.tau.studies.densify_trigger_rates` table."""
    original = triggers.iloc[0]
    return TriggerFacts(loss_threshold=float(original["loss_threshold"]),
                        loss_trigger_pct=100 * float(original["loss"]),
                        strength_trigger_share=percent_or_none(100 * float(original["strength"]), digits=1),
                        monotonic_extra_share=percent_or_none(100 * float(original["any"] - original["loss"]),
                                                              digits=1))


#: Column labels of the densify comparison (keys of :func:`mechaudit.tau.studies.densify_comparison`).
DENSIFY_LABELS = {studies.FIRST_ROUND: "first round only", "original": "original (default)",
                  "fill": "fill", "floor": "floor (book's first version)"}
#: First-round mean scores from here up have their densify bucket centred on 10.
TOP_HINT = 9.75


def densify_effect(runs: Mapping[str, pd.DataFrame], top_hint: float = TOP_HINT) -> pd.DataFrame:
    """:func:`mechaudit.tau.summaries.densify_effect` with the runs labelled by :data:`DENSIFY_LABELS`."""
    return summaries.densify_effect(runs, top_hint, DENSIFY_LABELS)


def densify_display(effect: pd.DataFrame) -> pd.DataFrame:
    """:func:`densify_effect` as text cells: score points and coverage to 2 decimals, percentages to 1."""
    out = effect.astype(object)
    for row in effect.index:
        digits = 1 if row.startswith("%") else 2
        out.loc[row] = [f"{v:.{digits}f}" for v in effect.loc[row]]
    return out


def _score(doc: str) -> Any:
    return fact(unit="score points", digits=2, missing="not run", doc=doc)


def _pct(doc: str) -> Any:
    return fact(unit="%", digits=1, missing="not run", doc=doc)


@dataclass(frozen=True)
class DensifyFacts:
    """What the densify section quotes of :func:`densify_effect` (glued under ``ch08_dens``):
    ``<measure>_<run>`` for the runs first, original, fill and floor (None: not made); ``top_*`` over
    the stories whose first-round mean is at least ``top_hint``."""

    mae_first: float | None = _score("MAE of the scores, first round only")
    sat_pct_first: float | None = _pct("scores saturated at 10, first round only")
    top_sat_pct_first: float | None = _pct("saturated among the top stories, first round only")
    mae_original: float | None = _score("MAE, original densify rule")
    sat_pct_original: float | None = _pct("saturated, original rule")
    added_original: float | None = _score("anchors added per story, original rule")
    top_sat_pct_original: float | None = _pct("saturated among the top stories, original rule")
    top_added_original: float | None = _score("anchors added per top story, original rule")
    mae_fill: float | None = _score("MAE, fill rule")
    sat_pct_fill: float | None = _pct("saturated, fill rule")
    added_fill: float | None = _score("anchors added per story, fill rule")
    mae_floor: float | None = _score("MAE, floor rule")
    sat_pct_floor: float | None = _pct("saturated, floor rule")
    top_sat_pct_floor: float | None = _pct("saturated among the top stories, floor rule")
    top_added_floor: float | None = _score("anchors added per top story, floor rule")
    top_n: int = fact(unit="stories", doc="stories with a first-round mean of at least top_hint")
    top_hint: str = fact(unit="score points", doc="that first-round mean, as written (9.75)")


def densify_facts(effect: pd.DataFrame, runs: Mapping[str, pd.DataFrame],
                  top_hint: float = TOP_HINT) -> DensifyFacts:
    """:class:`DensifyFacts` of :func:`densify_effect` for the densify ``runs`` made (first round
    included)."""
    rows = {"mae": "MAE (score points)", "sat_pct": "% saturated", "added": "anchors added per story",
            "top_sat_pct": f"% saturated, first round ≥ {top_hint:g}",
            "top_added": f"anchors added, first round ≥ {top_hint:g}"}
    names = {studies.FIRST_ROUND: "first", "original": "original", "fill": "fill", "floor": "floor"}
    made = {f"{measure}_{names[run]}": float(effect.loc[row, DENSIFY_LABELS[run]])
            for run in runs if run in names for measure, row in rows.items()}
    hints = studies.first_round_hints(runs[studies.FIRST_ROUND])
    quoted = {f.name: made.get(f.name) for f in fields(DensifyFacts) if f.name not in ("top_n", "top_hint")}
    return DensifyFacts(**quoted, top_n=int((hints >= top_hint).sum()), top_hint=f"{top_hint:g}")


@dataclass(frozen=True)
class TieFacts:
    """Heavy ties (glued under ``ch08_ties``): the mle's range under calibrated ties, and the
    abstaining judge's tie share and tau at its highest tie rate."""

    true_tau: float = fact(unit="tau", doc="the true tau of the tie study")
    cal_span: str = fact(unit="tau", doc='the mle under calibrated ties: "between a and b" or "at a"')
    abstain_share_pct: float = fact(unit="%", digits=0, doc="ties of the abstaining judge, highest tie rate")
    abstain_tau: float = fact(unit="tau", digits=2, doc="its fitted tau (mle)")


def tie_facts(ties: pd.DataFrame) -> TieFacts:
    """:class:`TieFacts` of a :func:`mechaudit.tau.studies.tie_effect` table."""
    calibrated, abstain = ties[ties["tie_mode"] == "calibrated"], ties[ties["tie_mode"] == "abstain"]
    return TieFacts(true_tau=float(ties["true_tau"].iloc[0]),
                    cal_span=span_text(calibrated["tau_mle"].min(), calibrated["tau_mle"].max(), digits=2),
                    abstain_share_pct=100 * float(abstain["tie_share"].iloc[-1]),
                    abstain_tau=float(abstain["tau_mle"].iloc[-1]))


def _tau(doc: str) -> Any:
    return fact(unit="tau", digits=2, doc=doc)


@dataclass(frozen=True)
class MisspecFacts:
    """Mean fitted tau at the smallest (``lo``), middle (``mid``) and largest (``hi``) true tau of a
    misspecification study (``tau.summaries.misspec_summary``; glued under ``ch08_ms``)."""

    tau_lo: float = fact(unit="tau", doc="the smallest true tau")
    quality_lo: float = _tau("judge that sees latent quality, smallest tau")
    quality_lo_min: float = _tau("its lowest fit over the repetitions")
    quality_lo_max: float = _tau("its highest fit over the repetitions")
    tau_mid: float = fact(unit="tau", doc="the middle true tau")
    quality_mid: float = _tau("judge that sees latent quality, middle tau")
    quality_mid_min: float = _tau("its lowest fit over the repetitions")
    quality_mid_max: float = _tau("its highest fit over the repetitions")
    base_lo: float = _tau("well-specified judge, smallest tau")
    base_mid: float = _tau("well-specified judge, middle tau")
    base_hi: float = _tau("well-specified judge, largest tau")
    noisy_lo: float = _tau("judge with the largest perception noise, smallest tau")
    noisy_lo_plain: float = _tau("the same, strengths ignored")
    approx_lo: float = _tau("the noise-only approximation for it")
    noisy_hi: float = _tau("judge with the largest perception noise, largest tau")
    noisy_hi_plain: float = _tau("the same, strengths ignored")
    approx_hi: float = _tau("the noise-only approximation for it")
    noise_max: str = fact(unit="score points", doc="that largest perception noise, as written")
    tau_hi: float = fact(unit="tau", doc="the largest true tau")
    grid_mle_maxdiff: float = fact(unit="tau", digits=3, doc="largest |grid - mle| over all conditions")


def misspec_facts(misspec: pd.DataFrame) -> MisspecFacts:
    """:class:`MisspecFacts` of a :func:`mechaudit.tau.studies.tau_misspecification` frame."""
    return MisspecFacts(**summaries.misspec_summary(misspec))


@dataclass(frozen=True)
class ScoreMisspecFacts:
    """Scores under a misspecified judge (glued under ``ch08_ms``): MAE, mean move from the
    well-specified scores and Kish coverage (%) per judge, and the lowest coverage over all."""

    mae_base: float = fact(unit="score points", digits=2, doc="MAE, well-specified judge")
    mae_quality: float = fact(unit="score points", digits=2, doc="MAE, judge that sees latent quality")
    moved_quality: float = fact(unit="score points", digits=2, doc="its mean move from the well-specified scores")
    mae_noisy: float = fact(unit="score points", digits=2, doc="MAE, noisiest judge")
    moved_noisy: float = fact(unit="score points", digits=2, doc="its mean move from the well-specified scores")
    cov_base: float = fact(unit="%", digits=0, doc="Kish coverage, well-specified judge")
    cov_noisy: float = fact(unit="%", digits=0, doc="Kish coverage, noisiest judge")
    cov_worst: float = fact(unit="%", digits=0, doc="lowest Kish coverage over all conditions")


def score_misspec_facts(score_table: pd.DataFrame) -> ScoreMisspecFacts:
    """:class:`ScoreMisspecFacts` of a :func:`mechaudit.tau.studies.score_misspecification_table`."""
    noise_max = float(score_table.index.get_level_values("perception_noise").max())
    base, quality, noisy = (score_table.loc[k] for k in (("score10", 0.0), ("quality", 0.0), ("score10", noise_max)))
    return ScoreMisspecFacts(
        mae_base=float(base["mae"]), mae_quality=float(quality["mae"]), moved_quality=float(quality["moved"]),
        mae_noisy=float(noisy["mae"]), moved_noisy=float(noisy["moved"]),
        cov_base=100 * float(base["profile_coverage"]), cov_noisy=100 * float(noisy["profile_coverage"]),
        cov_worst=100 * float(score_table["profile_coverage"].min()))


# --------------------------------------------------------------------------- the book's tables

#: How a :class:`Display` scales a source column: as is, whole, times 100, times 100 and whole.
SCALINGS = {"": lambda col: col, "int": lambda col: col.astype(int), "%": lambda col: 100 * col,
            "%int": lambda col: (100 * col).round(0).astype(int)}


@dataclass(frozen=True)
class Display:
    """How a study's table is shown: ``columns`` maps a source column to its header and its scaling
    (a key of :data:`SCALINGS`); ``index``: source columns made the index (empty: keep the frame's);
    ``names``: the index level names (empty: keep them); ``digits``: rounding; ``blank``: a missing
    cell shows empty."""

    columns: Mapping[str, tuple[str, str]]
    names: tuple[str, ...] = ()
    index: tuple[str, ...] = ()
    digits: int = 2
    blank: bool = False

    def __call__(self, table: pd.DataFrame) -> pd.DataFrame:
        """``table`` narrowed to :attr:`columns` with human headers, scaled and rounded."""
        source = table.set_index(list(self.index)) if self.index else table
        out = pd.DataFrame({header: SCALINGS[how](source[column]) for column, (header, how) in self.columns.items()},
                           index=source.index)
        if self.names:
            out.index = out.index.set_names(list(self.names))
        out = out.round(self.digits)
        return out.astype(object).where(out.notna(), "") if self.blank else out


#: The pool's mean, sd, min and max of quality, anchor score, weight and review count.
POOL_DISPLAY = Display({"quality": ("latent quality", ""), "score10": ("anchor score", ""),
                        "weight": ("anchor weight", ""), "review_count": ("reviews", "")}, names=("statistic",))


def pool_display(pool: SyntheticPool) -> pd.DataFrame:
    """:data:`POOL_DISPLAY` of ``pool``: rows mean, sd, min and max."""
    stats = pool.table()[list(POOL_DISPLAY.columns)].describe().loc[["mean", "std", "min", "max"]]
    return POOL_DISPLAY(stats.rename(index={"std": "sd"}))


def misspec_display(mean_tau: pd.DataFrame) -> pd.DataFrame:
    """Mean fitted tau (mle) of a :func:`mechaudit.tau.studies.misspecification_table` per what the
    judge sees and perception noise, one column per true tau."""
    out = mean_tau["mean_tau"].xs("mle", level="method").unstack("true_tau")
    out.columns = [f"true τ {tau:g}" for tau in out.columns]
    out.index = out.index.set_names(["judge sees", "perception noise"])
    return out.round(2)


#: How each study table is shown, by the name :func:`table` saves it under (its input: the
#: :mod:`mechaudit.tau.studies` table of that name; the grid has no standard error: a blank cell).
DISPLAYS = {
    "tau_recovery": Display({"mean_tau": ("mean fitted τ", ""), "sd_tau": ("sd", ""),
                             "within_tolerance": (f"% within {100 * TOLERANCE:.0f} %", "%int"),
                             "mean_se": ("mean SE", ""), "mean_se_robust": ("mean robust SE", "")},
                            names=("true τ", "fitter"), digits=3, blank=True),
    "score_recovery": Display({"n": ("scores", "int"), "mae": ("MAE", ""), "band_coverage": ("1.92 band coverage", ""),
                               "band_width": ("band width", ""), "profile_coverage": ("Kish coverage", ""),
                               "saturated_share": ("% saturated", "%")}, names=("role",)),
    "saturation": Display({"n": ("scores", "int"), "saturated_high": ("% stuck at 10", "%int"),
                           "mean_true": ("mean true score", ""), "mean_score": ("mean inferred", "")}),
    "scale_effect": Display({"band_width": ("band width", ""), "band_coverage": ("band coverage", ""),
                             "profile_width": ("Kish width", ""), "profile_coverage": ("Kish coverage", ""),
                             "score_changed": ("% scores moved", "%")},
                            names=("factor on weights",), index=("scale",)),
    "triggers": Display({"loss": ("% loss", "%"), "monotonic": ("% monotonic", "%"),
                         "strength": ("% strength", "%"), "any": ("% any", "%")},
                        names=("loss threshold",), index=("loss_threshold",), digits=1),
    "densify_effect": densify_display,
    "ties": Display({"tie_share": ("% ties", "%int"), "tau_grid": ("τ (grid)", ""), "tau_mle": ("τ (mle)", "")},
                    names=("ties", "tie rate"), index=("tie_mode", "tie_rate")),
    "mean_tau": misspec_display,
    "score_table": Display({"tau_ratio": ("fitted / true τ", ""), "mae": ("MAE", ""), "moved": ("moved", ""),
                            "profile_coverage": ("Kish coverage", ""), "saturated_share": ("% saturated", "%")},
                           names=("judge sees", "perception noise")),
}


def table(ctx: ChapterContext, name: str, raw: pd.DataFrame, label: str, caption: str) -> BookTable:
    """A study's table twice: ``raw`` (rounded to 3 decimals) saved as ``<name>.csv``, and
    ``DISPLAYS[name](raw)`` returned as the book's numbered table ``label`` with ``caption``."""
    return ctx.table(name, raw.round(3), caption=caption, label=label, shown=DISPLAYS[name](raw))


#: How each densify mode picks the second round's anchors, in a few words.
DENSIFY_RULES = {"original": "own pattern, centred bucket", "fill": "centred bucket, any pattern",
                 "floor": "bucket [k, k+1), any pattern"}


def original_settings(recovery: pd.DataFrame, misspec: pd.DataFrame, rounds_first: Sequence[Mapping[str, Any]],
                      n_pairs: int, densify_mode: str = "original") -> pd.DataFrame:
    """The original method's settings (Idea2Paper review doc) beside this run's, indexed by quantity;
    "not reported" where the original gives no number."""
    within, t_lo = summaries.within_tolerance_pct(recovery, TOLERANCE), float(misspec["true_tau"].min())
    quality_lo = studies.misspecification_table(misspec)["mean_tau"][("quality", 0.0, t_lo, "mle")]
    loss_rate = float(studies.densify_trigger_rates(rounds_first)["loss"].iloc[0])
    table = studies.original_vs_this_run({
        "pairs per role for τ": (2000, n_pairs, "stratified, 80 % in one pattern"),
        "τ grid": ("0.10..3.00, step 0.01", "0.10..3.00, step 0.01", "plus bounded mle"),
        "score grid points": (901, 901, "10.0 is a grid point"),
        "card caps (characters)": ("220/280/320", "/".join(str(v) for v in FIELD_CAPS.values()),
                                   "minimal blind card, version 2"),
        "rubric version": ("v1", f"v{RUBRIC_VERSION.rsplit('_v', 1)[1]}, this book's", "own wording"),
        "fits within 10 % of true τ": ("not reported", f"{within:.0f} %", "simulated; true by construction"),
        f"τ, judge sees quality (true {t_lo:g})": ("not reported", round(float(quality_lo), 3), "simulated judge, mle"),
        "loss trigger rate (0.05)": ("not reported", round(loss_rate, 3), "simulated judge"),
        "densify anchors": (DENSIFY_RULES["original"], DENSIFY_RULES[densify_mode], f"densify rule: {densify_mode}"),
    }).rename(columns={"original method": "original"})
    return table.set_index("quantity").astype(str)


def calibrate_with_llm(pool: SyntheticPool, client, *, model: str, n_pairs: int, seed: int = 0) -> pd.DataFrame:
    """The real-judge step: with an LLM ``client``, tau per role and fitter from ``n_pairs`` verdicts of
    the blind judge ``model`` (prints requests sent and cached); offline a one-row "not run" table."""
    if client is None:
        return pd.DataFrame({"real judge": [f"not run: backend {Backend.REFERENCE.value!r} has no language model"]},
                            index=pd.Index(["status"], name="step"))
    calibration = llm_tau_calibration(pool, client, model=model, n_pairs=n_pairs, seed=seed)
    print(f"{calibration.requests_sent} requests sent, {calibration.served_from_cache} answers from the cache")
    fits = calibration.fits.set_index(["role", "method"])[["tau", "se", "n_pairs", "n_excluded", "sign_agreement"]]
    fits.columns = ["τ", "SE", "verdicts", "excluded", "sign agreement"]
    return fits.astype({"verdicts": int, "excluded": int}).round(3)


# --------------------------------------------------------------------------- cost plan

def plan(p: Mapping[str, Any]) -> list[Planned]:
    """The chapter's requests: the pool rebuilt from its parameters as the chapter builds it, one
    request per role and pair (repairs not counted)."""
    pool = make_pool(n_patterns=p["n_patterns"], papers_per_pattern=p["papers_per_pattern"],
                     seed=p["seed"], review_noise=p["review_noise"])
    requests = calibration_requests(pool, p["judge_model"], p["llm_pairs"], ROLES, p["seed"])
    return [Planned(f"blind judge {p['judge_model']} (tau pairs)", r) for r in requests]
