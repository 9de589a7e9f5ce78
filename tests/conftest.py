"""Fixtures shared by the tests: the built site, a server, and a guarded Chromium."""

from __future__ import annotations

import pytest

from tests import harness


@pytest.fixture(scope="session")
def built_html():
    harness.book_pages()  # fails with a clear message when the book is not built
    return harness.HTML


@pytest.fixture(scope="session")
def site_url(built_html):
    with harness.serve(built_html) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = harness.launch(p)
        yield b
        b.close()


@pytest.fixture()
def guarded_page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    guard = harness.GuardedPage.open(context)
    yield guard
    context.close()
