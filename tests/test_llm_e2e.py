"""End to end: the paper parameter set (with a small design) runs every chapter against a fake
Anthropic API on 127.0.0.1, a second run of the LLM chapters sends nothing, and ``replay``
reproduces their notebooks. (The simulation-only chapters send nothing under any backend; they run
once, in the first pass.)

The chapters run in papermill kernels (separate processes); they reach the fake through
``ANTHROPIC_BASE_URL``, which the anthropic SDK reads itself. No key is a parameter: a fake key is
set in the environment only. Slow (every chapter three times): marked ``e2e``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import yaml
from fake_anthropic import FakeAnthropicServer
from test_glue import glued_texts

from mechaudit.book.params import toc_chapters
from mechaudit.paths import DATA_DIR, PARAMS_DIR, REPO_ROOT

pytestmark = pytest.mark.e2e

MECHAUDIT = [sys.executable, "-m", "mechaudit.cli"]
FAKE_KEY = "fake-" + "e2e-key"
PAIRS_PER_KIND = 4  # perturbation pairs kept per kind in the small data folder

# Per-chapter size overrides that keep the run short; a name a chapter no longer defines is dropped.
SMALL = {
    "02_critique_depth": {"rules": ["reference", "tfidf"]},
    "02b_validity": {"truth_runs_per_depth": 4, "n_replications": 4, "n_null_replications": 4,
                     "n_text_replications": 2},
    "04_equivalence_rules": {"rules": ["reference", "tfidf"]},
    "02c_robustness": {"robust_axes": {"p_find": [0.5, 1.0], "weak_scale": [1.0], "conceded": [0.85]},
                       "alternatives_axes": {"p_find": [1.0], "evidence_weight": [1.0, 8.0]},
                       "truth_runs_per_depth": 6, "pick_quantiles": [1.0], "n_text_replications": 1,
                       "power_check_runs_per_depth": 6, "power_designs": [[2, 5]], "power_ladder": [2, 3],
                       "n_power_replications": 6, "n_pools": 2, "pool_runs_per_depth": 20, "n_resamples": 19},
    "07_sensitivity": {"stability_pairs": 8, "tfidf_sweep": [0.05, 0.95, 4], "embedding_sweep": [0.5, 0.98, 4]},
    "08_tau_calibration": {"n_patterns": 3, "papers_per_pattern": 8, "n_pairs": 200, "n_reps": 2,
                           "n_stories": 10, "misspec_reps": 1, "llm_pairs": 12},
}


def small_data(folder: Path) -> Path:
    """The committed data with a perturbation suite of ``PAIRS_PER_KIND`` valid pairs per kind."""
    folder.mkdir()
    for name in ("hypotheses.jsonl", "instances.yaml", "vocabulary.yaml", "paper_reported.yaml"):
        shutil.copy(DATA_DIR / name, folder / name)
    kept, per_kind = [], {}
    for line in (DATA_DIR / "perturbations.jsonl").read_text().splitlines():
        item = json.loads(line)
        if item["valid"] and per_kind.get(item["kind"], 0) < PAIRS_PER_KIND:
            per_kind[item["kind"]] = per_kind.get(item["kind"], 0) + 1
            kept.append(line)
    (folder / "perturbations.jsonl").write_text("\n".join(kept) + "\n")
    return folder


def small_paper_params(tmp: Path) -> Path:
    """params/paper.yaml with a 1-instance design (depths 0, 1, 5; 2 runs each), the small data
    folder, a fresh cache and the ``SMALL`` sizes."""
    from mechaudit.book.params import notebook_parameters

    doc = yaml.safe_load((PARAMS_DIR / "paper.yaml").read_text())
    path = tmp / "paper_small.yaml"
    doc["common"].update(cache_dir=str(tmp / "cache"), data_dir=str(small_data(tmp / "data")),
                         design_file=str(path))
    doc["design"] = {"instances": ["A"], "depths": [0, 1, 5], "runs_per_depth": 2}
    for chapter in toc_chapters():
        defined = notebook_parameters(chapter.source)
        wanted = {k: v for k, v in SMALL.get(chapter.stem, {}).items() if k in defined}
        if wanted:
            doc.setdefault(chapter.stem, {}).update(wanted)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def execute(params: Path, out: Path, env: dict[str, str], stems: list[str], *extra: str) -> float:
    """Run ``mechaudit execute`` on ``stems``; returns the wall time (s) and prints each chapter's."""
    start = time.perf_counter()
    proc = subprocess.run([*MECHAUDIT, "execute", *stems, "--params", str(params), "--out", str(out), *extra],
                          capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    print("\n".join(line for line in proc.stderr.splitlines() if " done in " in line), file=sys.stderr)
    return time.perf_counter() - start


#: Marks of a usage-ledger output: its sent / from-cache counts differ between a first and a cached run.
LEDGER_WORDS = ("USD", "cost_usd", "tokens", "requests sent", "from the cache", "from cache")
BACKEND_NAME = re.compile(r"\b(anthropic|replay)\)?|\S*\.\.\.")  # and any cell pandas truncated


def text_outputs(path: Path) -> list[str]:
    """Per code cell, its text outputs (stdout joined, rich outputs' text/plain; no images, no
    stderr) with the backend name and the run's own output folder masked and whitespace collapsed
    (a longer name widens pandas' columns); a cell that reports LLM usage (``LEDGER_WORDS``) is left out."""
    nb = nbformat.read(path, as_version=4)
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code" or "injected-parameters" in cell.metadata.get("tags", []):
            continue
        parts = []
        for o in cell.get("outputs", []):
            if o.get("output_type") == "stream" and o.get("name") != "stdout":
                continue
            text = o.get("text") or o.get("data", {}).get("text/plain") or ""
            parts.append("".join(text) if isinstance(text, list) else text)
        text = "".join(parts).replace(str(path.parent), "RUN_FOLDER")
        if not any(w in text for w in LEDGER_WORDS):
            out.append(" ".join(BACKEND_NAME.sub("B", text).split()))
    return out


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


def test_paper_parameters_run_every_chapter_against_a_fake_api_then_from_cache_then_replay(tmp_path):
    from mechaudit.book.params import notebook_parameters
    from mechaudit.llm import ResponseCache

    params = small_paper_params(tmp_path)
    stems = [c.stem for c in toc_chapters()]
    llm_stems = [c.stem for c in toc_chapters() if "cache_dir" in notebook_parameters(c.source)]
    with FakeAnthropicServer() as server:
        env = {**os.environ, "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": FAKE_KEY}
        first_s = execute(params, tmp_path / "run1", env, stems)
        assert server.errors == []
        sent = len(server.bodies)
        kinds = {prompt_kind(b) for b in server.bodies}
        assert {"develop", "critique", "revise", "engagement", "judge full", "judge step", "judge none",
                "tau judge"} <= kinds
        assert "other" not in kinds
        # cache_dir honoured by every chapter: each request sent is recorded in the given cache
        assert len(ResponseCache(tmp_path / "cache")) == sent
        second_s = execute(params, tmp_path / "run2", env, llm_stems)
        assert len(server.bodies) == sent, "a second run must be answered from the cache"
    # replay: no key, an address where nothing listens
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    env["ANTHROPIC_BASE_URL"] = "http://127.0.0.1:9"
    replay_s = execute(params, tmp_path / "run3", env, llm_stems, "-p", "backend", "replay")
    shown = " ".join(text_outputs(tmp_path / "run1" / "02_critique_depth.ipynb"))
    assert "Excluded: 0 hypotheses" in shown and "LLM judge: 0 matched pairs undecided" in shown
    assert "simulation-only" in " ".join(text_outputs(tmp_path / "run1" / "02b_validity.ipynb"))
    # a value the small LLM design cannot estimate is said in words, never shown as "nan" or "inf"
    unknown = {f"{stem}: {name}": text for stem in stems
               for name, text in glued_texts(tmp_path / "run1" / f"{stem}.ipynb").items()
               if re.search(r"\b(nan|inf)\b", text, re.IGNORECASE)}
    assert unknown == {}
    for stem in llm_stems:
        nb1, nb2, nb3 = (tmp_path / run / f"{stem}.ipynb" for run in ("run1", "run2", "run3"))
        assert len(" ".join(text_outputs(nb1))) > 500, stem  # the comparison below compares something
        assert text_outputs(nb1) == text_outputs(nb2), stem
        assert text_outputs(nb2) == text_outputs(nb3), stem
    print(f"e2e: {len(stems)} chapters, {sent} requests to the fake; first run {first_s:.0f} s, second "
          f"({len(llm_stems)} LLM chapters) {second_s:.0f} s, replay {replay_s:.0f} s", file=sys.stderr)
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and FAKE_KEY.encode() in p.read_bytes()]
    assert leaked == [], "the API key must never be written"
