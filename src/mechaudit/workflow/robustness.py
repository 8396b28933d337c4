"""Where do the paper's qualitative conclusions hold? A map over the simulator's generative parameters.

The simulator (``mechaudit.workflow.simulator``) is varied along named **factors** (``vary``):

``p_find`` and ``p_challenge_sound`` (as in the simulator), ``weak_scale`` (multiplies both weak-link
probabilities, capped at 1), ``conceded`` (``reply_weak``'s conceded share, the other labels keeping
their ratios) and ``evidence_weight`` (how strongly repairs favour the evidence pack's entities).

``truth_grid`` computes the population truth and its ceiling (``depth.extra_ceiling``) at every grid
point with one seed (common random numbers); ``consistent`` marks the points that could have produced
the paper's estimates, where the conclusions are read: (a) diminishing returns
(``diminishing_returns``), (b) the estimate depends on the rule (``rule_grid``, ``rule_bias``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import product

import numpy as np
import pandas as pd

from mechaudit.divergence import comparison_matrix, extra_divergence
from mechaudit.schema import Benchmark
from mechaudit.workflow.depth import RuleLike, instance_matrices
from mechaudit.workflow.design import Design
from mechaudit.workflow.parallel import parallel_map
from mechaudit.workflow.simulator import SimulatorParams, instance_models, simulate
from mechaudit.workflow.validity import population_truth, replication_seed

#: Factors ``vary`` understands.
FACTORS = ("p_find", "weak_scale", "conceded", "evidence_weight", "p_challenge_sound")


def vary(params: SimulatorParams, **factors: float) -> SimulatorParams:
    """``params`` with the named factors set (module docstring); ``conceded=c`` scales the other
    ``reply_weak`` labels by ``(1 - c) / (1 - conceded_before)``. Unknown names raise."""
    unknown = sorted(set(factors) - set(FACTORS))
    if unknown:
        raise ValueError(f"unknown factor(s) {unknown}; known: {list(FACTORS)}")
    update: dict = {}
    for name, value in factors.items():
        value = float(value)
        if name == "weak_scale":
            if value < 0:
                raise ValueError(f"weak_scale must be >= 0, got {value}")
            update["p_weak_supported"] = min(1.0, params.p_weak_supported * value)
            update["p_weak_unsupported"] = min(1.0, params.p_weak_unsupported * value)
        elif name == "conceded":
            if not 0 <= value <= 1:
                raise ValueError(f"conceded must be in [0, 1], got {value}")
            rw = params.reply_weak
            rest = 1.0 - rw.conceded
            others = {k: getattr(rw, k) for k in ("answered", "partial", "dropped")}
            scaled = ({k: v * (1.0 - value) / rest for k, v in others.items()} if rest > 0
                      else {k: (1.0 - value) / 3 for k in others})
            update["reply_weak"] = type(rw).model_validate({"conceded": value, **scaled})
        else:
            update[name] = value
    new = params.model_copy(update=update)
    # model_copy skips validation: validate the result so a probability outside [0, 1] raises here
    return type(params).model_validate(new.model_dump() | {"name": _name(params.name, factors)})


def _name(base: str, factors: Mapping[str, float]) -> str:
    return base + "".join(f"|{k}={float(v):g}" for k, v in factors.items())


def grid(axes: Mapping[str, Sequence[float]]) -> pd.DataFrame:
    """Full factorial of ``axes`` (factor -> values), one row per point, columns in ``axes`` order."""
    if not axes:
        raise ValueError("axes: give at least one factor")
    unknown = sorted(set(axes) - set(FACTORS))
    if unknown:
        raise ValueError(f"unknown factor(s) {unknown}; known: {list(FACTORS)}")
    names = list(axes)
    return pd.DataFrame([dict(zip(names, map(float, combo))) for combo in product(*axes.values())],
                        columns=names)


def _tag(a: int, b: int) -> str:
    return f"{a}v{b}"


def _truth_row(bench: Benchmark, design: Design, base: SimulatorParams, point: dict, runs_per_depth: int,
               seed: int, measure: str = "paper_rates", n_seeds: int = 1) -> dict:
    truth = population_truth(bench, design, vary(base, **point), runs_per_depth=runs_per_depth, seed=seed,
                             measures=(measure,), n_seeds=n_seeds)
    row = dict(point) | {f"same_K{k[2:]}_pp": v for k, v in zip(truth.label, truth.truth_pp) if k.startswith("K=")}
    extra = truth[truth.panel == "extra"].set_index("label")
    for a, b in design.comparisons():
        t = _tag(a, b)
        value, se = extra.loc[f"{a} v {b}", "truth_pp"], extra.loc[f"{a} v {b}", "truth_se_pp"]
        top = float(extra.loc[f"{a} v {b}", "max_extra_pp"])  # the ceiling, ``depth.extra_ceiling``
        row |= {f"truth_{t}_pp": value, f"se_{t}_pp": se, f"max_{t}_pp": top,
                f"norm_{t}": value / top if top > 0 else np.nan}
    return row


def truth_grid(bench: Benchmark, design: Design, base: SimulatorParams, points: pd.DataFrame,
               runs_per_depth: int = 20, seed: int = 0, n_jobs: int = 1,
               parallel_backend: str | None = None, measure: str = "paper_rates", n_seeds: int = 1) -> pd.DataFrame:
    """``population_truth`` under ``measure`` at every grid point (``points``: factor columns, e.g.
    from ``grid``), each with the same ``seed``; results do not depend on ``n_jobs``.

    Columns: the factors; ``same_K{k}_pp`` per depth; per comparison a v b ``truth_{a}v{b}_pp``,
    ``se_{a}v{b}_pp`` (jackknife), ``max_{a}v{b}_pp`` (ceiling) and ``norm_{a}v{b}`` (truth / ceiling).
    """
    rows = parallel_map(_truth_row, [(bench, design, base, dict(r), runs_per_depth, seed, measure, n_seeds)
                                     for r in points.to_dict("records")], n_jobs, parallel_backend)
    return pd.DataFrame(rows)


def consistent(table: pd.DataFrame, observed: Mapping[str, float], sd: Mapping[str, float],
               correlation: float = 0.0, level: float = 0.95, prefix: str = "truth") -> pd.DataFrame:
    """Could one design at each row's setting have produced every ``observed`` estimate at once?

    ``table``: true values in columns ``{prefix}_{a}v{b}_pp``; ``observed``: label ("0 v 1") -> pp;
    ``sd``: label -> sampling SD of one design's estimate (pp); ``correlation``: between any two
    estimates. Adds ``distance`` (Mahalanobis, ``sqrt(z' R^-1 z)``, ``z = (truth - observed) / sd``)
    and ``consistent`` (``distance^2`` within the chi-square quantile at ``level``, one degree of
    freedom per observation).
    """
    from scipy.stats import chi2  # defers scipy

    labels = list(observed)
    if not labels:
        raise ValueError("observed: give at least one comparison")
    if any(not sd[lab] > 0 for lab in labels) or not 0 < level < 1 or not -1 < correlation < 1:
        raise ValueError(f"need sd > 0, 0 < level < 1 and -1 < correlation < 1, got {dict(sd)}, {level}, "
                         f"{correlation}")
    z = np.column_stack([(table[f"{prefix}_{lab.replace(' ', '')}_pp"] - observed[lab]) / sd[lab]
                         for lab in labels])
    R = np.full((len(labels), len(labels)), float(correlation))
    np.fill_diagonal(R, 1.0)
    d2 = np.einsum("ij,ij->i", z, np.linalg.solve(R, z.T).T)
    out = table.copy()
    out["distance"] = np.sqrt(d2)
    out["consistent"] = d2 <= chi2.ppf(level, df=len(labels))
    return out


def pick(table: pd.DataFrame, quantiles: Sequence[float], column: str = "truth_1v5_pp") -> pd.DataFrame:
    """The rows of ``table`` at the given ``quantiles`` of ``column`` (each the row nearest the
    quantile, lower one on ties; duplicates dropped), in ascending order of ``column``."""
    if table.empty:
        raise ValueError("no rows to pick from")
    ordered = table.sort_values(column, kind="stable")
    at = [min(int(round(q * (len(ordered) - 1))), len(ordered) - 1) for q in quantiles]
    return ordered.iloc[sorted(set(at))]


def diminishing_returns(table: pd.DataFrame, first: tuple[int, int] = (0, 1), later: tuple[int, int] = (1, 5),
                        ratio: float = 0.25, z: float = 2.0) -> pd.DataFrame:
    """Conclusion (a) at every row of ``truth_grid``: is ``later`` < ``ratio`` x ``first``?

    Adds ``raw_margin_pp`` (later - ratio x first), ``normalised_margin`` (the same on ``norm_*``,
    SEs ``se / ceiling``), and ``raw`` / ``normalised``: "holds" (margin below ``-z`` SEs), "fails"
    (above ``+z``) or "unclear"; the two effects' SEs are combined as if independent.
    """
    if not 0 < ratio < 1:
        raise ValueError(f"ratio must be in (0, 1), got {ratio}")
    f, g = _tag(*first), _tag(*later)
    out = table.copy()

    def status(margin: pd.Series, se: pd.Series) -> pd.Series:
        return pd.Series(np.where(margin < -z * se, "holds", np.where(margin > z * se, "fails", "unclear")),
                         index=margin.index)

    margin = out[f"truth_{g}_pp"] - ratio * out[f"truth_{f}_pp"]
    se = np.sqrt(out[f"se_{g}_pp"] ** 2 + (ratio * out[f"se_{f}_pp"]) ** 2)
    out["raw_margin_pp"] = margin
    out["raw"] = status(margin, se)
    n_margin = out[f"norm_{g}"] - ratio * out[f"norm_{f}"]
    n_se = np.sqrt((out[f"se_{g}_pp"] / out[f"max_{g}_pp"]) ** 2
                   + (ratio * out[f"se_{f}_pp"] / out[f"max_{f}_pp"]) ** 2)
    out["normalised_margin"] = n_margin
    out["normalised"] = status(n_margin, n_se)
    return out


def _rule_rep(bench: Benchmark, design: Design, base: SimulatorParams, index: int, point: dict,
              rules: Mapping[str, RuleLike], rep: int, seed: int) -> list[dict]:
    params = vary(base, **point)
    runs = simulate(bench, design, params, seed=replication_seed(seed, rep), log=False,
                    models=instance_models(bench, params.evidence_weight))
    rows = []
    for name, rule in rules.items():
        mats = instance_matrices(runs, rule)
        for a, b in design.comparisons():
            vals = [extra_divergence(*comparison_matrix(m.D, m.depths, a, b)) for m in mats]
            rows.append({"point": index, **point, "rep": rep, "rule": name, "comparison": f"{a} v {b}",
                         "extra_pp": 100 * float(np.mean(vals))})
    return rows


def rule_grid(bench: Benchmark, design: Design, base: SimulatorParams, points: pd.DataFrame,
              rules: Mapping[str, RuleLike], n_reps: int, seed: int = 0, n_jobs: int = 1,
              parallel_backend: str | None = None) -> pd.DataFrame:
    """Each rule's (``depth.RuleLike``) instance-averaged extra divergence in ``n_reps`` text-level
    replications of ``design`` per point, replication ``rep`` seeded ``replication_seed(seed, rep)``
    at every point. Long table: point (row of ``points``), the factors, rep, rule, comparison, extra_pp.
    """
    if n_reps < 1:
        raise ValueError(f"n_reps must be >= 1, got {n_reps}")
    tasks = [(bench, design, base, i, dict(r), rules, rep, seed)
             for i, r in enumerate(points.to_dict("records")) for rep in range(n_reps)]
    rows = [row for part in parallel_map(_rule_rep, tasks, n_jobs, parallel_backend) for row in part]
    return pd.DataFrame(rows)


def rule_bias(reps: pd.DataFrame, truths: pd.DataFrame | Mapping[str, pd.DataFrame], z: float = 2.0) -> pd.DataFrame:
    """Per point, rule and comparison: mean estimate, truth and bias (pp) with Monte Carlo errors.

    ``reps``: ``rule_grid`` output; ``truths``: ``truth_grid`` output at the same points, or measure ->
    such a table (a rule named like one of its keys uses that one, others "mechanism_key"). ``bias_se_pp``
    combines the mean's SE and the truth's; ``direction``: "under" / "over" beyond ``z`` of them,
    else "unbiased".
    """
    rows = []
    for (point, rule, comp), g in reps.groupby(["point", "rule", "comparison"], sort=False):
        truth = truths if isinstance(truths, pd.DataFrame) else truths[rule if rule in truths else "mechanism_key"]
        tag = comp.replace(" ", "")
        t, t_se = truth.iloc[point][f"truth_{tag}_pp"], truth.iloc[point][f"se_{tag}_pp"]
        est = g.extra_pp.to_numpy()
        se = est.std(ddof=1) / np.sqrt(len(est)) if len(est) > 1 else np.nan
        bias = est.mean() - t
        bias_se = float(np.sqrt(se**2 + t_se**2))
        direction = "under" if bias < -z * bias_se else "over" if bias > z * bias_se else "unbiased"
        factors = {c: g[c].iloc[0] for c in reps.columns if c in FACTORS}
        rows.append({"point": point, **factors, "rule": rule, "comparison": comp, "n_reps": len(est),
                     "mean_pp": est.mean(), "truth_pp": t, "bias_pp": bias, "bias_se_pp": bias_se,
                     "direction": direction})
    return pd.DataFrame(rows)


def max_change_pp(alt: pd.DataFrame, by: str, columns: Sequence[str]) -> float:
    """Largest range (max - min, in the columns' unit, pp) of any of ``columns`` of ``alt`` within a
    group of equal ``by`` (e.g. how far a truth moves along the other factors at one ``p_find``)."""
    spread = alt.groupby(by)[list(columns)].agg(lambda s: s.max() - s.min())
    return float(spread.to_numpy().max())


def rule_gap(bias: pd.DataFrame, comparison: str, a: str, b: str) -> tuple[float, float]:
    """Smallest and largest difference of mean estimates, rule ``a`` minus rule ``b`` (pp), over the
    points of ``bias`` (``rule_bias`` output) for ``comparison`` ("0 v 1")."""
    sub = bias[bias.comparison == comparison].pivot_table(index="point", columns="rule", values="mean_pp")
    diff = sub[a] - sub[b]
    return float(diff.min()), float(diff.max())
