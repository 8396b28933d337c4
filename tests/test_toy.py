"""The toy design of chapter 01, checked by hand and against the divergence module."""

from __future__ import annotations

import numpy as np
import pytest

from mechaudit import divergence
from mechaudit.workflow import toy


def test_same_seed_same_runs_other_seed_differs():
    assert toy.toy_design(seed=3) == toy.toy_design(seed=3)
    assert toy.toy_design(seed=3) != toy.toy_design(seed=4)


def test_shape_and_lineage():
    runs = toy.toy_design(n_openings=4, n_runs=3, seed=1)
    assert len(runs) == 6 and all(len(r) == 4 for r in runs)
    assert [h.opening_id for h in runs[0]] == ["O1", "O2", "O3", "O4"]
    assert {h.depth for r in runs[:3] for h in r} == {0} and {h.depth for r in runs[3:] for h in r} == {1}


def test_no_noise_no_critique_means_no_divergence():
    runs = toy.toy_design(rerun_noise=0.0, critique_change=0.0, seed=0)
    D = divergence.divergence_matrix(runs, toy.same_exact)
    assert np.all(D == 0)


def test_certain_critique_change_is_full_extra_divergence():
    runs = toy.toy_design(rerun_noise=0.0, critique_change=1.0, initiator_change=1.0, seed=0)
    D = divergence.divergence_matrix(runs, toy.same_exact)
    assert divergence.extra_divergence(D, n_a=5) == pytest.approx(1.0)
    assert divergence.permutation_test([D], n_a=5).p_value == pytest.approx(1 / 126)


def test_coarse_rule_misses_route_only_changes():
    runs = toy.toy_design(rerun_noise=0.0, critique_change=1.0, initiator_change=0.0, seed=0)
    pairs = divergence.matched_pairs(runs[0], runs[5])
    assert not toy.same_exact(pairs).any()
    assert toy.same_initiator(pairs).all()


def test_bad_probability():
    with pytest.raises(ValueError, match="critique_change"):
        toy.toy_design(critique_change=1.5)


def test_table_lists_every_run():
    table = toy.toy_table(toy.toy_design(n_runs=2, seed=0))
    assert list(table.index) == ["K0-r1", "K0-r2", "K1-r1", "K1-r2"]
    assert table.shape == (4, 5)


def test_labels_name_the_opening_and_the_table_its_runs():
    runs = toy.toy_design(n_openings=3, n_runs=1, rerun_noise=0.0, critique_change=0.0, seed=0)
    assert [h.mechanism for h in runs[0]] == ["I1 -> R1", "I2 -> R2", "I3 -> R3"]
    table = toy.toy_table(runs)
    assert table.index.name == "run" and list(table.columns) == ["O1", "O2", "O3"]
    with pytest.raises(ValueError, match=r"^initiator_change must be a probability in \[0, 1\], got -0.1$"):
        toy.toy_design(initiator_change=-0.1)
