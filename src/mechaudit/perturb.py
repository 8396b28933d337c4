"""Controlled perturbations of a hypothesis and their deterministic validity check (paper App. C).

Kinds (``KINDS``)
-----------------
- ``wording_only``: the explanation is replaced by another, independently written phrasing of the
  same mechanism; statement and chain (ids and texts) are identical.
- ``wording_chain``: as ``wording_only``, and every entity in the explanation and the chain step
  texts is written with one of its biological aliases; the ordered step ids are identical.
- ``first_step_swapped``: the initiating entity ``chain[0]`` is replaced by a different entity of
  the same vocabulary type that the hypothesis does not mention; every text is re-rendered with
  the new entity; all later step ids are unchanged.
- ``middle_step_swapped``: exactly one intermediate step (not the first, not the last) is replaced
  in the same way; initiating and terminal steps are unchanged.

The first two preserve the mechanism; the last two change exactly one causal component.
``perturb`` builds a variant from the hypothesis' marked template (``Hypothesis.template``; when it
is missing, one is derived by recognising vocabulary names in the texts). ``check`` looks only at
the two hypotheses and the vocabulary, never at how the variant was made, so variants from any
generator (for example an LLM at temperature 0.3) pass through the same gate; a variant that fails
is kept in the suite with ``valid: false`` and excluded from rule audits.

Suite files are JSONL, one pair a line with keys ``kind``, ``original`` (without its template),
``variant``, ``valid``, ``reason`` (why ``check`` failed, else null), ``swap`` (``{position, from,
to}`` for swap kinds, else null) and ``hypotheses_sha256`` (``hypotheses_sha256`` of the hypotheses
the suite was built from). A suite read from a benchmark folder is checked against that folder's
``hypotheses.jsonl`` (:func:`stale_reason`): a suite built from other hypotheses is refused with the
command that rebuilds it (:func:`rebuild_command`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import textwrap
import zlib
from collections.abc import Collection, Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from mechaudit.errors import MechauditError, check_range
from mechaudit.paths import data_path
from mechaudit.render import PLACEHOLDER, placeholders, render, swap_ids, templatize
from mechaudit.schema import (
    DataError,
    Hypothesis,
    Step,
    Template,
    Vocabulary,
    load_hypotheses,
    load_vocabulary,
    read_jsonl,
    validate_record,
)

#: the four perturbation kinds, in the paper's order
KINDS = ("wording_only", "wording_chain", "first_step_swapped", "middle_step_swapped")
#: kinds that keep the mechanism (a rule should judge the pair "same")
MEANING_PRESERVING = ("wording_only", "wording_chain")
#: kinds that swap one causal step for another entity of its type (a different mechanism)
SWAP_KINDS = ("first_step_swapped", "middle_step_swapped")


#: the perturbation suites a data folder may hold: name -> file name. ``template``: built by
#: ``make_suite`` (swaps re-render the original's template); ``reworded``: every variant's statement
#: and explanation written as a rewrite (``mechaudit.reworded``).
SUITE_FILES = {"template": "perturbations.jsonl", "reworded": "perturbations_reworded.jsonl"}
#: how the book names each suite in tables and figures
SUITE_LABELS = {"template": "template-built suite", "reworded": "reworded suite"}
#: the fields of a suite's pair (module docstring), in file order; the first four are required
PAIR_FIELDS = ("kind", "original", "variant", "valid", "reason", "swap", "hypotheses_sha256")


class PerturbationError(ValueError):
    """The hypothesis does not allow this kind of perturbation (no second phrasing, no candidate)."""


@lru_cache(maxsize=1)
def default_vocabulary() -> Vocabulary:
    """The committed vocabulary (``data/vocabulary.yaml``), loaded once."""
    return load_vocabulary()


def _vocab(vocabulary: Vocabulary | None) -> Vocabulary:
    return vocabulary if vocabulary is not None else default_vocabulary()


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown perturbation kind {kind!r}; expected one of {KINDS}")


def template_of(h: Hypothesis, vocabulary: Vocabulary | None = None) -> Template:
    """``h.template``, or one derived by marking every vocabulary name found in the texts."""
    if h.template is not None:
        return h.template
    index = _vocab(vocabulary).index
    chain = [templatize(s.text, index) for s in h.chain]
    for j, (tmpl, step) in enumerate(zip(chain, h.chain)):
        if step.id not in placeholders(tmpl):
            raise PerturbationError(f"{h.id}: chain[{j}].text does not name its entity {step.id!r}")
    return Template(statement=templatize(h.statement, index),
                    explanations=[templatize(h.explanation, index)], chain=chain)


def variant_hypothesis(h: Hypothesis, kind: str, statement: str, explanation: str, chain: list[Step]
                       ) -> Hypothesis:
    """``h`` with the variant's texts and chain: id ``"<id>~<kind>"``, the mechanism label kept only
    by meaning-preserving kinds, ``near_duplicate_of`` set by swap kinds, no template."""
    mechanism = h.mechanism if kind in MEANING_PRESERVING else None
    return h.model_copy(update=dict(
        id=f"{h.id}~{kind}", statement=statement, explanation=explanation, chain=chain,
        mechanism=mechanism, near_duplicate_of=h.id if kind in SWAP_KINDS else None,
        template=None))


def _other_phrasing(t: Template, h: Hypothesis, rng: np.random.Generator) -> str:
    if len(t.explanations) < 2:
        raise PerturbationError(f"{h.id}: only one explanation phrasing; cannot reword")
    return t.explanations[1 + int(rng.integers(len(t.explanations) - 1))]


def alias_names(ids: Iterable[str], vocab: Vocabulary, rng: np.random.Generator) -> dict[str, str]:
    """Canonical names, with each of ``ids`` (sorted, once) replaced by one of its aliases drawn
    from ``rng`` (an id without aliases keeps its name)."""
    names = vocab.canonical_names()
    for ident in sorted(set(ids)):
        aliases = vocab[ident].aliases
        if aliases:
            names[ident] = aliases[int(rng.integers(len(aliases)))]
    return names


def _mentioned(t: Template) -> set[str]:
    texts = [t.statement, *t.explanations, *t.chain]
    return {i for text in texts for i in placeholders(text)}


def swap_candidates(h: Hypothesis, position: int, vocabulary: Vocabulary | None = None,
                    prefer: Collection[str] | None = None) -> list[str]:
    """Same-type replacements for ``chain[position]`` that ``h`` does not mention (file order); those
    in ``prefer`` (e.g. the entities of the instance's other hypotheses) if there are any."""
    vocab = _vocab(vocabulary)
    old = h.chain[position].id
    used = _mentioned(template_of(h, vocab)) | {s.id for s in h.chain}
    out = [i for i in vocab.of_type(vocab[old].type) if i not in used]
    preferred = [i for i in out if prefer is not None and i in prefer]
    return preferred or out


def perturb(h: Hypothesis, kind: str, rng: np.random.Generator,
            vocabulary: Vocabulary | None = None, prefer: Collection[str] | None = None
            ) -> Hypothesis:
    """One variant of ``h`` of the given ``kind`` (module docstring; ``variant_hypothesis``).

    Swap kinds pick the position (middle steps: uniformly among those with a candidate) and the
    replacement uniformly from ``swap_candidates``. ``PerturbationError`` when ``h`` cannot be
    perturbed this way (a single phrasing, or no same-type candidate)."""
    _check_kind(kind)
    vocab = _vocab(vocabulary)
    t = template_of(h, vocab)
    canonical = vocab.canonical_names()
    if kind == "wording_only":
        return variant_hypothesis(h, kind, h.statement, render(_other_phrasing(t, h, rng), canonical),
                        [s.model_copy() for s in h.chain])
    if kind == "wording_chain":
        phrasing = _other_phrasing(t, h, rng)
        names = alias_names(placeholders(phrasing) + [i for c in t.chain for i in placeholders(c)],
                             vocab, rng)
        return variant_hypothesis(h, kind, h.statement, render(phrasing, names), _render_chain(h, t, names))
    n = len(h.chain)
    positions = [0] if kind == "first_step_swapped" else list(range(1, n - 1))
    options = [(p, swap_candidates(h, p, vocab, prefer)) for p in positions]
    options = [(p, c) for p, c in options if c]
    if not options:
        raise PerturbationError(f"{h.id}: no same-type entity available for {kind}")
    position, candidates = options[int(rng.integers(len(options)))]
    old, new = h.chain[position].id, candidates[int(rng.integers(len(candidates)))]
    return variant_hypothesis(h, kind, render(swap_ids(t.statement, old, new), canonical),
                              render(swap_ids(t.explanations[0], old, new), canonical),
                              swapped_chain(h, position, new, vocab))


def _render_chain(h: Hypothesis, t: Template, names: dict[str, str]) -> list[Step]:
    return [Step(id=s.id, text=render(c, names)) for s, c in zip(h.chain, t.chain)]


def alias_chain(h: Hypothesis, vocab: Vocabulary, rng: np.random.Generator) -> list[Step]:
    """``h.chain`` with every entity in the step texts written with an alias (``alias_names``)."""
    t = template_of(h, vocab)
    return _render_chain(h, t, alias_names([i for c in t.chain for i in placeholders(c)], vocab, rng))


def swapped_chain(h: Hypothesis, position: int, new: str, vocab: Vocabulary) -> list[Step]:
    """``h.chain`` with step ``position`` replaced by entity ``new`` (id and name; every other word
    of the step texts kept, canonical names)."""
    t, old = template_of(h, vocab), h.chain[position].id
    return [Step(id=new if j == position else s.id, text=render(swap_ids(c, old, new), vocab.canonical_names()))
            for j, (s, c) in enumerate(zip(h.chain, t.chain))]


# ----------------------------------------------------------------------------------------------
# the validity check


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def masked(text: str, vocabulary: Vocabulary | None = None, *, keep_ids: bool = False) -> str:
    """``text`` with every entity name (canonical or alias) replaced by ``{}``, whitespace
    normalised: two texts that differ only in which entities they name mask to the same string.
    ``keep_ids``: by ``{ID}`` instead (caret-free), so only how the names are written is masked."""
    mark = (lambda m: "{" + m.group(2) + "}") if keep_ids else "{}"
    return " ".join(PLACEHOLDER.sub(mark, templatize(text, _vocab(vocabulary).index)).split())


def rerendered_fields(original: Hypothesis, variant: Hypothesis, vocabulary: Vocabulary | None = None
                      ) -> list[str]:
    """The prose fields (``statement``, ``explanation``) of ``variant`` equal to ``original``'s once
    entity names are masked (``masked``): the fields a template re-render left as they were."""
    return [name for name in ("statement", "explanation")
            if masked(getattr(original, name), vocabulary) == masked(getattr(variant, name), vocabulary)]


def rerender_share(pairs: Iterable[dict[str, Any]], vocabulary: Vocabulary | None = None) -> pd.Series:
    """Per kind (``KINDS`` order, kinds present only), % of a suite's built variants whose statement
    *and* explanation equal the original's once entity names are masked (a template re-render)."""
    rows = [(p["kind"], len(rerendered_fields(p["original"], p["variant"], vocabulary)) == 2)
            for p in pairs if p["variant"] is not None]
    share = pd.DataFrame(rows, columns=["kind", "rerendered"]).groupby("kind")["rerendered"].mean() * 100.0
    return share.reindex([k for k in KINDS if k in share.index]).rename("% re-rendered")


def _fields(h: Hypothesis) -> list[tuple[str, str]]:
    return [("statement", h.statement), ("explanation", h.explanation),
            *[(f"chain[{j}].text", s.text) for j, s in enumerate(h.chain)]]


def check_reason(original: Hypothesis, variant: Hypothesis, kind: str,
                 vocabulary: Vocabulary | None = None) -> str | None:
    """Why ``variant`` is not a valid ``kind`` perturbation of ``original`` (the first failed rule of
    the module docstring's kinds, in words); ``None`` if it is."""
    _check_kind(kind)
    vocab = _vocab(vocabulary)
    if variant.instance != original.instance:
        return f"instance changed ({original.instance!r} -> {variant.instance!r})"
    a_ids, b_ids = [s.id for s in original.chain], [s.id for s in variant.chain]
    if len(a_ids) != len(b_ids):
        return f"chain length changed ({len(a_ids)} -> {len(b_ids)})"
    unknown = [i for i in a_ids + b_ids if i not in vocab]
    if unknown:
        return f"step id {unknown[0]!r} is not in the vocabulary"
    if kind in MEANING_PRESERVING:
        return _rewording_reason(original, variant, kind, vocab)
    return _swap_reason(original, variant, kind, vocab)


def _rewording_reason(original: Hypothesis, variant: Hypothesis, kind: str, vocab: Vocabulary) -> str | None:
    """``check_reason`` for a meaning-preserving ``kind`` (same instance and chain length checked)."""
    mentions = vocab.mentions
    if [s.id for s in original.chain] != [s.id for s in variant.chain]:
        return "ordered step ids changed"
    if variant.statement != original.statement:
        return "statement changed"
    if _norm(variant.explanation) == _norm(original.explanation):
        return "explanation not rewritten"
    if set(mentions(variant.explanation)) != set(mentions(original.explanation)):
        return "explanation names a different set of entities"
    for j, s in enumerate(variant.chain):
        if s.id not in mentions(s.text):
            return f"chain[{j}].text does not name its entity {s.id!r}"
    if kind == "wording_only":
        if [s.text for s in variant.chain] != [s.text for s in original.chain]:
            return "chain text changed"
        return None
    if all(a.text == b.text for a, b in zip(original.chain, variant.chain)):
        return "no chain step text rewritten"
    for j, (a, b) in enumerate(zip(original.chain, variant.chain)):
        if sorted(mentions(a.text)) != sorted(mentions(b.text)):
            return f"chain[{j}].text names different entities"
    return None


def _swap_reason(original: Hypothesis, variant: Hypothesis, kind: str, vocab: Vocabulary) -> str | None:
    """``check_reason`` for a swap ``kind`` (same instance and chain length, known ids checked)."""
    mentions = vocab.mentions
    a_ids, b_ids = [s.id for s in original.chain], [s.id for s in variant.chain]
    changed = [j for j, (x, y) in enumerate(zip(a_ids, b_ids)) if x != y]
    if len(changed) != 1:
        return f"{len(changed)} step ids changed; exactly one must change"
    p = changed[0]
    if kind == "first_step_swapped" and p != 0:
        return f"changed step is chain[{p}], not the initiating step"
    if kind == "middle_step_swapped" and not 0 < p < len(a_ids) - 1:
        return f"changed step is chain[{p}], not an intermediate step"
    old, new = a_ids[p], b_ids[p]
    if vocab[new].type != vocab[old].type:
        return f"type changed ({vocab[old].type} -> {vocab[new].type})"
    if any(new in mentions(text) for _, text in _fields(original)) or new in a_ids:
        return f"replacement {new!r} already appears in the original"
    for (name, a_text), (_, b_text) in zip(_fields(original), _fields(variant)):
        expected = [new if i == old else i for i in mentions(a_text)]
        if mentions(b_text) != expected:
            return f"{name}: entity mentions are not the original's with {old} -> {new}"
    for j, (a, b) in enumerate(zip(original.chain, variant.chain)):
        if masked(b.text, vocab, keep_ids=True) != swap_ids(masked(a.text, vocab, keep_ids=True), old, new):
            return f"chain[{j}].text reworded beyond the swap"
    return None


def check(original: Hypothesis, variant: Hypothesis, kind: str,
          vocabulary: Vocabulary | None = None) -> bool:
    """True iff ``variant`` is a valid ``kind`` perturbation of ``original`` (``check_reason``)."""
    return check_reason(original, variant, kind, vocabulary) is None


# ----------------------------------------------------------------------------------------------
# suites


def swap_info(original: Hypothesis, variant: Hypothesis | None) -> dict[str, Any] | None:
    """``{position, from, to}`` of the first step id that differs; None without a variant or change."""
    if variant is None:
        return None
    for j, (a, b) in enumerate(zip(original.chain, variant.chain)):
        if a.id != b.id:
            return {"position": j, "from": a.id, "to": b.id}
    return None


def instance_entities(hypotheses: Iterable[Hypothesis], vocabulary: Vocabulary | None = None
                      ) -> dict[str, set[str]]:
    """Per instance, every entity id its hypotheses mention in chains or (marked) texts."""
    vocab = _vocab(vocabulary)
    out: dict[str, set[str]] = {}
    for h in hypotheses:
        out.setdefault(h.instance, set()).update(_mentioned(template_of(h, vocab)))
    return out


def pair_rng(seed: int, kind: str, hypothesis_id: str) -> np.random.Generator:
    """The generator for one (kind, hypothesis): independent of which others are in the suite."""
    return np.random.default_rng([seed, KINDS.index(kind), zlib.crc32(hypothesis_id.encode())])


def _check_entities(hypotheses: Sequence[Hypothesis], vocab: Vocabulary, which: str) -> None:
    """Raise ``MechauditError`` for the first chain or template entity id not in ``vocab``."""
    for h in hypotheses:
        texts = [] if h.template is None else [h.template.statement, *h.template.explanations, *h.template.chain]
        for ident in [s.id for s in h.chain] + [i for t in texts for i in placeholders(t)]:
            if ident not in vocab:
                raise MechauditError(f"hypothesis {h.id!r} names entity {ident!r}, which the {which} vocabulary "
                                     "does not have: pass your vocabulary (vocabulary=..., --vocabulary FILE)")


def make_suite(hypotheses: Sequence[Hypothesis], *, kinds: Sequence[str] = KINDS, seed: int = 0,
               vocabulary: Vocabulary | None = None, progress: bool = False
               ) -> list[dict[str, Any]]:
    """Every hypothesis perturbed once per kind (kind-major order), checked and labelled: pairs as in
    the module docstring, with Hypothesis objects; ``variant`` is ``None`` when the kind is impossible
    for that hypothesis (``reason`` says why). Swaps prefer replacements that other hypotheses of the
    same instance use (``instance_entities``). Same seed and input -> identical suite."""
    for kind in kinds:
        _check_kind(kind)
    check_range(seed, "seed", 0, integer=True)
    vocab = _vocab(vocabulary)
    _check_entities(hypotheses, vocab, "given" if vocabulary is not None else "shipped (default)")
    context = instance_entities(hypotheses, vocab)
    source = hypotheses_sha256(hypotheses)
    pairs = []
    jobs = [(k, h) for k in kinds for h in hypotheses]
    for kind, h in tqdm(jobs, disable=not progress, desc="perturb"):
        try:
            variant = perturb(h, kind, pair_rng(seed, kind, h.id), vocab, context[h.instance])
            reason = check_reason(h, variant, kind, vocab)
        except PerturbationError as exc:
            variant, reason = None, str(exc)
        pairs.append(suite_pair(kind, h, variant, reason, source))
    return pairs


def suite_pair(kind: str, original: Hypothesis, variant: Hypothesis | None, reason: str | None, source: str
               ) -> dict[str, Any]:
    """One pair of a suite (module docstring): valid when ``reason`` is None; ``source`` the
    ``hypotheses_sha256`` of the hypotheses the suite is built from."""
    return {"kind": kind, "original": original, "variant": variant, "valid": reason is None, "reason": reason,
            "swap": swap_info(original, variant) if kind in SWAP_KINDS else None, "hypotheses_sha256": source}


def hypotheses_sha256(hypotheses: Iterable[Hypothesis]) -> str:
    """sha256 of the hypotheses a suite is built from: every field (template included), in the
    given order, as canonical JSON; independent of how the file is laid out or its line endings."""
    text = "\n".join(json.dumps(h.model_dump(mode="json"), sort_keys=True, ensure_ascii=False) for h in hypotheses)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_suite(pairs: Iterable[dict[str, Any]], path: str | Path) -> None:
    """Write a suite as JSONL (stable key order, UTF-8; originals without their template, which lives
    in the hypotheses file): byte-identical for identical pairs."""
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for p in pairs:
            row = {**{key: p.get(key) for key in PAIR_FIELDS}, "valid": bool(p["valid"]),
                   "original": p["original"].model_dump(mode="json", exclude={"template"}),
                   "variant": None if p["variant"] is None else p["variant"].model_dump(mode="json")}
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def stale_reason(pairs: Sequence[dict[str, Any]], hypotheses: Sequence[Hypothesis]) -> tuple[int, str] | None:
    """Why a suite does not belong to ``hypotheses`` (the hypotheses file it sits beside), or None:
    ``(index of the first pair concerned, reason)``. A pair's original that is no longer among the
    hypotheses or differs from the one of its id (the template aside) makes it stale; so does a
    recorded ``hypotheses_sha256`` other than theirs (a hypothesis added, or a template changed)."""
    current = {h.id: h for h in hypotheses}
    for i, p in enumerate(pairs):
        original = p["original"]
        now = current.get(original.id)
        if now is None:
            return i, f"hypothesis {original.id!r} is no longer in the hypotheses file"
        if now.model_copy(update={"template": None}) != original.model_copy(update={"template": None}):
            return i, f"hypothesis {original.id!r} was edited after the suite was built"
    source = hypotheses_sha256(hypotheses)
    for i, p in enumerate(pairs):
        if p.get("hypotheses_sha256") not in (None, source):
            return i, ("it was built from other hypotheses (hypotheses_sha256 differs: one was added, dropped or "
                       "re-templated)")
    return None


def rebuild_command(path: str | Path) -> str:
    """The ``mechaudit perturb`` command that rebuilds the suite file ``path`` from the hypotheses and
    vocabulary beside it (the reworded suite from its authoring file
    ``perturbations_reworded.yaml``)."""
    path = Path(path)
    folder = path.parent
    reworded = (f" --reworded {folder / SUITE_FILES['reworded'].replace('.jsonl', '.yaml')}"
                if path.name == SUITE_FILES["reworded"] else "")
    return (f"mechaudit perturb --hypotheses {folder / 'hypotheses.jsonl'} --vocabulary {folder / 'vocabulary.yaml'}"
            f"{reworded} --out {path}")


def suite_path(data_dir: str | Path | None = None, suite: str = "template") -> Path:
    """The file of ``suite`` (a key of ``SUITE_FILES``) in ``data_dir`` (default: the data folder)."""
    if suite not in SUITE_FILES:
        raise ValueError(f"unknown suite {suite!r}; expected one of {tuple(SUITE_FILES)}")
    if data_dir is None:
        return data_path(SUITE_FILES[suite])
    return Path(data_dir) / SUITE_FILES[suite]


def available_suites(data_dir: str | Path | None = None) -> list[str]:
    """The suites whose file exists in ``data_dir`` (in ``SUITE_FILES`` order)."""
    return [name for name in SUITE_FILES if suite_path(data_dir, name).is_file()]


def load_pairs(data_dir: str | Path | None = None, suite: str = "template"
               ) -> tuple[list[tuple[Hypothesis, Hypothesis]], list[str]]:
    """The valid ``(original, variant)`` pairs of ``suite`` in ``data_dir`` and each pair's kind."""
    kept = load_suite(suite_path(data_dir, suite), valid_only=True)
    return [(p["original"], p["variant"]) for p in kept], [p["kind"] for p in kept]


def load_suite(path: str | Path | None = None, valid_only: bool = False) -> list[dict[str, Any]]:
    """Read a suite JSONL (default: the committed template-built suite) as pairs of ``make_suite``;
    ``valid_only`` drops excluded pairs. Errors name file, line and field; a stale suite
    (:func:`stale_reason`) names the command that rebuilds it."""
    path = suite_path() if path is None else Path(path)
    pairs, lines = [], []
    for lineno, raw in read_jsonl(path):
        for key in PAIR_FIELDS[:4]:
            if key not in raw:
                raise DataError(path, lineno, key, "missing required field")
        if raw["kind"] not in KINDS:
            raise DataError(path, lineno, "kind", f"unknown kind {raw['kind']!r}")
        if not isinstance(raw["valid"], bool):
            raise DataError(path, lineno, "valid", f"must be true or false (a JSON boolean), got {raw['valid']!r}")
        original = validate_record(Hypothesis, raw["original"], path, lineno, prefix="original.")
        variant = None if raw["variant"] is None else validate_record(Hypothesis, raw["variant"], path, lineno,
                                                                        prefix="variant.")
        pairs.append({**{key: raw.get(key) for key in PAIR_FIELDS}, "original": original, "variant": variant})
        lines.append(lineno)
    beside = path.parent / "hypotheses.jsonl"
    if beside.is_file():
        stale = stale_reason(pairs, load_hypotheses(beside))
        if stale is not None:
            i, reason = stale
            raise MechauditError(f"stale perturbation suite: {reason} ({beside}); rebuild it with "
                                 f"`{rebuild_command(path)}`", file=path, line=lines[i], field="original")
    return [p for p in pairs if p["valid"]] if valid_only else pairs


def phrasing_similarity(hypotheses: Sequence[Hypothesis], vocabulary: Vocabulary | None = None
                        ) -> np.ndarray:
    """TF-IDF cosine between each hypothesis' first and every further explanation phrasing (canonical
    names; one vectorizer fitted on all phrasings): one value per (hypothesis with a template, further
    phrasing)."""
    from mechaudit.rules.tfidf import new_vectorizer, rowwise_cosine  # defers scikit-learn

    names = _vocab(vocabulary).canonical_names()
    texts: list[str] = []
    ia: list[int] = []
    ib: list[int] = []
    for h in hypotheses:
        if h.template is None:
            continue
        first = len(texts)
        texts += [render(e, names) for e in h.template.explanations]
        ia += [first] * (len(h.template.explanations) - 1)
        ib += list(range(first + 1, len(texts)))
    if not ia:
        return np.zeros(0)
    X = new_vectorizer().fit_transform(texts)
    return rowwise_cosine(X, np.asarray(ia), np.asarray(ib))


# ----------------------------------------------------------------------------------------------
# showing what a perturbation changed


def text_changes(original: Hypothesis, variant: Hypothesis) -> list[tuple[str, str, str]]:
    """Word spans ``(field, before, after)`` that differ between two hypotheses, field by field
    (statement, explanation, ``chain[j].text``; a common chain prefix), in reading order, from
    ``difflib`` word-level opcodes; surrounding ``.,;:`` stripped."""
    out = []
    for (name, a_text), (_, b_text) in zip(_fields(original), _fields(variant)):
        a, b = a_text.split(), b_text.split()
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
            if tag == "equal":
                continue
            if tag == "insert" and i1 > 0:  # "CagA" -> "CagA oncoprotein", not "" -> "oncoprotein"
                i1, j1 = i1 - 1, j1 - 1
            pairs = {(x.strip(".,;:"), y.strip(".,;:")) for x, y in zip(a[i1:i2], b[j1:j2])}
            if i2 - i1 == j2 - j1 > 1 and len(pairs) == 1:  # "X. X" -> "Y. Y": one word, twice
                out += [(name, x, y) for x, y in zip(a[i1:i2], b[j1:j2])]
            else:
                out.append((name, " ".join(a[i1:i2]), " ".join(b[j1:j2])))
    return [(name, x.strip(".,;:"), y.strip(".,;:")) for name, x, y in out]


def describe_change(original: Hypothesis, variant: Hypothesis, width: int = 110) -> str:
    """One line of at most ``width`` characters saying what ``variant`` changed in ``original``'s text
    ("" when nothing): a field whose words mostly changed as "<field> reworded: <new text>", other
    changes grouped as "before -> after (fields)"."""
    reworded: list[str] = []
    groups: dict[tuple[str, str], list[str]] = {}
    by_field: dict[str, list[tuple[str, str]]] = {}
    for name, before, after in text_changes(original, variant):
        by_field.setdefault(name, []).append((before, after))
    new_text = dict(_fields(variant))
    for name, spans in by_field.items():
        changed = sum(len(after.split()) for _, after in spans)
        if changed > len(new_text[name].split()) / 2:
            reworded.append(f"{name} reworded: \"{new_text[name]}\"")
        else:
            for before, after in spans:
                groups.setdefault((before or "(nothing)", after or "(nothing)"), []).append(name)
    parts = [f"{b} -> {a} ({', '.join(_compact(fields))})" for (b, a), fields in groups.items()]
    return textwrap.shorten("; ".join(parts + reworded), width=width, placeholder=" ...")


def _compact(fields: list[str]) -> list[str]:
    """``chain[0].text, chain[2].text`` -> ``chain steps 1, 3`` (counted from 1, as a reader counts);
    other field names unchanged."""
    steps = [str(int(f[len("chain["):-len("].text")]) + 1) for f in fields if f.startswith("chain[")]
    rest = list(dict.fromkeys(f for f in fields if not f.startswith("chain[")))
    unique = list(dict.fromkeys(steps))
    return rest + ([f"chain step{'s' if len(unique) > 1 else ''} {', '.join(unique)}"] if steps else [])


__all__ = ["KINDS", "MEANING_PRESERVING", "SWAP_KINDS", "PerturbationError", "alias_chain", "alias_names", "check",
           "check_reason", "default_vocabulary", "describe_change", "instance_entities", "load_suite",
           "make_suite", "masked", "pair_rng", "perturb", "phrasing_similarity", "rerender_share",
           "rerendered_fields", "swap_candidates", "swap_info", "swapped_chain", "template_of", "text_changes",
           "variant_hypothesis", "write_suite", "SUITE_FILES", "SUITE_LABELS", "suite_path", "available_suites",
           "load_pairs", "hypotheses_sha256", "stale_reason", "rebuild_command"]
