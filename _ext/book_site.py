"""The book's local Sphinx extension (``_config.yml``: ``local_extensions: book_site: _ext``).

Each concern is a module of its own in ``_ext/``, readable alone:

* ``book_downloads``: what a reader takes away and runs: each page's notebook (with a
  set-up check in front), the archive of every notebook with the helper package and pinned
  requirements, the PDF entry of the download menu, Binder and Colab from one setting.
* ``book_markup``: fixes to generated markup (a clean console, no serious accessibility
  violation) and the book's own stylesheet and templates from ``site/``.
* ``book_math``: formulas rendered at build time by the pinned KaTeX, strictly, and its
  stylesheet and fonts published under ``vendor/katex``.
* ``book_weight``: light pages: the theme's icons without its icon script, and only the
  scripts a page uses.
* ``book_patches``: the only changes to a package's internals, each with its pinned version.

This module also fixes what the themes and extensions get wrong for a reader (each checked
by ``tests/site/test_navigation.py`` or ``tests/site/test_theme_fixes.py``):

* ``site/static/book-theme-fixes.js``: the visible drawer buttons of sphinx-book-theme did
  nothing (pydata-sphinx-theme issue 2451), a click on a formula in a dropdown's bar threw
  "button is not defined", and search results showed each formula three times (the file
  says why, fix by fix);
* a solution's bar ("Solution to Exercise N") is one control that opens the solution:
  sphinx-exercise made its middle a link back to the exercise (just above it), so the first
  click on the bar jumped away instead of opening it;
* ``site/static/book-figure-zoom.js``: a figure drawn smaller than its own size (a phone,
  a wide figure) opens at full size on a tap, so that its text can be read;
* a heading written as a reference (``## {ref}`masks```) is listed in the page's contents
  under the title it shows, not its label ("masks").

``_ext/book_pdf.py`` is not part of the build: `make pdf` runs it on the built site.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import book_downloads  # noqa: E402
import book_markup  # noqa: E402
import book_math  # noqa: E402
import book_weight  # noqa: E402


def _solution_bars_without_links(app, doctree, docname):
    """A solution's title keeps the exercise's name and number, as text, not as a link."""
    from docutils import nodes
    from sphinx_exercise.nodes import solution_node

    for solution in doctree.findall(solution_node):
        title = solution.children[0] if solution.children else None
        if isinstance(title, nodes.title):
            for reference in list(title.findall(nodes.reference)):
                reference.replace_self(reference.children)


def _contents_show_reference_titles(app, env):
    """Page contents: a heading that is a reference shows the title it refers to.

    Sphinx copies a heading's text into the page's contents before references are resolved,
    so ``## {ref}`masks``` was listed as its label, "masks". The label's section title
    replaces it (the text of a reference without a title of its own is its label)."""
    from docutils import nodes

    labels = env.domaindata["std"]["labels"]
    for toc in env.tocs.values():
        for node in toc.findall(nodes.inline):
            if "std-ref" in node["classes"] and node.astext() in labels:
                title = labels[node.astext()][2]
                if title:
                    node.children = []
                    node += nodes.Text(title)


def setup(app):
    for part in (book_markup, book_math, book_downloads, book_weight):
        part.setup(app)
    app.add_js_file("book-theme-fixes.js", loading_method="defer")
    app.add_js_file("book-figure-zoom.js", loading_method="defer")
    app.connect("doctree-resolved", _solution_bars_without_links)
    app.connect("env-updated", _contents_show_reference_titles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
