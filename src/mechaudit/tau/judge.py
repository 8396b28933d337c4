"""The blind judge: one call per role compares a story card with every anchor card A1..An.

The prompt carries only the role's rubric and blind cards; it is checked with
:func:`mechaudit.llm.check_blind` against :data:`FORBIDDEN_TERMS` before anything is sent. The
reply must be one JSON object ``{rubric_version, comparisons: [{anchor_id, judgement, strength,
rationale}]}`` with exactly the ids A1..An, judgement better/tie/worse, strength
weak/medium/strong and a rationale of at most 25 words that contains no forbidden term. Invalid
replies get repair requests (``json_retries``); still invalid raises in strict mode, otherwise the
outcome is marked invalid and carries no comparisons (they then count as tie / weak).

Backends: ``anthropic`` / ``replay`` go through :mod:`mechaudit.llm`; ``reference`` asks a
:class:`mechaudit.tau.simulate.SimulatedJudge` (a documented simulator, not an LLM) and passes its
reply through the same schema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, ClassVar, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mechaudit.backends import Backend
from mechaudit.llm import LLMRequest
from mechaudit.llm.blind import BlindnessError, check_blind
from mechaudit.llm.client import check_client
from mechaudit.tau.cards import CARD_VERSION, FORBIDDEN_TERMS, Card, build_paper_card
from mechaudit.tau.rubric import RUBRIC_VERSION, get_rubric

DEFAULT_JUDGE_MODEL = "claude-opus-4-6"
JUDGE_TEMPERATURE = 0.0
JUDGE_MAX_TOKENS = 2048
MAX_RATIONALE_WORDS = 25


def valid_rationale(text: str) -> str:
    """``text`` if it has at most 25 words and no forbidden term, else ``ValueError``."""
    if len(text.split()) > MAX_RATIONALE_WORDS:
        raise ValueError(f"rationale has {len(text.split())} words; at most {MAX_RATIONALE_WORDS}")
    try:
        check_blind(text, FORBIDDEN_TERMS, where="the rationale")
    except BlindnessError as exc:
        raise ValueError(f"the rationale contains the forbidden term {exc.term!r}; rationales must not "
                         "mention identifiers, titles, links or ratings") from None
    return text


def _drop_titles(node: Any) -> Any:
    """A JSON schema without its "title" keys (so repair prompts stay free of forbidden terms)."""
    if isinstance(node, dict):
        return {k: _drop_titles(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_drop_titles(v) for v in node]
    return node


class BlindModel(BaseModel):
    """Base of the judge's reply schemas: strict fields and a JSON schema without titles."""

    model_config = ConfigDict(extra="forbid")

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return _drop_titles(super().model_json_schema(*args, **kwargs))


class Verdict(BlindModel):
    """A relative judgement with its strength and a short rationale free of forbidden terms."""

    judgement: Literal["better", "tie", "worse"]
    strength: Literal["weak", "medium", "strong"]
    rationale: str

    @field_validator("rationale")
    @classmethod
    def _rationale(cls, text: str) -> str:
        return valid_rationale(text)


class Comparison(Verdict):
    """One blind judgement of the story against one anchor card."""

    anchor_id: str = Field(pattern=r"^A[1-9][0-9]*$")


class JudgeReply(BlindModel):
    """Reply of one role call; subclasses made by :func:`judge_schema` fix the anchor count."""

    n_expected: ClassVar[int] = 0  # set by judge_schema subclasses

    rubric_version: str
    comparisons: list[Comparison]

    @model_validator(mode="after")
    def _complete(self) -> JudgeReply:
        if self.rubric_version != RUBRIC_VERSION:
            raise ValueError(f"rubric_version must be {RUBRIC_VERSION!r}, got {self.rubric_version!r}")
        expected = [f"A{i + 1}" for i in range(type(self).n_expected)]
        got = sorted((c.anchor_id for c in self.comparisons), key=lambda s: int(s[1:]))
        if got != expected:
            raise ValueError(f"comparisons must cover exactly A1..A{len(expected)} once each; got {got}")
        return self


@lru_cache(maxsize=64)
def judge_schema(n_anchors: int) -> type[JudgeReply]:
    """The reply schema for ``n_anchors`` anchors (ids A1..An, each exactly once)."""
    if n_anchors < 1:
        raise ValueError("the judge needs at least one anchor")
    namespace = {"n_expected": n_anchors, "__annotations__": {"n_expected": ClassVar[int]}, "__module__": __name__}
    return type(f"JudgeReply{n_anchors}", (JudgeReply,), namespace)


class PairReply(Verdict):
    """Reply of one pairwise call used for tau fitting: card X against card Y."""

    rubric_version: Literal[RUBRIC_VERSION]  # type: ignore[valid-type]


def _instructions(role: str) -> str:
    return (
        f"You are the {role} reviewer in a blind comparison of research ideas. You see short "
        "cards with three fields: problem, method, contribution. Judge only what the cards "
        "say; ignore their length and style of formatting.\n"
        f"Criterion ({role}): {get_rubric(role)}\n"
        "For every comparison give a judgement (better, tie or worse: is the CANDIDATE better "
        "than, level with, or worse than the reference on this criterion), a strength (weak, "
        "medium or strong) and a rationale of at most 25 words. Never mention names, sources or "
        "numeric ratings in a rationale. Reply with one JSON object and nothing else."
    )


def build_prompt(role: str, story: Card, anchors: list[Card]) -> tuple[str, str]:
    """``(system, user)`` of one role call; raises ``BlindnessError`` on a forbidden term."""
    example = {"rubric_version": RUBRIC_VERSION, "comparisons": [
        {"anchor_id": "A1", "judgement": "better|tie|worse", "strength": "weak|medium|strong",
         "rationale": "at most 25 words"}]}
    system = (_instructions(role) + "\nJSON format, one entry per reference card A1.."
              f"A{len(anchors)}:\n" + json.dumps(example))
    parts = [f"CANDIDATE\n{story.render()}"]
    parts += [f"REFERENCE A{i + 1}\n{card.render()}" for i, card in enumerate(anchors)]
    user = "\n\n".join(parts)
    check_blind(system, FORBIDDEN_TERMS, where=f"the {role} system prompt")
    check_blind(user, FORBIDDEN_TERMS, where=f"the {role} user prompt")
    return system, user


def build_pair_prompt(role: str, card_x: Card, card_y: Card) -> tuple[str, str]:
    """``(system, user)`` of one pairwise tau-fitting call (X is the candidate)."""
    example = {"rubric_version": RUBRIC_VERSION, "judgement": "better|tie|worse",
               "strength": "weak|medium|strong", "rationale": "at most 25 words"}
    system = _instructions(role) + "\nJSON format:\n" + json.dumps(example)
    user = f"CANDIDATE\n{card_x.render()}\n\nREFERENCE\n{card_y.render()}"
    check_blind(system, FORBIDDEN_TERMS, where=f"the {role} system prompt")
    check_blind(user, FORBIDDEN_TERMS, where=f"the {role} user prompt")
    return system, user


@dataclass(frozen=True)
class JudgeOutcome:
    """Comparisons of one role call with how they were obtained."""

    role: str
    comparisons: list[dict[str, Any]]
    backend: str
    invalid: bool = False
    error: str | None = None
    attempts: int = 1
    prompt: tuple[str, str] = field(default=("", ""), repr=False)


def judge_request(system: str, user: str, version: str, model: str = DEFAULT_JUDGE_MODEL,
                  temperature: float = JUDGE_TEMPERATURE, max_tokens: int = JUDGE_MAX_TOKENS):
    """The :class:`mechaudit.llm.LLMRequest` of one blind call (``system`` and ``user`` prompts)."""
    return LLMRequest(model=model, system=system, messages=[{"role": "user", "content": user}],
                      temperature=temperature, max_tokens=max_tokens, version=version)


def pair_requests(role: str, pairs: list[tuple[Card, Card]], model: str = DEFAULT_JUDGE_MODEL,
                  temperature: float = JUDGE_TEMPERATURE, max_tokens: int = JUDGE_MAX_TOKENS) -> list[Any]:
    """The request of each pairwise call (X against Y) for ``role``, as :meth:`BlindJudge.judge_pairs`
    sends them (for cost estimates and cache checks; nothing is sent, no client is needed)."""
    version = f"{RUBRIC_VERSION}+{CARD_VERSION}+pair"
    return [judge_request(s, u, version, model, temperature, max_tokens)
            for s, u in (build_pair_prompt(role, x, y) for x, y in pairs)]


@dataclass
class BlindJudge:
    """Blind judge (see module docstring) over exactly one of: ``client``, a
    :class:`mechaudit.llm.LLMClient` (backend ``anthropic`` or ``replay``), or ``simulator``, a
    :class:`mechaudit.tau.simulate.SimulatedJudge` (offline, backend ``reference``).
    """

    client: Any = None
    simulator: Any = None
    model: str = DEFAULT_JUDGE_MODEL
    json_retries: int = 2
    strict: bool = True
    temperature: float = JUDGE_TEMPERATURE
    max_tokens: int = JUDGE_MAX_TOKENS
    #: Offline answers by (role, story card key, anchor card keys): the simulator answers an
    #: identical call identically, so a repeated call (another densify mode's first round) is
    #: answered from memory.
    _answered: dict[tuple[str, str, tuple[str, ...]], JudgeOutcome] = field(
        default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if (check_client(self.client) is None) == (self.simulator is None):
            raise ValueError("BlindJudge needs exactly one of client (an LLM client) or simulator "
                             "(mechaudit.tau.simulate.SimulatedJudge)")

    @property
    def backend(self) -> Backend:
        """The client's backend, or ``Backend.REFERENCE`` for the simulator."""
        return Backend.REFERENCE if self.client is None else self.client.backend

    @property
    def judge_model(self) -> str:
        """Name recorded in tau files: the LLM model or the simulator's name."""
        return self.simulator.name if self.client is None else self.model

    def _request(self, system: str, user: str, version: str):
        return judge_request(system, user, version, self.model, self.temperature, self.max_tokens)

    def judge_roles(self, roles: list[str], story: Card, anchors: list[Card]) -> list[JudgeOutcome]:
        """One call per role (in parallel through the LLM layer), in ``roles`` order."""
        if self.client is None:
            return [self._simulated(role, story, anchors) for role in roles]
        prompts = [build_prompt(role, story, anchors) for role in roles]
        schema = judge_schema(len(anchors))
        version = f"{RUBRIC_VERSION}+{CARD_VERSION}"
        requests = [self._request(s, u, version) for s, u in prompts]
        results = self.client.complete_many(requests, schema=schema, json_retries=self.json_retries,
                                            strict=self.strict)
        return [
            JudgeOutcome(role, [] if r.invalid else [c.model_dump() for c in r.value.comparisons],
                         self.backend, r.invalid, r.error, r.attempts, prompt)
            for role, r, prompt in zip(roles, results, prompts)
        ]

    def _simulated(self, role: str, story: Card, anchors: list[Card]) -> JudgeOutcome:
        """The simulator's validated answer for one role (prompt built and checked for blindness
        first), remembered in ``_answered``; each call gets its own copy of the comparisons."""
        key = (role, story.key, tuple(a.key for a in anchors))
        if key not in self._answered:
            prompt = build_prompt(role, story, anchors)
            reply = judge_schema(len(anchors)).model_validate(self.simulator.reply(role, story, anchors))
            self._answered[key] = JudgeOutcome(role, [c.model_dump() for c in reply.comparisons], self.backend,
                                               prompt=prompt)
        known = self._answered[key]
        return replace(known, comparisons=[dict(c) for c in known.comparisons])

    def judge(self, role: str, story: Card, anchors: list[Card]) -> JudgeOutcome:
        """One role call."""
        return self.judge_roles([role], story, anchors)[0]

    def pair_requests(self, role: str, pairs: list[tuple[Card, Card]]) -> list[Any]:
        """The :class:`mechaudit.llm.LLMRequest` of each pairwise call (X against Y) for ``role``,
        as :meth:`judge_pairs` sends them (for cost estimates and cache checks; nothing is sent)."""
        return pair_requests(role, pairs, self.model, self.temperature, self.max_tokens)

    def judge_pairs(self, role: str, pairs: list[tuple[Card, Card]]) -> list[dict[str, Any] | None]:
        """Pairwise calls for tau fitting: ``{judgement, strength}`` of X against Y per pair, or
        None where the reply stayed invalid (such pairs are skipped, as in the original)."""
        if self.client is None:
            for x, y in pairs:
                build_pair_prompt(role, x, y)  # the blindness check runs offline too
            return [PairReply.model_validate(self.simulator.pair_reply(role, x, y)).model_dump(
                include={"judgement", "strength"}) for x, y in pairs]
        requests = self.pair_requests(role, pairs)
        results = self.client.complete_many(requests, schema=PairReply, json_retries=self.json_retries,
                                            strict=False)
        return [None if r.invalid else r.value.model_dump(include={"judgement", "strength"}) for r in results]


def judge_sampled_pairs(
    pairs: pd.DataFrame, papers: Mapping[str, Mapping[str, Any]], judge: BlindJudge, role: str
) -> pd.DataFrame:
    """Judge sampled pairs (columns ``a``, ``b`` with paper ids, from
    :func:`mechaudit.tau.fitting.sample_pairs`) with ``judge`` for ``role``; adds ``judgement`` and
    ``strength`` and drops pairs whose reply stayed invalid (the result is ready for ``fit_tau``)."""
    cards = [(build_paper_card(papers[a]), build_paper_card(papers[b])) for a, b in zip(pairs["a"], pairs["b"])]
    answers = judge.judge_pairs(role, cards)
    keep = [i for i, ans in enumerate(answers) if ans is not None]
    judged = pairs.iloc[keep].copy()
    judged["judgement"] = [answers[i]["judgement"] for i in keep]
    judged["strength"] = [answers[i]["strength"] for i in keep]
    return judged.reset_index(drop=True)
