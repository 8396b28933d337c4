"""The book builds with warnings as errors and has one page per TOC entry; the long chapters' main
pages stay short enough to read in one sitting (their details are in appendix pages)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

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


#: chapters whose calibration details and secondary analyses live in an appendix page of the chapter
#: (``book/chNN_appendix.md``); their main page holds at most ``MAX_MAIN_WORDS`` words
LONG_CHAPTERS = ("notebooks/02_critique_depth", "notebooks/08_tau_calibration")
MAX_MAIN_WORDS = 4000


class _ArticleText(HTMLParser):
    """The text inside a built page's ``<article>`` element: prose, captions, tables and code cells."""

    def __init__(self) -> None:
        super().__init__()
        self.depth, self.parts = 0, []

    def handle_starttag(self, tag, attrs) -> None:
        if tag == "article":
            self.depth += 1

    def handle_endtag(self, tag) -> None:
        if tag == "article" and self.depth:
            self.depth -= 1

    def handle_data(self, data) -> None:
        if self.depth:
            self.parts.append(data)


def article_words(html: str) -> int:
    """Number of whitespace-separated words in the page's article text."""
    parser = _ArticleText()
    parser.feed(html)
    return len(" ".join(parser.parts).split())


@pytest.mark.book
@pytest.mark.parametrize("entry", LONG_CHAPTERS)
def test_long_chapter_main_page_is_short(built_book, entry):
    words = article_words((built_book / f"{entry}.html").read_text(encoding="utf-8"))
    assert words <= MAX_MAIN_WORDS, f"{entry}: {words} words on the main page, at most {MAX_MAIN_WORDS}"


def test_the_word_count_reads_the_article_only_and_can_fail(tmp_path):
    page = "<html><head><title>t w o</title></head><body><nav>a b c</nav><article><p>one two</p>" \
           "<table><tr><td>three</td></tr></table><pre>four five</pre></article><footer>x y</footer></body></html>"
    assert article_words(page) == 5
    entry = LONG_CHAPTERS[0]
    (tmp_path / entry).parent.mkdir(parents=True)
    (tmp_path / f"{entry}.html").write_text("<article>" + "word " * (MAX_MAIN_WORDS + 1) + "</article>")
    with pytest.raises(AssertionError, match=f"{MAX_MAIN_WORDS + 1} words"):
        test_long_chapter_main_page_is_short(tmp_path, entry)
