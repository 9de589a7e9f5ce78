"""Read the values a page glued (myst-nb ``glue``) from its freshly executed notebook.

``make book`` executes every page into the jupyter-cache ``_build/.jupyter_cache``, which
the build reads (tools/notebooks.py); each ``glue(name, value)`` leaves an output whose
metadata names it. The tests compare these values, the very ones the prose quotes, against
independent computations.

Set ``BOOK_EXECUTED=DIR`` to read them instead from ``DIR/chapters/PAGE.ipynb``, as written
by ``python -m tools.notebooks --out DIR chapters/PAGE.md`` (one page, no book build).
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

from tests.harness import HTML, ROOT
from tools import notebooks

EXECUTED = Path(os.environ["BOOK_EXECUTED"]) if os.environ.get("BOOK_EXECUTED") else None
CACHE = HTML.parent / ".jupyter_cache"  # make book's execution of every page


def executed_notebook(page: str) -> dict:
    """The page's executed notebook: from BOOK_EXECUTED's folder, else the build's cache."""
    if EXECUTED is not None:
        path = EXECUTED / "chapters" / f"{page}.ipynb"
        if not path.exists():
            raise RuntimeError(f"{path} is missing: run `python -m tools.notebooks --out "
                               f"{EXECUTED} chapters/{page}.md`")
        return json.loads(path.read_text())
    try:
        return notebooks.cached_notebook(ROOT / "chapters" / f"{page}.md", CACHE)
    except KeyError:
        raise RuntimeError(f"{CACHE} holds no execution of chapters/{page}.md as it is now: run "
                           f"`make book` (or `make html`) first, or `python -m tools.notebooks "
                           f"--out DIR chapters/{page}.md` with BOOK_EXECUTED=DIR") from None


def glued(page: str) -> dict[str, str]:
    """Map glue name -> the text/plain representation the page stored for it."""
    out = {}
    for cell in executed_notebook(page)["cells"]:
        for output in cell.get("outputs", []):
            meta = output.get("metadata", {}).get("scrapbook", {})
            if "name" in meta:
                # A Run-All notebook keeps display=False values under their glue prefix
                # ("application/papermill.record/text/plain"); the build strips it.
                data = output.get("data", {})
                text = data.get(meta.get("mime_prefix", "") + "text/plain", data.get("text/plain", ""))
                out[meta["name"]] = "".join(text) if isinstance(text, list) else text
    return out


def glued_number(page: str, name: str) -> float:
    """A glued scalar as a float (NumPy scalars print as e.g. ``np.float64(0.5)``)."""
    text = glued(page)[name].strip()
    if text.startswith("np.") and "(" in text:
        text = text[text.index("(") + 1 : text.rindex(")")]
    return float(ast.literal_eval(text))
