"""Where progress goes: the terminal that started a run, never a notebook's output.

In a Jupyter kernel ``sys.stderr`` writes into the notebook's output, but its ``fileno()`` is the
kernel process's original stderr (the terminal that started it): :func:`terminal_copy` writes there.
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
