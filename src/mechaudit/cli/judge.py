"""``mechaudit judge``: apply an equivalence rule to a file of hypothesis pairs, JSONL verdicts out.

Pairs file: JSONL, one pair a line, a perturbation-suite line (``original``, ``variant``, ``valid``)
or ``{"a": <Hypothesis>, "b": <Hypothesis>}``; ``"valid": false`` lines are skipped unless
``--include-invalid``. Output, one verdict a line in input order: ``{"line", "a", "b", "kind",
"valid", "rule", "rubric", "backend", "same"[, "similarity"]}``; ``--rule llm`` adds the vote counts
(``n_valid``, ``n_invalid``, ``n_same``, ``n_different``, ``decided``), and an undecided pair has
``"same": null`` (counted on stderr, never defaulted).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, get_args

from mechaudit.backends import LLM_BACKENDS
from mechaudit.book.settings import RuleName
from mechaudit.cli.execute import add_timeout_argument
from mechaudit.errors import check_range, warn
from mechaudit.paths import cache_path
from mechaudit.rules.registry import build

RULES = get_args(RuleName)  # the registry's names, without importing the rules

RUBRIC_CHOICES = ("full", "step", "none")
DEFAULT_JUDGE_MODEL = "claude-opus-4-6"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "judge", help="judge hypothesis pairs same/different with an equivalence rule (JSONL out)",
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", type=Path, required=True, help="JSONL file of pairs (original/variant or a/b)")
    p.add_argument("--rule", choices=RULES, default="llm", help="equivalence rule (default: %(default)s)")
    p.add_argument("--rubric", choices=RUBRIC_CHOICES, default="full",
                   help="judge rubric for --rule llm|reference (default: %(default)s)")
    p.add_argument("--backend", choices=LLM_BACKENDS, default="replay",
                   help="LLM backend for --rule llm: anthropic (needs ANTHROPIC_API_KEY) or replay "
                        "(recorded answers only) (default: %(default)s)")
    p.add_argument("--model", default=DEFAULT_JUDGE_MODEL, help="judge model for --rule llm (default: %(default)s)")
    p.add_argument("--instances", type=Path, default=None,
                   help="instances YAML with the findings shown to the LLM judge (default: data/instances.yaml)")
    p.add_argument("--orders", default="ab,ab,ba",
                   help="--rule llm: presentation orders, comma-separated; the verdict is their majority "
                        "(default: %(default)s)")
    p.add_argument("--early-stop", action=argparse.BooleanOptionalAction, default=True,
                   help="--rule llm: skip a pair's remaining calls once its majority is decided; the "
                        "decisions are the same, the calls fewer (default: on)")
    p.add_argument("--jaccard-threshold", type=float, default=0.5,
                   help="--rule reference --rubric none: step-overlap threshold (default: %(default)s)")
    p.add_argument("--threshold", type=float, default=None,
                   help="similarity threshold for --rule tfidf|embedding (default: the rule's own)")
    p.add_argument("--batch", action="store_true",
                   help="send uncached LLM requests through the Message Batches API (resumable)")
    p.add_argument("--poll-interval", type=float, default=30.0, help="batch poll interval in seconds")
    p.add_argument("--cache-dir", type=Path, default=None, help="LLM response cache (default: data/llm_cache)")
    p.add_argument("--embedding-cache", type=Path, default=None,
                   help="--rule embedding: disk store of computed embeddings, reused across runs "
                        "(default: data/embedding_cache)")
    p.add_argument("--no-embedding-cache", action="store_true",
                   help="--rule embedding: compute every embedding afresh and store none")
    p.add_argument("--max-concurrency", type=int, default=4, help="parallel LLM calls (default: %(default)s)")
    add_timeout_argument(p)
    p.add_argument("--include-invalid", action="store_true", help="also judge pairs marked \"valid\": false")
    p.add_argument("--out", type=Path, default=None, help="output JSONL (default: stdout)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no usage summary")
    p.set_defaults(func=run)


def read_pairs(path: Path, include_invalid: bool = False) -> tuple[list[tuple[Any, Any]], list[dict[str, Any]], int]:
    """Parse a pairs file -> (pairs, per-pair info {line, kind, valid}, number skipped as invalid).

    Raises ``ValueError`` naming the file, line and field of the first bad line.
    """
    # defers the pydantic data model: fast `mechaudit --help`
    from mechaudit.schema import DataError, Hypothesis, read_jsonl, validate_record

    pairs, info, skipped = [], [], 0
    for lineno, row in read_jsonl(path):
        names = ("original", "variant") if "original" in row else ("a", "b")
        for name in names:
            if name not in row:
                raise DataError(path, lineno, name, "missing (a pair needs original/variant or a/b)")
        hyps = [validate_record(Hypothesis, row[name], path, lineno, prefix=f"{name}.") for name in names]
        valid = row.get("valid", True)
        if not isinstance(valid, bool):
            raise DataError(path, lineno, "valid", f"must be true or false (a JSON boolean), got {valid!r}")
        if valid is False and not include_invalid:
            skipped += 1
            continue
        pairs.append((hyps[0], hyps[1]))
        info.append({"line": lineno, "a": hyps[0].id, "b": hyps[1].id, "kind": row.get("kind"), "valid": valid})
    return pairs, info, skipped


def rule_config(args: argparse.Namespace, client: Any = None) -> dict[str, Any]:
    """The ``mechaudit.rules.build`` configuration of ``args.rule`` from the command line."""
    threshold = {} if args.threshold is None else {"threshold": args.threshold}
    match args.rule:  # rule names (mechaudit.rules.NAMES), not backends
        case "tfidf":
            return threshold
        case "embedding":
            store = None if args.no_embedding_cache else (args.embedding_cache or cache_path("embedding_cache"))
            return {"cache_dir": store, **threshold}
        case "reference":
            return {"rubric": args.rubric, "jaccard_threshold": args.jaccard_threshold}
        case "llm":
            from mechaudit.schema import load_instances  # defers the pydantic data model: fast `mechaudit --help`

            instances = None if args.instances is None else load_instances(args.instances)
            orders = tuple(o.strip() for o in args.orders.split(",") if o.strip())
            return {"rubric": args.rubric, "model": args.model, "client": client,
                    "instances": instances, "orders": orders, "early_stop": args.early_stop}
        case _:
            return {}


def _warn_repeats(pairs: list, info: list[dict], path) -> None:
    """Warn (naming the first repeat's lines) when pairs repeat an earlier line; each is judged again."""
    first_line: dict[tuple[str, str], int] = {}
    repeats = []
    for (a, b), row in zip(pairs, info):
        key = (a.model_dump_json(), b.model_dump_json())
        if key in first_line:
            repeats.append((row["line"], first_line[key]))
        first_line.setdefault(key, row["line"])
    if repeats:
        warn(f"{len(repeats)} pair(s) repeat an earlier line (line {repeats[0][0]} = line {repeats[0][1]}"
             f"{', ...' if len(repeats) > 1 else ''}); each is judged again", file=path)


def _verdict_lines(args: argparse.Namespace, info: list[dict], same: list, votes: list | None,
                   similarity: Any) -> str:
    """The output JSONL: one verdict object per pair (sorted keys), with votes and similarity if any."""
    # which backend produced the verdicts: the LLM backend, 'reference', or 'local' (TF-IDF/embeddings)
    label = {"llm": args.backend, "reference": "reference", "mechanism_key": "reference"}.get(args.rule, "local")
    rubric = args.rubric if args.rule in ("llm", "reference") else None
    lines = []
    for i, row in enumerate(info):
        verdict = {**row, "rule": args.rule, "rubric": rubric, "backend": label, "same": same[i]}
        if votes is not None:
            verdict.update({k: (bool(v) if k == "decided" else int(v)) for k, v in votes[i].items()})
        if similarity is not None:
            verdict["similarity"] = round(float(similarity[i]), 6)
        lines.append(json.dumps(verdict, sort_keys=True))
    return "\n".join(lines) + ("\n" if lines else "")


def run(args: argparse.Namespace) -> int:
    import pandas as pd  # defers pandas: fast `mechaudit --help`

    from mechaudit.llm import get_client  # defers pandas: fast `mechaudit --help`
    from mechaudit.llm.providers import request_timeout  # defers pandas: fast `mechaudit --help`

    check_range(args.max_concurrency, "--max-concurrency", 1, integer=True)
    if args.timeout is not None:
        request_timeout(args.timeout, field="--timeout")
    check_range(args.poll_interval, "--poll-interval", 0)
    check_range(args.jaccard_threshold, "--jaccard-threshold", 0, 1)
    if args.threshold is not None:
        check_range(args.threshold, "--threshold", 0, 1)
    pairs, info, skipped = read_pairs(args.pairs, args.include_invalid)  # errors: cli.main, exit 1
    if skipped:
        warn(f"skipped {skipped} pair(s) marked \"valid\": false", file=args.pairs)
    if not pairs:
        warn("no pairs to judge: the output is empty", file=args.pairs)
    _warn_repeats(pairs, info, args.pairs)
    progress = not args.quiet
    client = None
    if args.rule == "llm":
        client = get_client(args.backend, cache_dir=args.cache_dir, max_concurrency=args.max_concurrency,
                            timeout=args.timeout)
    try:
        rule = build(args.rule, **rule_config(args, client))  # the registry mechaudit.rules.build
        if args.batch and client is not None:
            client.prefetch_batch(rule.requests(pairs), poll_interval=args.poll_interval, progress=progress)
        votes = None
        if args.rule == "llm":
            decision = rule.decide(pairs, progress=progress)
            votes = decision.drop(columns=["pair", "same"]).to_dict("records")
            same = [None if pd.isna(v) else bool(v) for v in decision["same"]]
        elif args.rule == "embedding":
            same = [bool(v) for v in rule.same(pairs, progress=progress)]
        else:
            same = [bool(v) for v in rule.same(pairs)]
        similarity = rule.similarity(pairs) if hasattr(rule, "similarity") else None
    finally:  # a failure reaches the one handler in mechaudit.cli.main: one line, exit 1
        if client is not None and progress:
            print(client.ledger_summary(), file=sys.stderr)
    undecided = sum(v is None for v in same)
    if undecided:
        warn(f"{undecided} pair(s) undecided (tie or no valid verdict): \"same\": null")
    text = _verdict_lines(args, info, same, votes, similarity)
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0
