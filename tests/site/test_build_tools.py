"""The build's own tools: the page runner that executes the book for its build (joining a
cell's printed pieces exactly, caching each page until it or code/ changes, a stock
`jupyter-book build` reading its cache), and the extensions' helpers."""

from __future__ import annotations

import subprocess
import sys

import nbformat

from tests import harness
from tools import notebooks

sys.path.insert(0, str(harness.ROOT / "_ext"))


PRINTING_PAGE = harness.NOTEBOOK_FRONT_MATTER + """
# A page that prints in pieces

```{code-cell} ipython3
import sys, time
print("shapes: dQ", end="")
sys.stdout.flush()
time.sleep(0.5)  # the kernel sends what was printed so far as its own message
print(" (2, 3, 5, 4)")
sys.stderr.write("a warning\\n")
sys.stderr.flush()
time.sleep(0.5)
print("next line")
```
"""


def test_the_runner_joins_a_cells_printed_pieces_exactly(tmp_path):
    # The kernel sent four messages; the page shows one block per stream, as printed.
    page = tmp_path / "page.md"
    page.write_text(PRINTING_PAGE)
    result = notebooks.run_page(page, cwd=tmp_path, out=tmp_path / "run")
    assert result.ok, result.message
    cell = nbformat.read(tmp_path / "run" / "chapters" / "page.ipynb", as_version=4).cells[1]
    assert [(o.output_type, o.name, o.text) for o in cell.outputs] == [
        ("stream", "stdout", "shapes: dQ (2, 3, 5, 4)\nnext line\n"),
        ("stream", "stderr", "a warning\n")]
    assert "execution" not in cell.metadata, "no clock times in an executed notebook"


def test_the_cache_holds_a_page_until_it_or_code_changes(tmp_path, monkeypatch):
    code = tmp_path / "code"
    code.mkdir()
    (code / "helper.py").write_text("X = 1\n")
    monkeypatch.setattr(notebooks, "CODE", code)
    page, cache = tmp_path / "page.md", tmp_path / "cache"
    page.write_text(harness.NOTEBOOK_FRONT_MATTER + "\n```{code-cell} ipython3\nprint(1)\n```\n")
    assert notebooks.stale_pages([page], cache) == [page], "an empty cache holds nothing"
    assert notebooks.run_page(page, cwd=tmp_path, cache=cache).ok
    assert notebooks.stale_pages([page], cache) == [], "the executed page is in the cache"
    (code / "helper.py").write_text("X = 2\n")
    assert notebooks.stale_pages([page], cache) == [page], "code/ changed: run every page again"
    assert notebooks.open_cache(cache).list_cache_records() == [], "and the cache was emptied"
    assert notebooks.run_page(page, cwd=tmp_path, cache=cache).ok
    page.write_text(page.read_text().replace("print(1)", "print(2)"))
    assert notebooks.stale_pages([page], cache) == [page], "the page's code changed"


def test_the_build_reads_the_runners_execution_and_executes_nothing(tmp_path):
    # What make book does: the runner executes and caches, a stock jupyter-book build reads.
    folder = harness.one_page_book(tmp_path / "book", PRINTING_PAGE)
    cache = folder / "_build" / ".jupyter_cache"
    source = folder / "chapters" / "index.md"
    assert notebooks.run_page(source, cwd=source.parent, cache=cache).ok
    built = harness.build_book(folder, timeout=600)
    log = built.stdout + built.stderr
    assert built.returncode == 0, log[-3000:]
    assert "Executing notebook" not in log and "Executed notebook" not in log, log[-3000:]
    html = (folder / "_build" / "html" / "chapters" / "index.html").read_text()
    assert "shapes: dQ (2, 3, 5, 4)\nnext line" in html


def test_each_build_process_has_its_own_katex_server_and_stops_it(tmp_path):
    # A stand-in for sphinxcontrib.katex's server class: start() counts, terminate() records.
    import multiprocessing
    import os
    import types

    import book_math

    class Server:
        katex_server = None

        def __init__(self, pid):
            self.pid = pid

        @classmethod
        def start(cls):
            return cls(os.getpid())

        @classmethod
        def get(cls):
            if cls.katex_server is None:
                cls.katex_server = cls.start()
            return cls.katex_server

        def terminate(self):
            (tmp_path / f"stopped-{os.getpid()}").write_text(str(self.pid))

    book_math._server_per_process(types.SimpleNamespace(KaTeXServer=Server))
    main = Server.get()
    assert Server.get() is main and main.pid == os.getpid()

    def worker(out):
        server = Server.get()
        out.put((server.pid, server is main))

    context = multiprocessing.get_context("fork")  # as Sphinx's parallel build forks
    out = context.Queue()
    process = context.Process(target=worker, args=(out,))
    process.start()
    child_server_pid, shared = out.get(timeout=30)
    process.join(timeout=30)
    assert child_server_pid == process.pid and not shared, "a worker must start its own server"
    assert (tmp_path / f"stopped-{process.pid}").read_text() == str(process.pid), \
        "the worker's server was not stopped when the worker ended"
    assert not (tmp_path / f"stopped-{os.getpid()}").exists(), "the main process's server stops at exit only"


def test_math_characters_are_what_the_formulas_show_not_their_mathml_or_the_page(tmp_path):
    import book_math

    site = tmp_path / "html"
    (site / "chapters").mkdir(parents=True)
    (site / "chapters" / "a.html").write_text(
        '<p>outside</p><span class="katex"><span class="katex-mathml"><math><semantics>'
        '<mi>z</mi><annotation encoding="application/x-tex">\\zeta</annotation></semantics>'
        '</math></span><span class="katex-html"><span class="mord mathnormal">q</span>'
        '<span class="mrel">&lt;</span><span>&#8730;</span></span></span>', encoding="utf-8")
    (site / "b.html").write_text('<span class="katex"><span class="katex-html">K</span></span>',
                                 encoding="utf-8")
    assert book_math.math_characters(site) == {ord("q"), ord("<"), 0x221A, ord("K")}


def test_only_each_formulas_own_markup_is_read_for_its_characters():
    import book_math

    html = ('<p>x<span class="katex"><span class="a"><span>1</span></span><span>2</span></span>'
            ' text <span class="other">y</span><div><span class="katex"><span>3</span></span></div>'
            '<span class="katex"><span>open')
    assert list(book_math._formulas(html)) == [
        '<span class="katex"><span class="a"><span>1</span></span><span>2</span></span>',
        '<span class="katex"><span>3</span></span>',
        '<span class="katex"><span>open',
    ]
    assert list(book_math._formulas("<p>no math</p>")) == []


def test_nothing_outside_the_tests_imports_the_tests():
    # The PDF, the benchmarks and the Sphinx extensions use tools/; tests/ is for the tests.
    import re

    offenders = []
    ROOT = harness.ROOT
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    assert "_ext/book_pdf.py" in tracked
    for name in tracked:
        path = ROOT / name
        if name.startswith("tests/") or not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        if re.search(r"^\s*(from tests\b|import tests\b)|-m tests\.", text, re.M):
            offenders.append(path.relative_to(ROOT).as_posix())
    makefile = (ROOT / "Makefile").read_text()
    if re.search(r"-m tests\.", makefile):
        offenders.append("Makefile")
    assert not offenders, f"these import the test package: {offenders}"
