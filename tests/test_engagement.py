"""Critique-engagement labels: simulator log as label, tables, judge prompt and output schema."""

from __future__ import annotations

import pandas as pd
import pytest
from pydantic import ValidationError

from mechaudit.engagement import (
    JUDGE_SYSTEM,
    engagement_table,
    judge_request,
    label_demands,
    labels_schema,
    paper_comparison,
    paper_shares,
)
from mechaudit.paper import label
from mechaudit.report.comparison import compare
from mechaudit.schema import load_benchmark
from mechaudit.workflow import LABELS, Design, demands_frame, load_simulator_params, simulate


@pytest.fixture(scope="module")
def runs():
    design = Design(instances=("A", "B"), depths=(0, 1, 5), runs_per_depth=3)
    return simulate(load_benchmark(), design, load_simulator_params(), seed=0)


def test_reference_labels_are_the_simulator_log(runs):
    labelled = label_demands(runs, None)
    log = [r.label for run in runs for r in run.replies]
    assert labelled.label.tolist() == log and len(log) > 50
    assert set(labelled.label) <= set(LABELS)
    assert (labelled.label_source == "simulator log").all()


def test_offline_labels_refuse_llm_runs(runs):
    llm_run = runs[1].model_copy(update={"backend": "anthropic"})
    with pytest.raises(ValueError, match=r"only simulator runs have labels; LLM runs: \['A-k0-r1'\]$"):
        label_demands([runs[0], llm_run], None)


@pytest.mark.parametrize(("backend", "simulated"), [("reference", True), ("anthropic", False), ("replay", False)])
def test_a_run_knows_whether_the_simulator_made_it(runs, backend, simulated):
    assert runs[0].model_copy(update={"backend": backend}).simulated is simulated


def test_a_run_with_an_unknown_backend_is_neither(runs):
    with pytest.raises(ValueError, match="'bogus' is not a valid Backend"):
        _ = runs[0].model_copy(update={"backend": "bogus"}).simulated


def test_engagement_table_counts_and_shares():
    df = pd.DataFrame({"label": ["conceded"] * 6 + ["answered"] * 3 + ["dropped"], "round": [1] * 5 + [2] * 5})
    t = engagement_table(df)
    assert t.label.tolist() == list(LABELS)
    assert t.set_index("label")["count"].to_dict() == {"conceded": 6, "answered": 3, "partial": 0, "dropped": 1}
    assert t.pct.sum() == pytest.approx(100.0) and t.set_index("label").pct["conceded"] == pytest.approx(60.0)
    by = engagement_table(df, by="round")
    assert len(by) == 8
    assert by.groupby("round").pct.sum().tolist() == pytest.approx([100.0, 100.0])
    r2 = by[by["round"] == 2].set_index("label")["count"]
    assert r2.to_dict() == {"conceded": 1, "answered": 3, "partial": 0, "dropped": 1}


def test_paper_rows_use_reported_keys(runs):
    labelled = label_demands(runs, None)
    rows = paper_comparison(labelled)
    table = compare(rows, llm=False)
    assert table.paper.tolist() == ["332", "61", "27", "9", "3"]  # shown as the paper prints them
    assert table.index[1] == label("engagement.conceded_pct")
    assert sum(r[1] for r in rows[1:]) == pytest.approx(100.0, abs=0.3)
    assert paper_shares() == {"conceded": 61.0, "answered": 27.0, "partial": 9.0, "dropped": 3.0}


def test_simulated_concessions_fall_with_rounds(runs):
    """Weak links run out: the first round concedes more than later rounds (emergent, not typed in)."""
    labelled = label_demands([r for r in runs if r.depth == 5], None)
    by = engagement_table(labelled, by="round").set_index(["round", "label"]).pct
    assert by[(1, "conceded")] > by[(5, "conceded")] + 20


def test_judge_request_and_schema(runs):
    frame = demands_frame(runs)
    g = frame[(frame.depth == 1)].groupby(["run_id", "round", "hypothesis_id"]).get_group(
        next(iter(frame[frame.depth == 1].groupby(["run_id", "round", "hypothesis_id"]).groups)))
    req = judge_request(g)
    text = req.messages[0].content
    assert req.system == JUDGE_SYSTEM and req.temperature == 0.0 and req.model == "claude-opus-4-6"
    for row in g.itertuples():
        assert f"{row.number}. {row.demand}" in text and f"{row.number}. {row.reply}" in text
    rows = g.sort_values("number")
    replies = "\n".join(f"{r.number}. {r.reply}" for r in rows.itertuples())
    assert text.endswith(f"Generator's replies, by demand number:\n{replies}")  # one reply a line
    assert req.metadata == {"task": "engagement", "run": g.run_id.iloc[0]}
    assert labels_schema(1).__name__ == "EngagementLabels"
    schema = labels_schema(2)
    ok = schema.model_validate({"labels": [{"number": 1, "label": "answered"}, {"number": 2, "label": "dropped"}]})
    assert [x.label for x in ok.labels] == ["answered", "dropped"]
    with pytest.raises(ValidationError):
        schema.model_validate({"labels": [{"number": 1, "label": "answered"}]})
    with pytest.raises(ValidationError):
        schema.model_validate({"labels": [{"number": 1, "label": "ignored"}, {"number": 2, "label": "dropped"}]})


class _Judge:
    """A stand-in LLM client: labels every demand "answered", except the challenges whose request
    mentions ``broken`` (an invalid reply); records the keyword arguments of each call."""

    backend = "replay"

    def __init__(self, broken: str | None = None):
        self.broken, self.calls = broken, []

    def complete_many(self, requests, schema, **kwargs):
        from types import SimpleNamespace

        self.calls.append(kwargs)
        out = []
        for req, model in zip(requests, schema):
            if self.broken and self.broken in req.messages[0].content:
                out.append(SimpleNamespace(invalid=True, error="no JSON object found", value=None))
                continue
            n = req.messages[0].content.split("\n\n")[0].count("\n")  # one line per demand after the heading
            labels = [{"number": i, "label": "answered"} for i in range(1, n + 1)]
            out.append(SimpleNamespace(invalid=False, error=None, value=model.model_validate({"labels": labels})))
        return out


def test_the_judge_labels_each_challenge_in_the_runs_order_with_its_defaults(runs):
    chosen = [r for r in runs if r.depth == 1][::-1]  # not in sorted order
    judge = _Judge()
    labelled = label_demands(chosen, judge)
    frame = demands_frame(chosen)
    assert labelled[["run_id", "round", "hypothesis_id", "number"]].equals(
        frame[["run_id", "round", "hypothesis_id", "number"]])
    assert (labelled.label == "answered").all() and labelled.excluded.isna().all()
    assert (labelled.label_source == "LLM judge (claude-opus-4-6, replay)").all()
    assert judge.calls == [{"progress": False, "json_retries": 2, "strict": False}]


def test_a_challenge_with_an_invalid_reply_is_excluded_with_its_request_key(runs):
    chosen = [r for r in runs if r.depth == 1][:1]
    frame = demands_frame(chosen)
    first = frame[frame.hypothesis_id == frame.hypothesis_id.iloc[0]]
    labelled = label_demands(chosen, _Judge(broken=first.demand.iloc[0]))
    key = judge_request(first).key
    bad = labelled[labelled.hypothesis_id == first.hypothesis_id.iloc[0]]
    assert bad.label.isna().all() and (bad.excluded == f"request {key[:16]}: no JSON object found").all()


def test_offline_labels_name_at_most_three_llm_runs(runs):
    llm = [r.model_copy(update={"backend": "anthropic"}) for r in runs[:4]]
    with pytest.raises(ValueError) as info:
        label_demands(llm, None)
    assert str(info.value).endswith(f"LLM runs: {sorted(r.run_id for r in llm)[:3]}")


def test_the_schema_error_names_the_demand_numbers_it_got():
    with pytest.raises(ValidationError, match=r"give one label per demand 1\.\.2 in order, got \[1, 1\]"):
        labels_schema(2).model_validate({"labels": [{"number": 1, "label": "answered"},
                                                    {"number": 1, "label": "dropped"}]})


def test_paper_rows_round_the_shares_to_one_decimal():
    labelled = pd.DataFrame({"label": ["conceded", "answered", "answered"]})
    assert paper_comparison(labelled) == [("engagement.demands", 3), ("engagement.conceded_pct", 33.3),
                                          ("engagement.answered_pct", 66.7), ("engagement.partial_pct", 0.0),
                                          ("engagement.dropped_pct", 0.0)]
