"""``mechaudit execute``: run chapters through papermill with a parameter set."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mechaudit.execution import (
    DEFAULT_PARAMS,
    NotebookExecutionError,
    ParameterError,
    execute_chapters,
    parse_override,
)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "execute",
        help="execute notebooks with papermill (default: every chapter, params/default.yaml)",
        description="Execute chapters in TOC order. Without --out the executed notebook replaces the "
        "committed reference beside its .py source; with --out it goes to that run folder.",
    )
    p.add_argument("notebooks", nargs="*", help="notebook paths or stems (e.g. notebooks/01_problem.py, 01_problem)")
    p.add_argument("--params", type=Path, default=DEFAULT_PARAMS, help="parameter-set YAML (default: %(default)s)")
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="override one parameter (YAML value syntax); repeatable")
    p.add_argument("--out", type=Path, default=None, help="write executed notebooks here instead")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    overrides = {name: parse_override(value) for name, value in args.parameter}
    try:
        execute_chapters(args.notebooks, params_file=args.params, overrides=overrides, out_dir=args.out)
    except (ParameterError, NotebookExecutionError, FileNotFoundError) as err:
        print(f"mechaudit execute: {err}", file=sys.stderr)
        return 1
    return 0
