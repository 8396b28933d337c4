"""``mechaudit infer-score`` and ``mechaudit fit-tau``: the tau method over files, JSON out.

``infer-score --input FILE.json``: FILE holds ``{"anchors": [{score10, weight[, anchor_id]}],
"comparisons": [{anchor_id, judgement, strength}], "tau": 1.0[, "grid_step": 0.01]}``; prints
``{"score": ..., <diagnostics>}``.

``fit-tau --pairs FILE.jsonl [--method grid|mle]``: one pair a line with ``delta``, ``y`` or
``judgement``, ``strength``, ``weight``; prints ``{"tau", "method", "loss", "n_pairs", "se",
"se_robust", "at_bound"}`` (se fields null for the grid).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from mechaudit.tau.fitting import fit_tau_detailed
from mechaudit.tau.inference import infer_score


def _emit(payload: dict[str, Any], out: str | None) -> None:
    clean = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in payload.items()}
    text = json.dumps(clean, indent=2, sort_keys=True)
    if out:
        Path(out).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)


def read_pairs(path: str | Path) -> list[dict[str, Any]]:
    """Pairs from a JSONL file; a bad line raises ``ValueError`` naming the file and line."""
    from mechaudit.schema import DataError, read_jsonl

    pairs = []
    for lineno, row in read_jsonl(path):
        if "delta" not in row:
            raise DataError(path, lineno, "delta", "missing required field")
        pairs.append(row)
    return pairs


def run_infer(args: argparse.Namespace) -> int:
    try:
        data = json.loads(Path(args.input).read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"{args.input}: expected a JSON object")
        for field in ("anchors", "comparisons"):
            if not isinstance(data.get(field), list):
                raise ValueError(f"{args.input}: field {field!r} must be a list")
        score, diag = infer_score(data["anchors"], data["comparisons"], data.get("tau"),
                                  float(data.get("grid_step", 0.01)))
    except (OSError, ValueError) as exc:
        print(f"mechaudit infer-score: {exc}", file=sys.stderr)
        return 2
    _emit({"score": score, **diag}, args.out)
    return 0


def run_fit(args: argparse.Namespace) -> int:
    try:
        pairs = read_pairs(args.pairs)
        fit = fit_tau_detailed(pairs, args.method)
    except (OSError, ValueError) as exc:
        print(f"mechaudit fit-tau: {exc}", file=sys.stderr)
        return 2
    _emit(fit.to_dict(), args.out)
    return 0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("infer-score", help="infer a 1-10 score from blind comparisons (JSON in, JSON out)")
    p.add_argument("--input", required=True, help="JSON file with anchors, comparisons and tau")
    p.add_argument("--out", default=None, help="write the JSON here instead of stdout")
    p.set_defaults(func=run_infer)
    q = subparsers.add_parser("fit-tau", help="fit the logistic scale tau from judged pairs (JSONL)")
    q.add_argument("--pairs", required=True, help="JSONL file, one judged pair a line")
    q.add_argument("--method", choices=("grid", "mle"), default="grid")
    q.add_argument("--out", default=None, help="write the JSON here instead of stdout")
    q.set_defaults(func=run_fit)
