"""Bulk calls through the Message Batches API, resumable after a crash.

First collect every batch a previous process submitted but never collected (``batches.jsonl``), then
submit the uncached requests in chunks (``custom_id`` = cache key), recording each batch id at once,
poll until it has ended and cache every succeeded result: a process that dies while polling resumes
polling on the next run instead of paying twice.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tqdm import tqdm

from mechaudit.llm.batchstate import BatchState
from mechaudit.llm.blind import check_request_blind
from mechaudit.llm.cache import ResponseCache
from mechaudit.llm.errors import BatchError, ReplayMissError
from mechaudit.llm.ledger import UsageLedger
from mechaudit.llm.providers import is_anthropic
from mechaudit.llm.records import message_record
from mechaudit.llm.request import LLMRequest, Usage
from mechaudit.llm.session import LLMSession

__all__ = ["BatchError", "BatchState", "run_batches"]


def _wait_until_ended(sdk: Any, batch_id: str, poll_interval: float, max_wait: float | None, bar: tqdm) -> None:
    start = time.monotonic()
    while True:
        batch = sdk.messages.batches.retrieve(batch_id)
        counts = batch.request_counts
        bar.set_postfix_str(f"{batch_id}: {batch.processing_status}, {counts.processing} processing")
        if batch.processing_status == "ended":
            return
        if max_wait is not None and time.monotonic() - start > max_wait:
            raise TimeoutError(
                f"batch {batch_id} still {batch.processing_status} after {max_wait} s; its id is "
                f"stored in the batch state file, so running again resumes polling"
            )
        time.sleep(poll_interval)


def _collect(sdk: Any, cache: ResponseCache, ledger: UsageLedger, extra: Mapping[str, Any], batch_id: str,
             requests: dict[str, LLMRequest], bar: tqdm) -> dict[str, str]:
    """Write the batch's succeeded results into ``cache`` and ``ledger``; returns the failed keys."""
    failed: dict[str, str] = {}
    for item in sdk.messages.batches.results(batch_id):
        key, result = item.custom_id, item.result
        if result.type == "succeeded":
            record = message_record(result.message)
            cache.put(key, record, requests.get(key), source="batch", extra={**extra, "batch_id": batch_id})
            model = requests[key].model if key in requests else record["model"]
            ledger.add(model, "batch", Usage(**record["usage"]), key=key)
        else:
            detail = getattr(getattr(result, "error", None), "error", None)
            failed[key] = result.type + (f" ({getattr(detail, 'message', '')})" if detail else "")
        bar.update(1)
    return failed


def _uncached_anthropic(requests: Sequence[LLMRequest], cache: ResponseCache) -> dict[str, LLMRequest]:
    """Key -> request of the uncached requests for Anthropic models (blind-checked, deduplicated).
    OpenAI models are not sent through Anthropic batches: ``complete`` calls them one by one."""
    todo: dict[str, LLMRequest] = {}
    for request in requests:
        check_request_blind(request)
        if request.key not in cache and is_anthropic(request.model):
            todo.setdefault(request.key, request)
    return todo


def _submit_and_collect(api, chunk: list[LLMRequest], cache: ResponseCache, ledger: UsageLedger,
                        state: BatchState, message_params, extra: dict, todo: dict, bar, poll_interval: float,
                        max_wait: float | None, session: LLMSession) -> tuple[str, dict[str, str]]:
    """Submit one batch (its cost reserved against the budget while it runs), wait for it, cache its
    results; returns the batch id and the keys that failed with their reasons."""
    reserved = session.reserve(chunk, ledger.prices, batch=True)  # budget check
    try:
        batch = api.messages.batches.create(requests=[{"custom_id": r.key, "params": message_params(r)}
                                                      for r in chunk])
    except BaseException:
        session.release(reserved)
        raise
    state.append({"event": "submitted", "batch_id": batch.id, "keys": [r.key for r in chunk]})
    try:
        _wait_until_ended(api, batch.id, poll_interval, max_wait, bar)
        failed = _collect(api, cache, ledger, extra, batch.id, todo, bar)
    finally:
        session.release(reserved)
    state.append({"event": "collected", "batch_id": batch.id})
    return batch.id, failed


def _resume(api, batch_id: str, cache: ResponseCache, ledger: UsageLedger, state: BatchState, extra: dict,
            todo: dict, bar, poll_interval: float, max_wait: float | None, failed: dict[str, str]) -> bool:
    """Wait for and collect a batch a previous process submitted (failures added to ``failed``);
    False if the batch no longer exists (its uncached requests are then submitted again)."""
    import anthropic  # defers the anthropic SDK: an offline run never loads it

    try:
        _wait_until_ended(api, batch_id, poll_interval, max_wait, bar)
        failed.update(_collect(api, cache, ledger, extra, batch_id, todo, bar))
    except anthropic.NotFoundError:  # deleted, or from another account
        warnings.warn(f"batch {batch_id} from {state.path} no longer exists; its uncached "
                      f"requests are submitted again", stacklevel=2)
        state.append({"event": "collected", "batch_id": batch_id, "lost": True})
        return False
    state.append({"event": "collected", "batch_id": batch_id})
    return True


def run_batches(
    requests: Sequence[LLMRequest],
    *,
    cache: ResponseCache,
    ledger: UsageLedger,
    sdk: Callable[[], Any] | None,
    message_params: Callable[[LLMRequest], dict[str, Any]],
    api_version: str | None = None,
    poll_interval: float = 30.0,
    batch_size: int = 10_000,
    max_wait: float | None = None,
    progress: bool = False,
    session: LLMSession,
) -> list[str]:
    """Fill ``cache`` for the uncached ``requests`` of Anthropic models via Message Batches (others are
    left for ``complete``); returns the batch ids polled (resumed ones first); :class:`BatchError` if
    some results did not succeed.

    From :meth:`LLMClient.prefetch_batch`: ``ledger`` counts tokens and holds the prices; ``sdk()``
    returns the ``anthropic.Anthropic`` client, called only when something must be sent (``None``:
    replay, a miss raises :class:`ReplayMissError`); ``message_params(request)``: the Messages API
    parameters; ``session``: the budget the batches are reserved against."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    todo = _uncached_anthropic(requests, cache)
    if sdk is None:  # replay: the cache only
        if todo:
            raise ReplayMissError(next(iter(todo.values())), cache.path)
        return []
    state = BatchState(cache.directory)
    pending = state.pending()
    if not todo and not pending:
        return []
    api = sdk()
    extra = {"api_version": api_version}
    used: list[str] = []
    failed: dict[str, str] = {}
    bar = tqdm(total=len(todo) + sum(map(len, pending.values())), desc="LLM batch", disable=not progress,
               file=session.progress_stream())
    try:
        for batch_id in pending:  # resume: poll what a previous process already paid for
            if _resume(api, batch_id, cache, ledger, state, extra, todo, bar, poll_interval, max_wait, failed):
                used.append(batch_id)
        remaining = [r for k, r in todo.items() if k not in cache and k not in failed]
        for start in range(0, len(remaining), batch_size):
            chunk = remaining[start : start + batch_size]
            batch_id, chunk_failed = _submit_and_collect(api, chunk, cache, ledger, state, message_params, extra,
                                                         todo, bar, poll_interval, max_wait, session)
            failed.update(chunk_failed)
            used.append(batch_id)
    finally:
        bar.close()
    failed = {k: v for k, v in failed.items() if k not in cache}
    if failed:
        raise BatchError(failed)
    return used
