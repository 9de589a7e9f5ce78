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

import json

import pytest

from attention.widgets import SaturationExplorer
from attention.widgets import saturation as sw
from attention.widgets._base import D_KS

PAGE = "chapters/saturation.html"
TAUS = sw.TEMPERATURES
READOUTS = ("score_sd", "max_weight", "jacobian_sq", "grad_q", "mean_max_weight", "median_grad_q",
            "mean_grad_q", "p90_grad_q")


@pytest.fixture(scope="module")
def widget():
    return SaturationExplorer()


def open_explorer(guarded_page, site_url):
    guarded_page.goto(site_url + PAGE)
    page = guarded_page.page
    page.wait_for_function("document.documentElement.dataset.attnWidgets === 'ready'", timeout=15000)
    root = page.locator(".attn-saturation").first
    assert root.count() == 1
    root.scroll_into_view_if_needed()
    return page, root


def control(root, name):
    return root.locator(f'input[data-control="{name}"]')


def state(root) -> dict:
    """The controls' settings (in the grid's terms) and every readout's unrounded value."""
    raw = root.evaluate("""r => ({
        controls: Object.fromEntries([...r.querySelectorAll('[data-control]')].map(
            i => [i.dataset.control, i.type === 'checkbox' ? i.checked : Number(i.value)])),
        readouts: Object.fromEntries([...r.querySelectorAll('[data-readout]')].map(
            d => [d.dataset.readout, d.dataset.value]))})""")
    c = raw["controls"]
    return {"d_k": D_KS[c["d_k"]], "tau": TAUS[c["temperature"]], "scaled": c["scaled"],
            "T_k": sw.T_KS[c["T_k"]], **{k: json.loads(v) for k, v in raw["readouts"].items()}}


def drawing(root) -> str:
    return root.evaluate("r => r.querySelector('svg').innerHTML")


def bars(root) -> str:
    return root.evaluate("r => r.querySelector('svg path.attn-bar').getAttribute('d')")


def assert_matches_python(widget, s: dict):
    want = widget.readout(s["d_k"], s["tau"], s["scaled"], s["T_k"])
    for name in READOUTS:
        assert s[name] == want[name], f"{name}: shows {s[name]}, Python computed {want[name]}"


def press(page, root, name, key, times=1):
    control(root, name).focus()
    for _ in range(times):
        page.keyboard.press(key)


def test_every_control_redraws_and_shows_pythons_values(guarded_page, site_url, widget):
    page, root = open_explorer(guarded_page, site_url)
    s = state(root)
    assert (s["d_k"], s["tau"], s["scaled"], s["T_k"]) == (64, 1.0, True, 32)
    assert_matches_python(widget, s)
    for name, top in (("d_k", len(D_KS) - 1), ("temperature", len(TAUS) - 1), ("T_k", len(sw.T_KS) - 1)):
        sl = control(root, name)
        output = root.locator(f'output[data-output="{name}"]')
        for how in ("fill", "keys", "drag"):
            i, svg = int(sl.input_value()), drawing(root)
            if how == "fill":
                sl.fill(str(0 if i > top // 2 else top))
            elif how == "keys":
                sl.focus()
                page.keyboard.press("ArrowLeft" if i > top // 2 else "ArrowRight")
            else:
                box = sl.bounding_box()
                x_of = lambda k: box["x"] + 8 + (box["width"] - 16) * k / top  # noqa: E731
                y = box["y"] + box["height"] / 2
                target = 0 if i > top // 2 else top
                page.mouse.move(x_of(i), y)
                page.mouse.down()
                page.mouse.move(x_of(target), y, steps=8)
                page.mouse.up()
            assert int(sl.input_value()) != i, f"{name}: {how} did not move the control"
            assert drawing(root) != svg, f"{name}: {how} did not redraw"
            assert sl.get_attribute("aria-valuetext") == output.inner_text()
            assert_matches_python(widget, state(root))
    switch = control(root, "scaled")
    for how in ("check", "space", "click"):
        before, svg = state(root)["scaled"], drawing(root)
        if how == "check":
            switch.set_checked(not before)
        elif how == "space":
            switch.focus()
            page.keyboard.press("Space")
        else:
            switch.click()
        assert state(root)["scaled"] != before and drawing(root) != svg, how
        assert_matches_python(widget, state(root))
    guarded_page.assert_clean()
    assert guarded_page.outside_requests == []


def test_the_controls_are_reached_with_tab_and_moved_with_the_keyboard(guarded_page, site_url):
    page, root = open_explorer(guarded_page, site_url)
    control(root, "d_k").focus()
    for name in ("temperature", "T_k", "scaled"):
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.dataset.control") == name
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


def bullet_texts(page) -> list[str]:
    return page.evaluate("""() => {
        const p = [...document.querySelectorAll('p')].find(p => p.textContent.includes('Some things to try'));
        return [...p.nextElementSibling.querySelectorAll(':scope > li')].map(li => li.innerText);
    }""")


def mark_x(root, i) -> float:
    return float(root.locator("circle.attn-mark").nth(i).get_attribute("cx"))


def test_the_things_to_try_bullets_work_in_order(guarded_page, site_url, widget):
    page, root = open_explorer(guarded_page, site_url)
    bullets = bullet_texts(page)
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
    from tests import harness

    context = browser.new_context(viewport={"width": 390, "height": 844})
    guard = harness.GuardedPage.open(context)
    page, root = open_explorer(guard, site_url)
    page.wait_for_timeout(300)  # the layout observer runs on the next frame
    assert root.evaluate("r => r.dataset.layout") == "narrow"
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 0, f"the page scrolls sideways by {overflow} px"
    box = root.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    smallest = root.evaluate("""r => {
        const sizes = [];
        for (const t of r.querySelectorAll('svg text')) {
            if (!t.textContent.trim()) continue;
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
    # every drawn text stays inside the drawing
    outside = root.evaluate("""r => { const s = r.querySelector('svg').getBoundingClientRect();
        return [...r.querySelectorAll('svg text')].filter(t => { const b = t.getBoundingClientRect();
            return b.width > 0 && (b.left < s.left - 1 || b.right > s.right + 1); }).map(t => t.textContent); }""")
    assert not outside, outside
    for name in ("d_k", "temperature", "T_k"):
        b = control(root, name).bounding_box()
        assert b["width"] >= 60 and b["x"] + b["width"] <= 390
    # and the controls still work there
    press(page, root, "T_k", "End")
    assert state(root)["T_k"] == 128
    guard.assert_clean()
    context.close()


def test_on_a_desktop_the_wide_layout_keeps_its_text_at_10_px_or_more(guarded_page, site_url):
    page, root = open_explorer(guarded_page, site_url)
    assert root.evaluate("r => r.dataset.layout") == "wide"
    smallest = root.evaluate("""r => Math.min(...[...r.querySelectorAll('svg text')]
        .filter(t => t.textContent.trim())
        .map(t => parseFloat(getComputedStyle(t).fontSize) * t.ownerSVGElement.getScreenCTM().a))""")
    assert smallest >= 10
    guarded_page.assert_clean()
