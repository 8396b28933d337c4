"""The process-wide LLM session that notebooks still use: ``begin`` in a chapter's set-up cell,
``report`` in its last cell.

Each chapter runs in its own kernel, so "this process" is "this chapter run". :data:`SESSION` is one
:class:`~mechaudit.llm.session.LLMSession`; a client created without a ``session`` adds its ledger to
it. These wrappers go once the chapters open their own sessions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

import pandas as pd

from mechaudit.llm.ledger import UsageLedger
from mechaudit.llm.session import LLMSession, check_max_usd
from mechaudit.llm.session import combined_ledger as _combined

SESSION = LLMSession()


def session() -> LLMSession:
    """The usage session of this process."""
    return SESSION


def begin(max_usd: float | None = None, batch: bool = False) -> None:
    """Start a chapter's LLM accounting: ``max_usd`` (None = no limit; 0 = answers from the cache
    only, what a run's budget leaves when it is spent) caps what the clients of this
    process may spend; ``batch=True`` sends bulk requests through the Message Batches API (half
    price, answers within 24 h, usually minutes). Clears the ledgers of earlier clients."""
    max_usd = check_max_usd(max_usd)
    from mechaudit.errors import use_warning_style

    use_warning_style()  # a torn cache line is reported once, as one line
    SESSION.max_usd = max_usd
    SESSION.batch = bool(batch)
    SESSION.ledgers.clear()
    SESSION._reserved = 0.0


def register(ledger: UsageLedger) -> None:
    """Count ``ledger`` towards this process's budget and report."""
    SESSION.add(ledger)


def combined_ledger(ledgers: Sequence[UsageLedger] | None = None) -> pd.DataFrame:
    """The ledgers of ``ledgers`` (default: every client of this process) summed per (model, mode)."""
    return _combined(SESSION.ledgers if ledgers is None else ledgers)


def report(backend: str, pairs: int | None = None) -> pd.DataFrame:
    """This process's usage table (:meth:`LLMSession.usage_table`)."""
    return SESSION.usage_table(backend, pairs)


def progress_stream() -> IO[str]:
    """Where this process's progress bars go (:meth:`LLMSession.progress_stream`)."""
    return SESSION.progress_stream()
