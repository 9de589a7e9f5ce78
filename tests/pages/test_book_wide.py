"""Across pages: exercises, their labels and solutions, static diagrams, citations."""

from __future__ import annotations

import math
import re
import runpy
import shutil

import numpy as np
import pytest

from attention.checkers import (
    check_attention_with_temperature,
    check_scaled_score_moments,
    check_softmax_jacobian,
)
from tests.glue import executed_notebook
from tests import harness
from tests.harness import ROOT
from tests.pages._common import (
    CHAPTERS,
    softmax_rows,
    solution_namespace,
)


# --- the exercises ---------------------------------------------------------------------

def test_temperature_exercise_reference_solution_passes_and_a_wrong_one_fails():
    ns = solution_namespace("soft-retrieval", "attention_with_temperature")
    assert check_attention_with_temperature(ns["attention_with_temperature"], verbose=False)

    def times_tau(Q, K, V, tau):  # multiplies by tau instead of dividing
        A = softmax_rows(tau * Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
        return A @ V, A

    assert not check_attention_with_temperature(times_tau, verbose=False)


def test_score_moments_exercise_reference_solution_passes_and_a_wrong_one_fails():
    ns = solution_namespace("variance", "scaled_score_moments")
    assert check_scaled_score_moments(ns["scaled_score_moments"], verbose=False)
    # forgets the correlated term's extra variance
    assert not check_scaled_score_moments(lambda d_k, rho, kurtosis=3.0: (rho * math.sqrt(d_k), 1.0), verbose=False)


def test_one_hot_jacobian_exercise_reference_solution_passes_and_a_wrong_one_fails():
    ns = solution_namespace("saturation", "vjp")
    assert check_softmax_jacobian(ns["jacobian"], ns["vjp"], verbose=False)
    assert not check_softmax_jacobian(lambda a: np.diag(a), lambda a, g_: a * g_, verbose=False)


def test_executed_pages_show_every_checker_passing():
    # (the masks and backward pages also run an unfinished skeleton on purpose: their own tests
    # check its "0 of N" beside the reference solution's "N of N")
    for page, expected in (("soft-retrieval", "16 of 16 checks passed."), ("variance", "7 of 7 checks passed."),
                           ("saturation", "7 of 7 checks passed.")):
        nb_text = str(executed_notebook(page))
        assert expected in nb_text and "✗" not in nb_text


# --- static diagrams, labels, citations -----------------------------------------------------

@pytest.mark.parametrize("script, svg", [("masks.py", "masks.svg"), ("backward_graph.py", "backward-graph.svg"),
                                         ("tiled_backward.py", "tiled-backward.svg")])
def test_static_diagram_scripts_write_svg(script, svg, tmp_path):
    # Run a copy in a temporary folder (a script writes into the folder above its own), so
    # that the book's figures/ keeps its files and modification times: a rewritten figure
    # would make the next incremental build read its page again.
    (tmp_path / "src").mkdir()
    shutil.copy2(ROOT / "figures" / "src" / script, tmp_path / "src" / script)
    runpy.run_path(str(tmp_path / "src" / script), run_name="__main__")
    text = (tmp_path / svg).read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    assert text == (ROOT / "figures" / svg).read_text(), f"figures/{svg} is stale: run `make figures`"


def test_exercises_page_links_all_nine_exercises():
    source = (CHAPTERS / "exercises.md").read_text()
    labels = ["ex-qkv-roles", "ex-convex-hull", "ex-raw-vs-scaled", "ex-mask-inf", "ex-temperature",
              "ex-numpy-attention", "ex-backward", "ex-score-moments", "ex-one-hot-jacobian"]
    for label in labels:
        assert "{ref}`" + label + "`" in source


def test_every_bibliography_entry_is_cited_somewhere():
    keys = re.findall(r"@\w+\{(\w+),", (ROOT / "references.bib").read_text())
    text = "".join(p.read_text() for p in CHAPTERS.glob("*.md"))
    cited = set(re.findall(r"\{cite:[pt]\}`([^`]+)`", text))
    cited = {k.strip() for group in cited for k in group.split(",")}
    assert set(keys) <= cited, set(keys) - cited


FIGURE_MADE = re.compile(r"\bplt\.(?:subplots|figure|subplot_mosaic)\(")


def _figure_cells(path):
    """(cell index, tags) of each code cell of a page that leaves a pyplot figure open: it
    makes one (directly, or by calling a function the page defined to make one) and does not
    close it in the same cell."""
    import jupytext

    cells = [c for c in jupytext.read(path, fmt="md:myst").cells if c.cell_type == "code"]
    makers = set()
    for cell in cells:
        for name, body in re.findall(r"^def (\w+)\(.*?\n((?:[ \t]+.*\n?|\n)*)", cell.source, flags=re.M):
            if FIGURE_MADE.search(body):
                makers.add(name)
    for index, cell in enumerate(cells):
        source = cell.source
        calls_maker = any(re.search(rf"^(?!def ).*\b{name}\(", source, flags=re.M) for name in makers)
        if (FIGURE_MADE.search(source) or calls_maker) and "plt.close(" not in source:
            yield index, set(cell.metadata.get("tags", []))


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "chapters").glob("*.md")))
def test_a_figure_left_open_for_glue_is_not_shown_twice(page):
    """A plain `jupyter-book build .` (without make's MPLBACKEND=Agg) runs the pages with
    matplotlib's inline backend, which shows every figure still open at the end of a cell
    under that cell: a figure the page glues into a numbered figure would appear twice.
    Each cell that leaves one open for a later glue cell hides its output on the page (in
    JupyterLab the reader still sees the figure under the cell)."""
    for index, tags in _figure_cells(ROOT / "chapters" / page):
        assert tags & {"remove-output", "remove-cell"}, (
            f"{page}: code cell {index} leaves a figure open without remove-output")


def test_the_open_figure_check_finds_the_cells_it_must():
    import textwrap

    page = harness.NOTEBOOK_FRONT_MATTER + textwrap.dedent('''\
        ```{code-cell} ipython3
        def draw(x):
            fig, ax = plt.subplots()
            return fig
        ```
        ```{code-cell} ipython3
        fig = draw(1)
        ```
        ```{code-cell} ipython3
        :tags: [remove-output]
        fig, ax = plt.subplots()
        ```
        ```{code-cell} ipython3
        fig, ax = plt.subplots()
        glue("f", fig, display=False)
        plt.close(fig)
        ```
        ```{code-cell} ipython3
        x = 1
        ```
        ''')
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "page.md")
        path.write_text(page, encoding="utf-8")
        found = list(_figure_cells(path))
    # by code cell: the function's definition counts too (the check errs on the safe side),
    # its call, and the tagged cell (passing); a cell that closes its figure or makes none does not
    assert [(i, t) for i, t in found] == [(0, set()), (1, set()), (2, {"remove-output"})]
