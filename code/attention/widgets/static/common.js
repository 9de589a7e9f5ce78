// Shared helpers of the chapter's widgets. Python prepends this file to each widget's own
// module (no bundler, no build step). The modules only select precomputed results from
// model.get("_grid") and draw SVG; they never compute attention themselves.

const SVG_NS = "http://www.w3.org/2000/svg";
let attnUid = 0;

function svgEl(parent, tag, attrs = {}, text = null) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== null) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

function htmlEl(parent, tag, attrs = {}, text = null) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== null) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

function uid(name) {
  attnUid += 1;
  return `attn-${name}-${attnUid}-${Math.random().toString(36).slice(2, 7)}`;
}

// Index of the grid value nearest to x (on a log scale if log).
function nearestIndex(values, x, log = false) {
  let best = 0;
  let bestDist = Infinity;
  for (let i = 0; i < values.length; i++) {
    const d = log ? Math.abs(Math.log(values[i]) - Math.log(x)) : Math.abs(values[i] - x);
    if (d < bestDist) { bestDist = d; best = i; }
  }
  return best;
}

function fmt(x, digits) { return Number(x).toFixed(digits); }

// Three significant figures, never exponent notation: 0.0501, 1.00, 19.9.
function fmtSig(x) {
  if (x >= 100) return x.toFixed(0);
  if (x >= 10) return x.toFixed(1);
  if (x >= 1) return x.toFixed(2);
  return x.toPrecision(3);
}

// A visible label, a native range input over grid indices 0..count-1 (keyboard, mouse and
// touch for free), and an <output> with the value as text (also the input's aria-valuetext).
function rangeControl(parent, { name, label, count, valueText }) {
  const row = htmlEl(parent, "div", { class: "attn-control" });
  const id = uid(name);
  const lab = htmlEl(row, "label", { for: id });
  lab.innerHTML = label;
  const input = htmlEl(row, "input", {
    type: "range", id, min: 0, max: count - 1, step: 1, value: 0, "data-control": name,
    // JupyterLab (Lumino) binds arrow keys to notebook commands for any focused element that is
    // not editable; on the slider itself the keys belong to the slider.
    "data-lm-suppress-shortcuts": "true",
  });
  const out = htmlEl(row, "output", { for: id, "data-output": name });
  return {
    input,
    show(i) {
      input.value = String(i);
      const text = valueText(i);
      out.textContent = text;
      input.setAttribute("aria-valuetext", text);
    },
  };
}

// A labelled checkbox shown as a switch, with its state as text.
function switchControl(parent, { name, label, onText, offText }) {
  const row = htmlEl(parent, "div", { class: "attn-control attn-switch" });
  const id = uid(name);
  const input = htmlEl(row, "input", {
    type: "checkbox", role: "switch", id, "data-control": name, "data-lm-suppress-shortcuts": "true",
  });
  const lab = htmlEl(row, "label", { for: id });
  lab.innerHTML = label;
  const out = htmlEl(row, "output", { for: id, "data-output": name });
  return {
    input,
    show(on) {
      input.checked = on;
      out.textContent = on ? onText : offText;
    },
  };
}

// A readout line: a label and a value element whose data-value holds the unrounded grid value.
function readout(list, { name, label }) {
  const item = htmlEl(list, "div", {});  // a <div> may group a <dt> and its <dd> in a <dl>
  const dt = htmlEl(item, "dt", {});
  dt.innerHTML = label;
  const dd = htmlEl(item, "dd", { "data-readout": name });
  return {
    show(value, text) {
      dd.textContent = text;
      dd.dataset.value = Array.isArray(value) ? JSON.stringify(value) : String(value);
    },
  };
}

function setTrait(model, name, value) {
  model.set(name, value);
  model.save_changes();
}

// Redraw whenever one of the named traits changes (from a slider or from Python); returns the
// cleanup function anywidget calls when the view goes away.
function onTraits(model, names, redraw) {
  const handler = () => redraw();
  for (const n of names) model.on(`change:${n}`, handler);
  return () => { for (const n of names) model.off(`change:${n}`, handler); };
}

function scale(d0, d1, r0, r1) {
  return (x) => r0 + ((x - d0) / (d1 - d0)) * (r1 - r0);
}

// The widget's frame: root classes, a heading, the controls, the SVG, a readout list.
function frame(el, { kind, title, viewBox, svgLabel, note = "" }) {
  el.classList.add("attn-w", "attn-live", `attn-${kind}`);
  el.replaceChildren();
  const titleId = uid(`${kind}-title`);
  const root = htmlEl(el, "section", { class: "attn-root", "aria-labelledby": titleId });
  htmlEl(root, "p", { class: "attn-title", id: titleId }, title);
  const controls = htmlEl(root, "div", { class: "attn-controls" });
  const body = htmlEl(root, "div", { class: "attn-body" });
  const svg = svgEl(body, "svg", { viewBox, role: "img", "aria-label": svgLabel, class: "attn-svg" });
  const list = htmlEl(body, "dl", { class: "attn-readout", "aria-live": "polite" });
  if (note) htmlEl(root, "p", { class: "attn-note" }).innerHTML = note;
  return { root, controls, svg, list };
}

// y axis with ticks at the given values, drawn left of x0.
function yAxis(svg, { x0, x1, y, ticks, fmtTick, label }) {
  const g = svgEl(svg, "g", { class: "attn-axis" });
  for (const t of ticks) {
    svgEl(g, "line", { x1: x0, x2: x1, y1: y(t), y2: y(t), class: "attn-grid" });
    svgEl(g, "text", { x: x0 - 4, y: y(t) + 4, "text-anchor": "end" }, fmtTick(t));
  }
  if (label) {
    const mid = (y(ticks[0]) + y(ticks[ticks.length - 1])) / 2;
    svgEl(g, "text", { x: 12, y: mid, transform: `rotate(-90 12 ${mid})`, "text-anchor": "middle" }, label);
  }
  return g;
}

// A bar chart as one SVG path (one layout object instead of one per bar: faster redraws).
// x0: left edge, bw: bar pitch, gap: space between bars, y: value -> y scale.
function barsPath(values, { x0, bw, gap = 2, y }) {
  const base = y(0);
  let d = "";
  for (let j = 0; j < values.length; j++) {
    const top = y(values[j]);
    if (base - top < 0.05) continue;
    d += `M${(x0 + j * bw + gap / 2).toFixed(2)},${base.toFixed(2)}V${top.toFixed(2)}h${(bw - gap).toFixed(2)}V${base.toFixed(2)}Z`;
  }
  return d;
}
