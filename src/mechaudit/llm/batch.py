"""Bulk calls through the Message Batches API, resumable after a crash.

Flow: collect every batch a previous process submitted but never collected (its id is in the
state file ``batches.jsonl`` beside the cache), then submit the still-uncached requests in chunks
(``custom_id`` = cache key), record each batch id immediately, poll until the batch has ended and
write every succeeded result into the cache. A process that dies while polling therefore resumes
polling on the next run instead of paying for a second submission.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from mechaudit.llm import usage
from mechaudit.llm.blind import check_request_blind
from mechaudit.llm.cache import STATE_FILENAME, BatchState  # noqa: F401 - the log lives with the cache index
from mechaudit.llm.client import ReplayMissError, message_record
from mechaudit.llm.providers import provider_of
from mechaudit.llm.request import LLMRequest, Usage

if TYPE_CHECKING:
    from mechaudit.llm.client import LLMClient


class BatchError(RuntimeError):
    """Some batch requests did not succeed; ``failed`` maps cache key -> result type/error."""

    def __init__(self, failed: dict[str, str]) -> None:
        self.failed = failed
        sample = "; ".join(f"{k[:16]}...: {v}" for k, v in list(failed.items())[:5])
        super().__init__(
            f"{len(failed)} batch request(s) did not succeed ({sample}). Succeeded results are "
            f"cached; run again to resubmit only the failed ones."
        )


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


def _collect(client: LLMClient, batch_id: str, requests: dict[str, LLMRequest], bar: tqdm) -> dict[str, str]:
    """Write the batch's succeeded results into the cache; returns the failed keys."""
    sdk = client.sdk()
    failed: dict[str, str] = {}
    for item in sdk.messages.batches.results(batch_id):
        key, result = item.custom_id, item.result
        if result.type == "succeeded":
            record = message_record(result.message)
            client.cache.put(
                key, record, requests.get(key), source="batch",
                extra={"api_version": client.api_version, "batch_id": batch_id},
            )
            model = requests[key].model if key in requests else record["model"]
            client._ledger.add(model, "batch", Usage(**record["usage"]), key=key)
        else:
            detail = getattr(getattr(result, "error", None), "error", None)
            failed[key] = result.type + (f" ({getattr(detail, 'message', '')})" if detail else "")
        bar.update(1)
    return failed


def run_batches(
    client: LLMClient,
    requests: Sequence[LLMRequest],
    *,
    poll_interval: float = 30.0,
    batch_size: int = 10_000,
    max_wait: float | None = None,
    progress: bool = False,
) -> list[str]:
    """Fill the cache for all uncached ``requests`` of Anthropic models via Message Batches; returns
    the batch ids polled (resumed ones first). Raises :class:`BatchError` if some results did not
    succeed. Requests routed to another provider are left for ``complete`` to send one by one."""
    import anthropic  # slow to import: only when a batch is really run
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    todo: dict[str, LLMRequest] = {}
    for request in requests:
        check_request_blind(request)
        # OpenAI models are not sent through Anthropic batches: complete() calls them one by one
        if request.key not in client.cache and provider_of(request.model) == "anthropic":
            todo.setdefault(request.key, request)
    if client.backend == "replay":
        if todo:
            raise ReplayMissError(next(iter(todo.values())), client.cache.path)
        return []
    state = BatchState(client.cache.directory)
    pending = state.pending()
    if not todo and not pending:
        return []
    sdk = client.sdk()
    used: list[str] = []
    failed: dict[str, str] = {}
    bar = tqdm(total=len(todo) + sum(map(len, pending.values())), desc="LLM batch", disable=not progress,
               file=usage.progress_stream())
    try:
        for batch_id in pending:  # resume: poll what a previous process already paid for
            try:
                _wait_until_ended(sdk, batch_id, poll_interval, max_wait, bar)
                failed.update(_collect(client, batch_id, todo, bar))
            except anthropic.NotFoundError:  # deleted, or from another account: resubmit its requests
                warnings.warn(f"batch {batch_id} from {state.path} no longer exists; its uncached "
                              f"requests are submitted again", stacklevel=2)
                state.append({"event": "collected", "batch_id": batch_id, "lost": True})
                continue
            state.append({"event": "collected", "batch_id": batch_id})
            used.append(batch_id)
        remaining = [r for k, r in todo.items() if k not in client.cache and k not in failed]
        for start in range(0, len(remaining), batch_size):
            chunk = remaining[start : start + batch_size]
            reserved = usage.session().reserve(chunk, client._ledger.prices, batch=True)  # budget check
            try:
                batch = sdk.messages.batches.create(
                    requests=[{"custom_id": r.key, "params": client.message_params(r)} for r in chunk]
                )
            except BaseException:
                usage.session().release(reserved)
                raise
            state.append({"event": "submitted", "batch_id": batch.id, "keys": [r.key for r in chunk]})
            try:
                _wait_until_ended(sdk, batch.id, poll_interval, max_wait, bar)
                failed.update(_collect(client, batch.id, todo, bar))
            finally:
                usage.session().release(reserved)
            state.append({"event": "collected", "batch_id": batch.id})
            used.append(batch.id)
    finally:
        bar.close()
    failed = {k: v for k, v in failed.items() if k not in client.cache}
    if failed:
        raise BatchError(failed)
    return used
