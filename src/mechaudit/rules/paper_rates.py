"""A judge-like rule for simulator runs: each kind of chain change is called "different" at the
rate the paper measured for its LLM judge.

The paper's LLM judge did not call every changed chain a new mechanism (its perturbation rates,
``perturbations.*.llm`` in ``data/paper_reported.yaml``), unlike the mechanism key. This rule compares
two chains' canonical step ids position by position and calls the pair different with

    P(different) = 1 - prod over changed positions j of (1 - rate_j),

``rate_j`` the first-step, middle-step or ``terminal_step`` rate by position. This book assumes that
changes are noticed independently and that critique changes are judged like deliberate edits.
``divergence_matrix`` gives the *expected* divergence; ``same`` draws verdicts. Chains of unequal
length (not a kind the paper measured) raise ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from mechaudit.paper import reported
from mechaudit.rules.base import Pair, check_pairs, check_threshold
from mechaudit.schema import Hypothesis

#: the paper's keys of the LLM judge's rate per kind of change (% of valid pairs judged different)
PAPER_RATE_KEYS = {
    "first_step": "perturbations.first_step_swapped_pct_different.llm",
    "middle_step": "perturbations.middle_step_swapped_pct_different.llm",
}


def paper_rates() -> dict[str, float]:
    """The paper's LLM-judge rates as fractions: ``first_step``, ``middle_step``."""
    return {kind: float(reported(key)) / 100.0 for kind, key in PAPER_RATE_KEYS.items()}


def _chain_ids(h: Hypothesis) -> tuple[str, ...]:
    return tuple(s.id for s in h.chain)


class PaperRateJudge:
    """Calls a changed chain different at per-position rates in [0, 1]: ``first_step``, ``middle_step``
    (None: the paper's), ``terminal_step``; ``seed``: of ``same``'s draws."""

    def __init__(self, first_step: float | None = None, middle_step: float | None = None,
                 terminal_step: float = 1.0, seed: int = 0) -> None:
        self.first_step = first_step
        self.middle_step = middle_step
        self.terminal_step = terminal_step
        self.seed = seed

    def __repr__(self) -> str:
        r = self.rates_
        return (f"PaperRateJudge(first_step={r['first_step']:g}, middle_step={r['middle_step']:g}, "
                f"terminal_step={r['terminal_step']:g})")

    @property
    def rates_(self) -> dict[str, float]:
        """The rates in use, validated: ``first_step``, ``middle_step``, ``terminal_step``."""
        paper = paper_rates()
        out = {"first_step": paper["first_step"] if self.first_step is None else self.first_step,
               "middle_step": paper["middle_step"] if self.middle_step is None else self.middle_step,
               "terminal_step": self.terminal_step}
        return {k: check_threshold(v, k, low=0.0, high=1.0) for k, v in out.items()}

    def position_rates(self, length: int) -> np.ndarray:
        """Rate per chain position for a chain of ``length`` >= 2 steps, shape ``(length,)``."""
        if length < 2:
            raise ValueError(f"a chain needs an initiating event and a terminal finding; got {length} step(s)")
        r = self.rates_
        return np.array([r["first_step"]] + [r["middle_step"]] * (length - 2) + [r["terminal_step"]])

    def chain_probabilities(self, chains: Sequence[Sequence[Hashable]],
                            rates: np.ndarray | None = None) -> np.ndarray:
        """P(different) per pair of equal-length ``chains``, ``(m, m)``; ``rates``: ``position_rates``."""
        lengths = {len(c) for c in chains}
        if len(lengths) > 1:
            raise ValueError(f"chains of unequal length {sorted(lengths)}: an added or dropped step is not "
                             "a kind of change the paper measured")
        if not chains:
            return np.zeros((0, 0))
        codes: dict[Hashable, int] = {}
        A = np.array([[codes.setdefault(x, len(codes)) for x in c] for c in chains])
        rates = self.position_rates(A.shape[1]) if rates is None else rates
        changed = A[:, None, :] != A[None, :, :]
        return 1.0 - np.where(changed, 1.0 - rates, 1.0).prod(axis=2)

    def p_different(self, pairs: Sequence[Pair]) -> np.ndarray:
        """P(different) per pair, shape ``(len(pairs),)``."""
        pairs = check_pairs(pairs)
        return np.array([self.chain_probabilities([_chain_ids(a), _chain_ids(b)])[0, 1] for a, b in pairs])

    def same(self, pairs: Sequence[Pair]) -> np.ndarray:
        """One verdict per pair (True = same) drawn from ``default_rng(seed)`` with ``p_different``."""
        p = self.p_different(pairs)
        return np.random.default_rng(self.seed).random(len(p)) >= p

    def keys_divergence_matrix(self, keys: Sequence[Sequence[tuple[str, Sequence[Hashable]]]]) -> np.ndarray:
        """Expected divergence matrix ``(n_runs, n_runs)`` from each run's ``(opening id, chain ids)``:
        per run pair the mean P(different) over its matched pairs."""
        n = len(keys)
        per_opening: dict[str, tuple[dict[tuple, int], list[int], list[int]]] = {}
        for i, run in enumerate(keys):
            for opening, chain in run:
                codes, rows, cols = per_opening.setdefault(opening, ({}, [], []))
                rows.append(i)
                cols.append(codes.setdefault(tuple(chain), len(codes)))
        S, M = np.zeros((n, n)), np.zeros((n, n))
        rates: dict[int, np.ndarray] = {}
        for codes, rows, cols in per_opening.values():
            C = np.zeros((n, len(codes)))  # runs x distinct chains: counts
            np.add.at(C, (rows, cols), 1.0)
            chains = list(codes)
            length = len(chains[0])
            rate = rates.setdefault(length, self.position_rates(length))
            S += C @ self.chain_probabilities(chains, rate) @ C.T
            N = C.sum(axis=1)
            M += np.outer(N, N)
        if (M + np.eye(n) == 0).any():
            raise ValueError("two runs share no opening hypothesis: run divergence undefined")
        D = np.divide(S, M, out=np.zeros((n, n)), where=M > 0)
        np.fill_diagonal(D, 0.0)
        return D

    def divergence_matrix(self, runs: Sequence[Sequence[Hypothesis]]) -> np.ndarray:
        """``keys_divergence_matrix`` of one instance's runs (lists of delivered hypotheses)."""
        return self.keys_divergence_matrix([[(h.opening_id, _chain_ids(h)) for h in run] for run in runs])


__all__ = ["PAPER_RATE_KEYS", "PaperRateJudge", "paper_rates"]
