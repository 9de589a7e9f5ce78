"""The temperature explorer (page "Soft retrieval"): its Python side, and the live widget in
the built book in headless Chromium.

The browser computes the softmax of three numbers itself, so every number it shows is
compared with the library's attention at the same setting (``explorer_readout``). The
browser tests move every control, walk the page's "things to try" bullets in order and check
what each says happens, push the output to the extremes of the sliders and check it stays in
the triangle, and load the page on a 390 px phone screen. Every page must stay clean: no
console error, no request outside the site.

The Python tests need no built book; the browser tests need one (``BOOK_HTML``).
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
import traitlets

from attention.widgets import TemperatureExplorer
from attention.widgets import temperature as tw

PAGE = "chapters/soft-retrieval.html"
TAUS = tw.TEMPERATURES
STEPS = tw.QUERY_STEPS
TAU_ONE = TAUS.index(1.0)


def softmax(s):
    e = np.exp(np.asarray(s, dtype=np.float64) - np.max(s))
    return e / e.sum()


# --- Python side -----------------------------------------------------------------------------

def test_the_grid_holds_the_slider_positions_and_the_values_of_the_hull_exercise():
    g = TemperatureExplorer()._grid
    assert g["temperatures"] == list(TAUS) and len(TAUS) == 53
    assert TAUS[0] == pytest.approx(0.05, rel=0.01) and TAUS[-1] == pytest.approx(20, rel=0.01)
    assert g["query_steps"][0] == -4.0 and g["query_steps"][-1] == 4.0 and len(STEPS) == 81
    assert g["values"] == [[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]] and g["d_k"] == 4


@pytest.mark.parametrize("tau", [TAUS[0], 1.0, TAUS[-1]])
@pytest.mark.parametrize("q", [(0.1, 3.0, 0.1), (-4.0, 4.0, -4.0), (1.6, 0.6, -0.2), (2.0, 2.0, 2.0)])
def test_readout_is_the_softmax_of_the_query_over_tau_sqrt_dk(tau, q):
    r = tw.explorer_readout(tau, q)
    a = softmax(np.array(q) / (tau * 2.0))
    np.testing.assert_allclose(r["weights"], a, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(r["output"], [10 * a[1], 10 * a[2]], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r["scores"], np.array(q) / (tau * 2.0), rtol=1e-15)


def test_the_starting_state_is_the_worked_example():
    w = TemperatureExplorer()
    r = w.readout()
    assert w.temperature == 1.0 and w.query == [0.1, 3.0, 0.1]
    np.testing.assert_allclose(r["weights"], [0.160, 0.681, 0.160], atol=5e-4)
    assert r["where"] == "inside the triangle"


def test_query_entries_snap_to_tenths_and_out_of_range_values_are_refused():
    w = TemperatureExplorer()
    w.query = [0.04, -3.96, 2.0]
    assert w.query == [0.0, -4.0, 2.0]
    for bad in ([1.0, 2.0], [4.5, 0.0, 0.0], [0.0, float("nan"), 0.0], [0.0, 0.0, float("inf")], "abc"):
        with pytest.raises(traitlets.TraitError):
            w.query = bad
    assert w.query == [0.0, -4.0, 2.0]
    with pytest.raises(traitlets.TraitError, match="between"):
        w.temperature = 100.0


@pytest.mark.parametrize("weights, words", [
    ((1.0, 0.0, 0.0), "at the corner v1"), ((0.0005, 0.9995, 0.0), "at the corner v2"),
    ((0.0, 0.5, 0.5), "on the edge v2 v3"), ((0.3, 0.0, 0.7), "on the edge v1 v3"),
    ((0.2, 0.3, 0.5), "inside the triangle"),
])
def test_where_the_output_lies_is_read_off_its_weights(weights, words):
    assert tw.where_in_triangle(weights) == words


def test_the_fallback_figure_has_alt_text_without_typed_numbers():
    w = TemperatureExplorer()
    assert not re.search(r"\d", w.fallback_alt.replace("v2", ""))
    assert "attn-fallback" in w.fallback_html()


# --- the live widget ---------------------------------------------------------------------------

def open_explorer(guarded_page, site_url):
    guarded_page.goto(site_url + PAGE)
    page = guarded_page.page
    page.wait_for_function("document.documentElement.dataset.attnWidgets === 'ready'", timeout=15000)
    root = page.locator(".attn-temperature").first
    assert root.count() == 1
    root.scroll_into_view_if_needed()
    return page, root


def slider(root, name):
    return root.locator(f'input[data-control="{name}"]')


def state(root) -> dict:
    """The sliders' settings and every readout's unrounded value, as the page holds them."""
    raw = root.evaluate("""r => ({
        controls: Object.fromEntries([...r.querySelectorAll('[data-control]')].map(
            i => [i.dataset.control, Number(i.value)])),
        readouts: Object.fromEntries([...r.querySelectorAll('[data-readout]')].map(
            d => [d.dataset.readout, d.dataset.value])),
        texts: Object.fromEntries([...r.querySelectorAll('[data-readout]')].map(
            d => [d.dataset.readout, d.textContent]))})""")
    c = raw["controls"]
    return {"tau": TAUS[c["temperature"]], "q": [STEPS[c[f"q{j}"]] for j in (1, 2, 3)],
            **{k: json.loads(v) for k, v in raw["readouts"].items()}, "texts": raw["texts"]}


def drawing(root) -> str:
    return root.evaluate("r => [...r.querySelectorAll('svg')].map(s => s.innerHTML).join('')")


def assert_matches_the_library(s: dict):
    want = tw.explorer_readout(s["tau"], s["q"])
    assert s["temperature"] == s["tau"] and s["query"] == s["q"]
    np.testing.assert_allclose(s["weights"], want["weights"], rtol=1e-11, atol=1e-15)
    np.testing.assert_allclose(s["output"], want["output"], rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(s["scores"], want["scores"], rtol=1e-13)
    assert s["where"] == tw.where_in_triangle(want["weights"])


def set_to(page, root, name, index):
    """Move a slider to ``index`` with the keyboard: Home, then arrow keys."""
    sl = slider(root, name)
    sl.focus()
    page.keyboard.press("Home")
    for _ in range(index):
        page.keyboard.press("ArrowRight")
    assert int(sl.input_value()) == index


def test_every_control_redraws_and_shows_the_librarys_numbers(guarded_page, site_url):
    page, root = open_explorer(guarded_page, site_url)
    assert_matches_the_library(state(root))
    for name, top in (("temperature", len(TAUS) - 1), ("q1", 80), ("q2", 80), ("q3", 80)):
        sl = slider(root, name)
        output = root.locator(f'output[data-output="{name}"]')
        for how in ("fill", "keys", "drag"):
            before, svg = state(root)["q"] + [state(root)["tau"]], drawing(root)
            i = int(sl.input_value())
            if how == "fill":
                sl.fill(str(0 if i > top // 2 else top))
            elif how == "keys":
                sl.focus()
                page.keyboard.press("ArrowLeft" if i > top // 2 else "ArrowRight")
            else:
                box = sl.bounding_box()
                x_of = lambda k: box["x"] + 8 + (box["width"] - 16) * k / top  # noqa: E731
                y = box["y"] + box["height"] / 2
                page.mouse.move(x_of(i), y)
                page.mouse.down()
                page.mouse.move(x_of(top // 4 if i > top // 2 else 3 * top // 4), y, steps=8)
                page.mouse.up()
            after = state(root)
            assert after["q"] + [after["tau"]] != before, f"{name}: {how} moved nothing"
            assert drawing(root) != svg, f"{name}: {how} did not redraw"
            assert sl.get_attribute("aria-valuetext") == output.inner_text()
            assert_matches_the_library(after)
    guarded_page.assert_clean()
    assert guarded_page.outside_requests == []


def test_the_sliders_are_reached_with_tab_in_order_and_moved_with_the_keyboard(guarded_page, site_url):
    page, root = open_explorer(guarded_page, site_url)
    slider(root, "temperature").focus()
    for name in ("q1", "q2", "q3"):
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.dataset.control") == name
    page.keyboard.press("End")
    assert state(root)["q"][2] == 4.0
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Home")
    assert state(root)["q"][1] == -4.0
    guarded_page.assert_clean()


def bullet_texts(page) -> list[str]:
    return page.evaluate("""() => {
        const h = [...document.querySelectorAll('p')].find(p => p.textContent.startsWith('Things to try'));
        return [...h.nextElementSibling.querySelectorAll(':scope > li')].map(li => li.innerText);
    }""")


def test_the_things_to_try_bullets_work_in_order(guarded_page, site_url):
    page, root = open_explorer(guarded_page, site_url)
    bullets = bullet_texts(page)
    assert [b.split(".")[0] for b in bullets] == ["Cold and hot", "A tie at the top", "No way out", "Inside"]
    s = state(root)
    assert s["tau"] == 1.0 and s["q"] == [0.1, 3.0, 0.1]

    # 1. Cold and hot: tau to the far left -> one-hot on key 2, the corner v2; to the far right
    #    -> toward the centroid, always on the line where a_1 = a_3.
    tau = slider(root, "temperature")
    tau.focus()
    page.keyboard.press("Home")
    s = state(root)
    assert s["weights"][1] > 1 - 1e-9 and s["where"] == "at the corner v2"
    np.testing.assert_allclose(s["output"], [10, 0], atol=1e-8)
    centroid = np.array([10 / 3, 10 / 3])
    distances = []
    for _ in range(len(TAUS) - 1):
        page.keyboard.press("ArrowRight")
        s = state(root)
        assert s["weights"][0] == s["weights"][2]  # keys 1 and 3 tie: the dashed line
        distances.append(float(np.linalg.norm(np.array(s["output"]) - centroid)))
    assert s["tau"] == TAUS[-1]
    assert distances == sorted(distances, reverse=True) and distances[-1] < 0.25

    # 2. A tie at the top: tau far left, q3 up step by step to 3.0 -> stays at v2, then slides
    #    along the edge v2 v3 and stops at its midpoint.
    page.keyboard.press("Home")
    q3 = slider(root, "q3")
    q3.focus()
    walk = []
    while state(root)["q"][2] < 3.0:
        page.keyboard.press("ArrowRight")
        walk.append(state(root))
    assert walk[-1]["q"] == [0.1, 3.0, 3.0]
    assert all(w["where"] == "at the corner v2" for w in walk if w["q"][2] <= 2.0)
    assert all(w["where"] in ("at the corner v2", "on the edge v2 v3") for w in walk)
    xs = [w["output"][0] for w in walk]
    assert xs == sorted(xs, reverse=True)
    assert walk[-1]["where"] == "on the edge v2 v3"
    np.testing.assert_allclose(walk[-1]["output"], [5, 5], atol=1e-9)

    # 3. No way out: q2 to its largest value, q1 and q3 to their smallest -> the corner v2,
    #    and the first coordinate never passes 10.
    for name, key in (("q2", "End"), ("q1", "Home"), ("q3", "Home")):
        slider(root, name).focus()
        page.keyboard.press(key)
        assert state(root)["output"][0] <= 10.0
    s = state(root)
    assert s["q"] == [-4.0, 4.0, -4.0] and s["where"] == "at the corner v2"
    np.testing.assert_allclose(s["output"], [10, 0], atol=1e-12)

    # 4. Inside: tau = 1, q = (1.6, 0.6, -0.2) -> the weights and output the bullet quotes; then
    #    tau to the far left -> along the dashed curve into the corner v1.
    tau.fill(str(TAU_ONE))
    for name, value in (("q1", 1.6), ("q2", 0.6), ("q3", -0.2)):
        slider(root, name).fill(str(STEPS.index(value)))
    s = state(root)
    assert s["tau"] == 1.0 and s["q"] == [1.6, 0.6, -0.2]
    quoted = re.findall(r"\d+\.\d+", bullets[3].split("about", 1)[1])[:5]
    assert quoted == [f"{a:.2f}" for a in s["weights"]] + [f"{o:.1f}" for o in s["output"]]
    assert quoted[:3] == ["0.50", "0.30", "0.20"] and quoted[3:] == ["3.0", "2.0"]
    path = root.evaluate("""r => r.querySelector('polyline.attn-path').getAttribute('points')
        .split(' ').map(p => p.split(',').map(Number))""")
    tau.focus()
    for _ in range(TAU_ONE):
        page.keyboard.press("ArrowLeft")
        cx, cy = (float(root.locator("circle.attn-point").get_attribute(a)) for a in ("cx", "cy"))
        assert min(math.hypot(cx - x, cy - y) for x, y in path) < 0.01  # on the dashed curve
    s = state(root)
    assert s["tau"] == TAUS[0] and s["where"] == "at the corner v1"
    guarded_page.assert_clean()


def test_the_output_stays_inside_the_triangle_at_the_extremes(guarded_page, site_url):
    page, root = open_explorer(guarded_page, site_url)
    triangle = root.evaluate("""r => r.querySelector('polygon.attn-hull').getAttribute('points')
        .split(' ').map(p => p.split(',').map(Number))""")
    (x1, y1), (x2, y2), (x3, y3) = triangle
    area = (x2 - x1) * (y3 - y1) - (x3 - x1) * (y2 - y1)
    corners = [(a, b, c) for a in (0, 80) for b in (0, 80) for c in (0, 80)]
    for tau_index in (0, len(TAUS) - 1):
        slider(root, "temperature").fill(str(tau_index))
        for setting in corners + [(40, 80, 79), (0, 80, 80), (80, 0, 1)]:
            for j, index in enumerate(setting):
                slider(root, f"q{j + 1}").fill(str(index))
            s = state(root)
            assert_matches_the_library(s)
            x, y = s["output"]
            assert x >= 0 and y >= 0 and x + y <= 10 + 1e-12, (setting, s["output"])
            px, py = (float(root.locator("circle.attn-point").get_attribute(a)) for a in ("cx", "cy"))
            # barycentric coordinates of the drawn point in the drawn triangle
            l2 = ((px - x1) * (y3 - y1) - (x3 - x1) * (py - y1)) / area
            l3 = ((x2 - x1) * (py - y1) - (px - x1) * (y2 - y1)) / area
            assert min(l2, l3, 1 - l2 - l3) > -1e-6, (setting, px, py)
    guarded_page.assert_clean()


def test_on_a_390_px_phone_the_page_does_not_scroll_sideways_and_no_text_is_under_10_px(browser, site_url):
    from tests import harness

    context = browser.new_context(viewport={"width": 390, "height": 844})
    guard = harness.GuardedPage.open(context)
    page, root = open_explorer(guard, site_url)
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"the page scrolls sideways by {overflow} px"
    box = root.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    smallest = root.evaluate("""r => {
        const sizes = [];
        for (const t of r.querySelectorAll('svg text')) {
            const scale = t.ownerSVGElement.getScreenCTM().a;
            sizes.push([parseFloat(getComputedStyle(t).fontSize) * scale, t.textContent]);
        }
        const walker = document.createTreeWalker(r, NodeFilter.SHOW_TEXT);
        while (walker.nextNode()) {
            const el = walker.currentNode.parentElement;
            if (el.closest('svg') || !walker.currentNode.textContent.trim()) continue;
            sizes.push([parseFloat(getComputedStyle(el).fontSize), walker.currentNode.textContent]);
        }
        return sizes.sort((a, b) => a[0] - b[0]).slice(0, 3);
    }""")
    assert smallest[0][0] >= 10, f"text drawn smaller than 10 px: {smallest}"
    for name in ("temperature", "q1", "q2", "q3"):
        b = slider(root, name).bounding_box()
        assert b["width"] >= 60 and b["x"] + b["width"] <= 390
    guard.assert_clean()
    context.close()
