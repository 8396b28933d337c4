"""``mechaudit infer-score`` and ``mechaudit fit-tau``: the tau method over files, JSON out.

``infer-score --input FILE.json`` (``{"anchors": [{score10, weight[, anchor_id]}], "comparisons":
[{anchor_id, judgement, strength}], "tau": 1.0[, "grid_step": 0.01]}``) prints the score and its
diagnostics; ``fit-tau --pairs FILE.jsonl`` (``delta``, ``y`` or ``judgement``, ``strength``,
``weight`` a line) prints the fit (se fields null for the grid).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from mechaudit.errors import MechauditError


def _emit(payload: dict[str, Any], out: str | None) -> None:
    clean = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in payload.items()}
    text = json.dumps(clean, indent=2, sort_keys=True)
    if out:
        Path(out).write_text(text + "\n", encoding="utf-8")
    else:
        print(text)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def read_pairs(path: str | Path) -> list[dict[str, Any]]:
    """Pairs from a JSONL file; a bad line raises ``DataError`` naming the file, line and field."""
    from mechaudit.schema import DataError, read_jsonl  # defers the pydantic data model: fast `mechaudit --help`
    from mechaudit.tau.inference import LABELS, STRENGTH_WEIGHTS  # defers scipy: fast `mechaudit --help`

    pairs = []
    for lineno, row in read_jsonl(path):
        if "delta" not in row:
            raise DataError(path, lineno, "delta", "missing required field")
        if not _is_number(row["delta"]):
            raise DataError(path, lineno, "delta", f"must be a finite number, got {row['delta']!r}")
        if row.get("y") is not None:
            if not (_is_number(row["y"]) and 0 <= row["y"] <= 1):
                raise DataError(path, lineno, "y", f"must be a number in [0, 1], got {row['y']!r}")
        elif "judgement" not in row:
            raise DataError(path, lineno, "judgement", "missing: a pair needs 'y' or 'judgement'")
        elif str(row["judgement"]).strip().lower() not in (*LABELS, "tie"):
            raise DataError(path, lineno, "judgement", f"must be better, tie or worse, got {row['judgement']!r}")
        if row.get("weight") is not None and not (_is_number(row["weight"]) and row["weight"] >= 0):
            raise DataError(path, lineno, "weight", f"must be a number >= 0, got {row['weight']!r}")
        if row.get("strength") is not None and str(row["strength"]).strip().lower() not in STRENGTH_WEIGHTS:
            raise DataError(path, lineno, "strength", f"must be weak, medium or strong, got {row['strength']!r}")
        pairs.append(row)
    return pairs


def run_infer(args: argparse.Namespace) -> int:
    """Errors (a bad file or value) reach the one handler in ``mechaudit.cli.main``: one line, exit 1."""
    from mechaudit.tau.inference import infer_score  # defers scipy: fast `mechaudit --help`

    raw = Path(args.input).read_bytes()
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise MechauditError("not UTF-8 text", file=args.input, line=raw[:err.start].count(b"\n") + 1,
                             field="<json>") from None
    except json.JSONDecodeError as err:
        raise MechauditError(f"malformed JSON: {err.msg} (column {err.colno})", file=args.input,
                             line=err.lineno, field="<json>") from None
    if not isinstance(data, dict):
        raise MechauditError("expected a JSON object", file=args.input, field="<record>")
    for field in ("anchors", "comparisons"):
        if not isinstance(data.get(field), list):
            raise MechauditError(f"must be a list, got {data.get(field)!r}", file=args.input, field=field)
    grid_step = data.get("grid_step", 0.01)
    if not (_is_number(grid_step) and grid_step > 0):
        raise MechauditError(f"must be a positive number, got {grid_step!r}", file=args.input, field="grid_step")
    try:
        score, diag = infer_score(data["anchors"], data["comparisons"], data.get("tau"), float(grid_step))
    except MechauditError as err:
        raise MechauditError(err.message, file=args.input, field=err.field) from None
    _emit({"score": score, **diag}, args.out)
    return 0


def run_fit(args: argparse.Namespace) -> int:
    """Errors reach the one handler in ``mechaudit.cli.main``: one line ``FILE:LINE: field``, exit 1."""
    from mechaudit.tau.fitting import fit_tau_detailed  # defers scipy: fast `mechaudit --help`

    _emit(fit_tau_detailed(read_pairs(args.pairs), args.method).to_dict(), args.out)
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
