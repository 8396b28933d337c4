"""The reworded perturbation suite: every variant's statement and explanation written as a rewrite.

In the template-built suite (``mechaudit.perturb.make_suite``) a swap keeps every word but one
entity's name, so a text rule sees swaps as *more* alike than rewordings by construction. Here a
person wrote every variant's statement and explanation, as another author would write the same (or
the swapped) mechanism; the four kinds and their validity check are unchanged.

Authoring file (YAML), one mapping per hypothesis id, names written out in plain text::

    A-01:
      wording_only: {explanation: ...}        # canonical names
      wording_chain: {explanation: ...}       # biological aliases
      first_step_swapped: {to: VACA, statement: ..., explanation: ...}
      middle_step_swapped: {position: 1, to: AP1, statement: ..., explanation: ...}

Only what the check fixes is built by code: the statement of the wording kinds (the original's) and
every chain (``wording_chain``: aliases drawn as ``make_suite`` draws them; swaps: one step replaced).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mechaudit.model import DataError, Hypothesis, Vocabulary
from mechaudit.paths import data_path
from mechaudit.perturb import (
    KINDS,
    SWAP_KINDS,
    alias_chain,
    check_reason,
    default_vocabulary,
    hypotheses_sha256,
    pair_rng,
    suite_pair,
    swapped_chain,
    variant_hypothesis,
)
from mechaudit.schema import read_yaml, strip_lines, validate_record

#: file name of the reworded suite's authoring source in a data folder (the suite built from it is
#: ``perturb.SUITE_FILES["reworded"]``)
SOURCE_FILE = "perturbations_reworded.yaml"


class Rewrite(BaseModel):
    """The authored texts of one variant (``statement`` only for swaps), and for swaps the new
    entity ``to`` at chain ``position`` (0 for ``first_step_swapped``)."""

    model_config = ConfigDict(extra="forbid")

    explanation: str = Field(min_length=1)
    statement: str | None = None
    to: str | None = None
    position: int | None = Field(default=None, ge=0)


def _entry(path: Path, hid: str, kind: str, raw: Any, line: int | None) -> Rewrite:
    """One kind's ``Rewrite`` with the fields its kind needs; errors name file, line and field."""
    if kind not in KINDS:
        raise DataError(path, line, f"{hid}.{kind}", f"unknown kind; expected one of {KINDS}")
    where = raw.get("__line__", line) if isinstance(raw, dict) else line
    rw = validate_record(Rewrite, strip_lines(raw), path, where, prefix=f"{hid}.{kind}.")
    needed = ("statement", "to") if kind in SWAP_KINDS else ()
    needed += ("position",) if kind == "middle_step_swapped" else ()
    for name in needed:
        if getattr(rw, name) is None:
            raise DataError(path, where, f"{hid}.{kind}.{name}", "missing required field")
    extra = [n for n in ("statement", "to", "position") if n not in needed and getattr(rw, n) is not None]
    if extra and not (kind == "first_step_swapped" and extra == ["position"] and rw.position == 0):
        raise DataError(path, where, f"{hid}.{kind}.{extra[0]}", f"not used by {kind}")
    return rw


def load_rewrites(path: str | Path | None = None) -> dict[str, dict[str, Rewrite]]:
    """Read an authoring file (default: the shipped ``data/perturbations_reworded.yaml``):
    hypothesis id -> kind -> ``Rewrite``. Errors name file, line and field."""
    path = data_path(SOURCE_FILE) if path is None else Path(path)
    doc = read_yaml(path)
    if not isinstance(doc, dict):
        raise DataError(path, 1, "<yaml>", "expected a mapping of hypothesis ids")
    out: dict[str, dict[str, Rewrite]] = {}
    for hid, kinds in doc.items():
        if hid == "__line__":
            continue
        if not isinstance(kinds, dict):
            raise DataError(path, None, str(hid), "expected a mapping of perturbation kinds")
        line = kinds.get("__line__")
        out[str(hid)] = {k: _entry(path, str(hid), k, v, line) for k, v in kinds.items() if k != "__line__"}
    return out


def variant_of(h: Hypothesis, kind: str, rw: Rewrite, vocab: Vocabulary, seed: int = 0) -> Hypothesis:
    """The variant of ``h`` that ``rw`` describes (see the module docstring for what is built by code)."""
    if kind == "wording_only":
        return variant_hypothesis(h, kind, h.statement, rw.explanation, [s.model_copy() for s in h.chain])
    if kind == "wording_chain":
        chain = alias_chain(h, vocab, pair_rng(seed, kind, h.id))
        return variant_hypothesis(h, kind, h.statement, rw.explanation, chain)
    position = 0 if kind == "first_step_swapped" else int(rw.position)
    if not 0 <= position < len(h.chain) or rw.to not in vocab:
        raise DataError(None, None, f"{h.id}.{kind}", f"cannot swap chain[{position}] for {rw.to!r}")
    return variant_hypothesis(h, kind, str(rw.statement), rw.explanation, swapped_chain(h, position, rw.to, vocab))


def reworded_suite(hypotheses: Sequence[Hypothesis], rewrites: dict[str, dict[str, Rewrite]],
                   vocabulary: Vocabulary | None = None, seed: int = 0) -> list[dict[str, Any]]:
    """The reworded suite: per kind (kind-major order), every hypothesis with an authored rewrite of
    that kind, checked and labelled as ``make_suite``'s pairs; a rewrite for an unknown hypothesis id
    raises ``DataError``."""
    vocab = vocabulary if vocabulary is not None else default_vocabulary()
    by_id = {h.id: h for h in hypotheses}
    unknown = sorted(set(rewrites) - set(by_id))
    if unknown:
        raise DataError(None, None, unknown[0], "no hypothesis with this id")
    source = hypotheses_sha256(hypotheses)
    pairs = []
    for kind in KINDS:
        for h in hypotheses:
            rw = rewrites.get(h.id, {}).get(kind)
            if rw is None:
                continue
            variant = variant_of(h, kind, rw, vocab, seed)
            pairs.append(suite_pair(kind, h, variant, check_reason(h, variant, kind, vocab), source))
    return pairs


__all__ = ["SOURCE_FILE", "Rewrite", "load_rewrites", "reworded_suite", "variant_of"]
