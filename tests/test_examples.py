"""A user's own data works for every chapter: the example set under ``data/examples/`` loads, its
committed suite is reproducible, and each chapter with a ``data_dir`` parameter ran on it in the
session's shared run (``shared_run``: ``mechaudit execute --out``, small sizes) and wrote tables
(CSV) and figures (SVG) that load. Chapter 01, which the shared run leaves to the wheel install
test, and the simulator's workflow that the offline backend runs in chapters 02-04 (the shared run
uses the LLM backend) run here in-process through their chapter modules on the example data.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import nbformat
import pandas as pd
import pytest
import shared_run as shared

import mechaudit
from mechaudit.book.params import notebook_parameters, resolve_chapter, toc_chapters
from mechaudit.paths import EXAMPLE_DIR, REPO_ROOT
from mechaudit.report.outputs import save


def _data_chapters() -> list[str]:
    return [c.stem for c in toc_chapters() if "data_dir" in notebook_parameters(c.source)]


def test_example_data_loads():
    bench = mechaudit.load_benchmark(EXAMPLE_DIR)
    assert [i.id for i in bench.instances] == ["U", "N"]
    assert len(bench.hypotheses) == 10 and all(len(bench.openings(i.id)) == 3 for i in bench.instances)
    assert {h.instance for h in bench.hypotheses} == {"U", "N"}


def test_example_suite_is_the_committed_one():
    bench = mechaudit.load_benchmark(EXAMPLE_DIR)
    built = mechaudit.make_suite(bench.hypotheses, seed=0, vocabulary=bench.vocabulary)
    committed = mechaudit.load_suite(EXAMPLE_DIR / "perturbations.jsonl")
    assert [(p["kind"], p["original"].id, p["valid"]) for p in built] == \
        [(p["kind"], p["original"].id, p["valid"]) for p in committed]
    assert [p["variant"].model_dump() for p in built if p["valid"]] == \
        [p["variant"].model_dump() for p in committed if p["valid"]]
    excluded = [(p["original"].id, p["kind"]) for p in built if not p["valid"]]
    assert excluded == [("U-01", "wording_only"), ("U-01", "wording_chain")]  # deliberate (README)


def test_every_data_chapter_is_covered():
    chapters = _data_chapters()
    assert "09_your_data" in chapters and "05_perturbations" in chapters and len(chapters) >= 9
    assert set(chapters) - set(shared.chapters()) == set(shared.NOT_RUN)  # 01: in-process below
    for stem, small in shared.SMALL.items():
        unknown = set(small) - set(notebook_parameters(REPO_ROOT / "notebooks" / f"{stem}.py"))
        assert not unknown, f"{stem} has no parameters {sorted(unknown)}"


def _own_tracebacks(stderr: str) -> list[str]:
    """Tracebacks in ``stderr`` other than the kernel's own shutdown noise (ipykernel/zmq print one
    now and then when the finished kernel's IO thread is stopped; the chapter has succeeded then)."""
    blocks = stderr.split("Traceback (most recent call last):")[1:]
    return [b for b in blocks if "site-packages/ipykernel/" not in b and "site-packages/zmq/" not in b]


def test_kernel_shutdown_noise_is_told_apart_from_a_real_traceback():
    noise = 'Traceback (most recent call last):\n  File "/v/site-packages/zmq/eventloop/zmqstream.py", line 5\n'
    real = 'Traceback (most recent call last):\n  File "/r/src/mechaudit/perturb.py", line 9\nKeyError: 1\n'
    assert _own_tracebacks("ok\n" + noise) == []
    assert len(_own_tracebacks(noise + real)) == 1


def _read_data_from(notebook: Path) -> str | None:
    """The ``data_dir`` injected into an executed notebook (None: not injected)."""
    for cell in nbformat.read(notebook, as_version=4).cells:
        if "injected-parameters" in cell.metadata.get("tags", []):
            for line in cell.source.splitlines():
                if line.startswith("data_dir = "):
                    return json.loads(line.removeprefix("data_dir = "))
    return None


@pytest.mark.parametrize("stem", [s for s in _data_chapters() if s not in shared.NOT_RUN])
def test_chapter_runs_on_the_example_data(stem, shared_run):
    assert _own_tracebacks(shared_run.stderr[stem]) == []
    their = str(Path(shared_run.root) / shared.THEIR_DATA)
    # the data is theirs: by data_dir (from the parameter file or -p, made absolute) or MECHAUDIT_DATA
    assert _read_data_from(shared_run.notebook(stem)) == (None if stem in shared.MECHAUDIT_DATA_CHAPTERS else their)
    folder = shared_run.folder(stem)
    tables, figures = sorted(folder.glob("*.csv")), sorted(folder.glob("*.svg"))
    assert tables, f"{stem} wrote no CSV under {folder}"
    assert figures, f"{stem} wrote no SVG under {folder}"
    for path in tables:
        assert len(pd.read_csv(path).columns) >= 1, path.name
    for path in figures:
        assert ET.parse(path).getroot().tag.endswith("svg"), path.name
        assert path.with_suffix(".png").is_file(), f"{path.name} has no PNG beside it"
    cells = json.loads(shared_run.notebook(stem).read_text(encoding="utf-8"))["cells"]
    errors = [o for c in cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors


def test_make_suite_without_the_users_vocabulary_is_a_clear_error(tmp_path):
    bench = mechaudit.load_benchmark(EXAMPLE_DIR)
    with pytest.raises(mechaudit.MechauditError, match=r"'U-01' names entity 'URAT1'.*pass your vocabulary"):
        mechaudit.make_suite(bench.hypotheses, seed=0)
    # the command reads the vocabulary beside the hypotheses: their own folder's
    cmd = [sys.executable, "-m", "mechaudit.cli", "perturb", "--hypotheses", str(EXAMPLE_DIR / "hypotheses.jsonl"),
           "--out", str(tmp_path / "suite.jsonl")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert mechaudit.load_suite(tmp_path / "suite.jsonl")  # the suite was written
    # a copy of the hypotheses without a vocabulary beside them: checked against the shipped one, with the hint
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "hypotheses.jsonl").write_bytes((EXAMPLE_DIR / "hypotheses.jsonl").read_bytes())
    cmd[5] = str(alone / "hypotheses.jsonl")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "hypotheses.jsonl:1: field 'chain[0].id': unknown vocabulary id 'URAT1'" in proc.stderr
    assert "--vocabulary FILE" in proc.stderr


def test_chapter_01_steps_run_on_the_example_data(tmp_path):
    """Chapter 01's data steps (its toy part reads no data) with ``data_dir`` = the example data."""
    from mechaudit.book import ch01_problem as problem

    bench = mechaudit.load_benchmark(EXAMPLE_DIR)
    instance = problem.pick_instance(bench, None)
    assert instance.id == "U"
    save("openings", problem.openings_table(bench, instance.id), tmp_path)
    assert len(pd.read_csv(tmp_path / "openings.csv")) == 3
    suite = problem.example_suite(bench, bench.openings(instance.id)[0], EXAMPLE_DIR, seed=0)
    save("perturbation_example", problem.perturbation_table(suite), tmp_path)
    assert len(pd.read_csv(tmp_path / "perturbation_example.csv")) >= len(suite) >= 4


def test_the_simulated_workflow_runs_on_the_example_data(tmp_path):
    """What the offline backend runs in chapters 02-04 on someone else's data: the simulator
    delivers the design's runs, chapter 03 labels every demand, chapter 04 measures diversity."""
    from mechaudit.book import ch03_critique_engagement as ch03
    from mechaudit.book import ch04_equivalence_rules as ch04
    from mechaudit.book.settings import RulesSettings
    from mechaudit.workflow import delivered_diversity, workflow_setup

    p = {**notebook_parameters(resolve_chapter("04_equivalence_rules").source)}
    setup = workflow_setup(None, data_dir=EXAMPLE_DIR, design_file=p["design_file"], seed=0)
    assert {run.instance for run in setup.delivery.runs} == {"U", "N"}
    labelled = ch03.label_runs(setup.delivery, p["judge_model"], p["json_retries"])
    shares = ch03.shares_table(labelled, None)
    assert len(labelled) > 0 and len(shares) >= 4
    rules = ch04.chapter_rules(RulesSettings(rules=["mechanism_key", "reference", "tfidf"],
                                             tfidf_threshold=p["tfidf_threshold"], judge_model=p["judge_model"],
                                             embedding_cache=False), None, setup.bench)
    div = delivered_diversity(setup.delivery.runs, rules)
    save("mean_diversity", ch04.rule_summary(div), tmp_path)
    assert len(pd.read_csv(tmp_path / "mean_diversity.csv")) == 3
