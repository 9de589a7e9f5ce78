"""Run the book's pages as notebooks, the way a reader does with `make lab` and "Run All".

Each page in ``_toc.yml`` is a MyST Markdown file that jupytext opens as a notebook. This
module converts a page with jupytext, executes it top to bottom in a fresh kernel with
nbclient (working directory ``chapters/``, as under `make lab`), and on failure says which
cell failed and why: its index, its line in the .md file, its first source line and the
error. Pages run in separate processes, two at a time (the machine has two cores).

The book's build reads the same executions: ``--cache DIR`` also stores each executed
notebook in a jupyter-cache at DIR, where ``jupyter-book build`` (``execute_notebooks:
cache`` in ``_config.yml``) finds it and executes nothing; ``--stale`` runs only the pages
the cache does not hold, and the cache is emptied first when anything under ``code/`` has
changed since it was filled (a cache keyed on the pages' code cells would not notice)::

    .venv/bin/python -m tools.notebooks --cache _build/.jupyter_cache --stale

Usable on its own while writing a page::

    .venv/bin/python -m tools.notebooks chapters/variance.md chapters/saturation.md

With ``--out DIR`` each executed notebook is also written to ``DIR/chapters/PAGE.ipynb``,
where the page tests read its glued values when ``BOOK_EXECUTED=DIR`` is set::

    .venv/bin/python -m tools.notebooks --out _build/check chapters/variance.md
    BOOK_EXECUTED=_build/check .venv/bin/pytest tests/pages/test_variance.py

``make test`` executes every page once, with ``--cache _build/.jupyter_cache --out
_build/nbclient`` together, and sets ``BOOK_RUN_ALL=_build/nbclient``: the tests read each
page's result from that run (tests/site/test_archive.py compares the build's execution with
a reader's run of the downloaded archive).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
KERNEL = "python3"  # the kernel `make venv` installs into .venv: the book's own Python
CELL_TIMEOUT = 600  # seconds per cell; a reader's machine may be slower than the book's
CODE = ROOT / "code"
FINGERPRINT = "code-fingerprint"  # in the cache folder: the code/ the cache was filled with


def toc_pages() -> list[Path]:
    """Every page of ``_toc.yml`` in reading order, as paths to its source file."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    names = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                names.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))

    walk(toc.get("chapters"))
    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    pages = []
    for name in names:
        matches = [ROOT / (name + suffix) for suffix in (".md", ".ipynb") if (ROOT / (name + suffix)).exists()]
        if not matches:
            raise FileNotFoundError(f"_toc.yml names {name!r}, which has no .md or .ipynb file")
        pages.append(matches[0])
    return pages


def jupytext_notebook(source: Path):
    """The notebook jupytext (and so JupyterLab under `make lab`) makes of a page (a copy of
    the one read last for the page's current bytes: reading a page takes jupytext about 0.3 s,
    and the tests' parametrisations ask for each page several times)."""
    source = Path(source)
    stat = source.stat()
    return copy.deepcopy(_jupytext_read(source.resolve(), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=64)
def _jupytext_read(source: Path, mtime_ns: int, size: int):
    import jupytext

    return jupytext.read(source)


def is_notebook(source: Path) -> bool:
    """A page with a kernel (a jupytext header): offered as .ipynb and run as a notebook."""
    return "kernelspec" in jupytext_notebook(source).metadata


def code_sources(notebook) -> list[str]:
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


@dataclass
class RunResult:
    page: str
    ok: bool
    seconds: float
    code_cells: int
    message: str = ""  # on failure: which cell, where, and the error


def _md_line_of_code_cell(source: Path, code_index: int) -> int | None:
    """Line (1-based) of the ``{code-cell}`` fence that opens the page's code cell number code_index."""
    seen = -1
    for number, line in enumerate(source.read_text().splitlines(), start=1):
        if line.lstrip().startswith(("```{code-cell}", "````{code-cell}")):
            seen += 1
            if seen == code_index:
                return number
    return None


def run_page(source: Path, cwd: Path = CHAPTERS, out: Path | None = None,
             cache: Path | None = None) -> RunResult:
    """Execute one page top to bottom in a fresh kernel; never raises for a failing cell."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    notebook = jupytext_notebook(source)
    page = source.relative_to(ROOT).as_posix() if source.is_relative_to(ROOT) else str(source)
    n_code = sum(cell.cell_type == "code" for cell in notebook.cells)
    if n_code == 0:  # plain Markdown (e.g. the references): nothing to run, no kernel to start
        if cache is not None and "kernelspec" in notebook.metadata:  # else the build starts one
            _store(cache, source, notebook, 0.0)
        return RunResult(page, True, 0.0, 0)
    # coalesce_streams: a cell's printed lines as one block per stream, joined exactly (the
    # kernel sends them in as many pieces as its flushes happened to cut). record_timing off:
    # the executed notebook holds no clock times, so two runs can write the same bytes.
    client = NotebookClient(notebook, timeout=CELL_TIMEOUT, kernel_name=KERNEL,
                            resources={"metadata": {"path": str(cwd)}},
                            coalesce_streams=True, record_timing=False)
    start = time.perf_counter()
    code_index = -1
    try:
        with client.setup_kernel():
            for index, cell in enumerate(notebook.cells):
                if cell.cell_type != "code":
                    continue
                code_index += 1
                client.execute_cell(cell, index)
            client.set_widgets_metadata()  # the widgets' state, as JupyterLab saves it
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as error:
        cell = notebook.cells[index]
        first = next((line for line in cell.source.splitlines() if line.strip()), "")
        line = _md_line_of_code_cell(source, code_index)
        where = f"{page}:{line}" if line else page
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors:
            reason = f"{errors[0]['ename']}: {errors[0]['evalue']}"
        else:
            reason = f"{type(error).__name__}: {str(error).strip().splitlines()[-1] if str(error).strip() else ''}"
        message = (f"{page}: code cell {code_index} (notebook cell {index}, {where}) failed\n"
                   f"  first line: {first}\n  error: {reason}")
        return RunResult(page, False, time.perf_counter() - start, n_code, message)
    seconds = time.perf_counter() - start
    if out is not None:
        import nbformat

        target = out / "chapters" / f"{source.stem}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, target)
    if cache is not None:
        _store(cache, source, notebook, seconds)
    return RunResult(page, True, seconds, n_code)


def _store(cache: Path, source: Path, notebook, seconds: float) -> None:
    from jupyter_cache.base import CacheBundleIn

    open_cache(cache).cache_notebook_bundle(
        CacheBundleIn(notebook, str(source), data={"execution_seconds": seconds}), overwrite=True)


def open_cache(folder: Path):
    """The jupyter-cache at ``folder`` (created if missing), as jupyter-book opens it."""
    from jupyter_cache import get_cache

    return get_cache(folder)


def cached_notebook(source: Path, cache_dir: Path):
    """The executed notebook of ``source`` (as it is now) that the cache at ``cache_dir``
    holds: what the build read for that page. KeyError if the cache holds none.

    (myst-nb 1.4.0 writes ``_build/jupyter_execute/PAGE.ipynb`` without the cached outputs
    in cache mode, so the cache itself is where the build's execution can be read.)
    """
    if not (Path(cache_dir) / "global.db").exists():
        raise KeyError(f"no jupyter-cache at {cache_dir}")
    return open_cache(cache_dir).merge_match_into_notebook(jupytext_notebook(source))[1]


def code_fingerprint() -> str:
    """A hash of every file under ``code/`` (names and bytes): what the pages import."""
    digest = hashlib.sha256()
    for path in sorted(CODE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and ".egg-info" not in str(path):
            digest.update(path.relative_to(CODE).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def stale_pages(sources: list[Path], cache_dir: Path) -> list[Path]:
    """The pages the cache at ``cache_dir`` does not hold an execution of, as they are now.

    A cache filled with another ``code/`` is emptied first: its outputs came from other code.
    """
    cache = open_cache(cache_dir)
    mark = cache_dir / FINGERPRINT
    now = code_fingerprint()
    if not mark.exists() or mark.read_text() != now:
        cache.clear_cache()  # removes the folder
        open_cache(cache_dir).list_cache_records()  # makes it again, empty
        mark.write_text(now)
        return list(sources)
    stale = []
    for source in sources:
        notebook = jupytext_notebook(source)
        if "kernelspec" not in notebook.metadata:  # plain Markdown: the build executes nothing
            continue
        try:
            cache.match_cache_notebook(notebook)
        except KeyError:
            stale.append(source)
    return stale


def run_pages(sources: list[Path], workers: int = 2, out: Path | None = None,
              cache: Path | None = None) -> dict[str, RunResult]:
    """Run pages in separate Python processes, ``workers`` at a time; keyed by page path, in
    the order given. The longest sources start first, so that the short pages fill the end.

    With ``out``, each executed notebook is written to ``out/chapters/PAGE.ipynb``; with
    ``cache``, it is stored in the jupyter-cache there.
    """

    def one(source: Path) -> RunResult:
        extra = ["--out", str(out)] if out is not None else []
        extra += ["--cache", str(cache)] if cache is not None else []
        env = {"SOURCE_DATE_EPOCH": "1767225600", **os.environ,  # as the Makefile
               "PYTHONHASHSEED": "0",
               # two pages run at once on two cores: one BLAS thread each
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
        # The kernel draws with Jupyter's inline backend, as in a reader's JupyterLab (the
        # Makefile's MPLBACKEND=Agg is for scripts): a figure a cell leaves open is shown under
        # it there and here, so the build's figures are the bytes a reader's Run All gives.
        env.pop("MPLBACKEND", None)
        proc = subprocess.run([sys.executable, "-m", "tools.notebooks", "--json", *extra, str(source)],
                              cwd=ROOT, capture_output=True, text=True, env=env)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if proc.returncode not in (0, 1) or not lines:
            page = source.relative_to(ROOT).as_posix()
            return RunResult(page, False, 0.0, 0, f"{page}: the runner itself failed\n{proc.stderr[-2000:]}")
        return RunResult(**json.loads(lines[-1]))

    longest_first = sorted(sources, key=lambda source: -source.stat().st_size)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = dict(zip(longest_first, pool.map(one, longest_first)))
    return {results[source].page: results[source] for source in sources}


def page_id(source: Path) -> str:
    return source.relative_to(ROOT).as_posix()


#: Where one test session's Run-All execution of every page writes its notebooks, when no
#: earlier run is named (``BOOK_RUN_ALL``, ``BOOK_EXECUTED``): the tests read each page's result.
RUN_DIR = ROOT / "_build" / "nbclient"
RUNS_FILE = "runs.json"


def _executed_before() -> Path | None:
    """The folder of a Run-All that ran before pytest started: ``BOOK_RUN_ALL`` (``make test``)
    or ``BOOK_EXECUTED`` (``make check``), once ``runs.json`` shows it ran every page."""
    run_all = os.environ.get("BOOK_RUN_ALL")
    if run_all:
        if not (Path(run_all) / RUNS_FILE).exists():
            raise RuntimeError(f"BOOK_RUN_ALL={run_all} holds no {RUNS_FILE}: run "
                               f"`python -m tools.notebooks --out {run_all}` (every page) first")
        return Path(run_all)
    executed = os.environ.get("BOOK_EXECUTED")  # may hold only the pages being written
    if executed and (Path(executed) / RUNS_FILE).exists():
        return Path(executed)
    return None


def _own_run_dir() -> Path:
    # Under pytest-xdist each worker that needs the runs makes its own: never two writers in one folder.
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return RUN_DIR.with_name(f"{RUN_DIR.name}-{worker}") if worker else RUN_DIR


@functools.cache
def page_runs() -> dict[str, RunResult]:
    """Every page of the book run once per test session (shared by the tests that need it).

    When ``BOOK_RUN_ALL=DIR`` or ``BOOK_EXECUTED=DIR`` names a folder that
    ``python -m tools.notebooks --out DIR`` filled (it holds ``runs.json``), those runs are
    used and nothing is executed again: ``make check`` and ``make test`` execute each page
    once, before pytest starts. Otherwise every page is executed now, into :data:`RUN_DIR`.
    """
    before = _executed_before()
    if before is not None:
        runs = json.loads((before / RUNS_FILE).read_text())
        return {page: RunResult(**run) for page, run in runs.items()}
    import shutil

    shutil.rmtree(_own_run_dir(), ignore_errors=True)  # never read an earlier session's notebook
    return run_pages(toc_pages(), out=_own_run_dir())


def run_dir() -> Path:
    """The folder holding this session's Run-All notebooks (after :func:`page_runs`)."""
    return _executed_before() or _own_run_dir()


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tools.notebooks", description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", type=Path, help="page sources (default: every page of _toc.yml)")
    parser.add_argument("--out", type=Path, help="also write each executed notebook to OUT/chapters/PAGE.ipynb")
    parser.add_argument("--cache", type=Path, help="also store each executed notebook in the jupyter-cache CACHE"
                        " (the book's build reads _build/.jupyter_cache)")
    parser.add_argument("--stale", action="store_true", help="with --cache: run only the pages the cache lacks")
    parser.add_argument("--workers", type=int, default=2, help="pages executed at once (default 2: two cores)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    paths = [p.resolve() for p in args.pages] or toc_pages()
    out = args.out.resolve() if args.out else None
    cache = args.cache.resolve() if args.cache else None
    if args.stale and cache is None:
        parser.error("--stale needs --cache")
    if args.json:  # one page, one JSON line: what run_pages reads
        result = run_page(paths[0], out=out, cache=cache)
        print(json.dumps(asdict(result)))
        return 0 if result.ok else 1
    if out is not None:  # a fresh folder: no notebook of an earlier run may be read as this one's
        import shutil

        shutil.rmtree(out / "chapters", ignore_errors=True)
        (out / RUNS_FILE).unlink(missing_ok=True)
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, not {args.workers}")
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        if args.stale:
            fresh = len(paths)
            paths = stale_pages(paths, cache)
            print(f"{len(paths)} of {fresh} pages to run (the cache holds the others as they "
                  f"are, or they have no kernel)")
        else:  # every page given runs; a cache of other code must not serve the others
            stale_pages([], cache)
    results = run_pages(paths, workers=args.workers, out=out, cache=cache)
    if out is not None and not args.pages:  # every page: the tests may use these runs
        out.mkdir(parents=True, exist_ok=True)
        (out / RUNS_FILE).write_text(json.dumps({k: asdict(r) for k, r in results.items()}, indent=1))
    for result in results.values():
        print(f"{'ok  ' if result.ok else 'FAIL'} {result.page} ({result.code_cells} code cells, {result.seconds:.1f} s)")
        if not result.ok:
            print(result.message)
    return 0 if all(r.ok for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
