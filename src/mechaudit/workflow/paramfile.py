"""One section of a YAML parameter file (``params/*.yaml``), read and validated into a pydantic model.

Read and validated like the benchmark's data, so a bad parameter raises one ``DataError`` naming
file, line and dotted field (``params/simulator.yaml:3: field 'simulator.p_find': ...``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from mechaudit.schema import DataError, read_yaml, strip_lines, validate_record

M = TypeVar("M", bound=BaseModel)


def load_section(model: type[M], path: str | Path, key: str, expected: str) -> M:
    """The mapping under ``key`` of the YAML file ``path`` as ``model`` (``expected``: the section, for errors)."""
    path = Path(path)
    doc = read_yaml(path)
    if not isinstance(doc, dict) or not isinstance(doc.get(key), dict):
        raise DataError(path, None, key, f"expected {expected}")
    section = doc[key]
    return validate_record(model, strip_lines(section), path, section.get("__line__"), prefix=key + ".")
