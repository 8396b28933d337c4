"""``mechaudit estimate``: the LLM requests, tokens and USD that chapters would send, before sending."""

from __future__ import annotations

import argparse
from pathlib import Path

from mechaudit.book.execute import run_settings
from mechaudit.book.params import parse_override, resolve_params_file
from mechaudit.cli.execute import add_params_arguments


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "estimate", help="count and price the LLM requests chapters would send (nothing is sent)",
        description="For each chapter run with an LLM backend: requests (minus those already cached), "
        "estimated input/output tokens and USD at plain, batch and prompt-cached prices "
        "(params/prices.yaml). How requests and tokens are counted: book/rerun.md.")
    p.add_argument("notebooks", nargs="*", help="notebook paths or stems (default: every chapter)")
    add_params_arguments(p)
    p.add_argument("--prices", type=Path, default=None, help="price table (default: params/prices.yaml)")
    p.add_argument("--batch", action="store_true", help="mark the batch column as the one this run would pay")
    p.add_argument("--csv", type=Path, default=None, help="also write the table as CSV")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mechaudit.book.estimate import estimate_chapters  # defers scikit-learn and scipy: fast `mechaudit --help`
    from mechaudit.llm.pricing import format_estimate  # defers pandas: fast `mechaudit --help`

    overrides = {name: parse_override(value, name) for name, value in args.parameter}
    overrides.pop("max_usd", None)
    # errors reach the one handler in mechaudit.cli.main: one line, exit 1
    params_file = resolve_params_file(args.params)
    base_url = run_settings(overrides, params_file)["llm_base_url"]
    table = estimate_chapters(args.notebooks, params_file=params_file, overrides=overrides, prices=args.prices,
                              base_url=base_url)
    print(format_estimate(table, batch=args.batch))
    if args.csv:
        table.to_csv(args.csv, index=False)
    return 0
