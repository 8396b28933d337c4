"""A chapter's glued numbers as typed records: each field declares its unit and rounding once.

A chapter returns its facts as a frozen dataclass of :func:`fact` fields; :func:`glue_facts` glues
each under ``<prefix>_<field>`` (nested: ``<prefix>_<field>_<subfield>``), and :func:`fact_keys`
lists the same keys from the class alone (a test checks them against the pages)::

    @dataclass(frozen=True)
    class Shares:
        conceded_pct: float = fact(unit="%", digits=1, doc="share of demands conceded")

    glue_facts("ch03", Shares(conceded_pct=41.27))  # glues ch03_conceded_pct = 41.3
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from mechaudit.report.glue import glue

_META = "mechaudit.fact"


@dataclasses.dataclass(frozen=True)
class FactSpec:
    """What a field declares: ``unit`` (as the prose writes it: "%", "pp", "runs"; "" for none),
    ``digits`` (decimals to round to; ``None``: glued as is), ``doc`` (one line), ``missing`` (the
    text glued when the value is ``None``; ``None``: glue ``None`` as is)."""

    unit: str = ""
    digits: int | None = None
    doc: str = ""
    missing: str | None = None


def fact(unit: str = "", digits: int | None = None, doc: str = "", *, missing: str | None = None,
         default: Any = dataclasses.MISSING) -> Any:
    """A record field that is one glued fact: its unit, rounding (``digits`` decimals, ``None``: as
    is), one-line doc and the text for a ``None`` value (``missing``); ``default`` as in
    ``dataclasses.field``. Returns the ``dataclasses.field``."""
    if digits is not None and (isinstance(digits, bool) or not isinstance(digits, int) or digits < 0):
        raise ValueError(f"fact: digits must be a whole number >= 0 or None, not {digits!r}")
    spec = FactSpec(unit=unit, digits=digits, doc=doc, missing=missing)
    return dataclasses.field(default=default, metadata={_META: spec})


def _is_record(tp: Any) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _is_text(tp: Any) -> bool:
    """Whether a field's type is text (``str``, or ``str | None``)."""
    return tp is str or set(typing.get_args(tp)) - {type(None)} == {str}


def _fields(cls: type) -> list[tuple[str, type | None, FactSpec | None]]:
    """``(name, nested record class or None, spec or None)`` per field of a frozen record ``cls``;
    refuses a class that is not a frozen dataclass, a plain field not declared with :func:`fact`, and
    ``digits`` on a field typed as text."""
    if not _is_record(cls):
        raise TypeError(f"facts: {cls!r} is not a dataclass")
    if not cls.__dataclass_params__.frozen:
        raise TypeError(f"facts: {cls.__name__} is not frozen (declare it with @dataclass(frozen=True))")
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if _is_record(tp):
            out.append((f.name, tp, None))
            continue
        spec = f.metadata.get(_META)
        if spec is None:
            raise TypeError(f"facts: {cls.__name__}.{f.name} is neither a record nor declared with fact()")
        if spec.digits is not None and _is_text(tp):
            raise TypeError(f"facts: {cls.__name__}.{f.name} is text but declares digits={spec.digits}")
        out.append((f.name, None, spec))
    return out


def spec_of(cls: type, name: str) -> FactSpec:
    """The declaration (unit, digits) of the fact field ``name`` of the record class ``cls``: what a
    table column showing the same quantity prints (``report.tables.Column.of``)."""
    for field_name, _, spec in _fields(cls):
        if field_name == name and spec is not None:
            return spec
    raise KeyError(f"facts: {cls.__name__} has no fact field {name!r}")


def fact_keys(prefix: str, cls: type) -> list[str]:
    """Every glue key a record class produces under ``prefix``, in field order, from the class alone."""
    keys = []
    for name, nested, _ in _fields(cls):
        keys += fact_keys(f"{prefix}_{name}", nested) if nested else [f"{prefix}_{name}"]
    return keys


def _entries(prefix: str, facts: Any) -> list[tuple[str, Any, int | None]]:
    """``(key, value, digits)`` per fact of a record, nested records flattened; nothing glued yet."""
    if isinstance(facts, type):
        raise TypeError(f"facts: glue a record, not the class {facts.__name__}")
    out = []
    for name, nested, spec in _fields(type(facts)):
        value, key = getattr(facts, name), f"{prefix}_{name}"
        if nested:
            if not isinstance(value, nested):
                raise TypeError(f"facts: {key} is {value!r}, not a {nested.__name__}")
            out += _entries(key, value)
        elif value is None:
            out.append((key, spec.missing, None))
        else:
            out.append((key, value, spec.digits))
    return out


def glue_facts(prefix: str, facts: Any) -> None:
    """Glue every field of the frozen record ``facts`` under ``<prefix>_<field>``, rounded to its
    declared digits; a ``None`` value is glued as its declared ``missing`` text, or as is. The whole
    record is checked before the first value is glued."""
    for key, value, digits in _entries(prefix, facts):
        glue(key, value, digits=digits)
