"""Chapter 06's steps (``mechaudit.book.ch06_rubric_sensitivity``): reference judges, examples, order
effects, paper rows."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mechaudit.backends import Backend
from mechaudit.book import ch06_rubric_sensitivity as ch
from mechaudit.book import selfserved
from mechaudit.book.chapter import ChapterContext
from mechaudit.book.settings import RunSettings
from mechaudit.perturb import KINDS
from mechaudit.report.comparison import compare
from mechaudit.rules.audit import percent_different

RUBRICS = ["full", "step", "none"]


@pytest.fixture(scope="module")
def shipped():
    s = ch.setup()
    judges = ch.reference_judges(RUBRICS)
    llm = ch.judge_rubrics_with_llm(s.pairs, RUBRICS, s.instances, client=None, model="m")
    decisions = pd.concat([ch.reference_decisions(s.pairs, judges), llm.decisions], axis=1)
    return s, judges, llm, decisions, percent_different(decisions, kinds=s.kinds)


def calls(verdicts: dict[int, list[str]]) -> pd.DataFrame:
    """A call table with orders ab, ab, ba per pair and the given verdicts ("same"/"different")."""
    rows = []
    for pair, vs in verdicts.items():
        for c, ((order, repeat), v) in enumerate(zip([("ab", 0), ("ab", 1), ("ba", 0)], vs)):
            rows.append({"pair": pair, "call": c, "order": order, "repeat": repeat, "verdict": v,
                         "same": v == "same", "invalid": False})
    return pd.DataFrame(rows)


def test_reference_judges_read_the_rubric_literally(shipped):
    s, _, llm, decisions, pct = shipped
    assert len(s.pairs) == 320 and llm.calls is None and llm.client is None
    assert pct.loc["first_step_swapped", "reference full"] == 100.0
    assert pct.loc["middle_step_swapped", "reference step"] == 100.0
    assert pct.loc["first_step_swapped", "reference none"] == 0.0  # Jaccard >= 0.5 for chains of 3+ steps
    assert pct.loc["wording_only", "reference full"] == 0.0
    assert decisions["llm full"].isna().all()


def test_components_examples_and_findings(shipped):
    s, judges, _, _, pct = shipped
    components = judges["step"].components(s.pairs)
    table = ch.component_percent(components, kinds=s.kinds)
    assert table.loc["first_step_swapped"].tolist() == [100.0, 0.0, 0.0]
    assert table.loc["middle_step_swapped", "route"] == 100.0
    assert list(table.index) == [k for k in KINDS if k in set(s.kinds)]  # the kinds present, in KINDS order
    for kind in table.index:  # each cell: % of that kind's pairs whose component is called different
        rows = [i for i, k in enumerate(s.kinds) if k == kind]
        assert table.loc[kind].tolist() == [round(100 * (1 - components.loc[rows, c].astype(float).mean()), 1)
                                            for c in ch.COMPONENTS]
    ex = ch.examples(s.pairs, components, kinds=s.kinds, seed=0)
    assert list(ex.index) == ["wording_only", "wording_chain", "first_step_swapped", "middle_step_swapped"]
    assert ex.loc["first_step_swapped", "step judge: different"] == "initiating"
    assert ex.loc["wording_only", "step judge: different"] == "nothing"
    assert ex.loc["wording_only", "what changed"] != ""
    ctx = ChapterContext(RunSettings())
    facts = ch.chapter_facts(ctx, "m", pct, components, s, 0.5)
    assert facts.ref_full_fss_pct == 100.0 and facts.ref_none_fss_pct == 0.0 and facts.ref_step_mss_pct == 100.0
    assert facts.min_chain_swapped >= 3 and facts.min_jaccard_swapped >= 0.5
    assert facts.paper_none_fss_pct == 38 and facts.headline == ch.headline(pct, llm_run=False)
    only_full = ch.chapter_facts(ctx, "m", pct.drop(columns=["reference step", "reference none"]), components, s, 0.5)
    assert only_full.ref_step_fss_pct is None and only_full.ref_none_fss_pct is None  # glued as "not run"
    assert ch.fss_by_rubric(pct, "reference") == {"none": 0.0, "full": 100.0, "step": 100.0}
    assert ch.fss_by_rubric(pct, "llm") == {"none": None, "full": None, "step": None}
    assert ch.headline(pct, llm_run=False) == (
        "not measured offline (reference judges, true by construction: 0; 100; 100)")
    assert ch.answer(pct, llm_run=False) == "not measured offline (paper: 38 / 83 / 96 %)"
    llm = pct.assign(**{"llm none": 37.5, "llm full": 82.6, "llm step": float("nan")})
    assert ch.headline(llm, llm_run=True) == "38; 83; not run"  # NaN: every pair undecided
    assert ch.answer(llm, llm_run=True) == "38 / 83 / not run % (paper: 38 / 83 / 96 %)"


def test_reversal_check_is_zero_for_reference_judges(shipped):
    s, judges, *_ = shipped
    table = ch.reversal_check(s.pairs[:40], judges)
    assert table["changed by reversal"].tolist() == [0, 0, 0] and table["pairs"].tolist() == [40] * 3


def test_order_effects_offline_and_paper_rows(shipped):
    s, _, llm, decisions, pct = shipped
    effects = ch.order_effects(llm, decisions, RUBRICS, len(s.pairs))
    assert effects.per_prompt is None and effects.table["reversal changed"].tolist() == ["not run"] * 3
    rows = ch.paper_rows(pct, effects, RUBRICS, backend=Backend.REFERENCE, model="m")
    assert [r[1] for r in rows] == [None] * 6
    assert rows[0] == ("rubric.first_step_swapped_pct_different.step", None, "reference judge: 100.0")
    assert len(compare(rows, llm=False)) == 6
    _, ranges = ch.rubric_model_axis(s.pairs, llm, RUBRICS, ["m", "n"], kinds=s.kinds,
                                     orders=["ab"], instances=s.instances)
    assert ranges.iloc[0, 0] == "not run: offline backend"


def test_order_effects_from_llm_calls_count_flips_and_shared_pairs():
    call = {"full": calls({0: ["same", "same", "different"], 1: ["same", "same", "same"]}),
            "step": calls({0: ["same", "different", "different"], 1: ["different", "different", "same"]})}
    llm = ch.RubricLLM(pd.DataFrame({"llm full": pd.array([True, True], dtype="boolean"),
                                     "llm step": pd.array([False, False], dtype="boolean")}), call, None)
    decisions = pd.concat([llm.decisions, pd.DataFrame({"reference full": [True, False],
                                                        "reference step": [True, False]})], axis=1)
    effects = ch.order_effects(llm, decisions, ["full", "step"], 2)
    assert effects.table.loc["full", "reversal changed"] == 1 and effects.table.loc["full", "repeat changed"] == 0
    assert effects.table.loc["step", "reversal changed"] == 2 and effects.table.loc["step", "repeat changed"] == 1
    assert effects.table.loc["step", "reversal changed %"] == 100.0
    assert effects.shared.loc["full", "step"] == 1
    assert effects.vs_reference.tolist() == [0.5, 0.5]
    rows = dict((r[0], r[1]) for r in ch.paper_rows(pd.DataFrame(), effects, ["full", "step"], backend=Backend.REPLAY,
                                                     model="m"))
    assert rows["rubric.order_reversal_changed_per_prompt"] == 1.5
    assert rows["rubric.order_reversal_shared_full_step"] == 1
    assert rows["rubric.repetition_changed"] == 1


def test_paper_figure_values_only_first_step_swaps():
    values = ch.paper_figure_values(["full"])
    assert values["llm full"].notna().tolist() == [False, False, True, False]
    assert not np.isnan(values.loc["first_step_swapped", "llm full"])


# ----------------------------------------------------------------------------------------------
# the recorded self-served judge


def test_the_self_served_column_recounts_the_recorded_answers(shipped):
    """Full rubric: each pair's majority over its three recorded replies (read from the cache
    records themselves) gives the column's % per kind, the paper table's row and the answer's number."""
    s, _, llm, decisions, _ = shipped
    mine = selfserved.recorded(False)
    own = ch.replay_selfserved(s, ["full"], mine)
    assert own.recorded == {"full": 320} and own.done == ["full"]
    calls = own.llm.calls["full"]
    assert set(calls["order"]) == {"ab", "ba"} and len(calls) == 3 * len(s.pairs)  # every order asked
    different = {}
    for pair, keys in calls.groupby("pair")["key"]:
        said = [json.loads(mine.client.cache.record(k)["response"]["text"])["verdict"] for k in keys]
        assert len(said) == 3 and set(said) <= {"same", "different"}
        different[pair] = said.count("different") >= 2
    expected = {kind: round(100 * np.mean([different[i] for i, k in enumerate(s.kinds) if k == kind]), 1)
                for kind in KINDS}
    both = pd.concat([decisions, own.columns], axis=1)
    pct = percent_different(both, kinds=s.kinds, order=KINDS)
    table = ch.percent_table(pct, own, llm_run=False)
    column = f"{selfserved.LABEL}, full rubric"
    assert table[column].to_dict() == expected
    assert not table.columns.str.startswith("LLM judge").any() and "llm full" not in table  # replaced offline
    effects = ch.selfserved_effects(own, both)
    assert effects.vs_reference["full"] == round(float(np.mean(
        [not different[i] == both.loc[i, "reference full"] for i in range(len(s.pairs))])), 3)
    paper = ch.paper_table(pct, ch.order_effects(llm, both, RUBRICS, len(s.pairs)), RUBRICS,
                           backend=Backend.REFERENCE, model="m", own=own, own_effects=effects)
    row = paper.loc["First step swapped, called different: full rubric, self-served SmolLM2 (%)"]
    assert row["this run"] == f"{expected['first_step_swapped']:.1f}" and row["provenance"] == "independent computation"
    assert paper.loc["First step swapped, called different: full rubric (%)", "this run"] == "not run"
    _, answer, headline, source = ch.selfserved_sentences(own, pct, effects, True)
    fss = f"{expected['first_step_swapped']:.1f} %"
    assert headline == f"not run; {fss}; not run" and source == "independent computation"
    assert f"calls {fss} of first-step swaps different under full rubric (the paper's LLM judge: 83 %)" in answer
    assert "far below large LLM judges" in answer


def test_a_rubric_not_all_recorded_shows_how_many_pairs_are(shipped):
    s = shipped[0]
    never = (s.pairs[0][0], s.pairs[0][0])  # a hypothesis against itself was never asked
    part = ch.RubricSetup([*s.pairs[:2], never], s.kinds[:3], s.instances)
    own = ch.replay_selfserved(part, ["full"], selfserved.recorded(False))
    assert own.recorded == {"full": 2} and own.done == [] and own.columns.empty
    assert ch.selfserved_effects(own, pd.DataFrame()) is None
    pct = pd.DataFrame({"reference full": [0.0]}, index=["first_step_swapped"])
    assert ch.percent_table(pct, own, llm_run=False)[f"{selfserved.LABEL}, full rubric"].tolist() == ["2 of 3 recorded"]
    coverage, answer, headline, source = ch.selfserved_sentences(own, pct, None, True)
    assert "2 of 3 pairs of the full-rubric prompt" in coverage and "(none yet)" in coverage
    assert headline == "not run; 2 of 3 recorded; not run" and source == "not run offline (LLM only)"
    assert answer.startswith("No prompt has all its pairs recorded") and "%" not in answer


def test_nothing_of_the_self_served_judge_on_other_data(shipped, tmp_path):
    s, _, llm, decisions, pct = shipped
    own = ch.replay_selfserved(s, RUBRICS, selfserved.recorded(False, tmp_path))
    assert own is None and ch.selfserved_effects(own, decisions) is None
    table = ch.percent_table(pct, own, llm_run=False)
    assert list(table.columns) == list(pct.columns) and table["llm full"].eq("not run").all()
    effects = ch.order_effects(llm, decisions, RUBRICS, len(s.pairs))
    paper = ch.paper_table(pct, effects, RUBRICS, backend=Backend.REFERENCE, model="m")
    assert len(paper) == 6 and not paper.index.str.contains("SmolLM2").any()
    assert ch.selfserved_sentences(own, pct, None, False) == selfserved.NOT_REPLAYED


# ----------------------------------------------------------------------------------------------
# the steps a notebook calls, on small inputs


def test_fss_rounds_only_when_asked():
    pct = pd.DataFrame({"llm full": [37.25]}, index=["first_step_swapped"])
    assert ch._fss(pct, "llm full", digits=None) == 37.25 and ch._fss(pct, "llm full") == 37.2
    assert ch._fss(pct, "llm step") is None and ch._fss(pct, "llm full", kind="wording_only") is None


def test_percent_facts_read_in_percent_and_not_run_when_missing():
    from mechaudit.report.facts import FactSpec

    assert ch._pct("d").metadata["mechaudit.fact"] == FactSpec("%", 1, "d", "not run")


def test_setup_reads_the_instances_of_its_data_folder(shipped):
    from mechaudit.paths import DATA_DIR

    s = shipped[0]
    assert [i.id for i in s.instances] == ["A", "B", "C", "D"]
    assert [i.finding for i in ch.setup(DATA_DIR).instances] == [i.finding for i in s.instances]


def test_component_percent_rounds_to_one_decimal():
    components = pd.DataFrame({"initiating": [True, True, False], "route": [True] * 3, "terminal": [True] * 3})
    table = ch.component_percent(components, kinds=["first_step_swapped"] * 3)
    assert table.loc["first_step_swapped"].tolist() == [33.3, 0.0, 0.0]


def test_examples_draw_with_seed_0_by_default_and_name_their_columns(shipped):
    s, judges, *_ = shipped
    components = judges["step"].components(s.pairs)
    ex = ch.examples(s.pairs, components, kinds=s.kinds)
    assert ex.index.name == "kind"
    assert list(ex.columns) == ["what changed", "original chain", "variant chain", "step judge: different"]
    assert ex.equals(ch.examples(s.pairs, components, kinds=s.kinds, seed=0))
    assert not ex.equals(ch.examples(s.pairs, components, kinds=s.kinds, seed=1))
    a, b = s.pairs[s.kinds.index("wording_only")]
    assert ex.loc["wording_only", "variant chain"].count(" -> ") == len(b.chain) - 1


def test_reversal_check_is_the_numbered_table():
    from mechaudit.report.tables import CAPTION_ATTR

    table = ch.reversal_check([], ch.reference_judges(["full"]))
    assert table.attrs[CAPTION_ATTR][1] == "tbl-ch06-reversal" and table.index.name == "judge"


def small(shipped, instances=None, per_kind: int = 2) -> ch.RubricSetup:
    """The first ``per_kind`` pairs of every kind of the shipped template-built suite."""
    s = shipped[0]
    keep = [i for k in KINDS for i in [j for j, kind in enumerate(s.kinds) if kind == k][:per_kind]]
    return ch.RubricSetup([s.pairs[i] for i in keep], [s.kinds[i] for i in keep],
                          s.instances if instances is None else instances)


def test_the_recorded_judge_is_asked_with_the_setups_findings(shipped):
    other = {i.id: "another finding" for i in shipped[0].instances}
    own = ch.replay_selfserved(small(shipped, other), ["full"], selfserved.recorded(False))
    assert own.recorded == {"full": 0}  # never asked with these findings: nothing recorded


def test_the_self_served_order_table_joins_the_agreement(shipped):
    s = small(shipped)
    own = ch.replay_selfserved(s, ["full"], selfserved.recorded(False))
    reference = ch.reference_decisions(s.pairs, ch.reference_judges(["full"]))
    effects = ch.selfserved_effects(own, reference)
    table = ch.selfserved_order_table(effects)
    assert list(table.columns) == [*effects.table.columns, "agreement with reference"]
    assert table.loc["full", "agreement with reference"] == effects.vs_reference["full"]


def llm_pct() -> pd.DataFrame:
    """% different per kind with the paper's LLM values for first-step swaps and the reference judges'."""
    from mechaudit.paper import reported

    fss = {r: reported(f"rubric.first_step_swapped_pct_different.{r}") for r in ("none", "full", "step")}
    return pd.DataFrame({**{f"llm {r}": [v] for r, v in fss.items()},
                         **{f"reference {r}": [100.0] for r in fss}}, index=["first_step_swapped"])


def test_chapter_facts_of_an_llm_run_judge_the_headline_against_the_paper(shipped):
    from mechaudit.book.chapter import headline_provenance

    s, judges, *_ = shipped
    components = judges["step"].components(s.pairs)
    pct = llm_pct()
    facts = ch.chapter_facts(ChapterContext(RunSettings(backend="replay")), "m", pct, components, s, 0.5)
    expected = headline_provenance("ch06", True, ch.fss_by_rubric(pct, "llm"))
    assert (facts.headline_provenance, facts.headline_verdict) == expected
    assert expected != headline_provenance("ch06", True)  # the values decide the verdict
    assert facts.answer == ch.answer(pct, True) != ch.answer(pct, False)
    assert facts.headline_status == "LLM (m, replay)"
    never = (s.pairs[0][0], s.pairs[0][0])  # a hypothesis against itself was never asked
    own = ch.replay_selfserved(ch.RubricSetup([*s.pairs[:2], never], s.kinds[:3], s.instances), ["full"],
                               selfserved.recorded(False))
    offline = ch.chapter_facts(ChapterContext(RunSettings()), "m", pct, components, s, 0.5, own=own)
    assert offline.selfserved_coverage == ch.selfserved_sentences(own, pct, None, False)[0] != \
        selfserved.NOT_REPLAYED[0]
    rewordings = [i for i, k in enumerate(s.kinds) if not k.endswith("_swapped")][:4]
    plain = ch.RubricSetup([s.pairs[i] for i in rewordings], [s.kinds[i] for i in rewordings], s.instances)
    none = ch.chapter_facts(ChapterContext(RunSettings()), "m", pct, judges["step"].components(plain.pairs), plain, 0.5)
    assert none.min_jaccard_swapped is None and none.min_chain_swapped is None  # no swapped pair


def test_paper_rows_of_llm_calls_name_the_model_and_count_the_flips():
    call = {"full": calls({0: ["same", "same", "different"], 1: ["same", "same", "same"]}),
            "step": calls({0: ["same", "different", "different"], 1: ["different", "different", "same"]}),
            "none": calls({0: ["same", "same", "same"], 1: ["different", "different", "same"]})}
    llm = ch.RubricLLM(pd.DataFrame({f"llm {r}": pd.array([True, True], dtype="boolean") for r in call}), call, None)
    decisions = pd.concat([llm.decisions, pd.DataFrame({f"reference {r}": [True, False] for r in call})], axis=1)
    effects = ch.order_effects(llm, decisions, list(call), 2)
    assert effects.shared.index.name == "prompt"
    rows = ch.paper_rows(llm_pct(), effects, list(call), backend=Backend.REPLAY, model="m")
    assert rows[0] == ("rubric.first_step_swapped_pct_different.step", 96, "m, replay")
    values = {r[0]: r[1] for r in rows}
    # reversal changed: full 1 pair, step 2, none 1 of 2 pairs each: 50, 100, 50 %
    assert values["rubric.order_reversal_changed_pct"] == round((50 + 100 + 50) / 3, 1)
    assert values["rubric.order_reversal_shared_with_none"] == 1  # pair 1: flipped by step and none


def test_llm_steps_with_the_fake_api(shipped, tmp_path, api_key):
    from fake_anthropic import FakeAnthropic, client_for, workflow_reply

    def reply(body):  # model b calls every pair the same
        return json.dumps({"verdict": "same", "reason": "r"}) if body["model"] == "b" else workflow_reply(body)

    s = small(shipped, per_kind=1)
    fake = FakeAnthropic(reply)
    llm = ch.judge_rubrics_with_llm(s.pairs, ["full"], s.instances, client=client_for(fake, tmp_path), model="a")
    assert len(fake.message_bodies) == len(llm.calls["full"]) == 3 * 4  # every order of every pair
    first = [a.chain[0].text == b.chain[0].text for a, b in s.pairs]
    assert llm.decisions["llm full"].tolist() == first
    table, ranges = ch.rubric_model_axis(s.pairs, llm, ["full"], ["a", "b", "a"], kinds=s.kinds,
                                         orders=["ab", "ab", "ba"], instances=s.instances)
    assert sum(b["model"] == "b" for b in fake.message_bodies) == 2 * 4  # early stop: two agreeing calls per pair
    assert table.index.names == ["rubric", "model_a", "model_b"]
    assert table.loc[("full", "a", "b"), "raw_agreement"] == float(np.mean(first))
    assert ranges.index.tolist() == ["full: first_step_swapped", "full: middle_step_swapped"]
    assert ranges.loc["full: first_step_swapped", "spread"] == 100.0


def test_the_model_axis_reuses_the_first_models_decisions(shipped, tmp_path, api_key):
    from fake_anthropic import FakeAnthropic, client_for

    s = small(shipped, per_kind=3)
    fake = FakeAnthropic(lambda body: json.dumps({"verdict": "same", "reason": "r"}))  # model b: all the same
    first = pd.array([False, True, True] * 4, dtype="boolean")  # model a: a third of every kind different
    llm = ch.RubricLLM(pd.DataFrame({"llm full": first}), {}, client_for(fake, tmp_path))
    table, ranges = ch.rubric_model_axis(s.pairs, llm, ["full"], ["a", "b"], kinds=s.kinds,
                                         orders=["ab", "ab", "ba"], instances=s.instances)
    assert {b["model"] for b in fake.message_bodies} == {"b"}  # a's decisions are not asked again
    assert ranges.loc["full: first_step_swapped"].tolist()[:3] == [0.0, 33.3, 33.3]  # rounded to 1 decimal
    assert table.loc[("full", "a", "b"), "raw_agreement"] == round(8 / 12, 3)


def test_the_plan_asks_every_order_of_the_main_judge_and_early_stops_the_axis(small_data_dir):
    from collections import Counter

    from mechaudit.perturb import load_suite

    p = {"data_dir": str(small_data_dir), "judge_model": "m", "judge_models": ["n"], "rubrics": ["step", "full"],
         "judge_orders": ["ab", "ab", "ba"]}
    planned = ch.plan(p)
    n = len(load_suite(small_data_dir / "perturbations.jsonl", valid_only=True))
    assert n == 5 and Counter((x.stage, x.exact) for x in planned) == Counter({
        ("judge m (step)", True): 3 * n, ("judge m (full)", True): 3 * n, ("judge n (step)", True): 2 * n,
        ("judge n (full)", True): 2 * n, ("judge n (step), early-stop extra (upper bound)", False): n,
        ("judge n (full), early-stop extra (upper bound)", False): n})
    assert "one component at a time" in planned[0].request.system and planned[0].request.model == "m"
