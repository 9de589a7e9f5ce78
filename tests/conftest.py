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


def pytest_collection_modifyitems(config, items):
    """Modules holding a test marked slow come first, then the others by their number of
    tests, most first (what pytest-xdist's loadfile does by itself). `make test` runs with
    `--dist loadfile --no-loadscope-reorder`: each module is one unit of work, handed to the
    two workers in this order, so that the longest units (the archive's install and Run All,
    the JupyterLab checks, the training page's reruns) start at once instead of ending the
    run with one worker idle. The order within a module is kept."""
    from collections import Counter

    count = Counter(item.path for item in items)
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: (item.path not in slow, -count[item.path]))
