"""One error style for every expected failure: ``FILE:LINE: field 'x': what is wrong``.

``MechauditError`` (a ``ValueError``) carries where the problem is (``file``, ``line``, ``field``;
each optional) and what is wrong. The command line turns it, and the other expected failures, into
one stderr line ``mechaudit: error: <message>`` and exit code 1 (``--debug``: the traceback).
``warn`` prints the one-line warning for deliberate but unusual choices.
"""

from __future__ import annotations

import math
import numbers
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

PREFIX = "mechaudit"


def location(file: str | Path | None = None, line: int | None = None, field: str | None = None) -> str:
    """``"FILE:LINE: field 'x': "`` with the parts that are known (empty string if none)."""
    parts = []
    if file is not None:
        parts.append(f"{file}:{line}" if line is not None else str(file))
    elif line is not None:
        parts.append(f"line {line}")
    if field is not None:
        parts.append(f"field '{field}'")
    return "".join(f"{p}: " for p in parts)


class MechauditError(ValueError):
    """An expected failure (bad file, bad value, bad path) with its location.

    ``str(err)`` is ``FILE:LINE: field 'x': message`` (parts that are None are left out).
    """

    def __init__(self, message: str, *, file: str | Path | None = None, line: int | None = None,
                 field: str | None = None):
        self.file = None if file is None else str(file)
        self.line, self.field, self.message = line, field, message
        super().__init__(location(file, line, field) + message)


def check_range(value: Any, name: str, low: float | None = None, high: float | None = None, *,
                integer: bool = False, where: str | Path | None = None, line: int | None = None) -> None:
    """Raise ``MechauditError`` unless ``value`` is a number (an int with ``integer``) in
    ``[low, high]`` (either bound may be None); booleans are not numbers here."""
    kind = numbers.Integral if integer else numbers.Real
    ok = isinstance(value, kind) and not isinstance(value, bool) and not math.isnan(value)
    if not ok or (low is not None and value < low) or (high is not None and value > high):
        lo = "-inf" if low is None else f"{low:g}"
        hi = "inf" if high is None else f"{high:g}"
        what = "an integer" if integer else "a number"
        bounds = f" in [{lo}, {hi}]" if (low is not None or high is not None) else ""
        raise MechauditError(f"must be {what}{bounds}, got {value!r}", file=where, line=line, field=name)


def describe(err: BaseException) -> str:
    """The one-line message for an exception: ``FILE:LINE: field 'x': ...`` for a
    ``MechauditError``, ``FILE: reason`` for an OS error with a file name, the message of any other
    ``ValueError``, ``Type: message`` for the rest (an unexpected one with a ``--debug`` hint).
    A message of several lines is joined into one."""
    if isinstance(err, MechauditError):
        text = str(err)
    elif isinstance(err, UnicodeDecodeError):
        text = f"not UTF-8 text ({err.reason} at byte {err.start})"
    elif isinstance(err, OSError) and err.filename is not None:
        text = f"{err.filename}: {err.strerror or err}"
    elif isinstance(err, ValueError):
        text = str(err)  # a bad value: the message says which
    elif isinstance(err, OSError) or type(err).__module__.startswith(f"{PREFIX}."):
        text = f"{type(err).__name__}: {err}"  # the project's own failures (a cell raised, a budget)
    else:
        text = f"{type(err).__name__}: {err} (run with --debug for the traceback)"
    return " ".join(text.split()) if "\n" in text else text


def error_line(err: BaseException) -> str:
    """``mechaudit: error: <describe(err)>``."""
    return f"{PREFIX}: error: {describe(err)}"


def warn(message: str, *, file: str | Path | None = None, line: int | None = None,
         field: str | None = None, stream=None) -> None:
    """Print ``mechaudit: warning: FILE:LINE: field 'x': message`` on one line of stderr."""
    print(f"{PREFIX}: warning: {location(file, line, field)}{message}",
          file=stream if stream is not None else sys.stderr, flush=True)


_SHOWN: set[str] = set()


def _one_line_warnings(previous: Callable[..., None]) -> Callable[..., None]:
    """A ``warnings.showwarning`` that prints the project's own warnings as one line
    ``mechaudit: warning: ...``, each text once per process, and hands other warnings to ``previous``."""

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if not category.__module__.startswith(f"{PREFIX}."):
            previous(message, category, filename, lineno, file, line)
            return
        text = " ".join(str(message).split())
        if text not in _SHOWN:
            _SHOWN.add(text)
            print(f"{PREFIX}: warning: {text}", file=file if file is not None else sys.stderr, flush=True)

    show.mechaudit_style = True
    return show


def use_warning_style() -> None:
    """Show the warnings of mechaudit's own classes (a torn cache line, a vanished batch) once each,
    in the one-line ``mechaudit: warning:`` style, however many times and from wherever they are
    raised. The command line calls it, and so does every chapter's set-up (in its kernel)."""
    if not getattr(warnings.showwarning, "mechaudit_style", False):
        warnings.showwarning = _one_line_warnings(warnings.showwarning)


__all__ = ["MechauditError", "check_range", "describe", "error_line", "location", "warn", "use_warning_style"]
