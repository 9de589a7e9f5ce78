"""Markup fixes: a clean console and no serious or critical accessibility violation.

* Drops sphinx-thebe's scripts: the book does not use Thebe (pages run in JupyterLab
  instead), and Jupyter Book 1 injects its inline configuration twice, which is a page
  error ("Identifier 'THEBE_JS_URL' has already been declared") and names a CDN URL; its
  configuration block (naming a Binder repository) goes too.
* Rewrites generated markup that axe-core reports (bibliography roles, hidden-cell
  summaries: see BODY_FIXES).
* Adds the book's own stylesheet ``site/static/book-site.css`` (contrast, narrow screens,
  code column) to every page, and the theme template overrides of ``site/templates``
  (decorative icons and a keyboard hint that made axe-core report a label mismatch).
"""

from __future__ import annotations

from pathlib import Path

SITE = Path(__file__).resolve().parent.parent / "site"  # the book's own front-end files
TEMPLATES = SITE / "templates"
STATIC = SITE / "static"

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


def _add_site_files(app, config):
    if TEMPLATES.is_dir() and str(TEMPLATES) not in config.templates_path:
        config.templates_path.insert(0, str(TEMPLATES))
    if STATIC.is_dir() and str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))


def setup(app):
    app.connect("config-inited", _add_site_files)
    app.add_css_file("book-site.css")
    app.connect("html-page-context", _strip_thebe, priority=900)
    app.connect("html-page-context", _accessible_body, priority=900)
    # sphinx-thebe appends its (unused) configuration block at priority 500; remove it after.
    app.connect("doctree-resolved", _strip_thebe_config, priority=900)
