"""The book's widget loader (site/static/attn-widgets-loader.js) keeps anywidget's contract and
isolates failures.

The built page is served as it is, except that the test adds widgets to its embedded state
(through Playwright's routing, nothing is written to disk):

* a widget whose module throws in render(): its static figure must stay, one console error
  must name it, and the page's real widget must render all the same;
* a widget whose module cannot even be parsed: the same;
* a probe widget that records what its change handlers receive: a "change:NAME" handler
  gets (model, value) and a "change" handler gets (model), as anywidget's model gives them.
"""

from __future__ import annotations

import json
import re

import pytest

from tests import harness
from tests.site.explorers import PAGES, wait_until_ready

PAGE = PAGES["temperature"]
STATE = "application/vnd.jupyter.widget-state+json"
VIEW = "application/vnd.jupyter.widget-view+json"

BROKEN = {
    "broken-render": 'export default { render() { throw new Error("deliberately broken"); } };',
    "broken-syntax": "export default { render( {{ this is not JavaScript",
}
PROBE = """export default {
  render({ model, el }) {
    model.on("change:value", (m, v) => {
      el.dataset.changeArgs = JSON.stringify([typeof m.get, m === model, v]);
    });
    model.on("change", (m) => { el.dataset.anyArgs = JSON.stringify([typeof m.get, m === model]); });
    model.set("value", 42);
    el.textContent = "probe";
  }
};"""


def with_extra_widgets(html: str) -> tuple[str, str]:
    match = re.search(r'(<script type="%s">)(.*?)(</script>)' % re.escape(STATE), html, re.S)
    assert match, f"{PAGE} embeds no widget state"
    state = json.loads(match.group(2))
    models = state["state"]
    real_id, real = next((k, v) for k, v in models.items() if v.get("model_module") == "anywidget")
    extra = dict(BROKEN, probe=PROBE)
    views = ""
    for name, esm in extra.items():
        entry = json.loads(json.dumps(real))
        entry["state"].update(_esm=esm, _anywidget_id=f"test.{name}", value=0)
        entry["state"].pop("_css", None)
        models[name] = entry
        view = json.dumps({"model_id": name, "version_major": 2, "version_minor": 0})
        views += (f'<div class="test-extra" data-name="{name}"><script type="{VIEW}">{view}</script>'
                  f'<figure class="attn-fallback" hidden data-model-id="{name}">'
                  f'<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" alt="the static {name} figure"></figure></div>')
    html = html[:match.start(2)] + json.dumps(state) + html[match.end(2):]
    first_view = html.index(f'<script type="{VIEW}">')
    return html[:first_view] + views + html[first_view:], real_id


@pytest.fixture()
def loaded(guarded_page, site_url, built_html):
    original = (built_html / PAGE).read_text(encoding="utf-8")
    changed, real_id = with_extra_widgets(original)
    page = guarded_page.page
    page.route(site_url + PAGE, lambda route: route.fulfill(status=200, content_type="text/html", body=changed))
    guarded_page.goto(site_url + PAGE)
    wait_until_ready(page)
    return guarded_page, real_id


def test_a_widget_that_fails_keeps_its_figure_names_itself_and_the_others_render(loaded):
    guarded_page, real_id = loaded
    page = guarded_page.page
    for name in BROKEN:
        fallback = page.locator(f'.attn-fallback[data-model-id="{name}"]')
        assert fallback.is_visible(), f"{name}: its static figure is not shown"
        assert page.locator(f'.test-extra[data-name="{name}"] .attn-widget-host').count() == 0
    # The page's own widget rendered, and its static figure gave way to it.
    assert page.locator(".attn-widget-host[data-rendered=true].attn-temperature").count() == 1
    assert "attn-replaced" in page.locator(f'.attn-fallback[data-model-id="{real_id}"]').get_attribute("class")
    failed = page.evaluate("document.documentElement.dataset.attnFailed")
    assert all(f"test.{name}" in failed for name in BROKEN), failed
    errors = [p for p in guarded_page.problems if p.startswith("console error")]
    assert len(errors) == len(BROKEN), errors
    for name in BROKEN:
        assert any(f"test.{name}" in e and "could not render" in e for e in errors), errors
    assert [p for p in guarded_page.problems if not p.startswith("console error")] == []
    assert guarded_page.outside_requests == []


def test_change_handlers_get_what_anywidgets_model_gives_them(loaded):
    guarded_page, _ = loaded
    host = guarded_page.page.locator('.test-extra[data-name="probe"] .attn-widget-host')
    assert host.count() == 1
    assert json.loads(host.get_attribute("data-change-args")) == ["function", True, 42]
    assert json.loads(host.get_attribute("data-any-args")) == ["function", True]


def test_pages_with_widgets_load_the_loader_from_the_site(built_html):
    pages = [p for p in harness.book_pages(built_html) if STATE in (built_html / p).read_text(encoding="utf-8")]
    assert pages, "no page embeds a widget"
    for p in pages:
        html = (built_html / p).read_text(encoding="utf-8")
        assert re.search(r'<script defer="defer" src="(\.\./)*_static/attn-widgets-loader\.js', html), p
