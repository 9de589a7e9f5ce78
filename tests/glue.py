"""Read the values a page glued (myst-nb ``glue``) from its freshly executed notebook.

``make book`` executes every page into ``_build/jupyter_execute/chapters/PAGE.ipynb``;
each ``glue(name, value)`` leaves an output whose metadata names it. The tests compare
these values, the very ones the prose quotes, against independent computations.

Set ``BOOK_EXECUTED=DIR`` to read them instead from ``DIR/chapters/PAGE.ipynb``, as written
by ``python -m tools.notebooks --out DIR chapters/PAGE.md`` (one page, no book build).
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

from tests.harness import HTML

EXECUTED = Path(os.environ.get("BOOK_EXECUTED") or HTML.parent / "jupyter_execute")


def executed_notebook(page: str) -> dict:
    path = EXECUTED / "chapters" / f"{page}.ipynb"
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run `make book` first, or "
                           f"`python -m tools.notebooks --out DIR chapters/{page}.md` with BOOK_EXECUTED=DIR")
    return json.loads(path.read_text())


def glued(page: str) -> dict[str, str]:
    """Map glue name -> the text/plain representation the page stored for it.

    myst-nb moves the outputs of ``glue(..., display=False)`` out of the executed notebook
    into ``PAGE.glue.json`` beside it; both places are read.
    """
    out = {}
    side = EXECUTED / "chapters" / f"{page}.glue.json"
    if side.exists():
        for name, output in json.loads(side.read_text()).items():
            text = output.get("data", {}).get("text/plain", "")
            out[name] = "".join(text) if isinstance(text, list) else text
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
