"""Agreement statistics against scikit-learn and by hand; missing decisions; sweeps."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from mechaudit.agreement import (
    agreement_table,
    cohen_kappa,
    complete_agreement_interval,
    flip_rate,
    kappa_undefined,
    raw_agreement,
    threshold_sweep,
    verdict_matrix,
)


@pytest.mark.parametrize("seed", range(5))
def test_kappa_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    a = rng.random(200) < 0.6
    b = np.where(rng.random(200) < 0.8, a, ~a)
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)
    assert raw_agreement(a, b) == pytest.approx(np.mean(a == b))
    assert flip_rate(a, b) == pytest.approx(np.mean(a != b))


def test_kappa_by_hand():
    # 2x2 table: both same 20, both different 15, a-only 10, b-only 5 (n = 50)
    a = np.array([1] * 20 + [0] * 15 + [1] * 10 + [0] * 5, dtype=bool)
    b = np.array([1] * 20 + [0] * 15 + [0] * 10 + [1] * 5, dtype=bool)
    p_o = 35 / 50
    p_e = (30 / 50) * (25 / 50) + (20 / 50) * (25 / 50)
    assert cohen_kappa(a, b) == pytest.approx((p_o - p_e) / (1 - p_e))
    assert cohen_kappa(a, a) == pytest.approx(1.0)
    assert np.isnan(cohen_kappa(np.ones(4, bool), np.ones(4, bool)))


def test_missing_decisions_are_dropped_not_defaulted():
    a = np.array([True, False, None, True], dtype=object)
    b = np.array([True, True, True, np.nan], dtype=object)
    assert raw_agreement(a, b) == pytest.approx(0.5)
    assert np.isnan(raw_agreement([None], [True]))


def test_bad_input():
    with pytest.raises(ValueError, match="length"):
        raw_agreement([True, False], [True])
    with pytest.raises(ValueError, match="boolean"):
        cohen_kappa(["same", "different"], [True, False])


def test_table_and_sweep():
    rng = np.random.default_rng(1)
    sim = rng.random(100)
    ref = sim + rng.normal(0, 0.1, 100) > 0.5
    sweep = threshold_sweep(sim, [0.3, 0.5, 0.7], {"ref": ref})
    assert list(sweep["threshold"]) == [0.3, 0.5, 0.7]
    for row in sweep.itertuples():
        assert row.raw_agreement == pytest.approx(np.mean((sim >= row.threshold) == ref))
        assert row.kappa == pytest.approx(cohen_kappa_score(sim >= row.threshold, ref))
    table = agreement_table({"x": ref, "y": sim > 0.5, "z": ~ref})
    assert len(table) == 3
    assert table.set_index(["method_a", "method_b"]).loc[("x", "z"), "raw_agreement"] == 0.0


def test_complete_agreement_interval_is_exact():
    from mechaudit.agreement import complete_agreement_interval

    sim = np.array([0.9, 0.7, 0.4, 0.2])
    assert complete_agreement_interval(sim, [True, True, False, False]) == (0.4, 0.7)
    assert complete_agreement_interval(sim, [True, False, True, False]) is None
    assert complete_agreement_interval(sim, [True, None, False, None]) == (0.4, 0.9)
    # brute force over a fine grid agrees with the interval
    rng = np.random.default_rng(3)
    for _ in range(20):
        s = rng.random(8)
        ref = s + rng.normal(0, 0.05, 8) > 0.5
        interval = complete_agreement_interval(s, ref)
        grid = np.linspace(-0.01, 1.01, 2001)
        perfect = [t for t in grid if np.all((s >= t) == ref)]
        assert (interval is None) == (len(perfect) == 0)
        if interval is not None:
            assert all(interval[0] < t <= interval[1] for t in perfect)


def test_decisions_accept_0_and_1_and_name_the_side_and_value_that_is_not():
    assert raw_agreement([1, 0, 1, 0], [True, False, False, np.nan]) == pytest.approx(2 / 3)
    assert cohen_kappa(np.array([0, 1, 1, 0]), np.array([0, 1, 1, 0])) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="decisions b must be boolean or 0/1; found 2"):
        raw_agreement([True, False], [True, 2])
    with pytest.raises(ValueError, match="decisions a must be boolean or 0/1; found 'yes'"):
        raw_agreement(["yes", False], [True, False])


def test_complete_agreement_when_the_reference_has_one_class_only():
    sim = np.array([0.2, 0.9, 0.5])
    assert complete_agreement_interval(sim, [True, True, True]) == (-np.inf, 0.2)
    assert complete_agreement_interval(sim, [False, False, None]) == (0.9, np.inf)
    assert complete_agreement_interval(sim, [True, False, True]) is None  # 0.9 different > 0.2 same


def test_a_reference_with_a_stray_label_is_named_and_not_read_as_text():
    with pytest.raises(ValueError, match=r"^decisions b must be boolean or 0/1; found 'no'$"):
        complete_agreement_interval([0.1, 0.2, 0.3], [True, False, "no"])


def test_kappa_undefined_without_a_count_names_both_reasons():
    assert kappa_undefined() == ("undefined: no pair decided by both, or both gave one and the same verdict for "
                                 "every pair (chance agreement 1)")
    assert kappa_undefined(0) == "undefined: no pair was decided by both"
    assert kappa_undefined(5) == "undefined: both gave one and the same verdict for every pair (chance agreement 1)"


def test_a_sweep_of_no_pairs_gives_nan_rates_and_no_judges_is_an_error():
    table = threshold_sweep(np.array([]), [0.5], {"rule": []})
    assert table.columns.tolist() == ["threshold", "other", "same_rate", "raw_agreement", "kappa"]
    assert table[["threshold", "other"]].values.tolist() == [[0.5, "rule"]]
    assert table[["same_rate", "raw_agreement", "kappa"]].isna().all(axis=None)
    with pytest.raises(ValueError, match="^no judges given$"):
        verdict_matrix({})
