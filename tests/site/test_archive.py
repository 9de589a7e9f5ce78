"""The site's runnable download: one archive that installs with its README's two commands and
runs every notebook, and single notebooks that say what they miss.

The slow test unpacks the archive of the built site into an empty folder, runs the first of
the README's two commands there exactly as written (a fresh virtual environment, pip
installing the pinned requirements and the helper package; pip finds the packages where
the machine's pip configuration says, PyPI or a local wheel folder) and checks the second
(JupyterLab starts and serves the notebooks). Then, in that environment:

* every module that any notebook or the helper package imports, anywhere (a function's
  lazy import too), imports: a dependency the archive's requirements leave out fails here;
* a notebook of the archive's own cells (the set-up check and every cell that shows an
  explorer) runs with nbclient in the environment's own kernel, with the archive's own
  ``attention``, and displays the three explorers.

Every page runs top to bottom once per test run beyond the build, in the book's environment
(``tests/pages/test_notebooks_run.py``); the archive's notebooks are the page downloads byte
for byte and its requirements pin the book's versions (the first test below). Running every
page again here would re-test the pages' cells, not the archive. Measured on the shared 2-core machine: the install takes 2-5
minutes (pip fetching and unpacking some 120 packages, torch from a local wheel). Marked
``slow``.
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
from pathlib import Path

import nbformat
import pytest

from tests import notebooks
from tests.harness import ROOT

ARCHIVE = Path("downloads", "attention-chapter.zip")
FOLDER = "attention-chapter"
NOTEBOOKS = [s for s in notebooks.toc_pages() if notebooks.is_notebook(s)]


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
    requirements = archive.read(f"{FOLDER}/requirements.txt").decode().splitlines()
    lines = [line for line in requirements if line and not line.startswith("#")]
    assert "-e ./code" in lines
    unpinned = [line for line in lines if line != "-e ./code" and not re.fullmatch(r"[A-Za-z0-9_.\-]+==[\w.]+", line)]
    assert not unpinned, f"unpinned requirements: {unpinned}"
    named = {line.split("==")[0].lower().replace("_", "-") for line in lines if "==" in line}
    assert {"torch", "numpy", "matplotlib", "anywidget", "jupyterlab", "myst-nb", "ipykernel"} <= named
    # The versions the book was built and tested with: every package requirements.txt pins.
    book = {line.split("==")[0].lower().replace("_", "-"): line.split("==")[1]
            for line in (ROOT / "requirements.txt").read_text().splitlines()
            if "==" in line and not line.startswith("#")}
    differ = [line for line in lines if "==" in line
              and book.get(line.split("==")[0].lower().replace("_", "-"), line.split("==")[1]) != line.split("==")[1]]
    assert not differ, f"the archive pins other versions than requirements.txt: {differ}"
    commands = readme_commands(archive.read(f"{FOLDER}/README.md").decode())
    assert len(commands) == 2, commands
    assert "jupyter lab" in commands[1]
    # Figures the notebooks show are there.
    for source in NOTEBOOKS:
        for figure in re.findall(r"\.\./figures/([\w.-]+\.svg)", source.read_text()):
            assert f"{FOLDER}/figures/{figure}" in names, f"{figure} (shown by {source.name}) is missing"


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


# Every top-level module named by an import statement in the notebooks' code cells and the
# package's source, found with ast, imported in the archive's environment.
IMPORT_ALL = """
import ast, importlib, json, sys
from pathlib import Path
folder = Path(sys.argv[1])
names = set()
sources = [p.read_text() for p in (folder / "code").rglob("*.py")]
for notebook in (folder / "chapters").glob("*.ipynb"):
    cells = json.loads(notebook.read_text())["cells"]
    sources += ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
for source in sources:
    lines = [l for l in source.splitlines() if not l.lstrip().startswith(("%", "!"))]
    for node in ast.walk(ast.parse("\\n".join(lines))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
names.discard("__future__")
missing = []
for name in sorted(names):
    try:
        importlib.import_module(name)
    except ImportError as error:
        missing.append(f"{name}: {error}")
print("imported:", " ".join(sorted(names)))
sys.exit("\\n".join(missing) if missing else 0)
"""

# One notebook made of the archive's own cells: the set-up check of the first page, then every
# cell that shows an explorer (each is self-contained), run in the environment's kernel.
RUN_EXPLORERS = """
import re, sys, nbformat
from pathlib import Path
from nbclient import NotebookClient
folder = Path(sys.argv[1])
chapters = sorted((folder / "chapters").glob("*.ipynb"))
cells, explorers = [], []
for path in chapters:
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        if not cells and "setup-check" in cell.metadata.get("tags", []):
            cells.append(nbformat.v4.new_code_cell(cell.source))
        if re.search(r"\\b\\w+Explorer\\(", cell.source):
            cells.append(nbformat.v4.new_code_cell(cell.source))
            explorers.append(path.name)
# Which Python ran it, and which attention: the unpacked archive's, nothing of the book's.
cells.append(nbformat.v4.new_code_cell("import sys, attention; print(sys.prefix); print(attention.__file__)"))
nb = nbformat.v4.new_notebook(cells=cells)
NotebookClient(nb, timeout=600, kernel_name="python3",
               resources={"metadata": {"path": str(folder / "chapters")}}).execute()
# The kernel may send the two lines as one stream message or two, and may add stderr.
printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.get("name") == "stdout")
prefix, package = printed.split()
assert Path(prefix).resolve() == (folder / ".venv").resolve(), prefix
assert Path(package).resolve().is_relative_to((folder / "code").resolve()), package
views = sum(1 for c in nb.cells for o in c.get("outputs", [])
            if "application/vnd.jupyter.widget-view+json" in o.get("data", {}))
print("explorers from:", " ".join(explorers))
print("widget views:", views)
"""


@pytest.mark.slow
def test_archive_installs_with_its_readme_and_its_explorers_run_in_its_own_kernel(archive, tmp_path):
    start = time.perf_counter()
    archive.extractall(tmp_path)
    folder = tmp_path / FOLDER
    install, lab = readme_commands((folder / "README.md").read_text())
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME"}}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if ".venv" not in p)
    env["PIP_NO_INPUT"] = "1"
    # Python compiles each module when it is first imported; pip compiling all of torch's
    # thousands of files ahead of time only makes the install slower.
    env["PIP_NO_COMPILE"] = "1"
    proc = subprocess.run(install, shell=True, cwd=folder, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, f"`{install}` failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    python = folder / ".venv" / "bin" / "python"
    assert python.exists()
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
        assert listing is not None, "JupyterLab did not start"
        served = {item["name"] for item in listing["content"]}
        assert {f"{s.stem}.ipynb" for s in NOTEBOOKS} <= served, served
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=30)

    # Everything any notebook or the package imports, imports in the archive's environment.
    script = tmp_path / "import_all.py"
    script.write_text(IMPORT_ALL)
    proc = subprocess.run([str(python), str(script), str(folder)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"imports fail in the archive's environment:\n{proc.stderr[-3000:]}"
    imported = set(proc.stdout.split("imported:", 1)[1].split())
    assert {"numpy", "torch", "matplotlib", "anywidget", "threadpoolctl", "attention"} <= imported, imported

    # Every explorer of the notebooks, with their set-up check, in the environment's own kernel.
    script = tmp_path / "run_explorers.py"
    script.write_text(RUN_EXPLORERS)
    proc = subprocess.run([str(python), str(script), str(folder)], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, f"the explorers fail in the archive's environment:\n{proc.stderr[-3000:]}"
    sources = proc.stdout.split("explorers from:", 1)[1].splitlines()[0].split()
    assert {"soft-retrieval.ipynb", "variance.ipynb", "saturation.ipynb"} <= set(sources), sources
    views = int(re.search(r"widget views: (\d+)", proc.stdout).group(1))
    assert views >= 3, f"the explorers did not display ({views} widget views)"
    print(f"\narchive: install {installed - start:.0f} s, the rest {time.perf_counter() - installed:.0f} s",
          file=sys.stderr)
