"""Local Sphinx extension: keeps the built site self-contained and its console clean.

* Drops sphinx-thebe's scripts: the book does not use Thebe (pages run locally in
  JupyterLab instead), and Jupyter Book 1 injects its inline configuration twice, which
  is a page error ("Identifier 'THEBE_JS_URL' has already been declared") and names a
  CDN URL; its configuration block (naming a Binder repository) goes too.
"""

from __future__ import annotations

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


def setup(app):
    app.connect("html-page-context", _strip_thebe, priority=900)
    # sphinx-thebe appends its (unused) configuration block at priority 500; remove it after.
    app.connect("doctree-resolved", _strip_thebe_config, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
