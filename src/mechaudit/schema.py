"""Read and check the benchmark's files: the validating loaders over ``mechaudit.model``, whose
data model is re-exported here (``from mechaudit.schema import Hypothesis, load_hypotheses``).

Every loader raises ``DataError`` (a ``ValueError``) whose message starts with
``<file>:<line>: field '<field>':`` (JSONL: the line number; YAML: the line of the entry).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from mechaudit.model import (
    MIN_CHAIN,
    Benchmark,
    DataError,
    Entity,
    Hypothesis,
    Instance,
    Step,
    Template,
    Vocabulary,
    hypothesis_text,
    mechanism_key,
)
from mechaudit.paths import data_path
from mechaudit.render import PLACEHOLDER, placeholders, render

# ----------------------------------------------------------------------------------------------
# YAML with line numbers


def repeated_key(node: yaml.Node) -> tuple[str, int, yaml.Node] | None:
    """The first key written twice in a YAML mapping anywhere under ``node``: ``(key, line of its
    first appearance (1-based), the repeated key's node)``, or None. Keys are compared as written."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, _ in node.value:
            text = str(getattr(key, "value", key))
            if text in seen:
                return text, seen[text], key
            seen[text] = key.start_mark.line + 1
        children = [n for pair in node.value for n in pair]
    elif isinstance(node, yaml.SequenceNode):
        children = node.value
    else:
        return None
    return next((found for child in children if (found := repeated_key(child)) is not None), None)


class _Lines:
    """Safe-loader mixin that records each mapping's line in ``__line__`` and rejects duplicate keys."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        repeated = repeated_key(node)
        if repeated is not None:
            key, first, again = repeated
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first on line {first})", again.start_mark)
        mapping = super().construct_mapping(node, deep=True)
        mapping["__line__"] = node.start_mark.line + 1
        return mapping


class _LineLoader(_Lines, yaml.SafeLoader):
    """The pure-Python line loader (its messages name what is malformed)."""


#: the same loader on libyaml when PyYAML has it (several times faster)
_FastLineLoader = type("_FastLineLoader", (_Lines, getattr(yaml, "CSafeLoader", yaml.SafeLoader)), {})


def load_yaml(text: str, fast: type = _FastLineLoader, slow: type = _LineLoader) -> Any:
    """``text`` read by the ``fast`` (libyaml) loader; a malformed text is read again by the ``slow``
    (pure-Python) one, whose message names the problem the same way on every machine."""
    try:
        return yaml.load(text, Loader=fast)  # noqa: S506 (safe loaders)
    except yaml.YAMLError:
        yaml.load(text, Loader=slow)  # noqa: S506
        raise


def _decode(path: Path, raw: bytes, line_offset: int = 0) -> str:
    """``raw`` as UTF-8 (a byte-order mark at the start of the file is dropped, as editors on Windows
    write one); invalid bytes raise :class:`DataError` naming the file and line."""
    try:
        return raw.decode("utf-8-sig" if line_offset == 0 else "utf-8")
    except UnicodeDecodeError as exc:
        line = line_offset + raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - raw.rfind(b"\n", 0, exc.start)  # 1-based byte in the line
        raise DataError(path, line, "<text>", f"not UTF-8 text (byte {column} of the line: "
                        f"{exc.reason})") from None


def read_yaml(path: Path) -> Any:
    """The YAML file ``path`` with each mapping's line in ``__line__``; malformed or non-UTF-8 text
    raises :class:`DataError` naming the file and line."""
    try:
        return load_yaml(_decode(path, Path(path).read_bytes()))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark is not None else None
        raise DataError(path, line, "<yaml>", f"malformed YAML: {exc}") from exc


def strip_lines(obj: Any) -> Any:
    """``obj`` without the ``__line__`` entries ``read_yaml`` adds."""
    if isinstance(obj, dict):
        return {k: strip_lines(v) for k, v in obj.items() if k != "__line__"}
    if isinstance(obj, list):
        return [strip_lines(v) for v in obj]
    return obj


def _loc(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<record>"


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line of a JSONL file; a line that is not a
    JSON object raises :class:`DataError` naming file and line."""
    path = Path(path)
    with open(path, "rb") as fh:
        for lineno, raw_bytes in enumerate(fh, 1):
            raw_line = _decode(path, raw_bytes, lineno - 1)
            if not raw_line.strip():
                continue
            try:
                raw = json.loads(raw_line)
            except json.JSONDecodeError as exc:
                raise DataError(path, lineno, "<json>", f"malformed JSON: {exc.msg} "
                                f"(column {exc.colno})") from exc
            if not isinstance(raw, dict):
                raise DataError(path, lineno, "<record>", "expected a JSON object")
            yield lineno, raw


def validate_record(model: type[BaseModel], raw: Any, path: str | Path, line: int | None, prefix: str = ""):
    """``model.model_validate(raw)``; a failure raises :class:`DataError` naming file, line and field."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        msg = "missing required field" if err["type"] == "missing" else err["msg"]
        raise DataError(path, line, prefix + _loc(err["loc"]), msg) from exc


# ----------------------------------------------------------------------------------------------
# loaders


def load_vocabulary(path: str | Path | None = None) -> Vocabulary:
    """Load ``vocabulary.yaml`` (``types``: type -> description; ``entities``: a list): unique ids,
    declared types, each name (canonical or alias) of one entity, two or more members per type."""
    path = Path(path) if path is not None else data_path("vocabulary.yaml")
    doc = read_yaml(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("entities"), list):
        raise DataError(path, 1, "entities", "expected a mapping with an 'entities' list")
    types = {k: str(v) for k, v in strip_lines(doc.get("types") or {}).items()}
    entities: dict[str, Entity] = {}
    lines: dict[str, int] = {}
    owner: dict[str, str] = {}
    for k, raw in enumerate(doc["entities"]):
        line = raw.get("__line__") if isinstance(raw, dict) else None
        ent = validate_record(Entity, strip_lines(raw), path, line, prefix=f"entities[{k}].")
        if ent.id in entities:
            raise DataError(path, line, f"entities[{k}].id",
                            f"duplicate entity id {ent.id!r} (first on line {lines[ent.id]})")
        if types and ent.type not in types:
            raise DataError(path, line, f"entities[{k}].type", f"undeclared type {ent.type!r}")
        for name in ent.names:
            for form in {name, name[:1].upper() + name[1:], name[:1].lower() + name[1:]}:
                if owner.get(form, ent.id) != ent.id:
                    raise DataError(path, line, f"entities[{k}].aliases",
                                    f"name {name!r} is also a name of {owner[form]!r}")
                owner[form] = ent.id
        entities[ent.id], lines[ent.id] = ent, line
    vocab = Vocabulary(entities=entities, types=types or {e.type: "" for e in entities.values()})
    for type_ in vocab.types:
        if len(vocab.of_type(type_)) < 2:
            raise DataError(path, None, "types", f"type {type_!r} has fewer than 2 members")
    return vocab


def load_instances(path: str | Path | None = None, vocabulary: Vocabulary | None = None
                   ) -> list[Instance]:
    """Load ``instances.yaml`` (a list under ``instances``); ids unique, terminal ids known."""
    path = Path(path) if path is not None else data_path("instances.yaml")
    doc = read_yaml(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("instances"), list):
        raise DataError(path, 1, "instances", "expected a mapping with an 'instances' list")
    out: list[Instance] = []
    seen: dict[str, int | None] = {}
    for k, raw in enumerate(doc["instances"]):
        line = raw.get("__line__") if isinstance(raw, dict) else None
        inst = validate_record(Instance, strip_lines(raw), path, line, prefix=f"instances[{k}].")
        if inst.id in seen:
            raise DataError(path, line, f"instances[{k}].id",
                            f"duplicate instance id {inst.id!r} (first on line {seen[inst.id]})")
        if vocabulary is not None and inst.terminal_id not in vocabulary:
            raise DataError(path, line, f"instances[{k}].terminal_id",
                            f"unknown vocabulary id {inst.terminal_id!r}")
        seen[inst.id] = line
        out.append(inst)
    return out


def _check_template(h: Hypothesis, vocab: Vocabulary, path: Path, line: int) -> None:
    """Template ids known, each step template marks its step id, and rendering matches texts."""
    t = h.template
    assert t is not None
    names = vocab.canonical_names()
    texts = [("template.statement", t.statement, h.statement),
             ("template.explanations[0]", t.explanations[0], h.explanation)]
    texts += [(f"template.explanations[{j}]", e, None) for j, e in enumerate(t.explanations[1:], 1)]
    texts += [(f"template.chain[{j}]", s, h.chain[j].text) for j, s in enumerate(t.chain)]
    for fld, tmpl, plain in texts:
        unknown = [i for i in placeholders(tmpl) if i not in vocab]
        if unknown:
            raise DataError(path, line, fld, f"unknown vocabulary id {unknown[0]!r} in template")
        if plain is not None and render(tmpl, names) != plain:
            raise DataError(path, line, fld, "rendering the template does not give the stored text")
    for j, (tmpl, step) in enumerate(zip(t.chain, h.chain)):
        if step.id not in placeholders(tmpl):
            raise DataError(path, line, f"template.chain[{j}]",
                            f"step template does not mark its own entity {step.id!r}")
    for fld, tmpl, _ in texts:
        unmarked = vocab.mentions(PLACEHOLDER.sub(" ; ", tmpl))
        if unmarked:
            name = vocab[unmarked[0]].names
            raise DataError(path, line, fld, f"unmarked mention of entity {unmarked[0]!r} (one of "
                            f"{', '.join(repr(n) for n in name[:3])}): write it as {{{unmarked[0]}}}")


def _check_mentions(h: Hypothesis, vocab: Vocabulary, path: Path, line: int) -> None:
    """Without a template: each step text names its own entity (so perturbations can find it)."""
    for j, step in enumerate(h.chain):
        if step.id not in vocab.mentions(step.text):
            names = ", ".join(repr(n) for n in vocab[step.id].names[:3])
            raise DataError(path, line, f"chain[{j}].text",
                            f"does not name its entity {step.id!r} (one of {names})")


def load_hypotheses(path: str | Path | None = None, vocabulary: Vocabulary | None = None,
                    instances: Iterable[Instance] | None = None) -> list[Hypothesis]:
    """Load a hypotheses JSONL file (one ``Hypothesis`` a line), ids unique. With ``vocabulary``: step
    ids known, a template rendering the stored texts with every entity marked, or without one each
    step text naming its entity; with ``instances``: every ``instance`` one of their ids."""
    path = Path(path) if path is not None else data_path("hypotheses.jsonl")
    known = {i.id for i in instances} if instances is not None else None
    out: list[Hypothesis] = []
    seen: dict[str, int] = {}
    for lineno, raw in read_jsonl(path):
        h = validate_record(Hypothesis, raw, path, lineno)
        if h.id in seen:
            raise DataError(path, lineno, "id",
                            f"duplicate hypothesis id {h.id!r} (first on line {seen[h.id]})")
        if known is not None and h.instance not in known:
            raise DataError(path, lineno, "instance", f"unknown instance id {h.instance!r}")
        if vocabulary is not None:
            for j, step in enumerate(h.chain):
                if step.id not in vocabulary:
                    raise DataError(path, lineno, f"chain[{j}].id",
                                    f"unknown vocabulary id {step.id!r}")
            if h.template is not None:
                _check_template(h, vocabulary, path, lineno)
            else:
                _check_mentions(h, vocabulary, path, lineno)
        seen[h.id] = lineno
        out.append(h)
    return out


def dump_hypotheses(hypotheses: Iterable[Hypothesis], path: str | Path) -> None:
    """Write hypotheses as JSONL (one compact object a line, UTF-8, stable field order)."""
    with open(path, "w", encoding="utf-8", newline="\n") as fh:
        for h in hypotheses:
            fh.write(json.dumps(h.model_dump(mode="json"), ensure_ascii=False) + "\n")


def load_benchmark(data_dir: str | Path | None = None) -> Benchmark:
    """Load and cross-check ``vocabulary.yaml``, ``instances.yaml`` and ``hypotheses.jsonl``: each
    instance's openings are its hypotheses, and every hypothesis ends at its instance's terminal id."""
    base = Path(data_dir) if data_dir is not None else data_path("")
    vocab = load_vocabulary(base / "vocabulary.yaml")
    instances = load_instances(base / "instances.yaml", vocabulary=vocab)
    hyps = load_hypotheses(base / "hypotheses.jsonl", vocabulary=vocab, instances=instances)
    by_id = {h.id: h for h in hyps}
    terminal = {i.id: i.terminal_id for i in instances}
    for k, inst in enumerate(instances):
        for j, oid in enumerate(inst.openings):
            if oid not in by_id or by_id[oid].instance != inst.id:
                raise DataError(base / "instances.yaml", None, f"instances[{k}].openings[{j}]",
                                f"{oid!r} is not a hypothesis of instance {inst.id!r}")
    with open(base / "hypotheses.jsonl", encoding="utf-8") as fh:
        lines = [n for n, text in enumerate(fh, 1) if text.strip()]
    for lineno, h in zip(lines, hyps):
        if h.chain[-1].id != terminal[h.instance]:
            raise DataError(base / "hypotheses.jsonl", lineno, "chain[-1].id",
                            f"terminal step {h.chain[-1].id!r} is not the finding "
                            f"{terminal[h.instance]!r} of instance {h.instance!r}")
    return Benchmark(instances=instances, vocabulary=vocab, hypotheses=hyps)


__all__ = ["MIN_CHAIN", "DataError", "Entity", "Vocabulary", "Step", "Template", "Hypothesis", "Instance",
           "Benchmark", "mechanism_key", "hypothesis_text", "read_jsonl", "load_vocabulary", "load_instances",
           "load_hypotheses", "dump_hypotheses", "load_benchmark"]
