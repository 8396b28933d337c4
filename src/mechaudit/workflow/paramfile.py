"""One section of a YAML parameter file (``params/*.yaml``), read and validated into a pydantic model.

The file is read with the benchmark loaders' line-aware YAML reader and validated with the same
``validate_record``, so a bad parameter fails like bad data: one ``DataError`` naming the file, the
line of the section and the dotted field, e.g.
``params/simulator.yaml:3: field 'simulator.p_find': Input should be less than or equal to 1``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from mechaudit.schema import DataError, read_yaml, strip_lines, validate_record

M = TypeVar("M", bound=BaseModel)


def load_section(model: type[M], path: str | Path, key: str, expected: str) -> M:
    """Validate the mapping under ``key`` of the YAML file ``path`` as ``model``.

    ``expected`` describes the section for the error raised when the file has no such mapping.
    """
    path = Path(path)
    doc = read_yaml(path)
    if not isinstance(doc, dict) or not isinstance(doc.get(key), dict):
        raise DataError(path, None, key, f"expected {expected}")
    section = doc[key]
    return validate_record(model, strip_lines(section), path, section.get("__line__"), prefix=key + ".")
