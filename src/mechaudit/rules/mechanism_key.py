"""Ground-truth equivalence rule: same iff the mechanism keys are equal.

The key is ``mechaudit.schema.mechanism_key`` (initiating id, route ids, terminal id), exact on
simulator runs. ``divergence_matrix`` counts keys per run: ``divergence.divergence_matrix``'s matrix, faster.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from mechaudit.rules.base import Pair, check_pairs
from mechaudit.schema import Hypothesis, mechanism_key


def keys_divergence_matrix(keys: Sequence[Sequence[tuple[str, Hashable]]]) -> np.ndarray:
    """Mechanism-key divergence matrix, shape ``(n_runs, n_runs)``, from each run's delivered
    ``(opening id, mechanism identity)`` pairs.

    With ``C[r, (opening, key)]`` the count of run r's delivered hypotheses of that opening and key
    and ``N[r, opening]`` its count per opening, matched pairs judged same are ``C C^T`` and all
    matched pairs ``N N^T``; ``D = 1 - same / matched`` (diagonal 0).
    """
    codes: dict[tuple, int] = {}
    openings: dict[str, int] = {}
    cells = [[(codes.setdefault((opening, key), len(codes)), openings.setdefault(opening, len(openings)))
              for opening, key in run] for run in keys]
    C = np.zeros((len(keys), len(codes)))
    N = np.zeros((len(keys), len(openings)))
    for i, row in enumerate(cells):
        for code, opening in row:
            C[i, code] += 1
            N[i, opening] += 1
    matched = N @ N.T
    if (matched == 0).any():
        raise ValueError("two runs share no opening hypothesis: run divergence undefined")
    D = 1.0 - (C @ C.T) / matched
    np.fill_diagonal(D, 0.0)
    return D


class MechanismKeyRule:
    """Same iff ``mechanism_key`` (initiating id, route ids, terminal id) is equal; no parameters."""

    def __repr__(self) -> str:
        return "MechanismKeyRule()"

    def same(self, pairs: Sequence[Pair]) -> np.ndarray:
        """One bool per pair, shape ``(len(pairs),)``."""
        pairs = check_pairs(pairs)
        return np.fromiter((mechanism_key(a) == mechanism_key(b) for a, b in pairs), bool, len(pairs))

    def divergence_matrix(self, runs: Sequence[Sequence[Hypothesis]]) -> np.ndarray:
        """``keys_divergence_matrix`` of one instance's runs (lists of delivered hypotheses)."""
        return keys_divergence_matrix([[(h.opening_id, mechanism_key(h)) for h in run] for run in runs])


__all__ = ["MechanismKeyRule", "keys_divergence_matrix"]
