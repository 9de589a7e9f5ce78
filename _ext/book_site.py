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


def _add_theme_overrides(app, config):
    if str(TEMPLATES) not in config.templates_path:
        config.templates_path.insert(0, str(TEMPLATES))
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))


def setup(app):
    app.connect("config-inited", _add_theme_overrides)
    app.add_css_file("book-site.css")
    app.connect("html-page-context", _notebook_download, priority=400)
    app.connect("html-page-context", _strip_thebe, priority=900)
    app.connect("html-page-context", _accessible_body, priority=900)
    # sphinx-thebe appends its (unused) configuration block at priority 500; remove it after.
    app.connect("doctree-resolved", _strip_thebe_config, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
