"""Shared helpers of the page tests: read a glued value, find a page's cell, and the
independent reference computations the tests compare the pages with.

The glued values are read from the freshly executed notebooks (``tests/glue.py``): the book
build's, or those ``python -m tools.notebooks --out DIR`` wrote when ``BOOK_EXECUTED=DIR``.
"""

from __future__ import annotations

import ast
import math
import re

import numpy as np
import torch

from tests.glue import glued, glued_number
from tests.harness import ROOT

CHAPTERS = ROOT / "chapters"


def g(page: str, name: str) -> float:
    """A glued scalar as a float (``inf``, ``-inf`` and ``nan`` included)."""
    text = glued(page)[name].strip()
    if text in ("inf", "-inf", "nan"):
        return float(text)
    return glued_number(page, name)


def g_text(page: str, name: str) -> str:
    text = glued(page)[name].strip()
    try:
        return str(ast.literal_eval(text))
    except (ValueError, SyntaxError):
        return text


def g_bool(page: str, name: str) -> bool:
    return glued(page)[name].strip() == "True"


def page_cell(page: str, marker: str) -> str:
    """Source of the code cell of chapters/PAGE.md that contains ``marker``."""
    source = (CHAPTERS / f"{page}.md").read_text()
    for cell in re.findall(r"```\{code-cell\} ipython3\n(.*?)```", source, flags=re.S):
        if marker in cell:
            return cell
    raise AssertionError(f"no code cell of {page}.md contains {marker!r}")


def solution_namespace(page: str, defines: str) -> dict:
    """Execute the page's code cell that defines ``defines`` (the reference solution)."""
    text = (CHAPTERS / f"{page}.md").read_text()
    cells = re.findall(r"```\{code-cell\} ipython3\n(.*?)```", text, flags=re.S)
    source = next(c for c in cells if f"def {defines}(" in c and "check_" in c)
    source = "\n".join(line for line in source.splitlines() if not line.startswith("check_"))
    ns = {"np": np, "math": math}
    exec(source, ns)
    return ns


def softmax_rows(S):
    """Softmax straight from the formula, independent of the library."""
    S = np.asarray(S, dtype=np.float64)
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def torch_softmax_attention(Q, K, V, mask=None):
    """Independent float64 attention in torch: (O, A)."""
    q, k, v = (torch.as_tensor(np.asarray(x, dtype=np.float64)) for x in (Q, K, V))
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~torch.as_tensor(mask), float("-inf"))
    a = torch.softmax(s, dim=-1)
    return (a @ v).numpy(), a.numpy()


# --- rules every page keeps (each page's test file calls these on its own source) ----------

def code_cells(text: str) -> list[str]:
    """The source of every ``{code-cell}`` of a page's MyST text, tag lines included."""
    return re.findall(r"```\{code-cell\} ipython3\n(.*?)```", text, flags=re.S)


def assert_glue_only_in_removed_cells(source: str) -> None:
    for cell in code_cells(source):
        if "glue(" in cell:
            assert cell.startswith(":tags: [remove-cell]"), cell[:200]


def assert_lines_fit(source: str, page: str, width: int = 76) -> None:
    """Every code line of the page and every line its cells print is at most ``width`` wide."""
    from tests.glue import executed_notebook

    for cell in code_cells(source):
        for line in cell.splitlines():
            assert len(line) <= width, line
    for cell in executed_notebook(page)["cells"]:
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            for line in "".join(text).splitlines():
                assert len(line) <= width, line


def assert_executed_cells_fit(page: str, *, width: int = 76, skip_removed_cells: bool = False,
                              no_stderr: bool = False) -> None:
    """On the executed notebook: glue only in removed cells, and every code line and every
    printed line at most ``width`` wide (removed cells' code unchecked when
    ``skip_removed_cells``; no stderr output at all when ``no_stderr``)."""
    from tests.glue import executed_notebook

    for cell in executed_notebook(page)["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        tags = cell.get("metadata", {}).get("tags", [])
        if "glue(" in source:
            assert "remove-cell" in tags, source[:80]
        if skip_removed_cells and "remove-cell" in tags:
            continue
        for line in source.splitlines():
            assert len(line) <= width, line
        for output in cell.get("outputs", []):
            if no_stderr:
                assert output.get("name") != "stderr", "".join(output.get("text", ""))[:200]
            if output.get("output_type") == "stream":
                for line in "".join(output["text"]).splitlines():
                    assert len(line) <= width, line
