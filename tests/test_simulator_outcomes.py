"""The simulator's fast path (``simulate_outcomes``) against the full simulator, draw for draw."""

from __future__ import annotations

import numpy as np
import pytest

from mechaudit.workflow import Design, MechanismKeyRule, instance_matrices, load_simulator_params, null_params, simulate
from mechaudit.workflow.depth import outcome_matrices
from mechaudit.workflow.records import LABELS
from mechaudit.workflow.simulator import simulate_outcomes


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize("null", [False, True])
def test_outcomes_equal_full_simulation(bench, seed, null):
    params = load_simulator_params()
    params = null_params(params) if null else params
    design = Design(instances=tuple(i.id for i in bench.instances[:2]), depths=(0, 1, 3), runs_per_depth=3)
    fast = simulate_outcomes(bench, design, params, seed=seed)
    quiet = simulate(bench, design, params, seed=seed, log=False)
    logged = simulate(bench, design, params, seed=seed, log=True)
    assert len(fast) == len(quiet) == len(logged) == design.n_runs
    for o, q, r in zip(fast, quiet, logged):
        assert (o.instance, o.depth, o.repetition) == (q.instance, q.depth, q.repetition)
        # delivered chains: identical ids, opening by opening, in both simulate modes
        for run in (q, r):
            assert o.keys == tuple((h.opening_id, tuple(s.id for s in h.chain)) for h in run.delivered)
        # label counts: the replies the logged run records
        labels = [rep.label for rep in r.replies]
        assert o.labels.tolist() == [labels.count(lab) for lab in LABELS]
    assert sum(o.labels.sum() for o in fast) > 0  # the design has critique rounds that raise demands
    for m_fast, m_full in zip(outcome_matrices(fast), instance_matrices(quiet, MechanismKeyRule())):
        assert m_fast.instance == m_full.instance
        np.testing.assert_array_equal(m_fast.depths, m_full.depths)
        np.testing.assert_allclose(m_fast.D, m_full.D, rtol=0, atol=1e-12)


def test_outcomes_change_with_seed(bench):
    """The check above must be able to fail: different seeds give different outcomes."""
    params = load_simulator_params()
    design = Design(instances=(bench.instances[0].id,), depths=(0, 1), runs_per_depth=3)
    a = simulate_outcomes(bench, design, params, seed=0)
    b = simulate_outcomes(bench, design, params, seed=1)
    assert [o.keys for o in a] != [o.keys for o in b]
