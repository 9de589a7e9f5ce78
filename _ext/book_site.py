"""The book's local Sphinx extension (``_config.yml``: ``local_extensions: book_site: _ext``).

Each concern is a module of its own in ``_ext/``, readable alone:

* ``book_downloads``: what a reader takes away and runs: each page's notebook (with a
  set-up check in front), the archive of every notebook with the helper package and pinned
  requirements, the PDF entry of the download menu, Binder and Colab from one setting.
* ``book_markup``: fixes to generated markup (a clean console, no serious accessibility
  violation) and the book's own stylesheet and templates from ``site/``.
* ``book_math``: formulas rendered at build time by the pinned KaTeX, strictly, and its
  stylesheet and fonts published under ``vendor/katex``.
* ``book_weight``: light pages: the theme's icons without its icon script, and no file in
  the published site that no page uses.

This module also adds ``site/static/book-nav.js``, a workaround for pydata-sphinx-theme
issue 2451: the visible sidebar buttons of sphinx-book-theme did nothing (the file says why).

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


def setup(app):
    for part in (book_markup, book_math, book_downloads, book_weight):
        part.setup(app)
    # pydata-sphinx-theme issue 2451: the drawer buttons (site/static/book-nav.js).
    app.add_js_file("book-nav.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
