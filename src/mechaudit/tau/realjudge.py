"""Calibrating tau with a real (LLM) blind judge: chapter 08's one call for the LLM backends.

:func:`llm_tau_calibration` samples stratified pairs from an anchor pool, has the blind judge
(:class:`mechaudit.tau.judge.BlindJudge` over ``anthropic`` or ``replay``) answer every pair once per
role, and fits tau per role from those verdicts (grid and mle). Everything goes through the cache
in ``cache_dir``, so a second run sends no request, and ``replay`` answers from it alone.

What it cannot do on the synthetic pool of :func:`mechaudit.tau.simulate.make_pool`: the pool's
card texts are drawn from templates independently of the papers' scores, so a judge that reads
the cards has no information about the score gaps the fitter uses. A fitted tau there measures
nothing about the judge's calibration (an uninformed judge drives it to the grid's upper end); the
table's ``sign_agreement`` shows how often the judge's non-tie verdicts agree with the sign of the
score gap (about 0.5 without information). A calibration that means something needs a pool of
real papers with their reviews, in the same dict format (``paper_id``, ``pattern_id``, the card
fields, ``score10`` and ``weight`` or ``review_stats``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mechaudit.backends import Backend
from mechaudit.tau.anchors import anchor_papers, anchor_table
from mechaudit.tau.fitting import fit_tau_detailed, sample_pairs
from mechaudit.tau.judge import DEFAULT_JUDGE_MODEL, BlindJudge, judge_sampled_pairs
from mechaudit.tau.rubric import ROLES
from mechaudit.tau.simulate import SyntheticPool


@dataclass(frozen=True)
class LLMCalibration:
    """Result of :func:`llm_tau_calibration`.

    ``fits``: one row per (role, method): tau, se, se_robust, at_bound, n_pairs (usable verdicts),
    n_excluded (replies still invalid after repair, dropped), tie_share, sign_agreement.
    ``judged``: the verdicts (role, a, b, delta, weight, judgement, strength). ``ledger``: calls,
    tokens and estimated USD per (model, mode) of this run (mode ``api`` = requests sent,
    ``cache`` = answered from ``cache_dir``).
    """

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
    """``tie_share`` and ``sign_agreement`` (share of non-tie verdicts on pairs with a non-zero
    gap whose direction matches the sign of ``delta``; NaN without such verdicts)."""
    tie = judged["judgement"] == "tie"
    decided = judged[~tie & (judged["delta"] != 0)]
    agree = np.where(decided["judgement"] == "better", decided["delta"] > 0, decided["delta"] < 0)
    return {"tie_share": float(tie.mean()) if len(judged) else float("nan"),
            "sign_agreement": float(agree.mean()) if len(decided) else float("nan")}


def calibration_pairs(pool: SyntheticPool | Sequence[Mapping[str, Any]], n_pairs: int = 200,
                      seed: int = 0) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """``(papers, pairs)``: the usable anchor papers and ``n_pairs`` stratified pairs of them
    (:func:`mechaudit.tau.fitting.sample_pairs` with ``seed``)."""
    if n_pairs < 1:
        raise ValueError(f"field 'llm_pairs': must be >= 1, got {n_pairs}")
    papers = anchor_papers(pool.papers if isinstance(pool, SyntheticPool) else pool)
    return papers, sample_pairs(anchor_table(papers), n_pairs, seed=seed)


def calibration_requests(pool: SyntheticPool | Sequence[Mapping[str, Any]], model: str = DEFAULT_JUDGE_MODEL,
                         n_pairs: int = 200, roles: Sequence[str] = ROLES, seed: int = 0) -> list[Any]:
    """The requests :func:`llm_tau_calibration` sends first (one per role and pair, before any
    repair), without sending them: for cost estimates and cache checks."""
    from mechaudit.tau.cards import build_paper_card

    papers, pairs = calibration_pairs(pool, n_pairs, seed)
    by_id = {p["paper_id"]: p for p in papers}
    cards = [(build_paper_card(by_id[a]), build_paper_card(by_id[b])) for a, b in zip(pairs["a"], pairs["b"])]
    judge = BlindJudge(backend="replay", model=model, client=_NoClient())
    return [r for role in roles for r in judge.pair_requests(role, cards)]


class _NoClient:
    """Stands in for a client when requests are only built, never sent."""

    backend = "replay"


def llm_tau_calibration(
    pool: SyntheticPool | Sequence[Mapping[str, Any]],
    backend: str,
    model: str = DEFAULT_JUDGE_MODEL,
    n_pairs: int = 200,
    roles: Sequence[str] = ROLES,
    seed: int = 0,
    cache_dir: str | os.PathLike[str] | None = None,
    methods: Sequence[str] = ("grid", "mle"),
    client: Any = None,
) -> LLMCalibration:
    """Fit tau per role from a real blind judge's verdicts on ``n_pairs`` stratified pairs of ``pool``.

    ``backend``: "anthropic" (needs ``ANTHROPIC_API_KEY``) or "replay" (recorded answers only);
    ``cache_dir``: the response cache (default ``data/llm_cache``); ``client``: an
    :class:`mechaudit.llm.LLMClient` to use instead (tests pass one on a fake transport; then
    ``cache_dir`` is the client's). The same pairs (seeded by ``seed``) go to every role: one
    request per pair and role, plus repair requests for invalid replies. See the module docstring
    for what a fit on the synthetic pool can and cannot mean.
    """
    backend = Backend.llm(backend).value  # one-line error for 'reference' or a typo
    papers, pairs = calibration_pairs(pool, n_pairs, seed)
    if client is None:
        from mechaudit.llm import get_client

        client = get_client(backend=backend, cache_dir=cache_dir)
    judge = BlindJudge(backend=backend, model=model, client=client)
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
    return LLMCalibration(pd.DataFrame(rows), judged_all, client.ledger(), backend, model)

