"""The chapter's PDF (`make pdf`, _ext/book_pdf.py): every page of the book in reading order
after a table of contents whose page numbers are right, numbered pages, math set in KaTeX's
fonts, figures and the explorers' static figures in place, and linked from every page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from tests import harness

PDF = Path("downloads", "scaled-dot-product-attention.pdf")


@pytest.fixture(scope="module")
def reader(built_html):
    from pypdf import PdfReader

    path = built_html / PDF
    assert path.exists(), f"no {PDF} in {built_html}: run `make pdf` (make book does)"
    return PdfReader(str(path))


@pytest.fixture(scope="module")
def texts(reader):
    """Page texts, extracted when first asked for (extracting all 150-odd pages takes a minute)."""
    cache: dict[int, str] = {}

    class Texts:
        def __getitem__(self, index: int) -> str:
            if index not in cache:
                cache[index] = reader.pages[index].extract_text() or ""
            return cache[index]

    return Texts()


def chapter_titles(built_html) -> list[str]:
    import sys

    sys.path.insert(0, str(harness.ROOT / "_ext"))
    import book_pdf

    titles = []
    for name in book_pdf.toc_pages():
        path = built_html / f"{name}.html"
        if path.exists():
            soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
            h1 = soup.select_one("article.bd-article h1")
            for link in h1.select(".headerlink"):
                link.decompose()
            titles.append(" ".join(h1.get_text(" ", strip=True).split()))
    return titles


def squash(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_pdf_has_a_table_of_contents_whose_numbers_are_where_each_chapter_starts(built_html, reader, texts):
    titles = chapter_titles(built_html)
    assert len(reader.pages) >= len(titles) + 2
    toc = squash(texts[1])
    assert "Contents" in toc
    import sys

    sys.path.insert(0, str(harness.ROOT / "_ext"))
    import book_pdf

    starts = book_pdf.outline_starts(reader)
    outline = {}
    for title in titles:
        outline[title] = next((page for text, page in starts if text.startswith(title)), None)
    for title in titles:
        match = re.search(re.escape(title) + r"\s*\.*\s*(\d+)", toc)
        assert match, f"the table of contents lacks {title!r} with a page number:\n{toc[:800]}"
        assert outline[title], f"the PDF outline lacks {title!r}"
        assert int(match.group(1)) == outline[title], f"{title}: contents say page {match.group(1)}, it starts on {outline[title]}"
        assert title in squash(texts[outline[title] - 1]), f"{title} is not on page {outline[title]}"


def test_the_quick_printings_numbers_are_the_outlines(built_html):
    """book_pdf numbers the contents from the named destinations of an untagged printing
    (which has no outline); in the published PDF both sources give every chapter's page."""
    import sys

    sys.path.insert(0, str(harness.ROOT / "_ext"))
    import book_pdf

    _, chapters = book_pdf.document(built_html)
    by_outline = book_pdf.chapter_pages(built_html / PDF, chapters)
    assert len(by_outline) == len(chapters), (by_outline, chapters)
    assert book_pdf.destination_pages(built_html / PDF, chapters) == by_outline


def test_pages_are_numbered(reader, texts):
    # The first and last pages, and every page a chapter starts on (the outline's pages).
    import sys

    sys.path.insert(0, str(harness.ROOT / "_ext"))
    import book_pdf

    total = len(reader.pages)
    sample = {1, 2, 3, total - 1, total} | {page for _, page in book_pdf.outline_starts(reader)}
    for number in sorted(n for n in sample if 1 <= n <= total):
        assert re.search(rf"\b{number}\s*/\s*{total}\b", texts[number - 1]), f"page {number} shows no '{number} / {total}'"


def test_math_is_set_in_katex_fonts(reader):
    fonts = set()
    for page in reader.pages:
        resources = page.get("/Resources") or {}
        for font in (resources.get("/Font") or {}).values():
            fonts.add(str(font.get_object().get("/BaseFont")))
    assert any("KaTeX_Main" in f for f in fonts) and any("KaTeX_Math" in f for f in fonts), sorted(fonts)


def figure_alts(reader) -> list[str]:
    """The alternative texts of the PDF's figures (its structure tree: Chromium writes a tagged PDF)."""
    alts = []

    def walk(node):
        node = node.get_object()
        if isinstance(node, dict):
            if "/Alt" in node:
                alts.append(" ".join(str(node["/Alt"]).split()))
            if node.get("/K") is not None:
                walk(node["/K"])
        elif isinstance(node, list):
            for child in node:
                walk(child)

    walk(reader.trailer["/Root"]["/StructTreeRoot"])
    return alts


def test_explorers_appear_as_their_static_figures(built_html, reader):
    fallbacks = []
    for page in harness.book_pages(built_html):
        soup = BeautifulSoup((built_html / page).read_text(encoding="utf-8"), "html.parser")
        fallbacks += [(page, " ".join(img["alt"].split())) for img in soup.select("figure.attn-fallback img")]
    assert fallbacks, "no page has an explorer's static figure"
    alts = figure_alts(reader)
    for page, alt in fallbacks:
        assert alt in alts, f"{page}: the static figure {alt[:60]!r} is not in the PDF"


def test_every_figure_of_the_pages_is_in_the_pdf(built_html, reader):
    # Every image of every chapter page (figures, plots, static diagrams) is a figure of the
    # PDF with the same alternative text.
    alts = figure_alts(reader)
    missing = []
    for page in harness.book_pages(built_html):
        if not page.startswith("chapters/"):
            continue
        soup = BeautifulSoup((built_html / page).read_text(encoding="utf-8"), "html.parser")
        for img in soup.select("article.bd-article img"):
            alt = " ".join((img.get("alt") or "").split())
            if alt and alt not in alts:
                missing.append(f"{page}: {alt[:60]}")
    assert not missing, f"{len(missing)} figures missing from the PDF:\n  " + "\n  ".join(missing[:10])


@pytest.mark.parametrize("page_path", [p for p in (harness.book_pages() if (harness.HTML / "index.html").exists() else [])
                                       if p.startswith("chapters/")])
def test_every_page_links_the_pdf_and_the_archive(built_html, page_path):
    soup = BeautifulSoup((built_html / page_path).read_text(encoding="utf-8"), "html.parser")
    pdf = soup.select_one("a.btn-download-chapter-pdf-button")
    zipped = soup.select_one("a.btn-download-archive-button")
    assert pdf is not None and zipped is not None, f"{page_path}: the download menu lacks the PDF or the archive"
    assert (built_html / page_path).parent.joinpath(pdf["href"]).resolve() == (built_html / PDF).resolve()
    assert (built_html / page_path).parent.joinpath(zipped["href"]).resolve().exists()
