"""Open every page of the built book in headless Debian Chromium through Playwright.

Every request that is not to loopback is aborted; each page must answer 200, carry a title,
show every image (naturalWidth > 0) and log no console error. A screenshot of each page is saved
under ``_build/screenshots/``.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest
from test_book import toc_files

from mechaudit.paths import REPO_ROOT

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--no-first-run", "--disable-sync", "--disable-quic"]

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


def audit_page(page, url: str) -> list[str]:
    """Problems with one page: status, title, broken images, console errors."""
    problems: list[str] = []
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    response = page.goto(url, wait_until="load")
    if response is None or response.status != 200:
        problems.append(f"status {None if response is None else response.status}")
    if not page.title().strip():
        problems.append("empty title")
    broken = page.evaluate(
        "Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)"
    )
    problems += [f"broken image {src}" for src in broken]
    problems += [f"console error: {e}" for e in errors if "net::ERR_FAILED" not in e]
    return problems


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=FLAGS)
        yield b
        b.close()


def _new_page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})

    def route(r):
        host = urlparse(r.request.url).hostname
        if host in {"127.0.0.1", "localhost", "::1"} or r.request.url.startswith("data:"):
            r.continue_()
        else:
            r.abort()

    context.route("**/*", route)
    return context, context.new_page()


def test_every_toc_page_renders(built_book, browser):
    shots = REPO_ROOT / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    report = {}
    with serve(built_book) as base:
        for entry in toc_files():
            context, page = _new_page(browser)
            report[entry] = audit_page(page, f"{base}/{entry}.html")
            page.screenshot(path=str(shots / f"{entry.replace('/', '__')}.png"), full_page=True)
            context.close()
    bad = {k: v for k, v in report.items() if v}
    assert not bad, bad


def test_a_broken_image_is_caught(tmp_path, browser):
    """The audit must be able to fail: a page with a missing image is reported."""
    (tmp_path / "ok.png").write_bytes(
        bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")
    )
    (tmp_path / "page.html").write_text(
        "<html><head><title>t</title></head><body><img src='ok.png'><img src='missing.png'></body></html>"
    )
    with serve(tmp_path) as base:
        context, page = _new_page(browser)
        problems = audit_page(page, f"{base}/page.html")
        context.close()
    assert any("broken image" in p and "missing.png" in p for p in problems), problems
    assert not any("ok.png" in p for p in problems), problems
