"""Two clean builds of the book write the same numbers and the same figures.

``make test`` builds the book first (``make book``: every page executed fresh into
``_build``). This module builds it once more, from scratch, into a temporary folder, and
compares the two builds:

* every glued value (the numbers the prose quotes, and glued figures), byte for byte;
* the state embedded for every widget (its precomputed data);
* every image file of the site (``_images``: page figures and the static diagrams);
* the static diagrams redrawn from ``figures/src`` into a temporary copy.

Widget model ids are random UUIDs that ipywidgets draws from the operating system for every
widget in every kernel session. They only tie an embedded state to its view; a reader never
sees them. They are replaced by names that follow the page's order before comparing, so
everything the reader can see or read back must be identical while the ids may differ.

Measurements of the machine (wall-clock times, peak memory) cannot repeat to the byte. A
page marks the cell that glues such a value, or draws such a figure, with the cell tag
``measurement`` (``:tags: [measurement]`` under its ``{code-cell}``); its glued values and
figures must then exist in both builds but may differ. Every other value must be identical.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import harness

ROOT = Path(__file__).resolve().parents[2]
FIRST = harness.HTML.parent  # _build of `make book` (or $BOOK_HTML/..)
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
BUILD_TIMEOUT = 1800  # seconds


def build_env() -> dict[str, str]:
    # The same fixed environment as the Makefile's (make exports these for `make test` too).
    env = dict(os.environ)
    env.setdefault("SOURCE_DATE_EPOCH", "1767225600")
    env.update(PYTHONHASHSEED="0", MPLBACKEND="Agg")
    return env


@pytest.fixture(scope="module")
def second_build(tmp_path_factory) -> Path:
    """A second fresh build (execute every page again) into a temporary folder."""
    out = tmp_path_factory.mktemp("second-build")
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run([str(jupyter_book), "build", "--all", "-W", "-n", "--keep-going", ".", "--path-output", str(out)],
                          cwd=ROOT, env=build_env(), capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert proc.returncode == 0, f"the second build failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return out / "_build"


@functools.cache
def executed_notebooks(build: Path) -> dict[str, dict]:
    root = build / "jupyter_execute"
    return {p.relative_to(root).as_posix(): json.loads(p.read_text()) for p in sorted(root.rglob("*.ipynb"))
            if ".ipynb_checkpoints" not in p.parts}


MODEL_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")  # ipywidgets: uuid4().hex


def model_id_names(notebook: dict) -> dict[str, str]:
    """Each widget model id -> a name that depends only on the page, not on the random id.

    Models are numbered in the order a reader meets them: the views in the cells' outputs,
    then the models each one refers to (layouts, styles, children), breadth first, then any
    left over in the order of their content. The order of the state dict itself is not used:
    it follows the random ids.
    """
    state = notebook.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    order: list[str] = []
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            model = output.get("data", {}).get(WIDGET_VIEW, {}).get("model_id")
            if model and model not in order:
                order.append(model)
    i = 0
    while i < len(order):
        for model in MODEL_ID.findall(json.dumps(state.get(order[i], {}), sort_keys=True)):
            if model in state and model not in order:
                order.append(model)
        i += 1
    masked = {m: MODEL_ID.sub("ID", json.dumps(state[m], sort_keys=True)) for m in state if m not in order}
    order += sorted(masked, key=masked.get)
    return {model: f"widget-model-{i}" for i, model in enumerate(order)}


def canonical(value, names: dict[str, str]) -> str:
    """``value`` as sorted JSON with every widget model id replaced by its name."""
    text = json.dumps(value, sort_keys=True)
    if not names:
        return text
    renamed = MODEL_ID.sub(lambda m: names.get(m.group(0), m.group(0)), text)
    return json.dumps(json.loads(renamed), sort_keys=True)  # sort again: keys were ids


MEASUREMENT_TAG = "measurement"
GLUE_CALL = re.compile(r"""\bglue\(\s*(f?)(['"])(.*?)\2""")


def source_of(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def measurement_cells(notebook: dict) -> list[dict]:
    return [c for c in notebook.get("cells", [])
            if c.get("cell_type") == "code" and MEASUREMENT_TAG in c.get("metadata", {}).get("tags", [])]


def measured_glue_names(notebook: dict) -> list[re.Pattern]:
    """Patterns of the glue names set in cells tagged ``measurement`` (f-string parts match anything)."""
    patterns = []
    for cell in measurement_cells(notebook):
        for is_f, _, name in GLUE_CALL.findall(source_of(cell)):
            parts = re.split(r"(\{[^}]*\})", name) if is_f else [name]
            patterns.append(re.compile("".join(".+" if part.startswith("{") else re.escape(part) for part in parts)))
    return patterns


def is_measured(name: str, patterns: list[re.Pattern]) -> bool:
    return any(p.fullmatch(name) for p in patterns)


def glued_outputs(build: Path, page: str) -> dict[str, str]:
    """glue name -> every representation the page stored for it, as canonical JSON.

    myst-nb keeps the outputs of ``glue(..., display=False)`` in ``PAGE.glue.json`` beside
    the executed notebook and the displayed ones in the notebook: both are read.
    """
    notebook = executed_notebooks(build)[page]
    names = model_id_names(notebook)
    outputs = {}
    side = build / "jupyter_execute" / page.replace(".ipynb", ".glue.json")
    if side.exists():
        outputs.update(json.loads(side.read_text()))
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                outputs[name] = output
    return {name: canonical(output.get("data", {}), names) for name, output in outputs.items()}


def image_file_name(mime: str, content) -> str | None:
    """The name myst-nb gives an image output in _images (the SHA-256 of its bytes)."""
    import base64
    import hashlib

    text = "".join(content) if isinstance(content, list) else content
    if mime == "image/svg+xml":
        data = os.linesep.join(text.splitlines()).encode("utf-8")
    elif mime in {"image/png", "image/jpeg", "image/gif"}:
        data = base64.b64decode(text)
    else:
        return None
    extension = {"image/svg+xml": ".svg", "image/png": ".png", "image/jpeg": ".jpeg", "image/gif": ".gif"}[mime]
    return hashlib.sha256(data).hexdigest() + extension


def measured_image_files(build: Path, page: str) -> set[str]:
    """_images names of the figures drawn or glued by the page's measurement cells."""
    notebook = executed_notebooks(build)[page]
    patterns = measured_glue_names(notebook)
    outputs = [o for cell in measurement_cells(notebook) for o in cell.get("outputs", [])]
    side = build / "jupyter_execute" / page.replace(".ipynb", ".glue.json")
    if side.exists():
        outputs += [o for name, o in json.loads(side.read_text()).items() if is_measured(name, patterns)]
    names = {image_file_name(mime, content) for o in outputs for mime, content in o.get("data", {}).items()}
    return names - {None}


def widget_states(notebook: dict) -> str:
    return canonical(notebook.get("metadata", {}).get("widgets", {}), model_id_names(notebook))


def first_difference(a: str, b: str, context: int = 60) -> str:
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"at character {i}: {a[max(0, i - context):i + context]!r}\n      vs {b[max(0, i - context):i + context]!r}"


def test_both_builds_executed_the_same_pages(second_build):
    assert sorted(executed_notebooks(FIRST)) == sorted(executed_notebooks(second_build))


def test_every_glued_value_is_byte_identical_in_two_fresh_builds(second_build):
    first = executed_notebooks(FIRST)
    compared, measured, differences = 0, 0, []
    for page, notebook in first.items():
        a, b = glued_outputs(FIRST, page), glued_outputs(second_build, page)
        if set(a) != set(b):
            differences.append(f"{page}: glued names differ: {sorted(set(a) ^ set(b))}")
        patterns = measured_glue_names(notebook)
        for name in sorted(set(a) & set(b)):
            if is_measured(name, patterns):
                measured += 1
                continue
            compared += 1
            if a[name] != b[name]:
                differences.append(f"{page}: glue {name!r} differs {first_difference(a[name], b[name])}")
    print(f"{compared} glued values compared byte for byte, {measured} measurements (tagged) only checked present")
    assert compared > 0, "no glued value in the book: nothing was compared"
    assert not differences, (
        f"{len(differences)} of {compared} glued values differ between two builds (a timing or memory measurement "
        f"belongs in a cell tagged '{MEASUREMENT_TAG}'; anything else needs a fixed seed):\n  " + "\n  ".join(differences))


def test_every_widget_state_is_identical_in_two_fresh_builds(second_build):
    first, second = executed_notebooks(FIRST), executed_notebooks(second_build)
    differences = [f"{page}: {first_difference(widget_states(nb), widget_states(second[page]))}"
                   for page, nb in first.items() if page in second and widget_states(nb) != widget_states(second[page])]
    assert not differences, "widget state differs between two builds:\n  " + "\n  ".join(differences)


IMAGE_SRC = re.compile(r'<img[^>]*\ssrc="([^"]*_images/[^"]+)"')


def page_images(build: Path, page_html: Path) -> list[str]:
    return [src.rsplit("/", 1)[-1] for src in IMAGE_SRC.findall((build / "html" / page_html).read_text(encoding="utf-8"))]


def test_every_figure_of_the_site_is_identical_in_two_fresh_builds(second_build):
    """Page figures (named by the hash of their bytes) and the static diagrams, page by page."""
    compared, differences = 0, []
    for page in executed_notebooks(FIRST):
        html = Path(page).with_suffix(".html")
        a, b = page_images(FIRST, html), page_images(second_build, html)
        measured_a, measured_b = measured_image_files(FIRST, page), measured_image_files(second_build, page)
        if len(a) != len(b):
            differences.append(f"{html}: {len(a)} figures in the first build, {len(b)} in the second")
            continue
        for x, y in zip(a, b):
            if x in measured_a and y in measured_b:
                continue
            compared += 1
            if x != y or (FIRST / "html" / "_images" / x).read_bytes() != (second_build / "html" / "_images" / y).read_bytes():
                differences.append(f"{html}: figure {x} of the first build is {y} in the second")
    assert compared > 0, "the site has no figure: nothing was compared"
    assert not differences, "figures differ between two builds (a measured figure belongs in a cell tagged " \
        f"'{MEASUREMENT_TAG}'):\n  " + "\n  ".join(differences)


def test_downloadable_notebooks_are_identical_in_two_fresh_builds(second_build):
    a, b = FIRST / "html" / "_sources", second_build / "html" / "_sources"
    names = sorted(p.relative_to(b).as_posix() for p in b.rglob("*.ipynb"))
    assert names, "the second build wrote no downloadable notebook"
    differing = [n for n in names if not (a / n).exists() or (a / n).read_bytes() != (b / n).read_bytes()]
    assert not differing, f"downloadable notebooks that differ between two builds: {differing}"


def test_static_diagrams_redraw_to_identical_files(tmp_path):
    figures = ROOT / "figures"
    drawn = sorted(figures.glob("*.svg"))
    assert drawn, "figures/*.svg missing: run `make figures` (make book does) first"
    copy = tmp_path / "figures"
    shutil.copytree(figures / "src", copy / "src")
    shutil.copy2(figures / "draw.py", copy / "draw.py")
    proc = subprocess.run([sys.executable, str(copy / "draw.py")], cwd=ROOT, env=build_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    redrawn = sorted(copy.glob("*.svg"))
    assert [p.name for p in redrawn] == [p.name for p in drawn]
    differing = [p.name for p in drawn if p.read_bytes() != (copy / p.name).read_bytes()]
    assert not differing, f"redrawing gives different bytes for: {differing}"
