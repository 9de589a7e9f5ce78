"""`jupyter-book build`, with its pages read and executed by several processes at once.

    .venv/bin/python _ext/book_build.py --jobs 2 build --all -W -n --keep-going .

Takes the arguments of ``jupyter-book`` after ``--jobs N`` and builds exactly what that
command builds. Jupyter Book 1's command line has no ``--jobs``, but the function it calls,
``jupyter_book.sphinx.build_sphinx``, passes ``jobs`` to Sphinx as its ``-j``. Sphinx then
reads the pages in parallel processes, and myst-nb executes each page in the process that
reads it, so page execution, most of a clean build, is spread over the cores.

Sphinx would hand each process a fixed run of pages in alphabetical order (six of the
thirteen per process with two jobs), which puts the three slowest pages in one process; here
each page is its own task, started as a process frees up, and the slowest pages
(``SLOW_FIRST``) are started first, so that the short ones fill the gaps at the end instead
of a long one running alone. Pages are also written by every job (Sphinx leaves one core
to its main process). Neither changes what is written: a plain serial `jupyter-book build`
of the same commit wrote the same files, the pages identical but for widget ids, figure
file names (hashes of the figures' bytes) and measured times (compared on 2026-12-01; how
far two executions agree is tests/site/test_determinism.py's subject).
"""

from __future__ import annotations

import functools
import sys

# The pages that take longest to execute, slowest first (make book's execution table, on
# "How this book was built"): started before the others. A page missing here, or listed
# in the wrong place, costs only time.
SLOW_FIRST = ("chapters/training", "chapters/variance", "chapters/saturation", "chapters/pytorch",
              "chapters/backward", "chapters/stability", "chapters/masks")


def page_tasks(names, nproc: int = 1, maxbatch=None) -> list[list[str]]:
    """Sphinx's ``make_chunks``, one page per task, listed so that the pages start slowest
    first (SLOW_FIRST's order, then the others in Sphinx's order).

    Sphinx 7.4's ParallelTasks starts the first ``nproc`` tasks as they are added and then,
    as processes free up, the waiting task added *last* (``dict.popitem``): so the slowest
    ``nproc`` pages come first here, and the others follow in reverse.
    """
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    order = sorted(names, key=lambda n: rank.get(n, len(rank)))
    nproc = max(1, nproc)
    return [[n] for n in order[:nproc] + order[nproc:][::-1]]


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] != "--jobs" or not argv[1].isdigit() or int(argv[1]) < 1:
        print("usage: book_build.py --jobs N <jupyter-book arguments>", file=sys.stderr)
        return 2
    jobs, rest = int(argv[1]), argv[2:]

    # jsonschema imports rfc3987-syntax when it is installed (JupyterLab's jupyter-events asks
    # for it), and that compiles 39 grammars on import: about 2 s of every build. It only
    # checks the "iri" formats, and Jupyter Book validates its configuration without a format
    # checker, so the build does not use it.
    sys.modules.setdefault("rfc3987_syntax", None)

    import jupyter_book.sphinx
    import sphinx.builders

    # The command imports build_sphinx from its module when it runs, so it gets this one.
    jupyter_book.sphinx.build_sphinx = functools.partial(jupyter_book.sphinx.build_sphinx,
                                                         jobs=jobs)
    # One page per task, the slowest first: Sphinx's own chunks are runs of sorted names.
    sphinx.builders.make_chunks = page_tasks

    # Sphinx writes pages with jobs - 1 processes, keeping one core for the main process,
    # which resolves each page's doctree before handing it out. It hands out every page at
    # the start, and resolving takes it about half as long as writing takes the writers, so
    # with two jobs one process would write every page while the main one soon idles.
    # Write with all of them.
    write_parallel = sphinx.builders.Builder._write_parallel

    def write_with_every_job(self, docnames, nproc):
        return write_parallel(self, docnames, nproc=max(nproc, self.app.parallel))

    sphinx.builders.Builder._write_parallel = write_with_every_job

    # sphinx-external-toc always loads sphinx-multitoc-numbering, which does not declare
    # itself safe for parallel reading, so Sphinx would read serially (with a warning,
    # an error under -W). It is safe: it replaces the method that numbers sections, and
    # Sphinx calls that in the main process once every page has been read and merged.
    import sphinx_multitoc_numbering

    def numbering_setup(app, _setup=sphinx_multitoc_numbering.setup):
        _setup(app)
        return {"parallel_read_safe": True, "parallel_write_safe": True}

    sphinx_multitoc_numbering.setup = numbering_setup

    from jupyter_book.cli.main import main as jupyter_book
    return jupyter_book(args=rest, prog_name="jupyter-book")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
