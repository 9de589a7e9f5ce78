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


# --- reading a page's source (the rules every page keeps are tests/pages/test_rules.py) -----

def code_cells(text: str) -> list[str]:
    """The source of every ``{code-cell}`` of a page's MyST text, tag lines included."""
    return re.findall(r"```\{code-cell\} ipython3\n(.*?)```", text, flags=re.S)
