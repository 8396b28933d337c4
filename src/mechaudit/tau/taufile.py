"""The tau file (fitted tau per role plus the configuration it is valid for) and tau resolution.

File keys (as in the original ``judge_tau.json``): ``tau_methodology``, ``tau_novelty``,
``tau_storyteller``, ``rubric_version``, ``card_version``, ``judge_model``, ``nodes_paper_hash``
(sha256 of the paper file), ``created_at`` (ISO 8601, UTC), ``pairs_used``.

A tau is only valid for the rubric, card format and judge model it was fitted with; the loader
refuses a file whose values differ from the running configuration. Resolution priority per role:
the tau file (argument or ``MECHAUDIT_JUDGE_TAU_PATH``), then ``MECHAUDIT_TAU_<ROLE>``, then
``MECHAUDIT_JUDGE_TAU_DEFAULT``, then 1.0 (the original used the same order with ``I2P_`` names).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mechaudit.tau.cards import CARD_VERSION
from mechaudit.tau.inference import DEFAULT_TAU
from mechaudit.tau.rubric import ROLES, RUBRIC_VERSION

PATH_ENV = "MECHAUDIT_JUDGE_TAU_PATH"
DEFAULT_ENV = "MECHAUDIT_JUDGE_TAU_DEFAULT"
CHECKED_FIELDS = ("rubric_version", "card_version", "judge_model")


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
        if not float(tau) > 0:
            raise ValueError(f"tau for {role} must be > 0, got {tau}")
        content[tau_key(role)] = float(tau)
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
    """Role -> tau from a tau file fitted for the running configuration.

    Raises :class:`TauFileMismatchError` naming the field, the file's value and the running value
    when rubric_version, card_version or judge_model differ (and nodes_paper_hash, when given).
    """
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
            if not float(value) > 0:
                raise ValueError(f"{path}: field {tau_key(role)!r} must be > 0, got {value!r}")
            taus[role] = float(value)
    return taus


def resolve_tau(
    role: str,
    judge_model: str,
    path: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    rubric_version: str = RUBRIC_VERSION,
    card_version: str = CARD_VERSION,
) -> tuple[float, str]:
    """``(tau, source)`` for ``role``: file -> role env var -> default env var -> 1.0.

    ``source`` is ``"file:<path>"``, the environment variable's name, or ``"default"``.
    """
    env = os.environ if env is None else env
    path = path or env.get(PATH_ENV)
    if path:
        taus = load_tau_file(path, judge_model, rubric_version, card_version)
        if role in taus:
            return taus[role], f"file:{Path(path).name}"
    for name in (role_env(role), DEFAULT_ENV):
        if env.get(name):
            value = float(env[name])
            if not value > 0:
                raise ValueError(f"environment variable {name} must be > 0, got {env[name]!r}")
            return value, name
    return DEFAULT_TAU, "default"
