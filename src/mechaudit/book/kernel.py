"""The Jupyter kernel a chapter runs in: jupyter_client's ``AsyncKernelManager`` (nbclient's
default) with one more setting, ``extra_env``.

The kernel process starts with this process's environment plus ``extra_env``, handed to it as its
``env`` (papermill has no argument for a kernel's environment, but passes ``kernel_manager_class``
and ``config`` on to nbclient), so ``os.environ`` is never written. Imported only when a chapter is
executed (it loads jupyter_client).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from jupyter_client import AsyncKernelManager
from traitlets import Dict
from traitlets.config import Config


class EnvKernelManager(AsyncKernelManager):
    """``AsyncKernelManager`` whose kernel sees ``os.environ`` plus ``extra_env``."""

    extra_env = Dict({}, config=True, help="variables added to the kernel's environment")

    async def start_kernel(self, **kw: Any) -> None:
        kw["env"] = {**kw.get("env", os.environ), **self.extra_env}
        await super().start_kernel(**kw)


def kernel_config(folder: Path, env: dict[str, str]) -> Config:
    """The kernel manager's configuration: ``env`` added to the kernel's environment; IPC transport,
    its Unix sockets in ``folder`` (a temporary folder: never the chapter's folder, which may be
    read-only)."""
    manager: dict[str, Any] = {"extra_env": dict(env)}
    if os.name == "posix":
        manager.update(transport="ipc", ip=str(Path(folder) / "kernel"))
    return Config({"KernelManager": manager})
