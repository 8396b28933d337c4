"""Critique engagement (paper §5.1, App. E.1): was each critic demand answered, conceded,
partially addressed or dropped in the proposer's reply?

With an LLM client, a judge (``claude-opus-4-6``, temperature 0) reads one challenge (the numbered
demands of one critique round against one hypothesis) with the proposer's replies and labels each
demand (answered, conceded, partial, dropped: defined, in our words after App. E.1, in
``JUDGE_SYSTEM``). Offline the simulator decides each reply's engagement itself, so its log is the
label: there is no judge error (say so wherever these labels are shown).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from mechaudit.llm import LLMRequest, check_client
from mechaudit.paper import reported
from mechaudit.workflow.records import LABELS, Run, demands_frame

JUDGE_MODEL = "claude-opus-4-6"
PROMPT_VERSION = "engagement-v1"

JUDGE_SYSTEM = """\
You rate how a hypothesis generator engaged with a critic. The critic challenged a mechanistic \
hypothesis with numbered demands; the generator replied. For each demand separately, decide how \
the reply deals with it. You judge engagement only: do not decide whether the critic or the \
generator is scientifically right, or whether the mechanism is plausible.

Labels:
- "answered": the reply takes up the demand and gives a reason, evidence, or an explicit ground \
for not complying.
- "conceded": the reply withdraws, corrects or weakens the challenged claim.
- "partial": the reply takes up the demand but leaves part of it unmet.
- "dropped": the reply does not take up the demand at all.

Reply with one JSON object only: {"labels": [{"number": 1, "label": "<label>"}, ...]} with one \
entry per demand, in demand order."""


class DemandLabel(BaseModel):
    """The judge's label for demand ``number``."""

    model_config = ConfigDict(extra="forbid")
    number: int = Field(ge=1)
    label: Literal["conceded", "answered", "partial", "dropped"]


def labels_schema(n_demands: int) -> type[BaseModel]:
    """``{"labels": [...]}`` with exactly one label per demand 1..n, in order."""

    def _check(self):
        numbers = [x.number for x in self.labels]
        if numbers != list(range(1, n_demands + 1)):
            raise ValueError(f"give one label per demand 1..{n_demands} in order, got {numbers}")
        return self

    return create_model("EngagementLabels", __config__=ConfigDict(extra="forbid"),
                        labels=(list[DemandLabel], ...),
                        __validators__={"_check": model_validator(mode="after")(_check)})


def judge_request(challenge: pd.DataFrame, model: str = JUDGE_MODEL) -> LLMRequest:
    """Judge call for one challenge: rows of ``demands_frame`` of one (run, round, hypothesis)."""
    rows = challenge.sort_values("number")
    demands = "\n".join(f"{r.number}. {r.demand}" for r in rows.itertuples())
    replies = "\n".join(f"{r.number}. {r.reply if r.reply is not None else '(no reply)'}" for r in rows.itertuples())
    user = f"Critic's demands:\n{demands}\n\nGenerator's replies, by demand number:\n{replies}"
    return LLMRequest(model=model, system=JUDGE_SYSTEM, messages=[{"role": "user", "content": user}],
                      temperature=0.0, max_tokens=400, version=PROMPT_VERSION,
                      metadata={"task": "engagement", "run": rows.run_id.iloc[0]})


def label_demands(runs: Sequence[Run], client, model: str = JUDGE_MODEL,
                  progress: bool = False, json_retries: int = 2) -> pd.DataFrame:
    """``demands_frame(runs)`` with the engagement label per demand in column ``label``, from the
    simulator's log (``client`` None; simulator runs only) or the LLM judge through ``client``; column
    ``label_source`` says which. A reply still invalid after ``json_retries`` repairs leaves its
    challenge unlabelled, the error in column ``excluded`` (:func:`excluded_challenges`).
    """
    df = demands_frame(runs)
    if check_client(client) is None:
        not_sim = sorted({r.run_id for r in runs if not r.simulated})
        if not_sim:
            raise ValueError(f"without an LLM client only simulator runs have labels; LLM runs: {not_sim[:3]}")
        if df["label"].isna().any():
            raise ValueError("simulator log has demands without a reply label")
        return df.assign(label_source="simulator log")
    groups = [g for _, g in df.groupby(["run_id", "round", "hypothesis_id"], sort=False)]
    requests = [judge_request(g, model) for g in groups]
    results = client.complete_many(requests, schema=[labels_schema(len(g)) for g in groups], progress=progress,
                                   json_retries=json_retries, strict=False)
    labelled = []
    for g, req, res in zip(groups, requests, results):
        if res.invalid:
            labelled.append(g.assign(label=None, excluded=f"request {req.key[:16]}: {res.error}"))
            continue
        by_number = {x.number: x.label for x in res.value.labels}
        labelled.append(g.assign(label=g["number"].map(by_number), excluded=None))
    out_df = pd.concat(labelled, ignore_index=True) if labelled else df.assign(excluded=None)
    return out_df.assign(label_source=f"LLM judge ({model}, {client.backend})")


def excluded_challenges(labelled: pd.DataFrame) -> pd.DataFrame:
    """Challenges left unlabelled because the judge's reply stayed invalid: one row per challenge
    (run_id, round, hypothesis_id, demands, error); empty when every reply was valid."""
    cols = ["run_id", "round", "hypothesis_id", "demands", "error"]
    if "excluded" not in labelled or labelled["excluded"].isna().all():
        return pd.DataFrame(columns=cols)
    bad = labelled[labelled["excluded"].notna()]
    return (bad.groupby(["run_id", "round", "hypothesis_id"], sort=False)
            .agg(demands=("number", "size"), error=("excluded", "first")).reset_index()[cols])


def engagement_table(labelled: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """Counts and shares (%) of the four labels, overall or per value of column ``by``: columns
    [by], label, count, pct."""
    labelled = labelled[labelled["label"].notna()]  # excluded (unlabelled) demands count nowhere
    keys = [by] if by else []
    counts = labelled.groupby(keys + ["label"]).size() if keys else labelled.groupby("label").size()
    counts = counts.rename("count").reset_index()
    full = pd.MultiIndex.from_product([sorted(labelled[k].unique()) for k in keys] + [list(LABELS)],
                                      names=keys + ["label"]) if keys else pd.Index(list(LABELS), name="label")
    counts = counts.set_index(keys + ["label"]).reindex(full, fill_value=0).reset_index()
    totals = counts.groupby(keys)["count"].transform("sum") if keys else counts["count"].sum()
    counts["pct"] = 100 * counts["count"] / totals
    return counts


def paper_comparison(labelled: pd.DataFrame) -> list[tuple]:
    """Rows for ``mechaudit.report.comparison.compare``: number of demands and the four label shares (%)."""
    table = engagement_table(labelled).set_index("label")
    rows: list[tuple] = [("engagement.demands", int(labelled["label"].notna().sum()))]
    rows += [(f"engagement.{label}_pct", round(float(table.loc[label, "pct"]), 1)) for label in LABELS]
    return rows


def paper_shares() -> dict[str, float]:
    """The paper's label shares (%) of its 332 demands, in ``LABELS`` order."""
    return {label: float(reported(f"engagement.{label}_pct")) for label in LABELS}
