"""A cell that raises fails the book's build: nothing is published with an error in it."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.harness import ROOT

PAGE = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A page with a broken cell

```{code-cell} ipython3
raise ValueError("this cell is broken on purpose")
```
"""


def test_a_cell_that_raises_fails_the_build_with_the_book_configuration(tmp_path):
    book = tmp_path / "book"
    (book / "chapters").mkdir(parents=True)
    for name in ("_config.yml", "references.bib"):
        shutil.copy(ROOT / name, book / name)
    shutil.copytree(ROOT / "_ext", book / "_ext")
    shutil.copytree(ROOT / "site", book / "site")
    (book / "node_modules").symlink_to(ROOT / "node_modules")  # the pinned KaTeX renderer
    (book / "_toc.yml").write_text("format: jb-book\nroot: chapters/index\n")
    (book / "chapters" / "index.md").write_text(PAGE)
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    result = subprocess.run(
        [str(jupyter_book), "build", "--all", "-W", "-n", "--keep-going", str(book)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0, "a raising cell must fail the build:\n" + output[-3000:]
    assert "this cell is broken on purpose" in output
