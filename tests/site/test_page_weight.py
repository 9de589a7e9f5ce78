"""Clean, light pages: every page loads with no console error, failed request or request
outside its origin, and weighs at most 400 KB gzipped; each KaTeX face a formula is drawn in
is published with every glyph drawn in it, and every @font-face the KaTeX stylesheet keeps
names a published font; the theme's icons are still drawn and still inside named controls
without its icon script.

One cold load of each page serves both the clean-load and the weight checks.

Bytes are counted as ``make bench`` counts them (benchmarks/bench_pages.py): every file the
page fetched in Chromium, text gzipped as a static host sends it. A file no page fetches
costs a reader nothing, and is not counted.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests import harness

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_pages  # noqa: E402

BUILT = (harness.HTML / "index.html").exists()
PAGES = harness.book_pages() if BUILT else ["index.html"]


@pytest.fixture(scope="module")
def loads(browser, site_url):
    """Each page loaded once, cold: (what it fetched and painted, the problems it reported)."""
    return {p: bench_pages.load(browser, site_url, p) for p in PAGES}


@pytest.fixture(scope="module")
def weights(loads, site_url, built_html):
    return {p: bench_pages.page_weight(built_html, site_url, measured["urls"]) for p, (measured, _) in loads.items()}


@pytest.mark.parametrize("page_path", PAGES)
def test_page_loads_clean_with_no_request_outside_the_origin(loads, page_path):
    # Console errors, page errors, failed requests, HTTP errors and every request outside the
    # origin (aborted) are recorded during the load, fonts and late scripts included.
    problems = loads[page_path][1]
    assert not problems, f"{page_path}:\n" + "\n".join(problems)


@pytest.mark.parametrize("page_path", PAGES)
def test_every_page_is_at_most_400_kb_gzipped(weights, page_path):
    w = weights[page_path]
    largest = sorted(w["files"].items(), key=lambda kv: -kv[1][1])[:5]
    assert w["gzip"] <= bench_pages.WEIGHT_GOAL, (
        f"{page_path}: {w['gzip']:,} B gzipped ({w['raw']:,} B raw); largest: "
        + ", ".join(f"{n} {g:,}" for n, (_, g) in largest))
    assert not any("fontawesome.js" in name for name in w["files"])


def test_the_test_tool_axe_core_is_not_published(built_html):
    assert not list(built_html.rglob("axe*.js")), "the test tool axe-core is published"


ICONS = """() => [...document.querySelectorAll('[class*="fa-"]')]
  .filter(i => /\\bfa-(solid|regular|brands)\\b|\\bfa[srb]?\\b/.test(i.className) && i.getClientRects().length > 0)
  .map(i => {
    const control = i.closest('a, button, label, summary');
    const name = control ? (control.getAttribute('aria-label') || control.getAttribute('title') ||
                            control.textContent.trim()) : '';
    const glyph = getComputedStyle(i, '::before').content;
    return {cls: i.className, hidden: i.getAttribute('aria-hidden'), control: !!control, name,
            glyph, width: i.getBoundingClientRect().width};
  })"""


@pytest.mark.parametrize("page_path", ["chapters/index.html", "chapters/saturation.html"])
def test_icons_are_drawn_from_the_subset_font_and_every_control_keeps_its_name(guarded_page, site_url, page_path):
    guarded_page.goto(site_url + page_path)
    page = guarded_page.page
    page.evaluate("document.fonts.ready.then(() => true)")
    icons = page.evaluate(ICONS)
    assert icons, "no icon found"
    for icon in icons:
        assert icon["hidden"] == "true", f"{icon['cls']}: an icon is decoration, hidden from assistive technology"
        assert icon["glyph"] not in ("none", "normal", '""'), f"{icon['cls']}: no glyph"
        assert icon["width"] > 4, f"{icon['cls']}: drawn {icon['width']} px wide"
        if icon["control"]:
            assert icon["name"], f"{icon['cls']}: its control has no accessible name"
    loaded = page.evaluate("""() => [...document.fonts].filter(f => f.family.includes('Font Awesome'))
                                    .map(f => [f.family, f.weight, f.status])""")
    assert any(status == "loaded" for *_, status in loaded), loaded
    fonts = [u for u in page.evaluate("performance.getEntriesByType('resource').map(e => e.name)") if "webfonts" in u]
    assert fonts and all(u.endswith(".subset.woff") for u in fonts), fonts
    guarded_page.assert_clean()


def test_the_subset_fonts_hold_every_glyph_the_site_asks_for(built_html):
    from fontTools.ttLib import TTFont

    css = (built_html / "_static" / "styles" / "pydata-sphinx-theme.css").read_text(encoding="utf-8")
    wanted = {ord(c) for c in css if 0xE000 <= ord(c) < 0xF900}
    wanted |= {int(h, 16) for h in re.findall(r"\\([0-9a-fA-F]{4,5})", css) if 0xE000 <= int(h, 16) < 0xF900}
    fonts = list((built_html / "_static" / "vendor" / "fontawesome" / "webfonts").glob("*.subset.woff"))
    assert fonts
    have = set()
    for font in fonts:
        have |= set(TTFont(font).getBestCmap())
    assert wanted <= have, f"glyphs missing from the subset fonts: {sorted(hex(c) for c in wanted - have)}"


# --- KaTeX's faces: the ones formulas are drawn in, with their glyphs, and no other --------
KATEX = ROOT / "node_modules" / "katex" / "dist"
DRAWN = """() => {
  const out = {};
  for (const element of document.querySelectorAll('.katex-html, .katex-html *')) {
    const text = [...element.childNodes].filter(n => n.nodeType === 3).map(n => n.data).join('');
    if (!text) continue;
    const style = getComputedStyle(element);
    const key = [style.fontFamily.split(',')[0].trim().replace(/["']/g, ''), style.fontWeight,
                 style.fontStyle].join('|');
    out[key] = (out[key] || '') + text;
  }
  return out;
}"""


def _faces(css: str) -> dict[str, list[tuple[int, str, str]]]:
    """family -> [(weight, style, file stem)] of a KaTeX stylesheet's @font-face rules."""
    faces = {}
    for rule in re.findall(r"@font-face\{[^}]*\}", css):
        family = re.search(r"font-family:([^;}]+)", rule).group(1).strip()
        weight = int(re.search(r"font-weight:(\d+)", rule).group(1))
        style = re.search(r"font-style:([^;}]+)", rule).group(1).strip()
        faces.setdefault(family, []).append((weight, style, re.search(r"fonts/(KaTeX_[\w-]+)\.", rule).group(1)))
    return faces


def _face(faces, weight: int, style: str) -> str:
    """The face a browser picks: the wanted style if the family has it, then the nearest weight
    (heavier first for bold, lighter first otherwise)."""
    same = [f for f in faces if f[1] == style] or faces
    return min(same, key=lambda f: (abs(f[0] - weight), -f[0] if weight > 500 else f[0]))[2]


@pytest.fixture(scope="module")
def drawn_faces(browser, site_url):
    """KaTeX face (of KaTeX's complete stylesheet) -> the characters the pages draw in it,
    from the computed style of every element of every rendered formula."""
    full = _faces((KATEX / "katex.min.css").read_text(encoding="utf-8"))
    drawn: dict[str, set[str]] = {}
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        for path in PAGES:
            if 'class="katex"' not in (harness.HTML / path).read_text(encoding="utf-8"):
                continue
            page.goto(site_url + path, wait_until="load")
            for key, text in page.evaluate(DRAWN).items():
                family, weight, style = key.split("|")
                if family in full:
                    drawn.setdefault(_face(full[family], int(weight), style), set()).update(text)
    finally:
        context.close()
    return drawn


def test_each_katex_face_a_formula_is_drawn_in_is_published_with_its_glyphs(built_html, drawn_faces):
    from fontTools.ttLib import TTFont

    css = (built_html / "vendor" / "katex" / "katex.min.css").read_text(encoding="utf-8")
    published = {stem for faces in _faces(css).values() for *_, stem in faces}
    assert drawn_faces, "no formula found"
    missing = sorted(set(drawn_faces) - published)
    assert not missing, f"faces formulas are drawn in but not published (the browser would fake them): {missing}"
    for rule in re.findall(r"@font-face\{[^}]*\}", css):  # each a valid rule, its font there
        urls = re.findall(r"url\(([^)]+)\)", rule)
        assert len(urls) == 1 and urls[0].endswith(".woff") and 'format("woff")' in rule, rule
        assert (built_html / "vendor" / "katex" / urls[0]).is_file(), f"{urls[0]} is not published"
    for stem, chars in sorted(drawn_faces.items()):
        font = built_html / "vendor" / "katex" / "fonts" / f"{stem}.woff"
        have = set(TTFont(font).getBestCmap())
        full = set(TTFont(KATEX / "fonts" / f"{stem}.ttf").getBestCmap())
        lost = sorted(chr(c) for c in {ord(ch) for ch in chars} & full - have)
        assert not lost, f"{stem}: glyphs drawn on the pages but cut from the published font: {lost}"
