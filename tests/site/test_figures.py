"""Figure text a reader can read: at least 9 CSS px on a phone (390 px) and 10 on a laptop
(1280 px), either as the figure is drawn in the text or at its own size, at which a figure
drawn smaller opens on a tap, a click or its "Full size" button
(``site/static/book-figure-zoom.js``).

The figures (matplotlib's, and the static diagrams of ``figures/``) are SVG files with their
text drawn as paths: each text is a group whose glyphs are scaled by s (a size of 100 s
points), and the SVG's own size is given in points, 4/3 CSS px each. Drawn at width w CSS px,
a text of p points is p * w / (the SVG's width in points) px tall. The subscripts and
superscripts of a formula are set at 70% of its size by design: the size measured is the
text's, not theirs.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from tests import harness

BUILT = (harness.HTML / "index.html").exists()
PAGES = [p for p in (harness.book_pages() if BUILT else []) if p.startswith("chapters/")]
MIN_PX = {390: 9.0, 1280: 10.0}
IMAGES = "article.bd-article figure img, article.bd-article .cell_output img"
TEXT_GROUP = re.compile(r'<g id="text_\d+">')
GLYPH_SCALE = re.compile(r'scale\(([\d.]+) -[\d.]+\)')


@lru_cache(maxsize=None)
def svg_text_sizes(path: Path) -> tuple[float, tuple[float, ...]]:
    """The SVG's width in points and the size in points of each of its texts."""
    text = path.read_text(encoding="utf-8")
    width = float(re.search(r'<svg[^>]*\bwidth="([\d.]+)pt"', text).group(1))
    sizes = []
    for group in TEXT_GROUP.split(text)[1:]:
        scale = GLYPH_SCALE.search(group[:600])
        if scale:
            sizes.append(float(scale.group(1)) * 100)
    return width, tuple(sizes)


def page_images(page_path: str) -> list[Path]:
    soup = BeautifulSoup((harness.HTML / page_path).read_text(encoding="utf-8"), "html.parser")
    out = []
    for img in soup.select(IMAGES):
        if img.find_parent(class_="attn-fallback"):
            continue  # an explorer's static figure: the live explorer replaces it
        out.append(((harness.HTML / page_path).parent / img["src"]).resolve())
    return out


def test_the_book_has_figures_to_measure():
    assert sum(len(page_images(p)) for p in PAGES) >= 15


@pytest.mark.parametrize("page_path", PAGES)
def test_every_figure_is_an_svg_whose_text_at_its_own_size_is_at_least_10_px(page_path):
    for path in page_images(page_path):
        assert path.suffix == ".svg", f"{page_path}: {path.name} is not an SVG (its text cannot be measured)"
        width, sizes = svg_text_sizes(path)
        assert sizes, f"{page_path}: {path.name} has no text this test can find"
        assert min(sizes) * 4 / 3 >= MIN_PX[1280], \
            f"{page_path}: {path.name}: a {min(sizes):g} pt text is {min(sizes) * 4 / 3:.1f} px at full size"


# Each figure image: [src, drawn width, natural width, zoomable, its button shown].
DRAWN = f"""() => [...document.querySelectorAll('{IMAGES}')]
  .filter(i => !i.closest('.attn-fallback') && i.getClientRects().length > 0)
  .map((i, k) => {{
    i.dataset.figureTest = String(k);
    const b = i.nextElementSibling;
    return [i.getAttribute('src'), i.getBoundingClientRect().width, i.naturalWidth,
            i.classList.contains('book-zoomable'),
            !!b && b.classList.contains('book-zoom-open') && b.getClientRects().length > 0];
  }})"""


@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("page_path", [p for p in PAGES if page_images(p)])
def test_figure_text_is_legible_as_drawn_or_at_full_size_on_a_tap(browser, site_url, page_path, width):
    phone = width < 600
    context = browser.new_context(viewport={"width": width, "height": 844 if phone else 800},
                                  is_mobile=phone, has_touch=phone)
    guard = harness.GuardedPage.open(context)
    try:
        page = guard.page
        guard.goto(site_url + page_path)
        page.wait_for_function("() => [...document.images].every(i => i.complete)")
        page.wait_for_timeout(100)
        drawn = page.evaluate(DRAWN)
        assert len(drawn) == len(page_images(page_path))
        for k, (src, shown, natural, zoomable, button) in enumerate(drawn):
            svg_width, sizes = svg_text_sizes(((harness.HTML / page_path).parent / src).resolve())
            as_drawn = min(sizes) * shown / svg_width
            assert natural == pytest.approx(svg_width * 4 / 3, abs=1)
            if as_drawn >= MIN_PX[width]:
                continue
            # Too small as drawn: a tap (a click) and the button open it at its own size.
            what = f"{page_path} at {width} px: {src} ({as_drawn:.1f} px as drawn)"
            assert zoomable and button, f"{what} does not open at full size"
            image = page.locator(f'img[data-figure-test="{k}"]')
            image.scroll_into_view_if_needed()
            image.tap() if phone else image.click()
            page.wait_for_function("document.querySelector('dialog.book-zoom').open")
            big = page.evaluate("document.querySelector('dialog.book-zoom img').getBoundingClientRect().width")
            assert min(sizes) * big / svg_width >= MIN_PX[width], f"{what}: {big:.0f} px wide when opened"
            page.keyboard.press("Escape")
            page.wait_for_function("!document.querySelector('dialog.book-zoom').open")
            # The button opens it too (the keyboard's way), and focus comes back to it.
            opener = image.locator("xpath=following-sibling::button[1]")
            opener.focus()
            page.keyboard.press("Enter")
            page.wait_for_function("document.querySelector('dialog.book-zoom').open")
            page.keyboard.press("Escape")
            page.wait_for_function("!document.querySelector('dialog.book-zoom').open")
            assert opener.evaluate("b => b === document.activeElement")
        guard.assert_clean()
    finally:
        context.close()
