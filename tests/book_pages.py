"""The book's pages as the table of contents lists them (shared by the book and browser tests)."""

from __future__ import annotations

import yaml

from mechaudit.paths import REPO_ROOT


def toc_files() -> list[str]:
    """Every ``file`` entry of ``_toc.yml``, the root first, in reading order (paths without suffix)."""
    tree = yaml.safe_load((REPO_ROOT / "_toc.yml").read_text())
    found = [tree["root"]]

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("file"), str):
                found.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(tree.get("parts", tree.get("chapters", [])))
    return found
