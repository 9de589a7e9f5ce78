"""The temperature explorer (page "Soft retrieval") live in the built book, in headless
Chromium, offline (its Python side: tests/lib/test_widgets_grids.py).

The browser computes the softmax of three numbers itself, so every number it shows is
compared with the library's attention at the same setting (``explorer_readout``). The
browser tests move every control, walk the page's "things to try" bullets in order and check
what each says happens, push the output to the extremes of the sliders and check it stays in
the triangle, and load the page on a 390 px phone screen. Every page must stay clean: no
console error, no request outside the site.

Needs a built book (``BOOK_HTML``).
"""

from __future__ import annotations

import math
import re

import numpy as np

from attention.widgets import temperature as tw
from tests.site.explorers import (PHONE, assert_fits_a_phone, bullet_texts, control, dom_state,
                                  focused_control, guarded_context, move_every_way, smallest_texts)
from tests.site.explorers import open_explorer as _open

TAUS = tw.TEMPERATURES
STEPS = tw.QUERY_STEPS
TAU_ONE = TAUS.index(1.0)


def open_explorer(guarded_page, site_url):
    return _open(guarded_page, site_url, "temperature")


slider = control


def state(root) -> dict:
    """The sliders' settings and every readout's unrounded value, as the page holds them."""
    raw = dom_state(root)
    c = raw["controls"]
    return {"tau": TAUS[c["temperature"]], "q": [STEPS[c[f"q{j}"]] for j in (1, 2, 3)],
            **raw["readouts"], "texts": raw["texts"]}


def assert_matches_the_library(s: dict):
    want = tw.explorer_readout(s["tau"], s["q"])
    assert s["temperature"] == s["tau"] and s["query"] == s["q"]
    np.testing.assert_allclose(s["weights"], want["weights"], rtol=1e-11, atol=1e-15)
    np.testing.assert_allclose(s["output"], want["output"], rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(s["scores"], want["scores"], rtol=1e-13)
    assert s["where"] == tw.where_in_triangle(want["weights"])


def test_every_control_redraws_and_shows_the_librarys_numbers(guarded_page, site_url):
    page, root = open_explorer(guarded_page, site_url)
    assert_matches_the_library(state(root))
    for name, top in (("temperature", len(TAUS) - 1), ("q1", 80), ("q2", 80), ("q3", 80)):
        move_every_way(page, root, name, lambda how: assert_matches_the_library(state(root)),
                       top=top, every_svg=True)
    guarded_page.assert_clean()
    assert guarded_page.outside_requests == []


def test_the_sliders_are_reached_with_tab_in_order_and_moved_with_the_keyboard(guarded_page, site_url):
    page, root = open_explorer(guarded_page, site_url)
    slider(root, "temperature").focus()
    for name in ("q1", "q2", "q3"):
        page.keyboard.press("Tab")
        assert focused_control(page) == name
    page.keyboard.press("End")
    assert state(root)["q"][2] == 4.0
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Home")
    assert state(root)["q"][1] == -4.0
    guarded_page.assert_clean()


def test_the_things_to_try_bullets_work_in_order(guarded_page, site_url):
    page, root = open_explorer(guarded_page, site_url)
    bullets = bullet_texts(page, "Things to try")
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
    with guarded_context(browser, PHONE) as guard:
        page, root = open_explorer(guard, site_url)
        assert_fits_a_phone(page, root, ("temperature", "q1", "q2", "q3"))
        smallest = smallest_texts(root)
        assert smallest[0][0] >= 10, f"text drawn smaller than 10 px: {smallest}"
        guard.assert_clean()
