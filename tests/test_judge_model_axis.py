"""Chapter 02's judge-model axis (the paper's Figure 5) against the local fake Anthropic API: two
judge models, the requests each sends, cache reuse, one table row per model (checked against an
independent rule), the ranges beside the paper's, the estimate's count, and no numbers offline."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
import yaml
from fake_anthropic import FakeAnthropic, client_for, workflow_reply

from mechaudit.book import ch02_critique_depth as ch
from mechaudit.book.estimate import judge_estimate
from mechaudit.paths import PARAMS_DIR
from mechaudit.plots.workflow import judge_model_figure
from mechaudit.report.comparison import compare
from mechaudit.report.provenance import INDEPENDENT, NOT_RUN
from mechaudit.rules import LLMJudge
from mechaudit.rules.llm_judge import judge_planned
from mechaudit.schema import load_benchmark
from mechaudit.workflow import Design, build_rules, instance_matrices, load_simulator_params, rule_tables, simulate

A, B = "claude-model-a", "claude-model-b"
COMPS = ["0 v 1", "0 v 5", "1 v 5"]


def reply(body: dict) -> str:
    """Model A compares the initiating events (the fake's judge); model B calls every pair the same."""
    if body["model"] == B:
        return json.dumps({"verdict": "same", "reason": "always"})
    return workflow_reply(body)


@pytest.fixture(scope="module")
def design_runs():
    bench = load_benchmark(None)
    design = Design(instances=("A",), depths=(0, 1, 5), runs_per_depth=2)
    runs = simulate(bench, design, load_simulator_params(PARAMS_DIR / "simulator.yaml"), seed=0, log=False)
    return bench, design, runs


def matched_pairs(runs) -> list:
    """Every matched pair the chapter's rules judge, recorded through a ``same`` function."""
    seen: list = []

    def record(pairs):
        seen.extend(pairs)
        return np.zeros(len(pairs), dtype=bool)

    instance_matrices(runs, record)
    return seen


def sent_per_model(fake: FakeAnthropic) -> Counter:
    return Counter(body["model"] for body in fake.message_bodies)


def test_two_judge_models_one_row_each_with_cache_reuse(tmp_path, api_key, design_runs):
    bench, design, runs = design_runs
    fake = FakeAnthropic(reply)
    client = client_for(fake, tmp_path / "cache")
    main = build_rules(["llm"], client, judge_model=A, instances=bench.instances)["llm"]
    rule_tables(runs, {"llm": main.same_or_undecided}, design.comparisons())  # the chapter's Table 1
    after_main = sent_per_model(fake)
    # requests per model: the distinct certain calls of every matched pair (early stop: the two A-B
    # calls agree, so the B-A call is never made), as the estimate plans them
    pairs = matched_pairs(runs)
    planned = judge_planned(LLMJudge(model=A, rubric="full", client=client,
                                     instances=bench.instances), pairs, "x", early_stop=True)
    expected = len({p.ident for p in planned if p.stage == "x"})
    assert after_main == Counter({A: expected}) and expected > 0

    table = ch.judge_model_axis(runs, design, [A, B, A], client=client,
                                instances=bench.instances)
    assert sent_per_model(fake) == Counter({A: expected, B: expected})  # A answered from the cache
    assert list(table.index) == [A, B] and list(table.columns) == COMPS
    assert table.loc[B].tolist() == [0.0, 0.0, 0.0]  # "same" everywhere: no divergence at all
    first_step = {"a": lambda ps: np.array([a.chain[0].text == b.chain[0].text for a, b in ps])}
    _, independent = rule_tables(runs, first_step, design.comparisons())
    np.testing.assert_allclose(table.loc[A].to_numpy(float), independent.set_index("comparison").extra_pp[COMPS])
    assert table.loc[A, "0 v 1"] > 0

    second = FakeAnthropic(reply)  # a re-run over the same cache sends nothing
    again = client_for(second, tmp_path / "cache")
    repeat = ch.judge_model_axis(runs, design, [A, B], client=again, instances=bench.instances)
    assert second.message_bodies == [] and len(again.cache) == 2 * expected
    assert repeat.equals(table)

    ranges = ch.judge_model_ranges(table)
    assert ranges.loc["0 v 1", "low"] == 0.0 and ranges.loc["0 v 1", "model_high"] == A
    assert ranges.loc["0 v 1", ["paper low", "paper high"]].tolist() == [34.5, 37.3]
    assert ranges.loc["1 v 5", ["paper low", "paper high"]].tolist() == [0.5, 2.3]
    rows = ch.judge_range_rows(ranges)
    assert len(rows) == 6 and rows[1] == ("critique_depth.judge_range_pp.k0_vs_k1_high",
                                          round(float(table.loc[A, "0 v 1"]), 1))
    assert set(compare(rows, llm=True)["provenance"]) == {INDEPENDENT}
    fig = judge_model_figure(table, caption="Backend: anthropic", paper=ch.paper_judge_ranges(COMPS))
    assert [line.get_label() for line in fig.axes[0].get_lines()][:2] == [A, B]


def test_offline_the_axis_shows_no_numbers(design_runs):
    bench, design, runs = design_runs
    assert ch.judge_model_axis(runs, design, [A, B], client=None,
                               instances=bench.instances) is None
    rows = ch.judge_range_rows(None)
    assert [r[1] for r in rows] == [None] * 6
    assert set(compare(rows, llm=False)["provenance"]) == {NOT_RUN}
    assert ch.judge_axis_plan_models("claude-opus-4-6", []) == ["claude-sonnet-4-6", "gpt-5.5"]
    assert ch.judge_axis_plan_models("claude-opus-4-6", ["claude-opus-4-6", B]) == [B]


def test_the_estimate_counts_the_axis(tmp_path):
    design = tmp_path / "design.yaml"
    design.write_text(yaml.safe_dump({"design": {"instances": ["A"], "depths": [0, 1, 5], "runs_per_depth": 2}}))
    settings = {"design_file": str(design), "judge_model": A, "cache_dir": str(tmp_path)}
    plan = judge_estimate("02_critique_depth", {**settings, "judge_models": [B]})
    by_stage = plan.set_index("stage")
    main, axis = f"judge {A} (delivered pairs)", f"judge {B} ({ch.AXIS_STAGE})"
    # the LLM workflow delivers one hypothesis per opening: 5 matched pairs per run pair, 15 run pairs
    assert by_stage.loc[main, "requests"] == by_stage.loc[axis, "requests"] == 2 * 5 * 15
    assert by_stage.loc[f"{axis}, early-stop extra (upper bound)", "requests"] == 5 * 15
    assert by_stage.loc[axis, "to_send"] == by_stage.loc[axis, "requests"]  # nothing cached, nothing shared
    note = ch.judge_axis_note(plan, [B])
    assert "adds at most 225 judge requests" in note
    assert f"about 0.00 USD at plain prices plus the requests to {B}, which params/prices.yaml does not price" in note
    without = judge_estimate("02_critique_depth", {**settings, "judge_models": []})
    assert not without.stage.str.contains(ch.AXIS_STAGE, regex=False).any()
