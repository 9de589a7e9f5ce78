"""Figure 1: how long `make book` takes from a clean build folder, and each page's run time.

Builds into temporary folders (never _build, which the tests use):

* `make book`'s steps, timed one by one: the static figures (figures/draw.py), the pages'
  execution (`python -m tools.notebooks --cache ... --workers N`: N pages at once, N = the
  machine's cores, into the jupyter-cache the build reads), the build
  (`jupyter-book build --all -W -n --keep-going`, which executes nothing), then the PDF
  (`_ext/book_pdf.py`). Their sum is the clean `make book` (with .venv and node_modules
  installed; installing is a one-off that depends on the network), judged against 120 s.
* An unchanged rebuild as `make html` runs it (`--stale`, then the build without --all).
* A reader's plain `jupyter-book build --all` into an empty cache: myst-nb executes each
  page itself, one at a time; each page's execution time is the one myst-nb recorded in that
  build (alone on its core), the figure the page "How this book was built" shows.
"""

from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

from common import ROOT, Goal, Stopwatch, heading

MAKE_BOOK_LIMIT = 120.0  # seconds, a clean make book on a 2-core machine
REBUILD_LIMIT = 10.0
PAGE_LIMIT = 30.0


def _jupyter_book() -> str:
    return str(Path(sys.executable).with_name("jupyter-book"))


def _run(cmd: list[str]) -> tuple[float, int, str]:
    with Stopwatch() as w:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    return w.seconds, proc.returncode, proc.stdout + proc.stderr


def _execute(out: Path, jobs: int, stale: bool) -> tuple[float, int, str]:
    """make book's execution of the pages into the cache of the build at ``out``."""
    return _run([sys.executable, "-m", "tools.notebooks", "--cache", str(out / "_build" / ".jupyter_cache"),
                 "--workers", str(jobs), *(["--stale"] if stale else [])])


def _build(out: Path, full: bool) -> tuple[float, int, str]:
    """`jupyter-book build` into ``out``: it reads the pages' outputs from out's cache."""
    return _run([_jupyter_book(), "build", *(["--all"] if full else []), "-W", "-n", "--keep-going",
                 ".", "--path-output", str(out)])


def page_run_times(out: Path) -> dict[str, float]:
    """Seconds each page took to execute, from myst-nb's record in the Sphinx environment."""
    with open(out / "_build" / ".doctrees" / "environment.pickle", "rb") as f:
        env = pickle.load(f)
    times = {}
    for docname, data in sorted(getattr(env, "nb_metadata", {}).items()):
        exec_data = data.get("exec_data")
        if exec_data and exec_data.get("runtime") is not None:
            times[docname] = float(exec_data["runtime"])
    return times


def _warnings(log: str) -> list[str]:
    return [line for line in log.splitlines()
            if ("WARNING" in line or "ERROR" in line) and "IPKernelApp" not in line]


def run(out: Path) -> dict:
    """make book's steps into ``out``, an unchanged rebuild, and a plain serial build beside it."""
    heading("1. Building the book (make book from a clean build folder; unchanged; one page at a time)")
    serial = out.with_name(out.name + "-serial")
    for folder in (out, serial):
        if folder.exists():
            shutil.rmtree(folder)
    jobs = os.cpu_count() or 1
    figures_s, figures_rc, _ = _run([sys.executable, str(ROOT / "figures" / "draw.py")])
    execute_s, execute_rc, execute_log = _execute(out, jobs, stale=False)
    built_s, built_rc, clean_log = _build(out, full=True)
    clean_s, clean_rc = execute_s + built_s, max(execute_rc, built_rc)
    clean_log = execute_log + clean_log
    html = out / "_build" / "html"
    pdf_s, pdf_rc, pdf_log = _run([sys.executable, str(ROOT / "_ext" / "book_pdf.py"), "--html", str(html),
                                   "--out", str(html / "downloads" / "scaled-dot-product-attention.pdf")])
    book_s = figures_s + clean_s + pdf_s
    stale_s, stale_rc, _ = _execute(out, jobs, stale=True)
    rebuild_s, rebuild_rc, _ = _build(out, full=False)
    rebuild_s, rebuild_rc = stale_s + rebuild_s, max(stale_rc, rebuild_rc)
    serial_s, serial_rc, serial_log = _build(serial, full=True)
    pages = page_run_times(serial)
    warnings = _warnings(clean_log) + _warnings(serial_log)
    print(f"  figures (figures/draw.py):                    {figures_s:6.1f} s   exit {figures_rc}")
    print(f"  execution, {jobs} pages at a time (fresh):         {execute_s:6.1f} s   exit {execute_rc}")
    print(f"  build, reading the cache (--all):             {built_s:6.1f} s   exit {built_rc}")
    print(f"  PDF (_ext/book_pdf.py):                       {pdf_s:6.1f} s   exit {pdf_rc}")
    print(f"  clean make book, the sum:                     {book_s:6.1f} s")
    print(f"  unchanged rebuild:                            {rebuild_s:6.1f} s   exit {rebuild_rc}")
    print(f"  plain jupyter-book build, one page at a time: {serial_s:6.1f} s   exit {serial_rc}")
    print(f"  pages executed: {len(pages)}, summed execution {sum(pages.values()):.1f} s (in the plain build)")
    for doc, seconds in sorted(pages.items(), key=lambda kv: -kv[1]):
        print(f"    {seconds:6.1f} s  {doc}")
    failed = [(name, rc, log) for name, rc, log in (("build", clean_rc, clean_log), ("PDF", pdf_rc, pdf_log),
                                                    ("plain build", serial_rc, serial_log)) if rc]
    for name, rc, log in failed:
        print(f"  the {name} FAILED (exit {rc}); last lines:")
        for line in log.strip().splitlines()[-8:]:
            print("    " + line.strip()[:160])
    slowest_doc, slowest = max(pages.items(), key=lambda kv: kv[1]) if pages else ("-", float("nan"))
    goals = [
        Goal("clean make book (figures + build + PDF)", book_s, MAKE_BOOK_LIMIT, "<=", " s"),
        Goal("unchanged rebuild", rebuild_s, REBUILD_LIMIT, "<=", " s"),
        Goal("slowest page", slowest, PAGE_LIMIT, "<=", " s", detail=f"({slowest_doc})"),
        Goal("warning-free builds and a PDF (exit statuses)", max(figures_rc, clean_rc, pdf_rc, serial_rc), 0,
             "<=", ""),
    ]
    return dict(make_book_s=book_s, figures_s=figures_s, clean_build_s=clean_s, clean_build_exit=clean_rc,
                pdf_s=pdf_s, pdf_exit=pdf_rc, rebuild_s=rebuild_s, rebuild_exit=rebuild_rc,
                serial_build_s=serial_s, serial_build_exit=serial_rc, page_execution_s=pages,
                warnings=warnings[:50], html=str(html), goals=goals)
