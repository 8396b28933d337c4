"""fit_tau: grid vs brute force, mle vs scipy on the 1/tau parametrisation, recovery, sampler."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from sklearn.linear_model import LogisticRegression

from mechaudit.tau import fit_tau, fit_tau_detailed, make_pool, sample_pairs, simulate_pairs


@pytest.fixture(scope="module")
def pool():
    return make_pool(seed=0)


@pytest.fixture(scope="module")
def pairs(pool):
    return sample_pairs(pool.table(), 2000, seed=42)


def brute_grid(rows):
    """Loop over tau = 0.10..3.00 with the original NLL; first minimum."""
    best_tau, best_loss = None, math.inf
    for k in range(291):
        tau = round(0.10 + 0.01 * k, 2)
        total = 0.0
        for r in rows:
            y = {"better": 1.0, "worse": 0.0}.get(r["judgement"], 0.5)
            w = r["weight"] * {"strong": 3.0, "medium": 2.0}.get(r["strength"], 1.0)
            p = min(max(1 / (1 + math.exp(-r["delta"] / tau)), 1e-9), 1 - 1e-9)
            total += w * -(y * math.log(p) + (1 - y) * math.log(1 - p))
        if total < best_loss:
            best_tau, best_loss = tau, total
    return best_tau, best_loss


def test_grid_equals_brute_force(pairs):
    judged = simulate_pairs(pairs.iloc[:400], 0.8, seed=3)
    fit = fit_tau_detailed(judged, "grid")
    tau, loss = brute_grid(judged.to_dict("records"))
    assert fit.tau == tau and fit.loss == pytest.approx(loss, rel=1e-10)


def test_mle_agrees_with_scipy_logistic_without_intercept(pairs):
    judged = simulate_pairs(pairs, 0.8, seed=4)
    delta, w = judged["delta"].to_numpy(), judged["weight"].to_numpy()
    sw = judged["strength"].map({"weak": 1.0, "medium": 2.0, "strong": 3.0}).to_numpy()
    y = judged["judgement"].map({"better": 1.0, "tie": 0.5, "worse": 0.0}).to_numpy()

    def nll(beta):  # logistic model in the slope beta = 1 / tau, no intercept
        z = beta[0] * delta
        return float(np.sum(w * sw * (np.logaddexp(0, z) - y * z)))

    beta = minimize(nll, x0=[1.0], method="BFGS", options={"gtol": 1e-10}).x[0]
    fit = fit_tau_detailed(judged, "mle")
    assert fit.tau == pytest.approx(1 / beta, rel=1e-5)
    # observed-information SE agrees with the delta method on beta's curvature
    p = 1 / (1 + np.exp(-beta * delta))
    info_beta = np.sum(w * sw * p * (1 - p) * delta**2)
    assert fit.se == pytest.approx((1 / np.sqrt(info_beta)) / beta**2, rel=1e-3)


def test_mle_matches_sklearn_on_binary_labels(pairs):
    judged = simulate_pairs(pairs, 1.2, seed=5, tie_rate=0.0)
    X = judged[["delta"]].to_numpy()
    yb = (judged["judgement"] == "better").astype(int).to_numpy()
    sw = judged["weight"] * judged["strength"].map({"weak": 1.0, "medium": 2.0, "strong": 3.0})
    lr = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-12, max_iter=1000).fit(X, yb, sample_weight=sw)
    assert fit_tau(judged, "mle") == pytest.approx(1 / lr.coef_[0, 0], rel=1e-4)


@pytest.mark.parametrize("true_tau", [0.5, 0.8, 1.5])
@pytest.mark.parametrize("method", ["grid", "mle"])
def test_recovers_known_tau_within_10_percent(pairs, true_tau, method):
    # One 2,000-pair fit has a relative sd of 5-8% (see the next test), so a single draw lands
    # within 10% about 85-95% of the time; this is the chapter's default judge seed.
    judged = simulate_pairs(pairs, true_tau, seed=0)
    assert len(judged) == 2000
    assert abs(fit_tau(judged, method) / true_tau - 1) < 0.10


@pytest.mark.parametrize("true_tau", [0.5, 0.8, 1.5])
def test_mle_unbiased_and_sandwich_se_matches_spread(pairs, true_tau):
    fits = [fit_tau_detailed(simulate_pairs(pairs, true_tau, seed=100 + s), "mle") for s in range(30)]
    taus = np.array([f.tau for f in fits])
    assert abs(taus.mean() / true_tau - 1) < 0.03
    se_robust = np.mean([f.se_robust for f in fits])
    assert 0.7 < se_robust / taus.std(ddof=1) < 1.4
    assert np.mean([f.se for f in fits]) < se_robust  # observed information treats weights as counts


def test_y_overrides_judgement_and_defaults():
    rows = [{"delta": 1.0, "y": 1.0, "judgement": "worse"}, {"delta": -1.0, "judgement": "worse"},
            {"delta": 0.5, "judgement": "tie", "strength": "strong", "weight": 2.0}]
    as_df = fit_tau(pd.DataFrame(rows), "grid")
    assert as_df == fit_tau(rows, "grid")
    flipped = [{**rows[0], "y": 0.0}] + rows[1:]
    assert fit_tau_detailed(flipped, "grid").loss > fit_tau_detailed(rows, "grid").loss


def test_bad_pairs_and_method():
    with pytest.raises(ValueError, match="pair 1: field 'delta'"):
        fit_tau([{"delta": 1.0, "y": 1}, {"y": 0}])
    with pytest.raises(ValueError, match="'y' or 'judgement'"):
        fit_tau([{"delta": 1.0}])
    with pytest.raises(ValueError, match="'y' must be in"):
        fit_tau([{"delta": 1.0, "y": 2}])
    with pytest.raises(ValueError, match="unknown method"):
        fit_tau([{"delta": 1.0, "y": 1}], method="newton")
    with pytest.raises(ValueError, match="at least one pair"):
        fit_tau([])


def test_sampler_quotas_and_signs(pool, pairs):
    table = pool.table().set_index("paper_id")
    counts = pairs.groupby(["bin", "same_pattern"]).size()
    assert all(counts.loc[(b, True)] == 400 and counts.loc[(b, False)] == 100 for b in range(4))
    edges = np.array([0, 0.25, 0.75, 1.5, 3.0])
    d = np.abs(pairs["delta"].to_numpy())
    assert np.all(d < 3.0) and np.all((d >= edges[pairs["bin"]]) & (d < edges[pairs["bin"] + 1]))
    recomputed = table.loc[pairs["a"], "score10"].to_numpy() - table.loc[pairs["b"], "score10"].to_numpy()
    assert np.allclose(recomputed, pairs["delta"])
    assert (pairs["delta"] > 0).mean() == pytest.approx(0.5, abs=0.05)  # random order
    same = table.loc[pairs["a"], "pattern_id"].to_numpy() == table.loc[pairs["b"], "pattern_id"].to_numpy()
    assert np.array_equal(same, pairs["same_pattern"].to_numpy())
    unordered = {tuple(sorted(p)) for p in zip(pairs["a"], pairs["b"])}
    assert len(unordered) == len(pairs)
    assert sample_pairs(pool.table(), 2000, seed=42).equals(pairs)  # seeded


def test_sampler_needs_columns(pool):
    with pytest.raises(ValueError, match="weight"):
        sample_pairs(pool.table().drop(columns="weight"), 10)


def test_vectorised_pair_arrays_equal_the_row_loop():
    from mechaudit.tau.fitting import _frame_arrays, pair_arrays

    rng = np.random.default_rng(8)
    n = 300
    frame = pd.DataFrame({
        "delta": rng.normal(size=n),
        "y": np.where(rng.random(n) < 0.3, rng.choice([0.0, 0.5, 1.0], size=n), np.nan),
        "judgement": rng.choice(np.array(["better", " Worse", "tie", "TIE", None, "maybe"], dtype=object), size=n),
        "strength": rng.choice(np.array(["weak", "Strong ", "medium", None, np.nan, "huge"], dtype=object), size=n),
        "weight": np.where(rng.random(n) < 0.1, np.nan, rng.random(n) * 2),
    })
    fast = _frame_arrays(frame)
    slow = pair_arrays(frame.to_dict("records"))  # a list goes through the row loop
    assert fast is not None
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
    # unusable values fall back to the loop and its precise message
    with pytest.raises(ValueError, match="pair 3: field 'weight' must be >= 0"):
        pair_arrays(frame.assign(weight=[1.0] * 3 + [-1.0] + [1.0] * (n - 4)))
    with pytest.raises(ValueError, match="pair 0: field 'delta'"):
        pair_arrays(frame.assign(delta=[np.inf] + [0.0] * (n - 1)))
    with pytest.raises(ValueError, match="needs field 'y' or 'judgement'"):
        pair_arrays(frame.drop(columns="judgement"))


def test_sampled_pair_weight_is_the_mean_of_both_papers(pool, pairs):
    weight = pool.table().set_index("paper_id")["weight"]
    wa, wb = weight.loc[pairs["a"]].to_numpy(), weight.loc[pairs["b"]].to_numpy()
    assert np.abs(wa - wb).max() > 0.1  # the papers' weights differ, so one paper's weight would show
    np.testing.assert_allclose(pairs["weight"].to_numpy(), (wa + wb) / 2, rtol=0, atol=1e-12)


@pytest.mark.parametrize(("n_pairs", "per_bin"), [(10, [3, 3, 2, 2]), (7, [2, 2, 2, 1]), (3, [1, 1, 1, 0])])
def test_sampler_spreads_the_remainder_over_the_first_bins(pool, n_pairs, per_bin):
    got = sample_pairs(pool.table(), n_pairs, seed=1)
    assert len(got) == n_pairs
    assert [int((got["bin"] == b).sum()) for b in range(4)] == per_bin
    # 80 % of each bin within one pattern, rounded: 3 -> 2, 2 -> 2, 1 -> 1
    same = {3: 2, 2: 2, 1: 1, 0: 0}
    assert [int(got.loc[got["bin"] == b, "same_pattern"].sum()) for b in range(4)] == [same[k] for k in per_bin]


def test_pair_arrays_hand_values():
    from mechaudit.tau.fitting import pair_arrays

    rows = [{"delta": 1.5, "judgement": "better", "strength": "strong", "weight": 2.0},
            {"delta": -0.5, "judgement": "worse", "strength": "medium"},
            {"delta": 0.25, "judgement": "tie", "strength": "weak", "weight": 0.5},
            {"delta": 2.0, "judgement": "unsure", "strength": "huge", "weight": None},
            {"delta": -1.0, "y": 0.25}]
    for source in (rows, pd.DataFrame(rows)):
        delta, y, w = pair_arrays(source)
        np.testing.assert_array_equal(delta, [1.5, -0.5, 0.25, 2.0, -1.0])
        np.testing.assert_array_equal(y, [1.0, 0.0, 0.5, 0.5, 0.25])
        np.testing.assert_array_equal(w, [6.0, 2.0, 0.5, 1.0, 1.0])


def test_pair_nll_hand_value_and_shape():
    from mechaudit.tau.fitting import pair_nll

    delta, y, w = np.array([1.0, -2.0]), np.array([1.0, 0.5]), np.array([2.0, 3.0])
    p1, p2 = 1 / (1 + math.exp(-1.0 / 0.5)), 1 / (1 + math.exp(2.0 / 0.5))
    want = 2.0 * -math.log(p1) + 3.0 * -(0.5 * math.log(p2) + 0.5 * math.log(1 - p2))
    assert float(pair_nll(0.5, delta, y, w)) == pytest.approx(want, rel=1e-12)
    assert np.shape(pair_nll(0.5, delta, y, w)) == ()
    assert pair_nll(np.array([0.5, 1.0, 2.0]), delta, y, w).shape == (3,)


def test_tau_grid_and_bounds_flags():
    from mechaudit.tau.fitting import tau_grid

    grid = tau_grid()
    assert len(grid) == 291 and grid[0] == 0.10 and grid[-1] == 3.00 and grid[190] == 2.00
    # no information (every delta 0): a flat loss, the first grid point wins and is flagged
    flat = fit_tau_detailed([{"delta": 0.0, "y": 1.0}, {"delta": 0.0, "y": 0.0}], "grid")
    assert flat.tau == 0.10 and flat.at_bound
    # ties at large gaps want a flat curve: the upper end
    ties = fit_tau_detailed([{"delta": 2.0, "y": 0.5}, {"delta": -2.0, "y": 0.5}], "grid")
    assert ties.tau == 3.00 and ties.at_bound
    for method in ("grid", "mle"):
        assert not fit_tau_detailed(simulate_pairs(sample_pairs(make_pool(seed=0).table(), 400, seed=2), 0.8,
                                                   seed=2), method).at_bound
    assert fit_tau_detailed([{"delta": 2.0, "y": 0.5}, {"delta": -2.0, "y": 0.5}], "mle").at_bound


def _sample_pairs_one_by_one(papers, n_pairs=2000, seed=42, same_pattern_share=0.8, bins=(0.0, 0.25, 0.75, 1.5, 3.0),
                             max_rounds=200):
    """The sampler as the original draws it: every candidate looked at in turn (reference for the batches)."""
    from mechaudit.tau.fitting import _quotas

    rng = np.random.default_rng(seed)
    ids, pattern = papers["paper_id"].to_numpy(), papers["pattern_id"].to_numpy()
    score, weight = papers["score10"].to_numpy(dtype=float), papers["weight"].to_numpy(dtype=float)
    multi = [m for m in (np.flatnonzero(pattern == p) for p in pd.unique(pattern)) if len(m) > 1]
    edges = np.asarray(bins, dtype=float)
    quota = _quotas(n_pairs, len(edges) - 1, same_pattern_share)
    taken, seen = {k: [] for k in quota}, set()
    batch = max(4 * n_pairs, 1000)
    for _ in range(max_rounds):
        if all(len(taken[k]) >= quota[k] for k in quota):
            break
        candidates = []
        if multi:
            pick = rng.integers(len(multi), size=batch)
            sizes = np.array([len(multi[k]) for k in pick])
            i1 = rng.integers(sizes)
            i2 = (i1 + 1 + rng.integers(sizes - 1)) % sizes
            candidates += [(multi[k][j1], multi[k][j2]) for k, j1, j2 in zip(pick, i1, i2)]
        candidates += list(zip(rng.integers(len(ids), size=batch), rng.integers(len(ids), size=batch)))
        for a, b in candidates:
            k = int(np.searchsorted(edges, abs(score[a] - score[b]), side="right")) - 1
            if a == b or k < 0 or k >= len(edges) - 1:
                continue
            key, pair = (k, bool(pattern[a] == pattern[b])), (min(a, b), max(a, b))
            if len(taken[key]) < quota[key] and pair not in seen:
                seen.add(pair)
                taken[key].append((int(a), int(b)))
    rows = []
    for (k, same), chosen in taken.items():
        for a, b in chosen:
            if rng.random() < 0.5:
                a, b = b, a
            rows.append({"a": ids[a], "b": ids[b], "delta": score[a] - score[b], "bin": k, "same_pattern": same,
                         "weight": (weight[a] + weight[b]) / 2})
    return pd.DataFrame(rows, columns=["a", "b", "delta", "bin", "same_pattern", "weight"])


@pytest.mark.parametrize("kw", [{}, {"n_pairs": 37, "max_rounds": 5}, {"n_pairs": 500, "same_pattern_share": 0.0},
                                {"n_pairs": 3000, "max_rounds": 2}, {"n_pairs": 100, "bins": (0.5, 1.0, 9.0)}])
def test_sampler_takes_the_pairs_a_one_by_one_loop_takes(kw):
    tables = [make_pool(n_patterns=8, papers_per_pattern=40, seed=0).table()]
    if kw.get("max_rounds"):  # pools too small to fill the quotas draw every round
        tables += [make_pool(n_patterns=1, papers_per_pattern=5, seed=3).table(),
                   make_pool(n_patterns=3, papers_per_pattern=1, seed=2).table()]  # no pattern with two papers
    for table in tables:
        for seed in range(2):
            got, want = sample_pairs(table, seed=seed, **kw), _sample_pairs_one_by_one(table, seed=seed, **kw)
            assert got.equals(want) and list(got.dtypes) == list(want.dtypes), (kw, seed)


def test_fit_taus_equals_one_fit_at_a_time(pool):
    from mechaudit.tau.fitting import fit_taus

    first, second = sample_pairs(pool.table(), 300, seed=1), sample_pairs(pool.table(), 300, seed=2)
    sets = [simulate_pairs(first, 0.5, seed=1), simulate_pairs(first, 1.5, seed=2, tie_rate=0.6),
            simulate_pairs(second, 0.8, seed=3), simulate_pairs(first, 0.8, seed=4).drop(columns="strength")]
    fits = fit_taus(sets, ("grid", "mle"))
    assert len(fits) == len(sets)
    for answers, both in zip(sets, fits):
        for method in ("grid", "mle"):
            assert repr(both[method]) == repr(fit_tau_detailed(answers, method)), method  # NaN se of the grid too
    with pytest.raises(ValueError, match="unknown method"):
        fit_taus(sets, ("grid", "newton"))


def test_grid_loss_is_the_clipped_cross_entropy_and_each_tau_alone(pool):
    """The grid's loss is clipped_ce summed row by row, the same at a tau whether or not others are
    computed with it, and does not depend on the grid's neighbours (no BLAS sum over rows)."""
    from scipy.special import expit

    from mechaudit.tau.fitting import pair_nll, tau_grid
    from mechaudit.tau.inference import clipped_ce

    rng = np.random.default_rng(3)
    delta = rng.uniform(-3, 3, 700)
    y = rng.choice([0.0, 0.5, 1.0, 0.25], size=700)
    w = rng.uniform(0, 3, 700)
    grid = tau_grid()
    want = np.array([clipped_ce(y, expit(delta / t)) @ w for t in grid])
    got = pair_nll(grid, delta, y, w)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.array_equal(got[::7], pair_nll(grid[::7], delta, y, w))
    assert np.array_equal(got, np.einsum("ij,j->i", clipped_ce(y[None, :], expit(delta[None, :] / grid[:, None])), w))


def test_consecutive_answer_sets_of_the_same_pairs_share_one_grid_of_logarithms(pool, monkeypatch):
    from mechaudit.tau import fitting

    pairs = sample_pairs(pool.table(), 40, seed=0)
    answers = [simulate_pairs(pairs, tau, seed=k) for k, tau in enumerate((0.5, 0.8, 1.2))]
    calls = []
    real = fitting._logistic_logs
    monkeypatch.setattr(fitting, "_logistic_logs", lambda delta, taus: calls.append(len(taus)) or real(delta, taus))
    fits = fitting.fit_taus(answers, ("grid",))
    assert calls == [291]  # one grid of logarithms for the three answer sets
    assert [f["grid"].tau for f in fits] == [fit_tau_detailed(a).tau for a in answers]


def test_a_clean_frame_is_converted_without_a_pass_over_its_rows(monkeypatch):
    from mechaudit.tau.fitting import pair_arrays

    frame = pd.DataFrame({"delta": [1.0, -2.0], "judgement": ["better", "tie"], "strength": ["strong", None],
                          "weight": [2.0, np.nan]})

    def no_rows(*args, **kwargs):
        raise AssertionError("the row loop ran")

    monkeypatch.setattr(pd.DataFrame, "to_dict", no_rows)
    delta, y, w = pair_arrays(frame)
    assert (list(delta), list(y), list(w)) == ([1.0, -2.0], [1.0, 0.5], [6.0, 1.0])


def test_default_method_is_the_grid_and_a_fit_reads_as_a_dict(pairs):
    answers = simulate_pairs(pairs.iloc[:200], 0.8, seed=1)
    fit = fit_tau_detailed(answers)
    assert fit.method == "grid" and fit_tau(answers) == fit.tau == fit_tau_detailed(answers, "grid").tau
    assert fit.to_dict() == {"tau": fit.tau, "method": "grid", "loss": fit.loss, "n_pairs": 200, "se": fit.se,
                             "se_robust": fit.se_robust, "at_bound": fit.at_bound} and np.isnan(fit.se)


def test_standard_errors_at_the_upper_bound_use_the_full_second_derivative():
    """Ties at large gaps push the mle to tau = 3, where the loss still falls: the gradient is not zero,
    so the curvature's term in (p - y) counts. SE = 1 / sqrt(L''), sandwich = sqrt(sum g_i^2) / L''."""
    from scipy.special import expit

    from mechaudit.tau.fitting import pair_nll

    rows = [{"delta": d, "y": 0.5} for d in (-2.0, -1.0, 1.0, 2.5)] + [{"delta": 0.5, "y": 1.0}]
    fit = fit_tau_detailed(rows, "mle")
    assert fit.at_bound and fit.tau == pytest.approx(3.0, abs=1e-4)
    delta, y, w = np.array([r["delta"] for r in rows]), np.array([r["y"] for r in rows]), np.ones(len(rows))
    t, e = fit.tau, 1e-4
    curvature = float(pair_nll(t + e, delta, y, w) - 2 * pair_nll(t, delta, y, w) + pair_nll(t - e, delta, y, w)) / e**2
    assert fit.se == pytest.approx(1 / np.sqrt(curvature), rel=1e-4)
    g = (expit(delta / t) - y) * (-delta / t**2)
    assert fit.se_robust == pytest.approx(np.sqrt(np.sum(g**2)) / curvature, rel=1e-4)


def test_sampler_keeps_float_gaps_for_integer_scores_and_names_the_columns_of_no_pairs():
    papers = pd.DataFrame({"paper_id": ["a", "b", "c", "d"], "pattern_id": ["p", "p", "q", "q"],
                           "score10": [3, 4, 5, 7], "weight": [1, 1, 2, 2]})
    got = sample_pairs(papers, 6, seed=0, max_rounds=3)
    assert len(got) > 0 and got["delta"].dtype == float and got["weight"].dtype == float
    assert set(got["delta"].abs()) <= {1.0, 2.0}  # gaps of 3 and more are outside the bins
    empty = sample_pairs(papers.iloc[:1], 6, seed=0, max_rounds=3)
    assert list(empty.columns) == ["a", "b", "delta", "bin", "same_pattern", "weight"] and empty.empty


def test_a_nan_weight_of_any_type_counts_as_missing_in_the_row_loop_too():
    """A list of dicts goes through the row loop, a numeric frame through the vectorised path: a NaN
    weight of NumPy's float32 or written as text is a missing weight (1) in both, not a NaN loss."""
    from mechaudit.tau.fitting import pair_arrays

    rows = [{"delta": 1.0, "y": 1.0, "weight": np.float32("nan")}, {"delta": -1.0, "y": 0.0, "weight": "nan"},
            {"delta": 0.5, "y": 0.0, "weight": None}, {"delta": 2.0, "y": 1.0, "weight": "2.5"}]
    assert list(pair_arrays(rows)[2]) == [1.0, 1.0, 1.0, 2.5]
    as_floats = pd.DataFrame(rows).assign(weight=[np.nan, np.nan, np.nan, 2.5])
    assert repr(fit_tau_detailed(rows)) == repr(fit_tau_detailed(as_floats))
    assert repr(fit_tau_detailed(pd.DataFrame(rows))) == repr(fit_tau_detailed(as_floats))  # a text column


def test_a_text_weight_column_is_read_row_by_row_and_the_first_bad_weight_is_named():
    from mechaudit.tau.fitting import pair_arrays

    frame = pd.DataFrame({"delta": [1.0, -1.0], "y": [1.0, 0.0], "weight": ["-1", "heavy"]})
    with pytest.raises(ValueError, match=r"^pair 0: field 'weight' must be >= 0, got -1.0$"):
        pair_arrays(frame)
    assert list(pair_arrays(frame.assign(weight=["0.5", "2"]))[2]) == [0.5, 2.0]
