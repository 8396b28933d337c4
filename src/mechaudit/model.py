"""The benchmark's data model: vocabulary entities, causal steps, hypotheses, instances.

A ``Hypothesis`` has a statement, a mechanistic explanation and a causal chain of ``Step``s
(``chain[0]`` the initiating event, ``chain[-1]`` the terminal finding), each naming an ``Entity``
of the ``Vocabulary``; its optional ``template`` marks entity mentions (``{ID}``) so that
perturbations can re-render names and swap entities. Every equivalence rule compares the text
``hypothesis_text`` joins. Reading and checking files is ``mechaudit.schema``'s job; this module does no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mechaudit.errors import MechauditError
from mechaudit.render import find_mentions, name_index

MIN_CHAIN = 3


class DataError(MechauditError):
    """Bad benchmark input; the message names file, line and field (a ``MechauditError``)."""

    def __init__(self, file: str | Path, line: int | None, fld: str, message: str):
        super().__init__(message, file=file, line=line, field=fld)


class Entity(BaseModel):
    """A vocabulary entry: ``type`` groups swap alternatives; ``name`` is the canonical name."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str = Field(pattern=r"^[A-Za-z0-9_]+$")
    type: str = Field(min_length=1)
    name: str = Field(min_length=1)
    aliases: list[str] = Field(default_factory=list)
    note: str | None = None

    @property
    def names(self) -> list[str]:
        """Canonical name followed by the aliases."""
        return [self.name, *self.aliases]


@dataclass(frozen=True)
class Vocabulary:
    """Entities by id; ``types`` maps a type to its member ids (file order)."""

    entities: dict[str, Entity]
    types: dict[str, str] = field(default_factory=dict)  # type -> description

    def __contains__(self, ident: object) -> bool:
        return ident in self.entities

    def __getitem__(self, ident: str) -> Entity:
        return self.entities[ident]

    def __len__(self) -> int:
        return len(self.entities)

    def of_type(self, type_: str) -> list[str]:
        """Ids of all entities of ``type_`` in file order."""
        return [e.id for e in self.entities.values() if e.type == type_]

    def canonical_names(self) -> dict[str, str]:
        """``id -> canonical name`` for ``render``."""
        return {i: e.name for i, e in self.entities.items()}

    @cached_property
    def index(self) -> tuple[tuple[str, str], ...]:
        """Name index over canonical names and aliases for ``render.find_mentions``."""
        return name_index((i, e.names) for i, e in self.entities.items())

    def mentions(self, text: str) -> list[str]:
        """Ids of the vocabulary entities named in plain ``text``, in reading order."""
        return find_mentions(text, self.index)


class Step(BaseModel):
    """One causal link: ``id`` a vocabulary id, ``text`` its wording in this hypothesis."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    text: str = Field(min_length=1)


class Template(BaseModel):
    """Texts with marked mentions (``{ID}``); ``explanations[0]`` matches ``explanation``."""

    model_config = ConfigDict(extra="forbid")
    statement: str
    explanations: list[str] = Field(min_length=1)
    chain: list[str]


class Hypothesis(BaseModel):
    """A mechanism hypothesis about one instance's finding.

    ``run``/``depth``/``opening_id`` are set for workflow outputs (``depth`` = critique rounds).
    ``mechanism`` labels hypotheses of the same mechanism (same initiating event and route, maybe in
    less detail); ``near_duplicate_of`` names one that differs in exactly one causal component.
    """

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    instance: str = Field(min_length=1)
    statement: str = Field(min_length=1)
    explanation: str = Field(min_length=1)
    chain: list[Step]
    run: str | None = None
    depth: int | None = None
    opening_id: str | None = None
    mechanism: str | None = None
    near_duplicate_of: str | None = None
    template: Template | None = None

    @field_validator("chain")
    @classmethod
    def _chain_length(cls, chain: list[Step]) -> list[Step]:
        if len(chain) < MIN_CHAIN:
            raise ValueError(f"chain has {len(chain)} steps; at least {MIN_CHAIN} are required")
        return chain

    @model_validator(mode="after")
    def _template_shape(self) -> Hypothesis:
        if self.template is not None and len(self.template.chain) != len(self.chain):
            raise ValueError(f"template.chain has {len(self.template.chain)} steps, chain has {len(self.chain)}")
        return self


class Instance(BaseModel):
    """An experimental finding (the terminal outcome) with evidence and the ids of its opening
    hypotheses (five per instance in the shipped benchmark and the paper's design)."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(min_length=1)
    title: str
    finding: str
    terminal_id: str
    evidence: list[str] = Field(min_length=1)
    openings: list[str] = Field(min_length=1)
    source: str | None = None


def mechanism_key(h: Hypothesis) -> tuple[str, tuple[str, ...], str]:
    """Strict mechanism identity: ``(initiating id, intermediate ids in order, terminal id)``."""
    ids = [s.id for s in h.chain]
    return ids[0], tuple(ids[1:-1]), ids[-1]


def hypothesis_text(h: Hypothesis) -> str:
    """The three compared fields as one text: statement, explanation, chain joined by ' -> '."""
    return "\n".join([h.statement, h.explanation, " -> ".join(s.text for s in h.chain)])


@dataclass(frozen=True)
class Benchmark:
    """The committed benchmark, cross-validated: instances, vocabulary and hypotheses."""

    instances: list[Instance]
    vocabulary: Vocabulary
    hypotheses: list[Hypothesis]

    def by_instance(self, instance: str) -> list[Hypothesis]:
        """Hypotheses of one instance in file order."""
        return [h for h in self.hypotheses if h.instance == instance]

    def openings(self, instance: str) -> list[Hypothesis]:
        """The instance's opening hypotheses, in the order listed in ``instances.yaml``."""
        by_id = {h.id: h for h in self.hypotheses}
        inst = next(i for i in self.instances if i.id == instance)
        return [by_id[i] for i in inst.openings]


__all__ = ["MIN_CHAIN", "DataError", "Entity", "Vocabulary", "Step", "Template", "Hypothesis", "Instance",
           "Benchmark", "mechanism_key", "hypothesis_text"]
