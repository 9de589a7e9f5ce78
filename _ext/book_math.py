"""Math: every formula rendered at build time by KaTeX, strictly, with no script on the page.

* Points sphinxcontrib-katex's build-time renderer at the pinned npm ``katex``
  (``node_modules/katex``, installed by ``npm ci`` from package-lock.json).
* Turns any formula KaTeX cannot render into a build warning (an error under ``-W``): the
  renderer itself would only colour the TeX red (book_patches.py, with the start-up fix).
* Keeps KaTeX's stylesheets off pages that have no math.
* Publishes KaTeX's stylesheet and fonts at ``vendor/katex/`` (where ``katex_css_path`` in
  ``_config.yml`` points). As the math is rendered at build time, the build knows every
  character a formula shows: each face KaTeX's stylesheet declares is cut down to those
  characters (fontTools, from the font's ttf; written as woff, since fontTools writes woff2
  only with brotli). A face that has none of them is neither published nor declared; the
  browser fetches a published face only where a formula draws text in it.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

KATEX_DIST = Path("node_modules", "katex", "dist")
KATEX_CSS = ("katex.min.css", "katex-math.css")
VENDOR = Path("vendor", "katex")  # in the built site


def _use_vendored_katex(app, config):
    """Render math with the npm katex of package-lock.json, not the extension's own copy."""
    if not getattr(config, "katex_prerender", False):
        return
    katex_js = Path(app.srcdir, KATEX_DIST, "katex.min.js").resolve()
    if not katex_js.exists():
        from sphinx.errors import ConfigError

        raise ConfigError(f"{katex_js} is missing: run `npm ci` (make assets) first")
    config.katex_js_path = str(katex_js)
    import sphinxcontrib.katex

    import book_patches

    book_patches.patch_katex(sphinxcontrib.katex, app)


def _katex_css_only_with_math(app, pagename, templatename, context, doctree):
    """Pages without math do not load KaTeX's stylesheets (nor, so, its fonts)."""
    if 'class="katex"' in (context.get("body") or ""):
        return
    if "css_files" in context:
        context["css_files"] = [c for c in context["css_files"]
                                if not str(getattr(c, "filename", c)).endswith(KATEX_CSS)]


FONT_FACE = re.compile(r"@font-face\{[^}]*\}")
_SPAN = re.compile(r"<(/?)span\b")
# A formula's MathML (for assistive technology, set in the browser's own math font) and
# its TeX annotation: no KaTeX face draws them.
MATHML = re.compile(r'<span class="katex-mathml">.*?</math></span>', re.S)
TAG = re.compile(r"<[^>]*>")


def _formulas(html: str):
    """Each formula's markup, ``<span class="katex">`` to its closing tag."""
    start = html.find('<span class="katex">')
    while start != -1:
        depth = 0
        for tag in _SPAN.finditer(html, start):
            depth += -1 if tag.group(1) else 1
            if depth == 0:
                end = html.index(">", tag.end()) + 1
                yield html[start:end]
                break
        else:
            yield html[start:]  # unclosed: what there is
            return
        start = html.find('<span class="katex">', end)


def math_characters(outdir: Path) -> set[int]:
    """Every character the built pages' formulas show (KaTeX's HTML, not its MathML)."""
    import html

    chars: set[int] = set()
    for page in sorted(outdir.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        for formula in _formulas(text):
            shown = html.unescape(TAG.sub("", MATHML.sub("", formula)))
            chars.update(map(ord, shown))
    return chars


def _subset(source: Path, target: Path, chars: set[int]) -> bool:
    """``source`` cut down to ``chars`` as ``target`` (woff); False if it has none."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(source, recalcTimestamp=False)  # the same bytes from every build
    present = chars & set(font.getBestCmap())
    if not present:
        return False
    options = subset.Options()
    options.flavor = "woff"
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    options.notdef_outline = True
    options.hinting = False  # screens of today render KaTeX's outlines unhinted anyway
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(present))
    subsetter.subset(font)
    font.flavor = "woff"
    font.save(target, reorderTables=True)
    return True


def _publish_katex(app, exception):
    """KaTeX's stylesheet and fonts, each face cut to the characters the site's math shows."""
    if exception is not None or app.builder.format != "html":
        return
    dist = Path(app.srcdir, KATEX_DIST)
    target = Path(app.outdir, VENDOR)
    if target.exists():
        shutil.rmtree(target)
    (target / "fonts").mkdir(parents=True)
    css = (dist / "katex.min.css").read_text(encoding="utf-8")
    chars = math_characters(Path(app.outdir))

    def face(match: re.Match) -> str:
        rule = match.group(0)
        name = re.search(r"fonts/(KaTeX_[A-Za-z0-9-]+)\.woff2", rule)
        if name is None:
            return rule
        name = name.group(1)
        woff = target / "fonts" / f"{name}.woff"
        if not _subset(dist / "fonts" / f"{name}.ttf", woff, chars):
            return ""  # the face has no character of the math: no file, no @font-face
        return re.sub(r"src:[^;}]*", f'src:url(fonts/{name}.woff) format("woff")', rule)

    (target / "katex.min.css").write_text(FONT_FACE.sub(face, css), encoding="utf-8")


def setup(app):
    app.connect("config-inited", _use_vendored_katex)
    app.connect("html-page-context", _katex_css_only_with_math, priority=900)
    app.connect("build-finished", _publish_katex)
