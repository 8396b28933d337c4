"""The package's static import graph: no cycle, layers that point down, ``llm/`` a leaf, and each
``mechaudit.llm`` module imports alone.

The graph is built from the source with :mod:`ast`, not by importing: every ``import mechaudit.x``,
``from mechaudit.x import y`` and relative import counts, at module level or inside a function
(a lazy import still closes a cycle, only later). Imports under ``if TYPE_CHECKING:`` never run
and are left out.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "mechaudit"


def module_names(src: Path = SRC, package: str = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under ``src/package``."""
    names = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST):
    """``(node, lazy)`` for every import that can run; ``lazy`` if it sits inside a function."""
    stack = [(tree, False)]
    while stack:
        node, lazy = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:  # the ``else`` branch does run
                    stack.append((sub, lazy))
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, lazy
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            stack.append((child, inner))


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: set[str]) -> list[str]:
    """Modules of the package that ``node`` (in ``module``) loads."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in known]
    if node.level:  # relative: resolve against the importing module's package
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        origin = ".".join(base + ([node.module] if node.module else []))
    else:
        origin = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{origin}.{alias.name}"
        if sub in known:  # ``from pkg import submodule``
            out.append(sub)
        elif origin in known:
            out.append(origin)
    return out


def import_graph(src: Path = SRC, package: str = PACKAGE) -> dict[str, dict[str, bool]]:
    """``graph[a][b]`` is ``True`` if ``a`` imports ``b`` only lazily (inside a function), ``False``
    if at least one import of ``b`` in ``a`` runs at module level."""
    files = module_names(src, package)
    known = set(files)
    graph: dict[str, dict[str, bool]] = {name: {} for name in files}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node, lazy in _runtime_imports(tree):
            for target in _targets(node, name, path.name == "__init__.py", known):
                if target != name:
                    graph[name][target] = graph[name].get(target, True) and lazy
    return graph


def find_cycle(graph: dict[str, dict[str, bool]]) -> list[str] | None:
    """One cycle as ``[a, b, ..., a]``, lazy edges included, or ``None``."""
    WHITE, GREY, BLACK = 0, 1, 2
    colour = dict.fromkeys(graph, WHITE)
    for root in sorted(graph):
        if colour[root] != WHITE:
            continue
        path = [root]
        colour[root] = GREY
        iters = [iter(sorted(graph[root]))]
        while iters:
            for nxt in iters[-1]:
                if colour[nxt] == GREY:
                    return path[path.index(nxt):] + [nxt]
                if colour[nxt] == WHITE:
                    colour[nxt] = GREY
                    path.append(nxt)
                    iters.append(iter(sorted(graph[nxt])))
                    break
            else:
                colour[path.pop()] = BLACK
                iters.pop()
    return None


def test_graph_builder_sees_every_kind_of_import(tmp_path):
    """A cross-check on a toy package: absolute, from-submodule, relative and lazy imports count;
    ``TYPE_CHECKING`` imports do not."""
    pkg = tmp_path / "toy"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("import toy.b\n")
    (pkg / "b.py").write_text("from toy.sub import c\n")
    (pkg / "sub" / "__init__.py").write_text("from .c import X\n")
    (pkg / "sub" / "c.py").write_text("def f():\n    from ..a import Y\nX = 1\n")
    (pkg / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toy import a\n")
    graph = import_graph(tmp_path, "toy")
    assert graph == {
        "toy": {}, "toy.a": {"toy.b": False}, "toy.b": {"toy.sub.c": False},
        "toy.sub": {"toy.sub.c": False}, "toy.sub.c": {"toy.a": True}, "toy.d": {},
    }
    assert find_cycle(graph) == ["toy.a", "toy.b", "toy.sub.c", "toy.a"]
    (pkg / "sub" / "c.py").write_text("def f():\n    pass\n")
    assert find_cycle(import_graph(tmp_path, "toy")) is None


def test_no_import_cycle_at_all():
    """No cycle, lazy imports counted: a function-level import that closes a cycle points the wrong way."""
    graph = import_graph()
    assert "mechaudit.llm.client" in graph and graph["mechaudit.llm.client"]  # the parse found imports
    cycle = find_cycle(graph)
    assert cycle is None, f"import cycle: {' -> '.join(cycle)}"


#: what a module of ``mechaudit.llm`` may import from the rest of the package
LLM_MAY_IMPORT = ("errors", "paths", "backends", "deprecation", "report.terminal")


def llm_upward_imports(graph: dict[str, dict[str, bool]], package: str = PACKAGE) -> list[tuple[str, str]]:
    """``(module, target)`` for every import from ``package.llm*`` to a module outside ``llm`` that is
    not one of the leaves ``LLM_MAY_IMPORT``, lazy or not."""
    inside = (f"{package}.llm", f"{package}.llm.")
    leaves = {f"{package}.{name}" for name in LLM_MAY_IMPORT}
    return sorted((a, b) for a, targets in graph.items() if a == inside[0] or a.startswith(inside[1])
                  for b in targets if not (b == inside[0] or b.startswith(inside[1]) or b in leaves))


def test_llm_imports_only_llm_and_leaves(tmp_path):
    """``llm/`` is a leaf layer: it imports ``llm`` modules and the leaves ``errors``, ``paths``,
    ``backends``, ``deprecation`` and ``terminal`` only. On a toy package the check finds a lazy upward import."""
    assert llm_upward_imports(import_graph()) == []
    pkg = tmp_path / "toy"
    (pkg / "llm").mkdir(parents=True)
    for name in ("__init__.py", "errors.py", "runner.py", "llm/__init__.py"):
        (pkg / name).write_text("")
    (pkg / "llm" / "client.py").write_text("from toy import errors\nfrom toy.llm import session\n")
    (pkg / "llm" / "session.py").write_text("def total():\n    from toy.runner import plan\n")
    assert llm_upward_imports(import_graph(tmp_path, "toy"), "toy") == [("toy.llm.session", "toy.runner")]


#: layer of every top-level module or package (DESIGN.md "Layers"): imports may only point down or
#: stay on their floor. 1 leaves, 2 ``llm``, 3 the domain, 4 the book runner, 5 the command line
LAYERS = {
    **dict.fromkeys(("errors", "paths", "backends", "deprecation", "model", "schema", "divergence", "diversity",
                     "agreement", "plots", "render", "paper", "report"), 1),
    "llm": 2,
    **dict.fromkeys(("rules", "perturb", "reworded", "workflow", "engagement", "tau"), 3),
    "book": 4,
    "cli": 5,
    "sphinxext": 5,  # the book build's extensions: they may read any layer
}


def layer_of(module: str) -> int | None:
    """The layer of ``mechaudit.<top>...`` by its top-level name (the package itself: 1, it imports
    lazily by name only); None for a module no layer holds."""
    parts = module.split(".")
    return 1 if len(parts) == 1 else LAYERS.get(parts[1])


def test_layers_point_down():
    graph = import_graph()
    unplaced = sorted({m.split(".")[1] for m in graph if layer_of(m) is None})
    assert not unplaced, f"give these a layer in LAYERS: {unplaced}"
    upward = [(a, b) for a, targets in graph.items() for b in targets if layer_of(b) > layer_of(a)]
    assert not upward, f"imports that point up a layer: {upward}"
    assert layer_of("mechaudit.book.execute") == 4 and layer_of("mechaudit.llm.session") == 2


def is_chapter_module(module: str, package: str = PACKAGE) -> bool:
    """``package.book.ch<NN>[letter]_<name>`` (``book.chapter``, the shared module, is not one)."""
    return re.fullmatch(rf"{re.escape(package)}\.book\.ch\d\d[a-z]?_\w+", module) is not None


def chapter_imports(graph: dict[str, dict[str, bool]], package: str = PACKAGE) -> list[tuple[str, str]]:
    """``(a, b)`` for every import from one chapter module ``package.book.ch*`` to another, lazy or not."""
    return sorted((a, b) for a, targets in graph.items() if is_chapter_module(a, package)
                  for b in targets if is_chapter_module(b, package))


def test_chapter_modules_stand_alone(tmp_path):
    """No chapter module imports another: what two chapters share lives in ``book.chapter`` or below.
    On a toy package the check finds a lazy import between two chapters."""
    graph = import_graph()
    chapters = [m for m in graph if is_chapter_module(m)]
    assert "mechaudit.book.ch05_perturbations" in chapters and "mechaudit.book.chapter" not in chapters
    assert len(chapters) == 10
    assert chapter_imports(graph) == []
    assert all(layer_of(b) <= 4 for m in chapters for b in graph[m])
    pkg = tmp_path / "toy"
    (pkg / "book").mkdir(parents=True)
    for name in ("__init__.py", "book/__init__.py", "book/chapter.py"):
        (pkg / name).write_text("")
    (pkg / "book" / "ch01_a.py").write_text("from toy.book import chapter\n")
    (pkg / "book" / "ch02_b.py").write_text("def f():\n    from toy.book.ch01_a import x\n")
    assert chapter_imports(import_graph(tmp_path, "toy"), "toy") == [("toy.book.ch02_b", "toy.book.ch01_a")]


def unexplained_lazy_imports(src: Path = SRC, package: str = PACKAGE) -> list[str]:
    """``module:line`` of every function-level import of a ``package`` module that carries no comment
    saying why (what heavy dependency it defers, or which cycle it breaks) on its last line or the
    line above."""
    found = []
    for name, path in module_names(src, package).items():
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node, lazy in _runtime_imports(ast.parse(text, filename=str(path))):
            own = node.level or (node.module or "").split(".")[0] == package if isinstance(node, ast.ImportFrom) \
                else any(alias.name.split(".")[0] == package for alias in node.names)
            said = "#" in lines[node.end_lineno - 1] or lines[node.lineno - 2].lstrip().startswith("#")
            if lazy and own and not said:
                found.append(f"{name}:{node.lineno}")
    return sorted(found)


def test_function_level_imports_say_why(tmp_path):
    """A ``mechaudit`` import inside a function names its reason in a comment; on a toy package the
    check finds the one without."""
    assert unexplained_lazy_imports() == []
    pkg = tmp_path / "toy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("import json\n\n\ndef f():\n    from toy import b  # defers numpy\n\n\n"
                              "def g():\n    import os\n    from toy.b import x\n")
    (pkg / "b.py").write_text("def h():\n    # breaks the cycle toy.a <-> toy.b\n    from . import a\n")
    assert unexplained_lazy_imports(tmp_path, "toy") == ["toy.a:10"]


def test_every_chapter_has_its_module():
    """Each chapter module is named after a TOC chapter; every chapter but 09 (it judges the reader's
    data and holds no chapter logic) has one, and the chapters that send LLM requests (02-08) have
    their cost plan in it, listed by ``estimate.PLANS`` (imported, not looked up by name)."""
    from mechaudit.book.estimate import PLANS
    from mechaudit.book.params import toc_chapters

    stems = [c.stem for c in toc_chapters()]
    modules = {m.removeprefix("mechaudit.book.ch") for m in module_names() if is_chapter_module(m)}
    assert modules == set(stems) - {"09_your_data"}
    for stem in modules:
        module = importlib.import_module(f"mechaudit.book.ch{stem}")
        assert PLANS.get(stem) is getattr(module, "plan", None)  # the registry lists every plan
    assert "importlib" not in (SRC / PACKAGE / "book" / "estimate.py").read_text(encoding="utf-8")
    planned = {stem for stem in stems if stem in PLANS}
    assert planned == {s for s in stems if s[:2] in {"02", "03", "04", "05", "06", "07", "08"}
                       and s not in {"02b_validity", "02c_robustness"}}
    assert "09_your_data" not in PLANS and "01_problem" not in PLANS


def test_llm_leaf_modules():
    """Errors and record helpers sit below the client and the batch runner, which never import
    each other's way back: the batch runner gets its collaborators passed in."""
    graph = import_graph()
    assert set(graph["mechaudit.llm.errors"]) == {"mechaudit.llm.request"}
    assert set(graph["mechaudit.llm.records"]) == {"mechaudit.llm.errors", "mechaudit.llm.request"}
    assert "mechaudit.llm.client" not in graph["mechaudit.llm.batch"]
    assert "_ledger" not in (SRC / "mechaudit" / "llm" / "batch.py").read_text(encoding="utf-8")


def test_moved_names_still_importable_from_the_client():
    from mechaudit.llm import batch, cache, client, errors, records

    for name in ("API_KEY_ENV", "APIReplyError", "MissingAPIKeyError", "ReplayMissError"):
        assert getattr(client, name) is getattr(errors, name)
    for name in ("check_message", "message_record", "message_text"):
        assert getattr(client, name) is getattr(records, name)
    assert client.default_cache_dir is cache.default_cache_dir
    assert batch.BatchError is errors.BatchError


LLM_MODULES = sorted(name for name in module_names() if name.startswith("mechaudit.llm"))


#: Imports each module given on the command line first, in a child forked from one interpreter that
#: has loaded only the third-party libraries (a mechaudit module's import order is what is checked;
#: loading numpy and pandas once instead of once per module saves a second each); prints
#: ``module<TAB>last error line`` for each that fails.
FORK_EACH = """
import importlib, os, sys, traceback
for library in ("numpy", "pandas", "pydantic", "yaml"):
    importlib.import_module(library)
assert not [m for m in sys.modules if m.startswith("mechaudit")]
for module in sys.argv[1:]:
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(module)
        except BaseException:
            print(module + "\t" + traceback.format_exc().strip().splitlines()[-1], flush=True)
            os._exit(1)
        os._exit(0)
    os.waitpid(pid, 0)
"""


def imports_alone(modules: list[str]) -> dict[str, str]:
    """``{module: its error}`` for each of ``modules`` that fails to import first (see FORK_EACH)."""
    done = subprocess.run([sys.executable, "-c", FORK_EACH, *modules], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return dict(line.split("\t", 1) for line in done.stdout.splitlines())


def test_each_llm_module_imports_alone():
    """Each module of ``mechaudit.llm`` imports first, in an interpreter with no mechaudit module loaded."""
    assert "mechaudit.llm.batch" in LLM_MODULES and "mechaudit.llm.errors" in LLM_MODULES
    failed = imports_alone(LLM_MODULES)
    assert not failed, f"modules that do not import alone: {failed}"


def test_the_import_check_sees_a_module_that_fails_alone(tmp_path, monkeypatch):
    """A module that imports only after another (a cycle entered at the wrong end: cyc_a, not cyc_b) is
    reported; the others are not."""
    (tmp_path / "cyc_a.py").write_text("import cyc_b\nVALUE = 1\n")
    (tmp_path / "cyc_b.py").write_text("from cyc_a import VALUE\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    failed = imports_alone(["cyc_b", "cyc_a", "json"])
    assert set(failed) == {"cyc_a"} and "VALUE" in failed["cyc_a"]
