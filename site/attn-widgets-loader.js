// Renders the book's anywidget widgets from the widget state embedded in the page, with no
// kernel, no widget manager and no request outside the site.
//
// myst-nb writes the executed notebook's widget state into
// <script type="application/vnd.jupyter.widget-state+json"> and each displayed widget as
// <script type="application/vnd.jupyter.widget-view+json">{"model_id": ...}</script>.
// For every view whose model is an anywidget, this loader imports the model's own ES module
// (the `_esm` string in the state) and calls its render({model, el}) with a small model:
// get/set/on/off/save_changes/send, changes applied locally. The widget's static fallback
// figure (<figure class="attn-fallback" data-model-id=...>) is hidden once it has rendered.
(function () {
  "use strict";
  var STATE = "application/vnd.jupyter.widget-state+json";
  var VIEW = "application/vnd.jupyter.widget-view+json";

  function Model(state) {
    this._state = Object.assign({}, state);
    this._handlers = new Map();
  }
  Model.prototype.get = function (name) { return this._state[name]; };
  Model.prototype.set = function (name, value) {
    if (this._state[name] === value) return;
    this._state[name] = value;
    this._emit("change:" + name, value);
    this._emit("change", value);
  };
  Model.prototype.on = function (event, handler) {
    if (!this._handlers.has(event)) this._handlers.set(event, new Set());
    this._handlers.get(event).add(handler);
  };
  Model.prototype.off = function (event, handler) {
    if (!event) { this._handlers.clear(); return; }
    var set = this._handlers.get(event);
    if (!set) return;
    if (handler) set.delete(handler); else set.clear();
  };
  Model.prototype._emit = function (event, value) {
    var set = this._handlers.get(event);
    if (set) Array.from(set).forEach(function (h) { h(value); });
  };
  Model.prototype.save_changes = function () {};  // no kernel: nothing to sync with
  Model.prototype.send = function () {};

  var modules = new Map();  // one import per distinct module source
  function importModule(source) {
    if (!modules.has(source)) {
      var url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
      modules.set(source, import(url).finally(function () { URL.revokeObjectURL(url); }));
    }
    return modules.get(source);
  }

  var styled = new Set();
  function addStyle(id, css) {
    if (!css || styled.has(id)) return;
    styled.add(id);
    var style = document.createElement("style");
    style.dataset.anywidget = id;
    style.textContent = css;
    document.head.appendChild(style);
  }

  async function renderView(script, states) {
    var view = JSON.parse(script.textContent);
    var entry = states[view.model_id];
    if (!entry || entry.model_module !== "anywidget" || !entry.state || !entry.state._esm) {
      return;  // not ours to draw: the static fallback stays
    }
    var model = new Model(entry.state);
    var el = document.createElement("div");
    el.className = "attn-widget-host";
    script.parentNode.insertBefore(el, script);
    addStyle(entry.state._anywidget_id || view.model_id, entry.state._css);
    var mod = await importModule(entry.state._esm);
    var widget = mod.default || mod;
    if (typeof widget === "function") widget = await widget();
    if (widget.initialize) await widget.initialize({ model: model });
    await widget.render({ model: model, el: el });
    el.dataset.rendered = "true";
    var fallbacks = document.querySelectorAll('.attn-fallback[data-model-id="' + view.model_id + '"]');
    fallbacks.forEach(function (f) { f.classList.add("attn-replaced"); });
  }

  function main() {
    var stateScript = document.querySelector('script[type="' + STATE + '"]');
    if (!stateScript) return;
    var states = JSON.parse(stateScript.textContent).state || {};
    var views = document.querySelectorAll('script[type="' + VIEW + '"]');
    var pending = Array.from(views).map(function (s) { return renderView(s, states); });
    Promise.all(pending).then(function () {
      document.documentElement.dataset.attnWidgets = "ready";
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", main);
  else main();
})();
