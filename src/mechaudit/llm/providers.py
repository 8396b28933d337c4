"""Which API a model name goes to, and the OpenAI chat-completions adapter.

Routing (:func:`route_model`): an explicit ``"<provider>:"`` prefix wins (``"anthropic:..."``,
``"openai:..."``); otherwise a name starting with ``gpt-``, ``chatgpt-`` or ``o<digit>`` goes to
OpenAI and every other name to Anthropic, so any Anthropic model can be named as the API spells
it. :func:`canonical_model` drops a prefix that routing would infer anyway (``"openai:gpt-5.5"`` ->
``"gpt-5.5"``), so both spellings share one cache key and one ledger row.

The OpenAI path is an optional extra (``pip install 'mechaudit[openai]'``): the ``openai`` SDK is
imported only when the first uncached OpenAI request is sent, and the key only ever comes from the
``OPENAI_API_KEY`` environment variable. A request becomes one Chat Completions call (system prompt
as the first message, ``max_tokens`` as ``max_completion_tokens``) and the reply becomes the same
record the cache stores for a Messages API reply: text, model, stop_reason, id and usage with
``input_tokens`` = uncached prompt tokens, ``cache_read_input_tokens`` = cached prompt tokens,
``output_tokens`` = completion tokens (reasoning included). Cache, replay, ledger and the blindness
guard are the client's and therefore identical for both providers. OpenAI requests are never sent
through the Anthropic Message Batches API; with ``batch=True`` they go through chat completions.

Sampling: OpenAI's reasoning models (names matching ``OPENAI_FIXED_TEMPERATURE``) accept only their
default temperature; for them ``temperature`` is not sent and the cache record says so
(``"temperature_sent": false``). The request's temperature stays part of the cache key. Their
reasoning tokens count against ``max_completion_tokens``: give such a judge a larger ``max_tokens``
if replies come back empty with ``stop_reason`` "length".
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mechaudit.llm.request import LLMRequest

PROVIDERS = ("anthropic", "openai")
DEFAULT_PROVIDER = "anthropic"
OPENAI_API_KEY_ENV = "OPENAI_API_KEY"
OPENAI_EXTRA = "pip install 'mechaudit[openai]'"
#: model names routed to OpenAI without a prefix
OPENAI_NAME = re.compile(r"^(gpt-|chatgpt-|o\d)")
#: OpenAI models that reject any temperature but their default (temperature is then not sent)
OPENAI_FIXED_TEMPERATURE = re.compile(r"^(o\d|gpt-5)")


class MissingProviderSDKError(ImportError):
    """The SDK of a model's provider is not installed (the message names the pip extra)."""


def route_model(model: str) -> tuple[str, str]:
    """``(provider, model name sent to that provider's API)`` for a model name.

    >>> route_model("claude-opus-4-6"), route_model("gpt-5.5"), route_model("openai:ft:my-judge")
    (('anthropic', 'claude-opus-4-6'), ('openai', 'gpt-5.5'), ('openai', 'ft:my-judge'))
    """
    model = str(model).strip()
    prefix, sep, rest = model.partition(":")
    if sep and prefix in PROVIDERS:
        if not rest:
            raise ValueError(f"model {model!r}: no model name after the provider prefix")
        return prefix, rest
    return ("openai" if OPENAI_NAME.match(model) else DEFAULT_PROVIDER), model


def canonical_model(model: str) -> str:
    """``model`` without a provider prefix that routing would infer anyway (cache keys, ledger)."""
    provider, name = route_model(model)
    inferred = "openai" if OPENAI_NAME.match(name) else DEFAULT_PROVIDER
    return name if provider == inferred else f"{provider}:{name}"


def provider_of(model: str) -> str:
    """The provider a model name is routed to."""
    return route_model(model)[0]


def import_openai() -> Any:
    """The ``openai`` module, or :class:`MissingProviderSDKError` naming the extra to install."""
    try:
        import openai
    except ImportError as exc:
        raise MissingProviderSDKError(
            f"OpenAI models need the optional OpenAI SDK: {OPENAI_EXTRA}"
        ) from exc
    return openai


def openai_sdk(api_key: str, *, http_client: Any = None, max_retries: int = 4, timeout: float = 600.0) -> Any:
    """An ``openai.OpenAI`` client (``http_client``: an httpx2 client, e.g. over a mock transport)."""
    openai = import_openai()
    return openai.OpenAI(api_key=api_key, http_client=http_client, max_retries=max_retries, timeout=timeout)


def sends_temperature(api_model: str) -> bool:
    """False for OpenAI models that accept only their default temperature."""
    return not OPENAI_FIXED_TEMPERATURE.match(api_model)


def openai_params(request: LLMRequest) -> dict[str, Any]:
    """The Chat Completions body for ``request``: model, messages (system first), token limit and,
    where the model accepts one, temperature."""
    _, api_model = route_model(request.model)
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages += [{"role": m.role, "content": m.text()} for m in request.messages]
    params: dict[str, Any] = {
        "model": api_model,
        "messages": messages,
        "max_completion_tokens": request.max_tokens,
    }
    if request.temperature is not None and sends_temperature(api_model):
        params["temperature"] = request.temperature
    return params


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
    """One Chat Completions call: ``(response record, extra cache fields)``."""
    params = openai_params(request)
    completion = sdk.chat.completions.create(**params)
    return openai_record(completion), {"provider": "openai", "temperature_sent": "temperature" in params}
