"""The width explorer (page "The variance argument") live in the built book, in headless
Chromium, offline (its Python side, which checks that every grid point's measurements agree
with the predictions within their standard errors, as the readouts claim:
tests/lib/test_widgets_grids.py).

The tests move every control (fill, keys, mouse), walk the page's "things to try" bullets in
order and check what each says happens, check that no two tick labels overlap at any rho in
either layout, and load the page on a 390 px phone screen. Every page must stay clean: no console error, no request
outside the site.

Needs a built book (``BOOK_HTML``).
"""

from __future__ import annotations

import pytest

from attention.widgets import WidthExplorer
from attention.widgets import width as ww
from tests.site.explorers import (DESKTOP, PHONE, assert_fits_a_phone, bullet_texts, control,
                                  dom_state, focused_control, guarded_context, move_every_way,
                                  smallest_texts, wait_for_layout)
from tests.site.explorers import open_explorer as _open

D_KS = list(ww.D_KS)
RHOS = list(ww.RHOS)
STATS = ("raw_mean", "raw_var", "scaled_mean", "scaled_var", "kurtosis")


@pytest.fixture(scope="module")
def widget():
    return WidthExplorer()


def open_explorer(guarded_page, site_url):
    return _open(guarded_page, site_url, "width")


slider = control


def state(root) -> dict:
    raw = dom_state(root)
    c = raw["controls"]
    return {"d_k_index": c["d_k"], "rho_index": c["rho"], "d_k": D_KS[c["d_k"]], "rho": RHOS[c["rho"]],
            **raw["readouts"], "texts": raw["texts"]}


def assert_shows_python(s: dict, widget):
    p = widget.readout(s["d_k"], s["rho"])
    assert s["rho"] == RHOS[s["rho_index"]]
    for name in STATS:
        assert s[name] == [p[name], p[f"{name}_se"], p[f"pred_{name}"]], name
        assert " ± " in s["texts"][name] and "(" in s["texts"][name]
    assert s["row_key1"] == [p["row_unscaled"][0], p["row_scaled"][0]]  # as the rows sit: unscaled, scaled


def test_every_control_redraws_and_shows_pythons_numbers(guarded_page, site_url, widget):
    page, root = open_explorer(guarded_page, site_url)
    assert_shows_python(state(root), widget)
    for name, top in (("d_k", len(D_KS) - 1), ("rho", len(RHOS) - 1)):
        move_every_way(page, root, name, lambda how: assert_shows_python(state(root), widget), top=top)
    guarded_page.assert_clean()
    assert guarded_page.outside_requests == []


def test_the_drawn_histograms_and_normal_curve_are_pythons_counts(guarded_page, site_url, widget):
    """The module unpacks the stored histograms and computes the normal curve itself (from the
    predicted mean and variance): the drawn bars and curve are Python's counts, to 0.2 px."""
    page, root = open_explorer(guarded_page, site_url)
    wait_for_layout(page, "width", "wide")
    for d_k, rho in ((1, 0.0), (64, 0.5), (1024, -1.0), (4, 1.0)):
        slider(root, "d_k").fill(str(D_KS.index(d_k)))
        slider(root, "rho").fill(str(RHOS.index(rho)))
        drawn = root.evaluate("""r => {
            const svg = r.querySelector('svg');
            const base = [...svg.querySelectorAll(':scope > line.attn-axis-line')].map(l => Number(l.getAttribute('y1')));
            const bars = [...svg.querySelectorAll(':scope > path.attn-bar')].slice(0, 2).map(
                p => [...p.getAttribute('d').matchAll(/M([\\d.]+),[\\d.]+V([\\d.]+)/g)].map(m => [Number(m[1]), Number(m[2])]));
            const curve = [...svg.querySelector('path.attn-normal').getAttribute('d').matchAll(/,([\\d.]+)/g)].map(m => Number(m[1]));
            return {base, bars, curve};
        }""")
        p = widget.readout(d_k, rho)
        # wide layout: both histograms 140 px tall over a base line at y = 190, 40 bins of 290/40 px
        assert drawn["base"][:2] == [190, 190]
        for k, (name, x0, tallest) in enumerate((
                ("raw_hist", 40, max(1, *p["raw_hist"])),
                ("scaled_hist", 370, max(1, *p["scaled_hist"], *p["scaled_normal"])))):
            want = [(round(x0 + j * 290 / 40, 2), 190 - 140 * c / tallest)
                    for j, c in enumerate(p[name]) if 140 * c / tallest >= 0.05]
            got = drawn["bars"][k]
            assert [x for x, _ in got] == pytest.approx([x for x, _ in want], abs=0.01), (d_k, rho, name)
            assert [y for _, y in got] == pytest.approx([y for _, y in want], abs=0.2), (d_k, rho, name)
        tallest = max(1, *p["scaled_hist"], *p["scaled_normal"])
        assert drawn["curve"] == pytest.approx([190 - 140 * c / tallest for c in p["scaled_normal"]], abs=0.2)
    guarded_page.assert_clean()


def test_the_sliders_are_reached_with_tab_and_moved_with_home_end_and_arrows(guarded_page, site_url, widget):
    page, root = open_explorer(guarded_page, site_url)
    slider(root, "d_k").focus()
    page.keyboard.press("End")
    assert state(root)["d_k"] == 1024
    page.keyboard.press("Tab")
    assert focused_control(page) == "rho"
    page.keyboard.press("Home")
    assert state(root)["rho"] == -1.0
    page.keyboard.press("ArrowRight")
    assert state(root)["rho"] == -0.9
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("ArrowLeft")
    s = state(root)
    assert s["d_k"] == 512 and s["rho"] == -0.9
    assert_shows_python(s, widget)
    guarded_page.assert_clean()


def test_the_things_to_try_bullets_work_in_order(guarded_page, site_url, widget):
    page, root = open_explorer(guarded_page, site_url)
    bullets = bullet_texts(page, "Things to try")
    assert [b.split(".")[0] for b in bullets] == ["Widen the head", "Narrow it to one", "Correlate the key",
                                                  "Widen the correlated head", "Reverse the correlation"]
    s = state(root)
    assert (s["d_k"], s["rho"]) == (64, 0.0)
    d_k, rho = slider(root, "d_k"), slider(root, "rho")

    # 1. Widen the head: d_k up to 1024 -> the raw variance follows d_k, the scaled stays near 1.
    d_k.focus()
    walk = []
    while state(root)["d_k"] < 1024:
        page.keyboard.press("ArrowRight")
        walk.append(state(root))
    s = walk[-1]
    assert [w["raw_var"][2] for w in walk] == [128.0, 256.0, 512.0, 1024.0]
    for w in walk:
        assert abs(w["raw_var"][0] - w["d_k"]) < 4 * w["raw_var"][1]
        assert abs(w["scaled_var"][0] - 1) < 4 * w["scaled_var"][1]
    assert f"{s['raw_var'][0]:.0f}" in bullets[0] and f"{s['scaled_var'][0]:.3f}" in bullets[0]

    # 2. Narrow it to one: d_k down to 1 -> scaled variance still near 1, excess kurtosis about
    #    6 (within its standard error), the histogram above the normal curve at the centre.
    page.keyboard.press("Home")
    s = state(root)
    assert s["d_k"] == 1 and s["rho"] == 0.0
    assert abs(s["scaled_var"][0] - 1) < 3 * s["scaled_var"][1]
    k, se, pred = s["kurtosis"]
    assert pred == 6.0 and abs(k - 6) < 3 * se
    assert f"{k:.1f}" in bullets[1] and f"{se:.1f}" in bullets[1]
    centre_bars = root.evaluate("""r => {
        const paths = r.querySelectorAll('svg path.attn-bar.attn-scaled');
        const curve = r.querySelector('svg path.attn-normal');
        const topOf = d => Math.min(...[...d.matchAll(/V([\\d.]+)/g)].map(m => Number(m[1])));
        const curveTop = Math.min(...[...curve.getAttribute('d').matchAll(/,([\\d.]+)/g)].map(m => Number(m[1])));
        return [topOf(paths[0].getAttribute('d')), curveTop];
    }""")
    assert centre_bars[0] < centre_bars[1] - 20  # the tallest bar rises well above the curve

    # 3. Correlate the key: rho = 0.5 -> predicted 1.25, measured within two standard errors.
    rho.focus()
    for _ in range(5):
        page.keyboard.press("ArrowRight")
    s = state(root)
    assert s["d_k"] == 1 and s["rho"] == 0.5
    m, se, pred = s["scaled_var"]
    assert pred == 1.25 and abs(m - pred) < 2 * se
    assert f"{m:.3f}" in bullets[2] and f"{se:.3f}" in bullets[2] and "1.25" in bullets[2]

    # 4. Widen the correlated head: d_k back to 1024 -> variance near 1.25, mean 16, key 1 wins.
    d_k.focus()
    page.keyboard.press("End")
    s = state(root)
    assert s["d_k"] == 1024 and s["rho"] == 0.5
    assert abs(s["scaled_var"][0] - 1.25) < 3 * s["scaled_var"][1]
    assert s["scaled_mean"][2] == 16.0 and abs(s["scaled_mean"][0] - 16) < 3 * s["scaled_mean"][1]
    assert s["row_key1"][1] > 0.99 and f"{s['row_key1'][1]:.3f}" in bullets[3]  # the scaled row

    # 5. Reverse the correlation: rho = -0.5 -> the mean mirrors, key 1 gets almost nothing.
    rho.fill(str(RHOS.index(-0.5)))
    s = state(root)
    assert s["d_k"] == 1024 and s["rho"] == -0.5
    assert s["scaled_mean"][2] == -16.0 and abs(s["scaled_mean"][0] + 16) < 3 * s["scaled_mean"][1]
    assert s["row_key1"][1] < 0.01 and f"{s['row_key1'][1]:.3f}" in bullets[4]
    assert "-16" in bullets[4].replace("−", "-")
    guarded_page.assert_clean()


def tick_overlaps(root) -> list:
    """Pairs of tick labels of one axis whose boxes overlap (or come within 2 px), and labels
    that stick out of the drawing."""
    return root.evaluate("""r => {
        const svg = r.querySelector('svg').getBoundingClientRect();
        const bad = [];
        for (const g of r.querySelectorAll('svg g.attn-ticks')) {
            const boxes = [...g.querySelectorAll('text')].map(t => [t.textContent, t.getBoundingClientRect()]);
            if (boxes.length < 2) bad.push(['fewer than two ticks', boxes.length]);
            for (const [text, b] of boxes) {
                if (b.left < svg.left - 0.5 || b.right > svg.right + 0.5) bad.push(['outside', text]);
            }
            for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
                const [ta, a] = boxes[i], [tb, b] = boxes[j];
                if (a.left < b.right + 2 && b.left < a.right + 2 && a.top < b.bottom && b.top < a.bottom) {
                    bad.push([ta, tb]);
                }
            }
        }
        return bad;
    }""")


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_no_two_tick_labels_overlap_at_any_rho(browser, site_url, viewport):
    with guarded_context(browser, viewport) as guard:
        page, root = open_explorer(guard, site_url)
        wait_for_layout(page, "width", "narrow" if viewport[0] < 600 else "wide")
        for d_k_index in (0, len(D_KS) - 1):
            slider(root, "d_k").fill(str(d_k_index))
            for i in range(len(RHOS)):
                slider(root, "rho").fill(str(i))
                bad = tick_overlaps(root)
                assert not bad, (RHOS[i], bad)
        # the raw axis at rho > 0 used to draw "-4.0" and "0.0" on top of each other
        slider(root, "rho").fill(str(RHOS.index(0.5)))
        labels = root.evaluate(
            "r => [...r.querySelectorAll('svg g.attn-ticks')[0].querySelectorAll('text')].map(t => t.textContent)")
        assert "0" in labels and "-4.0" not in labels
        guard.assert_clean()


def test_on_a_390_px_phone_the_page_does_not_scroll_sideways_and_no_text_is_under_10_px(browser, site_url):
    with guarded_context(browser, PHONE) as guard:
        page, root = open_explorer(guard, site_url)
        wait_for_layout(page, "width", "narrow")
        assert_fits_a_phone(page, root, ("d_k", "rho"))
        for d_k_index, rho_index in ((6, 10), (0, 0), (10, 15)):
            slider(root, "d_k").fill(str(d_k_index))
            slider(root, "rho").fill(str(rho_index))
            smallest = smallest_texts(root)
            assert smallest[0][0] >= 10, f"text drawn smaller than 10 px: {smallest}"
            inside = root.evaluate("""r => [...r.querySelectorAll('*')].filter(e => {
                const b = e.getBoundingClientRect();
                return b.width > 0 && (b.left < -0.5 || b.right > 390.5);
            }).map(e => e.tagName + '.' + e.className.baseVal + e.className)""")
            assert not inside, f"drawn outside the screen: {inside[:5]}"
        for name in ("d_k", "rho"):  # and still after the moves
            b = slider(root, name).bounding_box()
            assert b["width"] >= 60 and b["x"] + b["width"] <= 390
        guard.assert_clean()


def test_the_layout_follows_the_width_when_the_window_is_resized(browser, site_url):
    with guarded_context(browser, DESKTOP) as guard:
        page, root = open_explorer(guard, site_url)
        wait_for_layout(page, "width", "wide")
        before = state(root)
        page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
        wait_for_layout(page, "width", "narrow")
        after = state(root)
        assert {k: v for k, v in after.items() if k != "texts"} == {k: v for k, v in before.items() if k != "texts"}
        page.set_viewport_size({"width": DESKTOP[0], "height": DESKTOP[1]})
        wait_for_layout(page, "width", "wide")
        guard.assert_clean()


# The drawing's panel titles: [text, centre x, top y] (SVG user units).
PANEL_TITLES = """r => [...r.querySelectorAll('svg text')].filter(t => /scores|attention row/.test(t.textContent))
    .map(t => { const b = t.getBBox(); return [t.textContent, b.x + b.width / 2, b.y]; })"""


@pytest.mark.parametrize("width, layout", [(1280, "wide"), (390, "narrow")])
def test_the_attention_rows_sit_in_the_histograms_order_unscaled_then_scaled(browser, site_url, width, layout):
    # Each column (wide) or each pair of panels (narrow) goes unscaled (orange) then scaled
    # (blue), in the histograms' row as in the attention rows' (they used to swap).
    with guarded_context(browser, (width, 900)) as guard:
        page, root = open_explorer(guard, site_url)
        wait_for_layout(page, "width", layout)
        titles = {text: (x, y) for text, x, y in root.evaluate(PANEL_TITLES)}
        raw, scaled = titles["raw scores q·k"], titles["scaled scores q·k / √dₖ"]
        unscaled_row, scaled_row = titles["attention row, unscaled"], titles["attention row, scaled"]
        if layout == "wide":
            assert abs(raw[0] - unscaled_row[0]) < 25 and abs(scaled[0] - scaled_row[0]) < 25, titles
            assert raw[0] < scaled[0] and unscaled_row[0] < scaled_row[0], titles
        else:
            assert raw[1] < scaled[1] < unscaled_row[1] < scaled_row[1], titles
        # The readout lists key 1's weight in the same order.
        label = root.locator('[data-readout="row_key1"]').evaluate("d => d.parentElement.innerText")
        assert "unscaled, scaled" in label, label
        guard.assert_clean()


def test_the_width_is_written_with_a_subscript_k_never_d_underscore_k(guarded_page, site_url):
    page, root = open_explorer(guarded_page, site_url)
    shown = root.evaluate("""r => [r.innerText, ...[...r.querySelectorAll('svg text')].map(t => t.textContent),
        ...[...r.querySelectorAll('[aria-label], [aria-valuetext]')].flatMap(
            e => [e.getAttribute('aria-label') || '', e.getAttribute('aria-valuetext') || ''])].join(' | ')""")
    assert "d_k" not in shown, shown[:400]
    assert "dₖ = 64" in shown and "√dₖ" in shown
    guarded_page.assert_clean()
