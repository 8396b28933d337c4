"""``mechaudit estimate``: the LLM requests, tokens and USD that chapters would send, before sending."""

from __future__ import annotations

import argparse
from pathlib import Path

from mechaudit.execution import DEFAULT_PARAMS, parse_override


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "estimate",
        help="count and price the LLM requests chapters would send (nothing is sent)",
        description="For each chapter run with an LLM backend: requests (minus those already cached), "
        "estimated input/output tokens and USD at plain, batch and prompt-cached prices "
        "(params/prices.yaml). How requests and tokens are counted: book/rerun.md.",
    )
    p.add_argument("notebooks", nargs="*", help="notebook paths or stems (default: every chapter)")
    p.add_argument("--params", type=Path, default=DEFAULT_PARAMS, help="parameter-set YAML (default: %(default)s)")
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="override one parameter (YAML value syntax); repeatable")
    p.add_argument("--prices", type=Path, default=None, help="price table (default: params/prices.yaml)")
    p.add_argument("--batch", action="store_true", help="mark the batch column as the one this run would pay")
    p.add_argument("--csv", type=Path, default=None, help="also write the table as CSV")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mechaudit.llm.estimate import estimate_chapters, format_estimate

    overrides = {name: parse_override(value, name) for name, value in args.parameter}
    overrides.pop("max_usd", None)
    # errors reach the one handler in mechaudit.cli.main: one line, exit 1
    table = estimate_chapters(args.notebooks, params_file=args.params, overrides=overrides, prices=args.prices)
    print(format_estimate(table, batch=args.batch))
    if args.csv:
        table.to_csv(args.csv, index=False)
    return 0
