"""Tables the rule chapters share: decisions per rule on a list of pairs, % judged different per
perturbation kind, threshold sweeps and the reference pair set for threshold matching."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from mechaudit.agreement import complete_agreement_interval
from mechaudit.deprecation import keywords_were_positional, reordered
from mechaudit.paper import reported
from mechaudit.rules.base import Pair, Rule, check_hypotheses, check_pairs
from mechaudit.schema import Hypothesis


def decisions_table(pairs: Sequence[Pair], rules: Mapping[str, Rule]) -> pd.DataFrame:
    """One row per pair, one bool column per named rule (``rule.same(pairs)``)."""
    pairs = check_pairs(pairs)
    return pd.DataFrame({name: rule.same(pairs) for name, rule in rules.items()}, index=range(len(pairs)))


def not_run(n: int) -> pd.arrays.BooleanArray:
    """A decisions column of ``n`` missing values: a judge that was not run."""
    return pd.array([pd.NA] * n, dtype="boolean")


@keywords_were_positional("kinds", "order")
def percent_different(
    decisions: pd.DataFrame, *, kinds: Sequence[str], order: Sequence[str] | None = None
) -> pd.DataFrame:
    """% of pairs judged different per kind (rows, in ``order``) and rule (columns of ``decisions``,
    True = same; a missing value is left out of its rule's denominator)."""
    kinds = list(kinds)
    if len(kinds) != len(decisions):
        raise ValueError(f"{len(kinds)} kinds for {len(decisions)} decision rows")
    kinds = pd.Series(kinds, index=decisions.index, name="kind")
    different = decisions.apply(lambda col: 1.0 - col.astype("Float64").astype(float))
    table = 100.0 * different.groupby(kinds).mean()
    table.index.name = "kind"
    return table.reindex(list(order)) if order is not None else table


def _old_suite_counts(args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
    """``suite_counts(kinds, valid[, order])`` (the previous release) in the new order, else None."""
    if len(args) < 2:
        return None
    return (args[1],), {**kwargs, "kinds": args[0], **({"order": args[2]} if len(args) > 2 else {})}


@reordered("suite_counts(kinds, valid, order)", "suite_counts(valid, kinds=kinds, order=order)", _old_suite_counts)
def suite_counts(valid: Sequence[bool], *, kinds: Sequence[str], order: Sequence[str] | None = None) -> pd.DataFrame:
    """Per kind: pairs built, kept (passed the validity check) and excluded."""
    df = pd.DataFrame({"kind": list(kinds), "valid": np.asarray(valid, dtype=bool)})
    out = df.groupby("kind")["valid"].agg(built="size", kept="sum")
    out["excluded"] = out["built"] - out["kept"]
    out = out.astype(int)
    return out.reindex(list(order)).fillna(0).astype(int) if order is not None else out


def _old_sweep(args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
    """A sweep call of the previous releases, ``(similarity, kinds, thresholds)`` or ``(similarity,
    thresholds, kinds)`` (the kinds are the argument holding strings), in the new form; else None."""
    if len(args) != 3 or "kinds" in kwargs:
        return None
    similarity, second, third = args[0], list(args[1]), list(args[2])
    kinds_first = any(isinstance(v, str) for v in second)
    thresholds, kinds = (third, second) if kinds_first else (second, third)
    return (similarity, thresholds), {**kwargs, "kinds": kinds}


@reordered("sweep_percent_different(similarity, kinds, thresholds) or (similarity, thresholds, kinds)",
           "sweep_percent_different(similarity, thresholds, kinds=kinds)", _old_sweep)
def sweep_percent_different(similarity: np.ndarray, thresholds: Iterable[float], *, kinds: Sequence[str]
                            ) -> pd.DataFrame:
    """% judged different (``similarity < threshold``, shape ``(n_pairs,)``) per threshold and kind:
    columns threshold, kind, pct_different."""
    sim = np.asarray(similarity, dtype=float)
    thresholds = list(thresholds)
    kinds = np.asarray(list(kinds), dtype=object)
    if any(isinstance(t, str) for t in thresholds):
        raise TypeError(f"thresholds must be numbers, got {thresholds[:3]!r} (pass the kinds as kinds=...)")
    if sim.shape != kinds.shape:
        raise ValueError(f"similarity has shape {sim.shape} but there are {kinds.shape[0]} kinds")
    rows = []
    for t in thresholds:
        for kind in dict.fromkeys(kinds):
            mask = kinds == kind
            rows.append({"threshold": float(t), "kind": kind, "pct_different": 100.0 * float(np.mean(sim[mask] < t))})
    return pd.DataFrame(rows, columns=["threshold", "kind", "pct_different"])


def stack_suites(tables: Mapping[str, pd.DataFrame], labels: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Tables of the same columns, one per perturbation suite, stacked with the suite as the outer
    row level (named ``suite``; ``labels`` maps a suite name to the label shown, default the name)."""
    labels = labels or {}
    return pd.concat({labels.get(name, name): table for name, table in tables.items()}, names=["suite"])


def separation_table(sims: Mapping[str, np.ndarray], preserving: np.ndarray) -> pd.DataFrame:
    """Per similarity rule (``sims``: rule -> cosine per pair): can a threshold tell swaps from
    rewordings (``preserving``: per pair, is its kind meaning-preserving)? Columns: the separating
    thresholds (``agreement.complete_agreement_interval``; "none"), the lowest meaning-preserving
    and highest swapped cosine, and 100 x ROC AUC (% of (rewording, swap) pairs with the rewording
    more similar). Rounded to 3 places (the % to 1).
    """
    from sklearn.metrics import roc_auc_score  # defers scikit-learn

    preserving = np.asarray(preserving, dtype=bool)
    rows = {}
    for rule, sim in sims.items():
        sim = np.asarray(sim, dtype=float)
        interval = complete_agreement_interval(sim, preserving)
        between = "none" if interval is None else f"({interval[0]:.3f}, {interval[1]:.3f}]"
        rows[rule] = {"separating thresholds": between,
                      "lowest, meaning-preserving": round(float(sim[preserving].min()), 3),
                      "highest, swapped": round(float(sim[~preserving].max()), 3),
                      "rewording more similar (%)": round(100.0 * float(roc_auc_score(preserving, sim)), 1)}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("rule")


def within_instance_pairs(hypotheses: Sequence[Hypothesis]) -> list[Pair]:
    """Every unordered pair of distinct hypotheses about the same instance (file order)."""
    hs = check_hypotheses(hypotheses)
    by_instance: dict[str, list[Hypothesis]] = {}
    for h in hs:
        by_instance.setdefault(h.instance, []).append(h)
    return [p for group in by_instance.values() for p in itertools.combinations(group, 2)]


def subsample_pairs(pairs: Sequence[Pair], n: int, seed: int) -> list[Pair]:
    """``min(n, len(pairs))`` of ``pairs`` drawn without replacement with ``default_rng(seed)``,
    kept in their original order (chapter 07's stability pairs; its cost planner draws the same)."""
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(len(pairs), size=min(n, len(pairs)), replace=False))
    return [pairs[i] for i in chosen]


#: Paper key per perturbation kind: the paper reports the two meaning-preserving kinds pooled.
PAPER_KIND_KEYS = {
    "wording_only": "meaning_preserving",
    "wording_chain": "meaning_preserving",
    "first_step_swapped": "first_step_swapped",
    "middle_step_swapped": "middle_step_swapped",
}


@keywords_were_positional("kinds")
def paper_percent_different(columns: Mapping[str, str], *, kinds: Sequence[str] = tuple(PAPER_KIND_KEYS)
                            ) -> pd.DataFrame:
    """The paper's % judged different per kind (rows) for our columns (``columns``: our name -> the
    paper's method key, "tfidf", "embedding" or "llm")."""
    return pd.DataFrame(
        {col: [reported(f"perturbations.{PAPER_KIND_KEYS[k]}_pct_different.{method}") for k in kinds]
         for col, method in columns.items()},
        index=list(kinds),
    )


__all__ = [
    "decisions_table", "percent_different", "suite_counts", "sweep_percent_different", "stack_suites",
    "separation_table",
    "within_instance_pairs", "subsample_pairs", "PAPER_KIND_KEYS", "paper_percent_different",
]
