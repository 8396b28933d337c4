"""Tau behaviours that survived the mutation run (``make mutation``) after fidelity-tau's tests: the
standard error of a weakly informed fit, the strict comparison messages and the prompt guard naming
where a forbidden term was found."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mechaudit.errors import MechauditError
from mechaudit.llm import BlindnessError
from mechaudit.tau import fit_tau_detailed
from mechaudit.tau.inference import observations
from mechaudit.tau.judge import build_prompt


def test_standard_error_of_a_fit_with_little_information_is_finite():
    """Four light pairs: the observed information is below 1 but positive, so the standard error
    is 1 / sqrt(information), computed here by finite differences of the weighted likelihood."""
    delta, y, w = np.array([0.5, -0.4, 1.0, 0.2]), np.array([1.0, 0.0, 1.0, 0.0]), np.full(4, 0.04)
    pairs = pd.DataFrame({"delta": delta, "y": y, "strength": "weak", "weight": w})
    fit = fit_tau_detailed(pairs, method="mle")

    def nll(tau: float) -> float:
        p = 1 / (1 + np.exp(-delta / tau))
        return float(-np.sum(w * (y * np.log(p) + (1 - y) * np.log(1 - p))))

    step = 1e-4
    info = (nll(fit.tau + step) - 2 * nll(fit.tau) + nll(fit.tau - step)) / step**2
    assert 0 < info < 1
    assert fit.se == pytest.approx(1 / np.sqrt(info), rel=1e-3)


def test_strict_observations_name_the_bad_judgement_and_what_is_expected():
    anchors = [{"anchor_id": "A1", "score10": 6.0}]
    with pytest.raises(MechauditError, match=r"comparisons\[0\]\.judgement': 'maybe' is not better, tie or worse "
                                             r"\(strict=False counts it as a tie\)"):
        observations(anchors, [{"anchor_id": "A1", "judgement": "maybe", "strength": "weak"}])


def test_prompt_guard_names_the_role_and_the_prompt_that_leaked():
    from mechaudit.tau.cards import Card

    leaky = Card(problem="its score is high", method="m", contrib="c")
    with pytest.raises(BlindnessError, match="found in the Novelty user prompt; the prompt was not sent"):
        build_prompt("Novelty", leaky, [leaky])


def test_a_fit_stopped_at_the_lower_bound_with_negative_curvature_has_no_standard_errors():
    """Two pairs answered exactly by the sign of tiny score gaps: the likelihood still rises at the
    lower bound (its curvature there is negative), so neither standard error exists."""
    delta = np.array([0.01, -0.01])
    pairs = pd.DataFrame({"delta": delta, "y": [1.0, 0.0], "strength": "weak", "weight": 1.0})
    fit = fit_tau_detailed(pairs, method="mle")
    assert fit.at_bound and fit.tau == pytest.approx(0.1, abs=1e-6)
    assert np.isnan(fit.se) and np.isnan(fit.se_robust)


@pytest.mark.parametrize("field", ["score10", "weight"])
def test_a_non_numeric_anchor_value_is_named_by_its_field(field):
    anchors = [{"anchor_id": "A1", "score10": 6.0, "weight": 1.0}, {"anchor_id": "A2", field: "high"}]
    with pytest.raises(MechauditError) as err:
        observations(anchors, [])
    assert err.value.field == f"anchors[1].{field}" and "must be a number, got 'high'" in str(err.value)
