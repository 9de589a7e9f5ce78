"""Math in the browser: rendered at build time in the vendored KaTeX fonts, no TeX left raw, and
every display equation inside the text column. (Clean page loads: ``test_page_weight.py``.)"""

import re

import pytest
from bs4 import BeautifulSoup

from tests import harness

PAGES = harness.book_pages() if (harness.HTML / "index.html").exists() else ["index.html"]


def test_math_is_rendered_at_build_time_with_the_vendored_katex_fonts(guarded_page, site_url):
    guarded_page.goto(site_url + "chapters/index.html")
    page = guarded_page.page
    assert page.locator(".katex .katex-html").count() > 0
    assert page.evaluate("window.katex === undefined && window.MathJax === undefined")  # no math script
    assert page.evaluate("document.fonts.ready.then(() => true)")
    assert page.evaluate("document.fonts.check('1em KaTeX_Main') && document.fonts.check('italic 1em KaTeX_Math')")
    fonts = [u for u in page.evaluate("performance.getEntriesByType('resource').map(e => e.name)") if "/fonts/KaTeX_" in u]
    assert fonts and all(u.startswith(site_url + "vendor/katex/fonts/") for u in fonts), fonts
    guarded_page.assert_clean()


# TeX left in the text a reader sees (outside code): $...$, $$, \( \[ or a \command.
RAW_TEX = re.compile(r"\$\$|\$[^$\s][^$]*?\$|\\[()\[\]]|\\[A-Za-z]+")


@pytest.mark.parametrize("page_path", PAGES)
def test_every_formula_is_rendered_and_no_tex_is_left_raw(built_html, page_path):
    soup = BeautifulSoup((built_html / page_path).read_text(encoding="utf-8"), "html.parser")
    errors = [e.get("title", "") for e in soup.select(".katex-error")]
    assert not errors, f"{page_path}: KaTeX could not render: {errors}"
    for element in soup.select(".katex, pre, code, script, style, .cell_input, .highlight"):
        element.decompose()
    raw = sorted({m.group(0) for m in RAW_TEX.finditer(soup.get_text())})
    assert not raw, f"{page_path}: TeX left unrendered: {raw}"


@pytest.mark.parametrize("page_path", [p for p in PAGES if p.startswith("chapters/")])
def test_every_display_equation_fits_the_text_column_on_a_desktop_screen(guarded_page, site_url, page_path):
    # An equation wider than the column has to be scrolled sideways (and, in a reversed flex
    # row, used to spill out of the left edge): break it over lines instead.
    guarded_page.goto(site_url + page_path)
    too_wide = guarded_page.page.evaluate("""() => [...document.querySelectorAll('div.math')]
        .map(d => [d.id, d.querySelector('.katex-html'), d])
        .filter(([, h, d]) => (h && h.scrollWidth > h.clientWidth + 1) || d.scrollWidth > d.clientWidth + 1)
        .map(([id, h]) => `${id}: ${h.scrollWidth}px of content in ${h.clientWidth}px`)""")
    assert not too_wide, f"{page_path}: display equations wider than the column: {too_wide}"


# Every display equation at 390 px: [id or text, content width, box width, data-scroll,
# box-shadow, overflow-x, the box's right edge, the column's right edge].
PHONE_EQUATIONS = """() => [...document.querySelectorAll('article div.math')].map(d => {
  const box = d.querySelector('.katex-display > .katex > .katex-html');
  const column = d.closest('section, article').getBoundingClientRect();
  const s = getComputedStyle(box);
  return [d.id || box.textContent.slice(0, 30), box.scrollWidth, box.clientWidth, box.dataset.scroll || '',
          s.boxShadow, s.overflowX, box.getBoundingClientRect().right, column.right];
})"""


@pytest.mark.parametrize("mode", ["light", "dark"])
@pytest.mark.parametrize("page_path", [p for p in PAGES if p.startswith("chapters/")])
def test_on_a_phone_every_display_equation_fits_or_shows_that_it_scrolls(browser, site_url, page_path, mode):
    # 390 px: an equation wider than the column scrolls inside its own box, whose edge shows a
    # shadow where the formula goes on (book-theme-fixes.js, book-site.css); scrolled to its
    # end, the shadow moves to the other edge. No box reaches past the column.
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                  color_scheme=mode)
    guard = harness.GuardedPage.open(context)
    try:
        page = guard.page
        guard.goto(site_url + page_path)
        page.evaluate("(m) => { document.documentElement.dataset.mode = m; document.documentElement.dataset.theme = m; }",
                      mode)
        page.evaluate("document.fonts.ready.then(() => true)")
        wide = 0
        for what, content, width, scroll, shadow, overflow, right, column in page.evaluate(PHONE_EQUATIONS):
            assert right <= column + 1, f"{page_path}: {what} reaches past the column ({right:.0f} > {column:.0f})"
            if content <= width + 1:
                assert scroll == "" and shadow == "none", f"{page_path}: {what} fits but shows a scroll cue"
                continue
            wide += 1
            assert overflow in ("auto", "scroll"), f"{page_path}: {what} is cut off ({content} px in {width})"
            assert scroll == "right" and shadow != "none", f"{page_path}: {what} scrolls with no cue ({scroll!r}, {shadow})"
        if wide:
            boxes = page.locator("article div.math .katex-display > .katex > .katex-html[data-scroll]")
            first = boxes.first
            first.evaluate("b => { b.scrollLeft = b.scrollWidth; }")
            page.wait_for_function("b => b.dataset.scroll === 'left'", arg=first.element_handle())
            assert first.evaluate("b => getComputedStyle(b).boxShadow") != "none"
        guard.assert_clean()
    finally:
        context.close()
