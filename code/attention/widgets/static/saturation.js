// SaturationExplorer: one query's weights over T_k keys against d_k, temperature, scaling and
// T_k, with two gauges of the gradient and the current setting marked on two curves.
// Everything shown is looked up in the grid Python computed (saturation.py); nothing here
// computes attention. Two layouts of the same drawing: wide (gauges full width, the two curve
// panels side by side) and narrow (everything stacked), so that text never shrinks below 10 px.

const SAT_LAYOUTS = {
  wide: {
    w: 680, h: 520, bars: { x0: 60, x1: 660, top: 24, bottom: 170, caption: 188 },
    gauges: [{ x0: 250, x1: 660, y: 214, labelX: 242 }, { x0: 250, x1: 660, y: 262, labelX: 242 }],
    panels: [{ x0: 60, x1: 300, top: 336, bottom: 470 }, { x0: 420, x1: 660, top: 336, bottom: 470 }],
  },
  narrow: {
    w: 360, h: 740, bars: { x0: 44, x1: 350, top: 24, bottom: 170, caption: 188 },
    gauges: [{ x0: 14, x1: 346, y: 236, labelX: null }, { x0: 14, x1: 346, y: 300, labelX: null }],
    panels: [{ x0: 50, x1: 340, top: 384, bottom: 500 }, { x0: 50, x1: 340, top: 580, bottom: 696 }],
  },
};
// Below this drawn width (px) the wide layout would scale its 12 px text under 10 px.
const SAT_NARROW_BELOW = 600;
const LOG_LO = 1e-4;
const LOG_HI = 100;

// A number for a readout: three significant figures, "0" and "< 0.0001" for tiny ones.
function fmtSmall(x) {
  if (x === null || x === undefined) return "–";
  if (x === 0) return "0";
  if (x < 1e-4) return "< 0.0001";
  return fmtSig(x);
}

function render({ model, el }) {
  const g = model.get("_grid");
  const dks = g.d_ks;
  const taus = g.temperatures;
  const tks = g.t_ks;
  const alphabet = g.alphabet;
  const { controls, svg, list } = frame(el, {
    kind: "saturation",
    title: "Saturation explorer: one query against Tₖ random keys",
    viewBox: "0 0 680 520",
    svgLabel: "Bar chart of one query's attention weights; two gauges, what the softmax lets through, trace of J squared, and the gradient reaching the query on a log scale; and two curves against dₖ, the mean largest weight and the median and mean gradient reaching the query, with the current setting marked.",
    note: "Unit-variance query and keys, fixed seed. Every width uses the same key directions, so moving d<sub>k</sub> "
      + "shows the same rows grow sharper or not, and a larger T<sub>k</sub> adds keys to the same row. "
      + `Curves: ${g.n_queries} random queries at the current temperature and T<sub>k</sub>. Mean largest weight: `
      + "unscaled (dashed) and scaled (solid). Gradient reaching q, for the current scores: the median (solid) and "
      + "the mean (dotted) over queries, on a log scale; it is the root-mean-square size for a random upstream "
      + "gradient with unit-variance entries, averaged also over the parts of the keys that the scores do not see. "
      + "Bars: the first query's weights, drawn to within a few pixels (the readout gives the largest exactly).",
  });
  const dkCtl = rangeControl(controls, {
    name: "d_k", label: "Key width d<sub>k</sub>", count: dks.length,
    valueText: (i) => `dₖ = ${dks[i]}`,
  });
  const tauCtl = rangeControl(controls, {
    name: "temperature", label: "Temperature τ (log scale)", count: taus.length,
    valueText: (i) => `τ = ${fmtSig(taus[i])}`,
  });
  const tkCtl = rangeControl(controls, {
    name: "T_k", label: "Number of keys T<sub>k</sub>", count: tks.length,
    valueText: (i) => `Tₖ = ${tks[i]}`,
  });
  const scCtl = switchControl(controls, {
    name: "scaled", label: "Divide scores by √d<sub>k</sub>", onText: "scaled", offText: "unscaled",
  });
  dkCtl.input.addEventListener("input", () => setTrait(model, "d_k", dks[Number(dkCtl.input.value)]));
  tauCtl.input.addEventListener("input", () => setTrait(model, "temperature", taus[Number(tauCtl.input.value)]));
  tkCtl.input.addEventListener("input", () => setTrait(model, "T_k", tks[Number(tkCtl.input.value)]));
  scCtl.input.addEventListener("change", () => setTrait(model, "scaled", scCtl.input.checked));

  const logY = (lo, hi) => {
    const s = scale(Math.log10(LOG_LO), Math.log10(LOG_HI), lo, hi);
    return (v) => s(Math.log10(Math.min(LOG_HI, Math.max(LOG_LO, v || LOG_LO))));
  };
  const logTicks = [[1e-4, "0.0001"], [1e-2, "0.01"], [1, "1"], [100, "100"]];

  // The drawing, built for one layout; returns what redraw() updates.
  function build(L) {
    svg.replaceChildren();
    svg.setAttribute("viewBox", `0 0 ${L.w} ${L.h}`);
    el.dataset.layout = L === SAT_LAYOUTS.wide ? "wide" : "narrow";
    const B = L.bars;
    const y = scale(0, 1, B.bottom, B.top);
    yAxis(svg, { x0: B.x0 - 2, x1: B.x1, y, ticks: [0, 0.5, 1], fmtTick: (t) => fmt(t, 1), label: "weight" });
    const bars = svgEl(svg, "path", { class: "attn-bar" });
    const best = svgEl(svg, "rect", { x: B.x0, width: 0, y: y(0), height: 0, class: "attn-bar attn-bar-hi" });
    const uniform = svgEl(svg, "line", { x1: B.x0, x2: B.x1, class: "attn-uniform" });
    const capKeys = svgEl(svg, "text", { x: B.x0, y: B.caption, class: "attn-muted" }, "");
    const capUniform = svgEl(svg, "text", { x: B.x1, y: B.caption + (L === SAT_LAYOUTS.wide ? 0 : 16), "text-anchor": "end", class: "attn-muted" }, "");

    // Gauge 1: tr(J^2) = E|J g|^2 on a linear scale from 0 to its largest value 1/4.
    const G1 = L.gauges[0];
    const g1x = scale(0, 0.25, G1.x0, G1.x1);
    const g1label = "softmax lets through tr(J²)";
    if (G1.labelX === null) svgEl(svg, "text", { x: G1.x0, y: G1.y - 8 }, g1label);
    else svgEl(svg, "text", { x: G1.labelX, y: G1.y + 13, "text-anchor": "end" }, g1label);
    svgEl(svg, "rect", { x: G1.x0, y: G1.y, width: G1.x1 - G1.x0, height: 18, class: "attn-gauge-track" });
    const gauge1 = svgEl(svg, "rect", { x: G1.x0, y: G1.y, width: 0, height: 18, class: "attn-gauge" });
    const uniMark = svgEl(svg, "line", { y1: G1.y - 3, y2: G1.y + 21, class: "attn-pred" });
    svgEl(svg, "text", { x: G1.x0, y: G1.y + 33, class: "attn-muted" }, "0: one-hot");
    const uniText = svgEl(svg, "text", { y: G1.y + 33, "text-anchor": "middle", class: "attn-muted" }, "uniform");
    svgEl(svg, "text", { x: G1.x1, y: G1.y + 33, "text-anchor": "end", class: "attn-muted" }, "0.25: two-way tie");

    // Gauge 2: the gradient reaching q, log scale.
    const G2 = L.gauges[1];
    const g2x = (v) => scale(Math.log10(LOG_LO), Math.log10(LOG_HI), G2.x0, G2.x1)(
      Math.log10(Math.min(LOG_HI, Math.max(LOG_LO, v || LOG_LO))));
    const g2label = "gradient reaching q (log)";
    if (G2.labelX === null) svgEl(svg, "text", { x: G2.x0, y: G2.y - 8 }, g2label);
    else svgEl(svg, "text", { x: G2.labelX, y: G2.y + 13, "text-anchor": "end" }, g2label);
    svgEl(svg, "rect", { x: G2.x0, y: G2.y, width: G2.x1 - G2.x0, height: 18, class: "attn-gauge-track" });
    const gauge2 = svgEl(svg, "rect", { x: G2.x0, y: G2.y, width: 0, height: 18, class: "attn-gauge" });
    logTicks.forEach(([v, text], i) => {
      const anchor = i === 0 ? "start" : i === logTicks.length - 1 ? "end" : "middle";
      svgEl(svg, "text", { x: g2x(v), y: G2.y + 33, "text-anchor": anchor, class: "attn-muted" }, text);
    });

    // Curves against d_k: mean largest weight (both modes), gradient reaching q (median, mean).
    const panel = (P, title, yScale, ticks) => {
      const x = scale(0, dks.length - 1, P.x0, P.x1);
      svgEl(svg, "text", { x: (P.x0 + P.x1) / 2, y: P.top - 12, "text-anchor": "middle" }, title);
      for (const [v, text] of ticks) {
        svgEl(svg, "line", { x1: P.x0, x2: P.x1, y1: yScale(v), y2: yScale(v), class: "attn-grid" });
        svgEl(svg, "text", { x: P.x0 - 4, y: yScale(v) + 4, "text-anchor": "end" }, text);
      }
      dks.forEach((d, i) => {
        if (i % 2 === 0) svgEl(svg, "text", { x: x(i), y: P.bottom + 16, "text-anchor": "middle", class: "attn-muted" }, String(d));
      });
      svgEl(svg, "text", { x: (P.x0 + P.x1) / 2, y: P.bottom + 32, "text-anchor": "middle", class: "attn-muted" }, "dₖ");
      return x;
    };
    const P1 = L.panels[0];
    const cy1 = scale(0, 1, P1.bottom, P1.top);
    const x1 = panel(P1, "mean largest weight", cy1, [[0, "0"], [0.5, "0.5"], [1, "1"]]);
    const lines1 = [svgEl(svg, "polyline", { class: "attn-curve attn-unscaled" }),
      svgEl(svg, "polyline", { class: "attn-curve attn-scaled" })];
    const mark1 = svgEl(svg, "circle", { r: 6, class: "attn-mark" });
    const P2 = L.panels[1];
    const cy2 = logY(P2.bottom, P2.top);
    const x2 = panel(P2, "gradient reaching q", cy2, logTicks);
    const median2 = svgEl(svg, "polyline", { class: "attn-curve attn-active attn-median" });
    const mean2 = svgEl(svg, "polyline", { class: "attn-curve attn-active attn-mean" });
    const mark2 = svgEl(svg, "circle", { r: 6, class: "attn-mark" });

    return (st) => {
      const { row, T, argmax } = st;
      const bw = (B.x1 - B.x0) / T;
      bars.setAttribute("d", barsPath(row, { x0: B.x0, bw, gap: T > 64 ? 0.6 : 2, y }));
      best.setAttribute("x", B.x0 + argmax * bw);
      best.setAttribute("width", Math.max(bw, 2));
      best.setAttribute("y", y(row[argmax]));
      best.setAttribute("height", y(0) - y(row[argmax]));
      uniform.setAttribute("y1", y(1 / T));
      uniform.setAttribute("y2", y(1 / T));
      capKeys.textContent = `the ${T} keys (outlined: the largest weight)`;
      capUniform.textContent = `dashed: uniform weight 1/${T}`;
      gauge1.setAttribute("width", g1x(Math.min(0.25, st.jsq)) - g1x(0));
      const uni = (T - 1) / (T * T);  // tr(J^2) of the uniform row
      uniMark.setAttribute("x1", g1x(uni));
      uniMark.setAttribute("x2", g1x(uni));
      uniText.setAttribute("x", Math.max(g1x(uni), G1.x0 + 96));
      gauge2.setAttribute("width", g2x(st.grad) - g2x(LOG_LO));
      [0, 1].forEach((k) => {
        lines1[k].setAttribute("points", st.meanMax[k].map((v, i) => `${x1(i)},${cy1(v)}`).join(" "));
        lines1[k].classList.toggle("attn-active", k === st.s);
      });
      mark1.setAttribute("cx", x1(st.d));
      mark1.setAttribute("cy", cy1(st.meanMax[st.s][st.d]));
      median2.setAttribute("points", st.median.map((v, i) => `${x2(i)},${cy2(v)}`).join(" "));
      mean2.setAttribute("points", st.mean.map((v, i) => `${x2(i)},${cy2(v)}`).join(" "));
      for (const line of [median2, mean2]) {
        line.classList.toggle("attn-scaled", st.s === 1);
        line.classList.toggle("attn-unscaled", st.s === 0);
      }
      mark2.setAttribute("cx", x2(st.d));
      mark2.setAttribute("cy", cy2(st.median[st.d]));
    };
  }

  const rSd = readout(list, { name: "score_sd", label: "score standard deviation" });
  const rMax = readout(list, { name: "max_weight", label: "largest weight (this row)" });
  const rJsq = readout(list, { name: "jacobian_sq", label: "tr(J²) = E|Jg|² (this row)" });
  const rGrad = readout(list, { name: "grad_q", label: "gradient reaching q (this row)" });
  const rMeanMax = readout(list, { name: "mean_max_weight", label: `mean largest weight (${g.n_queries} rows)` });
  const rMed = readout(list, { name: "median_grad_q", label: `gradient reaching q: median (${g.n_queries} rows)` });
  const rMean = readout(list, { name: "mean_grad_q", label: "… mean" });
  const rP90 = readout(list, { name: "p90_grad_q", label: "… 90th percentile" });

  let layout = null;
  let draw = null;
  function redraw() {
    const d = Math.max(0, dks.indexOf(model.get("d_k")));
    const t = nearestIndex(taus, model.get("temperature"), true);
    const s = model.get("scaled") ? 1 : 0;
    const ti = Math.max(0, tks.indexOf(model.get("T_k")));
    dkCtl.show(d);
    tauCtl.show(t);
    tkCtl.show(ti);
    scCtl.show(s === 1);
    el.classList.toggle("attn-is-unscaled", s === 0);
    const h = g.factor_index[s][t][d];
    const at = (key) => g[key][ti][d][h];
    const row = Array.from(g.rows[ti][d][h], (ch) => (alphabet.indexOf(ch) / 63) ** 2);
    let argmax = 0;
    for (let j = 1; j < row.length; j++) if (row[j] > row[argmax]) argmax = j;
    const along = (key, mode) => dks.map((_, i) => g[key][ti][i][g.factor_index[mode][t][i]]);
    draw({
      row, T: tks[ti], argmax, d, s, jsq: at("jacobian_sq"), grad: at("grad_q"),
      meanMax: [along("mean_max_weight", 0), along("mean_max_weight", 1)],
      median: along("median_grad_q", s), mean: along("mean_grad_q", s),
    });
    rSd.show(g.factors[h], fmtSig(g.factors[h]));
    rMax.show(at("max_weight"), fmt(at("max_weight"), 3));
    rJsq.show(at("jacobian_sq"), fmtSmall(at("jacobian_sq")));
    rGrad.show(at("grad_q"), fmtSmall(at("grad_q")));
    rMeanMax.show(at("mean_max_weight"), fmt(at("mean_max_weight"), 3));
    rMed.show(at("median_grad_q"), fmtSmall(at("median_grad_q")));
    rMean.show(at("mean_grad_q"), fmtSmall(at("mean_grad_q")));
    rP90.show(at("p90_grad_q"), fmtSmall(at("p90_grad_q")));
  }

  // Choose the layout from the drawing's width; re-lay out (next frame, outside the observer's
  // own callback) only when the choice changes.
  const pick = () => {
    const width = svg.getBoundingClientRect().width;
    return width > 0 && width < SAT_NARROW_BELOW ? SAT_LAYOUTS.narrow : SAT_LAYOUTS.wide;
  };
  function relayout(L) {
    layout = L;
    draw = build(L);
    redraw();
  }
  relayout(pick());
  let frameId = 0;
  const observer = new ResizeObserver(() => {
    cancelAnimationFrame(frameId);
    frameId = requestAnimationFrame(() => {
      const L = pick();
      if (L !== layout) relayout(L);
    });
  });
  observer.observe(svg);
  const stop = onTraits(model, ["d_k", "temperature", "scaled", "T_k"], redraw);
  return () => {
    stop();
    observer.disconnect();
    cancelAnimationFrame(frameId);
  };
}

export default { render };
