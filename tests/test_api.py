"""The public API: every ``__all__`` name resolves, the top-level names are their home modules'
objects, ``import mechaudit`` stays cheap, and the book's API page covers the public surface."""

from __future__ import annotations

import importlib
import pkgutil
import re
import subprocess
import sys

import pytest

import mechaudit
from mechaudit.paths import REPO_ROOT

#: modules with a side effect on import or an optional SDK (never part of the public surface)
SKIP = {"mechaudit.cli.__main__"}


def _modules() -> list[str]:
    names = ["mechaudit"]
    for info in pkgutil.walk_packages(mechaudit.__path__, prefix="mechaudit."):
        if info.name not in SKIP:
            names.append(info.name)
    return sorted(names)


MODULES = _modules()


def test_every_all_name_resolves():
    checked = 0
    for name in MODULES:
        module = importlib.import_module(name)
        public = getattr(module, "__all__", None)
        if public is None:
            continue
        checked += 1
        assert len(public) == len(set(public)), f"{name}.__all__ repeats a name"
        missing = [n for n in public if not hasattr(module, n)]
        assert not missing, f"{name}.__all__ names missing attributes: {missing}"
    assert checked >= 12


def test_curated_modules_declare_all():
    for name in ["mechaudit", "mechaudit.schema", "mechaudit.perturb", "mechaudit.rules", "mechaudit.rules.audit",
                 "mechaudit.divergence", "mechaudit.diversity", "mechaudit.agreement", "mechaudit.tau",
                 "mechaudit.workflow", "mechaudit.plots", "mechaudit.llm"]:
        assert hasattr(importlib.import_module(name), "__all__"), name


def test_top_level_names_are_the_home_objects():
    for name, home in mechaudit._EXPORTS.items():
        module = importlib.import_module(home)
        assert getattr(mechaudit, name) is getattr(module, name), name
        assert name in getattr(module, "__all__", [name]), f"{name} is not in {home}.__all__"
    from mechaudit.rules.audit import decisions_table
    from mechaudit.schema import load_benchmark

    assert mechaudit.load_benchmark is load_benchmark and mechaudit.decisions_table is decisions_table


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'TfIdfRule'"):
        mechaudit.TfIdfRule  # noqa: B018 (a misspelling must not resolve)
    assert "TfidfRule" in dir(mechaudit) and "rules" in dir(mechaudit)


def test_import_mechaudit_is_cheap():
    code = ("import sys, mechaudit; heavy = sorted({m.split('.')[0] for m in sys.modules} & "
            "{'torch', 'sentence_transformers', 'transformers', 'pandas', 'sklearn', 'anthropic'}); print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_rules_import_does_not_load_torch():
    code = "import sys, mechaudit.rules, mechaudit.perturb, mechaudit.tau; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"


def test_api_page_documents_the_top_level_names():
    page = (REPO_ROOT / "book" / "api.md").read_text(encoding="utf-8")
    for name, home in mechaudit._EXPORTS.items():
        assert re.search(rf"\b{re.escape(home)}\b", page), f"book/api.md does not document {home}"
        assert re.search(rf"\b{re.escape(name)}\b", page), f"book/api.md does not list {name}"


@pytest.mark.book
def test_built_api_page_has_an_entry_per_public_name(built_book):
    html = (built_book / "book" / "api.html").read_text(encoding="utf-8")
    missing = [f"{home}.{name}" for name, home in mechaudit._EXPORTS.items() if f'id="{home}.{name}"' not in html]
    assert not missing, f"book/api.md renders no entry for {missing}"
    intro = (built_book / "book" / "intro.html").read_text(encoding="utf-8")
    assert '<a class="reference internal" href="api.html"><span class="doc">' in intro, "the intro does not link it"
