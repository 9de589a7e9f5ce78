"""Every page of the built book is accessible: axe-core finds no serious or critical
violation (light and dark colour modes), every image has alt text, the page can be read and
every control reached with the keyboard alone, and math stays readable by assistive
technology (the MathML KaTeX writes beside its HTML rendering at build time)."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup

from tests import harness

BUILT = (harness.HTML / "index.html").exists()
PAGES = harness.book_pages() if BUILT else ["chapters/index.html"]
# axe-core (npm, pinned in package-lock.json) is a test tool: the tests inject it from
# node_modules into the page; the published site does not carry it.
AXE = harness.ROOT / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING_IMPACTS = {"serious", "critical"}

# Waits until the page's own scripts (widget rendering) and its fonts (KaTeX's) are done.
SETTLE = """async () => {
  await document.fonts.ready;
  await new Promise(r => setTimeout(r, 250));
}"""

RUN_AXE = """async (options) => {
  const {context, ...rest} = options;
  const result = await axe.run(context || document, Object.assign({resultTypes: ['violations']}, rest));
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => n.target.join(' ') + '\\n      ' + (n.failureSummary || '').replace(/\\n/g, ' '))
  }));
}"""
# The theme's colour-mode button switches modes through these attributes.
# Transitions are switched off first: a colour caught mid-animation is not a real contrast.
DARK_MODE = """() => {
  const still = document.createElement('style');
  still.textContent = '*, *::before, *::after { transition: none !important; animation: none !important; }';
  document.head.appendChild(still);
  document.documentElement.dataset.mode = 'dark';
  document.documentElement.dataset.theme = 'dark';
}"""
COLOUR_RULES = ["color-contrast", "link-in-text-block"]
# KaTeX's visual rendering (thousands of spans per page, hidden from assistive technology,
# which reads the MathML beside it) takes axe's contrast rule seconds per page. The pages
# colour no formula, so each piece of math must be set in exactly the colour of the text
# around it, on no background of its own: MATH_COLOURS checks that in milliseconds, and axe
# checks the contrast of the surrounding text.
KATEX_HTML = ".katex-html"
MATH_COLOURS = """() => {
  const bad = [];
  for (const math of document.querySelectorAll('.katex')) {
    const around = getComputedStyle(math.parentElement).color;
    for (const el of math.querySelectorAll('.katex-html, .katex-html *')) {
      const s = getComputedStyle(el);
      if (s.backgroundColor !== 'rgba(0, 0, 0, 0)' ||
          (el.childNodes.length && [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim()) &&
           s.color !== around)) {
        bad.push(`${math.textContent.slice(0, 40)}: ${s.color} on ${s.backgroundColor}, text around in ${around}`);
        break;
      }
    }
  }
  return {count: document.querySelectorAll('.katex').length, bad: bad.slice(0, 5)};
}"""


def open_settled(guarded_page, site_url, page_path):
    guarded_page.goto(site_url + page_path)
    guarded_page.page.evaluate(SETTLE)
    return guarded_page.page


@pytest.mark.parametrize("page_path", PAGES)
def test_axe_finds_no_serious_or_critical_violation_in_light_or_dark_mode(guarded_page, site_url, page_path):
    page = open_settled(guarded_page, site_url, page_path)
    page.add_script_tag(path=str(AXE))
    colours = {"runOnly": COLOUR_RULES, "context": {"exclude": [[KATEX_HTML]]}}
    found = [("light", v) for v in page.evaluate(RUN_AXE, {"rules": {r: {"enabled": False} for r in COLOUR_RULES}})]
    found += [("light", v) for v in page.evaluate(RUN_AXE, colours)]
    math = {"light": page.evaluate(MATH_COLOURS)}
    # Only colours change with the mode: in dark mode run the colour rules again (one load, not two).
    page.evaluate(DARK_MODE)
    page.wait_for_timeout(100)
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != "rgb(255, 255, 255)"
    found += [("dark", v) for v in page.evaluate(RUN_AXE, colours)]
    math["dark"] = page.evaluate(MATH_COLOURS)
    for mode, result in math.items():
        assert not result["bad"], f"{page_path}, {mode} mode: math not in the colour of its text:\n" + "\n".join(result["bad"])
    blocking = [(mode, v) for mode, v in found if v["impact"] in BLOCKING_IMPACTS]
    report = "\n".join(f"{v['impact']} in {mode} mode: {v['id']} ({v['help']})\n    " + "\n    ".join(v["nodes"][:5])
                       for mode, v in blocking)
    assert not blocking, f"axe-core on {page_path}:\n{report}"
    assert guarded_page.outside_requests == []


@pytest.mark.parametrize("page_path", PAGES)
def test_every_image_has_alt_text(built_html, page_path):
    soup = BeautifulSoup((built_html / page_path).read_text(encoding="utf-8"), "html.parser")
    missing = []
    for img in soup.find_all("img"):
        alt = (img.get("alt") or "").strip()
        src = img.get("src", "")
        name = src.rsplit("/", 1)[-1]
        # An alt that is the file name (what Sphinx writes when none is given) describes nothing.
        if not alt or alt == name or alt == name.rsplit(".", 1)[0]:
            missing.append(f"<img src={src!r} alt={img.get('alt')!r}>")
    for svg in soup.select("svg[role=img]"):
        if not (svg.get("aria-label") or svg.find("title")):
            missing.append(f"inline <svg role=img> without a label: {str(svg)[:80]}")
    assert not missing, f"{page_path}: images without alt text:\n  " + "\n  ".join(missing)


# Interactive elements a keyboard user must be able to reach (visible, enabled, not removed
# from the tab order). Collected inside the article: the page's text, its figures and widgets.
TAG_CONTROLS = """() => {
  const ariaControls = '[role=button], [role=slider], [role=checkbox], [role=radio], [role=switch], [role=tab], ' +
                       '[role=spinbutton], [role=combobox], [role=link], [role=menuitem], [role=option]';
  const selector = 'a[href], button, input, select, textarea, summary, [tabindex], [contenteditable=""], ' +
                   '[contenteditable=true], ' + ariaControls;
  // Content of a closed <details> is not rendered (its summary, which opens it, is a control).
  const inClosedDetails = el => { const d = el.parentElement && el.parentElement.closest('details:not([open])');
                                  return !!d && !(el.tagName === 'SUMMARY' && el.parentElement === d); };
  const visible = el => {
    const s = getComputedStyle(el);
    return el.getClientRects().length > 0 && s.visibility !== 'hidden' && s.display !== 'none' &&
           !inClosedDetails(el) && (!el.checkVisibility || el.checkVisibility());
  };
  const all = [];
  const collect = root => {
    for (const el of root.querySelectorAll(selector)) all.push(el);
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) collect(el.shadowRoot);
  };
  collect(document.querySelector('article') || document.body);
  // A native element taken out of the tab order on purpose (tabindex=-1, as the theme does
  // for code blocks that need no scrolling) is not a control; a scripted control (an ARIA
  // widget role, e.g. a custom slider) must be focusable whatever it says.
  const scripted = el => el.matches(ariaControls);
  const controls = all.filter(el => visible(el) && !el.disabled && !el.closest('[inert]') &&
                                    (el.tabIndex >= 0 || scripted(el)));
  controls.forEach((el, i) => el.setAttribute('data-kbd', String(i)));
  return controls.map(el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' "' +
                             (el.getAttribute('aria-label') || el.textContent || el.value || '').trim().slice(0, 40) + '"');
}"""

FOCUSED = """() => {
  let el = document.activeElement;
  while (el && el.shadowRoot && el.shadowRoot.activeElement) el = el.shadowRoot.activeElement;
  if (!el || el === document.body) return null;
  const main = document.getElementById('main-content');
  return {kbd: el.getAttribute('data-kbd'), text: (el.textContent || '').trim().slice(0, 60),
          inMain: !!(main && main.contains(el)), href: el.getAttribute('href')};
}"""

RECORD_FOCUS = """() => {
  window.__reached = [];
  window.__firstFocus = null;
  document.addEventListener('focusin', event => {
    const el = event.composedPath()[0];
    if (!el || !el.getAttribute) return;
    if (window.__firstFocus === null) window.__firstFocus = el.getAttribute('href') || el.outerHTML.slice(0, 80);
    if (el.getAttribute('data-kbd') !== null) window.__reached.push(Number(el.getAttribute('data-kbd')));
  }, true);
}"""


@pytest.mark.parametrize("page_path", [p for p in PAGES if p != "index.html"])  # index.html only redirects
def test_keyboard_alone_reaches_every_control_and_the_skip_link_works(guarded_page, site_url, page_path):
    page = open_settled(guarded_page, site_url, page_path)
    controls = page.evaluate(TAG_CONTROLS)
    page.evaluate(RECORD_FOCUS)

    # Tab through the page from the top; every control of the article must receive focus.
    presses = 0
    while presses < len(controls) + 300:  # the header and the sidebars come first
        for _ in range(25):
            page.keyboard.press("Tab")
        presses += 25
        if len(set(page.evaluate("window.__reached"))) == len(controls):
            break
    reached = set(page.evaluate("window.__reached"))
    missing = [controls[i] for i in range(len(controls)) if i not in reached]
    assert not missing, f"{page_path}: {len(missing)} control(s) never receive keyboard focus:\n  " + "\n  ".join(missing[:20])

    # The first Tab lands on the skip link, and following it moves the keyboard into the content.
    first = page.evaluate("window.__firstFocus")
    assert first == "#main-content", f"{page_path}: the first Tab focused {first!r}, not the skip link"
    page.focus("#pst-skip-link a")
    page.keyboard.press("Enter")
    assert page.evaluate("location.hash") == "#main-content"
    page.keyboard.press("Tab")
    after_skip = page.evaluate(FOCUSED)
    assert after_skip and after_skip["inMain"], f"{page_path}: after the skip link, Tab focused {after_skip}"

    # The page scrolls with the keyboard (read it without a mouse).
    if page.evaluate("document.documentElement.scrollHeight > window.innerHeight + 50"):
        page.evaluate("document.activeElement.blur(); window.scrollTo(0, 0)")
        page.keyboard.press("PageDown")
        page.wait_for_timeout(200)
        assert page.evaluate("window.scrollY") > 0, f"{page_path}: PageDown does not scroll the page"


# Each control of a widget (in a cell's output), identified by its position, with its kind.
WIDGET_CONTROLS = """() => [...document.querySelectorAll('article .cell_output input, article .cell_output select, article .cell_output [role=slider]')]
  .filter(el => el.getClientRects().length > 0 && !el.disabled)
  .map((el, i) => { el.setAttribute('data-widget-control', String(i));
                    return {i, kind: el.tagName === 'SELECT' ? 'select' : (el.type || el.getAttribute('role')),
                            label: el.getAttribute('aria-label') || (el.labels && el.labels[0] ? el.labels[0].textContent.trim() : '') || el.id}; })"""
# What the widget shows, apart from the control itself: its text and drawing.
WIDGET_VIEW = """(i) => {
  const control = document.querySelector(`[data-widget-control="${i}"]`);
  const output = control.closest('.cell_output') || control.parentElement;
  const clone = output.cloneNode(true);
  clone.querySelectorAll('input, select').forEach(el => el.remove());
  return clone.innerHTML;
}"""
KEY_FOR = {"range": "ArrowRight", "slider": "ArrowRight", "checkbox": "Space", "radio": "ArrowDown",
           "select": "ArrowDown", "number": "ArrowUp"}
# Pages that embed widget state (live widgets).
WIDGET_PAGES = [p for p in PAGES if BUILT and "application/vnd.jupyter.widget-state+json" in (harness.HTML / p).read_text(encoding="utf-8")]


@pytest.mark.parametrize("page_path", WIDGET_PAGES)
def test_every_widget_control_works_from_the_keyboard(guarded_page, site_url, page_path):
    """Focus each control of each widget and press the key a keyboard user would: the widget's
    view must change (it listens to keyboard input, not only to the mouse)."""
    page = open_settled(guarded_page, site_url, page_path)
    page.wait_for_timeout(500)  # widgets render after the page settles
    controls = page.evaluate(WIDGET_CONTROLS)
    assert controls, f"{page_path}: embeds a widget but shows no control (did the widget render?)"
    dead = []
    for control in controls:
        key = KEY_FOR.get(control["kind"])
        if key is None:
            continue
        selector = f'[data-widget-control="{control["i"]}"]'
        if control["kind"] in ("range", "number") and page.eval_on_selector(selector, "el => el.value === el.max"):
            key = "ArrowLeft" if control["kind"] == "range" else "ArrowDown"
        before = page.evaluate(WIDGET_VIEW, control["i"])
        page.focus(selector)
        page.keyboard.press(key)
        page.wait_for_timeout(150)
        if page.evaluate(WIDGET_VIEW, control["i"]) == before:
            dead.append(f"{control['kind']} {control['label']!r}: {key} changed nothing")
    assert not dead, f"{page_path}: widget controls that do not respond to the keyboard:\n  " + "\n  ".join(dead)
    guarded_page.assert_clean()


# KaTeX (output 'htmlAndMathml') writes each formula as <span class="katex"> holding a
# <span class="katex-mathml"><math>...</math></span> and an aria-hidden visual rendering.
MATH_STATUS = """() => {
  const formulas = [...document.querySelectorAll('.katex')];
  return {
    containers: formulas.length,
    without_mml: formulas.filter(c => !c.querySelector(':scope > .katex-mathml > math')).length,
    hidden_visual: formulas.filter(c => {
      const visual = c.querySelector(':scope > .katex-html');
      return !visual || visual.getAttribute('aria-hidden') !== 'true';
    }).length,
  };
}"""


def _has_math(html_path) -> bool:
    text = html_path.read_text(encoding="utf-8")
    return 'class="math' in text or "\\(" in text


MATH_PAGES = [p for p in PAGES if BUILT and _has_math(harness.HTML / p) and p != "index.html"]


def test_the_book_has_math_to_check():
    assert MATH_PAGES, "no built page contains math: the assistive-MathML test would check nothing"


@pytest.mark.parametrize("page_path", MATH_PAGES)
def test_math_is_exposed_to_assistive_technology_as_mathml(guarded_page, site_url, page_path):
    page = open_settled(guarded_page, site_url, page_path)
    status = page.evaluate(MATH_STATUS)
    assert status["containers"] > 0, f"{page_path}: math in the HTML but no KaTeX rendering of it"
    assert status["without_mml"] == 0, (
        f"{page_path}: {status['without_mml']} of {status['containers']} formulas have no assistive MathML")
    # The visual rendering is hidden from screen readers, so they read the MathML once, not glyphs.
    assert status["hidden_visual"] == 0, f"{page_path}: {status['hidden_visual']} formulas expose their glyphs"
