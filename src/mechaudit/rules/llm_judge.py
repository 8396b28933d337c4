"""LLM-as-a-judge equivalence rule with three rubric variants (paper §5.2, App. B and E.2).

Prompts (this project's wording of App. E's criteria): the system prompt is the rubric; the user
message gives the finding and the two hypotheses (statement, explanation, chain texts), the first
labelled "Hypothesis A", and nothing else (``LEAK_TERMS`` are forbidden on every request).

Rubrics (``SYSTEM_PROMPTS``): ``"full"`` (the mechanism definition ``_CRITERIA``), ``"step"`` (the
same criteria per component, then an overall verdict) and ``"none"`` (no definition).

Calls. Each pair is judged once per entry of ``orders`` ("ab": the pair's first hypothesis is A;
"ba": the second is); the decision is the majority of the valid verdicts (a tie, or none, leaves it
undecided). A reply still invalid after ``json_retries`` repairs is excluded, never defaulted.
``early_stop=True`` skips a pair's remaining calls once they cannot change the majority (for three
calls the cost is ``2 + P(the first two disagree)`` per pair); stability analyses need every call
and pass ``early_stop=False``. The request ``version`` carries the repeat index
(``"mechjudge-<rubric>-v1.r<k>"``), so a repeated order is its own cache key and API call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict

from mechaudit.agreement import flip_rate, verdict_matrix
from mechaudit.backends import Backend
from mechaudit.deprecation import reordered
from mechaudit.llm import LLMRequest, check_client, get_client, require_client
from mechaudit.llm.pricing import Planned
from mechaudit.rules.base import Pair, check_pairs
from mechaudit.rules.reference import RUBRICS
from mechaudit.schema import Hypothesis, Instance, load_instances

PROMPT_VERSION = "v1"
ORDERS = ("ab", "ba")
LEAK_TERMS = (
    "wording_only",
    "wording only",
    "wording_chain",
    "wording + chain",
    "first_step_swapped",
    "first step swapped",
    "middle_step_swapped",
    "middle step swapped",
)
Judgement = Literal["same", "different"]

_CRITERIA = """\
Two hypotheses describe the SAME mechanism when they start from the same initiating event and
run through the same essential causal route to the finding. One of them may spell out the route
in more detail than the other.

They describe DIFFERENT mechanisms when any of these holds:
- the initiating event is different, even if the downstream steps read alike;
- a load-bearing step of the route is genuinely different;
- the direction of an effect or the causal orientation is reversed.

None of these, on its own, makes two mechanisms different:
- different wording, synonyms, aliases or abbreviations for the same entities;
- extra downstream biomarkers or read-outs;
- a different level of detail.

Judge only the causal content. Do not judge which hypothesis is more plausible, better
supported or better written."""

SYSTEM_PROMPTS = {
    "full": f"""\
You compare two mechanistic hypotheses proposed for the same experimental finding and decide
whether they describe the same mechanism.

{_CRITERIA}

Answer with one JSON object and nothing else:
{{"verdict": "same" or "different", "reason": "one short sentence"}}""",
    "step": f"""\
You compare two mechanistic hypotheses proposed for the same experimental finding and decide
whether they describe the same mechanism, one component at a time.

{_CRITERIA}

Compare three components separately:
1. initiating_event: the first cause in each hypothesis;
2. route: the essential intermediate steps from that cause to the outcome;
3. terminal_outcome: the outcome each hypothesis ends in.
The overall verdict is "same" only if all three components are the same.

Answer with one JSON object and nothing else:
{{"initiating_event": "same" or "different", "route": "same" or "different",
"terminal_outcome": "same" or "different", "verdict": "same" or "different",
"reason": "one short sentence"}}""",
    "none": """\
You compare two mechanistic hypotheses proposed for the same experimental finding and decide
whether they describe the same mechanism.

Answer with one JSON object and nothing else:
{"verdict": "same" or "different", "reason": "one short sentence"}""",
}


class MechanismVerdict(BaseModel):
    """Reply of the "full" and "none" prompts."""

    model_config = ConfigDict(extra="forbid")
    verdict: Judgement
    reason: str = ""


class StepMechanismVerdict(MechanismVerdict):
    """Reply of the "step" prompt: the three component judgements and the overall verdict."""

    initiating_event: Judgement
    route: Judgement
    terminal_outcome: Judgement


COMPONENTS = ("initiating_event", "route", "terminal_outcome")
CALL_COLUMNS = [
    "pair", "call", "order", "repeat", "verdict", "same", "invalid", "attempts", "error",
    *COMPONENTS, "cached", "key",
]  # fmt: skip
DECISION_COLUMNS = ["pair", "n_calls", "n_valid", "n_invalid", "n_same", "n_different", "decided", "same"]


def render_hypothesis(h: Hypothesis, label: str) -> str:
    """One hypothesis as the judge sees it: statement, explanation and the chain's step texts."""
    chain = " -> ".join(step.text for step in h.chain)
    return f"Hypothesis {label}\nStatement: {h.statement}\nExplanation: {h.explanation}\nCausal chain: {chain}"


def call_plan(orders: Sequence[str]) -> list[tuple[str, int]]:
    """``(order, repeat index)`` per call: the k-th occurrence of an order gets repeat k."""
    seen: dict[str, int] = {}
    plan = []
    for order in orders:
        if order not in ORDERS:
            raise ValueError(f"orders entries must be 'ab' or 'ba'; got {order!r}")
        plan.append((order, seen.get(order, 0)))
        seen[order] = seen.get(order, 0) + 1
    return plan


def majority(calls: pd.DataFrame, n_pairs: int) -> pd.DataFrame:
    """Per-pair majority of a ``judge`` call table's valid verdicts (``DECISION_COLUMNS``; ``same``:
    nullable boolean, NA when undecided)."""
    def per_pair(flags: pd.Series) -> np.ndarray:
        return flags.groupby(calls["pair"]).sum().reindex(range(n_pairs), fill_value=0).to_numpy(dtype=int)

    valid = ~calls["invalid"].astype(bool)
    out = pd.DataFrame({
        "pair": np.arange(n_pairs),
        "n_calls": per_pair(pd.Series(1, index=calls.index)),
        "n_invalid": per_pair(~valid),
        "n_same": per_pair(valid & (calls["verdict"] == "same")),
        "n_different": per_pair(valid & (calls["verdict"] == "different")),
    })
    out["n_valid"] = out["n_same"] + out["n_different"]
    out["decided"] = out["n_same"] != out["n_different"]
    out["same"] = pd.array(np.where(out["decided"], out["n_same"] > out["n_different"], None), dtype="boolean")
    return out[DECISION_COLUMNS]


def call_verdicts(calls: pd.DataFrame, n_pairs: int, order: str, repeat: int = 0) -> np.ndarray:
    """Per pair, the "same" verdict of the call with ``order`` and ``repeat`` (object array, None if
    that call was not made or was invalid): input for ``mechaudit.agreement.flip_rate``."""
    sel = calls[(calls["order"] == order) & (calls["repeat"] == repeat) & ~calls["invalid"]]
    out = np.full(n_pairs, None, dtype=object)
    out[sel["pair"].to_numpy(dtype=int)] = sel["same"].to_numpy(dtype=object)
    return out


def stability(calls: pd.DataFrame, n_pairs: int) -> pd.DataFrame:
    """Per pair: pair, ab, ab_repeat, ba (first "ab" verdict, its repeat, first "ba"; object
    True/False/None), repeat_changed, order_changed (nullable boolean, NA when a call is missing)."""
    ab, ab_repeat, ba = (call_verdicts(calls, n_pairs, o, r) for o, r in (("ab", 0), ("ab", 1), ("ba", 0)))

    def changed(x: np.ndarray, y: np.ndarray) -> pd.arrays.BooleanArray:
        return pd.array([None if u is None or v is None else u != v for u, v in zip(x, y)], dtype="boolean")

    return pd.DataFrame({
        "pair": np.arange(n_pairs), "ab": ab, "ab_repeat": ab_repeat, "ba": ba,
        "repeat_changed": changed(ab, ab_repeat), "order_changed": changed(ab, ba),
    })


class UndecidedError(ValueError):
    """``same()`` was asked for pairs whose majority is a tie or has no valid verdict."""


def _client_from_backend(args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
    """An old ``LLMJudge(backend=..., cache_dir=..., max_concurrency=...)`` call with ``client=``."""
    if not {"backend", "cache_dir", "max_concurrency"} & kwargs.keys():
        return None
    kwargs = dict(kwargs)
    backend, cache_dir = kwargs.pop("backend", "replay"), kwargs.pop("cache_dir", None)
    max_concurrency = kwargs.pop("max_concurrency", 4)
    if check_client(kwargs.get("client")) is None and backend is not None:
        kwargs["client"] = get_client(backend, cache_dir=cache_dir, max_concurrency=max_concurrency)
    return args, kwargs


class LLMJudge:
    """LLM judge: majority over ``orders`` of strict-JSON verdicts under ``rubric`` (module doc).

    ``client``: the :class:`mechaudit.llm.LLMClient` that answers (without one the judge only builds
    requests); ``instances``: the findings shown, ``Instance`` objects or id -> text (default
    ``data/instances.yaml``).
    """

    @reordered("LLMJudge(backend=..., cache_dir=..., max_concurrency=...)",
               "LLMJudge(client=get_client(backend, cache_dir=..., max_concurrency=...))", _client_from_backend)
    def __init__(
        self,
        rubric: str = "full",
        *,
        model: str = "claude-opus-4-6",
        orders: Sequence[str] = ("ab", "ab", "ba"),
        early_stop: bool = True,
        client=None,
        instances: Sequence[Instance] | Mapping[str, str] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 400,
        json_retries: int = 2,
    ):
        if rubric not in RUBRICS:
            raise ValueError(f"rubric must be one of {RUBRICS}; got {rubric!r}")
        if not orders:
            raise ValueError("orders must list at least one presentation order")
        self.rubric = rubric
        self.model = model
        self.orders = tuple(orders)
        self.plan = call_plan(self.orders)
        self.early_stop = bool(early_stop)
        self.temperature = temperature
        self.max_tokens = int(max_tokens)
        self.json_retries = int(json_retries)
        self.schema = StepMechanismVerdict if rubric == "step" else MechanismVerdict
        self._json_schema = self.schema.model_json_schema()  # built once: pydantic rebuilds it per call
        self.client = check_client(client)
        self._instances = instances

    @property
    def backend(self) -> Backend | None:
        """The client's backend (None for a judge without a client)."""
        return None if self.client is None else self.client.backend

    def __repr__(self) -> str:
        backend = None if self.backend is None else str(self.backend)
        return (f"LLMJudge(rubric={self.rubric!r}, model={self.model!r}, backend={backend!r}, "
                f"orders={self.orders}, early_stop={self.early_stop})")

    def findings(self) -> dict[str, str]:
        """``instance id -> finding text`` shown to the judge."""
        if self._instances is None:
            self._instances = load_instances()
        if isinstance(self._instances, Mapping):
            return {str(k): str(v) for k, v in self._instances.items()}
        return {i.id: i.finding for i in self._instances}

    def user_message(self, a: Hypothesis, b: Hypothesis, order: str) -> str:
        """The user turn for pair ``(a, b)`` presented in ``order``."""
        findings = self.findings()
        if a.instance not in findings:
            raise ValueError(f"hypothesis {a.id!r}: no finding known for instance {a.instance!r}")
        if b.instance != a.instance:
            raise ValueError(f"pair ({a.id!r}, {b.id!r}) mixes instances {a.instance!r} and {b.instance!r}")
        first, second = (a, b) if order == "ab" else (b, a)
        return (
            f"Experimental finding both hypotheses explain:\n{findings[a.instance]}\n\n"
            f"{render_hypothesis(first, 'A')}\n\n{render_hypothesis(second, 'B')}\n\n"
            "Do hypotheses A and B describe the same mechanism?"
        )

    def request(self, pair: Pair, order: str, repeat: int = 0, index: int = 0) -> LLMRequest:
        """The request for one call; ``repeat`` is part of ``version`` and hence of the cache key."""
        a, b = pair
        return LLMRequest(
            model=self.model,
            system=SYSTEM_PROMPTS[self.rubric],
            messages=[{"role": "user", "content": self.user_message(a, b, order)}],
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            version=f"mechjudge-{self.rubric}-{PROMPT_VERSION}.r{repeat}",
            metadata={"pair": index, "order": order, "repeat": repeat, "rubric": self.rubric},
            forbidden_terms=LEAK_TERMS,
            json_schema=self._json_schema,
        )

    def requests(self, pairs: Sequence[Pair]) -> list[LLMRequest]:
        """Every request ``judge`` may send for ``pairs`` (no early stop), pair-major."""
        pairs = check_pairs(pairs)
        return [self.request(p, order, repeat, i) for i, p in enumerate(pairs) for order, repeat in self.plan]

    def judge(self, pairs: Sequence[Pair], progress: bool = False) -> pd.DataFrame:
        """One row per call made (``CALL_COLUMNS``; ``same`` None when invalid), round by round (every
        pair's first call, then second, ...), each round through ``client.complete_many``."""
        pairs = check_pairs(pairs)
        if self.client is None:
            raise ValueError("this LLMJudge has no client and only builds requests; pass "
                             "client=mechaudit.llm.get_client(...)")
        votes = np.zeros((len(pairs), 2), dtype=int)  # [same, different]
        rows: list[dict] = []
        for c, (order, repeat) in enumerate(self.plan):
            remaining = len(self.plan) - c
            active = [
                i for i in range(len(pairs))
                if not (self.early_stop and abs(votes[i, 0] - votes[i, 1]) > remaining)
            ]
            results = self.client.complete_many(
                [self.request(pairs[i], order, repeat, i) for i in active],
                schema=self.schema, progress=progress, json_retries=self.json_retries, strict=False,
            )
            for i, res in zip(active, results):
                value = res.value
                row = {
                    "pair": i, "call": c, "order": order, "repeat": repeat,
                    "verdict": None if res.invalid else value.verdict,
                    "same": None if res.invalid else value.verdict == "same",
                    "invalid": bool(res.invalid), "attempts": res.attempts, "error": res.error,
                    "cached": res.response.cached, "key": res.response.key,
                    **{comp: getattr(value, comp, None) for comp in COMPONENTS},
                }
                rows.append(row)
                if not res.invalid:
                    votes[i, 0 if value.verdict == "same" else 1] += 1
        calls = pd.DataFrame(rows, columns=CALL_COLUMNS)
        return calls.astype({"invalid": bool}).sort_values(["pair", "call"], ignore_index=True)

    def decide(self, pairs: Sequence[Pair], progress: bool = False) -> pd.DataFrame:
        """Per-pair majority decision (``majority(judge(pairs))``, columns ``DECISION_COLUMNS``)."""
        pairs = check_pairs(pairs)
        return majority(self.judge(pairs, progress=progress), len(pairs))

    def same(self, pairs: Sequence[Pair], progress: bool = False) -> np.ndarray:
        """Majority verdict per pair, bool array; ``UndecidedError`` names undecided pairs."""
        decision = self.decide(pairs, progress=progress)
        undecided = decision.loc[~decision["decided"], "pair"].tolist()
        if undecided:
            raise UndecidedError(
                f"{len(undecided)} pair(s) have no majority (tie or no valid JSON verdict), e.g. "
                f"pairs {undecided[:5]}; use decide() or same_or_undecided() to see and exclude them"
            )
        return decision["same"].to_numpy(dtype=bool)

    def same_or_undecided(self, pairs: Sequence[Pair], progress: bool = False) -> np.ndarray:
        """Majority verdict per pair as float (NaN undecided); ``undecided_`` counts the undecided."""
        decision = self.decide(pairs, progress=progress)
        self.undecided_ = getattr(self, "undecided_", 0) + int((~decision["decided"]).sum())
        return decision["same"].to_numpy(dtype=float, na_value=np.nan)


def judge_each_model(
    pairs: Sequence[Pair],
    models: Sequence[str],
    client,
    *,
    progress: bool = False,
    **judge_kwargs,
) -> dict[str, pd.DataFrame]:
    """``model -> judge(pairs)`` call table, each model (once, provider prefix allowed) an
    :class:`LLMJudge` with the same ``judge_kwargs`` over the one ``client`` (one cache, one ledger).
    """
    pairs = check_pairs(pairs)
    models = list(dict.fromkeys(models))
    if not models:
        raise ValueError("judge_each_model needs at least one model name")
    require_client(client, "judge_each_model")
    return {
        model: LLMJudge(model=model, client=client, **judge_kwargs).judge(pairs, progress=progress)
        for model in models
    }


def model_verdicts(
    pairs: Sequence[Pair],
    models: Sequence[str],
    client,
    *,
    first=None,
    **judge_kwargs,
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The judge-model axis: ``(models x pairs verdict table, model -> call table)``, each model's
    majority deciding each pair (``judge_each_model``). ``first``: ``models[0]``'s decisions already
    made (True = same, NA undecided), so it is not asked again.
    """
    models = list(dict.fromkeys(models))
    calls = judge_each_model(pairs, models if first is None else models[1:], client, **judge_kwargs)
    decided = {} if first is None else {models[0]: first}
    return verdict_matrix({**decided, **{m: majority(c, len(pairs))["same"] for m, c in calls.items()}}), calls


@dataclass(frozen=True)
class Stability:
    """One judge's stability: a display ``row`` and the pairs whose decision order reversal flipped."""

    row: dict[str, float]
    flipped: set[int]


def stability_summary(calls: pd.DataFrame, n_pairs: int) -> Stability:
    """Repetition and order-reversal effects and the majority "same" % of a full ``judge`` call table."""
    s = stability(calls, n_pairs)
    same = majority(calls, n_pairs)["same"].astype("Float64")
    row = {"pairs": n_pairs, "repeat changed": int(s["repeat_changed"].sum()),
           "reversal changed": int(s["order_changed"].sum()),
           "reversal changed %": round(100 * flip_rate(s["ab"], s["ba"]), 1),
           "same %": round(100 * float(same.mean()), 1)}
    flipped = set(s.loc[s["order_changed"].fillna(False).astype(bool), "pair"].astype(int))
    return Stability(row, flipped)


# --------------------------------------------------------------------------- planning (no request sent)

def planning_judge(rubric: str, model: str, orders: Sequence[str], instances) -> LLMJudge:
    """An :class:`LLMJudge` that only builds requests (``requests``, ``plan``); it has no client."""
    return LLMJudge(rubric=rubric, model=model, orders=orders, instances=instances)


def judge_planned(judge: LLMJudge, pairs: Sequence[Pair], stage: str, early_stop: bool, exact: bool = True,
                  identity: Callable[[int, int], str] | None = None) -> list[Planned]:
    """``judge.requests(pairs)`` as planned requests; with ``early_stop`` the calls after a pair's
    first ``len(orders) // 2 + 1`` go to stage ``"<stage>, early-stop extra (upper bound)"``, inexact.
    ``identity(pair index, call index)`` tells proxy requests apart (``Planned.identity``)."""
    n_calls = len(judge.plan)
    certain = n_calls // 2 + 1 if early_stop else n_calls
    out = []
    for k, request in enumerate(judge.requests(pairs)):
        i, c = divmod(k, n_calls)
        ident = identity(i, c) if identity else None
        if c < certain:
            out.append(Planned(stage, request, exact, ident))
        else:
            out.append(Planned(f"{stage}, early-stop extra (upper bound)", request, False, ident))
    return out
