"""Binder and Colab from one setting: ``repository: url:`` in ``_config.yml``.

The book is built here twice over in miniature: the book's own configuration with only that
setting filled in, on a one-page book (about 25 s). Its page must then offer the repository,
Binder and Colab, each at the right address, and its downloaded notebook must install the
helper package from that repository on Colab. The real build, with the setting empty, must
name none of these addresses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from tests import harness
from tests.harness import ROOT

REPOSITORY = "https://github.com/example-org/attention-book"
PAGE = harness.NOTEBOOK_FRONT_MATTER + """
# A page

```{code-cell} ipython3
print(1 + 1)
```
"""


@pytest.fixture(scope="module")
def configured_page(tmp_path_factory) -> tuple[Path, BeautifulSoup]:
    config = (ROOT / "_config.yml").read_text()
    # The one setting: the repository's address.
    config, count = re.subn(r'(?m)^(repository:\n  url:) ""', rf"\1 {REPOSITORY}", config)
    assert count == 1, "_config.yml has no empty `repository: url:` to fill in"
    book = harness.one_page_book(tmp_path_factory.mktemp("launch") / "book", PAGE, config)
    result = harness.build_book(book, timeout=600)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    html = book / "_build" / "html"
    return html, BeautifulSoup((html / "chapters" / "index.html").read_text(encoding="utf-8"), "html.parser")


@pytest.mark.slow
def test_the_repository_setting_turns_on_the_repository_binder_and_colab_buttons(configured_page):
    html, soup = configured_page
    links = {a.get_text(" ", strip=True): a["href"] for a in soup.select(".dropdown-item[href], a.btn[href]")}
    hrefs = set(links.values())
    assert REPOSITORY in hrefs, f"no repository button: {sorted(hrefs)}"
    binder = "https://mybinder.org/v2/gh/example-org/attention-book/main?urlpath=lab/tree/chapters/index.md"
    assert binder in hrefs, f"no Binder button opening the page in JupyterLab: {sorted(hrefs)}"
    # Colab cannot open a MyST page: it opens the page's notebook on the published branch.
    colab = ("https://colab.research.google.com/github/example-org/attention-book/blob/gh-pages/"
             "_sources/chapters/index.ipynb")
    assert colab in hrefs, f"no Colab button opening the published notebook: {sorted(hrefs)}"
    # The buttons' logos are published, and named.
    for img in soup.select("a.dropdown-item img"):
        assert img.get("alt"), str(img)
        assert (html / "chapters" / img["src"]).resolve().is_file(), f"{img['src']} is not published"


@pytest.mark.slow
def test_with_the_setting_the_downloaded_notebook_installs_the_package_on_colab(configured_page):
    html, _ = configured_page
    notebook = json.loads((html / "_sources" / "chapters" / "index.ipynb").read_text())
    setup = "".join(notebook["cells"][0]["source"])
    assert f"REPOSITORY = '{REPOSITORY}@main'" in setup
    assert '"google.colab" in sys.modules' in setup and "#subdirectory=code" in setup
    assert not notebook["cells"][0].get("outputs"), "the download carries outputs"


def test_with_the_setting_empty_no_page_names_a_repository_binder_or_colab(built_html):
    for page in harness.book_pages(built_html):
        soup = BeautifulSoup((built_html / page).read_text(encoding="utf-8"), "html.parser")
        buttons = soup.select(".btn-source-repository-button, .dropdown-launch-buttons")
        assert not buttons, f"{page}: {[str(b)[:80] for b in buttons]} though repository: url: is empty"
        text = str(soup)
        for address in ("mybinder.org", "colab.research.google.com"):
            assert address not in text, f"{page} names {address} though repository: url: is empty"
