"""The build's numbers, widget data and figures are a reader's: the helpers that compare two
executions of a page, and the checks that need no second execution.

``make test`` executes every page once, with ``tools/notebooks.py`` (a fresh kernel each):
into the jupyter-cache ``_build/.jupyter_cache`` that the build reads (``built(page)``) and,
the same run, into ``_build/nbclient`` for the tests that need each page's result. The second
execution the build is compared with is a reader's: ``tests/site/test_archive.py`` installs
the site's archive in a fresh virtual environment with its README's command and runs every
notebook of it there, in that environment's own kernel (a run it makes anyway), and compares
each with the build's execution of its page, with the functions here:

* every glued value (the numbers the prose quotes, and glued figures), byte for byte;
* the state embedded for every widget (its precomputed data);
* every figure a cell displays.

A reader's run of the download, with the archive's pinned packages, reproducing the build's
numbers is a stronger check than a second run in the build's own environment. The archive's
notebooks are the downloads: the page's cells after one set-up cell (silent where the package
is installed), with the glued values written into the Markdown; glue names, not cell
positions, pair the values. This module also redraws the static diagrams from ``figures/src``
into a temporary copy and compares the files.

Widget model ids are random UUIDs that ipywidgets draws from the operating system for every
widget in every kernel session. They only tie an embedded state to its view; a reader never
sees them. They are replaced by names that follow the page's order before comparing, so
everything the reader can see or read back must be identical while the ids may differ.

Measurements of the machine (wall-clock times, peak memory) cannot repeat to the byte. A
page marks each cell that glues or draws such a value with the cell tag ``measurement``
(``:tags: [measurement]``, or ``[remove-cell, measurement]`` for a hidden glue cell). The tag
alone decides: an executed notebook keeps every glue output in the cell that made it, so the
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


NOTEBOOK_PAGES = [source.stem for source in notebooks.toc_pages() if notebooks.is_notebook(source)]


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


def glue_differences(build: dict, run: dict) -> tuple[int, int, list[str]]:
    """One page's glued values in two executions: (values compared byte for byte, values of
    cells tagged ``measurement`` only checked present, the differences). The build's
    notebook (the page's cells) says which cells are tagged."""
    a, b = glued_outputs(build), glued_outputs(run)
    differences = []
    if set(a) != set(b):
        differences.append(f"glued names differ: {sorted(set(a) ^ set(b))}")
    tagged = measured_glue_names(build)
    compared = measured = 0
    for name in sorted(set(a) & set(b)):
        if name in tagged:
            measured += 1
            continue
        compared += 1
        if a[name] != b[name]:
            differences.append(f"glue {name!r} differs {first_difference(a[name], b[name])}")
    return compared, measured, differences


def figure_differences(build: dict, run: dict) -> tuple[int, list[str]]:
    """One page's displayed figures in two executions, in order: (figures compared, the
    differences). Figures drawn by a cell tagged ``measurement`` in the build are skipped."""
    a, b = displayed_figures(build), displayed_figures(run)
    if len(a) != len(b):
        return 0, [f"{len(a)} figures in the build, {len(b)} in the other execution"]
    compared, differences = 0, []
    for i, ((measured, x), (_, y)) in enumerate(zip(a, b)):
        if measured:
            continue
        compared += 1
        if x != y:
            differences.append(f"figure {i} differs {first_difference(x, y)}")
    return compared, differences


def widget_difference(build: dict, run: dict) -> str | None:
    """Where one page's embedded widget states differ in two executions (None: identical)."""
    a, b = widget_states(build), widget_states(run)
    return None if a == b else first_difference(a, b)


def test_the_builds_cache_holds_an_execution_of_every_notebook_page():
    assert NOTEBOOK_PAGES, "_toc.yml names no notebook page"
    missing = []
    for page in NOTEBOOK_PAGES:
        try:
            built(page)
        except KeyError:
            missing.append(page)
    assert not missing, f"the build's cache holds no execution of {missing} as they are now"


def test_a_value_glued_outside_a_measurement_cell_is_compared():
    """The tag, not the name, decides: a glue in an untagged cell is never exempt."""
    cell = {"cell_type": "code", "metadata": {"tags": ["remove-cell"]},
            "outputs": [{"metadata": {"scrapbook": {"name": "cost_ms"}}, "data": {}}]}
    tagged = dict(cell, metadata={"tags": ["remove-cell", MEASUREMENT_TAG]})
    assert measured_glue_names({"cells": [cell]}) == set()
    assert measured_glue_names({"cells": [tagged]}) == {"cost_ms"}


def _glue_cell(name: str, value: str, tags=(), figure: str | None = None) -> dict:
    outputs = [{"output_type": "display_data", "metadata": {"scrapbook": {"name": name, "mime_prefix": ""}},
                "data": {"text/plain": value}}]
    if figure is not None:
        outputs.append({"output_type": "display_data", "metadata": {}, "data": {"image/svg+xml": figure}})
    return {"cell_type": "code", "metadata": {"tags": list(tags)}, "source": "", "outputs": outputs}


def test_the_comparisons_report_a_changed_value_a_missing_one_and_a_changed_figure():
    """What the archive's comparisons rely on: a doctored copy of an execution is reported."""
    build = {"metadata": {}, "cells": [_glue_cell("ratio", "0.25", figure="<svg>a</svg>"),
                                       _glue_cell("cost_ms", "3.1", [MEASUREMENT_TAG], figure="<svg>t1</svg>")]}
    same = json.loads(json.dumps(build))
    same["cells"][1]["outputs"][0]["data"]["text/plain"] = "2.9"  # a measurement: may differ
    same["cells"][1]["outputs"][1]["data"]["image/svg+xml"] = "<svg>t2</svg>"
    assert glue_differences(build, same) == (1, 1, [])
    assert figure_differences(build, same) == (1, [])
    doctored = json.loads(json.dumps(same))
    doctored["cells"][0]["outputs"][0]["data"]["text/plain"] = "0.26"
    doctored["cells"][0]["outputs"][1]["data"]["image/svg+xml"] = "<svg>b</svg>"
    compared, _, differences = glue_differences(build, doctored)
    assert compared == 1 and len(differences) == 1 and "glue 'ratio' differs" in differences[0], differences
    assert figure_differences(build, doctored)[1] == ["figure 0 differs at character 5: '<svg>a</svg>'\n"
                                                      "      vs '<svg>b</svg>'"]
    doctored["cells"].pop()
    assert glue_differences(build, doctored)[2][0] == "glued names differ: ['cost_ms']"
    assert figure_differences(build, doctored) == (0, ["2 figures in the build, 1 in the other execution"])


def test_widget_states_compare_equal_with_other_model_ids_and_differ_with_other_data():
    def page(model: str, layout: str, value: float) -> dict:
        state = {model: {"model_name": "FloatSliderModel", "state": {"value": value, "layout": f"IPY_MODEL_{layout}"}},
                 layout: {"model_name": "LayoutModel", "state": {}}}
        view = {"output_type": "display_data", "metadata": {},
                "data": {WIDGET_VIEW: {"model_id": model, "version_major": 2}}}
        return {"metadata": {"widgets": {WIDGET_STATE: {"state": state}}},
                "cells": [{"cell_type": "code", "metadata": {}, "source": "", "outputs": [view]}]}

    assert widget_difference(page("a" * 32, "b" * 32, 0.5), page("c" * 32, "d" * 32, 0.5)) is None
    assert widget_difference(page("a" * 32, "b" * 32, 0.5), page("c" * 32, "d" * 32, 0.75)) is not None


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
