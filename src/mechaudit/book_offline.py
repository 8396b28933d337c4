"""Sphinx extension: a rendered book that needs no other host.

* MathJax: the MathJax 3 bundle (``tex-mml-chtml.js`` and its CHTML web fonts) is copied from the
  ``django-static-mathjax`` wheel into ``_static/mathjax/`` of the HTML output, and
  ``mathjax_path`` points there instead of a CDN.
* Thebe: Jupyter Book 1.x always loads sphinx-thebe, which declares its CDN address twice per page
  (a console error) even with live code switched off; the book has no live code, so its scripts
  and stylesheet are dropped from every page.

Enabled from ``_config.yml`` (``sphinx.extra_extensions``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

BUNDLE = "tex-mml-chtml.js"
FONTS = Path("output") / "chtml" / "fonts" / "woff-v2"


def mathjax_es5_dir() -> Path:
    """Folder of the packaged MathJax 3 ``es5`` build."""
    import mathjax

    return Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"


def _set_path(app, config) -> None:
    config.mathjax_path = f"mathjax/{BUNDLE}"


def _copy_bundle(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    src = mathjax_es5_dir()
    dest = Path(app.outdir) / "_static" / "mathjax"
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src / BUNDLE, dest / BUNDLE)
    shutil.copytree(src / FONTS, dest / FONTS, dirs_exist_ok=True)


def _is_thebe(asset) -> bool:
    name = str(getattr(asset, "filename", "") or "")
    body = str(getattr(asset, "attributes", {}).get("body", "") or "")
    return "thebe" in name.lower() or "THEBE" in body


def _drop_thebe(app, pagename, templatename, context, doctree) -> None:
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if not _is_thebe(asset)]


def setup(app):
    app.connect("config-inited", _set_path)
    app.connect("html-page-context", _drop_thebe)
    app.connect("build-finished", _copy_bundle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
