"""The LLM client: cache-first ``complete``, structured ``complete_json``, bounded-parallel
``complete_many``, Message Batches prefetch, and a usage ledger.

The backend name sets the client's cache policy (:attr:`LLMClient.send`):

- ``anthropic``: send what the cache lacks through the official ``anthropic`` SDK (Messages API) and
  record the answer. The key is read only from the ``ANTHROPIC_API_KEY`` environment variable, when
  the first uncached request needs it.
- ``replay``: the cache only; the client never sends, and a miss raises :class:`ReplayMissError`
  naming the request.

Both answer from the cache first, so re-running finished work makes no HTTP call. A sending client
sends each request to its model's provider (:mod:`mechaudit.llm.providers`): OpenAI models
through the optional ``openai`` SDK (key from ``OPENAI_API_KEY``), everything else through Anthropic.
With ``openai_base_url`` (or ``OPENAI_BASE_URL`` in the environment) the OpenAI-routed requests go
to that OpenAI-compatible server instead (vLLM, Ollama, llama.cpp's server): the endpoint is part of
their cache key, a loopback server needs no key, and the ledger labels those calls ``local``.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd
from pydantic import BaseModel
from tqdm import tqdm

from mechaudit.backends import LLM_BACKENDS, Backend
from mechaudit.deprecation import keywords_were_positional
from mechaudit.errors import MechauditError
from mechaudit.llm.batch import run_batches
from mechaudit.llm.blind import check_request_blind
from mechaudit.llm.cache import ResponseCache, default_cache_dir  # noqa: F401 - re-exported
from mechaudit.llm.errors import (  # noqa: F401 - re-exported: the names' public home stays here
    API_KEY_ENV,
    APIReplyError,
    MissingAPIKeyError,
    ReplayMissError,
)
from mechaudit.llm.jsonout import (
    InvalidJSONError,
    JSONResult,
    describe_error,
    parse_reply,
    repair_request,
)
from mechaudit.llm.ledger import UsageLedger, load_prices, record_sent
from mechaudit.llm.providers import (
    LOCAL_PLACEHOLDER_KEY,
    OPENAI_API_KEY_ENV,
    import_openai,
    is_loopback,
    openai_base_url,
    openai_sdk,
    openai_send,
    request_timeout,
    with_endpoint,
)
from mechaudit.llm.records import check_message, message_record, message_text  # noqa: F401 - re-exported
from mechaudit.llm.request import LLMRequest, LLMResponse, Usage
from mechaudit.llm.routing import route_model
from mechaudit.llm.session import PROGRESS_MIN_REQUESTS, LLMSession

if TYPE_CHECKING:
    import httpx
    import httpx2

M = TypeVar("M", bound=BaseModel)

BACKENDS = LLM_BACKENDS  # ("anthropic", "replay"); the names live in mechaudit.backends
# The SDK 2.x default API version (2026-10-21) rejects temperature/top_p/top_k; the paper's
# setup (temperature 0) needs the version that still accepts them.
SAMPLING_API_VERSION = "2023-06-01"
FIRST_VERSION_WITHOUT_SAMPLING = "2026-10-21"


class LLMClient:
    """Cache-first client over ``cache``; :func:`get_client` makes one over a cache folder.

    ``backend``: 'anthropic' sends what the cache lacks, 'replay' answers from the cache only
    (:attr:`send`); ``http_client``: the HTTP client the SDK uses (tests pass one built on a mock
    transport); ``max_concurrency``: calls in flight in :meth:`complete_many`; ``max_retries``: SDK
    retries for 429/5xx/timeouts/connection errors; ``timeout``: seconds one request may take before
    it fails and is retried (None: ``MECHAUDIT_LLM_TIMEOUT`` from the environment, which
    ``mechaudit execute --timeout`` sets for the chapters, else 600); ``api_version``: the
    ``anthropic-version`` header (the default accepts ``temperature``); ``prices``: price table
    (mapping or YAML path; default ``params/prices.yaml``); ``openai_base_url``: an OpenAI-compatible
    server for the OpenAI-routed models (default: ``OPENAI_BASE_URL`` from the environment, if set);
    ``session``: the :class:`~mechaudit.llm.session.LLMSession` whose budget the client spends
    (default: a private, unlimited session that counts this client only).
    """

    def __init__(
        self,
        backend: str,
        cache: ResponseCache,
        *,
        http_client: httpx.Client | httpx2.Client | None = None,
        max_concurrency: int = 4,
        max_retries: int = 4,
        timeout: float | None = None,
        api_version: str | None = SAMPLING_API_VERSION,
        prices: Mapping[str, Any] | str | os.PathLike[str] | None = None,
        openai_base_url: str | None = None,
        session: LLMSession | None = None,
    ) -> None:
        #: the cache policy: True sends what the cache lacks (backend 'anthropic'); False answers from
        #: the cache only and refuses to send (backend 'replay')
        self.send = Backend.llm(backend) is Backend.ANTHROPIC  # one-line BackendError for anything else
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        self.cache = cache
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.timeout = request_timeout(timeout)  # seconds per request (None: MECHAUDIT_LLM_TIMEOUT or 600)
        self.api_version = api_version
        self._http_client = None
        if http_client is not None:
            from mechaudit.llm.http import as_httpx2  # defers httpx: an offline run never loads it

            self._http_client = as_httpx2(http_client)
        self._sdk: Any = None
        self._openai: Any = None  # the OpenAI SDK client, for models routed to OpenAI
        self._sdk_lock = threading.Lock()
        self._inflight: dict[str, threading.Lock] = {}
        self._inflight_lock = threading.Lock()
        self.openai_base_url = _base_url(openai_base_url)
        self._ledger = UsageLedger(load_prices(prices), endpoint=self.openai_base_url)
        #: the session whose budget this client spends and whose usage table counts it (None: a
        #: private, unlimited session of its own)
        self.session = LLMSession() if session is None else session
        self.session.add(self._ledger)

    @property
    def backend(self) -> Backend:
        """The backend name of the cache policy: 'anthropic' if the client sends, else 'replay'."""
        return Backend.ANTHROPIC if self.send else Backend.REPLAY

    # -- SDK ---------------------------------------------------------------------------------
    def _check_sends(self) -> None:
        """``RuntimeError`` unless this client may send requests (a replay client never does)."""
        if not self.send:
            raise RuntimeError(f"backend '{self.backend}' never calls the API")

    def sdk(self) -> Any:
        """The ``anthropic.Anthropic`` client, created on first use (needs ``ANTHROPIC_API_KEY``)."""
        self._check_sends()
        with self._sdk_lock:
            if self._sdk is None:
                import anthropic  # defers the anthropic SDK: an offline run never loads it

                key = os.environ.get(API_KEY_ENV, "").strip()
                if not key:
                    raise MissingAPIKeyError(
                        f"{API_KEY_ENV} is not set. The anthropic backend reads the key only from "
                        f"the environment: run `export {API_KEY_ENV}=...` in the shell that starts "
                        f"Python or Jupyter. Without a key, use backend='replay' (recorded answers "
                        f"in data/llm_cache/) or the offline backend='reference' stand-ins."
                    )
                headers = {"anthropic-version": self.api_version} if self.api_version else None
                self._sdk = anthropic.Anthropic(
                    api_key=key,
                    http_client=self._http_client,
                    max_retries=self.max_retries,
                    timeout=self.timeout,
                    default_headers=headers,
                )
        return self._sdk

    def message_params(self, request: LLMRequest) -> dict[str, Any]:
        """The Messages API body for ``request`` (also the ``params`` of a batch entry).

        The system prompt goes as one text block marked ``cache_control: ephemeral`` when
        ``request.cache_system`` (prompts below the model's minimum cacheable length are simply
        not cached by the API). ``temperature`` is sent only when not None.
        """
        params: dict[str, Any] = {
            "model": route_model(request.model)[1],  # without an "anthropic:" prefix
            "max_tokens": request.max_tokens,
            "messages": [m.model_dump() for m in request.messages],
        }
        if request.system:
            if request.cache_system:
                params["system"] = [
                    {"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}
                ]
            else:
                params["system"] = request.system
        if request.temperature is not None:
            if self.api_version is None or self.api_version >= FIRST_VERSION_WITHOUT_SAMPLING:
                raise ValueError(
                    f"temperature={request.temperature} cannot be sent with API version "
                    f"{self.api_version or 'SDK default'}; use api_version={SAMPLING_API_VERSION!r} "
                    f"or temperature=None"
                )
            params["temperature"] = request.temperature
        return params

    def openai_sdk(self) -> Any:
        """The ``openai.OpenAI`` client for models routed to OpenAI (see
        :mod:`mechaudit.llm.providers`), created on first use; needs ``OPENAI_API_KEY``."""
        self._check_sends()
        with self._sdk_lock:
            if self._openai is None:
                import_openai()  # MissingProviderSDKError (names the pip extra) before the key check
                key = os.environ.get(OPENAI_API_KEY_ENV, "").strip()
                local = self.openai_base_url is not None and is_loopback(self.openai_base_url)
                if not key and local:
                    key = LOCAL_PLACEHOLDER_KEY  # a server on this machine needs no key
                if not key:
                    raise MissingAPIKeyError(
                        f"{OPENAI_API_KEY_ENV} is not set. OpenAI models read the key only from the "
                        f"environment: run `export {OPENAI_API_KEY_ENV}=...` in the shell that starts "
                        f"Python or Jupyter, or use backend='replay' with recorded answers."
                    )
                self._openai = openai_sdk(key, http_client=self._http_client, max_retries=self.max_retries,
                                          timeout=self.timeout, base_url=self.openai_base_url)
        return self._openai

    def routed(self, request: LLMRequest) -> LLMRequest:
        """``request`` as this client sends it: stamped with the custom server an OpenAI-routed
        request goes to (part of its cache key; see :func:`~mechaudit.llm.providers.with_endpoint`)."""
        return with_endpoint(request, self.openai_base_url)

    def _send_record(self, request: LLMRequest) -> tuple[dict[str, Any], dict[str, Any]]:
        """One API call routed by model name: ``(response record, extra cache fields)``."""
        if route_model(request.model)[0] == "openai":
            try:
                record, extra = openai_send(self.openai_sdk(), request)
            except ValueError as exc:  # a 200 whose body is not a chat completion
                raise APIReplyError(request, str(exc)) from None
            return record, {"source": "chat.completions", "extra": extra}
        return self._send(request), {"source": "messages", "extra": {"api_version": self.api_version}}

    def _send(self, request: LLMRequest) -> dict[str, Any]:
        params = self.message_params(request)
        temperature = params.pop("temperature", None)
        extra = {"temperature": temperature} if temperature is not None else None
        # temperature travels in extra_body: SDK 2.x dropped the keyword argument.
        sdk = self.sdk()
        try:
            message = sdk.messages.create(**params, extra_body=extra)
        except ValueError as exc:  # a 200 whose body claims JSON but does not parse
            raise APIReplyError(request, f"the body is not JSON ({exc})") from None
        check_message(message, request)
        return message_record(message)

    # -- single calls ------------------------------------------------------------------------
    def _response(self, request: LLMRequest, record: dict[str, Any], cached: bool) -> LLMResponse:
        return LLMResponse(
            text=record["text"],
            key=request.key,
            model=record.get("model") or request.model,
            usage=Usage(**record.get("usage", {})),
            cached=cached,
            backend=self.backend,
            stop_reason=record.get("stop_reason"),
        )

    def complete(self, request: LLMRequest) -> LLMResponse:
        """Answer ``request`` from the cache, else (anthropic) call the API and record the answer.

        Raises :class:`BlindnessError` before any lookup or send if the prompt contains one of
        ``request.forbidden_terms``; :class:`ReplayMissError` on a replay miss.
        """
        check_request_blind(request)
        request = self.routed(request)
        key = request.key
        hit = self.cache.get(key)
        if hit is not None:
            self._ledger.add(request.model, "cache", key=key)
            return self._response(request, hit, cached=True)
        if not self.send:
            raise ReplayMissError(request, self.cache.path)
        with self._inflight_lock:
            lock = self._inflight.setdefault(key, threading.Lock())
        with lock:  # identical concurrent requests: one API call, the others read the cache
            hit = self.cache.get(key)
            if hit is not None:
                self._ledger.add(request.model, "cache", key=key)
                return self._response(request, hit, cached=True)
            reserved = self.session.reserve([request], self._ledger.prices)  # BudgetExceededError
            try:
                record_sent(self.cache.directory, key)  # a run stopped mid-request can tell it was paid for
                record, fields = self._send_record(request)
                self.cache.put(key, record, request, **fields)
                mode = "local" if request.endpoint is not None else "api"
                self._ledger.add(request.model, mode, Usage(**record["usage"]), key=key)
            finally:  # the real cost is in the ledger before the reservation goes
                self.session.release(reserved)
        return self._response(request, record, cached=False)

    def complete_json(
        self,
        request: LLMRequest,
        schema: type[M],
        json_retries: int = 2,
        strict: bool = True,
    ) -> JSONResult[M]:
        """Call, parse the reply's JSON and validate it with ``schema`` (a custom OpenAI-compatible
        server also gets the schema as ``response_format``: ``LLMRequest.json_schema``).

        An invalid reply gets up to ``json_retries`` repair requests quoting the error. Still
        invalid: ``InvalidJSONError`` if ``strict``, else ``JSONResult(invalid=True)``.
        """
        if json_retries < 0:
            raise ValueError(f"json_retries must be >= 0, got {json_retries}")
        current = with_schema(request, schema)
        for attempt in range(1, json_retries + 2):
            response = self.complete(current)
            try:
                value = parse_reply(response.text, schema)
                return JSONResult(value=value, invalid=False, error=None, response=response, attempts=attempt)
            except ValueError as exc:
                error = describe_error(exc)
            if attempt <= json_retries:
                current = repair_request(current, response.text, error, schema)
        if strict:
            raise InvalidJSONError(
                f"request {request.key}: reply still invalid for {schema.__name__} after "
                f"{json_retries} repair request(s): {error} ({request.summary()}). To ask again, raise "
                f"json_retries (in a chapter: -p json_retries {json_retries + 2}): the attempts so far "
                f"are answered from the cache and only the new repair requests are sent"
            )
        return JSONResult(value=None, invalid=True, error=error, response=response, attempts=json_retries + 1)

    # -- many calls --------------------------------------------------------------------------
    def complete_many(
        self,
        requests: Sequence[LLMRequest],
        schema: type[M] | Sequence[type[BaseModel] | None] | None = None,
        progress: bool = False,
        *,
        json_retries: int = 2,
        strict: bool = True,
        batch: bool = False,
        poll_interval: float = 30.0,
        summary: bool = False,
    ) -> list[LLMResponse] | list[JSONResult[M]]:
        """Answer ``requests`` with at most ``max_concurrency`` calls in flight; results are in
        input order. With ``schema`` (one model for all, or a sequence with one model or None per
        request) each result validated by a model is a :class:`JSONResult`, repaired up to
        ``json_retries`` times; ``strict=False`` marks a still-invalid reply instead of raising
        (see :meth:`complete_json`). ``batch=True`` first
        sends every uncached request through the Message Batches API (see :meth:`prefetch_batch`);
        repairs of invalid JSON then go through the Messages API. The first error cancels the
        calls not yet started and is raised; finished answers stay cached. ``summary=True`` prints
        the usage ledger (of this client so far) to stderr at the end.
        """
        schemas = _per_request(schema, len(requests))
        requests = [self.routed(with_schema(r, m)) for r, m in zip(requests, schemas)]
        session = self.session
        uncached = sum(r.key not in self.cache for r in requests)
        progress = progress or uncached >= PROGRESS_MIN_REQUESTS  # long phases: a bar on the terminal
        if batch or (session.batch and self.send and uncached > 1):
            self.prefetch_batch(requests, poll_interval=poll_interval, progress=progress)

        def one(i: int) -> Any:
            if schemas[i] is None:
                return self.complete(requests[i])
            return self.complete_json(requests[i], schemas[i], json_retries=json_retries, strict=strict)

        results: list[Any] = [None] * len(requests)
        models = sorted({r.model for r in requests})
        bar = tqdm(total=len(requests), desc=f"LLM calls ({', '.join(models)})", disable=not progress,
                   file=session.progress_stream(), mininterval=1.0)
        misses = []
        for i, req in enumerate(requests):  # cache hits inline: no thread hand-off per hit
            if req.key in self.cache:
                results[i] = one(i)
                bar.update(1)
            else:
                misses.append(i)
        try:
            self._answer_parallel(one, misses, results, bar)
        finally:
            bar.close()
        if summary:
            print(self.ledger_summary(), file=sys.stderr)
        return results

    def _answer_parallel(self, one: Callable[[int], Any], indices: list[int], results: list, bar) -> None:
        """``results[i] = one(i)`` for each ``i`` in ``indices`` with at most ``max_concurrency`` calls
        in flight; the first error cancels the calls not yet started and is raised."""
        pool = ThreadPoolExecutor(max_workers=self.max_concurrency, thread_name_prefix="mechaudit-llm")
        try:
            futures: dict[Future[Any], int] = {pool.submit(one, i): i for i in indices}
            for future in as_completed(futures):  # each answer as it comes back: the bar moves with them
                error = future.exception()
                if error is not None:
                    for other in futures:
                        other.cancel()
                    raise error
                results[futures[future]] = future.result()
                bar.update(1)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def prefetch_batch(
        self,
        requests: Sequence[LLMRequest],
        *,
        poll_interval: float = 30.0,
        batch_size: int = 10_000,
        max_wait: float | None = None,
        progress: bool = False,
    ) -> list[str]:
        """Put the answers of all uncached ``requests`` into the cache via the Message Batches API;
        returns the batch ids used. See :mod:`mechaudit.llm.batch`."""
        return run_batches(
            requests,
            cache=self.cache,
            ledger=self._ledger,
            sdk=self.sdk if self.send else None,
            message_params=self.message_params,
            api_version=self.api_version,
            poll_interval=poll_interval,
            batch_size=batch_size,
            max_wait=max_wait,
            progress=progress,
            session=self.session,
        )

    # -- accounting --------------------------------------------------------------------------
    def ledger(self) -> pd.DataFrame:
        """Calls, tokens and estimated USD cost per (model, mode) since this client was made."""
        return self._ledger.table()

    def ledger_summary(self) -> str:
        """The ledger as printable text with the estimated total."""
        return self._ledger.summary()


@keywords_were_positional("http_client", "max_concurrency")
def get_client(backend: str = "replay", cache_dir: str | os.PathLike[str] | None = None, **options: Any) -> LLMClient:
    """An :class:`LLMClient` for ``backend`` ('anthropic' or 'replay') over the cache in ``cache_dir``
    (default ``data/llm_cache``); ``options`` are the client's keywords (``http_client``,
    ``max_concurrency``, ``session``, ...: see :class:`LLMClient`)."""
    return LLMClient(backend, ResponseCache(default_cache_dir() if cache_dir is None else cache_dir), **options)


def check_client(client: Any, field: str = "client") -> Any:
    """``client`` unchanged when it is an LLM client or None (offline); a backend name given in its
    place raises one line (library code takes a client, made once per chapter run)."""
    if isinstance(client, str):
        raise TypeError(f"field {field!r}: got the name {client!r}, not an LLM client; pass "
                        "ChapterContext.open(params).client or mechaudit.llm.get_client(...), or None offline")
    return client


def require_client(client: Any, who: str, hint: str = "") -> Any:
    """``client`` for a step that runs only through an LLM (``who`` names it in the error); None
    raises one line, with ``hint`` after it, and a backend name fails as in :func:`check_client`."""
    if check_client(client) is None:
        raise ValueError(f"{who} needs an LLM client (mechaudit.llm.get_client){hint}")
    return client


def _base_url(explicit: str | None) -> str | None:
    """The client's custom OpenAI-compatible server (normalised), or a one-line ``MechauditError``."""
    try:
        return openai_base_url(explicit)
    except ValueError as err:
        raise MechauditError(str(err), field="openai_base_url") from None


def with_schema(request: LLMRequest, schema: type[BaseModel] | None) -> LLMRequest:
    """``request`` carrying ``schema``'s JSON schema (``LLMRequest.json_schema``; sent and part of the
    cache key only for a custom OpenAI-compatible server); unchanged without a schema or with one set."""
    if schema is None or request.json_schema is not None:
        return request
    return LLMRequest.model_validate({**request.model_dump(), "json_schema": schema.model_json_schema()})


def _per_request(schema: Any, n: int) -> list[Any]:
    """One output model (or None) per request: ``schema`` repeated, or the given sequence of ``n``."""
    if schema is None or isinstance(schema, type):
        return [schema] * n
    schemas = list(schema)
    if len(schemas) != n:
        raise ValueError(f"{len(schemas)} schemas for {n} requests: give one per request")
    return schemas
