"""Every figure of the book, one function each, in one style (see ``mechaudit.plots.style``).

Each function takes tidy results (numpy arrays or pandas frames) and a keyword ``caption`` (the
caller's words, e.g. which backend produced the results), never a backend; it returns a matplotlib
Figure with ``caption`` under it, followed by the figure's own fixed note where it has one.
"""

from mechaudit.plots.problem import divergence_heatmaps
from mechaudit.plots.rubric import rubric_bars
from mechaudit.plots.rules import agreement_vs_threshold, cosine_strips, perturbation_bars, threshold_sweep_lines
from mechaudit.plots.style import PALETTE, caption, new_figure
from mechaudit.plots.tau import (
    loss_band_plot,
    score_recovery_plot,
    tau_recovery_plot,
    tie_effect_plot,
    weight_scale_plot,
)
from mechaudit.plots.workflow import (
    cluster_count_figure,
    critique_depth_figure,
    engagement_figure,
    rule_comparison_figure,
    validity_figure,
)

__all__ = ["PALETTE", "agreement_vs_threshold", "caption", "cluster_count_figure", "cosine_strips",
           "critique_depth_figure", "divergence_heatmaps", "engagement_figure", "loss_band_plot", "new_figure",
           "perturbation_bars", "rubric_bars", "rule_comparison_figure", "score_recovery_plot", "tau_recovery_plot",
           "threshold_sweep_lines", "tie_effect_plot", "validity_figure", "weight_scale_plot"]
