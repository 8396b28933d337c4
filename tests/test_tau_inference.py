"""infer_score against a plain-Python loop implementation of the original definition."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mechaudit.tau import infer_score, score_grid


def loop_infer(anchors, comparisons, tau, step=0.01):
    """Straightforward loop version of the original semantics (independent of the package)."""
    tau = tau if (tau is not None and tau > 0) else 1.0
    by_id = {c["anchor_id"]: c for c in comparisons}
    obs = []
    for i, a in enumerate(anchors):
        c = by_id.get(a.get("anchor_id", f"A{i + 1}"), {})
        j, s = c.get("judgement"), c.get("strength")
        y = 1.0 if j == "better" else 0.0 if j == "worse" else 0.5
        sw = {"strong": 3.0, "medium": 2.0}.get(s, 1.0)
        obs.append((a.get("score10", 5.0), y, a.get("weight", 1.0) * sw, sw))
    grid, losses = [], []
    for k in range(int(round(9 / step)) + 1):
        s_val = round(1.0 + k * step, 10)
        total = 0.0
        for score10, y, w, _ in obs:
            p = 1.0 / (1.0 + math.exp(-(s_val - score10) / tau))
            p = min(max(p, 1e-9), 1 - 1e-9)
            total += w * -(y * math.log(p) + (1 - y) * math.log(1 - p))
        grid.append(s_val)
        losses.append(total)
    best = 0
    for k in range(len(losses)):
        if losses[k] < losses[best]:
            best = k
    inside = [g for g, loss in zip(grid, losses) if loss <= losses[best] + 1.92]
    ordered = sorted([(o[0], o[1]) for o in obs], key=lambda t: t[0])
    viol = sum(1 for k in range(1, len(ordered)) if ordered[k][1] > ordered[k - 1][1] + 0.1)
    return grid[best], {"loss": losses[best], "ci_low": min(inside), "ci_high": max(inside),
                        "monotonic_violations": viol, "avg_strength": sum(o[3] for o in obs) / len(obs)}


def check_same(anchors, comparisons, tau):
    score, diag = infer_score(anchors, comparisons, tau)
    ref_score, ref = loop_infer(anchors, comparisons, tau)
    assert score == pytest.approx(ref_score, abs=0.01 + 1e-9)
    assert diag["loss"] == pytest.approx(ref["loss"], abs=1e-6)
    assert diag["ci_low"] == pytest.approx(ref["ci_low"], abs=0.01 + 1e-9)
    assert diag["ci_high"] == pytest.approx(ref["ci_high"], abs=0.01 + 1e-9)
    assert diag["monotonic_violations"] == ref["monotonic_violations"]
    assert diag["avg_strength"] == pytest.approx(ref["avg_strength"])
    return score, diag


ANCHORS = [{"score10": s, "weight": w} for s, w in [(2.5, 1.0), (4.0, 0.7), (5.5, 1.2), (7.0, 0.9), (8.5, 0.5)]]


def comps(*pairs):
    return [{"anchor_id": f"A{i + 1}", "judgement": j, "strength": s} for i, (j, s) in enumerate(pairs)]


def test_grid_is_rounded_and_has_901_points():
    grid = score_grid(0.01)
    assert len(grid) == 901 and grid[0] == 1.0 and grid[-1] == 10.0
    assert grid[500] == 6.0  # exact, unlike the accumulated float grid


def test_worked_case_consistent_judge():
    score, diag = check_same(ANCHORS, comps(("better", "strong"), ("better", "medium"), ("tie", "weak"),
                                            ("worse", "medium"), ("worse", "strong")), 1.0)
    assert 4.5 < score < 6.5 and diag["monotonic_violations"] == 0
    assert diag["ci_low"] < score < diag["ci_high"] and not diag["saturated"]


def test_missing_comparisons_count_as_weak_ties():
    partial = comps(("better", "strong"))
    explicit = partial + [{"anchor_id": f"A{i}", "judgement": "tie", "strength": "weak"} for i in range(2, 6)]
    s1, d1 = check_same(ANCHORS, partial, 0.8)
    s2, d2 = infer_score(ANCHORS, explicit, 0.8)
    assert s1 == s2 and d1["loss"] == pytest.approx(d2["loss"]) and d1["avg_strength"] == pytest.approx(1.4)


@pytest.mark.parametrize("tau", [0.0, -1.0, None, float("nan")])
def test_unusable_tau_means_one(tau):
    c = comps(("better", "weak"), ("better", "weak"), ("worse", "weak"), ("worse", "weak"), ("worse", "weak"))
    assert infer_score(ANCHORS, c, tau) == infer_score(ANCHORS, c, 1.0)
    if tau is not None and not math.isnan(tau):
        check_same(ANCHORS, c, tau)


def test_all_better_saturates_at_ten():
    score, diag = check_same(ANCHORS, comps(*[("better", "strong")] * 5), 0.8)
    assert score == 10.0 and diag["saturated"] and diag["saturated_at"] == "high" and diag["ci_high"] == 10.0


def test_all_worse_saturates_at_one():
    score, diag = check_same(ANCHORS, comps(*[("worse", "medium")] * 5), 0.5)
    assert score == 1.0 and diag["saturated_at"] == "low"


def test_clipped_plateau_first_minimum():
    # tiny tau: the loss is flat (clipped) above the top anchor; the first minimum wins
    low = [{"score10": 2.0, "weight": 1.0}, {"score10": 3.0, "weight": 1.0}]
    score, diag = check_same(low, comps(("better", "weak"), ("better", "weak")), 0.1)
    assert score < 10.0 and not diag["saturated"]


def test_violations_and_defaults():
    anchors = [{"score10": 6.0}, {"weight": 2.0}, {"score10": 3.0, "weight": None}]  # 5.0 and 1.0 defaults
    score, diag = check_same([{k: v for k, v in a.items() if v is not None} for a in anchors],
                             comps(("better", "weak"), ("worse", "strong"), ("worse", "weak")), 1.0)
    # sorted by score10: 3.0 worse(0), 5.0 worse(0), 6.0 better(1) -> one rise
    assert diag["monotonic_violations"] == 1


def test_weight_scale_moves_band_but_not_score_or_profile():
    c = comps(("better", "medium"), ("better", "weak"), ("tie", "weak"), ("worse", "weak"), ("worse", "medium"))
    s1, d1 = infer_score(ANCHORS, c, 1.0)
    s4, d4 = infer_score([{**a, "weight": 4 * a["weight"]} for a in ANCHORS], c, 1.0)
    assert s1 == s4
    assert d4["ci_high"] - d4["ci_low"] < d1["ci_high"] - d1["ci_low"]
    assert (d1["profile_ci_low"], d1["profile_ci_high"]) == (d4["profile_ci_low"], d4["profile_ci_high"])


def test_bad_input():
    with pytest.raises(ValueError, match="at least one anchor"):
        infer_score([], [], 1.0)
    with pytest.raises(ValueError, match="grid_step"):
        infer_score(ANCHORS, [], 1.0, grid_step=0)
    with pytest.raises(ValueError, match="weights"):
        infer_score([{"score10": 5.0, "weight": -1.0}], [], 1.0)


judgements = st.sampled_from(["better", "tie", "worse", "unsure"])
strengths = st.sampled_from(["weak", "medium", "strong", "huge"])


@settings(max_examples=40, deadline=None)
@given(
    data=st.lists(st.tuples(st.floats(1.0, 10.0), st.floats(0.0, 3.0), judgements, strengths), min_size=1, max_size=8),
    tau=st.floats(0.1, 3.0),
    drop=st.integers(0, 3),
)
def test_matches_loop_on_random_cases(data, tau, drop):
    anchors = [{"score10": round(s, 3), "weight": round(w, 3)} for s, w, _, _ in data]
    comparisons = [{"anchor_id": f"A{i + 1}", "judgement": j, "strength": st_}
                   for i, (_, _, j, st_) in enumerate(data) if i % 4 != drop]
    score, diag = infer_score(anchors, comparisons, tau, strict=False)  # "unsure"/"huge": tie / weight 1
    ref_score, ref = loop_infer(anchors, comparisons, tau)
    assert diag["loss"] == pytest.approx(ref["loss"], abs=1e-6)
    # equal-loss plateaus can differ in the last bits; the loss at both optima must agree
    if abs(score - ref_score) > 0.01 + 1e-9:  # allowed only on a plateau of equal (clipped) loss
        assert np.isclose(diag["loss"], ref["loss"], rtol=0, atol=1e-9)
    assert diag["ci_low"] == pytest.approx(ref["ci_low"], abs=0.01 + 1e-9)
    assert diag["ci_high"] == pytest.approx(ref["ci_high"], abs=0.01 + 1e-9)
    assert diag["monotonic_violations"] == ref["monotonic_violations"]


def test_cached_grid_columns_give_loss_curve_to_the_last_bit():
    """infer_score assembles its loss from cached per-anchor columns: the same numbers as
    loss_curve's matrix, on a first call and on a repeated one, for any answer and tau."""
    from mechaudit.tau.inference import _grid_loss, loss_curve

    rng = np.random.default_rng(4)
    for trial in range(30):
        n = int(rng.integers(1, 25))
        score10 = np.round(rng.uniform(1, 10, n), int(rng.integers(0, 3)))
        y = rng.choice([0.0, 0.5, 1.0], size=n)
        w = rng.uniform(0, 4, n)
        tau, step = float(rng.choice([0.3, 0.8, 1.0, 2.5])), float(rng.choice([0.01, 0.05, 0.5]))
        want = loss_curve(score10, y, w, tau, score_grid(step))
        assert np.array_equal(_grid_loss(score10, y, w, tau, step), want), trial
        assert np.array_equal(_grid_loss(score10, y, w, tau, step), want), trial
