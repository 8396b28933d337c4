"""Sphinx extension: API signatures a reader can read.

:func:`readable_signature` turns ``Annotated[X, ...]`` into ``X`` and a qualified name into its last
part, so a pydantic model's synthesised signature reads ``Step(*, id: str, text: str)`` (the
constraints stay in the model's docstring and validation errors).

Enabled from ``_config.yml`` (``sphinx.extra_extensions``).
"""

from __future__ import annotations

import re

_ANNOTATED = re.compile(r"~?(?:typing\.|types\.|typing_extensions\.)?Annotated\[")
_QUALIFIED = re.compile(r"~?\b(?:[A-Za-z_]\w*\.)+(?=[A-Za-z_]\w*)")
_QUOTED = re.compile(r"('[^']*'|\"[^\"]*\")")


def _arguments_span(text: str, start: int) -> tuple[int, int]:
    """``(end of the first top-level argument, index of the closing ]``) of the ``[`` just before
    ``start``."""
    depth, first = 1, None
    for i in range(start, len(text)):
        depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(text[i], 0)
        if text[i] == "," and depth == 1 and first is None:
            first = i
        if depth == 0:
            return (i if first is None else first), i
    raise ValueError(f"unbalanced brackets in {text!r}")


def strip_annotated(text: str) -> str:
    """``Annotated[X, meta, ...]`` -> ``X`` everywhere in ``text`` (nested ones too)."""
    while m := _ANNOTATED.search(text):
        first, end = _arguments_span(text, m.end())
        text = text[:m.start()] + text[m.end():first].strip() + text[end + 1:]
    return text


def readable_signature(text: str | None) -> str | None:
    """A signature or return annotation without ``Annotated`` metadata and module paths; quoted
    default values are left as written."""
    if not text:
        return text
    parts = _QUOTED.split(strip_annotated(text))
    return "".join(p if i % 2 else _QUALIFIED.sub("", p) for i, p in enumerate(parts))


def _process_signature(app, what, name, obj, options, signature, return_annotation):
    return readable_signature(signature), readable_signature(return_annotation)


def setup(app):
    app.setup_extension("sphinx.ext.autodoc")  # it defines the event
    app.connect("autodoc-process-signature", _process_signature)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
