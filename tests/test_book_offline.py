"""The book's Sphinx extension: author-year bibliography labels and the theme mode default."""

from __future__ import annotations

from types import SimpleNamespace

from pybtex.database import parse_string
from pybtex.plugin import find_plugin

from mechaudit.sphinxext import offline

BIB = r"""
@misc{one, author = {Good, Phillip}, title = {B}, year = {2005}}
@misc{two, author = {Reimers, Nils and Gurevych, Iryna}, title = {S}, year = {2019}}
@misc{many, author = {Byun, Ji Young and Hu, Anthony and Rogers, Jesse}, title = {A}, year = {2026}}
@misc{group, author = {{nteract contributors}}, title = {P}, year = {2017}}
@misc{twin1, author = {Byun, J. and Hu, A. and Wang, R.}, title = {Z second}, year = {2026}}
@misc{accent, author = {Ga{\"e}l, Var}, title = {V}, year = {2011}}
"""


def _labels():
    offline.setup(SimpleNamespace(connect=lambda *a: None))
    style = find_plugin("pybtex.style.formatting", "authoryear")()
    entries = parse_string(BIB, "bibtex").entries.values()
    return [(e.key, e.label) for e in style.format_entries(style.sort(entries))]


def test_labels_are_author_year_sorted_and_disambiguated():
    assert _labels() == [("many", "Byun et al., 2026a"), ("twin1", "Byun et al., 2026b"),
                         ("accent", "Gaël, 2011"), ("one", "Good, 2005"),
                         ("group", "nteract contributors, 2017"),
                         ("two", "Reimers and Gurevych, 2019")]


def test_theme_mode_defaults_to_light_but_keeps_a_chosen_mode():
    config = SimpleNamespace(html_context={})
    offline._configure(None, config)
    assert config.html_context == {"default_mode": "light"}
    config = SimpleNamespace(html_context={"default_mode": "dark", "x": 1})
    offline._configure(None, config)
    assert config.html_context == {"default_mode": "dark", "x": 1}
