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
