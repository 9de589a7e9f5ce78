"""Benchmark of the explorer pages on a phone-class CPU (printed, not asserted).

For each explorer page of the built book (the pages of bench_widgets.PAGES), in headless
Debian Chromium at 390 x 844 CSS px (touch, a phone's width) with the CPU throttled 4x
(CDP ``Emulation.setCPUThrottlingRate``, rate 4, set before the page loads):

* DOMContentLoaded: ``domContentLoadedEventEnd`` of the navigation, the median of LOADS
  cold loads (a fresh browser context each, so nothing is cached);
* DOM nodes: the page's elements (``document.querySelectorAll('*')``) once its explorer is
  live, and CDP's ``Nodes`` count (elements, text and comment nodes of every document);
* slider interaction latency, input to next paint: each slider of the page's explorer is
  tapped at TAPS places along its track, one tap at a time (the next after the previous
  one's paint), and each tap's latency is read two ways:
  - Event Timing (``PerformanceObserver``, type "event", durationThreshold 16): for each
    interaction (interactionId) the longest duration of its events, from the input's
    time stamp to the next paint after its handlers, in steps of 8 ms. A tap that took
    under 16 ms is not reported; it is counted as 16 ms (an upper bound);
  - rAF after input: from the ``input`` event's time stamp to the first task after the
    next animation frame (the frame that paints the redraw), for every tap.

Goals (issue 23, at 4x): median interaction (Event Timing) at most 50 ms, DOMContentLoaded
at most 2.5 s. The worst interaction and the node counts are printed beside them.

bench_widgets.py measures the redraw itself at full speed on a laptop-sized window (the
synchronous handler and layout, no paint); this file measures what a phone reader feels.

Run: ``.venv/bin/python benchmarks/bench_phone.py [BUILT_HTML]`` (needs a built book).
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from bench_widgets import KIND, PAGES  # noqa: E402  the explorer pages and their roots

VIEWPORT = {"width": 390, "height": 844}
CPU_THROTTLE = 4
LOADS = 3
TAPS = 12  # places along each slider's track
INTERACTION_GOAL_MS = 50.0
DCL_GOAL_MS = 2500.0
EVENT_THRESHOLD_MS = 16  # the smallest durationThreshold Event Timing accepts

# Installed before the page's own scripts: Event Timing entries and rAF-after-input times.
_INIT = """(() => {
  window.__bench = {events: [], raf: []};
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) {
      if (e.interactionId) window.__bench.events.push(
        {id: e.interactionId, name: e.name, duration: e.duration, start: e.startTime});
    }
  }).observe({type: 'event', durationThreshold: %d, buffered: true});
  document.addEventListener('input', event => {
    if (!(event.target instanceof HTMLInputElement) || event.target.type !== 'range') return;
    const t0 = event.timeStamp;
    requestAnimationFrame(() => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => window.__bench.raf.push(performance.now() - t0);
      channel.port2.postMessage(0);
    });
  }, true);
})();""" % EVENT_THRESHOLD_MS

_TIMING_JS = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  return {dcl_ms: nav.domContentLoadedEventEnd, load_ms: nav.loadEventEnd};
}"""


def _context(browser):
    return browser.new_context(viewport=VIEWPORT, has_touch=True, is_mobile=True,
                               device_scale_factor=2)


def _open(browser, url: str):
    """One cold load of ``url`` at 4x CPU throttling: (context, guard, cdp session)."""
    from tools import browser as harness

    context = _context(browser)
    context.add_init_script(_INIT)
    guard = harness.GuardedPage.open(context)
    cdp = context.new_cdp_session(guard.page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": CPU_THROTTLE})
    cdp.send("Performance.enable")
    guard.goto(url)
    return context, guard, cdp


def _taps(page, kind: str) -> int:
    """Tap every slider of the explorer at TAPS places along its track; returns the taps."""
    sliders = page.locator(f".attn-{kind} input[type=range]")
    count = 0
    for index in range(sliders.count()):
        slider = sliders.nth(index)
        slider.scroll_into_view_if_needed()
        page.wait_for_timeout(300)  # let the scroll settle (it is not an interaction)
        box = slider.bounding_box()
        # Low end, high end, then inwards: every tap lands on another value.
        places = [(k + 0.5) / TAPS for k in range(TAPS)]
        order = [places[k // 2] if k % 2 == 0 else places[-1 - k // 2] for k in range(TAPS)]
        for frac in order:
            before = page.evaluate("() => window.__bench.raf.length")
            page.touchscreen.tap(box["x"] + frac * box["width"], box["y"] + box["height"] / 2)
            count += 1
            # One at a time: the next tap after this one's paint (and a pause, as a finger).
            # A tap on the value the slider already has fires no input: go on after 2 s.
            try:
                page.wait_for_function("n => window.__bench.raf.length > n", arg=before,
                                       timeout=2000)
            except Exception:
                pass
            page.wait_for_timeout(120)
    return count


def _interactions(events: list[dict], taps: int) -> list[float]:
    """Each tap's latency from Event Timing: the longest event of each interaction, and
    EVENT_THRESHOLD_MS for each tap under the threshold (not reported)."""
    longest: dict[int, float] = {}
    for e in events:
        longest[e["id"]] = max(longest.get(e["id"], 0.0), e["duration"])
    values = sorted(longest.values())
    return values + [float(EVENT_THRESHOLD_MS)] * max(0, taps - len(values))


def measure_page(browser, base: str, page_path: str, kind: str) -> dict:
    loads = []
    for attempt in range(LOADS):
        context, guard, cdp = _open(browser, base + page_path)
        page = guard.page
        try:
            page.wait_for_function("document.documentElement.dataset.attnWidgets === 'ready'",
                                   timeout=60000)
            loads.append(page.evaluate(_TIMING_JS))
            if attempt < LOADS - 1:
                continue
            elements = page.evaluate("() => document.querySelectorAll('*').length")
            metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
            page.wait_for_timeout(500)
            taps = _taps(page, kind)
            bench = page.evaluate("() => window.__bench")
            sliders = page.locator(f".attn-{kind} input[type=range]").count()
            slider_box = page.locator(f".attn-{kind} input[type=range]").first.bounding_box()
            problems = list(guard.problems)
        finally:
            context.close()
    event_ms = _interactions(bench["events"], taps)
    return {
        "page": page_path,
        "dcl_ms_median": statistics.median(r["dcl_ms"] for r in loads),
        "dcl_ms_loads": [r["dcl_ms"] for r in loads],
        "load_ms_median": statistics.median(r["load_ms"] for r in loads),
        "dom_elements": elements,
        "dom_nodes_cdp": int(metrics.get("Nodes", 0)),
        "sliders": sliders,
        "slider_width_px": slider_box["width"] if slider_box else None,
        "taps": taps,
        "event_timing_reported": len({e["id"] for e in bench["events"]}),
        "interaction_ms_median": statistics.median(event_ms),
        "interaction_ms_worst": max(event_ms),
        "raf_ms_median": statistics.median(bench["raf"]) if bench["raf"] else None,
        "raf_ms_worst": max(bench["raf"]) if bench["raf"] else None,
        "raf_measured": len(bench["raf"]),
        "problems": problems,
    }


def run(html: str | os.PathLike | None = None) -> dict:
    """Measure every explorer page; {widget: {figures...}} plus the goals."""
    from playwright.sync_api import sync_playwright

    from tools import browser as harness

    html = Path(html or os.environ.get("BOOK_HTML", ROOT / "_build" / "html"))
    out = {}
    with harness.serve(html) as base, sync_playwright() as p:
        browser = harness.launch(p)
        try:
            for name, page_path in PAGES.items():
                out[name] = measure_page(browser, base, page_path, KIND[name])
        finally:
            browser.close()
    return {"pages": out, "cpu_throttle": CPU_THROTTLE, "viewport": VIEWPORT,
            "interaction_goal_ms": INTERACTION_GOAL_MS, "dcl_goal_ms": DCL_GOAL_MS}


def report(result: dict) -> list:
    """Print the figures (the results format of benchmarks/run.py); returns its Goals."""
    from common import Goal

    goals = []
    print(f"  {result['viewport']['width']} x {result['viewport']['height']} px, touch, "
          f"CPU throttled {result['cpu_throttle']}x; DOMContentLoaded = median of {LOADS} "
          f"cold loads; {TAPS} taps along each slider, one at a time")
    print(f"  {'page':<28} {'DCL':>8} {'elements':>9} {'nodes':>7} {'taps':>5} "
          f"{'ET median':>10} {'ET worst':>9} {'rAF median':>11} {'rAF worst':>10}")
    for name, r in result["pages"].items():
        raf_median = r["raf_ms_median"] if r["raf_ms_median"] is not None else float("nan")
        raf_worst = r["raf_ms_worst"] if r["raf_ms_worst"] is not None else float("nan")
        print(f"  {r['page']:<28} {r['dcl_ms_median']:6.0f} ms {r['dom_elements']:>9,} "
              f"{r['dom_nodes_cdp']:>7,} {r['taps']:>5} {r['interaction_ms_median']:7.0f} ms "
              f"{r['interaction_ms_worst']:6.0f} ms {raf_median:8.1f} ms {raf_worst:7.1f} ms")
        under = r["taps"] - r["event_timing_reported"]
        print(f"      Event Timing reported {r['event_timing_reported']} of {r['taps']} taps"
              + (f" (the others under {EVENT_THRESHOLD_MS} ms, counted as {EVENT_THRESHOLD_MS})"
                 if under > 0 else "") + "; "
              f"{r['sliders']} sliders, {r['slider_width_px']:.0f} px wide; DCL of each load: "
              + ", ".join(f"{v:.0f}" for v in r["dcl_ms_loads"]) + " ms")
        for q in r["problems"][:3]:
            print(f"      problem: {q[:150]}")
        goals.append(Goal(f"{name}: slider interaction median at {CPU_THROTTLE}x, 390 px",
                          r["interaction_ms_median"], result["interaction_goal_ms"], "<=", " ms",
                          detail=f"(worst {r['interaction_ms_worst']:.0f} ms, Event Timing)"))
        goals.append(Goal(f"{name}: DOMContentLoaded at {CPU_THROTTLE}x, 390 px",
                          r["dcl_ms_median"] / 1000, result["dcl_goal_ms"] / 1000, "<=", " s",
                          detail=f"({r['dom_elements']:,} elements)"))
    return goals


def main():
    from common import heading

    heading(f"Explorers on a phone-class CPU ({CPU_THROTTLE}x throttled, 390 px)")
    result = run(sys.argv[1] if len(sys.argv) > 1 else None)
    for goal in report(result):
        print(goal.line())


if __name__ == "__main__":
    main()
