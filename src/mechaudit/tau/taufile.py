"""The tau file (fitted tau per role plus the configuration it is valid for) and tau resolution.

File keys (as in the original ``judge_tau.json``): ``tau_methodology``, ``tau_novelty``,
``tau_storyteller``, ``rubric_version``, ``card_version``, ``judge_model``, ``nodes_paper_hash``
(sha256 of the paper file), ``created_at`` (ISO 8601, UTC), ``pairs_used``.

The loader refuses a file fitted for another rubric, card format or judge model. A role's tau comes
from a :class:`TauConfig`: the tau file, then a value per role, then one default. Library code never
reads the environment: an application builds the configuration with ``TauConfig.from_env(os.environ)``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mechaudit.tau.cards import CARD_VERSION
from mechaudit.tau.inference import DEFAULT_TAU
from mechaudit.tau.rubric import ROLES, RUBRIC_VERSION

PATH_ENV = "MECHAUDIT_JUDGE_TAU_PATH"
DEFAULT_ENV = "MECHAUDIT_JUDGE_TAU_DEFAULT"


class TauFileMismatchError(ValueError):
    """The tau file was fitted for another rubric, card format or judge model."""


def tau_key(role: str) -> str:
    """File key of a role's tau, e.g. ``tau_methodology``."""
    return f"tau_{role.lower()}"


def role_env(role: str) -> str:
    """Environment variable of a role's tau, e.g. ``MECHAUDIT_TAU_METHODOLOGY``."""
    return f"MECHAUDIT_TAU_{role.upper()}"


def file_sha256(path: str | os.PathLike[str]) -> str:
    """sha256 hex digest of a file's bytes (the ``nodes_paper_hash``)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def write_tau_file(
    path: str | os.PathLike[str],
    taus: Mapping[str, float],
    judge_model: str,
    pairs_used: int | Mapping[str, int],
    nodes_paper_hash: str | None = None,
    rubric_version: str = RUBRIC_VERSION,
    card_version: str = CARD_VERSION,
    created_at: str | None = None,
) -> dict[str, Any]:
    """Write the tau file (JSON) and return its content. ``taus`` maps role -> tau > 0."""
    content: dict[str, Any] = {}
    for role, tau in taus.items():
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; expected one of {ROLES}")
        content[tau_key(role)] = _positive(tau, f"tau for {role}")
    content |= {
        "rubric_version": rubric_version,
        "card_version": card_version,
        "judge_model": judge_model,
        "nodes_paper_hash": nodes_paper_hash,
        "created_at": created_at or datetime.now(UTC).isoformat(timespec="seconds"),
        "pairs_used": dict(pairs_used) if isinstance(pairs_used, Mapping) else int(pairs_used),
    }
    Path(path).write_text(json.dumps(content, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return content


def load_tau_file(
    path: str | os.PathLike[str],
    judge_model: str,
    rubric_version: str = RUBRIC_VERSION,
    card_version: str = CARD_VERSION,
    nodes_paper_hash: str | None = None,
) -> dict[str, float]:
    """Role -> tau from a tau file; :class:`TauFileMismatchError` naming the field when the file's
    rubric_version, card_version, judge_model (or a given nodes_paper_hash) differ."""
    path = Path(path)
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(content, dict):
        raise ValueError(f"{path}: expected a JSON object")
    running = {"rubric_version": rubric_version, "card_version": card_version, "judge_model": judge_model}
    if nodes_paper_hash is not None:
        running["nodes_paper_hash"] = nodes_paper_hash
    for name, value in running.items():
        if content.get(name) != value:
            raise TauFileMismatchError(
                f"{path}: field {name!r} is {content.get(name)!r} in the tau file but {value!r} in the "
                f"running configuration; refit tau (mechaudit fit-tau) for this configuration"
            )
    taus = {}
    for role in ROLES:
        value = content.get(tau_key(role))
        if value is not None:
            taus[role] = _positive(value, f"{path}: field {tau_key(role)!r}")
    return taus


def _positive(value: Any, name: str) -> float:
    """``value`` as a float > 0, else ``ValueError`` naming ``name``."""
    number = float(value)
    if not number > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return number


@dataclass(frozen=True)
class TauConfig:
    """Where each role's tau comes from, highest priority first: ``path`` (a tau file,
    :func:`load_tau_file`), ``taus`` (role -> tau) and ``default``; ``sources``: role -> label of a
    ``taus`` entry (default ``"given"``)."""

    path: str | os.PathLike[str] | None = None
    taus: Mapping[str, float] = field(default_factory=dict)
    default: float = DEFAULT_TAU
    sources: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for role, tau in self.taus.items():
            _positive(tau, f"tau for {role}")
        _positive(self.default, "default tau")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> TauConfig:
        """The configuration from ``MECHAUDIT_JUDGE_TAU_PATH``, ``MECHAUDIT_TAU_<ROLE>`` and
        ``MECHAUDIT_JUDGE_TAU_DEFAULT`` in ``env``."""
        taus, sources = {}, {}
        for role in ROLES:
            if env.get(role_env(role)):
                taus[role] = _positive(env[role_env(role)], f"environment variable {role_env(role)}")
                sources[role] = role_env(role)
        default = env.get(DEFAULT_ENV)
        return cls(path=env.get(PATH_ENV) or None, taus=taus, sources=sources,
                   default=_positive(default, f"environment variable {DEFAULT_ENV}") if default else DEFAULT_TAU)

    def resolve(self, roles: Sequence[str], judge_model: str, rubric_version: str = RUBRIC_VERSION,
                card_version: str = CARD_VERSION) -> dict[str, tuple[float, str]]:
        """Role -> ``(tau, source)``; ``source`` is ``"file:<name>"``, the ``taus`` entry's label or
        ``"default"``. Raises :class:`TauFileMismatchError` for a tau file of another configuration."""
        from_file = load_tau_file(self.path, judge_model, rubric_version, card_version) if self.path else {}
        resolved = {}
        for role in roles:
            if role in from_file:
                resolved[role] = (from_file[role], f"file:{Path(self.path).name}")
            elif role in self.taus:
                resolved[role] = (float(self.taus[role]), self.sources.get(role, "given"))
            else:
                resolved[role] = (float(self.default), "default")
        return resolved
