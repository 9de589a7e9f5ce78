"""The built book served on loopback, and a guarded headless Chromium (Debian's).

The PDF (_ext/book_pdf.py), the benchmarks and the browser tests open pages through
:class:`GuardedPage`, which aborts and records any request that leaves 127.0.0.1, and
records console errors, page errors, failed requests and HTTP errors, so that a caller can
assert that a page is clean.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
HTML = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html"))
CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]
LOCAL_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}


def chromium_path() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(path).exists():
        raise RuntimeError("Debian's chromium is missing: run `make chromium` (apt-get install chromium)")
    return path


def book_pages(html: Path = HTML) -> list[str]:
    """Every HTML page of the built book, as paths relative to the site root."""
    if not (html / "index.html").exists():
        raise RuntimeError(f"no built book at {html}: run `make book` first")
    return sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html")
                  if "_static" not in p.parts and "vendor" not in p.parts and "_sources" not in p.parts)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


@contextlib.contextmanager
def serve(directory: Path = HTML):
    """Serve ``directory`` on 127.0.0.1 (a free port); yields the base URL ending in '/'."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def launch(playwright):
    """Headless Debian Chromium (never a downloaded browser)."""
    return playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)


@dataclass
class GuardedPage:
    """A Playwright page whose every problem is recorded in ``problems``."""

    page: object
    problems: list[str] = field(default_factory=list)
    outside_requests: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, context) -> "GuardedPage":
        page = context.new_page()
        guard = cls(page)

        def route(r):
            host = urlparse(r.request.url).hostname or ""
            if r.request.url.startswith(("data:", "blob:")) or host in LOCAL_HOSTS:
                r.continue_()
            else:
                guard.outside_requests.append(r.request.url)
                guard.problems.append(f"request outside the origin: {r.request.url}")
                r.abort()

        page.route("**/*", route)
        page.on("console", lambda m: m.type == "error" and guard.problems.append(
            f"console error: {m.text} ({m.location.get('url', '')})"))
        page.on("pageerror", lambda e: guard.problems.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: guard.problems.append(
            f"request failed: {r.url} ({r.failure})"))
        page.on("response", lambda r: r.status >= 400 and guard.problems.append(
            f"HTTP {r.status}: {r.url}"))
        return guard

    def goto(self, url: str, wait_until: str = "networkidle"):
        """Open url and wait for wait_until and for the load event: Chromium can report the
        network idle before it has parsed a long document (the PDF's 4.9 MB one lost its
        last section, the Solutions, in one loaded test run)."""
        response = self.page.goto(url, wait_until=wait_until)
        self.page.wait_for_load_state("load")
        return response

    def assert_clean(self):
        assert not self.problems, "\n".join(self.problems)
