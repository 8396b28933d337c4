"""The session's one fake-API run of the chapters (fixture ``shared_run`` in ``conftest.py``).

Every chapter but 01 is executed once, on someone else's data (a copy of ``data/examples``,
``their_data``) where the chapter reads data, with ``params/paper.yaml`` (the real backend) and small
sizes, against fake APIs on loopback, into one run folder that the end-to-end, example-data,
run-safety, execution and local-endpoint tests all read. (Chapter 01 sends no LLM request; its
second kernel is the installed wheel's run in ``test_install.py``.) Three ``mechaudit execute``
calls, one kernel per chapter:

- ``MECHAUDIT_DATA_CHAPTERS`` find the data through ``MECHAUDIT_DATA`` (no ``data_dir``);
- ``LOCAL_JUDGE_CHAPTERS`` judge with ``LOCAL_MODEL`` on a fake OpenAI-compatible server
  (``-p llm_base_url``, price 0 from ``--prices``), with ``-p data_dir their_data`` relative to the
  caller's folder, and into a run folder that holds an earlier run's ``paper_comparison.csv``;
  ``mechaudit estimate`` is run for them first;
- every other chapter gets ``data_dir`` from the parameter file.

What a test needs is written to ``run.json`` (``SharedRun``): each call's stderr, the requests each
fake server received, the estimate's output and the committed notebooks' hashes before and after.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml
from fake_anthropic import FakeAnthropicServer

from mechaudit.book.params import notebook_parameters, toc_chapters
from mechaudit.paths import EXAMPLE_DIR, PARAMS_DIR, REPO_ROOT

MECHAUDIT = [sys.executable, "-m", "mechaudit.cli"]
FAKE_KEY = "fake-" + "e2e-key"
THEIR_DATA = "their_data"  # the copy of the example data, relative to the run's root folder
LOCAL_MODEL = "openai:tiny-judge"
MECHAUDIT_DATA_CHAPTERS = ("02_critique_depth",)
LOCAL_JUDGE_CHAPTERS = ("05_perturbations",)
#: the chapter whose second kernel is not this run's (``test_install.py`` runs it from the wheel)
NOT_RUN = ("01_problem",)
#: a file an earlier run left in the local-judge chapter's folder; the run must replace the folder whole
STALE = "paper_comparison.csv"

# Per-chapter size overrides that keep the run short; a name a chapter no longer defines is dropped.
SMALL = {
    "02_critique_depth": {"rules": ["mechanism_key", "reference", "tfidf"], "truth_runs_per_depth": 10},
    "02b_validity": {"truth_runs_per_depth": 4, "n_replications": 4, "n_null_replications": 4,
                     "n_text_replications": 2},
    "02c_robustness": {"robust_axes": {"p_find": [0.5, 1.0], "weak_scale": [1.0], "conceded": [0.85]},
                       "alternatives_axes": {"p_find": [1.0], "evidence_weight": [1.0, 8.0]},
                       "truth_runs_per_depth": 6, "truth_seeds": 1, "pick_quantiles": [1.0],
                       "n_text_replications": 1, "power_designs": [[2, 5]], "power_ladder": [2, 3],
                       "n_power_replications": 6, "n_pools": 2, "pool_runs_per_depth": 20, "n_resamples": 19},
    "04_equivalence_rules": {"rules": ["mechanism_key", "reference", "tfidf"]},
    "05_perturbations": {"regenerate_suite": True, "judge_model": LOCAL_MODEL},
    "07_sensitivity": {"stability_pairs": 8, "tfidf_sweep": [0.05, 0.95, 4], "embedding_sweep": [0.5, 0.98, 4]},
    "08_tau_calibration": {"n_patterns": 3, "papers_per_pattern": 8, "n_pairs": 200, "n_reps": 2,
                           "n_stories": 10, "misspec_reps": 1, "llm_pairs": 12},
}


@dataclass
class SharedRun:
    """What the tests read of the shared run; paths are absolute."""

    root: str  # the caller's folder: their_data/, params.yaml, prices.yaml
    out: str  # the run folder (--out): <stem>.ipynb and <stem>/ per chapter
    cache: str  # the LLM response cache every chapter used
    params: str
    prices: str
    stems: list[str]  # the chapters run, TOC order
    stderr: dict[str, str]  # per chapter: the stderr of the mechaudit execute call that ran it
    anthropic_bodies: list[dict]
    openai_bodies: list[dict]
    server_errors: list[str]
    estimate: str  # stdout of `mechaudit estimate` for LOCAL_JUDGE_CHAPTERS, before the run
    committed_before: dict[str, str]  # sha256 of notebooks/*.ipynb before the run
    committed_after: dict[str, str]

    @property
    def out_dir(self) -> Path:
        return Path(self.out)

    def notebook(self, stem: str) -> Path:
        return self.out_dir / f"{stem}.ipynb"

    def folder(self, stem: str) -> Path:
        return self.out_dir / stem

    @classmethod
    def load(cls, folder: Path) -> SharedRun:
        return cls(**json.loads((folder / "run.json").read_text(encoding="utf-8")))


def chapters() -> list[str]:
    return [c.stem for c in toc_chapters() if c.stem not in NOT_RUN]


def _params(root: Path, stems: list[str]) -> Path:
    """params/paper.yaml with a small design (every instance of their data, depths 0, 1, 5, two runs
    each), a fresh cache, ``data_dir`` for the chapters that take it from the file, and ``SMALL``."""
    doc = yaml.safe_load((PARAMS_DIR / "paper.yaml").read_text())
    path = root / "params.yaml"
    doc["common"].update(cache_dir=str(root / "cache"), design_file=str(path))
    doc["design"] = {"instances": "all", "depths": [0, 1, 5], "runs_per_depth": 2}
    for chapter in toc_chapters():
        if chapter.stem not in stems:
            continue
        defined = notebook_parameters(chapter.source)
        wanted = {k: v for k, v in SMALL.get(chapter.stem, {}).items() if k in defined}
        if "data_dir" in defined and chapter.stem not in MECHAUDIT_DATA_CHAPTERS + LOCAL_JUDGE_CHAPTERS:
            wanted["data_dir"] = THEIR_DATA  # relative to this file's folder
        if wanted:
            doc.setdefault(chapter.stem, {}).update(wanted)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _prices(root: Path, url: str) -> Path:
    table = yaml.safe_load((PARAMS_DIR / "prices.yaml").read_text())
    table["endpoints"] = {url: {"input": 0, "output": 0}}
    path = root / "prices.yaml"
    path.write_text(yaml.safe_dump(table))
    return path


def _committed() -> dict[str, str]:
    notebooks = sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in notebooks}


def _call(args: list[str], root: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(MECHAUDIT + args, cwd=root, env=env, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"mechaudit {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr[-6000:]}")
    return proc.stdout if args[0] == "estimate" else proc.stderr


def run(root: Path) -> SharedRun:
    """Execute the shared run under ``root`` (an empty folder) and write ``root/run.json``."""
    from fake_openai import FakeOpenAIServer

    stems = chapters()
    shutil.copytree(EXAMPLE_DIR, root / THEIR_DATA, ignore=shutil.ignore_patterns("embedding_cache"))
    out = root / "out"
    for stem in LOCAL_JUDGE_CHAPTERS:
        (out / stem).mkdir(parents=True)
        (out / stem / STALE).write_text("from an earlier run on the shipped data\n")
        (out / stem / ".mechaudit-run").write_text("")
    params = _params(root, stems)
    before = _committed()
    dropped = ("MECHAUDIT_DATA", "MECHAUDIT_ROOT", "MECHAUDIT_CACHE")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_")) and k not in dropped}
    base.update(PYTHONPATH=str(REPO_ROOT / "src"))  # embeddings: the checkout's store, as nbval's kernels
    stderr: dict[str, str] = {}
    with FakeAnthropicServer() as anthropic, FakeOpenAIServer() as local:
        base.update(ANTHROPIC_BASE_URL=anthropic.base_url, ANTHROPIC_API_KEY=FAKE_KEY)
        prices = _prices(root, local.base_url)
        common = ["--params", str(params), "--out", str(out)]
        own = [s for s in stems if s not in MECHAUDIT_DATA_CHAPTERS + LOCAL_JUDGE_CHAPTERS]
        text = _call(["execute", *own, *common], root, base)
        stderr.update(dict.fromkeys(own, text))
        env = {**base, "MECHAUDIT_DATA": str(root / THEIR_DATA)}
        text = _call(["execute", *MECHAUDIT_DATA_CHAPTERS, *common], root, env)
        stderr.update(dict.fromkeys(MECHAUDIT_DATA_CHAPTERS, text))
        local_args = [*LOCAL_JUDGE_CHAPTERS, "--params", str(params), "-p", "data_dir", THEIR_DATA,
                      "-p", "llm_base_url", local.base_url, "--prices", str(prices)]
        estimate = _call(["estimate", *local_args], root, base)
        text = _call(["execute", *local_args, "--out", str(out)], root, base)
        stderr.update(dict.fromkeys(LOCAL_JUDGE_CHAPTERS, text))
    result = SharedRun(root=str(root), out=str(out), cache=str(root / "cache"), params=str(params), prices=str(prices),
                       stems=stems, stderr=stderr, anthropic_bodies=anthropic.bodies, openai_bodies=local.bodies,
                       server_errors=anthropic.errors, estimate=estimate, committed_before=before,
                       committed_after=_committed())
    (root / "run.json").write_text(json.dumps(asdict(result)), encoding="utf-8")
    return result
