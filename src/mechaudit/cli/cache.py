"""``mechaudit cache export|import|info``: the response cache as reviewable JSONL.

``export OUT``: every system prompt (by sha256), then every response (by key), one stored line
each, byte for byte: the cache's canonical form (duplicates and torn lines left out).
``import FILE...``: append the records of each JSONL file (an export or another cache's
``responses.jsonl``) whose key the cache lacks. ``info``: counts and file sizes, building the
sqlite index if it is missing or stale.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mechaudit.errors import MechauditError


def _cache(args: argparse.Namespace, *, must_exist: bool = False):
    """The response cache of ``--cache-dir`` (default ``data/llm_cache``); with ``must_exist`` a
    missing folder is a one-line error instead of an empty cache."""
    from mechaudit.llm.cache import ResponseCache  # defers pandas: fast `mechaudit --help`
    from mechaudit.llm.client import default_cache_dir  # defers pandas: fast `mechaudit --help`

    folder = Path(args.cache_dir) if args.cache_dir is not None else default_cache_dir()
    if must_exist and not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise MechauditError(f"{folder} {what}: no response cache there (give --cache-dir the folder a run "
                             "cached its answers in)", field="--cache-dir")
    return ResponseCache(folder)


def run_export(args: argparse.Namespace) -> int:
    # errors (a bad file, an export onto the cache itself) reach the one handler in mechaudit.cli.main
    with _cache(args, must_exist=True) as cache:
        counts = cache.export_jsonl(args.out)
    print(f"exported {counts['responses']} responses and {counts['systems']} system prompts to {args.out}")
    return 0


def run_import(args: argparse.Namespace) -> int:
    with _cache(args) as cache:
        for path in args.files:
            counts = cache.import_jsonl(path)
            print(f"{path}: added {counts['responses']} responses and {counts['systems']} system "
                  f"prompts, skipped {counts['skipped']} already cached")
    return 0


def run_info(args: argparse.Namespace) -> int:
    from mechaudit.llm.batchstate import BatchState  # defers pandas: fast `mechaudit --help`

    with _cache(args, must_exist=True) as cache:
        info: dict[str, Any] = {"cache_dir": str(cache.directory), "responses": len(cache),
                                "duplicate_lines": cache.duplicates,
                                "jsonl_bytes": cache.path.stat().st_size if cache.path.exists() else 0,
                                "index_bytes": cache.index_path.stat().st_size if cache.index_path.exists() else 0}
    with BatchState(cache.directory) as state:
        info["pending_batches"] = sorted(state.pending())
    print(json.dumps(info, indent=2))
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("cache", help="export, import or inspect the LLM response cache",
                              description=__doc__.split("\n\n", 1)[1])
    sub = p.add_subparsers(dest="cache_command", metavar="ACTION", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--cache-dir", type=Path, default=None,
                        help="cache folder (default: data/llm_cache)")
    e = sub.add_parser("export", parents=[common], help="write the cache as sorted JSONL")
    e.add_argument("out", type=Path, help="output JSONL file")
    e.set_defaults(func=run_export)
    i = sub.add_parser("import", parents=[common], help="add the records of JSONL files to the cache")
    i.add_argument("files", type=Path, nargs="+", help="JSONL files (exports or responses.jsonl)")
    i.set_defaults(func=run_import)
    n = sub.add_parser("info", parents=[common], help="record counts and file sizes (JSON)")
    n.set_defaults(func=run_info)
