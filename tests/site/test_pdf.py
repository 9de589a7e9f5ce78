"""The chapter's PDF (`make pdf`, _ext/book_pdf.py): every page of the book in reading order
after a table of contents whose page numbers are right, numbered pages, math set in KaTeX's
fonts, figures and the explorers' static figures in place, and linked from every page."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from urllib.parse import unquote

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
def texts(reader) -> list[str]:
    return [page.extract_text() or "" for page in reader.pages]


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


def test_every_page_is_numbered(reader, texts):
    total = len(reader.pages)
    for number, text in enumerate(texts, start=1):
        assert re.search(rf"\b{number}\s*/\s*{total}\b", text), f"page {number} shows no '{number} / {total}'"


def test_math_is_set_in_katex_fonts(reader):
    fonts = set()
    for page in reader.pages:
        resources = page.get("/Resources") or {}
        for font in (resources.get("/Font") or {}).values():
            fonts.add(str(font.get_object().get("/BaseFont")))
    assert any("KaTeX_Main" in f for f in fonts) and any("KaTeX_Math" in f for f in fonts), sorted(fonts)


def _fallback_words(built_html) -> dict[str, set[str]]:
    """For each widget's static figure: the words of its SVG's text (text is kept as text)."""
    out = {}
    for page in harness.book_pages(built_html):
        soup = BeautifulSoup((built_html / page).read_text(encoding="utf-8"), "html.parser")
        for figure in soup.select("figure.attn-fallback img"):
            src = figure["src"]
            if src.startswith("data:image/svg+xml;base64,"):
                svg = base64.b64decode(src.split(",", 1)[1]).decode("utf-8")
            else:
                svg = unquote(src.split(",", 1)[1])
            words = {w for t in BeautifulSoup(svg, "html.parser").find_all("text")
                     for w in re.findall(r"[A-Za-z]{4,}", t.get_text())}
            out[f"{page}: {figure.get('alt', '')[:40]}"] = words
    return out


def test_explorers_appear_as_their_static_figures(built_html, texts):
    figures = _fallback_words(built_html)
    assert figures, "no page has an explorer's static figure"
    everything = squash(" ".join(texts))
    for name, words in figures.items():
        assert words, f"{name}: the static figure has no text to find"
        missing = {w for w in words if w not in everything}
        assert len(missing) <= len(words) // 4, f"{name}: its figure's words are not in the PDF: {sorted(missing)[:10]}"


def test_figures_are_in_the_pdf(built_html, reader):
    # Each page's figures are SVG (vector drawings in the PDF: form XObjects) or raster images.
    drawings = 0
    for page in reader.pages:
        xobjects = (page.get("/Resources") or {}).get("/XObject") or {}
        drawings += len(xobjects)
    images = sum(len(BeautifulSoup((built_html / p).read_text(encoding="utf-8"), "html.parser").select("article img"))
                 for p in harness.book_pages(built_html) if p.startswith("chapters/"))
    assert drawings >= images // 2, f"{drawings} drawings in the PDF for {images} images on the pages"


@pytest.mark.parametrize("page_path", [p for p in (harness.book_pages() if (harness.HTML / "index.html").exists() else [])
                                       if p.startswith("chapters/")])
def test_every_page_links_the_pdf_and_the_archive(built_html, page_path):
    soup = BeautifulSoup((built_html / page_path).read_text(encoding="utf-8"), "html.parser")
    pdf = soup.select_one("a.btn-download-chapter-pdf-button")
    zipped = soup.select_one("a.btn-download-archive-button")
    assert pdf is not None and zipped is not None, f"{page_path}: the download menu lacks the PDF or the archive"
    assert (built_html / page_path).parent.joinpath(pdf["href"]).resolve() == (built_html / PDF).resolve()
    assert (built_html / page_path).parent.joinpath(zipped["href"]).resolve().exists()
