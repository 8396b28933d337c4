"""What one workflow run leaves behind: delivered hypotheses and the critique log.

The LLM workflow and the simulator produce the same records; the simulator's ground truth (weak
link hit, true engagement label) sits in optional fields that stay ``None`` for LLM runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from mechaudit.backends import Backend
from mechaudit.schema import Hypothesis, Step

#: Engagement labels of one reply to one demand (paper App. E.1).
LABELS: tuple[str, ...] = ("conceded", "answered", "partial", "dropped")
Label = Literal["conceded", "answered", "partial", "dropped"]


class Demand(BaseModel):
    """One numbered demand a critic raised against one hypothesis in one round."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    instance: str
    depth: int
    round: int = Field(ge=1)
    hypothesis_id: str
    opening_id: str
    number: int = Field(ge=1)
    target_step: str | None = None
    text: str
    weak_link: bool | None = None  # simulator ground truth: the demand hit a weak link


class Reply(BaseModel):
    """The proposer's reply to one demand; ``label`` is the simulator's own label (None for LLM runs)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    round: int = Field(ge=1)
    hypothesis_id: str
    number: int = Field(ge=1)
    text: str
    label: Label | None = None


class Revision(BaseModel):
    """The hypothesis after the proposer's revision in one round (``changed``: chain positions replaced)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    round: int = Field(ge=1)
    hypothesis_id: str
    opening_id: str
    statement: str
    explanation: str
    chain: list[Step]
    changed: list[int] = Field(default_factory=list)


class Exclusion(BaseModel):
    """A hypothesis the LLM workflow dropped: the reply of ``stage`` (``round`` 0 for develop) stayed
    invalid after the repairs; ``key``: the original request's cache key; ``attempts``: 1 + repairs."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    opening_id: str
    stage: Literal["develop", "critique", "revise"]
    round: int = Field(ge=0)
    key: str
    attempts: int = Field(ge=1)
    error: str


class Run(BaseModel):
    """One workflow execution: one instance, one critique depth, one repetition; ``excluded``: the
    hypotheses an LLM run dropped (:class:`Exclusion`)."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    instance: str
    depth: int = Field(ge=0)
    repetition: int = Field(ge=0)
    backend: str
    developed: list[Hypothesis]
    delivered: list[Hypothesis]
    demands: list[Demand] = Field(default_factory=list)
    replies: list[Reply] = Field(default_factory=list)
    revisions: list[Revision] = Field(default_factory=list)
    excluded: list[Exclusion] = Field(default_factory=list)

    @property
    def simulated(self) -> bool:
        """True for a run of the offline simulator (backend ``reference``), False for an LLM run."""
        return Backend(self.backend) is Backend.REFERENCE


def run_id(instance: str, depth: int, repetition: int) -> str:
    """Stable run id, e.g. ``A-k1-r3``."""
    return f"{instance}-k{depth}-r{repetition}"


def demands_frame(runs: Iterable[Run]) -> pd.DataFrame:
    """One row per demand with its reply (the simulator's ``weak_link`` and ``label``, else None)."""
    rows = []
    for run in runs:
        replies = {(r.round, r.hypothesis_id, r.number): r for r in run.replies}
        for d in run.demands:
            reply = replies.get((d.round, d.hypothesis_id, d.number))
            answer = {"reply": None, "label": None} if reply is None else {"reply": reply.text, "label": reply.label}
            rows.append({**d.model_dump(exclude={"text"}), "demand": d.text, **answer})
    cols = ["run_id", "instance", "depth", "round", "hypothesis_id", "opening_id", "number",
            "target_step", "weak_link", "demand", "reply", "label"]
    return pd.DataFrame(rows, columns=cols)


EXCLUDED_COLUMNS = ["run_id", "opening_id", "stage", "round", "attempts", "key", "error"]


def excluded_frame(runs: Iterable[Run]) -> pd.DataFrame:
    """One row (``EXCLUDED_COLUMNS``) per hypothesis dropped for an invalid reply."""
    rows = [e.model_dump() for run in runs for e in run.excluded]
    return pd.DataFrame(rows, columns=EXCLUDED_COLUMNS)
