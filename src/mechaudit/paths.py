"""Where the book's files live: the repository root, its data and its parameter sets.

The package is installed editable from ``src/``, so the repository root is two levels above this
file. ``MECHAUDIT_DATA`` in the environment points the loaders at another data folder.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_DIR = Path(os.environ.get("MECHAUDIT_DATA", REPO_ROOT / "data"))
PARAMS_DIR = REPO_ROOT / "params"
NOTEBOOKS_DIR = REPO_ROOT / "notebooks"


def data_path(*parts: str) -> Path:
    """Path of a file under the data folder (``DATA_DIR``)."""
    return DATA_DIR.joinpath(*parts)
