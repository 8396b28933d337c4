"""One section of a YAML parameter file (``params/*.yaml``), read and validated into a pydantic model.

Errors name the file and the dotted field: ``params/simulator.yaml: field 'simulator.p_find': ...``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


def read_section(path: str | Path, key: str, expected: str) -> dict[str, Any]:
    """The mapping under ``key`` in the YAML file ``path``; ``ValueError`` saying it should be
    ``expected`` when the file has no such mapping."""
    with open(path, encoding="utf-8") as fh:
        doc = yaml.safe_load(fh)
    if not isinstance(doc, dict) or not isinstance(doc.get(key), dict):
        raise ValueError(f"{path}: field '{key}': expected {expected}")
    return dict(doc[key])


def validate_section(model: type[M], raw: dict[str, Any], path: str | Path, key: str) -> M:
    """``model.model_validate(raw)``; the first validation error becomes a ``ValueError`` naming
    ``path`` and the field as ``key.field``."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise ValueError(f"{path}: field '{key + '.' + field if field else key}': {err['msg']}") from exc
