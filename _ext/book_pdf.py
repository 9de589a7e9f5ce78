"""The chapter as one PDF, printed from the built site by Debian's chromium: `make pdf`.

    .venv/bin/python _ext/book_pdf.py --html _build/html --out _build/html/downloads/NAME.pdf

Reads the built pages in the order of ``_toc.yml``, takes each page's article (the text,
its rendered math, figures and outputs; not the site's navigation), and joins them into one
print document after a title page and a table of contents. Widgets appear as their static
fallback figures (the page's scripts do not run; the fallback is what print media shows), each
numbered "Explorer N" in its caption, in reading order.
Ids are prefixed by their page, so that links between pages become links inside the PDF.
A link to anything else of the site (the downloads, the index) leads to the published site
when its address is known (``html: baseurl:`` in ``_config.yml``: Sphinx then gives every page
a canonical address) and is plain text otherwise: the address Chromium reads the site from
(127.0.0.1) is no address for a reader. The title page names the published site when known.
Whatever a page marks ``screen-only`` (a class) is left out; ``print-only`` shows only here.

The site is served on 127.0.0.1 while Chromium prints (no request leaves it). Chromium
numbers the pages in the footer and writes the PDF outline from the headings. The table of
contents gets its page numbers from a quick first printing (untagged: the page each
contents link points to, from the PDF's named destinations); they are written into the
loaded document, which is printed again, tagged and with its outline, and the outline must
give the same numbers (else it is printed a third time). Each page then gets its chapter's
title as a running head (add_running_heads).
"""

from __future__ import annotations

import argparse
import copy
import functools
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRINT_CSS = ROOT / "site" / "print" / "chapter-pdf.css"
FOOTER = ('<div style="font: 9px system-ui, sans-serif; color: #444; width: 100%; text-align: center;">'
          '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')


def toc_pages() -> list[str]:
    """Page names (chapters/NAME) in reading order, from _toc.yml (read by tools.notebooks)."""
    sys.path.insert(0, str(ROOT))
    from tools.notebooks import toc_pages as sources

    return [source.relative_to(ROOT).with_suffix("").as_posix() for source in sources()]


def _prefix_ids(article, page: str, pages: set[str], canonical: str | None = None):
    """Make ids unique across pages and turn links between pages into links inside the PDF.

    A link to another file of the site points at the published page (``canonical``: this
    page's address there) or, with no published address, becomes plain text.
    """
    from urllib.parse import urljoin

    for tag in article.find_all(id=True):
        tag["id"] = f"{page}--{tag['id']}"
    for link in article.find_all("a", href=True):
        href = link["href"]
        if re.match(r"^[a-z]+:", href):
            continue  # external: http(s), mailto
        target, _, fragment = href.partition("#")
        name = Path(target).stem if target else page
        if target and (not target.endswith(".html") or name not in pages):
            if canonical:  # a file of the site (a download): on the published site
                link["href"] = urljoin(canonical, href)
            else:
                link.unwrap()  # no address a reader could follow
            continue
        link["href"] = f"#{name}--{fragment}" if fragment else f"#{name}"


def site_address(canonical: str | None, page: str) -> str | None:
    """The published site's address, from a page's canonical address and its path in the site
    (``chapters/index.html``); None when the build has no ``html_baseurl``."""
    if not canonical or not canonical.endswith(page):
        return None
    return canonical[: len(canonical) - len(page)]


SCREEN_ONLY = {"headerlink", "attn-live", "attn-widget-host", "copybtn", "screen-only"}  # classes


def _screen_only(tag) -> bool:
    return tag.name == "script" or not SCREEN_ONLY.isdisjoint(tag.get("class") or ())


def _clean(article):
    """What only makes sense on screen goes: scripts, permalinks, live widget hosts, copy buttons.

    (find_all with a function, not CSS selectors: soupsieve's matching took most of the time.)
    """
    for tag in article.find_all(_screen_only):
        tag.decompose()
    for fallback in article.find_all(class_="attn-fallback"):
        del fallback["hidden"]
        fallback["class"] = [c for c in fallback.get("class", []) if c != "attn-replaced"]


def document(html: Path, numbers: dict[str, int] | None = None) -> tuple[str, list[tuple[str, str]]]:
    """The print document and its chapters [(page, title)]."""
    styles, parts, chapters, site, solutions = _articles(html)
    if solutions:
        chapters = (*chapters, (SOLUTIONS, "Solutions"))
    return _assemble(styles, parts, chapters, numbers, site, solutions), list(chapters)


SOLUTIONS = "pdf-solutions"  # the id of the Solutions section, the last of the PDF


@functools.lru_cache(maxsize=4)
def _articles(html: Path):
    """Every page's stylesheets, article and (page, title), parsed once per printing, the
    published site's address (None if the build does not know it) and the solutions taken out
    of the pages, [(chapter title, solutions)].

    Parsing is most of the time, so the pages are parsed in parallel processes (one per core).
    """
    import os
    from concurrent.futures import ProcessPoolExecutor

    names = [n for n in toc_pages() if (html / f"{n}.html").exists()]
    stems = frozenset(Path(n).stem for n in names)
    with ProcessPoolExecutor(max_workers=min(len(names), os.cpu_count() or 1) or 1) as pool:
        pages = list(pool.map(_page, [html / f"{n}.html" for n in names], [stems] * len(names), names))
    styles: list[str] = []
    parts, chapters, sites, solutions = [], [], [], []
    for page_styles, chapter, part, site, taken in pages:
        styles.extend(s for s in page_styles if s not in styles)
        sites.append(site)
        if chapter is not None:
            chapters.append(chapter)
            parts.append(part)
            if taken:
                solutions.append((chapter[1], taken))
    return tuple(styles), tuple(parts), tuple(chapters), (sites[0] if sites else None), tuple(solutions)


def _page(path: Path, stems: frozenset[str], name: str = ""):
    """One page's stylesheets, (page, title), article as print markup (None if no article) and
    the published site's address; ``name`` is the page's path in the site without .html."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    link = soup.find("link", rel="canonical")
    canonical = link["href"] if link and link.get("href") else None
    site = site_address(canonical, f"{name}.html")
    styles: list[str] = []
    for link in soup.find_all("link", rel="stylesheet"):
        href = link["href"].split("?")[0]
        if href not in styles:
            styles.append(href)
    for style in soup.find_all("style"):
        if str(style) not in styles:
            styles.append(str(style))
    article = soup.find("article", class_="bd-article")
    if article is None:
        return styles, None, None, site, ()
    stem = path.stem
    _clean(article)
    heading = article.find("h1")
    title = heading.get_text(" ", strip=True) if heading else stem
    _prefix_ids(article, stem, stems, canonical if site else None)
    solutions = _take_solutions(article, stem, soup)
    part = f'<section class="pdf-chapter" id="{stem}">{article.decode_contents()}</section>'
    return styles, (stem, title), part, site, solutions


def _take_solutions(article, stem: str, soup) -> tuple[str, ...]:
    """Take the page's solutions out of its text, for the Solutions section at the end (a
    printed textbook does not print the answer right under its question); each leaves a line
    naming the page it is printed on (filled in between printings, as the contents are)."""
    taken = []
    for k, solution in enumerate(article.find_all("div", class_="solution"), 1):
        anchor = f"{stem}--solution-{k}"
        title = solution.find(class_="admonition-title")
        reference = soup.new_tag("p", attrs={"class": "pdf-solution-ref"})
        for child in (title.contents if title else ["Solution"]):  # its formulas as rendered
            if getattr(child, "name", None) != "button":
                reference.append(copy.copy(child))
        reference.append(": in Solutions, ")
        link = soup.new_tag("a", href=f"#{anchor}")
        link.append("page ")
        link.append(soup.new_tag("span", attrs={"class": "pdf-page-of", "data-of": anchor}))
        reference.append(link)
        reference.append(".")
        solution.replace_with(reference)
        solution["id"] = anchor
        solution["class"] = [c for c in solution.get("class", []) if c not in {"dropdown", "toggle", "toggle-hidden"}]
        taken.append(str(solution))
    return tuple(taken)


def _assemble(styles, parts, chapters, numbers: dict[str, int] | None, site: str | None = None,
              solutions=()) -> str:
    """The print document: cover, contents (with page numbers once known), the articles, and
    the solutions, by chapter."""
    from html import escape

    def head_item(item: str) -> str:
        return item if item.startswith("<style") else f'<link rel="stylesheet" href="{item}">'

    head = "\n".join(head_item(s) for s in styles)
    title = chapters[0][1] if chapters else "Chapter"
    entries = "\n".join(
        f'<li><a href="#{stem}"><span class="pdf-toc-title">{text}</span>'
        f'<span class="pdf-toc-page">{numbers.get(stem, "") if numbers else ""}</span></a></li>'
        for stem, text in chapters)
    where = (f'<p class="pdf-site">The interactive chapter, with its live explorers and its '
             f'notebooks to download and run:<br><a href="{escape(site)}">{escape(site)}</a></p>'
             if site else "")
    body = (f'<section class="pdf-cover"><p class="pdf-book">{title}</p>'
            f'<p class="pdf-subtitle">An interactive chapter, printed</p>{where}</section>'
            f'<nav class="pdf-toc" aria-label="Contents"><h1 class="pdf-toc-heading">Contents</h1>'
            f'<ol>{entries}</ol></nav>'
            f'<article class="bd-article">{_printable(_number_explorers("".join(parts)))}'
            f'{_solutions_section(solutions)}</article>')
    print_css = PRINT_CSS.read_text(encoding="utf-8")
    page = (f'<!DOCTYPE html><html lang="en" data-theme="light" data-mode="light"><head><meta charset="utf-8">'
            f"<title>{title}</title>{head}<style>{print_css}</style></head>"
            f'<body class="pdf">{body}</body></html>')
    return page


def _solutions_section(solutions) -> str:
    if not solutions:
        return ""
    body = "".join(f'<section class="pdf-solutions-chapter"><h2>{title}</h2>{"".join(taken)}</section>'
                   for title, taken in solutions)
    return f'<section class="pdf-chapter pdf-solutions" id="{SOLUTIONS}"><h1>Solutions</h1>{_printable(body)}</section>'


EXPLORER_CAPTION = re.compile(r'<figcaption class="attn-fallback-caption">')


# Emoji that the printing machine has no font for (Debian's chromium without an emoji font
# printed the execution table's status as a box), and the signs its text fonts have.
PRINTABLE = {"\u2705": "\u2713", "\u274c": "\u2717"}  # check mark, cross


def _printable(article: str) -> str:
    for emoji, sign in PRINTABLE.items():
        article = article.replace(emoji, sign)
    return article


def _number_explorers(article: str) -> str:
    """Each explorer's printed figure numbered in its caption: Explorer 1, 2, ... in reading order."""
    count = iter(range(1, 1_000))
    return EXPLORER_CAPTION.sub(lambda m: f'{m.group(0)}<span class="caption-number">Explorer {next(count)}. </span>',
                                article)


def outline_starts(reader) -> list[tuple[str, int]]:
    """The top level of the PDF outline (one entry per h1): [(title, first page, 1-based)].

    Chromium may write a title twice over ("ContentsContents" for a tagged PDF): a reader
    compares the start of the title with the heading's text.
    """
    out = []
    for item in reader.outline:
        if not isinstance(item, list):
            out.append((" ".join(str(item.title).split()), reader.get_destination_page_number(item) + 1))
    return out


def chapter_pages(pdf: Path, chapters: list[tuple[str, str]]) -> dict[str, int]:
    """The page (1-based) each chapter starts on, from the outline Chromium wrote."""
    from pypdf import PdfReader

    starts = outline_starts(PdfReader(str(pdf)))
    found: dict[str, int] = {}
    for stem, text in chapters:
        text = " ".join(text.split())
        for title, page in starts:
            if title.startswith(text) and page not in found.values():
                found[stem] = page
                break
    return found


def destination_pages(pdf: Path, chapters: list[tuple[str, str]]) -> dict[str, int]:
    """The page (1-based) each chapter starts on, from the named destinations that Chromium
    writes for the targets of the contents' links (an untagged PDF has no outline)."""
    from pypdf import PdfReader

    reader = PdfReader(str(pdf))
    destinations = reader.named_destinations
    found: dict[str, int] = {}
    for stem, _ in chapters:
        target = destinations.get("/" + stem)  # a PDF name: pypdf keeps the slash
        if target is not None:
            found[stem] = reader.get_destination_page_number(target) + 1
    return found


# The contents' page numbers, written into the loaded document between printings (the
# entries keep their width: .pdf-toc-page has a fixed minimum width in the print stylesheet).
FILL_NUMBERS = """numbers => {
  for (const entry of document.querySelectorAll('.pdf-toc a[href^="#"]')) {
    entry.querySelector('.pdf-toc-page').textContent = numbers[entry.getAttribute('href').slice(1)] ?? '';
  }
  for (const page of document.querySelectorAll('.pdf-page-of[data-of]')) {
    page.textContent = numbers[page.dataset.of] ?? '';
  }
}"""
SOLUTION_ANCHOR = re.compile(r'data-of="([^"]+)"')


RUNNING_HEAD_PT = 8.5
# Where the running head's baseline sits: in the top margin (18 mm), 8 mm from the page's top.
RUNNING_HEAD_FROM_TOP_MM = 10.5


def _pdf_string(text: str) -> str:
    """Text as a PDF literal string in WinAnsi (Helvetica's encoding); other characters as '?'."""
    raw = text.encode("cp1252", errors="replace").decode("latin-1")
    return "(" + raw.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def add_running_heads(pdf: Path, out: Path, chapters: list[tuple[str, str]], starts: dict[str, int]):
    """Write ``pdf`` to ``out`` with each page's chapter title at its top left, except on the
    title page, the contents and the first page of each chapter (which shows its title large).

    Chromium cannot print a header that changes with the chapter, so the heads are drawn
    into the printed pages: Helvetica (one of PDF's standard fonts, nothing embedded), marked
    as a pagination artifact so that the tagged PDF's reading order leaves it out.

    The printed file is kept byte for byte and the heads are appended to it as an incremental
    update (the PDF format's own way to amend a file): each headed page's dictionary again,
    with one more content stream and the font, then a cross-reference section for those
    objects. Rewriting the whole file with pypdf's ``PdfWriter`` instead (which clones every
    object of the tagged PDF's structure tree, tens of thousands) was most of the PDF step's
    time.
    """
    import io
    import logging
    import zlib

    from pypdf import PdfReader
    from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject, NameObject, NumberObject

    # Chromium's PDF declares a trailer /Size a few objects short; pypdf says so, and mends it.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    data = pdf.read_bytes()
    data += b"" if data.endswith(b"\n") else b"\n"
    reader = PdfReader(io.BytesIO(data))
    previous = int(re.findall(rb"startxref\s+(\d+)", data[-1024:])[-1])
    order = sorted((page, dict(chapters)[stem]) for stem, page in starts.items() if stem in dict(chapters))
    first_pages = {start for start, _ in order}
    margin_x = 16 / 25.4 * 72
    number_of = iter(range(max(max(ids) for ids in reader.xref.values() if ids) + 1, 10**9))
    body = io.BytesIO()
    offsets: dict[int, int] = {}

    def put(serialised: bytes, number: int | None = None) -> IndirectObject:
        number = next(number_of) if number is None else number
        offsets[number] = len(data) + body.tell()
        body.write(b"%d 0 obj\n" % number + serialised + b"\nendobj\n")
        return IndirectObject(number, 0, reader)

    def stream(text: str) -> IndirectObject:
        packed = zlib.compress(text.encode("latin-1"))
        return put(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(packed) + packed + b"\nendstream")

    def serialise(obj) -> bytes:
        buffer = io.BytesIO()
        obj.write_to_stream(buffer)
        return buffer.getvalue()

    font = put(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    # The page's own content is left as Chromium wrote it, wrapped in q ... Q so that the
    # graphics state it leaves (a transformation) does not move the head drawn after it.
    save = stream("q\n")
    for number, page in enumerate(reader.pages, 1):
        current = [title for start, title in order if start <= number]
        if not current or number in first_pages:
            continue
        y = float(page.mediabox.height) - RUNNING_HEAD_FROM_TOP_MM / 25.4 * 72
        head = stream(f"\nQ /Artifact <</Type /Pagination /Subtype /Header>> BDC BT /FRunningHead "
                      f"{RUNNING_HEAD_PT} Tf 0.27 g {margin_x:.2f} {y:.2f} Td {_pdf_string(current[-1])} Tj "
                      "ET EMC\n")
        headed = DictionaryObject(page)  # a shallow copy: references stay references
        contents = page.raw_get("/Contents")
        parts = list(contents.get_object()) if isinstance(contents.get_object(), ArrayObject) else [contents]
        headed[NameObject("/Contents")] = ArrayObject([save, *parts, head])
        resources = DictionaryObject(page["/Resources"].get_object()) if "/Resources" in page else DictionaryObject()
        fonts = resources.get("/Font")
        fonts = DictionaryObject(fonts.get_object()) if fonts is not None else DictionaryObject()
        fonts[NameObject("/FRunningHead")] = font
        resources[NameObject("/Font")] = fonts
        headed[NameObject("/Resources")] = resources  # this page's own copy, written inline
        put(serialise(headed), page.indirect_reference.idnum)
    size = max(offsets) + 1
    xref = len(data) + body.tell()
    body.write(b"xref\n")
    for number in sorted(offsets):
        body.write(b"%d 1\n%010d 00000 n \n" % (number, offsets[number]))
    trailer = DictionaryObject({NameObject("/Size"): NumberObject(max(size, reader.trailer.get("/Size", 0))),
                                NameObject("/Prev"): NumberObject(previous),
                                NameObject("/Root"): reader.trailer.raw_get("/Root")})
    if "/Info" in reader.trailer:
        trailer[NameObject("/Info")] = reader.trailer.raw_get("/Info")
    if "/ID" in reader.trailer:
        trailer[NameObject("/ID")] = reader.trailer.raw_get("/ID")
    body.write(b"trailer\n" + serialise(trailer) + b"\nstartxref\n%d\n%%%%EOF\n" % xref)
    out.write_bytes(data + body.getvalue())


def render(html: Path, out: Path, timeout_ms: int = 240_000) -> dict[str, int]:
    sys.path.insert(0, str(ROOT))
    from playwright.sync_api import sync_playwright

    from tools import browser as site

    out.parent.mkdir(parents=True, exist_ok=True)
    text, chapters = document(html)  # parsed before the server and browser threads start
    with site.serve(html) as base, sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = site.launch(p)
        try:
            context = browser.new_context(java_script_enabled=False)
            guard = site.GuardedPage.open(context)
            page = guard.page
            page.set_default_timeout(timeout_ms)
            text = text.replace("<head>", f'<head><base href="{base}chapters/">', 1)
            # Served at an address of the site itself (nothing written into the site).
            address = base + "chapters/__chapter-pdf.html"
            page.route(address, lambda route, request=None: route.fulfill(
                status=200, content_type="text/html; charset=utf-8", body=text))
            page.emulate_media(media="print")  # before loading: laid out once, for print
            guard.goto(address, wait_until="networkidle")
            page.evaluate("document.fonts.ready.then(() => true)")
            margin = {"top": "18mm", "bottom": "18mm", "left": "16mm", "right": "16mm"}
            # The quick printing: same layout (the footer sits in the fixed margin), only to
            # learn where each chapter starts.
            first = Path(tmp, "numbers.pdf")
            page.pdf(path=str(first), format="A4", margin=margin)
            solutions = [(anchor, "") for anchor in SOLUTION_ANCHOR.findall(text)]
            numbers = destination_pages(first, chapters + solutions)
            for attempt in range(2):
                page.evaluate(FILL_NUMBERS, numbers)  # the same loaded document, numbered
                target = Path(tmp, f"pass{attempt}.pdf")
                page.pdf(path=str(target), format="A4", print_background=True, outline=True, tagged=True,
                         display_header_footer=True, header_template="<span></span>", footer_template=FOOTER,
                         margin=margin)
                found = chapter_pages(target, chapters) | destination_pages(target, solutions)
                if found == numbers:
                    break
                numbers = found
            else:
                raise RuntimeError(f"the contents' page numbers did not settle: printed {numbers}, "
                                   f"the outline gives {found}")
            guard.assert_clean()
            add_running_heads(target, out, chapters, {k: v for k, v in numbers.items() if k in dict(chapters)})
        finally:
            browser.close()
    return {k: v for k, v in (numbers or {}).items() if k in dict(chapters)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "html", help="the built site")
    parser.add_argument("--out", type=Path, required=True, help="the PDF to write")
    args = parser.parse_args(argv)
    numbers = render(args.html.resolve(), args.out.resolve())
    from pypdf import PdfReader

    pages = len(PdfReader(str(args.out)).pages)
    print(f"PDF: {args.out} ({pages} pages, {args.out.stat().st_size:,} bytes); chapters start on pages "
          + ", ".join(f"{k} {v}" for k, v in numbers.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
