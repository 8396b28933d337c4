"""The OpenAI chat-completions adapter and the OpenAI-compatible endpoints.

Routing a model name to its provider is :mod:`mechaudit.llm.routing` (``"openai:gpt-5.5"`` and
``"gpt-5.5"`` share one cache key and one ledger row).

The ``openai`` SDK is an optional extra (``pip install 'mechaudit[openai]'``), imported only when the
first uncached OpenAI request is sent; its key comes only from ``OPENAI_API_KEY``. A request becomes
one Chat Completions call (system prompt first, ``max_tokens`` as ``max_completion_tokens``), and the
reply the record the cache stores for a Messages API reply (``input_tokens`` = uncached prompt
tokens, ``cache_read_input_tokens`` = cached ones, ``output_tokens`` = completion tokens, reasoning
included). OpenAI requests never go through the Anthropic Message Batches API.

An OpenAI-compatible server (vLLM, Ollama, llama.cpp's server) is named by ``OPENAI_BASE_URL`` or the
client's ``openai_base_url``; :func:`with_endpoint` stamps its normalised URL into each request routed
to OpenAI, so two servers never share answers. Such a request also sends its reply's JSON schema as
``response_format``. A loopback server needs no key; its prices are the price table's ``endpoints:``
rows, and the ledger labels its rows ``local``.

OpenAI's reasoning models (``OPENAI_FIXED_TEMPERATURE``) accept only their default temperature: it is
not sent (the record says ``"temperature_sent": false``) but stays part of the cache key. Their
reasoning tokens count against ``max_completion_tokens``: give such a judge a larger ``max_tokens`` if
replies come back empty with ``stop_reason`` "length".
"""

from __future__ import annotations

import ipaddress
import math
import os
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mechaudit.errors import MechauditError
from mechaudit.llm.routing import ANTHROPIC, route_model

if TYPE_CHECKING:
    from mechaudit.llm.request import LLMRequest

OPENAI_API_KEY_ENV = "OPENAI_API_KEY"
#: environment variable naming an OpenAI-compatible server (the OpenAI SDK reads it too)
OPENAI_BASE_URL_ENV = "OPENAI_BASE_URL"
#: the vendor's own endpoint: not a custom one (no endpoint in the cache key)
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
#: the key sent to a loopback server when no OPENAI_API_KEY is set (such servers ignore it)
LOCAL_PLACEHOLDER_KEY = "local-no-key"
OPENAI_EXTRA = "pip install 'mechaudit[openai]'"
#: OpenAI models that reject any temperature but their default (temperature is then not sent)
OPENAI_FIXED_TEMPERATURE = re.compile(r"^(o\d|gpt-5)")


class MissingProviderSDKError(ImportError):
    """The SDK of a model's provider is not installed (the message names the pip extra)."""


def normalize_endpoint(url: str) -> str:
    """``url`` as one canonical string (scheme and host lower case, no trailing slash); a value that
    is not an http(s) URL with a host raises ``ValueError``."""
    text = str(url).strip()
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{text!r} is not an http(s) URL of an OpenAI-compatible server "
                         "(e.g. http://localhost:8000/v1)")
    netloc = parts.hostname.lower() if ":" not in parts.hostname else f"[{parts.hostname.lower()}]"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return f"{parts.scheme.lower()}://{netloc}{parts.path.rstrip('/')}"


def openai_base_url(explicit: str | None = None, environ: Any = None) -> str | None:
    """The custom OpenAI-compatible endpoint in use (normalised): ``explicit``, else
    ``OPENAI_BASE_URL`` from the environment; None for none or for the vendor's own URL."""
    environ = os.environ if environ is None else environ
    value = explicit if explicit else environ.get(OPENAI_BASE_URL_ENV, "").strip()
    if not value:
        return None
    url = normalize_endpoint(value)
    return None if url == OPENAI_DEFAULT_URL else url


#: environment variable with the request timeout in seconds (``mechaudit execute --timeout`` sets it
#: for the chapters' kernels)
TIMEOUT_ENV = "MECHAUDIT_LLM_TIMEOUT"
#: seconds a request may take (the SDKs' own default)
DEFAULT_TIMEOUT = 600.0


def request_timeout(explicit: float | None = None, environ: Any = None, field: str = "timeout") -> float:
    """Seconds one API request may take before it fails (and is retried by the SDK): ``explicit``,
    else ``MECHAUDIT_LLM_TIMEOUT`` from the environment, else ``DEFAULT_TIMEOUT``. A value that is not
    a finite number > 0 raises ``MechauditError`` naming where it came from (``field`` for
    ``explicit``)."""
    environ = os.environ if environ is None else environ
    where, value = (field, explicit) if explicit is not None else (TIMEOUT_ENV, environ.get(TIMEOUT_ENV, "").strip())
    if value in (None, ""):
        return DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if isinstance(value, bool) or not (math.isfinite(seconds) and seconds > 0):
        raise MechauditError(f"must be a number of seconds > 0, got {value!r}", field=where)
    return seconds


def is_loopback(url: str) -> bool:
    """True when ``url``'s host is this machine (``localhost`` or a loopback address)."""
    host = (urlsplit(url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def endpoint_for(model: str, base_url: str | None) -> str | None:
    """The custom endpoint a request for ``model`` goes to: ``base_url`` for a model routed to
    OpenAI, else None (Anthropic models never go to an OpenAI-compatible server)."""
    return base_url if base_url and route_model(model)[0] == "openai" else None


def with_endpoint(request: LLMRequest, base_url: str | None) -> LLMRequest:
    """``request`` stamped with the endpoint it goes to (:func:`endpoint_for`); unchanged when it
    goes to a vendor's API or is already stamped."""
    endpoint = endpoint_for(request.model, base_url)
    if endpoint is None or request.endpoint == endpoint:
        return request
    return type(request).model_validate({**request.model_dump(), "endpoint": endpoint})


def is_anthropic(model: str) -> bool:
    """True if ``model`` is routed to Anthropic (its key is ``ANTHROPIC_API_KEY``; it can batch)."""
    return route_model(model)[0] == ANTHROPIC


def import_openai() -> Any:
    """The ``openai`` module, or :class:`MissingProviderSDKError` naming the extra to install."""
    try:
        import openai  # defers the openai SDK: an offline run never loads it
    except ImportError as exc:
        raise MissingProviderSDKError(f"OpenAI models need the optional OpenAI SDK: {OPENAI_EXTRA}") from exc
    return openai


def openai_sdk(api_key: str, *, http_client: Any = None, max_retries: int = 4, timeout: float = 600.0,
               base_url: str | None = None) -> Any:
    """An ``openai.OpenAI`` client (``http_client``: an httpx2 client, e.g. over a mock transport;
    ``base_url``: an OpenAI-compatible server, None for the SDK's default)."""
    openai = import_openai()
    return openai.OpenAI(api_key=api_key, http_client=http_client, max_retries=max_retries, timeout=timeout,
                         base_url=base_url)


def openai_params(request: LLMRequest) -> dict[str, Any]:
    """The Chat Completions body for ``request``: model, messages (system first), token limit and,
    where the model accepts one, temperature."""
    _, api_model = route_model(request.model)
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages += [{"role": m.role, "content": m.text()} for m in request.messages]
    params: dict[str, Any] = {"model": api_model, "messages": messages, "max_completion_tokens": request.max_tokens}
    if request.temperature is not None and not OPENAI_FIXED_TEMPERATURE.match(api_model):
        params["temperature"] = request.temperature
    if request.endpoint is not None and request.json_schema is not None:
        params["response_format"] = response_format(request.json_schema)
    return params


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions ``response_format`` that constrains a reply to the JSON ``schema`` (vLLM,
    Ollama and llama.cpp's server compile it into a grammar for decoding)."""
    return {"type": "json_schema", "json_schema": {"name": str(schema.get("title", "reply")), "schema": schema,
                                                   "strict": True}}


def openai_record(completion: Any) -> dict[str, Any]:
    """The cache's ``response`` part for a ``ChatCompletion`` (no headers, no credentials)."""
    choices = getattr(completion, "choices", None)
    if not choices:
        shown = completion if isinstance(completion, str) else type(completion).__name__
        raise ValueError(f"OpenAI reply has no choices (body: {str(shown)[:200]!r})")
    choice = choices[0]
    usage = getattr(completion, "usage", None)
    prompt = getattr(usage, "prompt_tokens", 0) or 0
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", 0) or 0
    return {
        "text": choice.message.content or "",
        "model": completion.model,
        "stop_reason": choice.finish_reason,
        "id": completion.id,
        "usage": {
            "input_tokens": max(prompt - cached, 0),
            "output_tokens": getattr(usage, "completion_tokens", 0) or 0,
            "cache_read_input_tokens": cached,
            "cache_creation_input_tokens": 0,
        },
    }


def openai_send(sdk: Any, request: LLMRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    """One Chat Completions call: ``(response record, extra cache fields)``; the extra fields name
    the endpoint of a request sent to a custom server."""
    params = openai_params(request)
    completion = sdk.chat.completions.create(**params)
    extra = {"provider": "openai", "temperature_sent": "temperature" in params}
    if request.endpoint is not None:
        extra["endpoint"] = request.endpoint
    return openai_record(completion), extra
