"""Every screen: a phone (390 px wide) and a desktop (1280 px), light and dark.

* 390 px: no page scrolls sideways (the document is exactly as wide as the viewport); a
  code cell or an output wider than the screen scrolls inside its own box; each explorer's
  controls wrap inside it and its drawing's text is at least 10 px tall on screen (an SVG
  scaled down to the screen shrinks its text with it).
* 1280 px: no code cell and no printed output is wider than its column, and the column
  holds a 76-character line of code (the longest the pages write) without a scrollbar.
"""

from __future__ import annotations

import pytest

from tests import harness

BUILT = (harness.HTML / "index.html").exists()
PAGES = [p for p in (harness.book_pages() if BUILT else ["chapters/index.html"]) if p != "index.html"]
WIDGET_PAGES = [p for p in PAGES if BUILT and "application/vnd.jupyter.widget-state+json" in (harness.HTML / p).read_text(encoding="utf-8")]
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
MODES = ["light", "dark"]

SET_MODE = """(mode) => {
  document.documentElement.dataset.mode = mode;
  document.documentElement.dataset.theme = mode;
}"""

WIDE_THINGS = """() => {
  const vw = document.documentElement.clientWidth;
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= vw + 1) continue;
    // Inside a box that scrolls or clips sideways it cannot widen the page.
    let p = el.parentElement, clipped = false;
    while (p && p !== document.body) {
      const s = getComputedStyle(p);
      if (['auto', 'scroll', 'hidden', 'clip'].includes(s.overflowX) && p.getBoundingClientRect().right <= vw + 1) { clipped = true; break; }
      p = p.parentElement;
    }
    if (!clipped) out.push(`${el.tagName.toLowerCase()}.${[...el.classList].join('.')} right=${Math.round(r.right)}`);
  }
  return out.slice(0, 8);
}"""

# Code inputs and text outputs: [what, scrollWidth, clientWidth, overflow-x].
CODE_BOXES = """() => [...document.querySelectorAll(
    'article .cell_input pre, article .cell_output pre, article div.highlight > pre, article .output pre')]
  .filter(pre => pre.getClientRects().length > 0 && !pre.closest('details:not([open])'))
  .map(pre => {
    const cell = pre.closest('.cell');
    const where = (cell && cell.id) || (pre.closest('[id]') || {}).id || '';
    const line = (pre.textContent.split('\\n').reduce((a, b) => (b.length > a.length ? b : a), '')).slice(0, 90);
    return [where, pre.closest('.cell_output, .output') ? 'output' : 'code', pre.scrollWidth, pre.clientWidth,
            getComputedStyle(pre).overflowX, line];
  })"""

# A 76-character line put into a code cell's box of the page: does it fit?
SEVENTY_SIX = """() => {
  const host = document.querySelector('article .cell_input div.highlight, article div.highlight');
  if (!host) return null;
  const pre = host.querySelector('pre').cloneNode(false);
  pre.textContent = 'x'.repeat(76);
  host.appendChild(pre);
  const result = [pre.scrollWidth, pre.clientWidth];
  pre.remove();
  return result;
}"""

# Every text of a widget's drawing: its size on screen (font size times the SVG's scale).
WIDGET_TEXT = """() => [...document.querySelectorAll('.attn-live svg text')]
  .filter(t => t.getClientRects().length > 0 && t.textContent.trim())
  .map(t => {
    const m = t.getScreenCTM();
    const scale = m ? Math.sqrt(m.a * m.a + m.b * m.b) : 1;
    const root = t.closest('.attn-live');
    return [[...root.classList].find(c => c.startsWith('attn-') && !['attn-w', 'attn-live'].includes(c)) || '',
            t.textContent.trim().slice(0, 20), parseFloat(getComputedStyle(t).fontSize) * scale];
  })"""

# Each control row and each control of each widget lies inside the widget's box.
WIDGET_CONTROLS = """() => {
  const out = [];
  for (const w of document.querySelectorAll('.attn-live')) {
    const box = w.querySelector('.attn-root').getBoundingClientRect();
    for (const el of w.querySelectorAll('.attn-control, .attn-control > *')) {
      const r = el.getBoundingClientRect();
      if (r.width && (r.left < box.left - 1 || r.right > box.right + 1))
        out.push(`${[...w.classList].join('.')}: ${el.tagName.toLowerCase()} ${Math.round(r.left)}..${Math.round(r.right)} outside ${Math.round(box.left)}..${Math.round(box.right)}`);
    }
  }
  return out;
}"""


@pytest.fixture(scope="module")
def phone(browser):
    context = browser.new_context(viewport=PHONE, device_scale_factor=1, is_mobile=True, has_touch=True)
    yield context
    context.close()


@pytest.fixture(scope="module")
def desktop(browser):
    context = browser.new_context(viewport=DESKTOP)
    yield context
    context.close()


def open_page(context, site_url, page_path, mode):
    guard = harness.GuardedPage.open(context)
    guard.goto(site_url + page_path)
    page = guard.page
    page.evaluate(SET_MODE, mode)
    if "widget-state" in (harness.HTML / page_path).read_text(encoding="utf-8"):
        page.wait_for_function("document.documentElement.dataset.attnWidgets === 'ready'", timeout=15000)
    page.evaluate("document.fonts.ready.then(() => true)")
    return guard


def in_each_mode(guard):
    """Yield each colour mode in turn on the loaded page (one load serves both)."""
    for mode in MODES:
        guard.page.evaluate(SET_MODE, mode)
        guard.page.evaluate("document.fonts.ready.then(() => true)")
        yield mode


@pytest.mark.parametrize("page_path", PAGES)
def test_phone_no_page_scrolls_sideways_and_code_scrolls_in_its_own_box(phone, site_url, page_path):
    guard = open_page(phone, site_url, page_path, MODES[0])
    page = guard.page
    try:
        for mode in in_each_mode(guard):
            widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth, window.innerWidth]")
            assert widths[0] == widths[1] == PHONE["width"], (
                f"{page_path} ({mode}) is {widths[0]} px wide on a {PHONE['width']} px screen; too wide: {page.evaluate(WIDE_THINGS)}")
            for where, kind, scroll, client, overflow, line in page.evaluate(CODE_BOXES):
                if scroll > client + 1:
                    assert overflow in ("auto", "scroll"), f"{page_path} ({mode}): {kind} in {where} is cut off, not scrollable"
        guard.assert_clean()
    finally:
        page.close()


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("page_path", WIDGET_PAGES)
def test_phone_explorer_controls_wrap_and_drawing_text_stays_legible(phone, site_url, page_path, mode):
    guard = open_page(phone, site_url, page_path, mode)
    page = guard.page
    try:
        assert page.locator(".attn-live").count() > 0, f"{page_path}: no explorer rendered"
        outside = page.evaluate(WIDGET_CONTROLS)
        assert not outside, f"{page_path} at {PHONE['width']} px, controls outside their explorer:\n  " + "\n  ".join(outside)
        small = [f"{kind} '{text}' {size:.1f} px" for kind, text, size in page.evaluate(WIDGET_TEXT) if size < 10 - 0.05]
        assert not small, (f"{page_path} at {PHONE['width']} px: text drawn smaller than 10 px "
                           f"({len(small)}):\n  " + "\n  ".join(small[:12]))
        guard.assert_clean()
    finally:
        page.close()


@pytest.mark.parametrize("page_path", PAGES)
def test_desktop_no_code_cell_or_output_is_wider_than_its_column(desktop, site_url, page_path):
    guard = open_page(desktop, site_url, page_path, MODES[0])
    page = guard.page
    try:
        for mode in in_each_mode(guard):
            fit = page.evaluate(SEVENTY_SIX)
            if fit is not None:
                assert fit[0] <= fit[1], f"{page_path} ({mode}): a 76-character line needs {fit[0]} px, the column gives {fit[1]} px"
            wide = [f"{kind} in {where}: {scroll} px in {client} px: {line!r}"
                    for where, kind, scroll, client, overflow, line in page.evaluate(CODE_BOXES) if scroll > client + 1]
            assert not wide, (f"{page_path} ({mode}) at {DESKTOP['width']} px, {len(wide)} box(es) wider than the column:\n  "
                              + "\n  ".join(wide))
            assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth"), mode
        guard.assert_clean()
    finally:
        page.close()


# In the article: visible boxes with a light background (relative luminance above 0.5) that
# show nothing (no text, no image, no drawing): [what, height, background].
EMPTY_LIGHT_BOXES = """() => {
  const lum = (c) => {
    const m = c.match(/rgba?\\(([\\d.]+), ([\\d.]+), ([\\d.]+)(?:, ([\\d.]+))?\\)/);
    if (!m || (m[4] !== undefined && Number(m[4]) < 0.5)) return 0;
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(+m[1]) + 0.7152 * f(+m[2]) + 0.0722 * f(+m[3]);
  };
  const shows = (el) => el.innerText.trim() !== '' ||
    [...el.querySelectorAll('img, svg, canvas')].some(x => x.getClientRects().length > 0);
  const out = [];
  for (const el of document.querySelectorAll('article.bd-article *')) {
    const r = el.getBoundingClientRect();
    if (r.height < 3 || r.width < 3 || ['IMG', 'svg', 'INPUT'].includes(el.tagName)) continue;
    const bg = getComputedStyle(el).backgroundColor;
    if (lum(bg) > 0.5 && !shows(el))
      out.push(`${el.tagName.toLowerCase()}.${[...el.classList].join('.')} ${Math.round(r.height)} px ${bg}`);
  }
  return out;
}"""

CAPTIONS = """() => {
  const text = getComputedStyle(document.querySelector('article.bd-article section > p')).color;
  return [...document.querySelectorAll('article.bd-article figcaption')].map(c => {
    const s = getComputedStyle(c.querySelector('.caption-text') || c);
    return [c.innerText.slice(0, 40), s.color, Number(s.fontWeight), text];
  });
}"""


@pytest.mark.parametrize("page_path", WIDGET_PAGES)
def test_dark_mode_draws_no_empty_light_box_under_an_explorer(phone, desktop, site_url, page_path):
    # Each explorer's static figure has an output of its own; once the live explorer replaced
    # it, the theme's dark-mode background for HTML outputs drew it as an empty light bar.
    for context in (phone, desktop):
        guard = open_page(context, site_url, page_path, "dark")
        page = guard.page
        try:
            assert page.locator(".attn-fallback.attn-replaced").count() > 0
            empty = page.evaluate(EMPTY_LIGHT_BOXES)
            assert not empty, f"{page_path}, dark: empty light boxes:\n  " + "\n  ".join(empty[:8])
            hidden = page.evaluate("""() => [...document.querySelectorAll('.attn-fallback.attn-replaced')]
                .map(f => f.closest('.output').getClientRects().length)""")
            assert hidden and not any(hidden), "an empty output of a replaced figure still takes room"
            guard.assert_clean()
        finally:
            page.close()


@pytest.mark.parametrize("page_path", [p for p in PAGES if BUILT and "<figcaption" in (harness.HTML / p).read_text(encoding="utf-8")])
def test_captions_are_set_in_the_texts_own_colour_and_weight(desktop, site_url, page_path):
    # The theme's captions (muted colour, weight 300) looked faded next to the text.
    guard = open_page(desktop, site_url, page_path, "light")
    page = guard.page
    try:
        for mode in in_each_mode(guard):
            for caption, colour, weight, text in page.evaluate(CAPTIONS):
                assert colour == text and weight >= 400, f"{page_path} ({mode}): {caption!r} is {colour} at {weight}"
        guard.assert_clean()
    finally:
        page.close()


# Each control of each explorer: [explorer, control, type, left, right, width, height, steps,
# label top, output top, input top, explorer content width].
EXPLORER_CONTROLS = """() => [...document.querySelectorAll('.attn-live')].flatMap(w => {
  const root = w.querySelector('.attn-root');
  const cs = getComputedStyle(root);
  const content = root.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  const kind = [...w.classList].find(c => c.startsWith('attn-') && !['attn-w', 'attn-live', 'attn-widget-host'].includes(c));
  return [...w.querySelectorAll('.attn-control')].map(row => {
    const input = row.querySelector('input'), b = input.getBoundingClientRect();
    const top = (sel) => { const e = row.querySelector(sel); return e ? e.getBoundingClientRect().top : null; };
    return [kind, input.dataset.control, input.type, b.left, b.right, b.width, b.height,
            input.type === 'range' ? Number(input.max) - Number(input.min) : 0,
            top('label'), top('output'), b.top, content];
  });
})"""


@pytest.mark.parametrize("page_path", WIDGET_PAGES)
def test_phone_explorer_controls_are_finger_sized_and_wrap_evenly(phone, site_url, page_path):
    # 390 px: each control a row of its own, label and value on one line, the slider across
    # the explorer below them; every target at least 24 px; a slider step at least 4 px (the
    # full width: 4.1 px for the 80 steps of a score, 6.3 for the 52 of tau; it was 2).
    guard = open_page(phone, site_url, page_path, "light")
    page = guard.page
    try:
        controls = page.evaluate(EXPLORER_CONTROLS)
        assert controls
        for kind, name, kind_of_input, left, right, width, height, steps, label, output, top, content in controls:
            what = f"{page_path} {kind} {name}"
            assert width >= 24 and height >= 24, f"{what}: a {width:.0f} x {height:.0f} px target"
            if kind_of_input == "range":
                assert width >= 0.95 * content, f"{what}: the slider is {width:.0f} of {content:.0f} px"
                assert width / steps >= 4, f"{what}: {width / steps:.1f} px per step"  # was 2
                assert abs(label - output) < 12 and top > label + 8, f"{what}: label, value and slider out of line"
        sliders = [(kind, left, right) for kind, _, t, left, right, *_ in controls if t == "range"]
        for kind in {k for k, *_ in sliders}:
            edges = {(round(left), round(right)) for k, left, right in sliders if k == kind}
            assert len(edges) == 1, f"{page_path} {kind}: sliders do not line up: {edges}"
        guard.assert_clean()
    finally:
        page.close()


# Whether each control of the explorer at index i shows at its centre, not covered.
CONTROLS_SHOWN = """(i) => {
  const w = document.querySelectorAll('.attn-live')[i];
  return [...w.querySelectorAll('.attn-control input')].every(input => {
    const b = input.getBoundingClientRect();
    if (b.top < 0 || b.bottom > innerHeight) return false;
    const hit = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2);
    return hit !== null && (hit === input || input.closest('.attn-control').contains(hit));
  });
}"""

# Scroll so that a point (page y) of explorer i sits at the screen's height frac; whether that
# point is then uncovered: [shown, y on screen].
POINT_SHOWN = """([i, selector, k, offset, frac]) => {
  const w = document.querySelectorAll('.attn-live')[i];
  const el = w.querySelectorAll(selector)[k];
  const b = el.getBoundingClientRect();
  // offset < 0: the box's middle (a readout's top edge may touch its label's box)
  const y = b.top + scrollY + (offset < 0 ? b.height / 2 : Math.min(offset, b.height - 2));
  window.scrollTo(0, y - innerHeight * frac);
  const r = el.getBoundingClientRect(), at = y - scrollY;
  const hit = document.elementFromPoint(r.left + Math.min(r.width / 2, 40), at);
  return [hit !== null && (hit === el || el.contains(hit)), at];
}"""


@pytest.mark.parametrize("page_path", WIDGET_PAGES)
def test_phone_explorer_controls_stay_in_view_with_the_drawing_and_readouts_they_change(phone, site_url, page_path):
    # 390 x 844: explorers are taller than the screen; scrolled to any part of its drawing or
    # to any readout, the explorer's controls are on screen too, uncovered, and so is that part.
    guard = open_page(phone, site_url, page_path, "light")
    page = guard.page
    try:
        n = page.locator(".attn-live").count()
        assert n
        for i in range(n):
            drawing = page.evaluate(f"document.querySelectorAll('.attn-live')[{i}].querySelector('svg').getBoundingClientRect().height")
            targets = [("svg", 0, y) for y in range(0, int(drawing), 120)]
            targets += [("dd", k, -1) for k in range(page.locator(".attn-live").nth(i).locator("dd").count())]
            for selector, k, offset in targets:
                shown, at = page.evaluate(POINT_SHOWN, [i, selector, k, offset, 0.7])
                page.wait_for_timeout(30)
                assert shown, f"{page_path} explorer {i}: {selector} {k} at +{offset} px is covered (y = {at:.0f})"
                assert page.evaluate(CONTROLS_SHOWN, i), \
                    f"{page_path} explorer {i}: with {selector} {k} (+{offset} px) on screen its controls are not"
        guard.assert_clean()
    finally:
        page.close()
