"""No code in ``src/`` compares a value with a backend name spelled as a string: a backend is parsed
once into ``mechaudit.backends.Backend`` where it enters, and members are compared after that."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mechaudit.backends import CHOICES

SRC = Path(__file__).resolve().parents[1] / "src" / "mechaudit"
NAMES = frozenset(CHOICES)  # reference, anthropic, replay


def backend_string_compares(path: Path) -> list[str]:
    """``FILE:LINE: <expression>`` for each comparison of a non-constant operand (a name, attribute,
    subscript or call) with a string constant that is a backend name. Literal tuples and sets are
    not looked into: the rule named ``reference`` shares the word (``args.rule in ("llm",
    "reference")`` is about rules)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        named = any(isinstance(o, ast.Constant) and o.value in NAMES for o in operands)
        if named and any(not isinstance(o, ast.Constant) for o in operands):
            found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_src_compares_no_value_with_a_backend_name():
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 50  # the walk sees the package
    found = [hit for f in files for hit in backend_string_compares(f)]
    assert found == [], "compare Backend members instead (mechaudit.backends):\n" + "\n".join(found)


@pytest.mark.parametrize("line", [
    'if backend == "replay": pass',
    'ok = "anthropic" != self.backend',
    'ok = params["backend"] != "reference"',
    'ok = route(m)[0] == "anthropic"',
])
def test_the_check_finds_a_planted_comparison(tmp_path, line):
    planted = tmp_path / "planted.py"
    planted.write_text(f"ok = backend is Backend.REPLAY\nname = 'replay'\n{line}\n", encoding="utf-8")
    found = backend_string_compares(planted)
    assert len(found) == 1 and found[0].startswith("planted.py:3: "), found


def test_a_bad_backend_name_names_the_field_and_the_choices():
    from mechaudit.backends import Backend, BackendError

    with pytest.raises(BackendError) as info:
        Backend.parse("antropic")
    assert str(info.value) == "field 'backend': 'antropic' is not a backend; choose one of reference, anthropic, replay"
    with pytest.raises(BackendError) as info:
        Backend.llm("reference")
    assert str(info.value) == ("field 'backend': 'reference' is not an LLM backend; choose one of anthropic, replay "
                               "(the offline stand-ins are used with backend 'reference')")
    with pytest.raises(BackendError, match=r"^field 'judge_backend': 'x' is not a backend"):
        Backend.llm("x", "judge_backend")
    assert Backend.llm("replay") is Backend.REPLAY and Backend.parse("reference") is Backend.REFERENCE


def test_a_caption_names_the_backend_and_adds_the_extra_text_after_a_full_stop():
    from mechaudit.backends import caption_text

    assert caption_text("replay") == "Backend: replay"
    assert caption_text("replay", "judge claude") == "Backend: replay. judge claude"
