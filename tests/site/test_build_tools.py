"""The build's own tools, without a build: the parallel builder's command line
(_ext/book_build.py, what make book runs) and the exact joining of a cell's printed pieces."""

from __future__ import annotations

import subprocess
import sys

import nbformat
import pytest

from tests import harness

sys.path.insert(0, str(harness.ROOT / "_ext"))


@pytest.mark.parametrize("args", [[], ["build", "."], ["--jobs"], ["--jobs", "0", "build", "."],
                                  ["--jobs", "two", "build", "."]])
def test_book_build_refuses_a_missing_or_bad_job_count(args):
    proc = subprocess.run([sys.executable, str(harness.ROOT / "_ext" / "book_build.py"), *args],
                          capture_output=True, text=True, cwd=harness.ROOT)
    assert proc.returncode == 2
    assert "usage: book_build.py --jobs N" in proc.stderr


def stream(name, text):
    return nbformat.NotebookNode(output_type="stream", name=name, text=text)


def test_printed_pieces_are_joined_exactly_in_order():
    import book_markup

    pieces = [stream("stdout", "shapes: dQ"), stream("stderr", "a warning\n"),
              stream("stdout", " (2, 3, 5, 4)\n"), nbformat.NotebookNode(output_type="display_data", data={}),
              stream("stdout", "next line\n"), stream("stderr", "more\n")]
    joined = book_markup._join_streams(pieces)
    assert [(o.output_type, o.get("name"), o.get("text")) for o in joined] == [
        ("stream", "stdout", "shapes: dQ (2, 3, 5, 4)\nnext line\n"),
        ("stream", "stderr", "a warning\nmore\n"),
        ("display_data", None, None)]
    assert pieces[0].text == "shapes: dQ", "the executed notebook's own outputs must not change"


def test_the_build_uses_the_exact_join():
    import myst_nb.core.render

    import book_markup

    class App:
        def connect(self, *args, **kwargs):
            pass

        def add_css_file(self, *args, **kwargs):
            pass

    book_markup.setup(App())
    assert myst_nb.core.render.coalesce_streams is book_markup._join_streams
