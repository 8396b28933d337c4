"""A user's own data works for every chapter: the example set under ``data/examples/`` loads, its
committed suite is reproducible, and each chapter with a ``data_dir`` parameter runs on it with
``mechaudit execute --out`` and writes tables (CSV) and figures (SVG) that load.

The chapter runs use small parameters (fewer replications, shorter sweeps), since the point is that
they run and write their files on other data, not their numbers.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
import yaml

import mechaudit
from mechaudit.book.params import notebook_parameters, toc_chapters
from mechaudit.paths import EXAMPLE_DIR, REPO_ROOT

#: the example folder as a relative path (chapters read relative data_dir from the current folder)
EXAMPLE_REL = EXAMPLE_DIR.relative_to(REPO_ROOT).as_posix()

#: small settings per chapter (only names a chapter defines are passed on)
SMALL: dict[str, dict] = {
    "02_critique_depth": {"rules": ["mechanism_key", "reference", "tfidf"], "truth_runs_per_depth": 10},
    "02b_validity": {"truth_runs_per_depth": 10, "n_replications": 4, "n_null_replications": 8,
                     "n_text_replications": 2},
    "02c_robustness": {
        "robust_axes": {"p_find": [0.5, 1.0], "weak_scale": [1.0], "conceded": [0.85]},
        "alternatives_axes": {"p_find": [1.0], "evidence_weight": [1.0, 8.0]},
        "truth_runs_per_depth": 5, "pick_quantiles": [1.0], "n_text_replications": 2,
        "power_check_runs_per_depth": 10, "power_designs": [[2, 5]], "power_ladder": [2, 3],
        "n_power_replications": 4, "n_pools": 2, "pool_runs_per_depth": 10, "n_resamples": 9},
    "04_equivalence_rules": {"rules": ["mechanism_key", "reference", "tfidf"]},
    "05_perturbations": {"regenerate_suite": True},
    "07_sensitivity": {"tfidf_sweep": [0.05, 0.95, 5], "embedding_sweep": [0.5, 0.98, 5], "stability_pairs": 20},
}


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
    for stem, small in SMALL.items():
        assert stem in chapters, stem
        unknown = set(small) - set(notebook_parameters(REPO_ROOT / "notebooks" / f"{stem}.py"))
        assert not unknown, f"{stem} has no parameters {sorted(unknown)}"


def _run_chapter(stem: str, out: Path) -> subprocess.CompletedProcess:
    defined = notebook_parameters(REPO_ROOT / "notebooks" / f"{stem}.py")
    params = {"data_dir": EXAMPLE_REL, **SMALL.get(stem, {})}
    if "compare_paper" in defined:
        params["compare_paper"] = False
    cmd = [sys.executable, "-m", "mechaudit.cli", "execute", stem, "--out", str(out)]
    for name, value in params.items():
        cmd += ["-p", name, yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()]
    return subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)


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


@pytest.mark.parametrize("stem", _data_chapters())
def test_chapter_runs_on_the_example_data(stem, tmp_path):
    proc = _run_chapter(stem, tmp_path)
    assert proc.returncode == 0, f"{stem} failed on the example data:\n{proc.stderr[-3000:]}"
    assert _own_tracebacks(proc.stderr) == []
    folder = tmp_path / stem
    assert (tmp_path / f"{stem}.ipynb").is_file()
    tables, figures = sorted(folder.glob("*.csv")), sorted(folder.glob("*.svg"))
    assert tables, f"{stem} wrote no CSV under {folder}"
    assert figures, f"{stem} wrote no SVG under {folder}"
    for path in tables:
        assert len(pd.read_csv(path).columns) >= 1, path.name
    for path in figures:
        assert ET.parse(path).getroot().tag.endswith("svg"), path.name
        assert path.with_suffix(".png").is_file(), f"{path.name} has no PNG beside it"
    cells = json.loads((tmp_path / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"]
    errors = [o for c in cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors


def test_make_suite_without_the_users_vocabulary_is_a_clear_error(tmp_path):
    bench = mechaudit.load_benchmark(EXAMPLE_DIR)
    with pytest.raises(mechaudit.MechauditError, match=r"'U-01' names entity 'URAT1'.*pass your vocabulary"):
        mechaudit.make_suite(bench.hypotheses, seed=0)
    cmd = [sys.executable, "-m", "mechaudit.cli", "perturb", "--hypotheses", str(EXAMPLE_DIR / "hypotheses.jsonl"),
           "--out", str(tmp_path / "suite.jsonl")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().endswith("hypotheses.jsonl:1: field 'chain[0].id': unknown vocabulary id 'URAT1'")
