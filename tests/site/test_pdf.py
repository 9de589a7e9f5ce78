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


# --- where the PDF's links lead ------------------------------------------------------
LOOPBACK = re.compile(r"\b(?:127\.0\.0\.1|localhost|\[::1\])\b")


def link_targets(reader) -> list[tuple[int, str]]:
    """Every link of the PDF that leaves it: [(page, 1-based; its URI)]."""
    out = []
    for number, page in enumerate(reader.pages, 1):
        for annotation in page.get("/Annots") or []:
            action = annotation.get_object().get("/A")
            if action is not None and "/URI" in action:
                out.append((number, str(action["/URI"])))
    return out


def listed_external_links() -> set[str]:
    lines = (harness.ROOT / "external-links.txt").read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def site_address_of(built_html) -> str | None:
    soup = BeautifulSoup((built_html / "chapters" / "index.html").read_text(encoding="utf-8"), "html.parser")
    canonical = soup.find("link", rel="canonical")
    return canonical["href"][: -len("chapters/index.html")] if canonical else None


def test_every_link_of_the_pdf_leads_where_a_reader_can_go(built_html, reader, texts):
    # The bibliography's links (external-links.txt), and with `html: baseurl:` the published
    # site; never the address Chromium read the site from while printing.
    site = site_address_of(built_html)
    listed = listed_external_links()
    targets = link_targets(reader)
    assert targets, "the PDF has no outside link at all (its bibliography's are expected)"
    wrong = [(page, uri) for page, uri in targets
             if LOOPBACK.search(uri) or not (uri in listed or (site and uri.startswith(site)))]
    assert not wrong, f"links a reader cannot follow: {wrong[:8]}"
    # Nor does its text name that address (the title page and the pages with the downloads).
    for number in {1, *{page for page, _ in targets}}:
        assert not LOOPBACK.search(texts[number - 1]), f"page {number} names a loopback address"
    cover = squash(texts[0])
    if site:
        assert site in cover, cover
    else:
        assert "http" not in cover, f"the title page names an address the build does not know: {cover}"


BASEURL = "https://example.org/attention-book/"
LINKS_PAGE = harness.NOTEBOOK_FRONT_MATTER + """
# A page with downloads

Get <a href="../downloads/attention-chapter.zip">the archive</a> or
<a href="../downloads/scaled-dot-product-attention.pdf">the PDF</a>.

:::{container} screen-only
Use the download arrow at the top right.
:::

:::{container} print-only
Printed copies only.
:::
"""


@pytest.fixture(scope="module")
def published_book(tmp_path_factory):
    """A one-page book built with `html: baseurl:` set, and its PDF (about 30 s)."""
    import sys

    config = (harness.ROOT / "_config.yml").read_text()
    config, count = re.subn(r'(?m)^(  baseurl:) ""', rf"\1 {BASEURL}", config)
    assert count == 1, "_config.yml has no empty `html: baseurl:` to fill in"
    book = harness.one_page_book(tmp_path_factory.mktemp("pdf") / "book", LINKS_PAGE, config)
    result = harness.build_book(book, timeout=600)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    html = book / "_build" / "html"
    # As `make pdf` prints it (a process of its own: the tests' browser runs in this one).
    import subprocess

    printed = subprocess.run([sys.executable, str(harness.ROOT / "_ext" / "book_pdf.py"), "--html", str(html),
                              "--out", str(html / PDF)], capture_output=True, text=True, timeout=600)
    assert printed.returncode == 0, (printed.stdout + printed.stderr)[-3000:]
    from pypdf import PdfReader

    return html, PdfReader(str(html / PDF))


def test_with_the_sites_address_set_the_pdfs_links_lead_to_the_published_site(published_book):
    html, reader = published_book
    assert site_address_of(html) == BASEURL
    targets = {uri for _, uri in link_targets(reader)}
    assert {BASEURL + "downloads/attention-chapter.zip",
            BASEURL + "downloads/scaled-dot-product-attention.pdf"} <= targets, targets
    assert not [uri for uri in targets if LOOPBACK.search(uri)], targets
    # The title page says where the interactive chapter is.
    cover = squash(reader.pages[0].extract_text())
    assert "The interactive chapter" in cover and BASEURL in cover, cover
    # What a page marks for the screen only is not printed; what it marks for print is.
    text = squash(" ".join(page.extract_text() for page in reader.pages))
    assert "download arrow" not in text and "Printed copies only." in text


def test_without_the_sites_address_a_link_to_a_download_is_plain_text(tmp_path):
    import sys

    sys.path.insert(0, str(harness.ROOT / "_ext"))
    import book_pdf

    soup = BeautifulSoup('<article><p>Get <a href="../downloads/attention-chapter.zip">the archive</a>, '
                         'see <a href="masks.html#x">masks</a>.</p></article>', "html.parser")
    book_pdf._prefix_ids(soup.article, "index", {"index", "masks"})
    assert [a["href"] for a in soup.find_all("a")] == ["#masks--x"]
    assert soup.article.get_text() == "Get the archive, see masks."
    soup = BeautifulSoup('<article><a href="../downloads/a.zip">a</a></article>', "html.parser")
    book_pdf._prefix_ids(soup.article, "index", {"index"}, canonical=BASEURL + "chapters/index.html")
    assert soup.a["href"] == BASEURL + "downloads/a.zip"
    assert book_pdf.site_address(BASEURL + "chapters/index.html", "chapters/index.html") == BASEURL
    assert book_pdf.site_address(None, "chapters/index.html") is None


def test_print_only_text_is_hidden_on_the_site(published_book, guarded_page):
    html, _ = published_book
    with harness.serve(html) as url:
        guarded_page.goto(url + "chapters/index.html")
        page = guarded_page.page
        assert not page.get_by_text("Printed copies only.").is_visible()
        assert page.get_by_text("Use the download arrow at the top right.").is_visible()
        guarded_page.assert_clean()


def test_each_explorer_prints_as_a_numbered_figure_with_its_caption(built_html, reader, texts):
    # The site's fallback figure carries the caption; the PDF numbers it "Explorer N", in
    # reading order.
    import sys

    sys.path.insert(0, str(harness.ROOT / "_ext"))
    import book_pdf

    captions = []
    for name in book_pdf.toc_pages():
        soup = BeautifulSoup((built_html / f"{name}.html").read_text(encoding="utf-8"), "html.parser")
        captions += [" ".join(c.get_text(" ", strip=True).split()) for c in soup.select("figure.attn-fallback figcaption")]
    assert len(captions) >= 3 and all(len(c) > 60 for c in captions), captions

    text, _ = book_pdf.document(built_html)
    numbered = re.findall(r'<figcaption class="attn-fallback-caption"><span class="caption-number">Explorer (\d+)\. </span>',
                          text)
    assert numbered == [str(n) for n in range(1, len(captions) + 1)], numbered
    everything = squash(" ".join(texts[i] for i in range(len(reader.pages))))
    for number, caption in enumerate(captions, 1):
        start = " ".join(caption.split()[:4])  # before "figure" (its "fi" prints as a ligature)
        assert re.search(rf"Explorer {number}\.\s*" + re.escape(start).replace(r"\ ", r"\s*"), everything), \
            f"the PDF lacks 'Explorer {number}. {start}...'"


# Words that only make sense beside a live explorer or on the site's own header: a printed
# "things to try" list asks the reader to drag a slider the figure does not have.
LIVE_ONLY = ("Things to try", "things to try", "Drag ", " drag ", "readout", "top right")


def test_no_instruction_for_a_live_widget_is_printed(built_html, reader, texts):
    found = [(number, word, " ".join(texts[number - 1][max(0, at - 60):at + 60].split()))
             for number in range(1, len(reader.pages) + 1) for word in LIVE_ONLY
             for at in [texts[number - 1].find(word)] if at >= 0]
    assert not found, "the PDF prints instructions for the live page: " + repr(found[:6])
    # ... while the site keeps them (the words are there to be found).
    site = " ".join(BeautifulSoup((built_html / f"chapters/{name}.html").read_text(encoding="utf-8"),
                                  "html.parser").get_text(" ") for name in ("soft-retrieval", "variance", "saturation"))
    assert "Things to try" in site and "Drag " in site

def test_every_character_of_the_pdf_is_drawn(reader, texts):
    # A character no font of the printing machine has prints as a box (the execution table's
    # status emoji did); pypdf reads such a glyph back as U+0000.
    missing = [number for number in range(1, len(reader.pages) + 1) if "\x00" in texts[number - 1]]
    assert not missing, f"pages with an undrawn character: {missing}"


PRINT_BREAKS = """() => Object.fromEntries([
  ['div.cell', 'div.cell'], ['code block', 'div.highlight'], ['exercise', 'div.exercise'],
  ['solution', 'div.solution'], ['table', 'table'], ['figure', 'figure'],
  ['formula', '.katex-display'], ['explorer', '.attn-fallback'],
].map(([name, sel]) => {
  const el = document.querySelector('article ' + sel);
  return [name, el ? getComputedStyle(el).breakInside : null];
}))"""


def test_in_print_long_blocks_may_break_and_figures_and_formulas_stay_whole(built_html, browser):
    # The themes keep code blocks, exercises, solutions and tables whole on a page: moved whole
    # to the next page, they left 49 of 207 pages a third or more blank (measured from the
    # lowest line of text on each page that does not end a chapter); breaking them, 21 of 195.
    import sys

    sys.path.insert(0, str(harness.ROOT / "_ext"))
    import book_pdf

    text, _ = book_pdf.document(built_html)
    context = browser.new_context(java_script_enabled=False)
    try:
        with harness.serve(built_html) as base:
            guard = harness.GuardedPage.open(context)
            page = guard.page
            address = base + "chapters/__print-test.html"
            page.route(address, lambda route: route.fulfill(
                status=200, content_type="text/html; charset=utf-8",
                body=text.replace("<head>", f'<head><base href="{base}chapters/">', 1)))
            page.emulate_media(media="print")
            guard.goto(address)
            breaks = page.evaluate(PRINT_BREAKS)
    finally:
        context.close()
    for name in ("div.cell", "code block", "exercise", "solution", "table"):
        assert breaks[name] == "auto", (name, breaks)
    for name in ("figure", "formula", "explorer"):
        assert breaks[name] == "avoid", (name, breaks)


def test_every_page_of_a_chapter_after_its_first_has_the_chapters_title_as_running_head(built_html, reader, texts):
    import sys

    sys.path.insert(0, str(harness.ROOT / "_ext"))
    import book_pdf

    starts = sorted((page, " ".join(title.split())) for title, page in book_pdf.outline_starts(reader)
                    if page >= 3)
    titles = [squash(t) for t in chapter_titles(built_html)] + ["Solutions"]
    starts = [(page, next(t for t in titles if title.startswith(t))) for page, title in starts]
    assert len(starts) == len(titles)
    first_pages = {page for page, _ in starts}
    for number in range(1, len(reader.pages) + 1):
        last_line = texts[number - 1].rstrip().splitlines()[-1].strip()  # drawn after the page's own text
        chapter = [title for start, title in starts if start <= number]
        if number in first_pages or not chapter:
            assert last_line not in titles, f"page {number} (a chapter's first, or before them) has a running head"
        else:
            assert last_line == chapter[-1], f"page {number}: running head {last_line!r}, not {chapter[-1]!r}"


def test_solutions_print_at_the_end_and_each_exercise_names_the_page_of_its_own(built_html, reader, texts):
    # A printed textbook does not print the answer under its question: the solutions are the
    # PDF's last section, by chapter; where each was, a line names the page it is on.
    solutions = 0
    for page in harness.book_pages(built_html):
        soup = BeautifulSoup((built_html / page).read_text(encoding="utf-8"), "html.parser")
        solutions += len(soup.select("article div.solution"))
    assert solutions >= 5
    total = len(reader.pages)
    pages = [squash(texts[n]) for n in range(total)]
    refs = [(n + 1, int(m.group(1)), int(m.group(2)))
            for n, text in enumerate(pages)
            for m in re.finditer(r"Solution to Exercise (\d+)\b[^:]*: in Solutions, page (\d+)\.", text)]
    assert len(refs) == solutions, refs
    import sys

    sys.path.insert(0, str(harness.ROOT / "_ext"))
    import book_pdf

    starts = book_pdf.outline_starts(reader)
    assert starts[-1][0].startswith("Solutions"), starts[-3:]
    section = starts[-1][1]
    for at, exercise, page in refs:
        assert at < section <= page <= total, (at, exercise, page)
        assert re.search(rf"Solution to Exercise {exercise}\b", pages[page - 1]), \
            f"page {page} lacks the solution to exercise {exercise}"
    # None is printed in its chapter any more: before the section, each mention is a page line.
    for n in range(section - 1):
        mentions = len(re.findall(r"Solution to Exercise \d+", pages[n]))
        assert mentions == sum(1 for at, _, _ in refs if at == n + 1), f"page {n + 1} prints a solution"
