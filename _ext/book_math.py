"""Math: every formula rendered at build time by KaTeX, strictly, with no script on the page.

* Points sphinxcontrib-katex's build-time renderer at the pinned npm ``katex``
  (``node_modules/katex``, installed by ``npm ci`` from package-lock.json).
* Turns any formula KaTeX cannot render into a build warning (an error under ``-W``): the
  renderer itself would only colour the TeX red.
* Keeps KaTeX's stylesheets off pages that have no math.
* Publishes KaTeX's stylesheet and fonts at ``vendor/katex/`` (where ``katex_css_path`` in
  ``_config.yml`` points). As the math is rendered at build time, the build knows which
  font face draws each character: KaTeX's own stylesheet rules (``.katex .mathnormal``
  -> KaTeX_Math italic, ``.katex .delimsizing.size2`` -> KaTeX_Size2, ...) are applied to
  the rendered HTML, inherited down the formula, and the browser's choice among a
  family's faces is repeated (CSS font matching). Only the faces some character is drawn
  in are published, each cut down to exactly those characters (fontTools, from the font's
  ttf; written as woff, since fontTools writes woff2 only with brotli); the stylesheet
  keeps only their ``@font-face`` rules. A face no page draws in (Fraktur, Script,
  Typewriter, Main-Italic, ... for this chapter) is neither published nor declared.
"""

from __future__ import annotations

import re
import shutil
from html.parser import HTMLParser
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
FONT_PROPERTIES = ("font-family", "font-weight", "font-style")
DEFAULT_FONT = {"font-family": "serif", "font-weight": "400", "font-style": "normal"}


def _specificity(selector: str) -> tuple[int, int, int]:
    ids = selector.count("#")
    classes = len(re.findall(r"\.[\w-]|\[|(?<!:):(?!:)", selector))
    types = len(re.findall(r"(?:^|[\s>+~])[a-zA-Z][\w-]*", selector))
    return ids, classes, types


def _font_declarations(content) -> dict[str, str]:
    """font-family, -weight and -style of a rule's declarations (the ``font`` shorthand too)."""
    import tinycss2

    found: dict[str, str] = {}
    for decl in tinycss2.parse_declaration_list(content, skip_comments=True, skip_whitespace=True):
        if decl.type != "declaration":
            continue
        value = tinycss2.serialize(decl.value).strip()
        if decl.lower_name in FONT_PROPERTIES:
            found[decl.lower_name] = value
        elif decl.lower_name == "font":
            # [style] [variant] [weight] size[/line-height] family: the rest reset to normal.
            found.update(DEFAULT_FONT)
            words = value.split(None)
            for index, word in enumerate(words):
                if re.match(r"^[\d.]+(em|rem|px|pt|%|ex)\b", word):
                    found["font-family"] = " ".join(words[index + 1:])
                    break
                if word in ("italic", "oblique"):
                    found["font-style"] = word
                elif word == "bold" or word.isdigit():
                    found["font-weight"] = "700" if word == "bold" else word
    return found


def font_rules(css: str) -> list[tuple[str, tuple, int, dict[str, str]]]:
    """(selector, specificity, order, font declarations) of every rule that sets a font."""
    import tinycss2

    rules = []
    for order, rule in enumerate(tinycss2.parse_stylesheet(css, skip_comments=True, skip_whitespace=True)):
        if rule.type != "qualified-rule":
            continue
        declared = _font_declarations(rule.content)
        if declared:
            for selector in tinycss2.serialize(rule.prelude).split(","):
                rules.append((selector.strip(), _specificity(selector), order, declared))
    return rules


def font_faces(css: str) -> dict[str, list[tuple[int, str, str]]]:
    """family -> [(weight, style, file stem)] of the stylesheet's @font-face rules."""
    faces: dict[str, list[tuple[int, str, str]]] = {}
    for rule in FONT_FACE.findall(css):
        family = re.search(r"font-family:\s*([^;}]+)", rule).group(1).strip().strip("'\"")
        weight = re.search(r"font-weight:\s*([^;}]+)", rule)
        style = re.search(r"font-style:\s*([^;}]+)", rule)
        name = re.search(r"fonts/(KaTeX_[A-Za-z0-9-]+)\.", rule)
        if name:
            faces.setdefault(family, []).append((
                _weight(weight.group(1) if weight else "400"), style.group(1).strip() if style else "normal",
                name.group(1)))
    return faces


def _weight(value: str) -> int:
    value = value.strip()
    return {"normal": 400, "bold": 700}.get(value, int(value) if value.isdigit() else 400)


def matching_face(faces: list[tuple[int, str, str]], weight: int, style: str):
    """The face a browser draws (weight, style) in (CSS Fonts 4, font matching: style first,
    then weight)."""
    styles = {"italic": ["italic", "oblique", "normal"], "oblique": ["oblique", "italic", "normal"]}
    for wanted in styles.get(style, ["normal", "oblique", "italic"]):
        candidates = [f for f in faces if f[1] == wanted]
        if not candidates:
            continue

        def rank(face):
            w = face[0]
            if 400 <= weight <= 500:
                if weight <= w <= 500:
                    return (0, w - weight)
                return (1, weight - w) if w < weight else (2, w - weight)
            if weight > 500:
                return (0, w - weight) if w >= weight else (1, weight - w)
            return (0, weight - w) if w <= weight else (1, w - weight)

        return min(candidates, key=rank)
    return None


def _compile(selector: str):
    """A selector of compound class/type selectors joined by ' ' and '>' as
    [(combinator, tag or None, classes)], right to left; None for anything else."""
    tokens = re.findall(r">|[^\s>]+", selector)
    parts, combinator = [], " "
    for token in tokens:
        if token == ">":
            combinator = ">"
            continue
        match = re.fullmatch(r"([a-zA-Z][\w-]*)?((?:\.[\w-]+)*)", token)
        if match is None:
            return None
        parts.append((combinator, match.group(1), frozenset(re.findall(r"\.([\w-]+)", match.group(2)))))
        combinator = " "
    return parts[::-1] if parts else None


def _matches(parts, chain, index: int = 0) -> bool:
    """Whether the last element of ``chain`` (its ancestors before it) matches ``parts``."""
    if not chain:
        return False
    _, tag, classes = parts[index]
    element_tag, element_classes = chain[-1]
    if (tag and tag != element_tag) or not classes <= element_classes:
        return False
    if index + 1 == len(parts):
        return True
    combinator = parts[index][0]
    if combinator == ">":
        return _matches(parts, chain[:-1], index + 1)
    return any(_matches(parts, chain[:end], index + 1) for end in range(len(chain) - 1, 0, -1))


class _FaceText(HTMLParser):
    """Inside every formula, the face each character is drawn in (KaTeX's rules, inherited)."""

    def __init__(self, rules, faces):
        super().__init__(convert_charrefs=True)
        self.rules = [(parts, spec, order, values) for selector, spec, order, values in rules
                      if (parts := _compile(selector)) is not None]
        self.faces = faces
        self.chain: list[tuple[str, frozenset]] = []  # the open elements, outermost first
        self.fonts: list[dict[str, str]] = []  # the computed font of each open element
        self.skip = 0  # > 0 inside a formula's MathML: the number of its open elements
        self.used: dict[str, set[int]] = {}
        # An element's font depends only on its chain of (tag, classes) from the formula's
        # root, and KaTeX repeats a few chains thousands of times: each is matched once.
        self.memo: dict[tuple, tuple[dict[str, str], tuple | None]] = {}
        self.drawn_in: list[tuple | None] = []  # the face of each open element

    def handle_starttag(self, tag, attrs):
        classes = frozenset((dict(attrs).get("class") or "").split())
        if not self.chain and not (tag == "span" and "katex" in classes):
            return
        if tag in VOID:
            return
        if self.skip or "katex-mathml" in classes:
            # MathML for assistive technology: browsers set it in their own math font.
            self.skip += 1
            return
        self.chain.append((tag, classes))
        key = tuple(self.chain)
        if key not in self.memo:
            declared: dict[str, tuple] = {}
            for parts, spec, order, values in self.rules:
                if _matches(parts, self.chain):
                    for prop, value in values.items():
                        if prop not in declared or declared[prop][:2] <= (spec, order):
                            declared[prop] = (spec, order, value)
            inherited = self.fonts[-1] if self.fonts else DEFAULT_FONT
            font = {**inherited, **{p: v[2] for p, v in declared.items()}}
            self.memo[key] = (font, self._face(font))
        font, face = self.memo[key]
        self.fonts.append(font)
        self.drawn_in.append(face)

    def _face(self, font: dict[str, str]):
        family = font["font-family"].split(",")[0].strip().strip("'\"")
        if family not in self.faces:
            return None
        return matching_face(self.faces[family], _weight(font["font-weight"]), font["font-style"].strip())

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if self.skip:
            self.skip -= 1
        elif self.chain:
            self.chain.pop()
            self.fonts.pop()
            self.drawn_in.pop()

    def handle_data(self, data):
        if not self.chain or self.skip or not data:
            return
        face = self.drawn_in[-1]
        if face is not None:
            self.used.setdefault(face[2], set()).update(ord(c) for c in data)


VOID = {"br", "img", "hr", "input", "meta", "link", "col", "area", "base", "embed", "source", "wbr"}


_SPAN = re.compile(r"<(/?)span\b")


def _formulas(html: str):
    """Each formula's markup, ``<span class="katex">`` to its closing tag (the parser is
    given only these: the rest of a page cannot change the face of a formula's text)."""
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
            yield html[start:]  # unclosed: the parser sees what there is
            return
        start = html.find('<span class="katex">', end)


def face_characters(html: str, rules, faces) -> dict[str, set[int]]:
    """Font file stem -> the characters the page's formulas draw in that face."""
    parser = _FaceText(rules, faces)
    for formula in _formulas(html):
        parser.feed(formula)
    parser.close()
    return parser.used


def math_faces(outdir: Path, css: str, cache: Path | None = None) -> dict[str, set[int]]:
    """Font file stem -> every character the built pages' formulas draw in that face.

    With ``cache`` (a JSON file), a page whose bytes are unchanged since the last build is
    not parsed again: its faces are read back (an unchanged rebuild then costs no parsing).
    """
    import hashlib
    import json

    rules, faces = font_rules(css), font_faces(css)
    key = hashlib.sha256(css.encode()).hexdigest()
    known = {}
    if cache is not None and cache.exists():
        stored = json.loads(cache.read_text(encoding="utf-8"))
        known = stored.get("pages", {}) if stored.get("css") == key else {}
    pages, used = {}, {}
    for page in sorted(outdir.rglob("*.html")):
        data = page.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        name = page.relative_to(outdir).as_posix()
        if known.get(name, {}).get("sha256") == digest:
            drawn = {face: set(chars) for face, chars in known[name]["faces"].items()}
        elif b'class="katex"' in data:
            drawn = face_characters(data.decode("utf-8"), rules, faces)
        else:
            drawn = {}
        pages[name] = {"sha256": digest, "faces": {face: sorted(chars) for face, chars in drawn.items()}}
        for face, chars in drawn.items():
            used.setdefault(face, set()).update(chars)
    if cache is not None:
        cache.write_text(json.dumps({"css": key, "pages": pages}), encoding="utf-8")
    return used


def _subset(source: Path, target: Path, chars: set[int]) -> bool:
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
    """KaTeX's stylesheet and its fonts, cut down to the characters the site's math uses."""
    if exception is not None or app.builder.format != "html":
        return
    dist = Path(app.srcdir, KATEX_DIST)
    target = Path(app.outdir, VENDOR)
    if target.exists():
        shutil.rmtree(target)
    (target / "fonts").mkdir(parents=True)
    css = (dist / "katex.min.css").read_text(encoding="utf-8")
    drawn = math_faces(Path(app.outdir), css, cache=Path(app.doctreedir) / "katex-faces.json")

    def face(match: re.Match) -> str:
        rule = match.group(0)
        name = re.search(r"fonts/(KaTeX_[A-Za-z0-9-]+)\.woff2", rule)
        if name is None:
            return rule
        name = name.group(1)
        if name not in drawn or not _subset(dist / "fonts" / f"{name}.ttf", target / "fonts" / f"{name}.woff",
                                            drawn[name]):
            return ""  # no page draws a character in this face: no file, no @font-face
        return re.sub(r"src:[^;}]*", f'src:url(fonts/{name}.woff) format("woff")', rule)

    (target / "katex.min.css").write_text(FONT_FACE.sub(face, css), encoding="utf-8")


def setup(app):
    app.connect("config-inited", _use_vendored_katex)
    app.connect("html-page-context", _katex_css_only_with_math, priority=900)
    app.connect("build-finished", _publish_katex)
