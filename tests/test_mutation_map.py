"""The map of ``make mutation`` (``tests/mutation.py``): every file of the package in exactly one target,
every mapped test file present, a sample of at least a tenth of every function's mutants, and every
mutant of the modules issue 34 names."""

from __future__ import annotations

import fnmatch
import math
from pathlib import Path

import mutation
import pytest

SRC = mutation.ROOT / "src" / "mechaudit"
FULL = {"tau.anchors", "tau.judge", "tau.inference", "llm.client", "llm.pricing", "llm.session",
        "report.provenance", "workflow.intervals"}


def map_problems(files: list[str], modules: dict[str, mutation.Target]) -> list[str]:
    """Files (relative to the repository) in no target or in more than one."""
    problems = []
    for f in files:
        owners = [n for n, t in modules.items() if any(fnmatch.fnmatchcase(f, g) for g in t.files)]
        if len(owners) != 1:
            problems.append(f"{f}: {owners or 'no target'}")
    return problems


def _package_files() -> list[str]:
    return sorted(str(p.relative_to(mutation.ROOT)) for p in SRC.rglob("*.py"))


def test_every_file_of_the_package_is_in_exactly_one_target():
    assert len(_package_files()) > 100
    assert map_problems(_package_files(), mutation.MODULES) == []


def test_the_map_check_finds_a_missing_and_a_doubled_file():
    doubled = {**mutation.MODULES, "twice": mutation.Target(("src/mechaudit/divergence.py",), ())}
    assert map_problems(["src/mechaudit/new_module.py"], mutation.MODULES) == ["src/mechaudit/new_module.py: no target"]
    assert map_problems(["src/mechaudit/divergence.py"], doubled) == [
        "src/mechaudit/divergence.py: ['divergence', 'twice']"]


def test_every_mapped_and_deselected_test_exists():
    for name, target in mutation.MODULES.items():
        for test in target.tests + target.deselect:
            path, _, func = test.partition("::")
            assert (mutation.ROOT / path).is_file(), (name, test)
            if func:
                source = Path(mutation.ROOT / path).read_text(encoding="utf-8")
                assert f"def {func.split('[')[0]}(" in source, (name, test)


def test_the_named_modules_run_in_full_and_the_others_sample_a_tenth():
    assert {n for n, t in mutation.MODULES.items() if t.sample == mutation.ALL} == FULL
    assert {t.sample for n, t in mutation.MODULES.items() if n not in FULL} == {mutation.SAMPLE}
    assert all(not t.mutants for t in mutation.MODULES.values())  # every function of every target


@pytest.mark.parametrize("n", [1, 2, 9, 10, 11, 19, 20, 21, 99, 100, 101, 455, 1000])
def test_the_sample_takes_at_least_a_tenth_of_a_functions_mutants(n):
    """mutmut numbers a function's n mutants 1..n: the sample glob takes ceil(n / 10) of them."""
    names = [f"mechaudit.divergence.x_f__mutmut_{i}" for i in range(1, n + 1)]
    (glob,) = mutation.selection("divergence", mutation.SAMPLE)
    taken = [m for m in names if fnmatch.fnmatchcase(m, glob)]
    assert len(taken) == math.ceil(n / 10)
    assert len(taken) >= n / 10
    assert mutation.selection("llm.pricing", mutation.ALL) == ("mechaudit.*__mutmut_*",)
