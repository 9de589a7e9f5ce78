"""Benchmark of the live widgets: page weight and redraw time (printed, not asserted).

For each widget page of the built book (``BOOK_HTML``, default ``_build/html``), in headless
Debian Chromium with the site served on 127.0.0.1:

* bytes: every byte the page loads (navigation + resources, from the Resource Timing API;
  the local server does not compress), the same for a plain text page of the book
  (``chapters/references.html``), their difference broken down (most of it is KaTeX's CSS and
  fonts and the page's own prose and figures, which a page without widgets would load too), and the
  bytes that belong to the widget itself (the loader script, the embedded widget state, the
  view tags and the static fallback): the 300 KB goal applies to these;
* redraw: time from a slider's input event to the finished redraw (the synchronous handler
  plus a forced style and layout), median and 95th percentile over many moves of every
  slider. Chromium's ``performance.now()`` is coarsened to 0.1 ms, so sub-0.1 ms redraws
  read as 0.0 or 0.1.

Beside each, the time a kernel-backed ``ipywidgets.interactive`` + matplotlib redraw of the
same view takes in Python (the callback and the PNG the inline backend would send; the comm
round trip to the browser comes on top). Goal: browser redraw median under 4 ms.

Run: ``.venv/bin/python benchmarks/bench_widgets.py`` (needs a built book).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGES = {
    "TemperatureExplorer": "chapters/soft-retrieval.html",
    "WidthExplorer": "chapters/variance.html",
    "SaturationExplorer": "chapters/saturation.html",
}
KIND = {"TemperatureExplorer": "temperature", "WidthExplorer": "width", "SaturationExplorer": "saturation"}
PLAIN_PAGE = "chapters/references.html"
WEIGHT_GOAL = 300_000
REDRAW_GOAL_MS = 4.0
MOVES = 200

_BYTES_JS = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const res = performance.getEntriesByType('resource');
  return [nav, ...res].map(e => [new URL(e.name).pathname, e.encodedBodySize || e.transferSize || 0]);
}"""


def _category(path: str) -> str:
    if "/vendor/katex/" in path or path.endswith("/katex-math.css"):
        return "KaTeX CSS and fonts (math on the page)"
    if path.endswith(".html"):
        return "the page's HTML (prose, figures, widget state)"
    if "attn-widgets-loader" in path:
        return "widget loader"
    if path.endswith((".svg", ".png", ".jpg")):
        return "image files"
    return "other theme assets"


def _beyond(page: list, plain: list) -> dict:
    """Bytes of resources the widget page loads that the plain page does not (HTML: the difference)."""
    plain_paths = {p for p, _ in plain}
    out: dict = {}
    for path, size in page:
        if path in plain_paths and not path.endswith(".html"):
            continue
        out[_category(path)] = out.get(_category(path), 0) + size
    html_plain = sum(size for p, size in plain if p.endswith(".html"))
    key = _category("x.html")
    out[key] = out.get(key, 0) - html_plain
    page_paths = {p for p, _ in page}
    only_plain = sum(size for p, size in plain if p not in page_paths and not p.endswith(".html"))
    if only_plain:
        out["loaded by the plain page only"] = -only_plain
    return out

_REDRAW_JS = """([kind, moves]) => {
  const root = document.querySelector('.attn-' + kind);
  const svg = root.querySelector('svg');
  const times = [];
  for (const input of root.querySelectorAll('input[type=range]')) {
    const top = Number(input.max);
    let i = Number(input.value);
    for (let m = 0; m < moves; m++) {
      i = (i + 1 + (m % 3)) % (top + 1);  // walk the whole range, several step sizes
      const t0 = performance.now();
      input.value = String(i);
      input.dispatchEvent(new Event('input', { bubbles: true }));
      svg.getBoundingClientRect();  // force style and layout of the redrawn drawing
      void root.offsetHeight;
      times.push(performance.now() - t0);
    }
  }
  return times;
}"""


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q / 100 * (len(s) - 1))))]


def loader_file(page: Path, html_text: str) -> Path:
    """The widget loader the page loads (its own <script src>, resolved from the page)."""
    match = re.search(r'<script[^>]*\bsrc="([^"?]*attn-widgets-loader\.js)[^"]*"', html_text)
    if match is None:
        raise ValueError(f"{page} loads no attn-widgets-loader.js")
    return (page.parent / match.group(1)).resolve()


def widget_bytes(html_text: str, loader: Path) -> int:
    """Bytes of the page that exist only because of its widgets."""
    parts = re.findall(r'<script type="application/vnd\.jupyter\.widget-(?:state|view)\+json">.*?</script>',
                       html_text, re.S)
    parts += re.findall(r'<style>\.bd-article \.attn-fallback.*?</figure>', html_text, re.S)
    parts += re.findall(r'<script[^>]*attn-widgets-loader[^>]*></script>', html_text)
    return sum(len(p.encode()) for p in parts) + loader.stat().st_size


def browser_figures(html: Path) -> dict:
    from playwright.sync_api import sync_playwright

    from tools import browser as harness

    out = {}
    with harness.serve(html) as url, sync_playwright() as p:
        browser = harness.launch(p)

        def load(page_path):
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            guard = harness.GuardedPage.open(context)
            guard.goto(url + page_path)
            return context, guard

        context, guard = load(PLAIN_PAGE)
        guard.page.wait_for_timeout(300)
        plain_entries = guard.page.evaluate(_BYTES_JS)
        plain = sum(size for _, size in plain_entries)
        context.close()
        for name, page_path in PAGES.items():
            page_path = os.environ.get("WIDGET_PAGE") or page_path
            context, guard = load(page_path)
            page = guard.page
            page.wait_for_function("document.documentElement.dataset.attnWidgets === 'ready'", timeout=20000)
            page.wait_for_timeout(300)
            entries = page.evaluate(_BYTES_JS)
            total = sum(size for _, size in entries)
            page.locator(f".attn-{KIND[name]}").first.scroll_into_view_if_needed()
            page.evaluate(_REDRAW_JS, [KIND[name], 20])  # warm up
            times = page.evaluate(_REDRAW_JS, [KIND[name], MOVES])
            out[name] = {
                "page": page_path,
                "bytes_total": total,
                "bytes_plain_page": plain,
                "bytes_beyond_plain_page": total - plain,
                "beyond_plain_page_breakdown": _beyond(entries, plain_entries),
                "bytes_widget": widget_bytes(text := (html / page_path).read_text(),
                                             loader_file(html / page_path, text)),
                "redraw_ms_median": statistics.median(times),
                "redraw_ms_p95": percentile(times, 95),
                "redraws": len(times),
                "page_clean": not guard.problems,
            }
            context.close()
        browser.close()
    return out


def kernel_figures(repeats: int = 15) -> dict:
    """Time an ipywidgets.interactive + matplotlib redraw of each widget's view in Python."""
    import ipywidgets
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from attention.plotting import use_book_style
    from attention.widgets import SaturationExplorer, TemperatureExplorer, WidthExplorer

    use_book_style()

    def png(fig):
        buf = io.BytesIO()
        fig.savefig(buf, format="png")  # what the inline backend sends to the browser
        plt.close(fig)

    temp, width, sat = TemperatureExplorer(), WidthExplorer(), SaturationExplorer()

    def draw_temperature(i):
        r = temp.readout(temp._grid["temperatures"][i])
        fig, (a, b) = plt.subplots(1, 2, figsize=(7, 3))
        a.bar(range(3), r["weights"])
        V = np.array(temp._grid["values"])
        b.fill(V[:, 0], V[:, 1], alpha=0.3)
        b.plot(*r["output"], "o")
        png(fig)

    def draw_width(i):
        d_k, rho = width._grid["d_ks"][i % 11], width._grid["rhos"][(i * 3) % 11]
        p = width.readout(d_k, rho)
        fig, axes = plt.subplots(2, 2, figsize=(7, 4.5))
        axes[0, 0].bar(range(len(p["raw_hist"])), p["raw_hist"])
        axes[0, 1].bar(range(len(p["scaled_hist"])), p["scaled_hist"])
        axes[1, 0].bar(range(16), p["row_scaled"])
        axes[1, 1].bar(range(16), p["row_unscaled"])
        png(fig)

    def draw_saturation(i):
        d_k = sat._grid["d_ks"][i % 11]
        r = sat.readout(d_k, 1.0, bool(i % 2))
        fig, axes = plt.subplots(1, 3, figsize=(9, 3))
        axes[0].bar(range(32), r["weights"])
        axes[0].set_title(f"trace {r['trace']:.3f}")
        t = sat._grid["temperatures"].index(1.0)
        for k in ("mean_max_weight", "mean_trace"):
            ax = axes[1] if k == "mean_max_weight" else axes[2]
            for s in (0, 1):
                ax.plot(sat._grid["d_ks"], sat._grid[k][s][t])
            ax.plot(d_k, r[k], "o")
            ax.set_xscale("log", base=2)
        png(fig)

    out = {}
    for name, draw in (("TemperatureExplorer", draw_temperature), ("WidthExplorer", draw_width),
                       ("SaturationExplorer", draw_saturation)):
        slider = ipywidgets.IntSlider(value=0, min=0, max=50)
        with contextlib.redirect_stdout(io.StringIO()):  # interact's Output prints outside a kernel
            w = ipywidgets.interactive(draw, i=slider)
            times = []
            for k in range(1, repeats + 1):
                t0 = time.perf_counter()
                w.children[0].value = k  # the observer calls draw, as a kernel would
                times.append((time.perf_counter() - t0) * 1000)
        out[name] = {"kernel_redraw_ms_median": statistics.median(times),
                     "kernel_redraw_ms_p95": percentile(times, 95)}
    return out


def run(html: str | os.PathLike | None = None) -> dict:
    """Measure every widget page; returns {widget: {figures...}} plus the goals and whether met."""
    html = Path(html or os.environ.get("BOOK_HTML", ROOT / "_build" / "html"))
    results = browser_figures(html)
    for name, figures in kernel_figures().items():
        results[name].update(figures)
    for r in results.values():
        # The goal is about what the widget adds: its loader, embedded state and fallback.
        r["weight_goal_met"] = r["bytes_widget"] <= WEIGHT_GOAL
        r["redraw_goal_met"] = r["redraw_ms_median"] < REDRAW_GOAL_MS
    return {"widgets": results, "weight_goal_bytes": WEIGHT_GOAL, "redraw_goal_ms": REDRAW_GOAL_MS}


def main():
    res = run()
    print(f"Widget pages (goals: the widget's own bytes <= {WEIGHT_GOAL // 1000} KB; "
          f"redraw median < {REDRAW_GOAL_MS} ms)")
    for name, r in res["widgets"].items():
        print(f"\n{name}  ({r['page']})")
        print(f"  bytes loaded: {r['bytes_total']:,} total; plain text page {r['bytes_plain_page']:,}; "
              f"beyond it {r['bytes_beyond_plain_page']:,}")
        for what, size in sorted(r["beyond_plain_page_breakdown"].items(), key=lambda kv: -kv[1]):
            print(f"      {size:>10,}  {what}")
        print(f"  the widget's own bytes (loader + embedded state + view tags + fallback figure): "
              f"{r['bytes_widget']:,}  -> {'met' if r['weight_goal_met'] else 'NOT met'}")
        print(f"  browser redraw (input event -> layout done, {r['redraws']} moves): "
              f"median {r['redraw_ms_median']:.2f} ms, p95 {r['redraw_ms_p95']:.2f} ms"
              f"  -> {'met' if r['redraw_goal_met'] else 'NOT met'}")
        print(f"  kernel interact + matplotlib redraw in Python: median {r['kernel_redraw_ms_median']:.1f} ms, "
              f"p95 {r['kernel_redraw_ms_p95']:.1f} ms (plus the comm round trip)")
        if not r["page_clean"]:
            print("  note: the page reported console/network problems")


if __name__ == "__main__":
    main()
