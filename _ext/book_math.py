"""Math: every formula rendered at build time by KaTeX, strictly, with no script on the page.

* Points sphinxcontrib-katex's build-time renderer at the pinned npm ``katex``
  (``node_modules/katex``, installed by ``npm ci`` from package-lock.json).
* Turns any formula KaTeX cannot render into a build warning (an error under ``-W``): the
  renderer itself would only colour the TeX red.
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
    _patiently_connect(katex)
    _server_per_process(katex)
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


def _patiently_connect(katex):
    """Retry the connection to the KaTeX server while its socket is not yet listening.

    The extension connects once, as soon as node's socket file exists; but node creates the
    file (bind) a moment before it accepts connections (listen), and on a loaded machine the
    connect in between is refused and the whole build stops (seen in a build that ran while
    other pages executed). This is the extension's own start-up with the connect retried
    until its start-up timeout.
    """
    server = katex.KaTeXServer
    if getattr(server.start_server_process, "patient", False):
        return

    def start_server_process(cls, rundir, timeout):
        import socket
        import subprocess
        import time

        socket_path = Path(rundir) / "katex.sock"
        process = subprocess.Popen(cls.build_command(socket=socket_path), stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, cwd=rundir)
        deadline = time.monotonic() + timeout
        while True:
            if socket_path.is_socket():
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    sock.connect(str(socket_path))
                    return process, sock
                except ConnectionRefusedError:
                    sock.close()
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise cls.timeout_error(timeout)
            time.sleep(0.01)

    start_server_process.patient = True
    server.start_server_process = classmethod(start_server_process)


def _server_per_process(katex):
    """One KaTeX server per process, stopped when that process ends.

    make book builds with parallel processes (_ext/book_build.py), forked from Sphinx's
    main process. The extension keeps one server per class: a worker forked after the main
    process had started it would talk to it over the same socket as its sibling workers, and
    two requests in flight at once could each read the other's formula. A worker that
    started its own would leave it running, because workers end without running atexit,
    where the extension stops it (multiprocessing runs its own finalizers instead).
    """
    import multiprocessing
    import multiprocessing.util
    import os

    server = katex.KaTeXServer
    if getattr(server.get, "per_process", False):
        return

    def get(cls):
        if cls.katex_server is None or getattr(cls, "katex_server_pid", None) != os.getpid():
            cls.katex_server = cls.start()  # the main process's one stops at exit (atexit)
            cls.katex_server_pid = os.getpid()
            if multiprocessing.parent_process() is not None:  # a worker: stop it as it ends
                multiprocessing.util.Finalize(cls.katex_server, cls.katex_server.terminate, exitpriority=10)
        return cls.katex_server

    get.per_process = True
    server.get = classmethod(get)


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
