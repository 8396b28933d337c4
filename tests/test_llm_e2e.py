"""End to end against fake APIs, read from the session's shared run (``shared_run``): the paper
parameter set (small sizes, someone else's data) ran every chapter but 01 against a fake Anthropic
API on 127.0.0.1 (and chapter 05's judge against a fake OpenAI-compatible server). The chapters ran
in papermill kernels (separate processes) and reached the fakes through ``ANTHROPIC_BASE_URL`` and
``llm_base_url``; no key is a parameter: a fake key was set in the environment only.

What the second and third passes of this test used to show is checked without running a chapter
again: a second run would send nothing (the estimate finds every request in the cache), and
``replay`` reproduces the LLM steps of chapters 03 (workflow and engagement labels) and 06 (every
rubric) through their modules, with the chapters' own parameters.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from shared_run import FAKE_KEY, LOCAL_JUDGE_CHAPTERS, MECHAUDIT_DATA_CHAPTERS, THEIR_DATA
from test_glue import glued_texts

from mechaudit.book.estimate import chapter_params, estimate_chapters
from mechaudit.book.params import notebook_parameters, resolve_chapter
from mechaudit.report.outputs import save

pytestmark = pytest.mark.e2e


def prompt_kind(body: dict) -> str:
    system = body["system"] if isinstance(body["system"], str) else body["system"][0]["text"]
    user = body["messages"][0]["content"]
    if "You are the proposer" in system:
        return "develop" if "Opening hypothesis to develop" in user else "revise"
    for marker, kind in (("You are the critic", "critique"), ("engaged with a critic", "engagement"),
                         ("one component at a time", "judge step"), ("Two hypotheses describe", "judge full"),
                         ("describe the same mechanism", "judge none"), ("blind comparison", "tau judge")):
        if marker in system:
            return kind
    return "other"


def text_outputs(path: Path) -> list[str]:
    """Per code cell, its text outputs (stdout joined, rich outputs' text/plain; no images, no stderr)."""
    out = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code" or "injected-parameters" in cell.metadata.get("tags", []):
            continue
        parts = []
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream" and o.get("name") != "stdout":
                continue
            text = o.get("text") or o.get("data", {}).get("text/plain") or ""
            parts.append("".join(text) if isinstance(text, list) else text)
        out.append("".join(parts))
    return out


def llm_chapters(run) -> list[str]:
    return [s for s in run.stems if "cache_dir" in notebook_parameters(resolve_chapter(s).source)]


def overrides(run, stem: str) -> dict:
    """The ``-p`` values (and the data folder MECHAUDIT_DATA named) the shared run gave ``stem``."""
    if stem in MECHAUDIT_DATA_CHAPTERS + LOCAL_JUDGE_CHAPTERS:
        return {"data_dir": str(Path(run.root) / THEIR_DATA)}
    return {}


def test_every_prompt_reached_the_fakes_and_every_answer_was_cached(shared_run):
    from mechaudit.llm import ResponseCache

    assert shared_run.server_errors == []
    kinds = {prompt_kind(b) for b in shared_run.anthropic_bodies}
    assert {"develop", "critique", "revise", "engagement", "judge full", "judge step", "judge none",
            "tau judge"} <= kinds
    assert "other" not in kinds
    assert shared_run.openai_bodies and {b["model"] for b in shared_run.openai_bodies} == {"tiny-judge"}
    # cache_dir honoured by every chapter: each request sent is recorded in the given cache
    assert len(ResponseCache(shared_run.cache)) == len(shared_run.anthropic_bodies) + len(shared_run.openai_bodies)


def test_a_second_run_would_send_nothing(shared_run):
    """The estimate (the planner replays the workflow from the cache, then plans the exact judge
    requests) finds every request of every LLM chapter in the cache: nothing is left to send."""
    from mechaudit.book.estimate import PLANS

    stems = [s for s in llm_chapters(shared_run) if s in PLANS]  # 09 has no cost plan
    assert len(stems) >= 7
    for stem in stems:
        base_url = _local_url(shared_run) if stem in LOCAL_JUDGE_CHAPTERS else None
        table = estimate_chapters([stem], params_file=shared_run.params, overrides=overrides(shared_run, stem),
                                  prices=shared_run.prices, base_url=base_url)
        sure = table[~table["stage"].str.contains("early-stop extra")]
        assert sure["requests"].sum() > 0, stem
        assert sure["to_send"].sum() == 0, f"{stem}: a second run would send\n{sure.to_string()}"


def _local_url(run) -> str:
    import yaml

    (url,) = yaml.safe_load(Path(run.prices).read_text())["endpoints"]
    return url


def _same_csv(name: str, frame: pd.DataFrame, folder: Path, tmp_path: Path) -> None:
    """``frame`` saved as the chapter saves it equals the chapter's ``name.csv``."""
    save(name, frame, tmp_path)
    assert (tmp_path / f"{name}.csv").read_text() == (folder / f"{name}.csv").read_text(), name


def test_replay_reproduces_chapter_03s_workflow_and_labels(shared_run, tmp_path):
    from mechaudit.book import ch03_critique_engagement as ch
    from mechaudit.llm import get_client
    from mechaudit.workflow import workflow_setup

    p = chapter_params(resolve_chapter("03_critique_engagement"), shared_run.params)
    client = get_client("replay", cache_dir=shared_run.cache)
    setup = workflow_setup(client, data_dir=p["data_dir"], design_file=p["design_file"],
                           simulator_file=p["simulator_file"], seed=p["seed"], generator_model=p["generator_model"],
                           json_retries=p["json_retries"])
    labelled = ch.label_runs(setup.delivery, p["judge_model"], p["json_retries"])
    assert len(labelled) > 0
    _same_csv("engagement", ch.shares_table(labelled, None), shared_run.folder("03_critique_engagement"), tmp_path)


def test_replay_reproduces_chapter_06s_llm_rubrics(shared_run, tmp_path):
    from mechaudit.book import ch06_rubric_sensitivity as ch
    from mechaudit.llm import get_client
    from mechaudit.perturb import KINDS
    from mechaudit.rules.audit import percent_different

    p = chapter_params(resolve_chapter("06_rubric_sensitivity"), shared_run.params)
    s = ch.setup(p["data_dir"])
    replay = get_client("replay", cache_dir=shared_run.cache)
    llm = ch.judge_rubrics_with_llm(s.pairs, p["rubrics"], s.instances, client=replay, model=p["judge_model"],
                                    orders=p["judge_orders"])
    decisions = pd.concat([ch.reference_decisions(s.pairs, ch.reference_judges(p["rubrics"], p["jaccard_threshold"])),
                           llm.decisions], axis=1)
    pct = percent_different(decisions, kinds=s.kinds, order=KINDS)
    _same_csv("percent_different", pct.astype(object).where(pct.notna(), "undecided"),
              shared_run.folder("06_rubric_sensitivity"), tmp_path)


def test_the_chapters_say_what_ran(shared_run):
    shown = " ".join(text_outputs(shared_run.notebook("02_critique_depth")))
    assert "Excluded: 0 hypotheses" in shown and "LLM judge: 0 matched pairs undecided" in shown
    assert "simulation-only" in " ".join(text_outputs(shared_run.notebook("02b_validity")))
    for stem in llm_chapters(shared_run):
        assert len(" ".join(text_outputs(shared_run.notebook(stem)))) > 500, stem  # the chapter shows results


def test_a_value_the_small_design_cannot_estimate_is_said_in_words(shared_run):
    """Never shown as "nan" or "inf"."""
    unknown = {f"{stem}: {name}": text for stem in shared_run.stems
               for name, text in glued_texts(shared_run.notebook(stem)).items()
               if re.search(r"\b(nan|inf)\b", text, re.IGNORECASE)}
    assert unknown == {}


def test_the_api_key_is_never_written(shared_run):
    root = Path(shared_run.root)
    files = [p for p in root.rglob("*") if p.is_file()]
    assert len(files) > 50
    assert [p for p in files if FAKE_KEY.encode() in p.read_bytes()] == []
