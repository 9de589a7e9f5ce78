"""Downloads: a reader of the site can run the chapter.

* Every notebook page is offered as a notebook: ``_sources/PAGE.ipynb`` is the jupytext
  conversion of the MyST source (the notebook `make lab` opens) with one cell put in front,
  the set-up check (SETUP_CELL): when ``import attention`` cannot work it stops "Run All"
  with a short message (no traceback) saying what is missing and where to get it; on Colab,
  when the repository is configured, it installs the package from the repository instead.
  Its Markdown cells get the page's glued values written in (written_in): the numbers as the
  page shows them and each glued figure as the build's image with its number and caption.
* One archive that runs, ``downloads/ARCHIVE``: every notebook page as ``chapters/*.ipynb``,
  the ``attention`` package (``code/``), the static diagrams the notebooks show, pinned
  requirements and a README whose two commands install everything into a virtual
  environment and open JupyterLab. Written with fixed dates and order: two builds give the
  same bytes.
* Every page's download menu offers the archive and the chapter's PDF (``downloads/PDF``,
  written by `make pdf`, see ``_ext/book_pdf.py``) in place of the theme's "print this page".
* One setting turns on Binder and Colab: ``repository: url:`` in ``_config.yml``. With it
  the pages get the theme's repository button and Binder and Colab launch buttons; Colab
  opens the page's notebook from the published site's branch (``gh-pages``, where the
  Pages workflow puts ``_build/html``), whose set-up cell installs the package on Colab.
"""

from __future__ import annotations

import io
import os
import re
import stat
import zipfile
from pathlib import Path

ARCHIVE = "attention-chapter.zip"
ARCHIVE_FOLDER = "attention-chapter"
PDF = "scaled-dot-product-attention.pdf"
DOWNLOADS = "downloads"  # folder of the built site
PAGES_BRANCH = "gh-pages"  # where .github/workflows/pages.yml publishes _build/html
BINDER = "https://mybinder.org"
COLAB = "https://colab.research.google.com"
# The archive's requirements.txt, committed and reviewable: every package the notebooks
# and JupyterLab need, pinned, with PyTorch's CPU index (tests/site/test_archive.py checks
# it against the book's requirements.txt).
ARCHIVE_REQUIREMENTS = Path("site", "archive", "requirements.txt")
# Installed on Colab, which has numpy, matplotlib, torch and ipywidgets already.
COLAB_PACKAGES = ("anywidget", "myst-nb", "threadpoolctl")

ARCHIVE_README = """\
# Scaled Dot-Product Attention: the chapter's notebooks

Every page of the chapter as a Jupyter notebook (`chapters/`), the helper
package `attention` they import (`code/`), and the exact version of every
package they need (`requirements.txt`). You need Python 3.11 or newer
with its `venv` module: on Debian and Ubuntu that is the package
`python3-venv` (`sudo apt-get install python3-venv`; without it the first
command below stops, saying that ensurepip is not available).
In this folder, run:

```bash
python3 -m venv .venv && .venv/bin/python -m pip install -r requirements.txt
.venv/bin/jupyter lab chapters
```

The first command makes a virtual environment in `.venv` and installs the
packages and the helper package into it (a few minutes: PyTorch is large;
`requirements.txt` asks pip for its CPU build, from PyTorch's own index);
the second opens the notebooks in JupyterLab. The explorers (sliders and
figures) are live there. On Windows, use `py -m venv .venv`, then
`.venv\\Scripts\\python -m pip install -r requirements.txt` and
`.venv\\Scripts\\jupyter lab chapters`.

The notebooks come without their cells' outputs: no printed results and
no explorers until you run them (the numbers and numbered figures the
text quotes are written into it, as on the site). Open a notebook and
run it from the top first (Run > Run All Cells): its later cells use
what the earlier ones computed. Each takes seconds; the longest took about
10 s on the two-core machine the chapter was written on.

The package is installed in editable mode: change `code/attention/` and
restart the kernel to see the change.
"""


# --- the set-up cell of every downloaded notebook ------------------------------------------
SETUP_CELL = '''\
# Set-up check, added to the downloaded notebook: the cells below import
# the book's helper package `attention`.
import importlib.util
import subprocess
import sys

REPOSITORY = {repository!r}
COLAB_PACKAGES = [{colab_packages}]


class MissingPackage(Exception):
    """Stops Run All with a message instead of a traceback."""

    def _render_traceback_(self):
        return [str(self)]


if importlib.util.find_spec("attention") is None:
    if "google.colab" in sys.modules and REPOSITORY:
        source = f"git+{{REPOSITORY}}#subdirectory=code"
        subprocess.check_call([sys.executable, "-m", "pip", "install",
                               "-q", source, *COLAB_PACKAGES])
        importlib.invalidate_caches()
    else:
        raise MissingPackage(
            "This notebook needs the book's helper package `attention`,\\n"
            "which this Python does not have:\\n  " + sys.executable + "\\n\\n"
            "Get {archive}, the chapter's runnable archive:\\n"
            "every page of the book's site offers it in its Download\\n"
            "menu. It holds every notebook, the package and pinned\\n"
            "requirements; its README's two commands install them\\n"
            "and open JupyterLab."{where})
'''


def _where(app) -> str:
    """Where the archive is, as far as the configuration says."""
    base = (app.config.html_baseurl or "").rstrip("/")
    if base:
        return f'\n            "\\n\\nThe archive: {base}/{DOWNLOADS}/{ARCHIVE}"'
    return ""


def setup_cell_source(app) -> str:
    repository = _repository(app)
    branch = _branch(app)
    return SETUP_CELL.format(
        repository=f"{repository}@{branch}" if repository else "",
        colab_packages="".join(f"\n    {p!r}," for p in _pinned(app, COLAB_PACKAGES)) + "\n",
        archive=ARCHIVE, where=_where(app)).rstrip("\n")


# myst-nb's roles and directives that paste a value computed by the page's cells.
GLUE_TEXT = re.compile(r"\{glue:text\}`([^`]+)`")
GLUE_FIGURE = re.compile(r"^(```+|:::+)\{glue:figure\}[ \t]*(\S+)[ \t]*\n(.*?)^\1[ \t]*$", re.M | re.S)
NUMREF = re.compile(r"\{numref\}`(?:([^`<]*?)\s*<([^`>]+)>|([^`]+))`")
MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|])")


def _glued_text(text: str, glued: dict, where: str) -> str:
    """``{glue:text}`key:format``` as the page shows it (myst-nb's own formatting)."""
    from myst_nb.core.variables import format_plain_text

    def paste(match):
        key, _, spec = match.group(1).rpartition(":") if ":" in match.group(1) else (match.group(1), "", "s")
        if "::" in key or key not in glued or "text/plain" not in glued[key].get("data", {}):
            raise ValueError(f"{where}: no glued text for {match.group(0)}")
        return MARKDOWN_SPECIAL.sub(r"\\\1", format_plain_text(glued[key]["data"]["text/plain"], spec))

    return GLUE_TEXT.sub(paste, text)


def _figure_cell_text(match, numbers: dict, glued: dict, where: str) -> str:
    """A glued figure as Markdown: the figure the page shows (the build's image, an HTML
    image with a data address: stock JupyterLab renders no SVG attachment), its number as on
    the site, and its caption."""
    import base64
    import html

    key, body = match.group(2), match.group(3)
    options, _, caption = body.partition("\n\n")
    if not options.lstrip().startswith(":"):  # no options: all of it is the caption
        options, caption = "", body
    name = re.search(r"^:name:\s*(\S+)", options, re.M)
    alt = re.search(r"^:alt:\s*(.+)$", options, re.M)
    number = numbers.get(name.group(1)) if name else None
    images = {m: d for m, d in glued.get(key, {}).get("data", {}).items() if m.startswith("image/")}
    if not images:
        raise ValueError(f"{where}: no glued figure {key!r}")
    mime = "image/svg+xml" if "image/svg+xml" in images else sorted(images)[0]
    data = images[mime] if isinstance(images[mime], str) else "".join(images[mime])
    if mime == "image/svg+xml":  # text in the glue data; other images are base64 already
        data = base64.b64encode(data.encode()).decode("ascii")
    label = f"Fig. {'.'.join(map(str, number))}" if number else "Figure"
    text = html.escape(alt.group(1).strip() if alt else label, quote=True)
    # An HTML image, not Markdown's ![](data:...): jupyterlab-myst's parser (markdown-it)
    # refuses data: addresses other than GIF, PNG, JPEG and WebP, and would show the
    # Markdown raw; both it and stock JupyterLab render this tag.
    return (f'<img src="data:{mime};base64,{data}" alt="{text}">\n\n'
            f"**{label}** {caption.strip()}")


def _glued_figure_names(app, pagename: str) -> set[str]:
    """The :name: of every glued figure of the page (written in as images, not figures)."""
    text = Path(app.env.doc2path(pagename)).read_text(encoding="utf-8")
    return {name for m in GLUE_FIGURE.finditer(text)
            for name in re.findall(r"^:name:\s*(\S+)", m.group(3), re.M)}


def _numbered(match, numbers: dict, names: set[str]) -> str:
    """``{numref}`label``` of a glued figure as the site shows it ("Fig. N"); others as
    they are (jupyterlab-myst resolves those to figures of the notebook)."""
    title, label = (match.group(1), match.group(2)) if match.group(2) else (None, match.group(3))
    if label.strip() not in names or label.strip() not in numbers:
        return match.group(0)
    number = ".".join(map(str, numbers[label.strip()]))
    if not title:
        return f"Fig. {number}"
    return title.replace("%s", number).replace("{number}", number)


# Text a page marks for the site only, or for the PDF only (page "How to change this book"):
# a notebook is read on a screen, so it keeps the first without its fence and drops the
# second. jupyterlab-myst knows no `container` directive and would show its fence raw.
SCREEN_ONLY = re.compile(r"^:::\{container\} screen-only\n(.*?)^:::[ \t]*\n?", re.M | re.S)
PRINT_ONLY = re.compile(r"^:::\{container\} print-only\n.*?^:::[ \t]*\n?\n?", re.M | re.S)


def for_the_screen(source: str) -> str:
    """``source`` as a screen shows it: screen-only text unwrapped, print-only text left out."""
    return SCREEN_ONLY.sub(r"\1", PRINT_ONLY.sub("", source))


def written_in(app, pagename: str, cell) -> None:
    """A Markdown cell with the page's glued values written in: its numbers as the page shows
    them, its glued figures as images with their numbers and captions, and references to
    those figures as their numbers, so that it reads in JupyterLab as on the site, without
    myst-nb."""
    from myst_nb.ext.glue.crossref import read_glue_cache

    cell.source = for_the_screen(cell.source)
    if "{glue:" not in cell.source and "{numref}" not in cell.source:
        return
    numbers = getattr(app.env, "toc_fignumbers", {}).get(pagename, {}).get("figure", {})
    source = NUMREF.sub(lambda m: _numbered(m, numbers, _glued_figure_names(app, pagename)),
                        cell.source)
    if "{glue:" in source:
        glued = read_glue_cache(str(app.env.mystnb_config.output_folder), pagename)
        source = GLUE_FIGURE.sub(lambda m: _figure_cell_text(m, numbers, glued, pagename), source)
        source = _glued_text(source, glued, pagename)
    cell.source = source


def notebook_of(app, pagename: str, write_in: bool = False):
    """The page's downloadable notebook (jupytext conversion + set-up cell), or None; with
    ``write_in``, its glued values written into the Markdown cells (see written_in)."""
    import jupytext
    import nbformat

    source = Path(app.env.doc2path(pagename))
    if source.suffix != ".md":
        return None
    notebook = jupytext.read(source, fmt="md:myst")
    if "kernelspec" not in notebook.metadata:  # plain Markdown, not a notebook page
        return None
    if write_in:
        for cell in notebook.cells:
            if cell.cell_type == "markdown":
                written_in(app, pagename, cell)
    setup = nbformat.v4.new_code_cell(setup_cell_source(app))
    setup.metadata["tags"] = ["setup-check"]
    notebook.cells.insert(0, setup)
    for index, cell in enumerate(notebook.cells):  # jupytext's ids are random: fix them
        cell["id"] = f"cell-{index}"
    return notebook


def _offer_notebook(app, pagename, templatename, context, doctree):
    """Let the theme's download menu offer the page's .ipynb (written by _write_notebook)."""
    if doctree is None or not context.get("sourcename", "").endswith(".md"):
        return
    if notebook_of(app, pagename) is not None:
        # sphinx-book-theme's add_header_buttons (priority 501) adds the .ipynb entry from this.
        context["ipynb_source"] = pagename + ".ipynb"


def _write_notebook(app, pagename, templatename, context, doctree):
    """Write the page's notebook into _sources/ (after the theme's launch buttons, which
    would otherwise put the executed notebook, outputs and all, in its place)."""
    if doctree is None or context.get("ipynb_source") != pagename + ".ipynb":
        return
    import jupytext

    notebook = notebook_of(app, pagename, write_in=True)
    target = Path(app.outdir, "_sources", pagename + ".ipynb")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(jupytext.writes(notebook, fmt="ipynb"), encoding="utf-8")


def _download_entries(app, pagename, templatename, context, doctree):
    """The archive and the PDF in every page's download menu (not the theme's print button)."""
    pathto = context.get("pathto")
    for group in context.get("header_buttons", []):
        if group.get("label") != "download-buttons":
            continue
        buttons = [b for b in group["buttons"] if b.get("label") != "download-pdf-button"]
        buttons.append({
            "type": "link", "url": pathto(f"{DOWNLOADS}/{ARCHIVE}", 1), "text": "notebooks .zip",
            "tooltip": "Download every notebook with the helper package (runs in JupyterLab)",
            "icon": "fas fa-file-zipper", "label": "download-archive-button"})
        buttons.append({
            "type": "link", "url": pathto(f"{DOWNLOADS}/{PDF}", 1), "text": "chapter .pdf",
            "tooltip": "Download the whole chapter as a PDF",
            "icon": "fas fa-file-pdf", "label": "download-chapter-pdf-button"})
        group["buttons"] = buttons


# --- the archive -------------------------------------------------------------------------
def _pins(srcdir: Path) -> dict[str, str]:
    from packaging.utils import canonicalize_name

    pins = {}
    requirements = srcdir / "requirements.txt"
    if not requirements.exists():  # a scratch book (e.g. a test's one-page book)
        return pins
    for line in requirements.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line and not line.startswith("-"):
            name = line.split("==", 1)[0].strip()
            pins[canonicalize_name(name)] = line
    return pins


def _pinned(app, names) -> list[str]:
    from packaging.utils import canonicalize_name

    pins = _pins(Path(app.srcdir))
    return [pins.get(canonicalize_name(n), n) for n in names]


def _zip_time() -> tuple:
    import time

    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "1767225600"))
    return time.gmtime(max(epoch, 315532800))[:6]  # zip dates start in 1980


def archive_members(app) -> dict[str, bytes]:
    """Every file of the archive (path inside it -> bytes), before zipping.

    The notebooks are the very files the pages offer (``_sources/PAGE.ipynb``, written as the
    pages were), so the archive and the single downloads cannot differ.
    """
    import json

    srcdir = Path(app.srcdir)
    files: dict[str, bytes] = {}
    figures = set()
    for docname in sorted(app.env.found_docs):
        written = Path(app.outdir, "_sources", docname + ".ipynb")
        if not written.exists():
            continue
        files[f"chapters/{Path(docname).name}.ipynb"] = written.read_bytes()
        for cell in json.loads(written.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "markdown":
                figures |= set(re.findall(r"\.\./figures/([\w.-]+\.(?:svg|png))", "".join(cell["source"])))
    for name in sorted(figures):
        path = srcdir / "figures" / name
        if path.exists():
            files[f"figures/{name}"] = path.read_bytes()
    code = srcdir / "code"
    for path in sorted(code.rglob("*")):
        rel = path.relative_to(code)
        if (path.is_file() and "__pycache__" not in rel.parts and not rel.parts[0].endswith(".egg-info")
                and path.suffix not in {".pyc"}):
            files[f"code/{rel.as_posix()}"] = path.read_bytes()
    files["requirements.txt"] = (srcdir / ARCHIVE_REQUIREMENTS).read_bytes()
    files["README.md"] = ARCHIVE_README.encode()
    return files


def write_archive(app, target: Path):
    target.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, data in sorted(archive_members(app).items()):
            info = zipfile.ZipInfo(f"{ARCHIVE_FOLDER}/{name}", date_time=_zip_time())
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    target.write_bytes(buffer.getvalue())


def _write_archive(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    write_archive(app, Path(app.outdir, DOWNLOADS, ARCHIVE))


# --- Binder and Colab, from one setting ------------------------------------------------------
def _repository(app) -> str:
    return (app.config.html_theme_options or {}).get("repository_url", "").strip().rstrip("/")


def _branch(app) -> str:
    return (app.config.html_theme_options or {}).get("repository_branch", "") or "main"


def _launch_buttons(app, config):
    """With ``repository: url:`` set, turn on the repository button and Binder and Colab."""
    options = config.html_theme_options
    if not options.get("repository_url", "").strip():
        return
    options["use_repository_button"] = True
    launch = dict(options.get("launch_buttons") or {})
    # Jupyter Book's defaults hold these keys as empty strings (setdefault would keep them
    # empty, and the theme would draw no launch button): fill every empty one.
    for key, url in (("binderhub_url", BINDER), ("colab_url", COLAB)):
        if not str(launch.get(key) or "").strip():
            launch[key] = url
    launch["notebook_interface"] = launch.get("notebook_interface") or "jupyterlab"
    options["launch_buttons"] = launch


def _colab_opens_the_published_notebook(app, pagename, templatename, context, doctree):
    """Colab cannot open a MyST .md page: point it at the page's notebook on gh-pages."""
    repository = _repository(app)
    if not repository or not context.get("ipynb_source"):
        return
    org_repo = "/".join(repository.split("/")[-2:])
    url = f"{COLAB}/github/{org_repo}/blob/{PAGES_BRANCH}/_sources/{context['ipynb_source']}"
    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []):
            if button.get("text") == "Colab":
                button["url"] = url


def setup(app):
    app.connect("config-inited", _launch_buttons)
    app.connect("html-page-context", _offer_notebook, priority=400)
    app.connect("html-page-context", _download_entries, priority=600)
    app.connect("html-page-context", _colab_opens_the_published_notebook, priority=600)
    app.connect("html-page-context", _write_notebook, priority=600)
    app.connect("build-finished", _write_archive)
