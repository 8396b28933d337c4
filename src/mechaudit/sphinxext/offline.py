"""Sphinx extension: a rendered book that needs no other host.

* MathJax 3 (``tex-mml-chtml.js`` and its fonts) is copied from the ``django-static-mathjax`` wheel
  into ``_static/mathjax/``, and ``mathjax_path`` points there instead of a CDN.
* sphinx-thebe's scripts and stylesheet (loaded by Jupyter Book 1.x even without live code, with a
  console error) are dropped from every page.
* The theme mode defaults to ``light`` (unset, pydata-sphinx-theme logs an invalid mode per page).
* The pybtex style ``authoryear`` is ``alpha`` with labels "Byun et al., 2026", matching the
  author-year citations in the text.

Enabled from ``_config.yml`` (``sphinx.extra_extensions``).
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.alpha import Style as AlphaStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting import BaseSortingStyle

BUNDLE = "tex-mml-chtml.js"
FONTS = Path("output") / "chtml" / "fonts" / "woff-v2"


def mathjax_es5_dir() -> Path:
    """Folder of the packaged MathJax 3 ``es5`` build."""
    import mathjax  # the book extra (django-static-mathjax): only the offline book build needs it

    return Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"


def _configure(app, config) -> None:
    """MathJax from the copied bundle; the theme's mode light unless the book sets one."""
    config.mathjax_path = f"mathjax/{BUNDLE}"
    config.html_context = {"default_mode": "light", **(config.html_context or {})}


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


def author_year_label(persons: list, year: str) -> str:
    """``"Last, 2011"``, ``"Last and Other, 2019"`` or ``"Last et al., 2026"`` (LaTeX removed)."""
    last = [Text.from_latex(" ".join(p.last_names)).render_as("text") for p in persons]
    if not last:
        names = "Anonymous"
    elif len(last) == 1:
        names = last[0]
    elif len(last) == 2:
        names = f"{last[0]} and {last[1]}"
    else:
        names = f"{last[0]} et al."
    return f"{names}, {year}" if year else names


def _entry_label(entry) -> str:
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    return author_year_label(persons, entry.fields.get("year", ""))


class AuthorYearSortingStyle(BaseSortingStyle):
    """Sorted by label text (case-insensitive, so group authors such as "{nteract contributors}"
    sort by their name, not their brace), then title."""

    def sorting_key(self, entry):
        return _entry_label(entry).casefold(), entry.fields.get("title", "").casefold()


class AuthorYearLabelStyle(BaseLabelStyle):
    """Author-year labels; equal labels get ``a``, ``b``, ... appended in bibliography order."""

    def format_labels(self, sorted_entries):
        labels = [_entry_label(e) for e in sorted_entries]
        counts, seen = Counter(labels), Counter()
        for label in labels:
            if counts[label] > 1:
                seen[label] += 1
                yield f"{label}{chr(ord('a') + seen[label] - 1)}"
            else:
                yield label


class AuthorYearStyle(AlphaStyle):
    """pybtex's ``alpha`` entry format with author-year labels and sorting."""

    default_label_style = AuthorYearLabelStyle
    default_sorting_style = AuthorYearSortingStyle


def setup(app):
    register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle, force=True)
    app.connect("config-inited", _configure)
    app.connect("html-page-context", _drop_thebe)
    app.connect("build-finished", _copy_bundle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
