"""Build hook: ship the project files inside the wheel (everything else is in pyproject.toml).

A normal (non-editable) ``pip install .`` copies the open data, the parameter sets, the chapter
sources and the table of contents into ``mechaudit/_project/``, where ``mechaudit.paths`` finds them
with ``importlib.resources``; an editable install reads them from the checkout instead.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
#: (glob under the repository root) -> copied to mechaudit/_project/<same relative path>
SHIPPED = ("_toc.yml", "params/*.yaml", "notebooks/*.py", "data/**/*")
#: never shipped: derived caches (rebuilt on demand), byte code
EXCLUDED_PARTS = {"embedding_cache", "__pycache__", ".ipynb_checkpoints"}
EXCLUDED_PREFIXES = ("cache-index.sqlite",)


def shipped_files(root: Path = HERE) -> list[Path]:
    """The project files that go into the wheel, relative to ``root``, sorted."""
    files = set()
    for pattern in SHIPPED:
        for path in root.glob(pattern):
            rel = path.relative_to(root)
            if path.is_file() and not EXCLUDED_PARTS & set(rel.parts) and not rel.name.startswith(EXCLUDED_PREFIXES):
                files.add(rel)
    return sorted(files)


class BuildWithProject(build_py):
    """``build_py`` that also copies the project files into ``mechaudit/_project``."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib) / "mechaudit" / "_project"
        for rel in shipped_files():
            dest = target / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(HERE / rel, dest)


setup(cmdclass={"build_py": BuildWithProject})
