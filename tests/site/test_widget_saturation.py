"""The saturation explorer (page "Saturation and the softmax Jacobian") live in the built book,
in headless Chromium, offline.

Every number the widget shows is looked up in the grid Python computed, so each readout is
compared with ``SaturationExplorer.readout`` at the setting the controls show. The tests move
every control (fill, keys, mouse), reach them with Tab, walk the page's "things to try"
bullets in order and check what each says happens, and load the page on a 390 px phone
screen. Every page must stay clean: no console error, no request outside the site.

Needs a built book (``BOOK_HTML``).
"""

from __future__ import annotations

import pytest

from attention.widgets import SaturationExplorer
from attention.widgets import saturation as sw
from attention.widgets._base import D_KS
from tests.site.explorers import (PHONE, assert_fits_a_phone, bullet_texts, control, dom_state,
                                  drawing, focused_control, guarded_context, move_every_way, press,
                                  smallest_texts, toggle_every_way)
from tests.site.explorers import open_explorer as _open

TAUS = sw.TEMPERATURES
READOUTS = ("score_sd", "max_weight", "jacobian_sq", "grad_q", "mean_max_weight", "median_grad_q",
            "mean_grad_q", "p90_grad_q")


@pytest.fixture(scope="module")
def widget():
    return SaturationExplorer()


def open_explorer(guarded_page, site_url):
    return _open(guarded_page, site_url, "saturation")


def state(root) -> dict:
    """The controls' settings (in the grid's terms) and every readout's unrounded value."""
    raw = dom_state(root)
    c = raw["controls"]
    return {"d_k": D_KS[c["d_k"]], "tau": TAUS[c["temperature"]], "scaled": c["scaled"],
            "T_k": sw.T_KS[c["T_k"]], **raw["readouts"]}


def bars(root) -> str:
    return root.evaluate("r => r.querySelector('svg path.attn-bar').getAttribute('d')")


def assert_matches_python(widget, s: dict):
    want = widget.readout(s["d_k"], s["tau"], s["scaled"], s["T_k"])
    for name in READOUTS:
        assert s[name] == want[name], f"{name}: shows {s[name]}, Python computed {want[name]}"


def test_every_control_redraws_and_shows_pythons_values(guarded_page, site_url, widget):
    page, root = open_explorer(guarded_page, site_url)
    s = state(root)
    assert (s["d_k"], s["tau"], s["scaled"], s["T_k"]) == (64, 1.0, True, 32)
    assert_matches_python(widget, s)
    for name, top in (("d_k", len(D_KS) - 1), ("temperature", len(TAUS) - 1), ("T_k", len(sw.T_KS) - 1)):
        move_every_way(page, root, name, lambda how: assert_matches_python(widget, state(root)),
                       top=top, drag_to_end=True)
    toggle_every_way(page, root, "scaled", lambda how: assert_matches_python(widget, state(root)))
    guarded_page.assert_clean()
    assert guarded_page.outside_requests == []


def test_the_controls_are_reached_with_tab_and_moved_with_the_keyboard(guarded_page, site_url):
    page, root = open_explorer(guarded_page, site_url)
    control(root, "d_k").focus()
    for name in ("temperature", "T_k", "scaled"):
        page.keyboard.press("Tab")
        assert focused_control(page) == name
    page.keyboard.press("Space")
    assert state(root)["scaled"] is False
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("End")
    assert state(root)["T_k"] == 128
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("End")
    assert state(root)["tau"] == 1024.0
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Home")
    assert state(root)["d_k"] == 1
    guarded_page.assert_clean()


def mark_x(root, i) -> float:
    return float(root.locator("circle.attn-mark").nth(i).get_attribute("cx"))


def test_the_things_to_try_bullets_work_in_order(guarded_page, site_url, widget):
    page, root = open_explorer(guarded_page, site_url)
    bullets = bullet_texts(page, "Some things to try", anywhere=True)
    assert len(bullets) == 5
    assert bullets[0].startswith("Switch to unscaled and drag")
    assert bullets[1].startswith("Switch back to scaled")
    assert "to 32, which is" in bullets[2] and bullets[3].startswith("Push")
    assert "to 1024" in bullets[3] and bullets[4].startswith("Bring")

    # 1. unscaled, d_k from 1 to 1024: bars collapse onto one key, mean largest weight toward
    #    1; the median gradient rises then collapses while the mean grows; p90 far above median.
    control(root, "scaled").click()
    press(page, root, "d_k", "Home")
    walk, marks = [state(root)], [mark_x(root, 1)]
    for _ in range(len(D_KS) - 1):
        page.keyboard.press("ArrowRight")
        walk.append(state(root))
        marks.append(mark_x(root, 1))
    assert [w["d_k"] for w in walk] == list(D_KS) and not walk[-1]["scaled"]
    assert marks == sorted(marks) and len(set(marks)) == len(marks)  # the point slides along
    med = [w["median_grad_q"] for w in walk]
    peak = med.index(max(med))
    assert 0 < peak < len(med) - 1 and med[-1] < med[peak] / 100
    assert walk[-1]["mean_grad_q"] > walk[0]["mean_grad_q"]
    assert walk[-1]["p90_grad_q"] > 100 * walk[-1]["median_grad_q"]
    assert walk[-1]["max_weight"] > 0.99 and walk[-1]["mean_max_weight"] > 0.9
    means = [w["mean_max_weight"] for w in walk]
    assert means == sorted(means)

    # 2. scaled, d_k back down to 1: bars change far less, both curves flat.
    control(root, "scaled").click()
    assert state(root)["scaled"] and state(root)["d_k"] == 1024
    scaled_1024 = state(root), bars(root)
    back = [state(root)]
    control(root, "d_k").focus()
    for _ in range(len(D_KS) - 1):
        page.keyboard.press("ArrowLeft")
        back.append(state(root))
    assert back[-1]["d_k"] == 1
    spread = lambda ws, k: max(w[k] for w in ws) - min(w[k] for w in ws)  # noqa: E731
    assert spread(back, "max_weight") < spread(walk, "max_weight") / 3
    assert spread(back, "mean_max_weight") < 0.04
    assert max(w["median_grad_q"] for w in back) < 1.35 * min(w["median_grad_q"] for w in back)

    # 3. d_k 1024, unscaled, tau up to 32 = sqrt(1024): exactly the scaled head at tau 1.
    press(page, root, "d_k", "End")
    control(root, "scaled").click()
    press(page, root, "temperature", "ArrowRight", TAUS.index(32.0) - TAUS.index(1.0))
    s = state(root)
    assert (s["d_k"], s["tau"], s["scaled"]) == (1024, 32.0, False)
    for name in READOUTS:
        assert s[name] == scaled_1024[0][name], name
    assert bars(root) == scaled_1024[1]
    warm = s

    # 4. tau far up, to 1024: flat bars, tr(J^2) at the uniform value (the dashed mark), the
    #    gradient far below its value at tau 32.
    press(page, root, "temperature", "End")
    s = state(root)
    assert s["tau"] == 1024.0
    assert s["max_weight"] < 1.3 / 32 and s["mean_max_weight"] < 1.1 / 32
    assert s["jacobian_sq"] == pytest.approx(31 / 32**2, rel=0.02)
    gauge_end = root.evaluate("""r => { const g = r.querySelectorAll('rect.attn-gauge')[0];
        return Number(g.getAttribute('x')) + Number(g.getAttribute('width')); }""")
    uniform_x = float(root.locator("line.attn-pred").first.get_attribute("x1"))
    assert gauge_end == pytest.approx(uniform_x, abs=2.0)
    assert s["median_grad_q"] < warm["median_grad_q"] / 10 and s["grad_q"] < warm["grad_q"] / 10

    # 5. tau back to 16 (scores of sd 2), T_k 32 -> 8 -> 128: a short row leans on one key,
    #    a long one spreads.
    press(page, root, "temperature", "ArrowLeft", TAUS.index(1024.0) - TAUS.index(16.0))
    s32 = state(root)
    assert s32["tau"] == 16.0 and s32["score_sd"] == 2.0 and s32["T_k"] == 32
    press(page, root, "T_k", "ArrowLeft")
    s8 = state(root)
    assert s8["T_k"] == 8 and "the 8 keys" in drawing(root)
    press(page, root, "T_k", "ArrowRight", 2)
    s128 = state(root)
    assert s128["T_k"] == 128 and "the 128 keys" in drawing(root)
    assert s8["mean_max_weight"] > 0.5 > 0.3 > s128["mean_max_weight"]
    assert s8["mean_max_weight"] > s32["mean_max_weight"] > s128["mean_max_weight"]
    assert s8["max_weight"] > s128["max_weight"]
    assert_matches_python(widget, s128)
    guarded_page.assert_clean()
    assert guarded_page.outside_requests == []


def test_on_a_390_px_phone_the_page_does_not_scroll_sideways_and_no_text_is_under_10_px(browser, site_url):
    with guarded_context(browser, PHONE) as guard:
        page, root = open_explorer(guard, site_url)
        page.wait_for_timeout(300)  # the layout observer runs on the next frame
        assert root.evaluate("r => r.dataset.layout") == "narrow"
        assert_fits_a_phone(page, root, ("d_k", "temperature", "T_k"))
        smallest = smallest_texts(root, skip_blank_svg_text=True)
        assert smallest[0][0] >= 10, f"text drawn smaller than 10 px: {smallest}"
        # every drawn text stays inside the drawing
        outside = root.evaluate("""r => { const s = r.querySelector('svg').getBoundingClientRect();
            return [...r.querySelectorAll('svg text')].filter(t => { const b = t.getBoundingClientRect();
                return b.width > 0 && (b.left < s.left - 1 || b.right > s.right + 1); }).map(t => t.textContent); }""")
        assert not outside, outside
        # and the controls still work there
        press(page, root, "T_k", "End")
        assert state(root)["T_k"] == 128
        guard.assert_clean()


def test_on_a_desktop_the_wide_layout_keeps_its_text_at_10_px_or_more(guarded_page, site_url):
    page, root = open_explorer(guarded_page, site_url)
    assert root.evaluate("r => r.dataset.layout") == "wide"
    smallest = root.evaluate("""r => Math.min(...[...r.querySelectorAll('svg text')]
        .filter(t => t.textContent.trim())
        .map(t => parseFloat(getComputedStyle(t).fontSize) * t.ownerSVGElement.getScreenCTM().a))""")
    assert smallest >= 10
    guarded_page.assert_clean()
