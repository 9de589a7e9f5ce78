"""Two fresh executions of every page give the same numbers, widget data and figures.

``make test`` executes every page twice, and only twice, each time in a fresh kernel with
``tools/notebooks.py``: once for the book's build (``make book``'s execution, into the
jupyter-cache ``_build/.jupyter_cache`` that the build reads) and once more as a reader's
"Run All" (into ``_build/nbclient``; ``tests/pages/test_notebooks_run.py`` needs that run
anyway). This module compares the two:

* every glued value (the numbers the prose quotes, and glued figures), byte for byte;
* the state embedded for every widget (its precomputed data);
* every figure a cell displays;
* the static diagrams redrawn from ``figures/src`` into a temporary copy.

Widget model ids are random UUIDs that ipywidgets draws from the operating system for every
widget in every kernel session. They only tie an embedded state to its view; a reader never
sees them. They are replaced by names that follow the page's order before comparing, so
everything the reader can see or read back must be identical while the ids may differ.

Measurements of the machine (wall-clock times, peak memory) cannot repeat to the byte. A
page marks each cell that glues or draws such a value with the cell tag ``measurement``
(``:tags: [measurement]``, or ``[remove-cell, measurement]`` for a hidden glue cell). The tag
alone decides: the Run-All notebook keeps every glue output in the cell that made it, so the
glue names and figures of tagged cells are known without looking at the code. Those must
exist in both executions but may differ; every other value must be identical.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import harness
from tools import notebooks

ROOT = harness.ROOT
CACHE = harness.HTML.parent / ".jupyter_cache"  # `make book`'s execution (or $BOOK_HTML/..)
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
MEASUREMENT_TAG = "measurement"
IMAGES = ("image/svg+xml", "image/png", "image/jpeg", "image/gif")
MODEL_ID = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")  # ipywidgets: uuid4().hex


def built(page: str) -> dict:
    """The page's execution that the build read from its cache."""
    return notebooks.cached_notebook(ROOT / "chapters" / f"{page}.md", CACHE)


def run_all(page: str) -> dict:
    return json.loads((notebooks.run_dir() / "chapters" / f"{page}.ipynb").read_text())


@pytest.fixture(scope="module")
def pages() -> list[str]:
    """The pages with code, after both executions (the Run-All one happens here if needed)."""
    runs = notebooks.page_runs()
    failed = [r.message for r in runs.values() if not r.ok]
    assert not failed, "a page failed to run, so it cannot be compared:\n" + "\n".join(failed)
    names = [Path(page).stem for page, r in runs.items() if r.code_cells]
    assert names, "no page with code was executed"
    return names


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


def is_measurement(cell: dict) -> bool:
    return cell.get("cell_type") == "code" and MEASUREMENT_TAG in cell.get("metadata", {}).get("tags", [])


def glue_name(output: dict) -> str | None:
    return output.get("metadata", {}).get("scrapbook", {}).get("name")


def measured_glue_names(run: dict) -> set[str]:
    """Glue names set by cells tagged ``measurement``, read from the Run-All notebook."""
    return {name for cell in run["cells"] if is_measurement(cell)
            for output in cell.get("outputs", []) if (name := glue_name(output))}


def glued_outputs(notebook: dict, side: Path | None = None) -> dict[str, str]:
    """glue name -> the data the page stored for it, as canonical JSON (from the notebook's
    outputs, and from ``side``, a myst-nb ``PAGE.glue.json``, if given)."""
    names = model_id_names(notebook)
    outputs = json.loads(side.read_text()) if side is not None and side.exists() else {}
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            if name := glue_name(output):
                outputs[name] = output
    return {name: canonical(unprefixed(output), names) for name, output in outputs.items()}


def unprefixed(output: dict) -> dict:
    """A glue output's data under plain MIME types (Run All keeps myst-nb's glue prefix)."""
    prefix = output.get("metadata", {}).get("scrapbook", {}).get("mime_prefix", "")
    return {mime.removeprefix(prefix) if prefix else mime: value for mime, value in output.get("data", {}).items()}


def displayed_figures(notebook: dict) -> list[tuple[bool, str]]:
    """(drawn by a measurement cell?, image data) for every figure a cell displays (not glue):
    images, and HTML that carries one (a widget's static fallback figure)."""
    figures = []
    names = model_id_names(notebook)
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            if glue_name(output):
                continue
            data = output.get("data", {})
            for mime in IMAGES:
                if mime in data:
                    content = data[mime]
                    figures.append((is_measurement(cell), "".join(content) if isinstance(content, list) else content))
            html = data.get("text/html", "")
            html = "".join(html) if isinstance(html, list) else html
            if "<img" in html or "<svg" in html:  # the figure names its widget by its random id
                html = MODEL_ID.sub(lambda m: names.get(m.group(0), "widget-model"), html)
                figures.append((is_measurement(cell), html))
    return figures


def widget_states(notebook: dict) -> str:
    return canonical(notebook.get("metadata", {}).get("widgets", {}), model_id_names(notebook))


def first_difference(a: str, b: str, context: int = 60) -> str:
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"at character {i}: {a[max(0, i - context):i + context]!r}\n      vs {b[max(0, i - context):i + context]!r}"


def test_the_build_executed_every_page_run_all_ran(pages):
    missing = []
    for page in pages:
        try:
            built(page)
        except KeyError:
            missing.append(page)
    assert not missing, f"the build's cache holds no execution of {missing} as they are now"


def test_every_glued_value_is_byte_identical_in_both_executions(pages):
    compared, measured, differences = 0, 0, []
    for page in pages:
        run = run_all(page)
        a = glued_outputs(built(page))
        b = glued_outputs(run)
        if set(a) != set(b):
            differences.append(f"{page}: glued names differ: {sorted(set(a) ^ set(b))}")
        tagged = measured_glue_names(run)
        for name in sorted(set(a) & set(b)):
            if name in tagged:
                measured += 1
                continue
            compared += 1
            if a[name] != b[name]:
                differences.append(f"{page}: glue {name!r} differs {first_difference(a[name], b[name])}")
    print(f"{compared} glued values compared byte for byte, {measured} measurements (tagged) only checked present")
    assert compared > 0, "no glued value in the book: nothing was compared"
    assert not differences, (
        f"{len(differences)} of {compared} glued values differ between the build and Run All (a timing or "
        f"memory measurement belongs in a cell tagged '{MEASUREMENT_TAG}'; anything else needs a fixed "
        "seed):\n  " + "\n  ".join(differences))


def test_a_value_glued_outside_a_measurement_cell_is_compared():
    """The tag, not the name, decides: a glue in an untagged cell is never exempt."""
    cell = {"cell_type": "code", "metadata": {"tags": ["remove-cell"]},
            "outputs": [{"metadata": {"scrapbook": {"name": "cost_ms"}}, "data": {}}]}
    tagged = dict(cell, metadata={"tags": ["remove-cell", MEASUREMENT_TAG]})
    assert measured_glue_names({"cells": [cell]}) == set()
    assert measured_glue_names({"cells": [tagged]}) == {"cost_ms"}


def test_every_widget_state_is_identical_in_both_executions(pages):
    differences = [f"{page}: {first_difference(widget_states(built(page)), widget_states(run_all(page)))}"
                   for page in pages if widget_states(built(page)) != widget_states(run_all(page))]
    assert not differences, "widget state differs between the build and Run All:\n  " + "\n  ".join(differences)


def test_every_displayed_figure_is_identical_in_both_executions(pages):
    compared, differences = 0, []
    for page in pages:
        a, b = displayed_figures(built(page)), displayed_figures(run_all(page))
        if len(a) != len(b):
            differences.append(f"{page}: {len(a)} figures in the build, {len(b)} in Run All")
            continue
        for i, ((measured, x), (_, y)) in enumerate(zip(a, b)):
            if measured:
                continue
            compared += 1
            if x != y:
                differences.append(f"{page}: figure {i} differs {first_difference(x, y)}")
    assert compared > 0, "no page displays a figure: nothing was compared"
    assert not differences, "figures differ between the build and Run All (a measured figure belongs in a " \
        f"cell tagged '{MEASUREMENT_TAG}'):\n  " + "\n  ".join(differences)


def test_static_diagrams_redraw_to_identical_files(tmp_path):
    figures = ROOT / "figures"
    drawn = sorted(figures.glob("*.svg"))
    assert drawn, "figures/*.svg missing: run `make figures` (make book does) first"
    copy = tmp_path / "figures"
    shutil.copytree(figures / "src", copy / "src")
    shutil.copy2(figures / "draw.py", copy / "draw.py")
    env = {**__import__("os").environ, "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg"}
    env.setdefault("SOURCE_DATE_EPOCH", "1767225600")
    proc = subprocess.run([sys.executable, str(copy / "draw.py")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    redrawn = sorted(copy.glob("*.svg"))
    assert [p.name for p in redrawn] == [p.name for p in drawn]
    differing = [p.name for p in drawn if p.read_bytes() != (copy / p.name).read_bytes()]
    assert not differing, f"redrawing gives different bytes for: {differing}"
