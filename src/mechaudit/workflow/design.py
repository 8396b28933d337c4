"""The experimental design: instances x critique depths x repetitions (paper §4, App. A)."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from math import comb
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from mechaudit.paths import PARAMS_DIR
from mechaudit.schema import DataError, load_instances, read_yaml
from mechaudit.workflow.paramfile import load_section


class Design(BaseModel):
    """Which runs to make: every instance at every depth, ``runs_per_depth`` times (paper: 4 x 3 x 5)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    instances: tuple[str, ...] = Field(min_length=1)
    depths: tuple[int, ...] = Field(min_length=1)
    runs_per_depth: int = Field(ge=1)

    @field_validator("depths")
    @classmethod
    def _distinct_depths(cls, depths: tuple[int, ...]) -> tuple[int, ...]:
        if len(set(depths)) != len(depths) or any(k < 0 for k in depths):
            raise ValueError(f"depths must be distinct and >= 0, got {depths}")
        return tuple(sorted(depths))

    def cells(self) -> list[tuple[str, int, int]]:
        """``(instance, depth, repetition)`` of every run, instance-major."""
        return [(i, k, r) for i in self.instances for k in self.depths for r in range(self.runs_per_depth)]

    @property
    def n_runs(self) -> int:
        """Number of runs (60 for the paper's design)."""
        return len(self.instances) * len(self.depths) * self.runs_per_depth

    @property
    def n_run_pairs(self) -> int:
        """Unordered run pairs within an instance, same- and cross-depth (420 for the paper)."""
        return len(self.instances) * comb(len(self.depths) * self.runs_per_depth, 2)

    def comparisons(self) -> list[tuple[int, int]]:
        """Depth comparisons ``(a, b)`` with ``a < b``: (0, 1), (0, 5), (1, 5) for the paper."""
        return list(combinations(self.depths, 2))


class _DesignFile(Design):
    """A design as written in a parameter file: ``instances`` may be ``all`` (or left out)."""

    instances: tuple[str, ...] | Literal["all"] = "all"

    @field_validator("instances")
    @classmethod
    def _some_instances(cls, instances: tuple[str, ...] | str) -> tuple[str, ...] | str:
        if not instances:
            raise ValueError("instances is empty; list instance ids or write 'all'")
        return instances


def load_design(path: str | Path | None = None, key: str = "design",
                instances: Sequence[str] | None = None) -> Design:
    """Read a design (default ``params/paper.yaml``, section ``design``); ``instances: all`` (or none)
    means every benchmark instance (``instances``, default the committed ones)."""
    path = Path(path) if path is not None else PARAMS_DIR / "paper.yaml"
    if instances is None:
        instances = [i.id for i in load_instances()]
    design = load_section(_DesignFile, path, key, "a mapping with instances, depths, runs_per_depth")
    chosen = tuple(instances) if design.instances == "all" else design.instances
    unknown = [i for i in chosen if i not in set(instances)]
    if unknown:
        raise DataError(path, read_yaml(path)[key].get("__line__"), f"{key}.instances",
                        f"unknown instance {unknown[0]!r}; the benchmark's instances are {', '.join(instances)}")
    return Design(**{**design.model_dump(), "instances": chosen})
