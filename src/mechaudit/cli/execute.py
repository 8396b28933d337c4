"""``mechaudit execute``: run chapters through papermill with a parameter set."""

from __future__ import annotations

import argparse
from pathlib import Path

from mechaudit.book.execute import execute_chapters
from mechaudit.book.params import DEFAULT_PARAMS, parse_override


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "execute", help="execute notebooks with papermill (default: every chapter, params/default.yaml)",
        description="Execute chapters in TOC order. Without --out the executed notebook replaces the "
        "committed reference beside its .py source; with --out it goes to that run folder.")
    p.add_argument("notebooks", nargs="*", help="notebook paths or stems (e.g. notebooks/01_problem.py, 01_problem)")
    add_params_arguments(p)
    p.add_argument("--out", type=Path, default=None,
                   help="write executed notebooks here instead, and each chapter's tables (CSV) "
                        "and figures (PNG, SVG) under OUT/<chapter>/ (-p out_dir null: notebooks only)")
    add_money_arguments(p)
    p.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                   help="execute N chapters at once, each in its own kernel (offline runs; a run that calls "
                        "an LLM runs one chapter at a time) (default: 1)")
    p.add_argument("--confirm", action="store_true",
                   help="print the LLM cost estimate and ask before sending anything")
    p.add_argument("--dry-run", action="store_true",
                   help="print the LLM cost estimate and stop (same as `mechaudit estimate`)")
    p.set_defaults(func=run)


def add_params_arguments(p) -> None:
    """``--params`` (a file or a shipped set's name) and ``-p NAME VALUE``."""
    p.add_argument("--params", default=str(DEFAULT_PARAMS.relative_to(DEFAULT_PARAMS.parents[1])),
                   help="parameter-set YAML, or the name of a shipped set (default, paper, ...; found from any "
                        "folder) (default: %(default)s)")
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="override one parameter (YAML value syntax); repeatable. Relative data_dir/cache_dir/"
                        "*_file paths resolve against the current directory (in --params files: against "
                        "the file's folder). -p llm_base_url URL sends OpenAI-routed models to an "
                        "OpenAI-compatible server (vLLM, Ollama, llama.cpp; book/llm.md)")


def add_money_arguments(p) -> None:
    """``--max-usd``, ``--batch``, ``--prices`` and ``--allow-unpriced``."""
    p.add_argument("--max-usd", type=float, default=None, metavar="USD",
                   help="LLM budget for the whole run (a number > 0): stop before a request would pass it "
                        "(default: none)")
    p.add_argument("--batch", action=argparse.BooleanOptionalAction, default=None,
                   help="send LLM requests through the Message Batches API (half price; sets llm_batch)")
    p.add_argument("--prices", type=Path, default=None,
                   help="price table for the estimate, the budget and the ledgers (default: params/prices.yaml)")
    p.add_argument("--allow-unpriced", action="store_true",
                   help="send requests to a model the price table lacks, at an unknown cost (refused with "
                        "--max-usd); without it such a run is refused before anything is sent")
    add_timeout_argument(p)


def add_timeout_argument(p) -> None:
    """``--timeout SECONDS``: how long one LLM request may take before it fails and is retried."""
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="seconds one LLM request may take before it fails (the SDK then retries it); a hung "
                        "request no longer holds up its stage for the default 600 s")


def ask_terminal(question: str) -> bool:
    """Ask on the terminal; anything but y/yes (or no terminal input) declines."""
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:
        return False


def run(args: argparse.Namespace) -> int:
    overrides = {name: parse_override(value, name) for name, value in args.parameter}
    # errors (ParameterError, NotebookExecutionError, BudgetExceededError, ...) reach the one
    # handler in mechaudit.cli.main: one line, exit 1
    execute_chapters(args.notebooks, params_file=args.params, overrides=overrides, out_dir=args.out,
                     max_usd=args.max_usd, batch=args.batch, dry_run=args.dry_run,
                     confirm=ask_terminal if args.confirm else None, prices=args.prices,
                     allow_unpriced=args.allow_unpriced, timeout=args.timeout, jobs=args.jobs)
    return 0
