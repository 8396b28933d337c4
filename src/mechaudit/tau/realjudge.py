"""Calibrating tau with a real (LLM) blind judge: chapter 08's one call for the LLM backends.

:func:`llm_tau_calibration` has the blind judge answer stratified pairs of an anchor pool once per
role and fits tau per role (grid and mle), all through the client's response cache.

On the synthetic pool (:func:`mechaudit.tau.simulate.make_pool`) the card texts do not depend on the
scores, so a fitted tau says nothing about the judge (``sign_agreement`` stays near 0.5); a real
calibration needs real papers with their reviews, in the same dict format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mechaudit.llm.client import require_client
from mechaudit.tau.anchors import anchor_papers, anchor_table
from mechaudit.tau.cards import build_paper_card
from mechaudit.tau.fitting import fit_tau_detailed, sample_pairs
from mechaudit.tau.judge import DEFAULT_JUDGE_MODEL, BlindJudge, judge_sampled_pairs, pair_requests
from mechaudit.tau.rubric import ROLES
from mechaudit.tau.simulate import SyntheticPool


@dataclass(frozen=True)
class LLMCalibration:
    """Result of :func:`llm_tau_calibration`: ``fits`` per (role, method) (tau, se, se_robust, at_bound,
    n_pairs, n_excluded, tie_share, sign_agreement), the ``judged`` verdicts, the client's ``ledger``
    (mode ``api`` or ``cache``) and ``backend``."""

    fits: pd.DataFrame
    judged: pd.DataFrame
    ledger: pd.DataFrame
    backend: str
    model: str

    @property
    def requests_sent(self) -> int:
        """Requests that reached the API in this run (0 when everything came from the cache)."""
        return int(self.ledger.loc[self.ledger["mode"] != "cache", "calls"].sum())

    @property
    def served_from_cache(self) -> int:
        """Answers read from the cache in this run."""
        return int(self.ledger.loc[self.ledger["mode"] == "cache", "calls"].sum())


def verdict_summary(judged: pd.DataFrame) -> dict[str, float]:
    """``tie_share`` and ``sign_agreement`` (non-tie verdicts agreeing with the sign of a non-zero ``delta``)."""
    tie = judged["judgement"] == "tie"
    decided = judged[~tie & (judged["delta"] != 0)]
    agree = np.where(decided["judgement"] == "better", decided["delta"] > 0, decided["delta"] < 0)
    return {"tie_share": float(tie.mean()) if len(judged) else float("nan"),
            "sign_agreement": float(agree.mean()) if len(decided) else float("nan")}


def calibration_pairs(pool: SyntheticPool | Sequence[Mapping[str, Any]], n_pairs: int = 200,
                      seed: int = 0) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """``(usable anchor papers, n_pairs stratified pairs of them)``."""
    if n_pairs < 1:
        raise ValueError(f"field 'llm_pairs': must be >= 1, got {n_pairs}")
    papers = anchor_papers(pool.papers if isinstance(pool, SyntheticPool) else pool)
    return papers, sample_pairs(anchor_table(papers), n_pairs, seed=seed)


def calibration_requests(pool: SyntheticPool | Sequence[Mapping[str, Any]], model: str = DEFAULT_JUDGE_MODEL,
                         n_pairs: int = 200, roles: Sequence[str] = ROLES, seed: int = 0) -> list[Any]:
    """The requests :func:`llm_tau_calibration` sends first (before any repair), unsent."""
    papers, pairs = calibration_pairs(pool, n_pairs, seed)
    by_id = {p["paper_id"]: p for p in papers}
    cards = [(build_paper_card(by_id[a]), build_paper_card(by_id[b])) for a, b in zip(pairs["a"], pairs["b"])]
    return [r for role in roles for r in pair_requests(role, cards, model)]


def llm_tau_calibration(
    pool: SyntheticPool | Sequence[Mapping[str, Any]],
    client: Any,
    model: str = DEFAULT_JUDGE_MODEL,
    n_pairs: int = 200,
    roles: Sequence[str] = ROLES,
    seed: int = 0,
    methods: Sequence[str] = ("grid", "mle"),
) -> LLMCalibration:
    """Fit tau per role from the blind judge's verdicts on ``n_pairs`` stratified pairs of ``pool``."""
    require_client(client, "llm_tau_calibration")
    papers, pairs = calibration_pairs(pool, n_pairs, seed)
    judge = BlindJudge(client=client, model=model)
    by_id = {p["paper_id"]: p for p in papers}
    frames, rows = [], []
    for role in roles:
        judged = judge_sampled_pairs(pairs, by_id, judge, role)
        frames.append(judged.assign(role=role))
        summary = verdict_summary(judged)
        for method in methods:
            fit = fit_tau_detailed(judged, method) if len(judged) else None
            rows.append({"role": role, "method": method,
                         "tau": fit.tau if fit else float("nan"), "se": fit.se if fit else float("nan"),
                         "se_robust": fit.se_robust if fit else float("nan"),
                         "at_bound": fit.at_bound if fit else False, "n_pairs": len(judged),
                         "n_excluded": len(pairs) - len(judged), **summary})
    judged_all = pd.concat(frames, ignore_index=True)[["role", "a", "b", "delta", "weight", "judgement", "strength"]]
    return LLMCalibration(pd.DataFrame(rows), judged_all, client.ledger(), client.backend, model)

