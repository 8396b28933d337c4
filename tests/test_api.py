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
    with pytest.raises(AttributeError, match="attribute TfIdfRule"):
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


API_PAGES = sorted((REPO_ROOT / "book" / "api").glob("*.md"))


def test_api_pages_document_the_top_level_names():
    """book/api.md lists the top-level names; one page per module under book/api/ documents them."""
    overview = (REPO_ROOT / "book" / "api.md").read_text(encoding="utf-8")
    automodules = {m for page in API_PAGES
                   for m in re.findall(r"^\.\. automodule:: (\S+)", page.read_text(encoding="utf-8"), re.M)}
    for name, home in mechaudit._EXPORTS.items():
        assert re.search(rf"\b{re.escape(name)}\b", overview), f"book/api.md does not list {name}"
        assert home in automodules or home.rsplit(".", 1)[0] in automodules, f"no page of book/api/ documents {home}"
    listed = set(re.findall(r"\{doc\}`(api/\w+)`", overview))
    assert listed == {f"api/{p.stem}" for p in API_PAGES}, "book/api.md's module table and book/api/ differ"


def test_api_page_headings_are_words():
    """A page title is words (the module name follows in the text), so it never wraps inside code."""
    for page in API_PAGES:
        title = page.read_text(encoding="utf-8").splitlines()[0]
        assert title.startswith("# ") and "`" not in title and "mechaudit." not in title, f"{page.name}: {title!r}"


@pytest.mark.book
def test_built_api_page_has_an_entry_per_public_name(built_book):
    html = "".join((built_book / "book" / "api" / f"{p.stem}.html").read_text(encoding="utf-8") for p in API_PAGES)
    missing = [f"{home}.{name}" for name, home in mechaudit._EXPORTS.items() if f'id="{home}.{name}"' not in html]
    assert not missing, f"book/api/ renders no entry for {missing}"
    signatures = re.findall(r'<dt class="sig sig-object py"[^>]*>(.*?)</dt>', html, re.S)
    unreadable = [re.sub("<.*?>", "", s)[:120] for s in signatures if re.search(r"Annotated|~\w|MinLen\(", s)]
    assert not unreadable, f"signatures with Annotated metadata or module paths: {unreadable[:3]}"
    intro = (built_book / "book" / "intro.html").read_text(encoding="utf-8")
    assert '<a class="reference internal" href="api.html"><span class="doc">' in intro, "the intro does not link it"


def _functions(module):
    """Functions and methods defined in ``module`` (not imported into it); a dataclass's generated
    ``__init__`` (a record built by the chapter's own set-up) is not an argument list users type."""
    import dataclasses
    import inspect

    for _, obj in vars(module).items():
        if inspect.isfunction(obj) and obj.__module__ == module.__name__:
            yield obj.__qualname__, obj
        elif inspect.isclass(obj) and obj.__module__ == module.__name__:
            for attr, member in vars(obj).items():
                if inspect.isfunction(member) and not (attr == "__init__" and dataclasses.is_dataclass(obj)):
                    yield f"{obj.__qualname__}.{attr}", member


def test_kinds_is_keyword_only_everywhere():
    """One argument order for the percent_different family: a ``kinds`` parameter is always
    keyword-only, so no call can pass the kinds where the thresholds (or the validity flags) go."""
    import inspect

    seen, positional = [], []
    for name in MODULES:
        module = importlib.import_module(name)
        for qualname, func in _functions(module):
            param = inspect.signature(func).parameters.get("kinds")
            if param is None:
                continue
            seen.append(f"{name}.{qualname}")
            if param.kind is not inspect.Parameter.KEYWORD_ONLY:
                positional.append(f"{name}.{qualname}")
    assert "mechaudit.rules.audit.percent_different" in seen and "mechaudit.rules.audit.sweep_percent_different" in seen
    assert len(seen) >= 10, seen
    assert not positional, f"kinds is positional in: {positional}"


def test_kinds_passed_positionally_is_deprecated():
    """The previous release's positional kinds still work for one release, with a FutureWarning
    (tests/test_deprecation.py checks the results and the messages)."""
    import numpy as np
    import pandas as pd

    from mechaudit import deprecation
    from mechaudit.rules.audit import percent_different, suite_counts, sweep_percent_different

    deprecation._warned.clear()
    with pytest.warns(FutureWarning, match="call percent_different"):
        percent_different(pd.DataFrame({"r": [True]}), ["k"])
    with pytest.warns(FutureWarning, match="call sweep_percent_different"):
        sweep_percent_different(np.array([0.5]), [0.4], ["k"])
    with pytest.warns(FutureWarning, match="call suite_counts"):
        suite_counts(["k"], [True])
    deprecation._warned.clear()
