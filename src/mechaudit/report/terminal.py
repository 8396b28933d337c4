"""Where progress goes: the terminal that started a run, never a notebook's output.

In a Jupyter kernel ``sys.stderr`` is a stream whose writes become the notebook's output (and would
change it at every run); its ``fileno()`` is a copy of the kernel process's original stderr, the
terminal that started ``mechaudit execute`` or Jupyter. :func:`terminal_copy` opens a stream on a
duplicate of it, so a progress bar shows there and the notebook stays as it was.
"""

from __future__ import annotations

import io
import os
import sys
from typing import IO


def in_kernel() -> bool:
    """True when ``sys.stderr`` is a Jupyter kernel's output stream."""
    return type(sys.stderr).__module__.startswith("ipykernel")


def terminal_copy() -> IO[str]:
    """A new line-buffered stream to the kernel process's original stderr (``os.devnull`` if it has
    none); the caller closes it. Outside a kernel, use ``sys.stderr`` instead."""
    try:
        return os.fdopen(os.dup(sys.stderr.fileno()), "w", encoding="utf-8", buffering=1)
    except (OSError, io.UnsupportedOperation, ValueError):
        return open(os.devnull, "w", encoding="utf-8")
