"""The widgets are live in the built static book: no kernel, no request outside the site.

For each widget, in headless Debian Chromium on the page served from 127.0.0.1, every control
is moved three ways (Playwright ``fill``, arrow keys, a real mouse drag; the switch by
``check``, the space bar and a mouse click). After each move the drawing must change and every
readout must equal the value Python computed for that grid point. The page must stay clean
(no outside request, console error or page error), and the widget must be accessible and have
a static fallback for print and for readers without JavaScript.

The widgets live on the pages listed in ``tests/site/explorers.PAGES``;
``WIDGET_PAGE=chapters/x.html`` points every widget at one other page (a scratch page while
developing).
"""

from __future__ import annotations

import json
import re

import pytest

from attention.widgets import SaturationExplorer, TemperatureExplorer, WidthExplorer
from tests import harness
from tests.site.explorers import (controls, guarded_context, move_every_way, open_explorer, page_of,
                                  readouts, toggle_every_way, wait_until_ready)

CLASSES = {"temperature": TemperatureExplorer, "width": WidthExplorer, "saturation": SaturationExplorer}
SLIDERS = {"temperature": ["temperature", "q1", "q2", "q3"], "width": ["d_k", "rho"], "saturation": ["d_k", "temperature"]}
SWITCHES = {"temperature": [], "width": [], "saturation": ["scaled"]}


@pytest.fixture(scope="module")
def python_widgets():
    return {kind: cls() for kind, cls in CLASSES.items()}


def open_widget(guarded_page, site_url, kind):
    return open_explorer(guarded_page, site_url, kind, page_of(kind))


def expected(kind: str, widget, ctl: dict) -> dict:
    """What Python computed for the grid point the controls select, in the readouts' terms."""
    g = widget._grid
    if kind == "temperature":
        tau = g["temperatures"][ctl["temperature"]]
        q = [g["query_steps"][ctl[f"q{j}"]] for j in (1, 2, 3)]
        r = widget.readout(tau, q)
        return {"temperature": tau, "query": q, "weights": r["weights"], "output": r["output"],
                "scores": r["scores"], "where": r["where"]}
    if kind == "width":
        d_k, rho = g["d_ks"][ctl["d_k"]], g["rhos"][ctl["rho"]]
        p = widget.readout(d_k, rho)
        return {"d_k": d_k, "rho": rho,  # each statistic: [measured, standard error, predicted]
                **{k: [p[k], p[k + "_se"], p["pred_" + k]]
                   for k in ("raw_mean", "raw_var", "scaled_mean", "scaled_var", "kurtosis")},
                "row_key1": [p["row_unscaled"][0], p["row_scaled"][0]]}
    d_k, tau, scaled = g["d_ks"][ctl["d_k"]], g["temperatures"][ctl["temperature"]], ctl["scaled"]
    r = widget.readout(d_k, tau, scaled, g["t_ks"][ctl["T_k"]])
    return {k: r[k] for k in ("score_sd", "max_weight", "jacobian_sq", "grad_q", "mean_max_weight",
                              "median_grad_q", "mean_grad_q", "p90_grad_q")}


def assert_shows_python_values(kind, widget, root):
    shown = readouts(root)
    want = expected(kind, widget, controls(root))
    for name, value in want.items():
        if kind == "temperature" and name in ("weights", "output", "scores"):
            # The temperature explorer computes these itself (a softmax of three numbers):
            # equal to the library's to rounding.
            assert shown[name] == pytest.approx(value, rel=1e-11, abs=1e-13), \
                f"{kind}: readout {name} shows {shown[name]}, Python computed {value}"
            continue
        assert shown[name] == value, f"{kind}: readout {name} shows {shown[name]}, Python computed {value}"


@pytest.mark.parametrize("kind", list(CLASSES))
def test_every_slider_moved_by_fill_keys_and_mouse_redraws_and_shows_pythons_values(
        guarded_page, site_url, python_widgets, kind):
    page, root = open_widget(guarded_page, site_url, kind)
    widget = python_widgets[kind]
    assert_shows_python_values(kind, widget, root)
    for name in SLIDERS[kind]:
        move_every_way(page, root, name, lambda how: assert_shows_python_values(kind, widget, root),
                       label=f"{kind}.{name}")
    for name in SWITCHES[kind]:
        toggle_every_way(page, root, name, lambda how: assert_shows_python_values(kind, widget, root),
                         label=f"{kind}.{name}")
    guarded_page.assert_clean()
    assert guarded_page.outside_requests == []


@pytest.mark.parametrize("kind", list(CLASSES))
def test_the_grid_embedded_in_the_page_is_the_one_python_computes(site_url, built_html, python_widgets, kind):
    text = (built_html / page_of(kind)).read_text()
    state = json.loads(re.search(
        r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>', text, re.S).group(1))
    grids = [m["state"]["_grid"] for m in state["state"].values()
             if m["state"].get("_anywidget_id", "").endswith(CLASSES[kind].__name__)]
    assert grids, f"no {CLASSES[kind].__name__} state embedded in {page_of(kind)}"
    assert grids[0] == json.loads(json.dumps(python_widgets[kind]._grid))


@pytest.mark.parametrize("kind", list(CLASSES))
def test_controls_have_visible_labels_accessible_names_and_no_axe_violations(guarded_page, site_url, kind):
    page, root = open_widget(guarded_page, site_url, kind)
    for control in root.locator("[data-control]").all():
        label = control.evaluate("i => i.labels.length ? i.labels[0].innerText.trim() : ''")
        assert label, "a control without a visible label"
        assert control.evaluate("i => i.labels[0].getBoundingClientRect().width > 0")
    page.add_script_tag(path=str(harness.ROOT / "node_modules" / "axe-core" / "axe.min.js"))  # a test tool, not published
    for theme in ("light", "dark"):
        page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
        result = page.evaluate(f"""async () => (await axe.run(document.querySelector('.attn-{kind}'),
            {{runOnly: ['wcag2a', 'wcag2aa', 'wcag21aa']}})).violations.map(v => v.id + ': ' +
            v.nodes.map(n => n.target.join(' ')).join(', '))""")
        assert result == [], f"{theme} theme: {result}"
    guarded_page.assert_clean()


def contrast(fg: str, bg: str) -> float:
    def lum(css):
        r, g, b = (int(v) / 255 for v in re.findall(r"[\d.]+", css)[:3])
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    a, b = sorted((lum(fg), lum(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


@pytest.mark.parametrize("kind", list(CLASSES))
def test_widget_colours_follow_the_dark_theme_and_keep_contrast(guarded_page, site_url, kind):
    page, root = open_widget(guarded_page, site_url, kind)
    seen = {}
    for theme in ("light", "dark"):
        page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
        fg, bg, bar = root.evaluate("""r => [getComputedStyle(r.querySelector('dd')).color,
            getComputedStyle(r.querySelector('.attn-root')).backgroundColor,
            getComputedStyle(r.querySelector('.attn-bar')).fill]""")
        assert contrast(fg, bg) >= 4.5, f"{theme}: text {fg} on {bg}"
        assert contrast(bar, bg) >= 3.0, f"{theme}: bars {bar} on {bg}"
        seen[theme] = bg
    assert seen["light"] != seen["dark"]


@pytest.mark.parametrize("kind", list(CLASSES))
def test_static_figure_stands_in_without_javascript_and_in_print(browser, site_url, kind):
    with guarded_context(browser, java_script_enabled=False) as guard:
        guard.goto(site_url + page_of(kind))
        fallback = guard.page.locator(".attn-fallback img[alt]").first
        assert fallback.is_visible()
        assert fallback.evaluate("i => i.complete && i.naturalWidth > 0")

    with guarded_context(browser) as guard:
        guard.goto(site_url + page_of(kind))
        wait_until_ready(guard.page, timeout=30000)
        assert guard.page.locator(".attn-fallback").first.is_hidden()  # the live widget replaces it
        guard.page.emulate_media(media="print")
        assert guard.page.locator(".attn-fallback").first.is_visible()
        assert guard.page.locator(f".attn-{kind}").first.is_hidden()
        guard.assert_clean()
