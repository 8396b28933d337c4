"""``mechaudit perturb``: build a controlled perturbation suite from a hypotheses file.

Without ``--reworded`` the variants are generated from the hypotheses' templates (the
template-built suite); with ``--reworded FILE`` they are read from an authoring file of written
rewrites (``mechaudit.reworded``; the book's is ``data/perturbations_reworded.yaml``).

Writes the suite JSONL (a variant failing ``mechaudit.perturb.check`` is kept with ``"valid":
false``; the same seed and input give the same bytes) and prints kept / excluded counts per kind.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mechaudit.errors import MechauditError, check_range, warn
from mechaudit.paths import data_path


def _kind(value: str) -> str:
    """One ``--kinds`` value, checked against ``mechaudit.perturb.KINDS`` (imported only when given)."""
    from mechaudit.perturb import KINDS  # defers pandas: fast `mechaudit --help`

    if value not in KINDS:
        raise argparse.ArgumentTypeError(f"invalid choice: {value!r} (choose from {', '.join(KINDS)})")
    return value


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "perturb", help="build a perturbation suite (JSONL) from a hypotheses file",
        description=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hypotheses", type=Path, default=None,
                   help="hypotheses JSONL (default: data/hypotheses.jsonl)")
    p.add_argument("--vocabulary", type=Path, default=None,
                   help="vocabulary YAML (default: vocabulary.yaml beside --hypotheses, else data/vocabulary.yaml)")
    p.add_argument("--kinds", nargs="+", type=_kind, default=None, metavar="KIND",
                   help="perturbation kinds (default: all four of mechaudit.perturb.KINDS; a wrong name lists them)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    p.add_argument("--reworded", type=Path, default=None, metavar="FILE",
                   help="authoring file (YAML) of rewritten variants: build the reworded suite from it")
    p.add_argument("--out", type=Path, required=True, help="output suite JSONL")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mechaudit.perturb import KINDS, make_suite, write_suite  # defers pandas: fast `mechaudit --help`
    from mechaudit.rules.audit import suite_counts  # defers pandas: fast `mechaudit --help`

    # defers the pydantic data model: fast `mechaudit --help`
    from mechaudit.schema import DataError, load_hypotheses, load_vocabulary

    check_range(args.seed, "--seed", 0, integer=True)
    kinds = args.kinds or list(KINDS)
    if args.out.is_dir():
        raise MechauditError(f"{args.out} is a folder; give the path of the suite file to write", field="--out")
    vocabulary = vocabulary_for(args.hypotheses, args.vocabulary)
    vocab = load_vocabulary(vocabulary)
    try:
        hyps = load_hypotheses(args.hypotheses, vocabulary=vocab)
    except DataError as err:
        if vocabulary is not None or "unknown vocabulary id" not in err.message:
            raise
        raise DataError(err.file, err.line, err.field, f"{err.message} (checked against the shipped vocabulary "
                        f"{data_path('vocabulary.yaml')}: give yours with --vocabulary FILE)") from None
    if not hyps:
        warn("no hypotheses: the suite is empty", file=args.hypotheses or data_path("hypotheses.jsonl"))
    if args.reworded is not None:
        from mechaudit.reworded import load_rewrites, reworded_suite  # defers pandas: fast `mechaudit --help`

        pairs = [p for p in reworded_suite(hyps, load_rewrites(args.reworded), vocab, seed=args.seed)
                 if p["kind"] in kinds]
    else:
        pairs = make_suite(hyps, kinds=kinds, seed=args.seed, vocabulary=vocab)
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_suite(pairs, args.out)
    except OSError as err:
        raise MechauditError(f"cannot write {args.out}: {err.strerror or err}", field="--out") from None
    counts = suite_counts([p["valid"] for p in pairs], kinds=[p["kind"] for p in pairs], order=kinds)
    report = {"out": str(args.out), "seed": args.seed, "hypotheses": len(hyps),
              "counts": {k: {"kept": int(r.kept), "excluded": int(r.excluded)}
                         for k, r in counts.iterrows()}}
    print(json.dumps(report, indent=2))
    return 0


def vocabulary_for(hypotheses: Path | None, vocabulary: Path | None) -> Path | None:
    """The vocabulary a hypotheses file is checked against: ``vocabulary`` if given, else the
    ``vocabulary.yaml`` of the hypotheses' own folder (a benchmark folder), else None (the shipped
    one)."""
    if vocabulary is not None or hypotheses is None:
        return vocabulary
    beside = hypotheses.parent / "vocabulary.yaml"
    return beside if beside.is_file() else None
