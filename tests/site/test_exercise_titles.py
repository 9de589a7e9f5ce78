"""The built pages number and title the exercises as the sources do: each exercise page shows
"Exercise N (title)" with N from the order of _toc.yml, and the exercises page links each one
as "Exercise N" followed by the same title."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from tests import harness
from tests.checkers.test_common import book_exercises


class _Text(HTMLParser):
    """The text of an HTML fragment, each KaTeX formula given back as $TeX$."""

    def __init__(self):
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0  # depth inside a KaTeX span (rendered formula)
        self._tex = False

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class") or ""
        if self._skip:
            self._skip += tag == "span"
        elif tag == "span" and cls.split()[:1] == ["katex"]:
            self._skip = 1
        self._tex = tag == "annotation"

    def handle_endtag(self, tag):
        if self._skip and tag == "span":
            self._skip -= 1
        self._tex = False

    def handle_data(self, data):
        if self._tex:
            self.parts.append(f"${data}$")
        elif not self._skip:
            self.parts.append(data)


def text(fragment: str) -> str:
    parser = _Text()
    parser.feed(fragment)
    return " ".join("".join(parser.parts).split())


@pytest.mark.skipif(not (harness.HTML / "index.html").exists(), reason="the book is not built")
def test_built_pages_number_and_title_the_exercises_as_the_sources_do():
    exercises = book_exercises()
    shown, listed = [], []
    for page in dict.fromkeys(page for page, _, _ in exercises):
        html = (harness.HTML / f"{page}.html").read_text(encoding="utf-8")
        shown += [text(t) for t in re.findall(r'<p class="admonition-title">(.*?)</p>', html, re.S)
                  if text(t).startswith("Exercise")]
    listing = (harness.HTML / "chapters" / "exercises.html").read_text(encoding="utf-8")
    for label, number, title in re.findall(
            r'href="[^"]*#(ex-[\w-]+)"><span class="std std-numref">(Exercise \d+)</span></a>:\s*'
            r"<strong>(.*?)</strong>", listing, re.S):
        listed.append((label, number, text(title).rstrip(".")))
    assert shown == [f"Exercise {i} ({title})" for i, (_, _, title) in enumerate(exercises, 1)]
    assert listed == [(label, f"Exercise {i}", title) for i, (_, label, title) in enumerate(exercises, 1)]
