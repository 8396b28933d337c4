"""mechaudit: audit pairwise mechanism-equivalence judgments and blind tau-calibrated scoring."""

__version__ = "0.1.0"
