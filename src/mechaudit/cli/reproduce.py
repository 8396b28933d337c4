"""``mechaudit reproduce``: the real-LLM run of the paper's setup (``params/paper.yaml``), from any folder.

The same as ``mechaudit execute --params paper --out OUT --batch --confirm``: the cost estimate
first, a question before anything is sent (``--yes`` skips it), the Message Batches API at half
price (``--no-batch``: the Messages API) and an optional budget. ``make reproduce`` calls it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mechaudit.book.execute import execute_chapters
from mechaudit.cli.execute import add_money_arguments, ask_terminal


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "reproduce", help="the paper's setup with the real LLM (params/paper.yaml): estimate, confirm, budget, batch",
        description=__doc__.split("\n\n", 1)[1])
    p.add_argument("notebooks", nargs="*", help="chapters to run (default: every chapter)")
    p.add_argument("--out", type=Path, default=Path("runs/paper"),
                   help="run folder for the executed notebooks, tables and figures (default: %(default)s)")
    p.add_argument("--params", default="paper", help="parameter set (default: the shipped %(default)s)")
    add_money_arguments(p)
    p.set_defaults(batch=True)
    p.add_argument("--yes", action="store_true", help="do not ask after the estimate")
    p.add_argument("--dry-run", action="store_true", help="print the estimate and stop")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # errors (no key, no price, over budget, cancelled) reach the one handler: one line, exit 1
    execute_chapters(args.notebooks, params_file=args.params, out_dir=args.out, max_usd=args.max_usd,
                     batch=args.batch, dry_run=args.dry_run, confirm=None if args.yes else ask_terminal,
                     prices=args.prices, allow_unpriced=args.allow_unpriced, timeout=args.timeout)
    if not args.dry_run:
        print(f"done: {args.out}. Re-run from the cached answers, with no call: mechaudit execute --params "
              f"{args.params} -p backend replay --out runs/replay")
    return 0
