"""Import cost: a kernel or a command loads torch, sentence-transformers, the LLM SDKs and the HTTP
libraries only when a step needs them (an embedding to compute, a request to send)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from mechaudit.paths import REPO_ROOT

#: modules an offline chapter and the command line must not load
HEAVY = ("torch", "sentence_transformers", "transformers", "anthropic", "openai", "httpx", "httpx2")

OFFLINE = """
import importlib, json, sys
from mechaudit.book.chapter import ChapterContext
from mechaudit.book.params import toc_chapters
from mechaudit.cli import build_parser
from mechaudit.rules import ReferenceJudge, TfidfRule
from mechaudit.schema import load_benchmark

ctx = ChapterContext.open({"backend": "reference"}, "01_problem")
for chapter in toc_chapters():
    try:
        importlib.import_module(f"mechaudit.book.ch{chapter.stem}")
    except ModuleNotFoundError:
        pass  # a chapter without a module of its own
build_parser()
bench = load_benchmark()
pairs = [(bench.hypotheses[0], bench.hypotheses[1])]
ReferenceJudge(rubric="full").same(pairs), TfidfRule().same(pairs)
print(json.dumps([m for m in HEAVY if m in sys.modules]))
"""


def loaded(code: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    proc = subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{code}"], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_offline_path_loads_no_model_sdk_or_http_library():
    assert loaded(OFFLINE) == []


def test_the_check_sees_a_heavy_import():
    """The check can fail: it sees a module that was loaded (and the ones that come with it)."""
    code = "import json, sys, anthropic\nprint(json.dumps([m for m in HEAVY if m in sys.modules]))"
    assert {"anthropic", "httpx2"} <= set(loaded(code))
