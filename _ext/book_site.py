"""Local Sphinx extension: keeps the built site self-contained and its console clean.

* Drops sphinx-thebe's scripts: the book does not use Thebe (pages run locally in
  JupyterLab instead), and Jupyter Book 1 injects its inline configuration twice, which
  is a page error ("Identifier 'THEBE_JS_URL' has already been declared") and names a
  CDN URL; its configuration block (naming a Binder repository) goes too.
* Offers every notebook page as a notebook: writes ``_sources/PAGE.ipynb`` (the jupytext
  conversion of the MyST source, the very notebook `make lab` opens) and adds ".ipynb"
  to the page's download menu (the theme offers it only for .ipynb sources).
* Rewrites generated markup that axe-core reports (bibliography roles, hidden-cell
  summaries: see BODY_FIXES).
* Adds ``_ext/static/book-site.css`` (colour-contrast fixes) to every page.
* Math: points sphinxcontrib-katex's build-time renderer at the pinned npm ``katex``
  (node_modules/katex, the same package whose CSS and fonts `make assets` vendors), turns
  any formula KaTeX cannot render into a build warning (the renderer itself would only
  colour the TeX red), and keeps KaTeX's stylesheets off pages that have no math.
* Overrides two theme templates (``_ext/templates``) whose decorative icons and keyboard
  hint made axe-core report a serious label/content mismatch.
"""

from __future__ import annotations

from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATIC = Path(__file__).resolve().parent / "static"  # book-site.css: contrast fixes

THEBE_FILES = ("sphinx-thebe.js", "sphinx-thebe.css")


def _is_thebe(asset) -> bool:
    filename = str(getattr(asset, "filename", asset) or "")
    body = str(getattr(asset, "attributes", {}).get("body", "")) if hasattr(asset, "attributes") else ""
    return filename.endswith(THEBE_FILES) or "THEBE_JS_URL" in body or "thebe" in filename.split("/")[-1]


def _strip_thebe(app, pagename, templatename, context, doctree):
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [a for a in context[key] if not _is_thebe(a)]


def _strip_thebe_config(app, doctree, docname):
    from docutils import nodes

    for node in list(doctree.findall(nodes.raw)):
        if "x-thebe-config" in node.astext():
            node.parent.remove(node)


def _notebook_download(app, pagename, templatename, context, doctree):
    """Write the page's notebook into _sources/ and let the theme's download menu offer it."""
    if doctree is None or not context.get("sourcename", "").endswith(".md"):
        return
    import jupytext

    source = Path(app.env.doc2path(pagename))
    notebook = jupytext.read(source, fmt="md:myst")
    if "kernelspec" not in notebook.metadata:  # plain Markdown, not a notebook page
        return
    for index, cell in enumerate(notebook.cells):  # jupytext's ids are random: fix them
        cell["id"] = f"cell-{index}"
    target = Path(app.outdir, "_sources", pagename + ".ipynb")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(jupytext.writes(notebook, fmt="ipynb"), encoding="utf-8")
    # sphinx-book-theme's add_header_buttons (priority 501) adds the .ipynb entry from this.
    context["ipynb_source"] = pagename + ".ipynb"


# Markup that axe-core reports as serious or critical, and what it becomes.
BODY_FIXES = (
    # docutils writes <div role="list"> holding role="doc-biblioentry" entries, a role ARIA
    # 1.2 deprecated: a list with no list items (critical). The entries are list items.
    ('role="doc-biblioentry"', 'role="listitem"'),
    # myst-nb labels the summary of a hidden cell "Toggle hidden content" while it shows
    # "Show code cell source": a label/content mismatch (serious). Its text names it better.
    ('<summary aria-label="Toggle hidden content">', "<summary>"),
)


def _accessible_body(app, pagename, templatename, context, doctree):
    """Rewrite the few bits of generated markup that fail axe-core (see BODY_FIXES)."""
    body = context.get("body")
    if not body:
        return
    for old, new in BODY_FIXES:
        body = body.replace(old, new)
    context["body"] = body


KATEX_JS = Path("node_modules", "katex", "dist", "katex.min.js")
KATEX_CSS = ("katex.min.css", "katex-math.css")


def _use_vendored_katex(app, config):
    """Render math with the npm katex that `make assets` vendors, not the extension's copy."""
    if not getattr(config, "katex_prerender", False):
        return
    katex_js = Path(app.srcdir, KATEX_JS).resolve()
    if not katex_js.exists():
        from sphinx.errors import ConfigError

        raise ConfigError(f"{katex_js} is missing: run `make assets` (npm ci) first")
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


def _add_theme_overrides(app, config):
    if str(TEMPLATES) not in config.templates_path:
        config.templates_path.insert(0, str(TEMPLATES))
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))


def setup(app):
    app.connect("config-inited", _add_theme_overrides)
    app.connect("config-inited", _use_vendored_katex)
    app.connect("html-page-context", _katex_css_only_with_math, priority=900)
    app.add_css_file("book-site.css")
    app.connect("html-page-context", _notebook_download, priority=400)
    app.connect("html-page-context", _strip_thebe, priority=900)
    app.connect("html-page-context", _accessible_body, priority=900)
    # sphinx-thebe appends its (unused) configuration block at priority 500; remove it after.
    app.connect("doctree-resolved", _strip_thebe_config, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
