"""Code shape: no function or method in ``src/mechaudit`` is longer than ``MAX_LINES`` lines unless its
docstring says why, in a line starting with ``Long because``."""

from __future__ import annotations

import ast
from pathlib import Path

MAX_LINES = 60
ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "mechaudit"


def long_functions(source: str, max_lines: int = MAX_LINES) -> list[tuple[int, str, int]]:
    """(first line, name, length in lines) of each function in ``source`` longer than ``max_lines``
    whose docstring has no line starting with "Long because" (decorators not counted)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        length = node.end_lineno - node.lineno + 1
        doc = ast.get_docstring(node) or ""
        if length > max_lines and not any(line.strip().startswith("Long because") for line in doc.splitlines()):
            out.append((node.lineno, node.name, length))
    return out


def test_the_check_finds_long_functions_and_accepts_a_reason():
    body = "    x = 1\n" * 8
    source = (
        "def short():\n    x = 1\n"  # lines 1-2
        f"def long_():\n{body}"  # lines 3-11
        f'def explained():\n    """Does it.\n\n    Long because the steps share state.\n    """\n{body}'  # 12-24
        f"class C:\n    def method(self):\n{body.replace('    ', '        ')}"  # method: lines 26-34
    )
    assert long_functions(source, max_lines=8) == [(3, "long_", 9), (26, "method", 9)]
    assert long_functions(source, max_lines=9) == []


def test_no_function_over_the_limit_without_a_reason():
    offenders = [f"{path.relative_to(ROOT)}:{line} {name} ({n} lines)"
                 for path in sorted(SRC.rglob("*.py"))
                 for line, name, n in long_functions(path.read_text(encoding="utf-8"))]
    assert offenders == [], (
        f"{len(offenders)} function(s) over {MAX_LINES} lines; split them or add a docstring line "
        "'Long because ...':\n" + "\n".join(offenders))
