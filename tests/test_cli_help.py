"""Every command's ``--help`` text, compared with ``tests/cli_help.txt``: options, defaults and help
strings change only on purpose. After a deliberate change write the file again in the same commit::

    .venv/bin/python tests/test_cli_help.py --update
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

SNAPSHOT = Path(__file__).resolve().parent / "cli_help.txt"
WIDTH = "100"  # argparse wraps at the terminal's width ($COLUMNS)


def help_texts() -> str:
    """``mechaudit --help`` and every subcommand's (nested ones too), at a fixed width, one block each."""
    from mechaudit.cli import build_parser

    def walk(parser: argparse.ArgumentParser) -> list[str]:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return [parser.format_help()] + [b for s in subs for _, p in sorted(s.choices.items()) for b in walk(p)]

    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        blocks = walk(build_parser())
    finally:
        if before is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = before
    return "\n".join(f"=== {b.splitlines()[0]}\n{b}" for b in blocks)


def test_every_commands_help_is_the_recorded_one():
    text = help_texts()
    assert text.count("=== usage: mechaudit") > 8
    assert text == SNAPSHOT.read_text(encoding="utf-8"), "run: .venv/bin/python tests/test_cli_help.py --update"


def test_a_changed_help_string_or_default_shows(monkeypatch):
    from mechaudit.cli import reproduce

    original = reproduce.register

    def changed(subparsers):
        original(subparsers)
        subparsers.choices["reproduce"]._actions[1].help = "other words"

    monkeypatch.setattr(reproduce, "register", changed)
    assert help_texts() != SNAPSHOT.read_text(encoding="utf-8")


if __name__ == "__main__":
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_cli_help.py --update")
    SNAPSHOT.write_text(help_texts(), encoding="utf-8")
    print(f"wrote {SNAPSHOT}")
