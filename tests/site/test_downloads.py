"""Each page's download menu offers its notebook (.ipynb) and its source (.md), both are
served, and the notebook is the one `make lab` opens, which runs top to bottom.

The .ipynb is written by ``_ext/book_downloads.py``: the jupytext conversion of the page's
MyST source after one set-up cell (which tells a reader without the helper package where to
get it: tests/site/test_archive.py runs it). Its other cells are checked equal to jupytext's
own conversion, so the single execution in tests/pages/test_notebooks_run.py (fresh kernel,
nbclient) covers the download too; the result is shared, not run twice.
"""

from __future__ import annotations

import json
import urllib.request
from urllib.parse import urljoin

import nbformat
import pytest
from bs4 import BeautifulSoup

from tests import harness, notebooks

SOURCES = notebooks.toc_pages()
IDS = [notebooks.page_id(s) for s in SOURCES]
NOTEBOOKS = [s for s in SOURCES if notebooks.is_notebook(s)]  # pages with a kernel
NOTEBOOK_IDS = [notebooks.page_id(s) for s in NOTEBOOKS]


def html_of(source):
    return source.relative_to(notebooks.ROOT).with_suffix(".html").as_posix()


def download_links(built_html, source) -> dict[str, str]:
    soup = BeautifulSoup((built_html / html_of(source)).read_text(encoding="utf-8"), "html.parser")
    links = {}
    for kind, css in (("ipynb", "a.btn-download-notebook-button"), ("source", "a.btn-download-source-button")):
        tag = soup.select_one(css)
        if tag is not None:
            links[kind] = tag["href"]
    return links


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:  # the test server, on 127.0.0.1
        assert response.status == 200, f"{url}: HTTP {response.status}"
        return response.read()


@pytest.mark.parametrize("source", SOURCES, ids=IDS)
def test_download_menu_serves_the_page_source_unchanged(built_html, site_url, source):
    links = download_links(built_html, source)
    assert "source" in links, f"{html_of(source)}: no 'download source' entry in the download menu"
    assert links["source"].endswith(source.name)
    body = fetch(urljoin(site_url + html_of(source), links["source"]))
    assert body == source.read_bytes(), f"the downloaded {source.name} differs from {source}"


def test_the_book_has_notebook_pages():
    assert NOTEBOOKS, "no page of _toc.yml has a jupytext header with a kernel"


@pytest.mark.parametrize("source", NOTEBOOKS, ids=NOTEBOOK_IDS)
def test_download_menu_serves_the_page_as_the_notebook_make_lab_opens(built_html, site_url, source):
    links = download_links(built_html, source)
    assert "ipynb" in links, f"{html_of(source)}: no '.ipynb' entry in the download menu"
    assert links["ipynb"].endswith(source.stem + ".ipynb")
    downloaded = nbformat.reads(fetch(urljoin(site_url + html_of(source), links["ipynb"])).decode("utf-8"), as_version=4)
    nbformat.validate(downloaded)
    assert downloaded.metadata["kernelspec"]["name"] == notebooks.KERNEL
    lab = notebooks.jupytext_notebook(source)
    setup, *cells = downloaded.cells
    assert setup.cell_type == "code" and "setup-check" in setup.metadata.get("tags", []), "no set-up check first"
    assert "import attention" not in setup.source and 'find_spec("attention")' in setup.source
    downloaded.cells = cells
    assert notebooks.code_sources(downloaded) == notebooks.code_sources(lab), (
        f"the downloaded {source.stem}.ipynb and the notebook jupytext makes of {source.name} differ in code")
    assert [c.source for c in downloaded.cells] == [c.source for c in lab.cells]
    assert all(not c.get("outputs") for c in downloaded.cells if c.cell_type == "code"), "outputs in a download"


@pytest.mark.parametrize("source", NOTEBOOKS, ids=NOTEBOOK_IDS)
def test_downloaded_notebook_runs_top_to_bottom_in_a_fresh_kernel(source):
    # Same code as the jupytext conversion (asserted above), executed once for both tests.
    result = notebooks.page_runs()[notebooks.page_id(source)]
    assert result.ok, result.message


def test_download_menu_opens_and_shows_every_entry(guarded_page, site_url):
    page = guarded_page.page
    guarded_page.goto(site_url + html_of(NOTEBOOKS[0]))
    page.click("button[aria-label='Download this page']")
    for css in ("a.btn-download-notebook-button", "a.btn-download-source-button",
                "a.btn-download-archive-button", "a.btn-download-chapter-pdf-button"):
        page.wait_for_selector(css, state="visible", timeout=5000)
    guarded_page.assert_clean()


def test_downloaded_notebooks_have_fixed_cell_ids_so_two_builds_write_the_same_bytes(built_html):
    """jupytext gives cells random ids; the build replaces them with cell-0, cell-1, ..."""
    for source in NOTEBOOKS:
        path = built_html / "_sources" / source.relative_to(notebooks.ROOT).with_suffix(".ipynb")
        ids = [cell["id"] for cell in json.loads(path.read_text())["cells"]]
        assert ids == [f"cell-{i}" for i in range(len(ids))], f"{path.name}: cell ids {ids[:3]}..."
