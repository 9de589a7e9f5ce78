"""The chapter's navigation on a phone and in a narrow window: the drawer buttons work.

Every page has two menu buttons (``.primary-toggle``) and two contents buttons
(``.secondary-toggle``): pydata-sphinx-theme 0.17's, hidden, and sphinx-book-theme's, visible;
the themes' scripts bind only the first, hidden one (pydata-sphinx-theme issue 2451), so the
visible buttons did nothing. ``site/static/book-theme-fixes.js`` hands their clicks to the bound one.

* 390 x 844, touch: a tap on the menu button opens the chapter's contents in a drawer, on
  every page, and a tap on a link in it loads that page;
* below 1200 px (390 and 1000 px): a tap on the contents button opens the page's sections in
  a drawer, and a tap on one scrolls to it and closes the drawer;
* 1280 px: the menu button hides the sidebar and shows it again (the theme's wide-screen
  behaviour).
"""

from __future__ import annotations

import re

import pytest

from tests import harness

BUILT = (harness.HTML / "index.html").exists()
PAGES = harness.book_pages() if BUILT else ["index.html"]
# The chapter's pages in the order of the drawer's links (every page but search and the index).
TOC_PAGES = [p for p in PAGES if p.startswith("chapters/")]
TOC_PATTERN = 'class="[^"]*\\bsecondary-toggle\\b[^"]*btn'
PAGES_WITH_CONTENTS = [p for p in TOC_PAGES if BUILT and re.search(
    TOC_PATTERN, (harness.HTML / p).read_text(encoding="utf-8"))]

VISIBLE_TOGGLE = "{kind}:visible"
PRIMARY_DIALOG = "#pst-primary-sidebar-modal"
SECONDARY_DIALOG = "#pst-secondary-sidebar-modal"


@pytest.fixture()
def touch_page(browser, request):
    width = getattr(request, "param", 390)
    context = browser.new_context(viewport={"width": width, "height": 844}, has_touch=True,
                                  is_mobile=width < 600, device_scale_factor=2 if width < 600 else 1)
    guard = harness.GuardedPage.open(context)
    yield guard
    context.close()


def _visible_toggle(page, kind: str):
    toggles = page.locator(f"{kind}:visible")
    assert toggles.count() == 1, f"{toggles.count()} visible {kind} buttons"
    return toggles.first


def _dialog_open(page, selector: str) -> bool:
    return page.evaluate("(s) => document.querySelector(s).open", selector)


def test_the_workaround_names_the_upstream_issue():
    script = (harness.ROOT / "site" / "static" / "book-theme-fixes.js").read_text()
    assert "pydata-sphinx-theme issue 2451" in script


def test_every_page_loads_the_drawer_workaround(built_html):
    for page in PAGES:
        html = (built_html / page).read_text(encoding="utf-8")
        if 'http-equiv="Refresh"' in html[:200]:
            continue  # the root's redirect to chapters/index.html
        assert "_static/book-theme-fixes.js" in html, page


def test_the_theme_still_renders_two_drawer_buttons_of_each_kind(built_html):
    # What the workaround is for; if an upgrade renders one, the script has nothing left to do
    # (it does no harm) and can go with this test.
    html = (built_html / "chapters" / "variance.html").read_text(encoding="utf-8")
    assert len(re.findall(r'<button class="[^"]*\bprimary-toggle\b', html)) == 2
    assert len(re.findall(r'<button class="[^"]*\bsecondary-toggle\b', html)) == 2


@pytest.mark.parametrize("page_path", TOC_PAGES)
def test_a_tap_on_the_menu_button_at_390px_opens_the_drawer_and_a_link_in_it_loads_its_page(
        touch_page, site_url, page_path):
    page = touch_page.page
    touch_page.goto(site_url + page_path)
    assert not _dialog_open(page, PRIMARY_DIALOG)
    _visible_toggle(page, ".primary-toggle").tap()
    page.wait_for_function("(s) => document.querySelector(s).open", arg=PRIMARY_DIALOG)
    drawer = page.locator(PRIMARY_DIALOG)
    box = drawer.bounding_box()
    assert box and box["width"] >= 250 and box["x"] == 0, box
    links = page.locator(f"{PRIMARY_DIALOG} a.reference.internal:visible")
    assert links.count() == len(TOC_PAGES), links.count()
    # The next page of the chapter (the first from the last), by a tap on its link.
    target = TOC_PAGES[(TOC_PAGES.index(page_path) + 1) % len(TOC_PAGES)]
    href = target.split("/")[-1]  # from a page of chapters/ to another
    link = page.locator(f'{PRIMARY_DIALOG} a.reference.internal[href="{href}"]')
    assert link.is_visible(), f"no visible link to {target} in the drawer"
    with page.expect_navigation():
        link.tap()
    page.wait_for_load_state("networkidle")
    assert page.url == site_url + target
    touch_page.assert_clean()


@pytest.mark.parametrize("touch_page", [390, 1000], indirect=True, ids=["390px", "1000px"])
@pytest.mark.parametrize("page_path", PAGES_WITH_CONTENTS)
def test_a_tap_on_the_contents_button_below_1200px_opens_the_pages_sections_and_goes_to_one(
        touch_page, site_url, page_path):
    page = touch_page.page
    touch_page.goto(site_url + page_path)
    _visible_toggle(page, ".secondary-toggle").tap()
    page.wait_for_function("(s) => document.querySelector(s).open", arg=SECONDARY_DIALOG)
    links = page.locator(f"{SECONDARY_DIALOG} a.nav-link:visible")
    assert links.count() >= 2, links.count()
    link = links.nth(links.count() // 2)
    href = link.get_attribute("href")
    assert href.startswith("#"), href
    link.tap()
    page.wait_for_function("(s) => !document.querySelector(s).open", arg=SECONDARY_DIALOG)
    page.wait_for_timeout(300)  # the smooth scroll's end
    assert page.evaluate("location.hash") == href
    top = page.evaluate("(id) => document.getElementById(id).getBoundingClientRect().top",
                        href[1:])
    at_bottom = page.evaluate("scrollY + innerHeight >= document.documentElement.scrollHeight - 2")
    assert 0 <= top < 844 / 2 or (at_bottom and 0 <= top < 844), f"{href} is at {top} px"
    touch_page.assert_clean()


def test_escape_closes_the_drawer_and_gives_focus_back_to_the_button(touch_page, site_url):
    page = touch_page.page
    touch_page.goto(site_url + "chapters/variance.html")
    toggle = _visible_toggle(page, ".primary-toggle")
    toggle.tap()
    page.wait_for_function("(s) => document.querySelector(s).open", arg=PRIMARY_DIALOG)
    page.keyboard.press("Escape")
    page.wait_for_function("(s) => !document.querySelector(s).open", arg=PRIMARY_DIALOG)
    assert toggle.evaluate("(b) => b === document.activeElement")
    # The drawer's links are back in the (hidden) sidebar: a second tap opens them again.
    toggle.tap()
    page.wait_for_function("(s) => document.querySelector(s).open", arg=PRIMARY_DIALOG)
    assert page.locator(f"{PRIMARY_DIALOG} a.reference.internal:visible").count() == len(TOC_PAGES)
    touch_page.assert_clean()


def test_at_1280px_the_menu_button_hides_the_sidebar_and_shows_it_again(guarded_page, site_url):
    page = guarded_page.page
    guarded_page.goto(site_url + "chapters/variance.html")
    sidebar = page.locator("#pst-primary-sidebar")
    assert sidebar.is_visible()
    _visible_toggle(page, ".primary-toggle").click()
    page.wait_for_timeout(500)  # the theme's slide
    assert not sidebar.is_visible()  # the theme's pst-sidebar-hidden: visibility hidden
    assert not _dialog_open(page, PRIMARY_DIALOG)
    _visible_toggle(page, ".primary-toggle").click()
    page.wait_for_timeout(500)
    assert sidebar.is_visible() and sidebar.bounding_box()["width"] > 200
    guarded_page.assert_clean()
