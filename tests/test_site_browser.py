"""Every page of the built book loads in Chromium with no outside request and a clean console."""

import pytest

from tests import harness

PAGES = harness.book_pages() if (harness.HTML / "index.html").exists() else ["index.html"]


@pytest.mark.parametrize("page_path", PAGES)
def test_page_loads_clean_with_no_request_outside_the_origin(guarded_page, site_url, page_path):
    guarded_page.goto(site_url + page_path)
    guarded_page.page.wait_for_timeout(300)  # let late scripts (MathJax, widgets) report
    guarded_page.assert_clean()
    assert guarded_page.outside_requests == []


def test_math_is_typeset_by_the_vendored_mathjax(guarded_page, site_url):
    guarded_page.goto(site_url + "chapters/index.html")
    guarded_page.page.wait_for_selector("mjx-container", timeout=15000)
    assert guarded_page.page.locator("mjx-container").count() > 0
    guarded_page.assert_clean()
