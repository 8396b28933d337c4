"""The judge-model axis on perturbation pairs (the paper's Figure 5): the same pairs through
several judge models, summarised per model and kind."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from mechaudit.agreement import model_agreement
from mechaudit.rules.audit import percent_different
from mechaudit.rules.base import Pair
from mechaudit.rules.llm_judge import model_verdicts


def model_axis(pairs: Sequence[Pair], models: Sequence[str], client, *, kinds: Sequence[str], order: Sequence[str],
               first=None, **judge_kwargs) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``pairs`` judged by every model of ``models`` through ``client`` (``model_verdicts``; ``first``:
    the first model's decisions, reused; ``judge_kwargs``: rubric, orders, early_stop, instances).

    Returns % judged different per model (rows) and kind (columns in ``order``; ``kinds``: one per
    pair) and the agreement of each pair of models (``agreement.model_agreement``)."""
    verdicts, _ = model_verdicts(pairs, models, client, first=first, **judge_kwargs)
    return percent_different(verdicts.T, kinds=kinds, order=order).T, model_agreement(verdicts)
