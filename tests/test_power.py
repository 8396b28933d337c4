"""Power study (mechaudit.workflow.power) and the Monte Carlo permutation test (mechaudit.divergence)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechaudit.divergence import (
    comparison_matrix,
    exact_test_feasible,
    matched_pairs,
    monte_carlo_permutation_test,
    permutation_test,
)
from mechaudit.rules.paper_rates import PaperRateJudge
from mechaudit.schema import load_benchmark
from mechaudit.workflow import by_instance, load_simulator_params, simulate
from mechaudit.workflow.design import Design
from mechaudit.workflow.parallel import chunks, parallel_map
from mechaudit.workflow.power import (
    EffectSetting,
    power_replications,
    power_summary,
    power_table,
    runs_needed,
    simulate_pool,
)
from mechaudit.workflow.robustness import vary
from mechaudit.workflow.validity import replication_seed


def random_matrix(rng: np.random.Generator, n: int, shift: float = 0.0, n_a: int | None = None) -> np.ndarray:
    A = rng.random((n, n))
    A = (A + A.T) / 2
    if n_a is not None:
        A[:n_a, n_a:] += shift
        A[n_a:, :n_a] += shift
    np.fill_diagonal(A, 0.0)
    return A


# --------------------------------------------------------------------------- Monte Carlo permutation test


@pytest.mark.parametrize("seed, shift", [(0, 0.0), (1, 0.05), (2, 0.08), (3, 0.12)])
def test_monte_carlo_matches_exact_on_paper_design(seed: int, shift: float) -> None:
    rng = np.random.default_rng(seed)
    Ds = [random_matrix(rng, 10, shift, 5) for _ in range(4)]
    exact = permutation_test(Ds, 5)
    R = 20_000
    mc = monte_carlo_permutation_test(Ds, 5, n_resamples=R, seed=seed)
    assert mc.extra == pytest.approx(exact.extra, abs=1e-12)
    assert mc.n_partitions == exact.n_partitions == 126
    se = np.sqrt(max(exact.p_value * (1 - exact.p_value), 1e-4) / R)
    assert abs(mc.p_value - exact.p_value) < 4 * se + 1 / R


def test_monte_carlo_matches_exact_unequal_and_single_instance() -> None:
    rng = np.random.default_rng(7)
    for Ds, n_a in (([random_matrix(rng, 6, 0.1, 3)], 3), ([random_matrix(rng, 7, 0.05, 3) for _ in range(3)], 3)):
        exact = permutation_test(Ds, n_a)
        mc = monte_carlo_permutation_test(Ds, n_a, n_resamples=20_000, seed=1)
        assert abs(mc.p_value - exact.p_value) < 4 * np.sqrt(exact.p_value * (1 - exact.p_value) / 20_000) + 1e-4


def test_monte_carlo_is_seeded_and_valid() -> None:
    rng = np.random.default_rng(3)
    Ds = [random_matrix(rng, 12, 0.3, 6) for _ in range(2)]
    a = monte_carlo_permutation_test(Ds, 6, n_resamples=99, seed=5)
    assert a == monte_carlo_permutation_test(Ds, 6, n_resamples=99, seed=5)
    assert a.p_value == pytest.approx(1 / 100)  # a huge shift: no resample reaches the observed value
    assert monte_carlo_permutation_test([np.zeros((10, 10))], 5, n_resamples=50).p_value == 1.0
    # evaluated in chunks smaller than n_resamples (other draws, same validity)
    p = monte_carlo_permutation_test(Ds, 6, n_resamples=99, seed=5, chunk=10).p_value
    assert 1 / 100 <= p <= 1


@pytest.mark.parametrize("kwargs, match", [({"n_resamples": 0}, "n_resamples"), ({"n_resamples": 2.5}, "n_resamples")])
def test_monte_carlo_bad_input(kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        monte_carlo_permutation_test([np.zeros((4, 4))], 2, **kwargs)
    with pytest.raises(ValueError, match="no instance"):
        monte_carlo_permutation_test([], 2)
    with pytest.raises(ValueError, match="one shape"):
        monte_carlo_permutation_test([np.zeros((4, 4)), np.zeros((6, 6))], 2)


def test_monte_carlo_size_under_the_null() -> None:
    """Exchangeable runs: the rejection rate at 0.05 is at most 0.05 up to Monte Carlo error."""
    rng = np.random.default_rng(11)
    ps = [monte_carlo_permutation_test([random_matrix(rng, 16) for _ in range(3)], 8, n_resamples=99, seed=s).p_value
          for s in range(300)]
    rate = np.mean(np.array(ps) <= 0.05)
    assert rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 300)


def test_exact_feasibility() -> None:
    assert exact_test_feasible(10, 5, 4)
    assert not exact_test_feasible(10, 5, 8)
    assert not exact_test_feasible(20, 10, 4)
    assert exact_test_feasible(12, 6, 4) and not exact_test_feasible(12, 6, 4, limit=20_000)


# --------------------------------------------------------------------------- joblib fan-out


def _square_plus(x: int, y: int) -> int:
    return x * x + y


def test_parallel_map_order_and_errors() -> None:
    tasks = [(i, 1) for i in range(7)]
    assert parallel_map(_square_plus, tasks) == [i * i + 1 for i in range(7)]
    assert parallel_map(_square_plus, tasks, n_jobs=2) == [i * i + 1 for i in range(7)]
    assert parallel_map(_square_plus, tasks, n_jobs=2, parallel_backend="threading") == [i * i + 1 for i in range(7)]
    assert chunks(7, 3) == [(0, 3), (3, 6), (6, 7)]
    with pytest.raises(ValueError, match="n_jobs"):
        parallel_map(_square_plus, tasks, n_jobs=0)


# --------------------------------------------------------------------------- power


@pytest.fixture(scope="module")
def sim():
    bench = load_benchmark()
    return bench, [i.id for i in bench.instances], load_simulator_params()


@pytest.fixture(scope="module")
def pools(sim):
    bench, instances, base = sim
    return simulate_pool(bench, instances, vary(base, p_find=0.66), n_instances=8, runs_per_depth=60, seed=4,
                         measure="paper_rates")


def test_pools_are_replicate_instances(pools) -> None:
    assert len(pools) == 8 and all(D.shape == (120, 120) for D in pools)
    assert not np.array_equal(pools[0], pools[4])  # copy 1 of instance A has its own seed
    for D in pools:
        assert np.allclose(D, D.T) and (np.diag(D) == 0).all()


def test_power_replications_independent_of_n_jobs_and_chunk(pools) -> None:
    one = power_replications(pools[:4], 5, 12, seed=9, n_jobs=1)
    two = power_replications(pools[:4], 5, 12, seed=9, n_jobs=2, chunk=5)
    pd.testing.assert_frame_equal(one, two)
    mc_one = power_replications(pools[:8], 5, 6, seed=9, n_jobs=1)
    mc_two = power_replications(pools[:8], 5, 6, seed=9, n_jobs=2, chunk=2)
    pd.testing.assert_frame_equal(mc_one, mc_two)
    assert set(one.test) == {"exact"} and set(mc_one.test) == {"monte carlo"}
    assert one.rep.tolist() == list(range(12)) and two.rep.tolist() == list(range(12))
    with pytest.raises(ValueError, match="pool size"):
        power_replications(pools[:4], 61, 2)


def _pairwise_rate_matrix(sets, judge: PaperRateJudge) -> np.ndarray:
    """Expected paper-rate divergence matrix computed pair by pair (not the judge's fast path)."""
    n = len(sets)
    D = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            D[i, j] = D[j, i] = float(np.mean(judge.p_different(matched_pairs(sets[i], sets[j]))))
    return D


def _fresh_power(bench, instances, params, runs_per_depth: int, n_reps: int, seed: int, alpha: float):
    """Independent computation: fresh full simulate() runs per replication, the paper-rate judge pair
    by pair, and the exact test."""
    design = Design(instances=tuple(instances), depths=(1, 5), runs_per_depth=runs_per_depth)
    judge = PaperRateJudge()
    ps, extras = [], []
    for rep in range(n_reps):
        runs = simulate(bench, design, params, seed=replication_seed(seed, rep), log=False)
        Ds = []
        for rs in by_instance(runs).values():
            D = _pairwise_rate_matrix([r.delivered for r in rs], judge)
            Ds.append(comparison_matrix(D, [r.depth for r in rs], 1, 5)[0])
        res = permutation_test(Ds, runs_per_depth)
        ps.append(res.p_value)
        extras.append(100 * res.extra)
    ps, extras = np.array(ps), np.array(extras)
    rate = float(np.mean(ps <= alpha))
    return rate, float(np.sqrt(rate * (1 - rate) / n_reps)), extras


def test_pooled_power_matches_fresh_simulation(sim, pools) -> None:
    bench, instances, base = sim
    pooled = power_summary(power_replications(pools[:4], 5, 300, seed=2), alpha=0.05)
    rate, se, extras = _fresh_power(bench, instances, vary(base, p_find=0.66), 5, 80, seed=123, alpha=0.05)
    assert 0.1 < rate < 0.95 and 0.1 < pooled["power"] < 0.95  # a setting where power is informative
    assert abs(pooled["power"] - rate) < 3 * np.sqrt(se**2 + pooled["power_se"] ** 2)
    # the estimates' distribution too: mean extra within Monte Carlo error
    assert abs(pooled["mean_extra_pp"] - extras.mean()) < 3 * extras.std(ddof=1) / np.sqrt(len(extras)) + 0.3


def test_batch_standard_error_over_independent_pools() -> None:
    reps = pd.DataFrame({"extra_pp": 1.0, "test": "exact", "pool": [0] * 4 + [1] * 4 + [2] * 4,
                         "p_value": [0.01, 0.01, 0.5, 0.5, 0.01, 0.5, 0.5, 0.5, 0.01, 0.01, 0.01, 0.5]})
    out = power_summary(reps, alpha=0.05)
    assert out["power"] == 0.5 and out["n_pools"] == 3
    assert out["power_se"] == pytest.approx(np.std([0.5, 0.25, 0.75], ddof=1) / np.sqrt(3))
    assert out["binomial_se"] == pytest.approx(np.sqrt(0.25 / 12))
    single = power_summary(reps.drop(columns="pool"), alpha=0.05)
    assert single["power_se"] == single["binomial_se"] and single["n_pools"] == 1
    one = power_summary(reps.iloc[:1].drop(columns="pool").assign(test="monte carlo"), alpha=0.05)
    assert (one["n_reps"], one["power"], one["test"]) == (1, 1.0, "monte carlo")


def test_power_table_and_runs_needed(sim) -> None:
    bench, instances, base = sim
    setting = EffectSetting(5.0, {"p_find": 0.5}, vary(base, p_find=0.5), 5.0, 0.3)
    table = power_table(bench, instances, [setting], designs=[(4, 5), (8, 3)], n_reps=30, ladder=[2, 3, 5, 8],
                        level=0.8, pool_runs_per_depth=30, seed=0, n_pools=3)
    assert (table.n_pools == 3).all() and (table.n_reps == 30).all()
    with pytest.raises(ValueError, match="n_pools"):
        power_table(bench, instances, [setting], designs=[(4, 5)], n_reps=3, n_pools=0)
    one = power_table(bench, instances, [setting], designs=[(2, 2)], n_reps=2, ladder=[], pool_runs_per_depth=4,
                      seed=0, n_pools=1)
    assert one.n_pools.tolist() == [1] and one.n_reps.tolist() == [2]
    assert list(table.role).count("design") == 2
    ladder = table[table.role == "ladder"]
    assert ladder.runs_per_depth.is_monotonic_increasing
    # the ladder stops at the first rung reaching the level (or runs out)
    reached = ladder.power >= 0.8
    assert reached.sum() <= 1 and (not reached.any() or reached.iloc[-1])
    need = runs_needed(table)
    assert len(need) == 1
    if reached.any():
        assert need.runs_needed.iloc[0] == ladder.runs_per_depth.iloc[-1]
    synthetic = pd.DataFrame({"target_pp": [2.0] * 3, "truth_pp": [2.1] * 3, "n_instances": [4] * 3,
                              "runs_per_depth": [5, 10, 20], "power": [0.4, 0.79, 0.7], "role": ["ladder"] * 3})
    out = runs_needed(synthetic).iloc[0]
    assert np.isnan(out.runs_needed) and out.largest_tried == 20 and out.power_at_largest == 0.7
    assert (out.target_pp, out.truth_pp, out.n_instances) == (2.0, 2.1, 4)


def test_power_counts_a_p_value_equal_to_alpha_as_a_rejection() -> None:
    """Rejection is ``p <= alpha``: exact permutation p-values sit on a grid and can equal alpha."""
    reps = pd.DataFrame({"rep": range(8), "extra_pp": [4.0, 2.0, 0.0, -2.0, 6.0, 1.0, 3.0, 2.0],
                         "p_value": [0.05, 0.05, 0.2, 0.5, 0.01, 0.050001, 0.9, 0.3], "test": "exact"})
    out = power_summary(reps, alpha=0.05)
    assert out["power"] == pytest.approx(3 / 8)  # 0.05, 0.05 and 0.01; ``<`` would give 1/8
    assert out["power_se"] == pytest.approx(np.sqrt(3 / 8 * 5 / 8 / 8))
    assert out["n_reps"] == 8 and out["mean_extra_pp"] == pytest.approx(2.0) and out["test"] == "exact"


def test_power_defaults_seed_zero_and_alpha_five_percent(pools) -> None:
    reps = power_replications(pools[:2], 3, 4)
    pd.testing.assert_frame_equal(reps, power_replications(pools[:2], 3, 4, seed=0))
    assert not reps.equals(power_replications(pools[:2], 3, 4, seed=1))
    table = pd.DataFrame({"extra_pp": 1.0, "test": "exact", "p_value": [0.01, 0.05, 0.06, 0.5]})
    assert power_summary(table)["power"] == 0.5


def test_power_table_draws_its_pools_and_replications_as_documented(sim, monkeypatch) -> None:
    """The pools and replications a setting asks for (stand-ins record the calls): pools of the most
    instances any design needs, replications of each design's first ``k`` instances, seed + 1."""
    import mechaudit.workflow.power as power

    bench, instances, base = sim
    calls = []
    monkeypatch.setattr(power, "simulate_pool", lambda *a: calls.append(("pool", a[3:])) or ["D"] * a[3])
    reps = pd.DataFrame({"rep": range(4), "extra_pp": 1.0, "p_value": [0.01, 0.05, 0.2, 0.9], "test": "exact"})
    monkeypatch.setattr(power, "_pooled_replications", lambda *a: calls.append(("reps", a[1:])) or reps)
    setting = EffectSetting(20.0, {}, base, 21.0, 0.5)
    table = power_table(bench, instances[:2], [setting], [(3, 4)], n_reps=4, n_pools=2)
    assert table.power.tolist() == [0.5] and table.role.tolist() == ["design"]
    assert calls == [("pool", (3, (1, 5), 100, replication_seed(0, 0), "paper_rates")),
                     ("pool", (3, (1, 5), 100, replication_seed(0, 1), "paper_rates")),
                     ("reps", (3, 4, 4, 1, 199, 1, None))]


def test_a_pool_has_a_hundred_runs_per_depth_scored_by_the_paper_rates(sim) -> None:
    from mechaudit.workflow.depth import outcome_matrices
    from mechaudit.workflow.simulator import simulate_outcomes

    bench, instances, base = sim
    assert simulate_pool(bench, instances[:1], base, 1)[0].shape == (200, 200)
    (D,) = simulate_pool(bench, instances[:1], base, 1, runs_per_depth=10)
    outcomes = simulate_outcomes(bench, Design(instances=tuple(instances[:1]), depths=(1, 5), runs_per_depth=10),
                                 base, seed=replication_seed(0, 0))
    np.testing.assert_array_equal(D, outcome_matrices(outcomes, "paper_rates")[0].D)
    assert not np.array_equal(D, outcome_matrices(outcomes, "mechanism_key")[0].D)
