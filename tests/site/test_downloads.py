"""Each page's download menu offers its notebook (.ipynb) and its source (.md), both are
served, and the notebook is the one `make lab` opens, which runs top to bottom.

The .ipynb is written by ``_ext/book_downloads.py``: the jupytext conversion of the page's
MyST source after one set-up cell (which tells a reader without the helper package where to
get it: tests/site/test_archive.py runs it). Its other cells are checked equal to jupytext's
own conversion, so the single execution in tests/pages/test_notebooks_run.py (fresh kernel,
nbclient) covers the download too; the result is shared, not run twice.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import sys
import urllib.request
from urllib.parse import urljoin

import nbformat
import pytest
from bs4 import BeautifulSoup

from tests import harness
from tools import notebooks

sys.path.insert(0, str(notebooks.ROOT / "_ext"))
import book_downloads  # noqa: E402

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
    # Markdown cells: jupytext's as a screen shows them (screen-only text unfenced, print-only
    # text left out), with the glued values written in (the next test checks them).
    assert [c.cell_type for c in downloaded.cells] == [c.cell_type for c in lab.cells]
    for mine, theirs in zip(downloaded.cells, lab.cells):
        if "{glue:" not in theirs.source and "{numref}" not in theirs.source:
            assert mine.source == book_downloads.for_the_screen(theirs.source)
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


GLUE_TEXT = re.compile(r"\{glue:text\}`[^`]+`")
GLUE_FIGURE = re.compile(r"^(```+|:::+)\{glue:figure\}[ \t]*(\S+)[^\n]*\n(.*?)^\1[ \t]*$", re.M | re.S)


def page_text(built_html, source) -> str:
    """The page as a reader sees it: its article's text, formulas once (their MathML)."""
    soup = BeautifulSoup((built_html / html_of(source)).read_text(encoding="utf-8"), "html.parser")
    for tag in soup.select(".katex-html, annotation, script, style"):
        tag.decompose()
    return " ".join(soup.select_one("article").get_text(" ").split())


def unescape(text: str) -> str:
    return re.sub(r"\\([\\`*_\[\]<>|])", r"\1", text)


NUMREF = re.compile(r"\{numref\}`([^`]+)`")


def with_values(text: str, refs: dict[str, str]) -> str:
    """A regex of ``text`` whose glue roles match any written-in value (captured) and whose
    references to a glued figure (``refs``: its name -> its number on the site) are that
    number."""
    out = []
    for index, part in enumerate(re.split(r"(\{glue:text\}`[^`]+`|\{numref\}`[^`]+`)", text)):
        if index % 2 == 0:
            out.append(re.escape(part))
        elif part.startswith("{glue"):
            out.append("(.+?)")
        else:
            name = NUMREF.fullmatch(part).group(1)
            out.append(re.escape(refs[name]) if name in refs else re.escape(part))
    return "".join(out)


def written_in_pattern(source: str, refs: dict[str, str]) -> str:
    """A regex of the Markdown a cell becomes: each glued figure an image (its data captured),
    its number (captured) and its caption; each glued value captured; each reference to a
    glued figure its number on the site."""
    out, at = [], 0
    for figure in GLUE_FIGURE.finditer(source):
        out.append(with_values(source[at:figure.start()], refs))
        caption = figure.group(3).partition("\n\n")[2] or figure.group(3)
        out.append(r'<img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)" alt="[^"\n]*">\n\n'
                   r"\*\*(Fig\. \d+)\*\* " + with_values(caption.strip(), refs))
        at = figure.end()
    out.append(with_values(source[at:], refs))
    return "".join(out)


@pytest.mark.parametrize("source", [s for s in NOTEBOOKS if "{glue:" in s.read_text()],
                         ids=[notebooks.page_id(s) for s in NOTEBOOKS if "{glue:" in s.read_text()])
def test_a_downloaded_notebook_has_the_pages_glued_numbers_and_figures_written_in(built_html, source):
    # JupyterLab does not know myst-nb's glue: the numbers and figures are written into the
    # Markdown at build time, as the page showed them: each value is in the page's text, each
    # figure is the page's (its number, and the build's image in the cell), and a reference
    # to it is its number.
    path = built_html / "_sources" / source.relative_to(notebooks.ROOT).with_suffix(".ipynb")
    downloaded = nbformat.read(path, as_version=4).cells[1:]
    lab = notebooks.jupytext_notebook(source).cells
    text = page_text(built_html, source)
    soup = BeautifulSoup((built_html / html_of(source)).read_text(encoding="utf-8"), "html.parser")
    numbers = {f["id"]: f.select_one(".caption-number").get_text(strip=True).rstrip(".")
               for f in soup.select("figure[id]") if f.select_one(".caption-number")}
    # A reference to a glued figure (an image in the notebook, which jupyterlab-myst cannot
    # number) reads as on the site: the figure's number.
    refs = {name: numbers[name] for figure in GLUE_FIGURE.finditer(source.read_text())
            for name in re.findall(r"^:name:\s*(\S+)", figure.group(3), re.M)}
    values = figures = 0
    for mine, theirs in zip(downloaded, lab):
        if theirs.cell_type != "markdown":
            continue
        # A notebook is read on a screen: screen-only text without its fence, no print-only text
        # (jupyterlab-myst knows no `container` directive)
        assert ":::{container}" not in mine.source, f"{path.name}: a container fence left"
        for kept in re.findall(r"^:::\{container\} screen-only\n(.*?)^:::", theirs.source, re.M | re.S):
            assert kept.split("\n")[0][:40] in mine.source or "{glue:" in kept.split("\n")[0]
        for dropped in re.findall(r"^:::\{container\} print-only\n(.*?)^:::", theirs.source, re.M | re.S):
            assert dropped.strip()[:40] not in mine.source, f"{path.name}: print-only text in a notebook"
        screen = book_downloads.for_the_screen(theirs.source)
        if "{glue:" not in screen and not set(NUMREF.findall(screen)) & set(refs):
            continue
        assert "{glue:" not in mine.source, f"{path.name}: a glue role left: {mine.source[:200]}"
        match = re.fullmatch(written_in_pattern(screen, refs), mine.source, re.S)
        assert match, f"{path.name}: a cell differs from jupytext's beyond its glued values:\n{mine.source[:300]}"
        images = [base64.b64decode(v) for v in match.groups() if len(v) > 200 and re.fullmatch(r"[A-Za-z0-9+/=]+", v)]
        assert len(images) == len(GLUE_FIGURE.findall(theirs.source))
        assert all(svg.lstrip().startswith(b"<?xml") and b"<svg" in svg for svg in images)
        for value in match.groups():
            if re.fullmatch(r"Fig\. \d+", value) or (len(value) > 200 and re.fullmatch(r"[A-Za-z0-9+/=]+", value)):
                continue
            value = " ".join(unescape(value).split())
            assert value in text, f"{path.name}: {value!r} is not on the page"
            values += 1
        for figure in GLUE_FIGURE.finditer(theirs.source):
            name = re.search(r"^:name:\s*(\S+)", figure.group(3), re.M).group(1)
            assert f"**{numbers[name]}** " in mine.source, f"{path.name}: {name} is not {numbers[name]}"
            figures += 1
    assert values > 0 and figures == len(GLUE_FIGURE.findall(source.read_text()))


# What MyST looks like where JupyterLab shows it raw, by kind: a role (`{eq}`label``, or its
# name before a code span), a directive (its fence, or an option line of its body shown as
# code), a target line ((label)=), display math's dollars, inline math's, and a Markdown
# image of a data address.
RAW_MYST = {
    "role": re.compile(r"\{[a-z][\w-]*(?::[\w-]+)?\}`|\{(?:glue|eq|ref|numref|cite|math)\b"),
    "directive": re.compile(r"(?:```|:::)\{|:(?:label|name|class|alt|width|align|enumerated):\s"),
    "target": re.compile(r"^\([\w-]+\)=\s*$", re.M),
    "display math": re.compile(r"\$\$"),
    "inline math": re.compile(r"(?<![\\\w])\$[^\s$][^$\n]*\$"),
    "image": re.compile(r"\]\(data:"),
}

# Every Markdown cell of the open notebook as JupyterLab shows it (whichever renderer): the
# text of its input area outside the hidden editor and outside rendered formulas (whose text
# is the formula's glyphs), including a closed dropdown's (a solution's); its rendered
# formulas, display formulas and images (not the editor's), and how many images loaded.
_RENDERED_JS = """() => [...document.querySelectorAll('.jp-Notebook .jp-MarkdownCell')].map(c => {
  const area = c.querySelector('.jp-Cell-inputArea');
  const skip = '.jp-InputArea-editor, .katex, mjx-container, script, style';
  const walker = document.createTreeWalker(area, NodeFilter.SHOW_TEXT);
  const text = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode())
    if (!n.parentElement.closest(skip)) text.push(n.data);
  const images = [...area.querySelectorAll('img')].filter(i => !i.closest('.jp-InputArea-editor'));
  return {
    text: text.join('\\n'),
    math: area.querySelectorAll('.katex, mjx-container').length,
    display: area.querySelectorAll('.katex-display, mjx-container[display="true"]').length,
    images: images.length,
    loaded: images.filter(i => i.complete && i.naturalWidth > 0).length,
  };
})"""


def rendered_cells(page, url: str, token: str, name: str, sources: list[str]) -> list[dict]:
    """Open ``chapters/name`` in JupyterLab and return its Markdown cells (``sources``) as
    rendered (see _RENDERED_JS)."""
    # ?reset: a fresh workspace, with only this notebook open (not the one before it).
    page.goto(f"{url}lab/tree/chapters/{name}?reset&token={token}", wait_until="domcontentloaded")
    try:
        page.wait_for_function("""n => {
            const cells = document.querySelectorAll('.jp-Notebook .jp-MarkdownCell');
            return cells.length === n && [...cells].every(c => c.classList.contains('jp-mod-rendered'));
        }""", arg=len(sources), timeout=90000)
    except Exception:
        state = page.evaluate("""() => [...document.querySelectorAll('.jp-Notebook .jp-MarkdownCell')]
            .map((c, i) => c.classList.contains('jp-mod-rendered') ? null : i).filter(i => i !== null)""")
        count = page.locator(".jp-Notebook .jp-MarkdownCell").count()
        raise AssertionError(f"{name}: {count} of {len(sources)} Markdown cells shown, "
                             f"cells {state[:10]} not rendered") from None
    # The renderer works after the cells are marked rendered: wait (at most 60 s; then the
    # checks say what is missing) until every cell with math shows a formula and every
    # image has loaded, and then until nothing changes for a second.
    with_math = ["$" in s.replace("\\$", "") for s in sources]
    with contextlib.suppress(Exception):
        page.wait_for_function(f"""math => ({_RENDERED_JS})().every((c, i) =>
            (!math[i] || c.math > 0) && c.loaded === c.images)""", arg=with_math, timeout=60000)
    last = None
    for _ in range(20):
        now = page.evaluate(_RENDERED_JS)
        if now == last:
            break
        last = now
        page.wait_for_timeout(1000)
    return now


def raw_myst_problems(name: str, sources: list[str], cells: list[dict]) -> list[str]:
    """What a reader of the rendered cells would see raw or missing, cell by cell."""
    problems = []
    for index, (source, cell) in enumerate(zip(sources, cells)):
        where = f"{name}, Markdown cell {index}"
        for kind, pattern in RAW_MYST.items():
            for match in pattern.finditer(cell["text"]):
                line = cell["text"][max(0, match.start() - 40):match.end() + 40].replace("\n", " ")
                problems.append(f"{where}: raw {kind} {match.group(0)!r} in ...{line}...")
        blocks = len(re.findall(r"^(?:```+|:::+)\{math\}", source, re.M)) + source.count("$$") // 2
        if "$" in source.replace("\\$", "") and cell["math"] == 0:
            problems.append(f"{where}: its math shows as no rendered formula")
        if cell["display"] < blocks:
            problems.append(f"{where}: {blocks} display equations, {cell['display']} rendered")
        figures = (len(re.findall(r"^(?:```+|:::+)\{(?:glue:)?figure\}", source, re.M))
                   + len(re.findall(r"<img\b|!\[", source)))
        if cell["images"] < figures or cell["loaded"] < cell["images"]:
            problems.append(f"{where}: {figures} figures, {cell['images']} images, "
                            f"{cell['loaded']} loaded")
    return problems


@pytest.fixture(scope="module")
def unpacked_archive(built_html, tmp_path_factory):
    import zipfile

    folder = tmp_path_factory.mktemp("archive")
    zipfile.ZipFile(built_html / "downloads" / "attention-chapter.zip").extractall(folder)
    return folder / "attention-chapter"


def check_in_jupyterlab(browser, folder, names, disabled=()) -> list[str]:
    """Open each notebook ``names`` of the unpacked archive ``folder`` in the book's
    JupyterLab (the archive's pins); every problem raw_myst_problems finds."""
    from tests.site.test_widgets_jupyterlab import jupyterlab

    problems = []
    with jupyterlab(folder, disabled=disabled) as (url, token):
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = harness.GuardedPage.open(context).page
        for name in names:
            notebook = nbformat.read(folder / "chapters" / name, as_version=4)
            sources = [c.source for c in notebook.cells if c.cell_type == "markdown"]
            cells = rendered_cells(page, url, token, name, sources)
            problems += raw_myst_problems(name, sources, cells)
            # Each opened notebook started a kernel: stop it before the next one.
            page.evaluate("""async token => {
                const headers = {Authorization: 'token ' + token};
                for (const k of await (await fetch('/api/kernels', {headers})).json())
                    await fetch('/api/kernels/' + k.id, {method: 'DELETE', headers});
            }""", token)
        context.close()
    return problems


@pytest.mark.slow
def test_in_the_archives_jupyterlab_every_notebook_reads_as_on_the_site(unpacked_archive, browser):
    # The archive's JupyterLab, with the jupyterlab-myst it pins: in every notebook of the
    # archive, no Markdown cell shows a MyST role, directive, target or raw math, every
    # equation is a rendered formula and every figure an image that loaded (the glued ones
    # written in at build time, the static ones from the archive's figures/).
    names = sorted(p.name for p in (unpacked_archive / "chapters").glob("*.ipynb"))
    assert len(names) == len(NOTEBOOKS)
    problems = check_in_jupyterlab(browser, unpacked_archive, names)
    assert not problems, "\n".join(problems[:30])


@pytest.mark.slow
def test_without_jupyterlab_myst_the_same_check_finds_raw_myst(unpacked_archive, browser):
    # The check above can fail: stock JupyterLab (jupyterlab-myst disabled) shows the
    # first page after the introduction with its {math} blocks, exercises and roles raw.
    name = "soft-retrieval.ipynb"
    problems = check_in_jupyterlab(browser, unpacked_archive, [name], disabled=("jupyterlab-myst",))
    for kind in ("role", "directive", "inline math"):
        assert any(f": raw {kind} " in p for p in problems), (kind, problems[:5])
    # The glued numbers and figures are written in at build time: those stock JupyterLab shows.
    assert not any("glue" in p for p in problems), problems[:5]
