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


def _record_start(args):
    name, log = args
    with open(log, "a", encoding="utf-8") as out:
        out.write(name + "\n")
    import time

    time.sleep(0.15)  # long enough that every task is added before the first one ends


def test_pages_start_slowest_first_in_sphinxs_parallel_tasks(tmp_path):
    """page_tasks lists the pages for Sphinx's task runner, which starts the first nproc
    tasks at once and then the one added last: the pages must start in SLOW_FIRST's order
    (a Sphinx that ran its tasks in another order would make this fail, not the build)."""
    from sphinx.util.parallel import ParallelTasks

    import book_build

    from tools.notebooks import toc_pages

    names = sorted(path.relative_to(harness.ROOT).with_suffix("").as_posix() for path in toc_pages())
    assert set(book_build.SLOW_FIRST) <= set(names), "SLOW_FIRST names a page _toc.yml lacks"
    log = tmp_path / "started.txt"
    tasks = ParallelTasks(2)
    for chunk in book_build.page_tasks(names, 2):
        assert len(chunk) == 1
        tasks.add_task(_record_start, (chunk[0], str(log)))
    tasks.join()
    started = log.read_text(encoding="utf-8").split()
    assert sorted(started) == names
    slow = list(book_build.SLOW_FIRST)
    # Two tasks run at once (one per process), and which of two starting together writes to
    # the log first is up to the machine's scheduler: each slow page starts within one place
    # of its place in SLOW_FIRST.
    for k, name in enumerate(slow):
        assert abs(started.index(name) - k) <= 1, started


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
