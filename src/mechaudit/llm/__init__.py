"""The LLM layer: typed requests, a cache-first client (anthropic | replay), structured JSON with
repair, bounded-parallel and batch calls, a usage/cost ledger and a blindness guard::

    from mechaudit.llm import LLMRequest, get_client, check_blind
    client = get_client(backend="anthropic" | "replay", cache_dir=None, http_client=None, max_concurrency=4)
    client.complete(req) -> LLMResponse
    client.complete_json(req, schema=Model, json_retries=2, strict=True) -> JSONResult
    client.complete_many(reqs, schema=None | Model, progress=False) -> list (input order)
    client.ledger() -> pandas.DataFrame
"""

from mechaudit.llm.batch import BatchError, BatchState
from mechaudit.llm.blind import BlindnessError, check_blind, check_request_blind
from mechaudit.llm.cache import CacheRecoveryWarning, ResponseCache
from mechaudit.llm.client import (
    API_KEY_ENV,
    BACKENDS,
    SAMPLING_API_VERSION,
    APIReplyError,
    LLMClient,
    MissingAPIKeyError,
    ReplayMissError,
    check_client,
    default_cache_dir,
    get_client,
    require_client,
)
from mechaudit.llm.jsonout import InvalidJSONError, JSONResult, extract_json, parse_reply
from mechaudit.llm.ledger import load_prices
from mechaudit.llm.providers import MissingProviderSDKError
from mechaudit.llm.request import LLMRequest, LLMResponse, Message, Usage
from mechaudit.llm.routing import PROVIDERS, route_model
from mechaudit.llm.session import BudgetExceededError, LLMSession

__all__ = ["API_KEY_ENV", "APIReplyError", "BACKENDS", "SAMPLING_API_VERSION", "BatchError", "BatchState",
           "BlindnessError", "BudgetExceededError", "CacheRecoveryWarning", "InvalidJSONError", "JSONResult",
           "LLMClient", "LLMRequest", "LLMSession", "LLMResponse", "Message", "MissingAPIKeyError",
           "MissingProviderSDKError", "PROVIDERS", "ReplayMissError", "ResponseCache", "Usage", "check_blind",
           "check_request_blind", "default_cache_dir", "extract_json", "check_client", "require_client", "get_client",
           "load_prices", "parse_reply", "route_model"]
