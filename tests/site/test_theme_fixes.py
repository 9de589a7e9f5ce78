"""What the themes and extensions got wrong for a reader, fixed by ``_ext/book_site.py`` and
``site/`` (the drawer buttons are ``test_navigation.py``'s):

* a solution's bar ("Solution to Exercise N") opens the solution wherever it is clicked, and
  nothing in it jumps away (sphinx-exercise made its middle a link back to the exercise; a
  click on anything in the bar but its text and button threw "button is not defined");
* the search field's magnifier sits beside the query, not over its first letter; a result's
  snippet quotes the page's text with each formula once (not KaTeX's three copies, not the
  page's contents list);
* the first page's tab title names the book once;
* a page's contents list the titles of its headings, never a reference's label.
"""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup

from tests import harness

BUILT = (harness.HTML / "index.html").exists()
PAGES = [p for p in (harness.book_pages() if BUILT else []) if p.startswith("chapters/")]
SOLUTION_PAGES = [p for p in PAGES if 'class="solution' in (harness.HTML / p).read_text(encoding="utf-8")]
BOOK_TITLE = "Scaled Dot-Product Attention"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 800}


def test_the_book_has_solutions_to_check():
    assert SOLUTION_PAGES, "no page has a solution"


@pytest.mark.parametrize("page_path", SOLUTION_PAGES)
def test_a_solutions_bar_is_text_and_a_button_with_no_link(built_html, page_path):
    soup = BeautifulSoup((built_html / page_path).read_text(encoding="utf-8"), "html.parser")
    titles = soup.select("div.solution > p.admonition-title")
    assert titles
    for title in titles:
        text = " ".join(title.get_text(" ", strip=True).split())
        assert re.match(r"Solution to Exercise \d+", text), text
        assert title.find("a") is None, f"{page_path}: a link in the bar {text!r}"


BAR_POINTS = """(bar) => {
  // Points of the bar to click: its left end (the words "Solution to"), its middle, and the
  // middle of each formula in it.
  const r = bar.getBoundingClientRect();
  const points = [[r.left + 12, r.top + r.height / 2], [r.left + r.width / 2, r.top + r.height / 2]];
  for (const m of bar.querySelectorAll('.katex')) {
    const b = m.getBoundingClientRect();
    points.push([b.left + b.width / 2, b.top + b.height / 2]);
  }
  return points;
}"""


@pytest.mark.parametrize("page_path", SOLUTION_PAGES)
def test_a_click_anywhere_on_a_solutions_bar_opens_and_closes_it_on_the_spot(guarded_page, site_url, page_path):
    page = guarded_page.page
    guarded_page.goto(site_url + page_path)
    solutions = page.locator("div.solution.toggle")
    assert solutions.count() >= 1
    for i in range(solutions.count()):
        solution = solutions.nth(i)
        bar = solution.locator(":scope > .admonition-title")
        bar.scroll_into_view_if_needed()
        for x, y in bar.evaluate(BAR_POINTS):
            hidden = solution.evaluate("s => s.classList.contains('toggle-hidden')")
            before = page.evaluate("[location.href, scrollY]")
            page.mouse.click(x, y)
            page.wait_for_timeout(100)
            assert solution.evaluate("s => s.classList.contains('toggle-hidden')") != hidden, \
                f"{page_path}: a click at ({x:.0f}, {y:.0f}) on solution {i + 1}'s bar did not toggle it"
            assert page.evaluate("location.href") == before[0], "the click left the place"
            bar.scroll_into_view_if_needed()
    guarded_page.assert_clean()  # no "button is not defined"


SEARCH_FIELD = """() => {
  const form = document.querySelector('.bd-search-container form.bd-search');
  const icon = form.querySelector('.fa-magnifying-glass').getBoundingClientRect();
  const input = form.querySelector('input');
  const r = input.getBoundingClientRect();
  const s = getComputedStyle(input);
  return [icon.left, icon.right, icon.width, r.left + parseFloat(s.paddingLeft) + parseFloat(s.borderLeftWidth)];
}"""


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["390px", "1280px"])
def test_the_search_pages_magnifier_sits_beside_the_query_and_snippets_read_as_the_text(browser, site_url, viewport):
    context = browser.new_context(viewport=viewport)
    guard = harness.GuardedPage.open(context)
    try:
        page = guard.page
        guard.goto(site_url + "search.html?q=softmax")
        page.wait_for_function("() => document.querySelectorAll('#search-results li p.context').length >= 3",
                               timeout=30_000)
        left, right, width, text_start = page.evaluate(SEARCH_FIELD)
        assert width > 0 and right <= text_start, f"the magnifier ({left:.0f}-{right:.0f} px) covers the query, " \
                                                  f"which starts at {text_start:.0f} px"
        snippets = page.eval_on_selector_all("#search-results li p.context", "ps => ps.map(p => p.textContent)")
        for snippet in snippets:
            assert "\\" not in snippet, f"TeX source in a snippet: {snippet}"
            assert not snippet.lstrip(".").startswith("Contents"), f"a snippet quotes the contents list: {snippet}"
            assert "(12,0)(12, 0)" not in snippet and "−∞-\\infty" not in snippet, snippet
        guard.assert_clean()
    finally:
        context.close()


SNIPPET_MATH = """async (path) => {
  // What the fixed snippet maker returns for a page with formulas: each formula once.
  const html = await (await fetch(path)).text();
  return Search.htmlToText(html, '');
}"""


def test_a_snippets_text_holds_each_formula_once(guarded_page, site_url, built_html):
    # The variance page writes d_k many times; KaTeX's three copies made it "dkd_kdk".
    guarded_page.goto(site_url + "search.html")
    text = guarded_page.page.evaluate(SNIPPET_MATH, "chapters/variance.html")
    soup = BeautifulSoup((built_html / "chapters" / "variance.html").read_text(encoding="utf-8"), "html.parser")
    formulas = len(soup.select("article .katex"))
    assert formulas > 10
    # The formulas' TeX source (KaTeX's annotation, "\\sqrt{d_k}") is in the text only as often
    # as the page's code writes it.
    tex = {a.get_text() for a in soup.select("article .katex annotation") if "\\" in a.get_text()}
    assert len(tex) > 5
    for formula in soup.select(".katex"):
        formula.decompose()
    main = soup.select_one('[role="main"]').get_text()
    extra = [t for t in tex if text.count(t) > main.count(t)]
    assert not extra, f"TeX source in the snippet text: {extra[:5]}"
    # A root keeps its sign (MathML draws it; its text has none).
    assert any("\\sqrt{d_k}" in t for t in tex) and "√dk" in text
    # Nor the contents list: the text starts with the page's title.
    assert " ".join(text.split()).startswith("The variance argument"), text[:200]
    guarded_page.assert_clean()


def test_the_first_pages_tab_title_names_the_book_once(built_html):
    for page in PAGES:
        soup = BeautifulSoup((built_html / page).read_text(encoding="utf-8"), "html.parser")
        title = soup.title.get_text()
        h1 = " ".join(soup.select_one("article h1").get_text(" ", strip=True).replace("#", "").split())
        assert title.count(BOOK_TITLE) == 1 or (h1 != BOOK_TITLE and title.count(BOOK_TITLE) <= 2), title
        if h1 == BOOK_TITLE:
            assert title == BOOK_TITLE, title
        else:
            assert title == f"{h1} \u2014 {BOOK_TITLE}", (title, h1)


def _labels() -> set[str]:
    labels = set()
    for source in (harness.ROOT / "chapters").glob("*.md"):
        labels |= set(re.findall(r"(?m)^\(([^)\s]+)\)=\s*$", source.read_text(encoding="utf-8")))
    return labels


def test_no_pages_contents_list_a_references_label(built_html):
    labels = _labels()
    assert "masks" in labels and "soft-retrieval" in labels
    checked = 0
    for page in PAGES:
        soup = BeautifulSoup((built_html / page).read_text(encoding="utf-8"), "html.parser")
        entries = [" ".join(a.get_text(" ", strip=True).split()) for a in soup.select("#pst-page-toc-nav a")]
        checked += len(entries)
        slugs = [e for e in entries if e in labels]
        assert not slugs, f"{page}: its contents list labels {slugs}"
    assert checked > 20


def test_the_exercises_pages_contents_are_the_titles_of_the_pages_it_gathers(built_html):
    soup = BeautifulSoup((built_html / "chapters" / "exercises.html").read_text(encoding="utf-8"), "html.parser")
    entries = [" ".join(a.get_text(" ", strip=True).split()) for a in soup.select("#pst-page-toc-nav a")]
    headings = [" ".join(h.get_text(" ", strip=True).replace("#", "").split())
                for h in soup.select("article section > h2")]
    assert entries and entries == headings, (entries, headings)
    titles = set()
    for page in PAGES:
        h1 = BeautifulSoup((built_html / page).read_text(encoding="utf-8"), "html.parser").select_one("article h1")
        titles.add(" ".join(h1.get_text(" ", strip=True).replace("#", "").split()))
    assert set(entries) <= titles, set(entries) - titles
