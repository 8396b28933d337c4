"""A stand-in for ``workflow.committed.cached`` in the tests of the chapters' committed steps: it records
every call and never writes to ``data/computed/``.

``CommittedSpy()`` (install with ``monkeypatch.setattr(committed, "cached", spy)``) returns the committed
table and fails when the settings a step passes are not exactly the recorded ones; ``compute=True`` runs
the step's own computation instead (with the expensive calls replaced by the test)."""

from __future__ import annotations

from typing import Any

from mechaudit.workflow import committed

_UNSET = object()


class CommittedSpy:
    """Calls of ``committed.cached``: name -> {"settings", "write", "force"} (``_UNSET``: not passed)."""

    def __init__(self, compute: bool = False) -> None:
        self.compute = compute
        self.calls: dict[str, dict[str, Any]] = {}

    def __call__(self, name, settings, compute, *, write=_UNSET, force=_UNSET, **kwargs):
        assert not kwargs, kwargs
        self.calls[name] = {"settings": settings, "write": write, "force": force}
        if self.compute:
            return compute(), "computed now"
        found = committed.load(name, settings)
        assert found is not None, f"{name}: the settings differ from the committed ones"
        return found, "committed"

    def flags(self) -> set[tuple[Any, Any]]:
        """The distinct (write, force) pairs of the calls."""
        return {(c["write"], c["force"]) for c in self.calls.values()}
