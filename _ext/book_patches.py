"""The one place where the book changes a package's internals. Each entry names the pinned
version it was written against and why no stock option does it; `tests/site/
test_build_tools.py` checks that every patch here still finds what it replaces (an upgrade
that moves it fails there, not in a build). Nothing else in _ext/ patches a package.

1. sphinxcontrib-katex 0.9.11, ``KaTeXServer.start_server_process`` (katex.py): the
   extension connects to its node server once, as soon as node's socket file exists; node
   creates the file (bind) a moment before it accepts connections (listen), and on a loaded
   machine the connect in between is refused and the build stops (2 of 4 one-page builds
   at a load of 4-7 here). Replaced by the same start-up with the connect retried until the
   start-up timeout. No option exists; upstream: none filed yet (this machine has no access
   to the tracker), to be reported at github.com/hagenw/sphinxcontrib-katex/issues.
2. sphinxcontrib-katex 0.9.11, ``STARTUP_TIMEOUT`` and ``RENDER_TIMEOUT`` (5 s each): raised
   to 60 s, the knobs the extension's own timeout messages name ("Try increasing
   RENDER_TIMEOUT"); on a loaded machine node's start took longer than 5 s.
3. sphinxcontrib-katex 0.9.11, ``render_latex``: the build-time renderer uses
   ``throwOnError: false`` (``KATEX_DEFAULT_OPTIONS``) and no setting reaches it, so a parse
   error comes out as red TeX in the page and an unknown command as a red word, with no
   warning. Wrapped: each formula is rendered strictly first (throwOnError, strict "error");
   on an error a build warning (an error under -W) names the page and the TeX, and the page
   still gets the lenient rendering. Upstream made pre-rendering fail on errors in
   hagenw/sphinxcontrib-katex#48 (the command-line renderer); the server renderer of #69
   renders leniently again.

Gone (issue 24): jupyter_book.sphinx.build_sphinx, sphinx.builders.make_chunks,
Builder._write_parallel and sphinx_multitoc_numbering.setup (a parallel build; the pages
are now executed before the build by tools/notebooks.py), myst-nb's coalesce_streams
(nbclient's own coalesce_streams joins the printed pieces as the runner executes), the
rfc3987_syntax import, and sphinxcontrib-katex's per-process server (no parallel build).
"""

from __future__ import annotations

from pathlib import Path

KATEX_VERSION = "0.9.11"
TIMEOUT = 60.0  # seconds, for node's start and for each formula


def patch_katex(katex, app) -> None:
    """Apply patches 1 to 3 to the module ``sphinxcontrib.katex`` (idempotent)."""
    katex.STARTUP_TIMEOUT = max(katex.STARTUP_TIMEOUT, TIMEOUT)
    katex.RENDER_TIMEOUT = max(katex.RENDER_TIMEOUT, TIMEOUT)
    _strict_render(katex, app)
    _patient_start(katex)


def _strict_render(katex, app) -> None:
    from sphinx.util import logging

    lenient = katex.render_latex
    if getattr(lenient, "strict_wrapper", False):
        return
    logger = logging.getLogger(__name__)

    def render_latex(latex, options=None):
        try:
            return lenient(latex, {**(options or {}), "throwOnError": True, "strict": "error"})
        except katex.KaTeXError as error:
            docname = getattr(app.builder, "current_docname", None)
            logger.warning("KaTeX cannot render %r: %s", latex, error,
                           location=docname, type="katex", subtype="error")
            return lenient(latex, options)

    render_latex.strict_wrapper = True
    katex.render_latex = render_latex


def _patient_start(katex) -> None:
    server = katex.KaTeXServer
    if getattr(server.start_server_process, "patient", False):
        return

    def start_server_process(cls, rundir, timeout):
        import socket
        import subprocess
        import time

        socket_path = Path(rundir) / "katex.sock"
        process = subprocess.Popen(cls.build_command(socket=socket_path), stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, cwd=rundir)
        deadline = time.monotonic() + timeout
        while True:
            if socket_path.is_socket():
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    sock.connect(str(socket_path))
                    return process, sock
                except ConnectionRefusedError:
                    sock.close()
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise cls.timeout_error(timeout)
            time.sleep(0.01)

    start_server_process.patient = True
    server.start_server_process = classmethod(start_server_process)
