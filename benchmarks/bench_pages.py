"""Figure 5: per page of the built site, the bytes a reader downloads and the time to first render.

Serves the built HTML on 127.0.0.1 and opens each page in a fresh (cold-cache) context of
headless Debian Chromium through tools/browser.py (the tests use it too), so no request leaves
the origin. The page's files are the document and every sub-resource the browser fetched
(Resource Timing). For each file two sizes are counted from the built site on disk:

* raw: its bytes;
* gzipped: what a static host sends, which compresses text (HTML, CSS, JavaScript, SVG, JSON)
  and sends already compressed formats (woff2 fonts, PNG, JPEG) as they are: text files are
  gzipped here at level 6, the usual default of web servers.

Goal: every page at most 400 KB (400,000 bytes) gzipped. Time to first render is the first
contentful paint, the median of a few loads. `weights(html)` is shared with the test
``tests/site/test_page_weight.py`` so that the benchmark and the test count the same bytes.
"""

from __future__ import annotations

import gzip
import statistics
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tools import browser as harness  # noqa: E402

WEIGHT_GOAL = 400_000  # bytes, gzipped, per page (issue 14)
COMPRESSIBLE = {".html", ".css", ".js", ".mjs", ".svg", ".json", ".txt", ".xml", ".map", ".ipynb", ".md"}

_INIT = "performance.setResourceTimingBufferSize(100000);"
_MEASURE = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource');
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  return {
    urls: [nav.name, ...res.map(r => r.name)],
    fcp_ms: fcp ? fcp.startTime : null,
    load_ms: nav.loadEventEnd,
  };
}"""


def file_of(html: Path, base: str, url: str) -> Path | None:
    """The file of the built site that ``url`` (served from ``base``) names, if any."""
    if not url.startswith(base):
        return None  # data:, blob: (widget modules): already inside the page's bytes
    path = unquote(urlparse(url).path).lstrip("/")
    target = html / path
    if target.is_dir():
        target = target / "index.html"
    return target if target.is_file() else None


def sizes(path: Path) -> tuple[int, int]:
    """(raw, gzipped as a static host sends it) bytes of one file."""
    data = path.read_bytes()
    if path.suffix.lower() in COMPRESSIBLE:
        return len(data), len(gzip.compress(data, compresslevel=6, mtime=0))
    return len(data), len(data)


def load(browser, base: str, page: str) -> tuple[dict, list[str]]:
    """One cold load of ``page``: the URLs it fetched, its paint times and its problems."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        context.add_init_script(_INIT)
        guard = harness.GuardedPage.open(context)
        guard.goto(base + page)
        # Fonts load once the text that needs them is laid out: wait for them, then let a
        # late paint entry land.
        guard.page.evaluate("document.fonts.ready.then(() => true)")
        guard.page.wait_for_timeout(300)
        return guard.page.evaluate(_MEASURE), guard.problems
    finally:
        context.close()


def page_weight(html: Path, base: str, urls: list[str]) -> dict:
    files = {}
    for url in urls:
        path = file_of(html, base, url)
        if path is not None:
            files[path.relative_to(html).as_posix()] = sizes(path)
    return dict(raw=sum(r for r, _ in files.values()), gzip=sum(g for _, g in files.values()),
                requests=len(urls), files=files)


def weights(html: Path, browser, base: str, repeats: int = 1) -> dict[str, dict]:
    """Every page's weight (raw and gzipped bytes, files) and first contentful paint."""
    pages = {}
    for page in harness.book_pages(html):
        loads = [load(browser, base, page) for _ in range(repeats)]
        first, problems = loads[0]
        fcps = [m["fcp_ms"] for m, _ in loads if m["fcp_ms"] is not None]
        rec = page_weight(html, base, first["urls"])
        rec.update(first_paint_ms=statistics.median(fcps) if fcps else None,
                   load_ms=statistics.median(m["load_ms"] for m, _ in loads),
                   problems=sorted({q for _, probs in loads for q in probs}))
        pages[page] = rec
    return pages


def run(html: Path, repeats: int = 3) -> dict:
    from playwright.sync_api import sync_playwright

    from common import Goal, heading

    heading(f"5. Pages in headless Chromium ({html})")
    print(f"  cold cache each load; bytes as a static host sends them (text gzipped); "
          f"first contentful paint = median of {repeats} loads; goal <= {WEIGHT_GOAL:,} B gzipped")
    print(f"  {'page':<34} {'raw':>11} {'gzipped':>10} {'requests':>9} {'first paint':>12} {'load':>9}")
    with harness.serve(html) as base, sync_playwright() as p:
        browser = harness.launch(p)
        try:
            pages = weights(html, browser, base, repeats)
        finally:
            browser.close()
    goals = []
    for page, rec in pages.items():
        fp = f"{rec['first_paint_ms']:9.0f} ms" if rec["first_paint_ms"] is not None else "      n/a"
        print(f"  {page:<34} {rec['raw']:>11,} {rec['gzip']:>10,} {rec['requests']:>9} {fp:>12} {rec['load_ms']:6.0f} ms"
              + ("" if rec["gzip"] <= WEIGHT_GOAL else "   over 400 KB"))
        for q in rec["problems"][:3]:
            print(f"      problem: {q[:150]}")
        goals.append(Goal(f"{page}: bytes gzipped", rec["gzip"], WEIGHT_GOAL, "<=", " B"))
    heaviest = max(pages.values(), key=lambda r: r["gzip"])
    print("  the heaviest page's largest files (gzipped): " + ", ".join(
        f"{name} {g:,}" for name, (_, g) in sorted(heaviest["files"].items(), key=lambda kv: -kv[1][1])[:5]))
    print(f"  {len(pages)} pages; the heaviest {max(r['gzip'] for r in pages.values()):,} B gzipped "
          f"({max(r['raw'] for r in pages.values()):,} B raw)")
    return dict(pages={k: {kk: vv for kk, vv in v.items() if kk != "files"} for k, v in pages.items()},
                weight_goal_bytes=WEIGHT_GOAL, goals=goals)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    run(Path(sys.argv[1]) if len(sys.argv) > 1 else harness.HTML, repeats=1)
