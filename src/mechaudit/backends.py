"""The one list of backends a chapter, rule or client may be run with.

- ``reference``: offline, deterministic stand-ins (reference judges, the workflow simulator);
- ``anthropic``: the real method through the Anthropic API (key from the environment only);
- ``replay``: recorded answers only; a miss is an error.

A name is parsed once, where it enters (a chapter's parameters, ``get_client``); library code below
the book takes an LLM client (or None offline), not a backend. Nothing heavy is imported here.
"""

from __future__ import annotations

from enum import StrEnum


class BackendError(ValueError):
    """A backend name that is not one of :class:`Backend` (or not allowed where it was given)."""


class Backend(StrEnum):
    """A backend name (a ``str``, so it prints and serialises as its value); parse a name once where it
    enters and compare members (``backend is Backend.REPLAY``)."""

    REFERENCE = "reference"
    ANTHROPIC = "anthropic"
    REPLAY = "replay"

    @property
    def is_llm(self) -> bool:
        """True for the backends that answer through an LLM (live or recorded)."""
        return self is not Backend.REFERENCE

    @classmethod
    def parse(cls, value: object, field: str = "backend") -> Backend:
        """``value`` as a ``Backend``; ``BackendError`` (one line naming ``field`` and the choices)."""
        try:
            return cls(value)
        except ValueError:
            raise BackendError(f"field {field!r}: {value!r} is not a backend; choose one of {', '.join(CHOICES)}"
                               ) from None

    @classmethod
    def llm(cls, value: object, field: str = "backend") -> Backend:
        """``value`` as an LLM backend (anthropic or replay); ``BackendError`` otherwise."""
        backend = cls.parse(value, field)
        if not backend.is_llm:
            raise BackendError(f"field {field!r}: {value!r} is not an LLM backend; choose one of "
                               f"{', '.join(LLM_BACKENDS)} (the offline stand-ins are used with backend 'reference')")
        return backend


CHOICES: tuple[str, ...] = tuple(b.value for b in Backend)
LLM_BACKENDS: tuple[str, ...] = tuple(b.value for b in Backend if b.is_llm)


def caption_text(name: str, extra: str = "") -> str:
    """The words under a figure that name the backend behind it: ``"Backend: <name>"``, then
    ``extra`` after a full stop."""
    return f"Backend: {name}" + (f". {extra}" if extra else "")
