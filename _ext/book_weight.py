"""Light pages: the theme's icons without its 1.5 MB icon script, and only the scripts a page uses.

The theme (pydata-sphinx-theme) ships Font Awesome twice: a script (``fontawesome.js``,
1.5 MB, 540 KB gzipped) that replaces every ``<i class="fa-...">`` by an inline SVG, and the
icon fonts (``fa-solid-900.woff2``, 156 KB, and two more) that its stylesheet uses for the
icons it draws with CSS (admonition titles, the breadcrumb divider). Both sat on every page.
After the build this module:

* removes the script from every page: the stylesheet already draws each ``fa-NAME`` icon
  from the font (its ``.fa-NAME:before`` rules), so the icons stay where they were; the
  icon elements get ``aria-hidden="true"`` (what the script gave its SVGs): they are
  decoration, and every control they sit in has its own name (``aria-label`` or text);
* cuts the icon fonts down to the glyphs the site uses (fontTools, pinned in
  requirements.txt; woff, since fontTools writes woff2 only with brotli) and points the
  stylesheet's ``@font-face`` rules at them; the rules for icons no page uses go, and so
  does a style's font (regular, brands) when nothing draws in that style: no element has
  its class and no stylesheet rule its ``--fa-font-STYLE`` (the browser would never fetch
  it, however many glyphs it shares with the styles in use);
* leaves off each page the scripts and styles it does not use: Sphinx's search index and
  tools except on the search page (the theme's search-as-you-type, which needs them
  everywhere, is off), sphinx-design's except on pages with its components.

Files that no page uses (source maps, the icon script, the theme's translations) stay in
the built folder: a browser never fetches them, so they cost a reader nothing.

``tests/site/test_page_weight.py`` checks the result: every page at most 400 KB gzipped,
every icon still drawn and every control still named.
"""

from __future__ import annotations

import re
from pathlib import Path

FA_SCRIPT = re.compile(r'\s*<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>')
# An element whose class list holds a Font Awesome icon: <i class="fa-solid fa-bars"> etc.
ICON_TAG = re.compile(r'<(i|span)( class="[^"]*\bfa[srb]?\b[^"]*"| class="[^"]*\bfa-(?:solid|regular|brands)\b[^"]*")([^>]*)>')
ICON_NAME = re.compile(r"\bfa-([a-z0-9-]+)")
# Class names that are not icons: styles and sizes of Font Awesome.
FA_MODIFIERS = {"solid", "regular", "brands", "lg", "xs", "sm", "xl", "2x", "3x", "fw", "spin", "pulse",
                "classic", "sharp", "border", "inverse", "stack", "stack-1x", "stack-2x", "li", "ul",
                "rotate-90", "rotate-180", "rotate-270", "flip-horizontal", "flip-vertical", "beat", "fade",
                "bounce", "flip", "shake"}
# Icons the theme's scripts create at run time (the close button of its banners).
SCRIPT_ICONS = {"xmark"}
# A rule that only gives icon classes their glyph: .fa-bars:before,.fa-navicon:before{content:"\f0c9"}
ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+:(?:before|after),?)+)\{content:"([^"]*)"\}')
FONT_FACE = re.compile(r"@font-face\{[^}]*font-family:Font Awesome[^}]*\}")
FONT_URL = re.compile(r"url\(\.\./vendor/fontawesome/webfonts/(fa-[a-z]+-\d+)\.woff2\)")
PRIVATE_USE = range(0xE000, 0xF900)
# Each icon font, the classes that draw in it and the variable a stylesheet rule draws in it with.
FONT_STYLES = {"fa-solid-900": ({"fas", "fa-solid", "fa"}, "--fa-font-solid"),
               "fa-regular-400": ({"far", "fa-regular"}, "--fa-font-regular"),
               "fa-brands-400": ({"fab", "fa-brands"}, "--fa-font-brands")}
CLASS_ATTRIBUTE = re.compile(r'class="([^"]*)"')
CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{4,6})")


def _codepoints(text: str) -> set[int]:
    """Private-use code points (icon glyphs) a CSS text names, literally or as escapes."""
    found = {ord(c) for c in text if ord(c) in PRIVATE_USE}
    found |= {int(h, 16) for h in CSS_ESCAPE.findall(text) if int(h, 16) in PRIVATE_USE}
    return found


def _hide_icon(match: re.Match) -> str:
    tag, cls, rest = match.groups()
    if "aria-hidden" in rest:
        return match.group(0)
    return f'<{tag}{cls}{rest} aria-hidden="true">'


def _pages(outdir: Path) -> list[Path]:
    return sorted(p for p in outdir.rglob("*.html") if "_static" not in p.relative_to(outdir).parts)


def _subset_font(source: Path, target: Path, codepoints: set[int]) -> bool:
    """Write the glyphs of ``codepoints`` that ``source`` has as a woff font; False if none."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(source, recalcTimestamp=False)  # the same bytes from every build
    present = codepoints & set(font.getBestCmap())
    if not present:
        return False
    options = subset.Options()
    options.flavor = "woff"
    options.layout_features = []
    options.name_IDs = ["*"]  # keep the licence and copyright names
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(present))
    subsetter.subset(font)
    font.flavor = "woff"
    target.parent.mkdir(parents=True, exist_ok=True)
    font.save(target, reorderTables=True)
    return True


def _icon_fonts(app, outdir: Path):
    """Remove the icon script, keep the icons: font subsets and the rules for used icons."""
    theme_css = outdir / "_static" / "styles" / "pydata-sphinx-theme.css"
    if not theme_css.exists():
        return
    used = set(SCRIPT_ICONS)
    classes: set[str] = set()  # every class name of every page's elements
    for page in _pages(outdir):
        html = page.read_text(encoding="utf-8")
        for attribute in CLASS_ATTRIBUTE.findall(html):
            classes.update(attribute.split())
        new = ICON_TAG.sub(_hide_icon, FA_SCRIPT.sub("", html))
        for match in ICON_TAG.finditer(new):
            used |= {n for n in ICON_NAME.findall(match.group(2)) if n not in FA_MODIFIERS}
        if new != html:
            page.write_text(new, encoding="utf-8")

    css = theme_css.read_text(encoding="utf-8")

    def keep_used(rule: re.Match) -> str:
        names = re.findall(r"\.fa-([a-z0-9-]+):", rule.group(1))
        return rule.group(0) if used & set(names) else ""

    css = ICON_RULE.sub(keep_used, css)
    # Every icon glyph any stylesheet of the site still asks for.
    codepoints = _codepoints(css)
    stylesheets = css
    for other in (outdir / "_static").rglob("*.css"):
        if other != theme_css:
            text = other.read_text(encoding="utf-8", errors="replace")
            codepoints |= _codepoints(text)
            stylesheets += text

    def drawn_in(name: str) -> bool:
        style_classes, variable = FONT_STYLES.get(name, (set(), ""))
        if not variable:
            return True  # a font this module does not know: keep it as before
        # Solid is also drawn in by rules that name the family at weight 900 (the book theme's).
        return bool(classes & style_classes) or f"var({variable})" in stylesheets or (
            name == "fa-solid-900" and re.search(r"Font Awesome\\? 6 Free[^}]*font-weight:900", stylesheets) is not None)
    import pydata_sphinx_theme

    webfonts = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static" / "vendor" / "fontawesome" / "webfonts"
    target_dir = outdir / "_static" / "vendor" / "fontawesome" / "webfonts"

    def new_face(face: re.Match) -> str:
        url = FONT_URL.search(face.group(0))
        if url is None:
            return face.group(0)
        name = url.group(1)
        subset = target_dir / f"{name}.subset.woff"
        if not drawn_in(name) or not _subset_font(webfonts / f"{name}.ttf", subset, codepoints):
            return ""  # nothing draws in this font or no glyph of it is used: no @font-face, no file
        src = f'src:url(../vendor/fontawesome/webfonts/{name}.subset.woff) format("woff")'
        return re.sub(r"src:[^;}]*", src, face.group(0))

    css = FONT_FACE.sub(new_face, css)
    theme_css.write_text(css, encoding="utf-8")


# --- scripts and styles a page does not use -------------------------------------------------
# pydata-sphinx-theme loads Sphinx's search index and tools on every page for its optional
# search-as-you-type; with that off (the default), the search box sends the reader to
# search.html, which loads them itself.
SEARCH_SCRIPTS = re.compile(
    r'\s*<script src="[^"]*(?:_static/searchtools\.js|_static/language_data\.js|searchindex\.js)"></script>')
DESIGN_FILES = ("sphinx-design.min.css", "design-tabs.js")


def _without_search_scripts(outdir: Path, app):
    if str(app.config.html_theme_options.get("search_as_you_type", False)).lower() == "true":
        return
    for page in _pages(outdir):
        if page.name == "search.html" and page.parent == outdir:
            continue
        html = page.read_text(encoding="utf-8")
        new = SEARCH_SCRIPTS.sub("", html)
        if new != html:
            page.write_text(new, encoding="utf-8")


def _design_only_where_used(app, pagename, templatename, context, doctree):
    """sphinx-design's stylesheet and tab script only on pages that use its components."""
    if 'class="sd-' in (context.get("body") or ""):
        return
    for key in ("css_files", "script_files"):
        if key in context:
            context[key] = [a for a in context[key]
                            if not str(getattr(a, "filename", a) or "").split("?")[0].endswith(DESIGN_FILES)]


def _lighten(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    _icon_fonts(app, outdir)
    _without_search_scripts(outdir, app)


def setup(app):
    app.connect("html-page-context", _design_only_where_used, priority=900)
    # After the other extensions' build-finished work (KaTeX's files, the downloads).
    app.connect("build-finished", _lighten, priority=900)
