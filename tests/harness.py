"""Shared test harness: the browser tools (:mod:`tools.browser`: the built book served on
loopback, a guarded headless Chromium) and one-page books built for a test.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tools.browser import (  # noqa: F401 - the tests' names for them
    CHROMIUM_FLAGS,
    HTML,
    LOCAL_HOSTS,
    ROOT,
    GuardedPage,
    book_pages,
    chromium_path,
    launch,
    serve,
)


# The front matter of a page that is a notebook (jupytext's MyST format, the book's kernel):
# the start of every test page.
NOTEBOOK_FRONT_MATTER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


def one_page_book(folder: Path, page: str, config: str | None = None) -> Path:
    """A book in ``folder`` with the book's own configuration (or ``config``), extensions and
    site files, and one page, ``page`` (MyST text), as chapters/index.md."""
    (folder / "chapters").mkdir(parents=True)
    (folder / "_config.yml").write_text(config if config is not None else (ROOT / "_config.yml").read_text())
    for name in ("references.bib", "requirements.txt"):
        shutil.copy(ROOT / name, folder / name)
    shutil.copytree(ROOT / "_ext", folder / "_ext", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "site", folder / "site")
    (folder / "node_modules").symlink_to(ROOT / "node_modules")  # the pinned KaTeX renderer
    (folder / "_toc.yml").write_text("format: jb-book\nroot: chapters/index\n")
    (folder / "chapters" / "index.md").write_text(page)
    return folder


def build_book(folder: Path, timeout: float):
    """`jupyter-book build --all -W -n --keep-going folder`: the finished process, output captured."""
    import subprocess
    import sys

    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    return subprocess.run([str(jupyter_book), "build", "--all", "-W", "-n", "--keep-going", str(folder)],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONHASHSEED": "0"})


