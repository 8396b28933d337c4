"""Which provider's API a model name goes to (:func:`route_model`), and the one spelling of a model
name that cache keys and the ledger use (:func:`canonical_model`).

An explicit ``"<provider>:"`` prefix wins (``"anthropic:..."``, ``"openai:..."``); otherwise a name
starting with ``gpt-``, ``chatgpt-`` or ``o<digit>`` goes to OpenAI and every other name to
Anthropic, so any Anthropic model can be named as the API spells it.
"""

from __future__ import annotations

import re

ANTHROPIC, OPENAI = "anthropic", "openai"  # provider names (not backends: see mechaudit.backends)
PROVIDERS = (ANTHROPIC, OPENAI)
DEFAULT_PROVIDER = ANTHROPIC
#: model names routed to OpenAI without a prefix
OPENAI_NAME = re.compile(r"^(gpt-|chatgpt-|o\d)")


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
