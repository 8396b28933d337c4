"""Figures take a caption, never a backend: the text under every figure of ``mechaudit.plots`` is
exactly the caller's ``caption`` followed by the figure's own fixed note (joined by ". "), which is
the text the book's figures showed when they took a backend ("Backend: <backend>. <note>")."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import inspect  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.text import Text  # noqa: E402

import mechaudit.plots as plots  # noqa: E402
from mechaudit.plots import problem, robustness, rubric, rules, style, tau, workflow  # noqa: E402

FIGURE_MODULES = (problem, robustness, rubric, rules, tau, workflow)
#: written out here, not imported: the caption must stay what the book printed
SIM = "Simulated judge with known tau on a synthetic pool; not an LLM"
CALLER = "Backend: sentinel-backend"


def _public_functions(module):
    """The module's own public functions (under ``make mutation`` not mutmut's copies of each function,
    named ``x_<name>__mutmut_<n>``)."""
    return {name: fn for name, fn in inspect.getmembers(module, inspect.isfunction)
            if fn.__module__ == module.__name__ and not name.startswith("_") and "__mutmut_" not in name}


def _figure_functions():
    return {name: fn for module in FIGURE_MODULES for name, fn in _public_functions(module).items()}


def test_no_function_of_the_plots_package_takes_a_backend():
    every = {f"{m.__name__}.{name}": fn for m in (*FIGURE_MODULES, style)
             for name, fn in inspect.getmembers(m, inspect.isfunction) if fn.__module__ == m.__name__}
    assert len(every) > 30
    assert [name for name, fn in every.items() if "backend" in inspect.signature(fn).parameters] == []


def test_every_figure_takes_a_keyword_only_caption_defaulting_to_empty():
    figures = _figure_functions()
    assert len(figures) >= 20  # the figure modules were found
    bad = [name for name, fn in figures.items()
           if (p := inspect.signature(fn).parameters.get("caption")) is None
           or p.kind is not inspect.Parameter.KEYWORD_ONLY or p.default != ""]
    assert bad == []


def _captions(fig) -> list[str]:
    """Every text artist of ``fig`` that holds the caller's caption or a figure's own note."""
    notes = ("sentinel", "LLM", "open squares", "error bars", "one series", "cell text")
    return [t.get_text() for t in fig.findobj(Text) if any(n in t.get_text() for n in notes)]


@pytest.mark.parametrize(("text", "note", "shown"), [
    ("Backend: reference", "", ["Backend: reference"]),
    ("", "Toy design, no LLM", ["Toy design, no LLM"]),
    ("Backend: reference", "Toy design, no LLM", ["Backend: reference. Toy design, no LLM"]),
    ("", "", []),
])
def test_caption_joins_the_callers_text_and_the_note(text, note, shown):
    fig, _ = style.new_figure()
    style.caption(fig, text, note)
    assert [fig.get_supxlabel()] == (shown or [""])
    assert [t for t in (t.get_text() for t in fig.findobj(Text)) if t] == shown
    plt.close(fig)


def _sims():
    rows = [{"suite": s, "kind": k, "rule": r, "cosine": c}
            for s, c in (("template", 0.9), ("reworded", 0.6)) for r in ("tfidf", "embedding")
            for k in ("wording_only", "first_step_swapped")]
    return pd.DataFrame(rows)


def _grid():
    rows = [{"p_find": p, "weak_scale": w, "conceded": c, "truth_0v1_pp": 10 * p + w, "truth_1v5_pp": w,
             "consistent": p > 0.3, "raw": "holds" if w > 1 else "fails"}
            for p in (0.2, 0.5) for w in (1.0, 2.0) for c in (0.1,)]
    return pd.DataFrame(rows)


def _bias():
    return pd.DataFrame([{"comparison": comp, "rule": rule, "point": pt, "mean_pp": 5.0 + pt, "bias_se_pp": 0.5,
                          "truth_pp": 5.0} for comp in ("0 v 1", "1 v 5") for rule in ("mechanism_key", "tfidf")
                         for pt in (0, 1)])


def _power():
    return pd.DataFrame([{"target_pp": 2.0, "truth_pp": 2.1, "n_instances": k, "role": role, "runs_per_depth": r,
                          "power": 0.1 * r, "power_se": 0.02}
                         for k, role in ((4, "ladder"), (8, "design")) for r in (2, 4, 8)])


def _misspec():
    rows = [{"source": s, "perception_noise": n, "true_tau": t, "method": m, "tau_hat": t + n, "approx_tau": t}
            for s in ("score10", "quality") for n in (0.0, 1.0) for t in (0.5, 1.0) for m in ("mle", "mle_no_strength")]
    return pd.DataFrame(rows)


def _depth_points():
    return pd.DataFrame({"panel": ["same-depth", "same-depth", "extra"], "label": ["0", "1", "0 v 1"],
                         "instance": ["A"] * 3, "value": [10.0, 20.0, 30.0]})


def _rule_table():
    return pd.DataFrame({"rule": ["mechanism_key", "tfidf"], "comparison": ["0 v 1", "0 v 1"],
                         "extra_pp": [30.0, 20.0], "ci_low_pp": [25.0, 15.0], "ci_high_pp": [35.0, 25.0]})


def _validity():
    summary = pd.DataFrame({"rule": ["tfidf"], "comparison": ["0 v 1"], "bias_pp": [0.5], "bias_se_pp": [0.1]})
    null = pd.DataFrame({"rule": ["tfidf"], "comparison": ["0 v 1"], "rejection_rate": [0.05], "rejection_se": [0.01]})
    return summary, null


D = np.array([[0, .2, .5, .6], [.2, 0, .4, .5], [.5, .4, 0, .1], [.6, .5, .1, 0]])
MAKERS = {
    "divergence_heatmaps": (lambda c: plots.divergence_heatmaps({"exact": D}, ["K0-r1", "K0-r2", "K1-r1", "K1-r2"],
                                                                n_a=2, caption=c), "Toy design, no LLM"),
    "rubric_bars": (lambda c: plots.rubric_bars(
        pd.DataFrame({"reference full": [0.0, 100.0]}, index=["wording_only", "first_step_swapped"]), None,
        caption=c), ""),
    "perturbation_bars": (lambda c: plots.perturbation_bars(
        pd.DataFrame({"tfidf": [0.0, 0.0], "embedding": [0.0, 8.0]}, index=["wording_only", "first_step_swapped"]),
        caption=c), ""),
    "cosine_strips": (lambda c: plots.cosine_strips(_sims(), {"tfidf": {"0.25": 0.25}}, caption=c), ""),
    "threshold_sweep_lines": (lambda c: plots.threshold_sweep_lines(
        pd.DataFrame({"rule": "tfidf", "threshold": [0.2, 0.3], "kind": "wording_only", "pct_different": [5, 9]}),
        {"tfidf": 0.25}, caption=c), ""),
    "agreement_vs_threshold": (lambda c: plots.agreement_vs_threshold(
        pd.DataFrame({"rule": "tfidf", "threshold": [0.2, 0.3], "other": "embedding", "raw_agreement": [0.8, 0.9],
                      "kappa": [0.4, 0.5]}), {"tfidf": 0.25}, caption=c), ""),
    "consistency_figure": (lambda c: robustness.consistency_figure(_grid(), "p_find", "weak_scale", "conceded",
                                                                   observed=36.0, caption=c), ""),
    "conclusion_figure": (lambda c: robustness.conclusion_figure(_grid(), "p_find", "weak_scale", "conceded",
                                                                 caption=c),
                          "cell text: true 1 v 5 extra divergence (pp)"),
    "rule_estimates_figure": (lambda c: robustness.rule_estimates_figure(
        _bias(), ["a setting", "b setting"], {"mechanism_key": "key", "tfidf": "TF-IDF"}, caption=c), ""),
    "power_figure": (lambda c: robustness.power_figure(_power(), paper_runs=5, caption=c),
                     "open squares: twice the instances"),
    "tau_recovery_plot": (lambda c: plots.tau_recovery_plot(
        pd.DataFrame({"true_tau": [0.5, 1.0], "method": ["mle", "grid"], "tau_hat": [0.55, 0.9]}), caption=c), SIM),
    "score_recovery_plot": (lambda c: plots.score_recovery_plot(
        pd.DataFrame({"saturated": [False, True], "score": [4.0, 10.0], "ci_low": [3.0, 9.0],
                      "ci_high": [5.0, 10.0], "true_score": [4.2, 9.5]}), caption=c), SIM),
    "loss_band_plot": (lambda c: plots.loss_band_plot(
        pd.DataFrame([{"scale": sc, "S": s, "excess_loss": sc * (s - 5) ** 2, "profile_excess": (s - 5) ** 2}
                      for sc in (0.5, 2) for s in (1.0, 5.0, 9.0)]), caption=c), SIM),
    "weight_scale_plot": (lambda c: plots.weight_scale_plot(
        pd.DataFrame({"scale": [0.5, 1, 2], "band_width": [3, 2, 1], "profile_width": [2, 2, 2],
                      "band_coverage": [1, 0.95, 0.7], "profile_coverage": [0.95] * 3}), caption=c), SIM),
    "tie_effect_plot": (lambda c: plots.tie_effect_plot(
        pd.DataFrame({"tie_mode": ["calibrated", "abstain"], "tie_share": [0.1, 0.2], "tau_mle": [1.0, 1.2],
                      "true_tau": [1.0, 1.0]}), caption=c), SIM),
    "misspecified_tau_plot": (lambda c: tau.misspecified_tau_plot(_misspec(), caption=c), SIM),
    "misspecified_score_plot": (lambda c: tau.misspecified_score_plot(
        pd.DataFrame({"mae": [0.5, 0.7], "moved": [0.0, 0.3]},
                     index=pd.MultiIndex.from_tuples([("score10", 0.0), ("score10", 1.0)])), caption=c), SIM),
    "densify_plot": (lambda c: tau.densify_plot(
        pd.DataFrame({"run": ["original", "fill"], "band": ["1-3", "1-3"], "anchors_added": [2, 3],
                      "saturated_share": [0.1, 0.0]}), caption=c), SIM),
    "critique_depth_figure": (lambda c: plots.critique_depth_figure(_depth_points(), caption=c), ""),
    "rule_comparison_figure": (lambda c: plots.rule_comparison_figure(_rule_table(), level=0.9, caption=c),
                               "error bars: 90 % bootstrap intervals"),
    "validity_figure": (lambda c: plots.validity_figure(*_validity(), caption=c), ""),
    "engagement_figure": (lambda c: plots.engagement_figure(
        pd.DataFrame({"label": ["conceded", "answered"], "pct": [60.0, 40.0]}), {"conceded": 50, "answered": 50},
        caption=c), ""),
    "cluster_count_figure": (lambda c: plots.cluster_count_figure(
        pd.DataFrame({"instance": "A", "depth": [0, 1], "rule": "tfidf", "n_groups": [3, 4]}), caption=c), ""),
    "judge_model_figure": (lambda c: workflow.judge_model_figure(
        pd.DataFrame({"0 v 1": [30.0, 20.0]}, index=["model-a", "model-b"]), caption=c),
        "one series per judge model"),
}


def test_every_figure_has_a_caption_case():
    assert sorted(MAKERS) == sorted(_figure_functions())


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_figure_text_is_the_callers_caption_then_its_own_note(name):
    make, note = MAKERS[name]
    with_caption, without = make(CALLER), make("")
    assert _captions(with_caption) == [f"{CALLER}. {note}" if note else CALLER]
    assert _captions(without) == ([note] if note else [])
    assert without.get_supxlabel() == note
    plt.close(with_caption)
    plt.close(without)
