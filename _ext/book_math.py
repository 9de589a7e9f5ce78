"""Math: every formula rendered at build time by KaTeX, strictly, with no script on the page.

* Points sphinxcontrib-katex's build-time renderer at the pinned npm ``katex``
  (``node_modules/katex``, installed by ``npm ci`` from package-lock.json).
* Turns any formula KaTeX cannot render into a build warning (an error under ``-W``): the
  renderer itself would only colour the TeX red.
* Keeps KaTeX's stylesheets off pages that have no math.
* Publishes KaTeX's stylesheet and fonts at ``vendor/katex/`` (where ``katex_css_path`` in
  ``_config.yml`` points): the woff2 fonts only, the format every current browser loads, and
  the stylesheet's fallbacks to the woff and ttf copies removed so that it names only files
  the site has.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

KATEX_DIST = Path("node_modules", "katex", "dist")
KATEX_CSS = ("katex.min.css", "katex-math.css")
VENDOR = Path("vendor", "katex")  # in the built site
# ",url(fonts/X.woff) format("woff")" and the same for .ttf: fallbacks no current browser needs.
FALLBACK_FONTS = re.compile(r',\s*url\((?:"|\')?fonts/[^)]+\.(?:woff|ttf)(?:"|\')?\)\s*format\((?:"|\')?(?:woff|truetype)(?:"|\')?\)')


def _use_vendored_katex(app, config):
    """Render math with the npm katex of package-lock.json, not the extension's own copy."""
    if not getattr(config, "katex_prerender", False):
        return
    katex_js = Path(app.srcdir, KATEX_DIST, "katex.min.js").resolve()
    if not katex_js.exists():
        from sphinx.errors import ConfigError

        raise ConfigError(f"{katex_js} is missing: run `npm ci` (make assets) first")
    config.katex_js_path = str(katex_js)
    _strict_katex(app)


def _strict_katex(app):
    """Make every formula KaTeX cannot render a build warning (an error under -W).

    sphinxcontrib-katex renders with ``throwOnError: false``: a parse error or an unknown
    command only comes out red in the page, and TeX that real LaTeX would reject only
    prints a note on node's console. Each formula is rendered strictly first (throwOnError,
    strict "error"); on an error the warning names the page and the TeX, and the page still
    gets the lenient rendering.
    """
    import sphinxcontrib.katex as katex
    from sphinx.util import logging

    # The extension allows node 5 s to start and 5 s per formula: on a loaded machine the
    # start timed out (and left node running). Generous limits cost nothing when all is well.
    katex.STARTUP_TIMEOUT = max(katex.STARTUP_TIMEOUT, 60.0)
    katex.RENDER_TIMEOUT = max(katex.RENDER_TIMEOUT, 60.0)
    lenient = katex.render_latex
    if getattr(lenient, "strict_wrapper", False):
        return
    logger = logging.getLogger(__name__)

    def render_latex(latex, options=None):
        try:
            return lenient(latex, {**(options or {}), "throwOnError": True, "strict": "error"})
        except katex.KaTeXError as error:
            docname = getattr(app.builder, "current_docname", None)
            logger.warning("KaTeX cannot render %r: %s", latex, error,
                           location=docname, type="katex", subtype="error")
            return lenient(latex, options)

    render_latex.strict_wrapper = True
    katex.render_latex = render_latex


def _katex_css_only_with_math(app, pagename, templatename, context, doctree):
    """Pages without math do not load KaTeX's stylesheets (nor, so, its fonts)."""
    if 'class="katex"' in (context.get("body") or ""):
        return
    if "css_files" in context:
        context["css_files"] = [c for c in context["css_files"]
                                if not str(getattr(c, "filename", c)).endswith(KATEX_CSS)]


def _publish_katex(app, exception):
    """Copy KaTeX's stylesheet (woff2 fonts only) and its woff2 fonts into vendor/katex/."""
    if exception is not None or app.builder.format != "html":
        return
    dist = Path(app.srcdir, KATEX_DIST)
    target = Path(app.outdir, VENDOR)
    if target.exists():
        shutil.rmtree(target)
    (target / "fonts").mkdir(parents=True)
    css = FALLBACK_FONTS.sub("", (dist / "katex.min.css").read_text(encoding="utf-8"))
    (target / "katex.min.css").write_text(css, encoding="utf-8")
    for name in sorted(set(re.findall(r"url\((?:\"|')?fonts/([^)\"']+\.woff2)", css))):
        shutil.copyfile(dist / "fonts" / name, target / "fonts" / name)


def setup(app):
    app.connect("config-inited", _use_vendored_katex)
    app.connect("html-page-context", _katex_css_only_with_math, priority=900)
    app.connect("build-finished", _publish_katex)
