"""Open every page of the built book in headless Debian Chromium through Playwright.

Every request that is not to loopback fails (``browser``). One pass over the pages (one browser, one page
reused) collects, at 1280 px: the status, title, broken images and every console error; tables,
figures and images wider than the text column; images without a figure caption; visible code
cells (not folded by ``hide-input``) longer than 25 lines or with a line wider than the column;
table headers and cells broken inside a word or number (each word's rendered line boxes are
counted); table headers with an ``_``; figure, table and exercise numbers not of the per-chapter
form ("Fig. 2.1"); a chapter whose answer box does not precede its learning objectives; the intro's
trust sentence outside the first 1280 x 800 screen; the element ids of the page; and the intro's
"results at a glance" table. At 390 px it lists the elements that stick out of the window (a table
that scrolls inside its own container does not). At both widths it measures the text of every figure
(``FIGURE_TEXT_JS``: each SVG's font sizes times the scale the page shows it at) and reads its words
for code names. Each check is its own test over that pass and
prints its offenders; ``test_the_layout_checks_can_fail`` shows each one fail on a broken page. The
page's width is measured at both widths (a page wider than the window scrolls sideways).

The teaching guide and the worksheet are printed too (``PRINTED``): Chromium's PDF of each on A4,
whose pages are counted (the worksheet fits two sheets), and the same page laid out for print at
the A4 text width (print media emulated), where no ``pre`` or ``code`` element may be wider than its
box (a line cut at the margin), the worksheet's questions are one list numbered from 1, and the
teacher page's answer key is printed open.

With ``MECHAUDIT_SCREENSHOTS=1`` (``make screenshots``) a full-page screenshot of each page at 1280 px
and 390 px (cut at 25,000 px, which only the API reference exceeds) is saved under
``_build/screenshots/`` (``<entry>-1280.png``, ``<entry>-390.png``) and its width checked too: for a
reviewer reading the pages, not for the suite (the captures take about half of the pass's time).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import os
import re
import shutil
import socket
import struct
import threading
from pathlib import Path
from urllib.parse import urldefrag

import pytest

from mechaudit.book.params import toc_files
from mechaudit.paths import REPO_ROOT
from mechaudit.plots.style import MIN_PHONE_TEXT_PX, MIN_TEXT_PX

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--no-first-run", "--disable-sync", "--disable-quic"]
WIDTHS = (1280, 390)
HEIGHT = 900
#: the smallest figure text (px, the font's em) at each of ``WIDTHS`` (``mechaudit.plots.style``)
MIN_FIGURE_TEXT_PX = {WIDTHS[0]: MIN_TEXT_PX, WIDTHS[1]: MIN_PHONE_TEXT_PX}
#: an identifier as code writes it: lower-case words joined by "_" ("paper_rates", "mechanism_key")
CODE_NAME = r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b"
#: the first screen of a laptop: the intro's trust sentence must be inside it
FIRST_SCREEN = (1280, 800)
MAX_VISIBLE_LINES = 25
MIN_GLANCE_ROWS = 6
SHOTS = REPO_ROOT / "_build" / "screenshots"
#: whether the pass saves screenshots (``make screenshots``)
TAKE_SHOTS = os.environ.get("MECHAUDIT_SCREENSHOTS") == "1"
#: Screenshots stop here: every chapter is shorter at 390 px; the API reference (~73,000 px at 1280 px)
#: would take about a minute to capture in full.
MAX_SHOT_HEIGHT = 25_000
#: printed pages (TOC entries) and what their printout must show
WORKSHEET, TEACHER = "book/worksheet", "book/teaching"
PRINTED = (WORKSHEET, TEACHER)
MAX_WORKSHEET_PAGES = 2
MIN_QUESTIONS = 4
#: the printout's margin on every side (as ``@page`` in _static/mechaudit.css)
PRINT_MARGIN_MM = 15
#: the width the printed text is laid out at: A4 (210 mm) less both margins, in CSS px (96 per inch)
PRINT_WIDTH = round((210 - 2 * PRINT_MARGIN_MM) / 25.4 * 96)
PNG_1PX = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360"
                        "000002000154a24f5d0000000049454e44ae426082")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian chromium is not installed (make test installs it as root)"
    ),
]


@contextlib.contextmanager
def serve(directory: Path):
    """Serve ``directory`` on 127.0.0.1 on a free port; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        """Chromium asks each site for ``/favicon.ico`` of its own accord: without one in the folder the
        answer is "no content", not a 404 that would read as a console error of the page."""
        if self.path == "/favicon.ico" and not Path(self.directory, "favicon.ico").exists():
            self.send_response(204)
            self.end_headers()
            return
        super().do_GET()


# Layout of one page, measured in the browser. The text column is the content box of the theme's
# <article class="bd-article"> (the page body on a page without it). An element counts when it is
# rendered and not inside a closed <details> (hide-input cells fold their source into one).
LAYOUT_JS = """(maxLines) => {
  const col = document.querySelector('article.bd-article') || document.body;
  const cs = getComputedStyle(col), box = col.getBoundingClientRect();
  const left = box.left + parseFloat(cs.paddingLeft), right = box.right - parseFloat(cs.paddingRight);
  const shown = el => el.checkVisibility() && !el.closest('details:not([open])');
  const where = el => {
    const sec = el.closest('section[id]');
    const what = el.tagName === 'IMG' ? el.getAttribute('src').split('/').pop().slice(0, 24)
      : (el.innerText || '').trim().split('\\n')[0].slice(0, 50);
    return `in #${sec ? sec.id : '?'} (${what})`;
  };
  const wide = [], uncaptioned = [], long = [], wideCode = [], broken = [], underscores = [], numbers = [];
  for (const el of col.querySelectorAll('table, figure, img')) {
    const b = el.getBoundingClientRect();
    if (shown(el) && (b.left < left - 1 || b.right > right + 1))
      wide.push(`${el.tagName.toLowerCase()} ${Math.round(b.width)} px, `
                + `column ${Math.round(right - left)} px, ${where(el)}`);
  }
  for (const img of col.querySelectorAll('img')) {
    const cap = img.closest('figure')?.querySelector('figcaption');
    if (shown(img) && !(cap && cap.innerText.trim())) uncaptioned.push(`image ${where(img)}`);
  }
  for (const cell of col.querySelectorAll('.cell_input')) {
    const n = (cell.querySelector('pre')?.innerText || '').replace(/\\n+$/, '').split('\\n').length;
    if (shown(cell) && n > maxLines) long.push(`code cell of ${n} lines ${where(cell)}`);
  }
  for (const cell of col.querySelectorAll('.cell_input')) {
    const pre = cell.querySelector('pre');
    if (shown(cell) && pre && pre.scrollWidth > pre.clientWidth + 1)
      wideCode.push(`code line ${pre.scrollWidth} px in a ${pre.clientWidth} px cell ${where(cell)}`);
  }
  // a word (split at spaces, and after the hyphen of a compound: template-|built, never inside a name
  // with a hyphen beside a capital or digit: TF-|IDF, K0-|r1, NF-|kappaB, 1.6e-|07) on more than one line
  const lineCount = (node, start, end) => {
    const range = document.createRange();
    range.setStart(node, start); range.setEnd(node, end);
    return new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top))).size;
  };
  for (const cell of col.querySelectorAll('table th, table td')) {
    if (!shown(cell)) continue;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/[^\\s]+/g)) {
        const name = /[A-Z0-9]-\\w|\\w-[A-Z0-9]/.test(m[0]);  // as mechaudit.sphinxext.table keeps whole
        for (const part of name ? [m[0]] : m[0].split(/(?<=\\w-)(?=\\w)/)) {
          const start = m.index + m[0].indexOf(part);
          if (part.length > 1 && lineCount(node, start, start + part.length) > 1)
            broken.push(`"${part}" in ${cell.tagName.toLowerCase()} ${where(cell)}`);
        }
      }
    }
  }
  for (const th of col.querySelectorAll('table thead th, table tbody th')) {
    if (shown(th) && th.innerText.includes('_')) underscores.push(`"${th.innerText.trim()}" ${where(th)}`);
  }
  // numbers of figures, tables and exercises, and references to them: "Fig. 2.1", never "Fig. 3"
  const numbered = /^(Fig\\.|Table|Exercise) \\d+\\.\\d+$/;
  for (const el of col.querySelectorAll('.caption-number, .std-numref, a.reference')) {
    const text = el.innerText.trim();
    if (/^(Fig\\.|Figure|Table|Exercise)\\s*\\d/.test(text) && !numbered.test(text))
      numbers.push(`"${text}" ${where(el)}`);
  }
  const prose = col.innerText;
  for (const m of prose.matchAll(/\\b(exercise Exercise|figure Fig\\.|table Table) \\d+(\\.\\d+)?/gi))
    numbers.push(`"${m[0]}" (doubled word)`);
  const answer = col.querySelector('div.admonition[id$="-answer"]');
  const objectives = Array.from(col.querySelectorAll('div.admonition'))
    .find(d => /^learning objectives/i.test((d.querySelector('.admonition-title')?.innerText || '').trim()));
  const follows = (a, b) => !!(a && b && (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING));
  const order = {answer: !!answer, objectives: !!objectives, answer_first: follows(answer, objectives)};
  const trustEl = document.querySelector('.trust-sentence');
  const trust = trustEl ? {top: trustEl.getBoundingClientRect().top + window.scrollY,
                           bottom: trustEl.getBoundingClientRect().bottom + window.scrollY,
                           text: trustEl.innerText.slice(0, 80)} : null;
  const head = Array.from(document.querySelectorAll('h1, h2, h3')).find(h => /at a glance/i.test(h.innerText));
  const table = head?.closest('section')?.querySelector('table');
  const rows = table ? Array.from(table.querySelectorAll('tbody tr')) : [];
  const glance = head ? {table: !!table, rows: rows.length,
    rows_without_link: rows.filter(r => !r.querySelector('a[href*="-answer"]')).map(r => r.innerText.slice(0, 40)),
    links: Array.from(table ? table.querySelectorAll('a[href]') : [], a => a.href)} : null;
  return {wide, uncaptioned, long, wideCode, broken, underscores, numbers, order, trust, glance,
          ids: Array.from(document.querySelectorAll('[id]'), e => e.id)};
}"""

# Elements sticking out of a narrow window (390 px): an element counts when its right edge passes the
# window and no ancestor scrolls sideways (a wide table in its scroll container is fine).
NARROW_JS = """() => {
  const width = document.documentElement.clientWidth, out = [];
  const scrolls = el => { for (let a = el.parentElement; a; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') return true; }
    return false; };
  for (const el of document.querySelectorAll('article.bd-article *')) {
    const b = el.getBoundingClientRect();
    if (b.width > 0 && b.right > width + 1 && el.checkVisibility() && !scrolls(el)
        && !(el.parentElement && el.parentElement.getBoundingClientRect().right > width + 1))
      out.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''} ends at ${Math.round(b.right)} px: `
               + (el.innerText || el.getAttribute('src') || '').trim().split('\\n')[0].slice(0, 50));
  }
  return {scroll_width: document.documentElement.scrollWidth, out};
}"""


# Text in the book's figures, measured: each figure image of the column is an SVG whose text
# matplotlib drew as glyph outlines, one group per text (<g id="text_N">, its words in a comment), each
# glyph a <use> scaled by the font size in points / 100; the file's viewBox is in points. A text shows at
# font size x (the image's rendered width / the viewBox width) px. A figure image that is not an SVG
# cannot be measured and is reported as such.
FIGURE_TEXT_JS = """async () => {
  const col = document.querySelector('article.bd-article') || document.body;
  const shown = el => el.checkVisibility() && !el.closest('details:not([open])');
  const out = [];
  for (const img of col.querySelectorAll('figure img')) {
    if (!shown(img)) continue;
    const src = img.getAttribute('src'), name = src.split('/').pop().slice(0, 24);
    const cap = (img.closest('figure').querySelector('.caption-number')?.innerText || '').trim();
    const fig = {figure: `${cap || '(no number)'} ${name}`, svg: src.endsWith('.svg'), texts: []};
    if (fig.svg) {
      const doc = new DOMParser().parseFromString(await (await fetch(img.src)).text(), 'image/svg+xml');
      const scale = img.getBoundingClientRect().width / doc.documentElement.viewBox.baseVal.width;
      for (const g of doc.querySelectorAll('g[id^="text_"]')) {
        const words = Array.from(g.childNodes).filter(n => n.nodeType === Node.COMMENT_NODE)
          .map(n => n.data.trim()).join(' ');
        // a glyph's size: the product of the scales from the text's group down to its <use> (mathtext
        // nests a smaller scale for a superscript)
        const size = el => { let f = 100;
          for (let e = el; e !== g.parentNode; e = e.parentNode) {
            const m = (e.getAttribute('transform') || '').match(/scale\\(([-\\d.e]+)/);
            if (m) f *= Math.abs(parseFloat(m[1]));
          }
          return f; };
        const pts = Array.from(g.querySelectorAll('use'), size);
        if (pts.length) fig.texts.push({words, px: Math.min(...pts) * scale});
      }
    }
    out.push(fig);
  }
  return out;
}"""


# Code cells whose source is folded (myst-nb's ``hide-input``: a "Show code cell source" toggle): a
# toggle that opens onto nothing (the cell shows no output either, so its toggle is all the reader
# sees), and a bare value (an ``execute_result`` shown as plain text, such as a glue call's return
# value) under a folded source, where the reader cannot tell what it is.
CELLS_JS = """() => {
  const col = document.querySelector('article.bd-article') || document.body;
  const first = el => (el.innerText || el.textContent || '').trim().split('\\n')[0].slice(0, 50);
  const emptyToggle = [], strayValue = [];
  for (const cell of col.querySelectorAll('div.cell.tag_hide-input')) {
    const out = cell.querySelector(':scope > .cell_output');
    const source = first(cell.querySelector('.cell_input') || cell);
    if (!out || !out.children.length) emptyToggle.push(`folded cell with no output: ${source}`);
    for (const value of cell.querySelectorAll('.cell_output .output.text_plain'))
      strayValue.push(`bare value "${first(value)}" under folded source: ${source}`);
  }
  return {emptyToggle, strayValue};
}"""


# Tables, read in the same pass (one evaluate, merged into the page's layout findings): a caption inside
# a container that scrolls sideways (it would scroll off-screen with a wide table); on a chapter page
# (path under /notebooks/) a table without a numbered caption ("Table 2.1" in a caption of its own or
# in the p.table-caption just above its scroll container); on a chapter page, a code name (snake_case,
# outside code and file names) in a header, row label or cell. The reference pages (parameters, data
# format, API) name the code's identifiers by design.
TABLES_JS = """() => {
  const col = document.querySelector('article.bd-article') || document.body;
  const shown = el => el.checkVisibility() && !el.closest('details:not([open])');
  const scrolls = el => { for (let a = el.parentElement; a && a !== col; a = a.parentElement) {
      const o = getComputedStyle(a).overflowX; if (o === 'auto' || o === 'scroll') return true; }
    return false; };
  const first = el => (el.innerText || '').trim().split('\\n')[0].slice(0, 50);
  const captionInScroll = [], unnumbered = [], codeNames = [];
  const chapter = location.pathname.includes('/notebooks/');
  const snake = /(?<![\\w.\\/-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\\w.\\/-])/;
  for (const table of col.querySelectorAll('table')) {
    if (!shown(table) || table.closest('.autosummary') || table.classList.contains('autosummary')) continue;
    const own = table.querySelector(':scope > caption');
    if (own && shown(own) && scrolls(own)) captionInScroll.push(`caption "${first(own)}"`);
    const box = table.parentElement?.classList.contains('pst-scrollable-table-container') ? table.parentElement : table;
    const above = box.previousElementSibling?.classList.contains('table-caption') ? box.previousElementSibling : null;
    const number = (own || above)?.querySelector('.caption-number')?.innerText.trim() || '';
    if (chapter && !/^Table \\d+\\.\\d+$/.test(number))
      unnumbered.push(`table "${first(table)}"${number ? ` numbered "${number}"` : ' without a numbered caption'}`);
    for (const cell of table.querySelectorAll('th, td')) {
      const copy = cell.cloneNode(true);
      copy.querySelectorAll('code, .pre').forEach(c => c.remove());
      const m = copy.textContent.match(snake);
      if (m && chapter && shown(cell))
        codeNames.push(`"${m[0]}" in ${cell.tagName.toLowerCase()} of table "${first(table)}"`);
    }
  }
  return {captionInScroll, unnumbered, codeNames};
}"""


# A page laid out for print (print media emulated at ``PRINT_WIDTH``): a ``pre`` or ``code`` element
# wider than its own box is a line cut at the margin of the paper; the ordered lists that are not
# nested in another list (the worksheet's questions); the answer key (the section under a heading
# "Answer key") with its list items that print and those that do not (in a closed <details>, a
# folded dropdown or hidden for print).
PRINT_JS = """() => {
  const col = document.querySelector('article.bd-article') || document.body;
  const shown = el => el.checkVisibility() && !el.closest('details:not([open])');
  const first = el => (el.innerText || el.textContent || '').trim().split('\\n')[0].slice(0, 60);
  const clipped = Array.from(col.querySelectorAll('pre, code'))
    .filter(el => shown(el) && el.scrollWidth > el.clientWidth + 1)
    .map(el => `${el.tagName.toLowerCase()} ${el.scrollWidth} px in ${el.clientWidth} px: ${first(el)}`);
  const lists = Array.from(col.querySelectorAll('ol')).filter(ol => !ol.parentElement.closest('li'))
    .map(ol => ({start: ol.start, items: ol.querySelectorAll(':scope > li').length}));
  const head = Array.from(col.querySelectorAll('h1, h2, h3')).find(h => /^answer key/i.test(h.innerText.trim()));
  const items = head ? Array.from(head.closest('section')?.querySelectorAll('li') || []) : [];
  const key = head ? {shown: shown(head), items: items.length,
                      hidden: items.filter(li => !shown(li)).map(first)} : null;
  return {clipped, lists, key};
}"""


def pdf_pages(pdf: bytes) -> int:
    """Pages of a PDF written by Chromium (Skia writes each page object uncompressed)."""
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf))


def printed(page) -> dict:
    """The current page printed: ``pages`` of its A4 PDF (margins ``PRINT_MARGIN_MM``) and, laid out for
    print at ``PRINT_WIDTH``, ``PRINT_JS``'s ``clipped``, ``lists`` and ``key``; screen media and the
    first width are restored afterwards."""
    margin = f"{PRINT_MARGIN_MM}mm"
    pdf = page.pdf(format="A4", margin={side: margin for side in ("top", "right", "bottom", "left")})
    page.set_viewport_size({"width": PRINT_WIDTH, "height": HEIGHT})
    page.emulate_media(media="print")
    found = page.evaluate(PRINT_JS)
    page.emulate_media(media="screen")
    page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})
    return {**found, "pages": pdf_pages(pdf)}


def watch(page) -> list[str]:
    """Attach console and page-error listeners once; returns the list they append to."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def audit_page(page, url: str, errors: list[str]) -> list[str]:
    """Problems with one page: status, title, broken images, console errors (``errors`` from :func:`watch`,
    emptied first)."""
    errors.clear()
    response = page.goto(url, wait_until="load")
    problems: list[str] = []
    if response is None or response.status != 200:
        problems.append(f"status {None if response is None else response.status}")
    if not page.title().strip():
        problems.append("empty title")
    broken = page.evaluate(
        "Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
    )
    problems += [f"broken image {src}" for src in broken]
    return problems


def layout(page) -> dict:
    """The page's layout findings (see ``LAYOUT_JS``) at the current viewport."""
    return page.evaluate(LAYOUT_JS, MAX_VISIBLE_LINES)


def narrow(page) -> dict:
    """What sticks out of a 390 px window (see ``NARROW_JS``); the viewport is restored afterwards."""
    page.set_viewport_size({"width": WIDTHS[1], "height": HEIGHT})
    found = page.evaluate(NARROW_JS)
    page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})
    return found


def figure_text(page) -> dict[int, list[dict]]:
    """The text of every figure of the page at each of ``WIDTHS`` (see ``FIGURE_TEXT_JS``): ``{width:
    [{"figure", "svg", "texts": [{"words", "px"}]}]}``; the viewport is left at the last width (the pass
    reads :func:`narrow` there next: each change of width lays the page out again)."""
    found = {}
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        found[width] = page.evaluate(FIGURE_TEXT_JS)
    return found


def screenshots(page, cdp, stem: str) -> list[Path]:
    """Full-page PNG screenshots at every width in ``WIDTHS``, cut at ``MAX_SHOT_HEIGHT`` px (only the API
    reference is taller); the viewport is left at the first width. Chromium's own capture (``cdp``, a
    CDP session of ``page``) with fast PNG encoding takes half the time of ``page.screenshot``."""
    paths = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": HEIGHT})
        size = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
        clip = {"x": 0, "y": 0, "width": size[0], "height": min(size[1], MAX_SHOT_HEIGHT), "scale": 1}
        shot = cdp.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                   "optimizeForSpeed": True, "clip": clip})
        paths.append(SHOTS / f"{stem}-{width}.png")
        paths[-1].write_bytes(base64.b64decode(shot["data"]))
    page.set_viewport_size({"width": WIDTHS[0], "height": HEIGHT})
    return paths


def unresolved_links(links: list[str], ids_by_page: dict[str, set[str]]) -> list[str]:
    """Links whose page was not visited or whose ``#fragment`` is no element id on that page."""
    bad = []
    for link in links:
        page, fragment = urldefrag(link)
        if not fragment or fragment not in ids_by_page.get(page, set()):
            bad.append(link)
    return bad


def png_width(path: Path) -> int:
    """Width in pixels from a PNG's IHDR chunk."""
    return struct.unpack(">I", path.read_bytes()[16:20])[0]


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium whose every request not to loopback fails: its proxy is a port bound here and
    never listened on, and loopback bypasses the proxy. (A Playwright route does the same with a round
    trip to Python per request and the HTTP cache off: this file took 29 s of CPU instead of 16.)"""
    from playwright.sync_api import sync_playwright

    with socket.socket() as closed, sync_playwright() as pw:
        closed.bind(("127.0.0.1", 0))
        proxy = f"--proxy-server=http://127.0.0.1:{closed.getsockname()[1]}"
        b = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=[*FLAGS, proxy])
        yield b
        b.close()


def _new_page(browser):
    context = browser.new_context(viewport={"width": WIDTHS[0], "height": HEIGHT})
    return context, context.new_page()


@pytest.fixture(scope="module")
def site(built_book, browser) -> dict:
    """One pass over every TOC page: ``{entry: {"url", "problems", "layout", "widths", "shots", "print"}}``
    (``widths``: the page's scroll width at each of ``WIDTHS``; ``shots``: empty unless ``TAKE_SHOTS``;
    ``print``: :func:`printed` for the pages in ``PRINTED``, else ``None``)."""
    if TAKE_SHOTS:
        shutil.rmtree(SHOTS, ignore_errors=True)
        SHOTS.mkdir(parents=True)
    pages = {}
    with serve(built_book) as base:
        context, page = _new_page(browser)
        errors, cdp = watch(page), context.new_cdp_session(page)
        for entry in toc_files():
            url = f"{base}/{entry}.html"
            problems = audit_page(page, url, errors)
            found = layout(page)
            found.update(page.evaluate(TABLES_JS))
            found.update(page.evaluate(CELLS_JS))
            wide = page.evaluate("document.documentElement.scrollWidth")
            found["figure_text"] = figure_text(page)
            found["narrow"] = narrow(page)
            shots = screenshots(page, cdp, entry.replace("/", "__")) if TAKE_SHOTS else []
            problems += [f"console error: {e}" for e in errors]
            pages[entry] = {"url": url, "problems": problems, "layout": found, "shots": shots,
                            "widths": [wide, found["narrow"]["scroll_width"]],
                            "print": printed(page) if entry in PRINTED else None}
        context.close()
    return pages


def _offenders(site: dict, key: str) -> str:
    """One line per offending element of every page (empty when none)."""
    return "".join(f"\n  {entry}: {item}" for entry, p in site.items() for item in p["layout"][key])


def test_every_toc_page_renders(site):
    """Status 200, a title, every image loads and not one console error (no message is filtered)."""
    bad = "".join(f"\n  {entry}: {problem}" for entry, p in site.items() for problem in p["problems"])
    assert not bad, f"pages with problems:{bad}"


#: one check per layout finding: its key in ``LAYOUT_JS``'s result and what an offender is. For "wide"
#: the element's own box counts, also inside a scrolling wrapper: a column scrolled out of view is a
#: hidden column.
LAYOUT_CHECKS = {
    "wide": f"wider than the text column at {WIDTHS[0]} px",
    "uncaptioned": "images without a figure caption",
    "long": f"visible code cells over {MAX_VISIBLE_LINES} lines",
    "broken": f"table headers or cells broken inside a word or number at {WIDTHS[0]} px",
    "underscores": "table headers or row labels with an underscore (a code name, not a label)",
    "numbers": "numbers not of the per-chapter form 'Fig. 2.1', or a doubled word",
    "wideCode": f"visible code cells with a line wider than the column at {WIDTHS[0]} px",
    "captionInScroll": "table captions inside a container that scrolls sideways",
    "unnumbered": "chapter tables without a numbered caption ('Table 2.1')",
    "codeNames": "code names (snake_case) in table headers, row labels or cells",
    "emptyToggle": "folded code cells (Show code cell source) with no output",
    "strayValue": "bare values (execute_result as plain text) shown under a folded code cell",
}


@pytest.mark.parametrize("key", list(LAYOUT_CHECKS))
def test_layout_check(site, key):
    bad = _offenders(site, key)
    assert not bad, f"{LAYOUT_CHECKS[key]}:{bad}"


def test_intro_results_table_links_resolve(site):
    intro = toc_files()[0]
    glance = site[intro]["layout"]["glance"]
    assert glance and glance["table"], f"{intro}: no table under a heading 'Results at a glance'"
    assert glance["rows"] >= MIN_GLANCE_ROWS, f"{intro}: {glance['rows']} result rows, need >= {MIN_GLANCE_ROWS}"
    assert not glance["rows_without_link"], f"{intro}: rows without a link to a chapter's answer box: " \
        f"{glance['rows_without_link']}"
    ids = {p["url"]: set(p["layout"]["ids"]) for p in site.values()}
    assert not unresolved_links(glance["links"], ids), \
        f"{intro}: links to no element id: {unresolved_links(glance['links'], ids)}"


def test_no_sideways_scroll_at_either_width(site):
    """No page is wider than the window at 1280 or 390 px (something overflowing at 390 px widens the
    page); with screenshots taken, each is the window's width too."""
    bad = {entry: p["widths"] for entry, p in site.items() if p["widths"] != list(WIDTHS)}
    assert not bad, f"page wider than the window (page widths, window {list(WIDTHS)}): {bad}"
    shots = {entry: [png_width(path) for path in p["shots"]] for entry, p in site.items() if p["shots"]}
    bad = {entry: w for entry, w in shots.items() if w != list(WIDTHS)}
    assert not bad, f"screenshot wider than the window (window {list(WIDTHS)}): {bad}"


def test_a_broken_image_is_caught(tmp_path, browser):
    """The audit must be able to fail: a page with a missing image, or one not on loopback (the
    browser sends nothing elsewhere), is reported."""
    (tmp_path / "ok.png").write_bytes(PNG_1PX)
    (tmp_path / "page.html").write_text(
        "<html><head><title>t</title></head><body><img src='ok.png'><img src='missing.png'>"
        "<img src='http://example.com/x.png'></body></html>"
    )
    with serve(tmp_path) as base:
        context, page = _new_page(browser)
        problems = audit_page(page, f"{base}/page.html", watch(page))
        context.close()
    assert any("broken image" in p and "missing.png" in p for p in problems), problems
    assert "broken image http://example.com/x.png" in problems, problems
    assert not any("ok.png" in p for p in problems), problems


BAD_PAGE = """<html><head><title>t</title></head><body><article class="bd-article" style="width: 688px">
<section id="s"><h2>Results at a glance</h2>
<div id="x-answer"></div><table><tbody><tr><td><a href="page.html#x-answer">fine</a></td></tr>
<tr><td><a href="page.html#nowhere-answer">x</a></td></tr><tr><td>no <a href="page.html#s">answer</a> link</td></tr>
</tbody></table>
<table style="width: 900px"><tr><td>too wide</td></tr></table>
<figure><img src="ok.png" width="10"><figcaption>A caption.</figcaption></figure><img src="ok.png" width="10">
<div class="cell_input"><pre>{long}</pre></div>
<details><summary>show</summary><div class="cell_input"><pre>{long}</pre></div></details>
</section></article><script>console.error("boom")</script></body></html>"""


def test_the_layout_checks_can_fail(tmp_path, browser):
    """A page with a wide table, an uncaptioned image, a long visible cell, a console error and a dead
    anchor is reported for each, and only for those (the folded long cell and the captioned image pass)."""
    (tmp_path / "ok.png").write_bytes(PNG_1PX)
    (tmp_path / "page.html").write_text(BAD_PAGE.replace("{long}", "\n".join(["x = 1"] * 30)))
    with serve(tmp_path) as base:
        context, page = _new_page(browser)
        errors = watch(page)
        audit_page(page, f"{base}/page.html", errors)
        found = layout(page)
        context.close()
    assert errors == ["boom"]
    assert len(found["wide"]) == 1 and "table 900 px, column 688 px" in found["wide"][0], found["wide"]
    assert len(found["uncaptioned"]) == 1, found["uncaptioned"]
    assert found["long"] == ["code cell of 30 lines in #s (x = 1)"], found["long"]
    glance = found["glance"]
    assert (glance["rows"], glance["rows_without_link"]) == (3, ["no answer link"])
    ids = {f"{base}/page.html": set(found["ids"])}
    assert unresolved_links(glance["links"], ids) == [f"{base}/page.html#nowhere-answer"]


BAD_TABLES_PAGE = """<html><head><title>t</title></head><body><article class="bd-article" style="width: 300px">
<section id="s">
<p class="table-caption"><span class="caption-number">Table 2.1 </span>Fine: above its container.</p>
<div class="pst-scrollable-table-container" style="overflow-x: auto"><table><thead><tr><th>Rule</th></tr></thead>
<tbody><tr><td>TF-IDF, see <code>mechanism_key</code> in simulator_null.yaml</td></tr></tbody></table></div>
<div class="pst-scrollable-table-container" style="overflow-x: auto"><table style="width: 900px">
<caption><span class="caption-number">Table 2.2 </span>Scrolls away.</caption><tr><td>wide</td></tr></table></div>
<table><thead><tr><th>densify_mode</th></tr></thead><tbody><tr><td>blind_card_v2_minimal</td></tr></tbody></table>
<table><caption><span class="caption-number">Table 3 </span>Book-wide number.</caption><tr><td>x</td></tr></table>
</section></article></body></html>"""


def on_planted_page(browser, folder: Path, html: str, read, path: str = "page.html"):
    """``read(page)`` on ``html`` written to ``folder / path``, served and opened as the pass opens a page."""
    (folder / path).parent.mkdir(parents=True, exist_ok=True)
    (folder / path).write_text(html)
    with serve(folder) as base:
        context, page = _new_page(browser)
        audit_page(page, f"{base}/{path}", watch(page))
        found = read(page)
        context.close()
    return found


def test_the_table_checks_can_fail(tmp_path, browser):
    """On a chapter page, a caption inside a scroll container, a table with no caption, one numbered
    "Table 3" and code names in a header and a cell are reported, and only those: the caption above
    its container, code in <code> and a file name pass."""
    found = on_planted_page(browser, tmp_path, BAD_TABLES_PAGE, lambda page: page.evaluate(TABLES_JS),
                            "notebooks/page.html")
    assert found["captionInScroll"] == ['caption "Table 2.2 Scrolls away."'], found["captionInScroll"]
    assert found["unnumbered"] == ['table "densify_mode" without a numbered caption',
                                   'table "Table 3 Book-wide number." numbered "Table 3"'], found["unnumbered"]
    assert found["codeNames"] == ['"densify_mode" in th of table "densify_mode"',
                                  '"blind_card_v2_minimal" in td of table "densify_mode"'], found["codeNames"]


BAD_CELLS_PAGE = """<!doctype html><html><head><title>t</title></head><body><article class="bd-article">
<div class="cell tag_hide-input"><details class="hide above-input"><summary>Show code cell source</summary>
<div class="cell_input"><pre>glue("k", 0.35)</pre></div></details>
<div class="cell_output"><div class="output text_plain"><pre>0.35</pre></div></div></div>
<div class="cell tag_hide-input"><details class="hide above-input"><summary>Show code cell source</summary>
<div class="cell_input"><pre>x = 1</pre></div></details></div>
<div class="cell tag_hide-input"><details class="hide above-input"><summary>Show code cell source</summary>
<div class="cell_input"><pre>print("fine")</pre></div></details>
<div class="cell_output"><div class="output stream"><pre>fine</pre></div></div></div>
<div class="cell"><div class="cell_input"><pre>sorted(names)</pre></div>
<div class="cell_output"><div class="output text_plain"><pre>['a', 'b']</pre></div></div></div>
</article></body></html>"""


def test_the_cell_checks_can_fail(tmp_path, browser):
    """A folded cell showing a bare value and a folded cell with no output are reported, and only those:
    a folded cell that prints and a visible cell that shows a value pass."""
    found = on_planted_page(browser, tmp_path, BAD_CELLS_PAGE, lambda page: page.evaluate(CELLS_JS))
    assert found["strayValue"] == ['bare value "0.35" under folded source: glue("k", 0.35)'], found["strayValue"]
    assert found["emptyToggle"] == ["folded cell with no output: x = 1"], found["emptyToggle"]


def _chapters(site: dict) -> dict:
    return {entry: p for entry, p in site.items() if entry.startswith("notebooks/")}


def test_every_chapter_opens_with_its_answer_box(site):
    bad = {entry: p["layout"]["order"] for entry, p in _chapters(site).items()
           if not p["layout"]["order"]["answer_first"]}
    assert not bad, f"chapters whose answer box does not precede the learning objectives: {bad}"


def test_the_intro_states_the_trust_level_on_its_first_screen(site):
    trust = site[toc_files()[0]]["layout"]["trust"]
    assert trust, "the intro has no element with the class trust-sentence"
    assert trust["bottom"] <= FIRST_SCREEN[1], \
        f"the trust sentence ends at {trust['bottom']:.0f} px, below the first {FIRST_SCREEN} screen: {trust['text']!r}"


def test_nothing_sticks_out_at_390_px(site):
    bad = "".join(f"\n  {entry}: {item}" for entry, p in site.items() for item in p["layout"]["narrow"]["out"])
    widths = {entry: p["layout"]["narrow"]["scroll_width"] for entry, p in site.items()
              if p["layout"]["narrow"]["scroll_width"] > WIDTHS[1]}
    assert not bad and not widths, f"at {WIDTHS[1]} px, page widths {widths}; elements sticking out:{bad}"


def small_figure_text(figures: dict[int, list[dict]]) -> list[str]:
    """Figures (``figure_text`` of one page) whose smallest text is under ``MIN_FIGURE_TEXT_PX`` at a width,
    or that cannot be measured (not an SVG)."""
    bad = []
    for width, found in figures.items():
        for fig in found:
            if not fig["svg"]:
                bad.append(f"{fig['figure']}: not an SVG, its text cannot be measured")
            elif fig["texts"] and (least := min(fig["texts"], key=lambda t: t["px"]))["px"] < MIN_FIGURE_TEXT_PX[width]:
                bad.append(f"{fig['figure']} at {width} px: {least['px']:.1f} px ({least['words'][:40]!r}), "
                           f"at least {MIN_FIGURE_TEXT_PX[width]:g}")
    return bad


def figure_code_names(figures: dict[int, list[dict]]) -> list[str]:
    """Texts of a page's figures (titles, legends, labels, ticks) holding a code name (``CODE_NAME``)."""
    return sorted({f"{fig['figure']}: {t['words']!r}" for found in figures.values() for fig in found
                   for t in fig["texts"] if re.search(CODE_NAME, t["words"])})


def test_figure_text_is_readable_at_both_widths(site):
    """Every figure's text, measured in its SVG at the size the page shows it, is at least 11 px at 1280 px
    and 8 px at 390 px."""
    bad = "".join(f"\n  {entry}: {item}" for entry, p in site.items()
                  for item in small_figure_text(p["layout"]["figure_text"]))
    assert not bad, f"figure text under the size limit:{bad}"


def test_figure_text_has_no_code_names(site):
    bad = "".join(f"\n  {entry}: {item}" for entry, p in site.items()
                  for item in figure_code_names(p["layout"]["figure_text"]))
    assert not bad, f"figure titles, legends or labels with a code name:{bad}"


BAD_FIGURE_PAGE = """<html><head><title>t</title></head><body><article class="bd-article" style="max-width: 688px">
<style>figure { margin: 0 } figure img.svg { width: 100%; max-width: 36rem }</style>
<figure><img class="svg" src="small.svg"><figcaption>
<span class="caption-number">Fig. 1.1 </span>small</figcaption></figure>
<figure><img class="svg" src="fine.svg"><figcaption>
<span class="caption-number">Fig. 1.2 </span>fine</figcaption></figure>
<figure><img src="ok.png" width="10"><figcaption><span class="caption-number">Fig. 1.3 </span>png</figcaption></figure>
<figure><img class="svg" src="power.svg"><figcaption>
<span class="caption-number">Fig. 1.4 </span>power</figcaption></figure>
</article></body></html>"""


def test_the_figure_checks_can_fail(tmp_path, browser):
    """A figure with 7 pt text and a code name in its legend, a figure in the book's style, a PNG and a
    figure whose only small text is the exponent of an 11 pt power: the first is reported at both widths
    and for its code name, the PNG as not measurable, the last for its exponent, the second not."""
    import matplotlib

    matplotlib.use("Agg")
    from mechaudit.plots.style import new_figure
    from mechaudit.report.glue import StoredFigure

    fig, ax = new_figure()
    ax.plot([0, 1], [0, 1], label="paper_rates")
    ax.legend(fontsize=7)
    (tmp_path / "small.svg").write_text(StoredFigure(fig)._repr_svg_())
    fig, ax = new_figure()
    ax.plot([0, 1], [0, 1], label="Paper-rate judge")
    ax.legend()
    (tmp_path / "fine.svg").write_text(StoredFigure(fig)._repr_svg_())
    fig, ax = new_figure()
    ax.set_xlabel("$2^{-2}$", fontsize=11)  # the exponent is drawn at 0.7 of 11 pt
    (tmp_path / "power.svg").write_text(StoredFigure(fig)._repr_svg_())
    (tmp_path / "ok.png").write_bytes(PNG_1PX)
    found = on_planted_page(browser, tmp_path, BAD_FIGURE_PAGE, figure_text)
    small = small_figure_text(found)
    assert [b.split(":")[0] for b in small] == [
        "Fig. 1.1 small.svg at 1280 px", "Fig. 1.3 ok.png", "Fig. 1.4 power.svg at 1280 px",
        "Fig. 1.1 small.svg at 390 px", "Fig. 1.3 ok.png", "Fig. 1.4 power.svg at 390 px"], small
    assert "('paper_rates')" in small[0] and "at least 11" in small[0], small
    assert figure_code_names(found) == ["Fig. 1.1 small.svg: 'paper_rates'"]
    fine = [t["px"] for t in found[1280][1]["texts"]]
    assert min(fine) == pytest.approx(11 * 576 / 432, rel=0.05), fine  # 11 pt over 6 in, shown 36rem wide


BAD_READING_PAGE = """<html><head><title>t</title><style>td.tight { width: 40px; overflow-wrap: anywhere; }</style>
</head><body><article class="bd-article" style="max-width: 688px"><section id="s">
<div class="admonition"><p class="admonition-title">Learning objectives</p></div>
<div class="admonition" id="ch09-answer"><p class="admonition-title">Question, answer and how we know</p></div>
<table style="width: 100px; table-layout: fixed"><thead><tr><th>mechanism_key</th><th>Fine</th></tr></thead>
<tbody><tr><td class="tight">evidenceweight</td><td class="tight">1.6e-07</td></tr>
<tr><td class="tight">TF-IDF</td><td class="tight">top-down</td></tr>
<tr><td colspan="2">NF-kappaB C1-like 34.5</td></tr></tbody></table>
<p><span class="caption-number">Fig. 3 </span>, <span class="caption-number">Table 2.1 </span>,
see exercise Exercise 4.</p>
<div class="cell_input"><pre>{wide}</pre></div>
<div style="height: 900px"></div><p class="trust-sentence">Offline, every number is simulated.</p>
<div id="wide" style="width: 600px">too wide at 390 px</div>
</section></article></body></html>"""


def test_the_reading_checks_can_fail(tmp_path, browser):
    """A page with a table broken inside a word and a number, a header with an underscore, a book-wide
    figure number and a doubled "exercise Exercise", a code line wider than the column, the objectives
    before the answer box, the trust sentence below the first screen and a block wider than a phone is
    reported for each, and only for those."""
    (tmp_path / "page.html").write_text(BAD_READING_PAGE.replace("{wide}", "x = " + "1" * 200))
    with serve(tmp_path) as base:
        context, page = _new_page(browser)
        audit_page(page, f"{base}/page.html", watch(page))
        found = layout(page)
        found["narrow"] = narrow(page)
        context.close()
    assert sorted(b.split(" in ")[0] for b in found["broken"]) == ['"1.6e-07"', '"TF-IDF"', '"evidenceweight"'], \
        found["broken"]  # "top-down" may break after its hyphen
    assert [u.split(" in ")[0] for u in found["underscores"]] == ['"mechanism_key"'], found["underscores"]
    assert found["numbers"][0].startswith('"Fig. 3" in') and len(found["numbers"]) == 2, found["numbers"]
    assert found["numbers"][1] == '"exercise Exercise 4" (doubled word)'
    assert len(found["wideCode"]) == 1 and "code line" in found["wideCode"][0], found["wideCode"]
    assert found["order"] == {"answer": True, "objectives": True, "answer_first": False}
    assert found["trust"]["bottom"] > FIRST_SCREEN[1]
    assert any(o.startswith("div#wide") for o in found["narrow"]["out"]), found["narrow"]
    assert not any("NF-kappaB" in b for b in found["broken"])


# ------------------------------------------------------------------------------ printed pages

def print_problems(prints: dict) -> list[str]:
    """What is wrong with the printouts ``{entry: printed(...)}`` of the worksheet and the teacher page."""
    sheet, teacher = prints[WORKSHEET], prints[TEACHER]
    problems = [f"{entry}: line cut at the margin: {c}" for entry, p in prints.items() for c in p["clipped"]]
    if sheet["pages"] > MAX_WORKSHEET_PAGES:
        problems.append(f"{WORKSHEET}: prints on {sheet['pages']} A4 pages, more than {MAX_WORKSHEET_PAGES}")
    if [(q["start"], q["items"] >= MIN_QUESTIONS) for q in sheet["lists"]] != [(1, True)]:
        problems.append(f"{WORKSHEET}: the questions are not one list numbered 1 to N (N >= {MIN_QUESTIONS}): "
                        f"{sheet['lists']}")
    key = teacher["key"]
    if not key or not key["shown"] or key["items"] < MIN_QUESTIONS or key["hidden"]:
        problems.append(f"{TEACHER}: the answer key does not print open: {key}")
    return problems


def test_the_class_prints(site):
    """The worksheet prints on at most two A4 pages with its questions numbered 1 to N, the teacher page
    prints its answer key, and no printed line of either is cut at the margin."""
    prints = {entry: site[entry]["print"] for entry in PRINTED}
    pages = {entry: p["pages"] for entry, p in prints.items()}
    assert not print_problems(prints), "\n  ".join([f"printouts (A4 pages {pages}):", *print_problems(prints)])


BAD_PRINT_PAGE = """<html><head><title>t</title><style>pre {{ white-space: pre; overflow-x: auto; }}
@media print {{ .screen-only {{ display: none; }} }}</style></head><body><article class="bd-article">
<section><h1>Page</h1><ol><li>one</li></ol><p>text</p><ol start="2"><li>two</li><li>three</li></ol>
{body}<pre>.venv/bin/mechaudit execute notebooks/06_rubric_sensitivity.py -p jaccard_threshold 0.7 --out runs/x</pre>
<section><h2>Answer key</h2>{key}</section></section></article></body></html>"""


def test_the_print_checks_can_fail(tmp_path, browser):
    """A worksheet of four pages with its numbering restarted by a paragraph and a command cut at the
    margin, and teacher pages whose answer key is folded in a closed <details> or hidden for print,
    are each reported; the same key printed open is not."""
    pages = {"sheet": ("<p>line</p>" * 150, "<ol><li>a</li><li>b</li><li>c</li><li>d</li></ol>"),
             "folded": ("", "<details><summary>show</summary><ol><li>a</li><li>b</li><li>c</li><li>d</li></ol>"
                            "</details>"),
             "screen": ("", "<ol class='screen-only'><li>a</li><li>b</li><li>c</li><li>d</li></ol>")}
    for name, (body, key) in pages.items():
        (tmp_path / f"{name}.html").write_text(BAD_PRINT_PAGE.format(body=body, key=key))
    with serve(tmp_path) as base:
        context, page = _new_page(browser)
        prints = {}
        for name in pages:
            page.goto(f"{base}/{name}.html", wait_until="load")
            prints[name] = printed(page)
        context.close()
    assert prints["sheet"]["pages"] >= 3 and prints["folded"]["pages"] == 1, prints
    found = print_problems({WORKSHEET: prints["sheet"], TEACHER: prints["folded"]})
    assert [p.split(": ")[1] for p in found] == [
        "line cut at the margin", "line cut at the margin",
        f"prints on {prints['sheet']['pages']} A4 pages, more than 2",
        "the questions are not one list numbered 1 to N (N >= 4)", "the answer key does not print open"], found
    assert prints["folded"]["key"]["hidden"] == ["a", "b", "c", "d"]
    assert prints["screen"]["key"]["hidden"] == ["a", "b", "c", "d"]
    assert prints["sheet"]["key"] == {"shown": True, "items": 4, "hidden": []}
