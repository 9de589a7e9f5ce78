"""The rules every computed page keeps, each checked once, over every page of `_toc.yml`.

- glue is called only in cells removed from the page (a reader sees the number, not the call);
- every code line and every line a cell prints is at most 76 characters (the column of the
  page, the PDF and a downloaded notebook);
- no cell writes to stderr (a warning printed on the page is a defect of the page);
- no caption or alt text types a number (a number in a caption is glued, or it goes stale).

A page's own test file holds what only that page claims.
"""

from __future__ import annotations

import re

import pytest

from tests.glue import executed_notebook
from tools.notebooks import code_sources, is_notebook, jupytext_notebook, toc_pages

WIDTH = 76
PAGES = [source.stem for source in toc_pages()  # the pages with code to run
         if is_notebook(source) and code_sources(jupytext_notebook(source))]
SOURCES = {source.stem: source for source in toc_pages()}


def code_cells(page: str) -> list[tuple[str, list[str], list[dict]]]:
    """(source, tags, outputs) of every code cell of the executed page."""
    return [("".join(cell["source"]), cell.get("metadata", {}).get("tags", []), cell.get("outputs", []))
            for cell in executed_notebook(page)["cells"] if cell["cell_type"] == "code"]


def printed_lines(output: dict) -> list[str]:
    if output.get("output_type") == "stream":
        text = output["text"]
    else:
        text = output.get("data", {}).get("text/plain", "")
    return "".join(text).splitlines()


def test_every_computed_page_is_checked():
    glueing = [page for page in PAGES
               if any(re.search(r"\bglue\(", source) for source, _, _ in code_cells(page))]
    assert len(glueing) >= 9, glueing
    assert {"masks", "pytorch", "stability", "training", "variance"} <= set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_glue_is_called_only_in_removed_cells(page):
    cells = code_cells(page)
    shown = [source[:120] for source, tags, _ in cells
             if re.search(r"\bglue\(", source) and "remove-cell" not in tags]
    assert not shown, f"{page}: glue() in a cell the reader sees: {shown}"


@pytest.mark.parametrize("page", PAGES)
def test_code_and_printed_lines_fit_the_column(page):
    wide = []
    for source, tags, outputs in code_cells(page):
        if "remove-cell" not in tags:  # a removed cell is neither on the page nor in its PDF
            wide += [("code", line) for line in source.splitlines() if len(line) > WIDTH]
        for output in outputs:
            wide += [("printed", line) for line in printed_lines(output) if len(line) > WIDTH]
    assert not wide, f"{page}: lines over {WIDTH} characters: {wide[:5]}"


@pytest.mark.parametrize("page", PAGES)
def test_no_cell_writes_to_stderr(page):
    written = ["".join(output.get("text", ""))[:200] for _, _, outputs in code_cells(page)
               for output in outputs if output.get("name") == "stderr"]
    assert not written, f"{page}: a cell wrote to stderr: {written}"


def figure_texts(source: str) -> list[str]:
    """Caption and alt text of every figure directive of a page's MyST source."""
    texts = []
    for block in re.findall(r"```\{(?:glue:)?figure\}[^\n]*\n(.*?)```", source, flags=re.S):
        lines = [line for line in block.splitlines() if not line.startswith((":name:", ":width:", ":figwidth:",
                                                                              ":align:", ":class:"))]
        texts.append("\n".join(lines))
    return texts


def typed_numbers(text: str) -> list[str]:
    text = re.sub(r"\$[^$]*\$", "", text)  # math: subscripts and exponents, not quoted numbers
    text = re.sub(r"\{(?:eq|numref|ref|cite:[pt]|cite)\}`[^`]*`", "", text)  # cross-references
    text = re.sub(r"\b[A-Za-z]+_?\d+\b", "", text)  # names: a_2, v2, float32
    text = re.sub(r"\b1/(d_k|sqrt\(d_k\)|d)\b", "", text)  # a head's name: the 1/d_k head
    return re.findall(r"\d+(?:\.\d+)?", text)


@pytest.mark.parametrize("page", sorted(SOURCES))
def test_no_caption_or_alt_text_types_a_number(page):
    source = SOURCES[page].read_text(encoding="utf-8")
    found = [(text[:100], numbers) for text in figure_texts(source) for numbers in [typed_numbers(text)] if numbers]
    assert not found, f"{page}: numbers typed into a caption or alt text: {found}"


def test_the_number_rule_finds_a_typed_number():
    caption = "```{glue:figure} fig\n:name: fig-x\n\nThe loss falls to 0.03 at $d_k = 64$.\n```\n"
    assert [typed_numbers(text) for text in figure_texts(caption)] == [["0.03"]]
    assert typed_numbers("weights $a_2$ and {numref}`fig-3` of v2") == []
