// SaturationExplorer: one query's weights over 32 keys against d_k, temperature and scaling.

function render({ model, el }) {
  const g = model.get("_grid");
  const dks = g.d_ks;
  const taus = g.temperatures;
  const n = g.n_keys;
  const { controls, svg, list } = frame(el, {
    kind: "saturation",
    title: "Saturation explorer: one query against 32 random keys",
    viewBox: "0 0 680 440",
    svgLabel: "Bar chart of one query's 32 attention weights, a gauge of the softmax Jacobian's trace, and two curves against d_k (mean largest weight and mean trace) with the current setting marked.",
    note: `Unit-variance query and keys, fixed seed. Curves: means over ${g.n_queries} random queries, `
      + "unscaled (dashed) and scaled (solid), at the current temperature; the dot marks the current setting.",
  });
  const dkCtl = rangeControl(controls, {
    name: "d_k", label: "Key width d<sub>k</sub>", count: dks.length,
    valueText: (i) => `d_k = ${dks[i]}`,
  });
  const tauCtl = rangeControl(controls, {
    name: "temperature", label: "Temperature τ (log scale)", count: taus.length,
    valueText: (i) => `τ = ${fmtSig(taus[i])}`,
  });
  const scCtl = switchControl(controls, {
    name: "scaled", label: "Divide scores by √d<sub>k</sub>", onText: "scaled", offText: "unscaled",
  });
  dkCtl.input.addEventListener("input", () => setTrait(model, "d_k", dks[Number(dkCtl.input.value)]));
  tauCtl.input.addEventListener("input", () => setTrait(model, "temperature", taus[Number(tauCtl.input.value)]));
  scCtl.input.addEventListener("change", () => setTrait(model, "scaled", scCtl.input.checked));

  // Top: the 32 weights of one row, with the uniform level 1/32 dashed.
  const y = scale(0, 1, 170, 20);
  yAxis(svg, { x0: 58, x1: 660, y, ticks: [0, 0.5, 1], fmtTick: (t) => fmt(t, 1), label: "weight" });
  const bw = 600 / n;
  const bars = svgEl(svg, "path", { class: "attn-bar" });
  const best = svgEl(svg, "rect", { x: 60, width: bw - 2, y: y(0), height: 0, class: "attn-bar attn-bar-hi" });
  svgEl(svg, "line", { x1: 58, x2: 660, y1: y(1 / n), y2: y(1 / n), class: "attn-uniform" });
  svgEl(svg, "text", { x: 60, y: 186, class: "attn-muted" }, `the ${n} keys (outlined: the largest weight)`);
  svgEl(svg, "text", { x: 660, y: 186, "text-anchor": "end", class: "attn-muted" }, `dashed: uniform weight 1/${n}`);

  // Middle: the Jacobian trace 1 - |a|^2 as a gauge from 0 (one-hot) to 1 - 1/n (uniform).
  const traceMax = 1 - 1 / n;
  const gx = scale(0, traceMax, 200, 660);
  svgEl(svg, "text", { x: 192, y: 222, "text-anchor": "end" }, "Jacobian trace");
  svgEl(svg, "rect", { x: 200, y: 208, width: 460, height: 18, class: "attn-gauge-track" });
  const gauge = svgEl(svg, "rect", { x: 200, y: 208, width: 0, height: 18, class: "attn-gauge" });
  svgEl(svg, "text", { x: 200, y: 241, class: "attn-muted" }, "0: one-hot, no gradient");
  svgEl(svg, "text", { x: 660, y: 241, "text-anchor": "end", class: "attn-muted" }, `${fmt(traceMax, 3)}: uniform`);

  // Bottom: mean largest weight and mean trace against d_k, both curves, the setting marked.
  const lx = (x0) => scale(0, dks.length - 1, x0, x0 + 250);
  const cy = scale(0, 1, 410, 280);
  const panels = [["mean_max_weight", "mean largest weight", 60], ["mean_trace", "mean trace 1 − |a|²", 400]];
  const curves = {};
  for (const [key, title, x0] of panels) {
    const x = lx(x0);
    svgEl(svg, "text", { x: x0 + 125, y: 268, "text-anchor": "middle" }, title);
    for (const t of [0, 0.5, 1]) {
      svgEl(svg, "line", { x1: x0, x2: x0 + 250, y1: cy(t), y2: cy(t), class: "attn-grid" });
      svgEl(svg, "text", { x: x0 - 4, y: cy(t) + 4, "text-anchor": "end" }, fmt(t, 1));
    }
    dks.forEach((d, i) => {
      if (i % 2 === 0) svgEl(svg, "text", { x: x(i), y: 428, "text-anchor": "middle", class: "attn-muted" }, String(d));
    });
    curves[key] = {
      x,
      lines: [svgEl(svg, "polyline", { class: "attn-curve attn-unscaled" }),
        svgEl(svg, "polyline", { class: "attn-curve attn-scaled" })],
      mark: svgEl(svg, "circle", { r: 6, class: "attn-mark" }),
    };
  }
  svgEl(svg, "text", { x: 345, y: 428, "text-anchor": "middle" }, "d_k");

  const rDk = readout(list, { name: "d_k", label: "d<sub>k</sub>" });
  const rTau = readout(list, { name: "temperature", label: "temperature τ" });
  const rMode = readout(list, { name: "scaled", label: "scores" });
  const rMax = readout(list, { name: "max_weight", label: "largest weight (this row)" });
  const rTrace = readout(list, { name: "trace", label: "Jacobian trace 1 − |a|² (this row)" });
  const rMeanMax = readout(list, { name: "mean_max_weight", label: `mean largest weight (${g.n_queries} rows)` });
  const rMeanTrace = readout(list, { name: "mean_trace", label: `mean trace (${g.n_queries} rows)` });

  function redraw() {
    const d = Math.max(0, dks.indexOf(model.get("d_k")));
    const t = nearestIndex(taus, model.get("temperature"), true);
    const s = model.get("scaled") ? 1 : 0;
    dkCtl.show(d);
    tauCtl.show(t);
    scCtl.show(s === 1);
    el.classList.toggle("attn-is-unscaled", s === 0);
    const row = g.rows[s][t][d].map((w) => w / 1e4);
    let argmax = 0;
    for (let j = 1; j < n; j++) if (row[j] > row[argmax]) argmax = j;
    bars.setAttribute("d", barsPath(row, { x0: 60, bw, y }));
    best.setAttribute("x", 60 + argmax * bw + 1);
    best.setAttribute("y", y(row[argmax]));
    best.setAttribute("height", y(0) - y(row[argmax]));
    const trace = g.trace[s][t][d];
    gauge.setAttribute("width", gx(Math.min(trace, traceMax)) - gx(0));
    for (const key of ["mean_max_weight", "mean_trace"]) {
      const c = curves[key];
      [0, 1].forEach((k) => {
        c.lines[k].setAttribute("points", g[key][k][t].map((v, i) => `${c.x(i)},${cy(v)}`).join(" "));
        c.lines[k].classList.toggle("attn-active", k === s);
      });
      c.mark.setAttribute("cx", c.x(d));
      c.mark.setAttribute("cy", cy(g[key][s][t][d]));
    }
    rDk.show(dks[d], String(dks[d]));
    rTau.show(taus[t], fmtSig(taus[t]));
    rMode.show(s === 1, s === 1 ? "scaled by 1/√d_k" : "unscaled");
    rMax.show(g.max_weight[s][t][d], fmt(g.max_weight[s][t][d], 3));
    rTrace.show(trace, fmt(trace, 3));
    rMeanMax.show(g.mean_max_weight[s][t][d], fmt(g.mean_max_weight[s][t][d], 3));
    rMeanTrace.show(g.mean_trace[s][t][d], fmt(g.mean_trace[s][t][d], 3));
  }
  redraw();
  return onTraits(model, ["d_k", "temperature", "scaled"], redraw);
}

export default { render };
