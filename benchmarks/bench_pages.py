"""Figure 5: per page of the built site, the bytes loaded and the time to first render.

Serves the built HTML on 127.0.0.1 and opens each page in a fresh (cold-cache) context of
headless Debian Chromium through the test harness (tests/harness.py), so no request leaves
the origin. Bytes are the response bodies the browser received (Resource Timing's
encodedBodySize of the document and every sub-resource; the local server does not
compress). Time to first render is the first contentful paint, the median of a few loads.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from common import ROOT, heading

import sys

sys.path.insert(0, str(ROOT))
from tests import harness  # noqa: E402

_INIT = "performance.setResourceTimingBufferSize(100000);"
_MEASURE = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource');
  const fcp = performance.getEntriesByName('first-contentful-paint')[0];
  return {
    bytes: nav.encodedBodySize + res.reduce((s, r) => s + r.encodedBodySize, 0),
    requests: 1 + res.length,
    fcp_ms: fcp ? fcp.startTime : null,
    load_ms: nav.loadEventEnd,
  };
}"""


def _load(browser, url: str) -> tuple[dict, list[str]]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        context.add_init_script(_INIT)
        guard = harness.GuardedPage.open(context)
        guard.goto(url)
        guard.page.wait_for_timeout(200)  # let a late paint entry land
        return guard.page.evaluate(_MEASURE), guard.problems
    finally:
        context.close()


def run(html: Path, repeats: int = 3) -> dict:
    from playwright.sync_api import sync_playwright

    heading(f"5. Pages in headless Chromium ({html})")
    print(f"  cold cache each load; first contentful paint = median of {repeats} loads")
    print(f"  {'page':<34} {'bytes':>12} {'requests':>9} {'first paint':>12} {'load':>9}")
    pages = {}
    with harness.serve(html) as base, sync_playwright() as p:
        browser = harness.launch(p)
        try:
            for page in harness.book_pages(html):
                loads = [_load(browser, base + page) for _ in range(repeats)]
                fcps = [m["fcp_ms"] for m, _ in loads if m["fcp_ms"] is not None]
                first, problems = loads[0]
                rec = dict(bytes=first["bytes"], requests=first["requests"],
                           first_paint_ms=statistics.median(fcps) if fcps else None,
                           load_ms=statistics.median(m["load_ms"] for m, _ in loads),
                           problems=sorted({q for _, probs in loads for q in probs}))
                pages[page] = rec
                fp = f"{rec['first_paint_ms']:9.0f} ms" if rec["first_paint_ms"] is not None else "      n/a"
                print(f"  {page:<34} {rec['bytes']:>12,} {rec['requests']:>9} {fp:>12} {rec['load_ms']:6.0f} ms")
                for q in rec["problems"][:3]:
                    print(f"      problem: {q[:150]}")
        finally:
            browser.close()
    total = sum(r["bytes"] for r in pages.values())
    print(f"  {len(pages)} pages, {total:,} bytes in all (shared files counted on every page)")
    return dict(pages=pages, goals=[])
