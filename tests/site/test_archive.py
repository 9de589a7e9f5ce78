"""The site's runnable download: one archive that installs with its README's two commands and
runs every notebook, and single notebooks that say what they miss; and the build's numbers
are the ones a reader's run of it gives.

A module fixture unpacks the archive of the built site into an empty folder, runs the first
of the README's two commands there exactly as written (a fresh virtual environment, pip
installing the pinned requirements, with PyTorch's CPU index the requirements name, and the
helper package; pip finds the packages where the machine's pip configuration says, PyPI or
a local wheel folder) and the second (JupyterLab starts and serves the notebooks). Then
every notebook of the archive runs top to bottom with nbclient in that environment's own
kernel, two at a time (the machine has two cores), with the archive's own ``attention``,
and is written out executed. One test checks that no cell failed and that every cell that
makes an explorer displayed it as a widget view.

The others compare those executed notebooks with the build's execution of each page (the
jupyter-cache the build read), with tests/site/test_determinism.py's functions: every glued
value byte for byte (but those of cells tagged ``measurement``), every widget state (model
ids renamed) and every displayed figure. A reader's run of the download, in the archive's
own environment, reproducing the build's numbers is a stronger check than a second run in the
build's environment, and costs nothing more: the run happens anyway. The environments differ
where a reader's would: the archive's kernel has no ``MPLBACKEND`` (the build's is Agg) and
no book paths; ``SOURCE_DATE_EPOCH`` and ``PYTHONHASHSEED`` are make's. The notebooks are
the downloads: the page's cells after a set-up cell, glue names pair the values.

Measured on the shared 2-core machine: the install takes 2-6 minutes (pip fetching and
unpacking 126 pinned packages, torch from a local wheel), JupyterLab's start 5-10 s, the
notebooks 2-3 minutes more (the longest, training, 40-70 s); the whole fixture 4.5-10
minutes, with the machine quiet or busy, the comparisons seconds. Every test that uses it is
marked ``slow``.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from tests.harness import ROOT
from tests.site.test_determinism import (
    MEASUREMENT_TAG,
    NOTEBOOK_PAGES,
    built,
    figure_differences,
    glue_differences,
    widget_difference,
)
from tools import notebooks

ARCHIVE = Path("downloads", "attention-chapter.zip")
FOLDER = "attention-chapter"
NOTEBOOKS = [s for s in notebooks.toc_pages() if notebooks.is_notebook(s)]
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
ARCHIVE_REQUIREMENTS = ROOT / "site" / "archive" / "requirements.txt"


@pytest.fixture(scope="module")
def archive(built_html) -> zipfile.ZipFile:
    path = built_html / ARCHIVE
    assert path.exists(), f"no {ARCHIVE} in the built site"
    return zipfile.ZipFile(path)


def readme_commands(text: str) -> list[str]:
    """The commands of the README's first ```bash block."""
    block = re.search(r"```bash\n(.*?)```", text, re.S)
    assert block, "the archive's README shows no ```bash block"
    return [line.strip() for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def test_archive_holds_every_notebook_the_package_and_pinned_requirements(archive, built_html):
    names = set(archive.namelist())
    assert all(n.startswith(FOLDER + "/") for n in names), "everything sits in one folder"
    for source in NOTEBOOKS:
        name = f"{FOLDER}/chapters/{source.stem}.ipynb"
        assert name in names, f"{source.name} is not in the archive"
        # The same notebook as the page's own download.
        single = built_html / "_sources" / "chapters" / f"{source.stem}.ipynb"
        assert archive.read(name) == single.read_bytes(), f"{name} differs from the page's .ipynb download"
    assert f"{FOLDER}/code/pyproject.toml" in names and f"{FOLDER}/code/attention/__init__.py" in names
    assert any(n.endswith("widgets/static/common.js") for n in names), "the widgets' modules are missing"
    assert not [n for n in names if "__pycache__" in n or ".egg-info" in n]
    # The committed, reviewed file (test_archive_requirements_are_...), as it is.
    assert archive.read(f"{FOLDER}/requirements.txt") == ARCHIVE_REQUIREMENTS.read_bytes()
    commands = readme_commands(archive.read(f"{FOLDER}/README.md").decode())
    assert len(commands) == 2, commands
    assert "jupyter lab" in commands[1]
    # Figures the notebooks show are there.
    for source in NOTEBOOKS:
        for figure in re.findall(r"\.\./figures/([\w.-]+\.svg)", source.read_text()):
            assert f"{FOLDER}/figures/{figure}" in names, f"{figure} (shown by {source.name}) is missing"


def _requirement_lines(path: Path) -> list[tuple[str, str]]:
    """(line without its comment, its comment) of every line of a requirements file."""
    out = []
    for line in path.read_text().splitlines():
        text, _, comment = line.partition("#")
        if text.strip():
            out.append((text.strip(), comment.strip()))
    return out


def _closure(names: set[str]) -> set[str]:
    """``names`` and every package they depend on (installed here, no extras), canonical."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    todo = [canonicalize_name(n) for n in names]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            for spec in metadata.distribution(name).requires or []:
                requirement = Requirement(spec)
                if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                    todo.append(canonicalize_name(requirement.name))
    return seen


def test_archive_requirements_are_the_books_pins_and_all_that_the_notebooks_need():
    """site/archive/requirements.txt cannot drift from requirements.txt: the same index
    lines, each package at requirements.txt's version (one it does not list, at the
    version this environment, installed from it, has), and exactly the packages marked
    `direct` and their dependencies, then the helper package."""
    from importlib import metadata

    from packaging.utils import canonicalize_name

    book = _requirement_lines(ROOT / "requirements.txt")
    ours = _requirement_lines(ARCHIVE_REQUIREMENTS)
    assert [t for t, _ in ours if t.startswith("-")] == [t for t, _ in book if t.startswith("-")] + ["-e ./code"]
    assert ours[-1][0] == "-e ./code"
    assert f"--extra-index-url {TORCH_CPU_INDEX}" in [t for t, _ in ours], "not torch's CPU build"
    book_pins = {canonicalize_name(t.split("==")[0]): t for t, _ in book if "==" in t}
    pins = {canonicalize_name(t.split("==")[0]): t for t, _ in ours if not t.startswith("-")}
    assert len(pins) == len([t for t, _ in ours if not t.startswith("-")]), "a package pinned twice"
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[\w.]+", t) for t in pins.values()), pins
    direct = {canonicalize_name(t.split("==")[0]) for t, c in ours if c == "direct"}
    assert {"jupyterlab", "jupyterlab-myst", "ipykernel", "torch", "numpy"} <= direct
    wanted = {}
    for name in sorted(_closure(direct)):
        installed = metadata.distribution(name)
        version = installed.version.removesuffix("+cpu")
        wanted[name] = book_pins.get(name, f"{installed.metadata['Name']}=={version}")
    expected = "\n".join(wanted[n] + ("  # direct" if n in direct else "") for n in sorted(wanted))
    assert pins == wanted, (
        f"site/archive/requirements.txt disagrees with requirements.txt; its pins "
        f"should be:\n{expected}")
    assert list(pins) == sorted(pins), "pins in order of their names"


def test_archive_readme_says_the_notebooks_have_no_outputs_and_debian_needs_python3_venv(archive):
    readme = " ".join(archive.read(f"{FOLDER}/README.md").decode().split())
    # As the README says: no notebook carries an output; Run All first.
    for name in archive.namelist():
        if name.endswith(".ipynb"):
            cells = json.loads(archive.read(name))["cells"]
            with_output = [i for i, c in enumerate(cells) if c["cell_type"] == "code" and c["outputs"]]
            assert not with_output, f"{name}: cells {with_output} carry outputs"
    assert "The notebooks come without their cells' outputs" in readme
    assert "Run All Cells" in readme
    # Debian's and Ubuntu's python3 has no venv module without this package.
    assert "python3-venv" in readme and "apt-get install python3-venv" in readme


def test_archive_is_the_same_bytes_when_written_again(archive):
    # Fixed dates and order: every entry has the build's fixed time and the names are sorted.
    infos = archive.infolist()
    assert [i.filename for i in infos] == sorted(i.filename for i in infos)
    assert len({i.date_time for i in infos}) == 1


def _setup_cell(built_html) -> str:
    notebook = json.loads((built_html / "_sources" / "chapters" / f"{NOTEBOOKS[0].stem}.ipynb").read_text())
    first = notebook["cells"][0]
    assert "setup-check" in first["metadata"].get("tags", [])
    return "".join(first["source"])


def test_a_single_notebook_without_the_package_says_what_is_missing_not_a_traceback(built_html):
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    hide = "import sys\nsys.modules['attention'] = None  # as in a Python without the package"
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(hide),
        nbformat.v4.new_code_cell(_setup_cell(built_html)),
        nbformat.v4.new_code_cell("print('ran past the set-up check')"),
    ])
    client = NotebookClient(notebook, timeout=120, kernel_name=notebooks.KERNEL)
    with pytest.raises(CellExecutionError):
        client.execute()
    outputs = notebook.cells[1].outputs
    errors = [o for o in outputs if o.output_type == "error"]
    assert len(errors) == 1, outputs
    shown = "\n".join(errors[0].traceback)
    assert "attention" in shown and "attention-chapter.zip" in shown and "two commands" in shown, shown
    assert "Traceback" not in shown and "File " not in shown, f"a traceback, not a message:\n{shown}"
    assert all(len(line) <= 76 for line in shown.splitlines() if sys.executable not in line), shown
    assert not notebook.cells[2].get("outputs"), "Run All went on past the set-up check"


def test_the_set_up_check_is_silent_where_the_package_is_installed(built_html):
    from nbclient import NotebookClient

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(_setup_cell(built_html))])
    NotebookClient(notebook, timeout=120, kernel_name=notebooks.KERNEL).execute()
    assert notebook.cells[0].outputs == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# One notebook of the archive, run top to bottom by the archive's own Python with nbclient in
# the environment's own kernel, then one more cell that says which Python and which attention
# ran it. Writes the executed notebook (without that last cell) to the folder given, and
# prints one line of JSON.
RUN_NOTEBOOK = """
import json, re, sys, time
from pathlib import Path
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
path, out = Path(sys.argv[1]), Path(sys.argv[2])
nb = nbformat.read(path, as_version=4)
nb.cells.append(nbformat.v4.new_code_cell(
    "import sys, attention; print(sys.prefix); print(attention.__file__)"))
start = time.perf_counter()
result = {"notebook": path.name, "error": None}
try:
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
except CellExecutionError as error:
    result["error"] = str(error)[-2000:]
result["seconds"] = round(time.perf_counter() - start, 1)
code = [c for c in nb.cells if c.cell_type == "code"]
result["errors"] = [c.source.splitlines()[0] for c in code
                    if any(o.get("output_type") == "error" for o in c.get("outputs", []))]
VIEW = "application/vnd.jupyter.widget-view+json"
result["explorers"] = [
    {"first_line": c.source.splitlines()[0],
     "views": sum(VIEW in o.get("data", {}) for o in c.get("outputs", []))}
    for c in code if re.search(r"\\b\\w+Explorer\\(", c.source)]
# The kernel may send the two lines as one stream message or two, and may add stderr.
result["ran_by"] = "".join(o.get("text", "") for o in code[-1].get("outputs", [])
                           if o.get("name") == "stdout").split()
result["cells"] = len(code) - 1
nb.cells.pop()
out.mkdir(parents=True, exist_ok=True)
nbformat.write(nb, out / path.name)
print(json.dumps(result))
"""
# The longest pages first (about 95, 60 and 45 s of the build's 360 s), so that two at a time
# the two workers finish together; the rest follow in the table of contents' order.
LONGEST_FIRST = ("training", "variance", "pytorch")


def _run_notebooks(python: Path, folder: Path, script: Path, out: Path, env: dict) -> list[dict]:
    from concurrent.futures import ThreadPoolExecutor

    paths = [folder / "chapters" / f"{s.stem}.ipynb" for s in NOTEBOOKS]
    paths.sort(key=lambda p: LONGEST_FIRST.index(p.stem) if p.stem in LONGEST_FIRST else len(LONGEST_FIRST))

    def run(path: Path) -> dict:
        proc = subprocess.run([str(python), str(script), str(path), str(out)], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=1800)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        assert proc.returncode == 0 and lines, f"{path.name}: the runner failed\n{proc.stderr[-3000:]}"
        return json.loads(lines[-1])

    with ThreadPoolExecutor(max_workers=2) as pool:  # two cores: two kernels at a time
        return list(pool.map(run, paths))


@dataclass
class ArchiveRun:
    """The archive installed with its README's first command, and every notebook run there."""

    folder: Path  # the unpacked archive, with its .venv
    torch: str  # "VERSION CUDA NVIDIA-PACKAGES...", printed by the environment's Python
    served: set[str] | None  # what JupyterLab, started with the second command, lists (None: no start)
    results: list[dict]  # one per notebook: RUN_NOTEBOOK's JSON
    executed: Path  # the executed notebooks, NAME.ipynb


# Installing and running every notebook takes minutes: every test that uses it is marked slow.
@pytest.fixture(scope="module")
def archive_run(archive, tmp_path_factory) -> ArchiveRun:
    tmp_path = tmp_path_factory.mktemp("archive")
    start = time.perf_counter()
    archive.extractall(tmp_path)
    folder = tmp_path / FOLDER
    install, lab = readme_commands((folder / "README.md").read_text())
    # A reader's environment: not the book's virtual environment, nor its matplotlib backend.
    # SOURCE_DATE_EPOCH and PYTHONHASHSEED stay as make exports them.
    env = {k: v for k, v in os.environ.items()
           if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "MPLBACKEND", "JUPYTER_PATH"}}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if ".venv" not in p)
    env["PIP_NO_INPUT"] = "1"
    # Python compiles each module when it is first imported; pip compiling all of torch's
    # thousands of files ahead of time only makes the install slower.
    env["PIP_NO_COMPILE"] = "1"
    # Where PyTorch's index cannot be reached (this machine resolves no name but its package
    # mirrors), one failed try per package page instead of pip's five, with their pauses.
    env.setdefault("PIP_RETRIES", "0")
    proc = subprocess.run(install, shell=True, cwd=folder, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, f"`{install}` failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    python = folder / ".venv" / "bin" / "python"
    assert python.exists()
    proc = subprocess.run([str(python), "-c", "import torch, importlib.metadata as m; print(torch.__version__, "
                           "torch.version.cuda, *sorted(d.metadata['Name'] for d in m.distributions() "
                           "if d.metadata['Name'].lower().startswith('nvidia')))"],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    torch = proc.stdout.strip()
    installed = time.perf_counter()

    # The second command: JupyterLab starts from the environment and serves the notebooks.
    port = _free_port()
    as_root = " --allow-root" if os.geteuid() == 0 else ""  # CI runs as root; a reader does not
    server = subprocess.Popen(f"{lab}{as_root} --no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port={port} "
                              "--ServerApp.token='' --ServerApp.password='' --ServerApp.open_browser=False",
                              shell=True, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        listing = None
        for _ in range(120):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents/", timeout=5) as response:
                    listing = json.load(response)
                break
            except OSError:
                time.sleep(1)
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)
    lab_done = time.perf_counter()

    # Every notebook, top to bottom, in the environment's own kernel (one BLAS thread each:
    # two kernels share the two cores).
    script = tmp_path / "run_notebook.py"
    script.write_text(RUN_NOTEBOOK)
    executed = tmp_path / "executed"
    results = _run_notebooks(python, folder, script, executed,
                             {**env, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    print(f"\narchive: install {installed - start:.0f} s, JupyterLab {lab_done - installed:.0f} s, "
          f"notebooks {time.perf_counter() - lab_done:.0f} s (two at a time; "
          + ", ".join(f"{r['notebook']} {r['seconds']:.0f} s" for r in results) + ")", file=sys.stderr)
    served = None if listing is None else {item["name"] for item in listing["content"]}
    return ArchiveRun(folder, torch, served, results, executed)


@pytest.mark.slow
def test_archive_installs_with_its_readme_and_every_notebook_runs_in_its_own_kernel(archive_run):
    folder, results = archive_run.folder, archive_run.results
    # The CPU build of torch, and none of the CUDA build's NVIDIA packages.
    version, cuda, *nvidia = archive_run.torch.split()
    assert cuda == "None" and not nvidia, f"torch {version} with CUDA {cuda}, {nvidia}: not the CPU build"
    assert archive_run.served is not None, "JupyterLab did not start"
    assert {f"{s.stem}.ipynb" for s in NOTEBOOKS} <= archive_run.served, archive_run.served
    assert sorted(r["notebook"] for r in results) == sorted(f"{s.stem}.ipynb" for s in NOTEBOOKS)
    for r in results:
        assert r["error"] is None and not r["errors"], f"{r['notebook']} fails in the archive's kernel:\n{r['error']}"
        prefix, package = r["ran_by"]
        assert Path(prefix).resolve() == (folder / ".venv").resolve(), f"{r['notebook']} ran in {prefix}"
        assert Path(package).resolve().is_relative_to((folder / "code").resolve()), package
        for explorer in r["explorers"]:
            assert explorer["views"] >= 1, f"{r['notebook']}: `{explorer['first_line']}` displayed no widget view"
    with_explorers = {r["notebook"] for r in results if r["explorers"]}
    assert {"soft-retrieval.ipynb", "variance.ipynb", "saturation.ipynb"} <= with_explorers, with_explorers


# --- the build's numbers are a reader's: the build's execution against the archive's run -----
# (the comparisons are tests/site/test_determinism.py's; they run here, where the archive's
# run is, so that the install happens once)


@pytest.fixture(scope="module")
def reader_runs(archive_run) -> dict[str, dict]:
    """Page name -> its notebook as the archive's run executed it, for every notebook page of
    _toc.yml, each of which ran without an error and has an execution in the build's cache."""
    names = sorted(f"{page}.ipynb" for page in NOTEBOOK_PAGES)
    in_archive = sorted(p.name for p in (archive_run.folder / "chapters").glob("*.ipynb"))
    assert in_archive == names, f"the archive's notebooks {in_archive} are not _toc.yml's notebook pages {names}"
    executed = sorted(p.name for p in archive_run.executed.glob("*.ipynb"))
    assert executed == names, f"the archive's run wrote {executed}, not {names}"
    failed = [r["notebook"] for r in archive_run.results if r["error"] is not None or r["errors"]]
    assert not failed, f"{failed} failed in the archive's kernel, so they cannot be compared"
    return {page: json.loads((archive_run.executed / f"{page}.ipynb").read_text()) for page in NOTEBOOK_PAGES}


@pytest.mark.slow
def test_every_glued_value_is_byte_identical_in_the_build_and_the_archives_run(reader_runs):
    compared, measured, differences = 0, 0, []
    for page, run in reader_runs.items():
        c, m, d = glue_differences(built(page), run)
        compared, measured = compared + c, measured + m
        differences += [f"{page}: {difference}" for difference in d]
    print(f"{compared} glued values compared byte for byte, {measured} measurements (tagged) only checked present",
          file=sys.stderr)
    assert compared > 0, "no glued value in the book: nothing was compared"
    assert not differences, (
        f"{len(differences)} glued values differ between the build and the archive's run of {compared} "
        f"compared (a timing or memory measurement belongs in a cell tagged '{MEASUREMENT_TAG}'; anything "
        "else needs a fixed seed, or differs in a reader's environment):\n  " + "\n  ".join(differences))


@pytest.mark.slow
def test_every_widget_state_is_identical_in_the_build_and_the_archives_run(reader_runs):
    with_widgets = [page for page, run in reader_runs.items() if run.get("metadata", {}).get("widgets")]
    assert with_widgets, "no notebook of the archive embeds a widget state: nothing was compared"
    differences = [f"{page}: {difference}" for page, run in reader_runs.items()
                   if (difference := widget_difference(built(page), run)) is not None]
    assert not differences, ("widget state differs between the build and the archive's run:\n  "
                             + "\n  ".join(differences))


@pytest.mark.slow
def test_every_displayed_figure_is_identical_in_the_build_and_the_archives_run(reader_runs):
    compared, differences = 0, []
    for page, run in reader_runs.items():
        c, d = figure_differences(built(page), run)
        compared += c
        differences += [f"{page}: {difference}" for difference in d]
    assert compared > 0, "no page displays a figure: nothing was compared"
    assert not differences, ("figures differ between the build and the archive's run (a measured figure "
                             f"belongs in a cell tagged '{MEASUREMENT_TAG}'):\n  " + "\n  ".join(differences))
