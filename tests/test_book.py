"""The book builds with warnings as errors and has one page per TOC entry."""

from __future__ import annotations

import re

import pytest

from mechaudit.book.params import toc_files


@pytest.mark.book
def test_book_builds_one_page_per_toc_entry(built_book):
    assert (built_book / "index.html").exists()
    for entry in toc_files():
        page = built_book / f"{entry}.html"
        assert page.exists(), f"no page for TOC entry {entry}"
        html = page.read_text(encoding="utf-8")
        assert "<title>" in html
        assert "Traceback (most recent call last)" not in html, f"{entry} renders a traceback"


@pytest.mark.book
def test_book_makes_no_network_references(built_book):
    """No page loads a script or stylesheet from another host (the book works offline)."""
    for page in built_book.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        remote = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', html)
        assert not remote, f"{page.name} loads {remote[0]}"
