"""The same widget works in a real JupyterLab, synced both ways with the kernel.

The test starts JupyterLab on 127.0.0.1 with a random token, opens the page "Soft retrieval"
as a notebook (converted with jupytext into a temporary folder, plus three cells that hold a
TemperatureExplorer), runs it in headless Chromium, moves the slider in the browser and reads
the new value in the kernel, then sets a value from Python and sees the browser update.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import expect

from attention.widgets import temperature
from tests import harness

PAGE = harness.ROOT / "chapters" / "soft-retrieval.md"
JUPYTER = Path(sys.executable).with_name("jupyter")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def jupyterlab(root: Path, disabled: tuple[str, ...] = ()):
    """JupyterLab serving ``root`` on 127.0.0.1; yields (url, token). ``disabled`` names
    front-end extensions to leave out (e.g. "jupyterlab-myst", to see stock JupyterLab)."""
    port, token = free_port(), secrets.token_hex(16)
    home = root.parent / "home"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(home / "settings"), JUPYTERLAB_WORKSPACES_DIR=str(home / "ws"),
               PYTHONPATH=str(harness.ROOT))
    # Render every cell (no windowing), and no news pop-up over the notebook.
    settings = home / "settings" / "@jupyterlab"
    (settings / "notebook-extension").mkdir(parents=True, exist_ok=True)
    (settings / "notebook-extension" / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    (settings / "apputils-extension").mkdir(parents=True, exist_ok=True)
    (settings / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}')
    page_config = home / "config" / "labconfig" / "page_config.json"
    page_config.parent.mkdir(parents=True, exist_ok=True)
    page_config.write_text(json.dumps({"disabledExtensions": {name: True for name in disabled}}))
    log = open(root.parent / "lab.log", "w")
    proc = subprocess.Popen(
        [str(JUPYTER), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
         "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--LabApp.news_url=", "--LabServerApp.check_for_updates_class="
         "jupyterlab.NeverCheckForUpdate", "--LabApp.extension_manager=readonly"]
        + (["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
        stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}api/status?token={token}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("JupyterLab did not start:\n" + (root.parent / "lab.log").read_text())
                time.sleep(0.5)
        yield url, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def page_as_notebook(folder: Path) -> Path:
    """The page converted to .ipynb, with three cells appended that hold a widget."""
    import jupytext
    import nbformat

    nb = jupytext.read(PAGE)
    nb.cells += [
        nbformat.v4.new_code_cell("from attention.widgets import TemperatureExplorer\n"
                                  "_w = TemperatureExplorer()\n_w"),
        nbformat.v4.new_code_cell('print("kernel sees temperature", _w.temperature)'),
    ]
    path = folder / "soft-retrieval.ipynb"
    nbformat.write(nb, path)
    return path


def run_cell(page, index: int):
    """Select code/markdown cell ``index`` and run it with Shift+Enter."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")


@pytest.mark.slow
def test_slider_moved_in_jupyterlab_reaches_the_kernel_and_python_moves_the_slider(tmp_path, browser):
    root = tmp_path / "lab"
    root.mkdir()
    page_as_notebook(root)
    with jupyterlab(root) as (url, token):
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        guard = harness.GuardedPage.open(context)
        page = guard.page
        page.goto(f"{url}lab/tree/soft-retrieval.ipynb?token={token}", wait_until="domcontentloaded")
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60000)
        # Wait until the kernel is idle, then Run > Run All Cells (again if it was not ready).
        for attempt in range(3):
            page.locator(".jp-StatusBar-Widget", has_text="| Idle").first.wait_for(timeout=60000)
            page.locator(".jp-Notebook").first.click()
            page.keyboard.press("Escape")
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
            try:  # an execution prompt shows [*] or [1] once the kernel takes the cells
                page.wait_for_function(r"""[...document.querySelectorAll('.jp-InputPrompt')]
                    .some(p => /\[[*0-9]/.test(p.innerText))""", timeout=10000)
                break
            except Exception:
                if attempt == 2:
                    raise

        # The page itself may already show a TemperatureExplorer: ours is the last one.
        widget = page.locator(".attn-temperature").last
        page.wait_for_function("document.querySelectorAll('.attn-temperature').length >= 1", timeout=90000)
        widget.scroll_into_view_if_needed()
        cells = page.locator(".jp-Notebook .jp-Cell")
        n = cells.count()
        printed = cells.nth(n - 1).locator(".jp-OutputArea-output")
        printed.wait_for(timeout=30000)
        assert printed.inner_text().strip() == "kernel sees temperature 1.0"
        # The fallback figure is hidden in JupyterLab; the live widget shows tau = 1.
        assert page.locator(".attn-fallback").count() >= 1
        assert all(f.is_hidden() for f in page.locator(".attn-fallback").all())
        out = widget.locator('output[data-output="temperature"]')
        assert out.inner_text() == "τ = 1.00"

        # Browser -> kernel: move the slider (keyboard and fill), then ask the kernel.
        slider = widget.locator('input[data-control="temperature"]')
        slider.fill("46")
        slider.focus()
        page.keyboard.press("ArrowRight")
        want = temperature.TEMPERATURES[47]
        expect(out).to_have_text(f"τ = {want:.1f}")
        assert slider.input_value() == "47"
        page.wait_for_timeout(300)  # the comm message reaches the kernel
        run_cell(page, n - 1)
        page.wait_for_function(
            "([el, want]) => el.innerText.includes(want)",
            arg=[printed.element_handle(), f"temperature {want!r}"], timeout=30000)

        # Kernel -> browser: set the trait in a new cell; the slider and readout follow.
        page.keyboard.type("_w.temperature = 0.1")
        page.keyboard.press("Shift+Enter")
        tau = temperature.TEMPERATURES[6]  # 10^(-20/20) = 0.1
        page.wait_for_function(
            "([el, want]) => el.innerText === want", arg=[out.element_handle(), f"τ = {tau:#.3g}"],
            timeout=30000)
        assert slider.input_value() == "6"
        assert float(widget.locator('dd[data-readout="temperature"]').get_attribute("data-value")) == tau
        context.close()
