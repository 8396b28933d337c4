"""The ``mechaudit`` command line.

Every module of this package that defines ``register(subparsers)`` contributes its subcommands;
each subcommand sets ``func(args) -> int`` (the exit code).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from mechaudit.errors import error_line, use_warning_style


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser with every discovered subcommand."""
    parser = argparse.ArgumentParser(prog="mechaudit",
                                     description="Re-execute and audit the mechanism-equivalence book.")
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error instead of the one-line message")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; exit code 0 on success, 2 on a usage error, 1 on an error, which becomes one
    stderr line ``mechaudit: error: FILE:LINE: field 'x': ...`` (with ``--debug``: the traceback)."""
    debug = False
    try:
        use_warning_style()
        parser = build_parser()
        args = parser.parse_args(argv)
        debug = args.debug
        if getattr(args, "func", None) is None:
            parser.print_help(sys.stderr)
            return 2
        return int(args.func(args) or 0)
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback; an unfinished chapter left nothing behind
        print("mechaudit: error: interrupted (Ctrl-C): the unfinished chapter's outputs were not kept",
              file=sys.stderr, flush=True)
        return 130
    except Exception as err:  # noqa: BLE001 - the one error funnel of the command line
        if debug:
            raise
        print(error_line(err), file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
