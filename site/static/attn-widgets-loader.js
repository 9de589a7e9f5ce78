// Renders the book's anywidget widgets from the widget state embedded in the page, with no
// kernel, no widget manager and no request outside the site.
//
// myst-nb writes the executed notebook's widget state into
// <script type="application/vnd.jupyter.widget-state+json"> and each displayed widget as
// <script type="application/vnd.jupyter.widget-view+json">{"model_id": ...}</script>.
// For every view whose model is an anywidget, this loader imports the model's own ES module
// (the `_esm` string in the state) and calls its initialize({model}) and render({model, el})
// with a small model that keeps anywidget's contract:
//   get(name), set(name, value), save_changes(), send(), on(event, handler), off(event, handler);
//   a "change:NAME" handler is called as handler(model, value) and a "change" handler as
//   handler(model), as in JupyterLab (Backbone); changes stay in the page (no kernel).
// The widget's static fallback figure (<figure class="attn-fallback" data-model-id=...>) is
// hidden once its widget has rendered. A widget that fails to render leaves its fallback in
// place and logs one console error naming it; the other widgets of the page render all the
// same. <html data-attn-widgets="ready"> marks the end (data-attn-failed lists failures).
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
    this._emit("change:" + name, [this, value]);
    this._emit("change", [this]);
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
  Model.prototype._emit = function (event, args) {
    var set = this._handlers.get(event);
    if (!set) return;
    Array.from(set).forEach(function (h) { h.apply(null, args); });
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

  // A readable name for messages: the widget's Python class when the state says it.
  function widgetName(entry, modelId) {
    var state = (entry && entry.state) || {};
    var name = state._anywidget_id || state._model_name || "widget";
    return name + " (model " + modelId + ")";
  }

  async function draw(entry, view, el) {
    var model = new Model(entry.state);
    addStyle(entry.state._anywidget_id || view.model_id, entry.state._css);
    var mod = await importModule(entry.state._esm);
    var widget = mod.default || mod;
    if (typeof widget === "function") widget = await widget();
    if (!widget || typeof widget.render !== "function") throw new Error("its module exports no render()");
    if (widget.initialize) await widget.initialize({ model: model });
    await widget.render({ model: model, el: el });
  }

  async function renderView(script, states) {
    var view = JSON.parse(script.textContent);
    var entry = states[view.model_id];
    if (!entry || entry.model_module !== "anywidget" || !entry.state || !entry.state._esm) {
      return null;  // not ours to draw: the static fallback stays
    }
    var el = document.createElement("div");
    el.className = "attn-widget-host";
    script.parentNode.insertBefore(el, script);
    try {
      await draw(entry, view, el);
    } catch (error) {
      el.remove();  // whatever it drew before failing goes; the static figure stays
      var name = widgetName(entry, view.model_id);
      console.error("attention book: the " + name + " could not render; its static figure stays. " + error);
      return name;
    }
    el.dataset.rendered = "true";
    var fallbacks = document.querySelectorAll('.attn-fallback[data-model-id="' + view.model_id + '"]');
    fallbacks.forEach(function (f) { f.classList.add("attn-replaced"); });
    return null;
  }

  function main() {
    var root = document.documentElement;
    var stateScript = document.querySelector('script[type="' + STATE + '"]');
    var states = {};
    try {
      states = stateScript ? JSON.parse(stateScript.textContent).state || {} : {};
    } catch (error) {
      console.error("attention book: the page's widget state is unreadable; the static figures stay. " + error);
    }
    var views = document.querySelectorAll('script[type="' + VIEW + '"]');
    var pending = Array.from(views).map(function (s) {
      // A view that cannot even be parsed is one failure, not the end of the others.
      return renderView(s, states).catch(function (error) {
        console.error("attention book: a widget view could not render. " + error);
        return "unreadable view";
      });
    });
    Promise.all(pending).then(function (failed) {
      failed = failed.filter(Boolean);
      if (failed.length) root.dataset.attnFailed = failed.join("; ");
      root.dataset.attnWidgets = "ready";
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", main);
  else main();
})();
