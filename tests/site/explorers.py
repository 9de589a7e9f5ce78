"""The explorers' browser helpers, one set for every test that opens a widget in Chromium
(tests/site/test_widget_*.py, test_widgets_browser.py, test_widget_loader.py).

An explorer is the element ``.attn-KIND`` (KIND: temperature, width, saturation) on its page;
its controls are ``input[data-control=NAME]``, each slider's shown value is
``output[data-output=NAME]`` and its readouts are ``[data-readout=NAME]`` whose
``data-value`` holds the unrounded value as JSON.
"""

from __future__ import annotations

import contextlib
import json
import os

from tests import harness

# The page each explorer lives on.
PAGES = {
    "temperature": "chapters/soft-retrieval.html",
    "width": "chapters/variance.html",
    "saturation": "chapters/saturation.html",
}
PHONE = (390, 844)
DESKTOP = (1280, 900)
# The three ways a test moves a slider: Playwright's fill, an arrow key, a real mouse drag.
HOWS = ("fill", "keys", "drag")
THUMB = 16  # Chromium's range thumb is about 16 px wide


def page_of(kind: str) -> str:
    """The explorer's page; ``WIDGET_PAGE=chapters/x.html`` points every explorer at one
    other page (a scratch page while developing)."""
    return os.environ.get("WIDGET_PAGE") or PAGES[kind]


def wait_until_ready(page, timeout: float = 15000):
    """Wait until the widget loader has rendered (or given up on) every widget of the page."""
    page.wait_for_function("document.documentElement.dataset.attnWidgets === 'ready'", timeout=timeout)


def open_explorer(guarded_page, site_url, kind: str, path: str | None = None):
    """Open the explorer's page (``path``, by default :data:`PAGES`), wait for the widgets and
    scroll the explorer into view: ``(page, root)``."""
    path = path or PAGES[kind]
    guarded_page.goto(site_url + path)
    page = guarded_page.page
    wait_until_ready(page)
    root = page.locator(f".attn-{kind}").first
    assert root.count() == 1, f"no {kind} widget on {path}"
    root.scroll_into_view_if_needed()
    return page, root


@contextlib.contextmanager
def guarded_context(browser, viewport=DESKTOP, **options):
    """A fresh browser context of ``viewport`` (width, height) and its guarded page; the
    context is closed afterwards, whether the test passed or not."""
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, **options)
    try:
        yield harness.GuardedPage.open(context)
    finally:
        context.close()


def wait_for_layout(page, kind: str, layout: str):
    """Wait until the explorer has taken the ``wide`` or ``narrow`` layout."""
    page.wait_for_function(f"document.querySelector('.attn-{kind}').dataset.layout === '{layout}'")


def control(root, name: str):
    return root.locator(f'input[data-control="{name}"]')


def controls(root) -> dict:
    """Slider indices and switch states as the DOM shows them."""
    return root.evaluate("""r => Object.fromEntries([...r.querySelectorAll('[data-control]')].map(
        i => [i.dataset.control, i.type === 'checkbox' ? i.checked : Number(i.value)]))""")


def dom_state(root) -> dict:
    """``controls`` (as :func:`controls`), ``readouts`` (each readout's unrounded value, parsed)
    and ``texts`` (each readout's shown text), read in one evaluation."""
    raw = root.evaluate("""r => ({
        controls: Object.fromEntries([...r.querySelectorAll('[data-control]')].map(
            i => [i.dataset.control, i.type === 'checkbox' ? i.checked : Number(i.value)])),
        readouts: Object.fromEntries([...r.querySelectorAll('[data-readout]')].map(
            d => [d.dataset.readout, d.dataset.value])),
        texts: Object.fromEntries([...r.querySelectorAll('[data-readout]')].map(
            d => [d.dataset.readout, d.textContent]))})""")
    raw["readouts"] = {k: json.loads(v) for k, v in raw["readouts"].items()}
    return raw


def readouts(root) -> dict:
    return dom_state(root)["readouts"]


def drawing(root, every_svg: bool = False) -> str:
    """The explorer's first drawing as markup (or all its drawings, joined): a test compares it
    before and after a move to see that the explorer redrew."""
    if every_svg:
        return root.evaluate("r => [...r.querySelectorAll('svg')].map(s => s.innerHTML).join('')")
    return root.evaluate("r => r.querySelector('svg').innerHTML")


def press(page, root, name: str, key: str, times: int = 1):
    """Focus the control ``name`` and press ``key`` ``times`` times."""
    control(root, name).focus()
    for _ in range(times):
        page.keyboard.press(key)


def focused_control(page) -> str | None:
    return page.evaluate("document.activeElement.dataset.control")


def drag(page, slider, to_index: int):
    """A real mouse drag of the slider's thumb from its current position to ``to_index``."""
    box = slider.bounding_box()
    lo, hi = (int(slider.get_attribute(a) or 0) for a in ("min", "max"))
    now = int(slider.input_value())

    def x_of(i):
        return box["x"] + THUMB / 2 + (box["width"] - THUMB) * (i - lo) / (hi - lo)

    y = box["y"] + box["height"] / 2
    page.mouse.move(x_of(now), y)
    page.mouse.down()
    page.mouse.move(x_of(to_index), y, steps=8)
    page.mouse.up()


def move_every_way(page, root, name: str, after_each, *, top: int | None = None,
                   drag_to_end: bool = False, every_svg: bool = False, label: str = ""):
    """Move the slider ``name`` three ways (:data:`HOWS`), each from where the last left it:
    ``fill`` to the far end, one arrow key toward the far end, and a mouse drag toward it (to
    the far end with ``drag_to_end``, else to a quarter of the way from it). After each move:
    the slider moved (the arrow key exactly one step), the explorer redrew, the slider's
    ``aria-valuetext`` is its shown, non-empty value; then ``after_each(how)`` runs (the
    caller's checks of the readouts). ``top``: the slider's last index, checked against its
    ``max``."""
    slider = control(root, name)
    output = root.locator(f'output[data-output="{name}"]')
    last = int(slider.get_attribute("max"))
    assert int(slider.get_attribute("min") or 0) == 0, f"{name}: the slider does not start at 0"
    if top is not None:
        assert last == top, f"{name}: the slider ends at {last}, not {top}"
    label = label or name
    for how in HOWS:
        i, svg = int(slider.input_value()), drawing(root, every_svg)
        far_left = i > last // 2
        if how == "fill":
            slider.fill(str(0 if far_left else last))
        elif how == "keys":
            slider.focus()
            page.keyboard.press("ArrowLeft" if far_left else "ArrowRight")
        elif drag_to_end:
            drag(page, slider, 0 if far_left else last)
        else:
            drag(page, slider, last // 4 if far_left else (3 * last) // 4)
        now = int(slider.input_value())
        assert now != i, f"{label}: {how} did not move the slider"
        if how == "keys":
            assert now == i + (-1 if far_left else 1), f"{label}: an arrow key moved {now - i} steps"
        assert drawing(root, every_svg) != svg, f"{label}: {how} did not redraw"
        shown = output.inner_text()
        assert shown.strip() and slider.get_attribute("aria-valuetext") == shown, (label, how, shown)
        after_each(how)


def toggle_every_way(page, root, name: str, after_each, *, every_svg: bool = False, label: str = ""):
    """Toggle the switch ``name`` three ways: ``check``, the space bar, a mouse click at its
    centre. After each: the switch changed and the explorer redrew; then ``after_each(how)``."""
    switch = control(root, name)
    label = label or name
    for how in ("check", "space", "click"):
        before, svg = switch.is_checked(), drawing(root, every_svg)
        if how == "check":
            switch.set_checked(not before)
        elif how == "space":
            switch.focus()
            page.keyboard.press("Space")
        else:
            box = switch.bounding_box()
            page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        assert switch.is_checked() != before, f"{label}: {how} did not toggle"
        assert drawing(root, every_svg) != svg, f"{label}: {how} did not redraw"
        after_each(how)


def bullet_texts(page, lead: str, anywhere: bool = False) -> list[str]:
    """The items of the list that follows the paragraph starting with ``lead`` (containing it,
    with ``anywhere``): the page's "things to try" under an explorer."""
    return page.evaluate("""([lead, anywhere]) => {
        const p = [...document.querySelectorAll('p')].find(
            p => anywhere ? p.textContent.includes(lead) : p.textContent.startsWith(lead));
        return [...p.nextElementSibling.querySelectorAll(':scope > li')].map(li => li.innerText);
    }""", [lead, anywhere])


def sideways_overflow(page) -> float:
    """How far the page scrolls sideways, in px (0 or less: it does not)."""
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def smallest_texts(root, skip_blank_svg_text: bool = False) -> list:
    """The three smallest texts of the explorer as drawn, ``[size in px, text]``: SVG text at
    its font size times the drawing's scale on screen, HTML text at its computed size (blank
    HTML text left out; blank SVG text too with ``skip_blank_svg_text``)."""
    return root.evaluate("""(r, skipBlank) => {
        const sizes = [];
        for (const t of r.querySelectorAll('svg text')) {
            if (skipBlank && !t.textContent.trim()) continue;
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
    }""", skip_blank_svg_text)


def assert_fits_a_phone(page, root, sliders, width: int = PHONE[0]):
    """The page does not scroll sideways, the explorer lies within the screen's ``width`` and
    each of ``sliders`` is at least 60 px wide and ends within the screen."""
    overflow = sideways_overflow(page)
    assert overflow <= 0, f"the page scrolls sideways by {overflow} px"
    box = root.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width
    for name in sliders:
        b = control(root, name).bounding_box()
        assert b["width"] >= 60 and b["x"] + b["width"] <= width, (name, b)
