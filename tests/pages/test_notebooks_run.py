"""Every page runs top to bottom as a notebook, as a reader runs it: `make lab` opens the
MyST file through jupytext, the kernel starts in chapters/, and "Run All" executes every
cell. Here nbclient does the same in a fresh kernel, two pages at a time. A failure names
the cell (its index and its line in the .md file), its first line and the error."""

from __future__ import annotations

import pytest

from tools import notebooks

SOURCES = notebooks.toc_pages()


@pytest.mark.parametrize("source", SOURCES, ids=[notebooks.page_id(s) for s in SOURCES])
def test_page_runs_top_to_bottom_with_run_all_in_chapters(source):
    result = notebooks.page_runs()[notebooks.page_id(source)]
    assert result.ok, result.message
    assert result.code_cells == len(notebooks.code_sources(notebooks.jupytext_notebook(source)))


def test_a_failing_cell_is_reported_with_its_index_line_and_error(tmp_path):
    page = tmp_path / "broken.md"
    page.write_text(
        "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
        "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n"
        "# A page with a bug\n\n```{code-cell} ipython3\nx = 1\n```\n\nSome text.\n\n"
        "```{code-cell} ipython3\n\ny = x / 0\n```\n")
    result = notebooks.run_page(page, cwd=tmp_path)
    assert not result.ok
    assert "code cell 1 (notebook cell 3" in result.message
    assert f"{page}:19" in result.message  # the line of the failing cell's fence in the .md file
    assert "first line: y = x / 0" in result.message
    assert "ZeroDivisionError: division by zero" in result.message
