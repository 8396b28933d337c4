"""Marked entity mentions: render ``{ID}`` placeholders to names and find names in plain text.

In a *template* every mention of a vocabulary entity is a placeholder: ``{ID}`` renders the
entity's chosen name, ``{^ID}`` with its first letter upper-cased. ``find_mentions`` goes the other
way (longest name first, whole words, first letter case-insensitive): a correctly marked template
satisfies ``find_mentions(render(t, names), index) == placeholders(t)`` for any names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

PLACEHOLDER = re.compile(r"\{(\^?)([A-Za-z0-9_]+)\}")


def placeholders(template: str) -> list[str]:
    """Entity ids marked in ``template``, in reading order (repeats kept)."""
    return [m.group(2) for m in PLACEHOLDER.finditer(template)]


def render(template: str, names: Mapping[str, str]) -> str:
    """Replace every placeholder by ``names[id]`` (``{^id}`` capitalises the first letter); a
    ``KeyError`` names an id without a name."""

    def _name(m: re.Match[str]) -> str:
        ident = m.group(2)
        if ident not in names:
            raise KeyError(f"no name for entity id {ident!r}")
        name = names[ident]
        return name[:1].upper() + name[1:] if m.group(1) else name

    return PLACEHOLDER.sub(_name, template)


def swap_ids(template: str, old: str, new: str) -> str:
    """Template with every placeholder of entity ``old`` pointing at entity ``new`` instead."""
    return PLACEHOLDER.sub(lambda m: "{" + m.group(1) + (new if m.group(2) == old else m.group(2)) + "}", template)


def _name_pattern(name: str) -> str:
    first, rest = name[0], re.escape(name[1:])
    head = f"[{first.upper()}{first.lower()}]" if first.isalpha() else re.escape(first)
    return head + rest


@lru_cache(maxsize=16)
def _scanner(index: tuple[tuple[str, str], ...]) -> tuple[re.Pattern[str], dict[str, str]]:
    names = sorted((n for n, _ in index), key=lambda n: (-len(n), n))
    body = "|".join(_name_pattern(n) for n in names)
    pattern = re.compile(rf"(?<![A-Za-z0-9])(?:{body})(?![A-Za-z0-9])")
    lookup: dict[str, str] = {}
    for name, ident in index:
        lookup[name[:1].upper() + name[1:]] = ident
        lookup[name[:1].lower() + name[1:]] = ident
        lookup[name] = ident
    return pattern, lookup


def name_index(entries: Iterable[tuple[str, Iterable[str]]]) -> tuple[tuple[str, str], ...]:
    """Hashable ``(name, id)`` index from ``(id, names)`` pairs, for ``find_mentions``."""
    return tuple(sorted((name, ident) for ident, names in entries for name in names))


def find_mentions(text: str, index: tuple[tuple[str, str], ...]) -> list[str]:
    """Ids of the entities whose names occur in ``text``, in reading order (repeats kept)."""
    if not index:
        return []
    pattern, lookup = _scanner(index)
    return [lookup[m.group(0)] for m in pattern.finditer(text)]


def templatize(text: str, index: tuple[tuple[str, str], ...]) -> str:
    """Plain text with every recognised entity name replaced by its ``{ID}`` placeholder."""
    if not index:
        return text
    pattern, lookup = _scanner(index)
    exact = {name for name, _ in index}

    def _mark(m: re.Match[str]) -> str:
        found = m.group(0)
        caret = "" if found in exact else "^"
        return "{" + caret + lookup[found] + "}"

    return pattern.sub(_mark, text)
