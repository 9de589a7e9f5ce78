// TemperatureExplorer: one query, three keys (the first three axes of R^4, so q.k_j = q_j),
// three values (the triangle of the convex-hull exercise), under a temperature.
//
// Unlike the other widgets this module computes the weights itself: the softmax of three
// numbers is exact and cheap, while a grid over three query entries and the temperature
// would hold millions of points. The grid holds the slider positions and the values; the
// tests compare every number shown here with the library's attention at the same setting.

// Softmax of a few numbers, shifted by their maximum (the largest exponent is exp(0) = 1).
function softmaxSmall(s) {
  const m = Math.max(...s);
  const e = s.map((x) => Math.exp(x - m));
  const z = e.reduce((acc, x) => acc + x, 0);
  return e.map((x) => x / z);
}

// Where the output lies, read off its weights (a weight below 1e-3 counts as zero); the same
// words as where_in_triangle in temperature.py.
function whereInTriangle(a, eps = 1e-3) {
  const big = [];
  a.forEach((w, j) => { if (w >= eps) big.push(j + 1); });
  if (big.length === 1) return `at the corner v${big[0]}`;
  if (big.length === 2) return `on the edge v${big[0]} v${big[1]}`;
  return "inside the triangle";
}

function render({ model, el }) {
  const g = model.get("_grid");
  const taus = g.temperatures;
  const steps = g.query_steps;
  const V = g.values;
  const rootDk = Math.sqrt(g.d_k);
  const { controls, svg, list } = frame(el, {
    kind: "temperature",
    title: "Temperature explorer: one query, three keys, three values",
    viewBox: "0 0 320 232",
    svgLabel: "Bar chart of the three attention weights, with each key's effective score below its bar.",
    note: "Keys: the first three axes of ℝ<sup>4</sup> (d<sub>k</sub> = 4), so the raw score of key j "
      + "is the query's entry q<sub>j</sub>; the query's fourth entry, 0, meets no key. Effective "
      + "scores s<sub>j</sub> = q<sub>j</sub>/(τ√d<sub>k</sub>); τ moves on a log scale. Values: the triangle of the "
      + "convex-hull exercise. The dashed curve is the path of the output as τ runs over its "
      + "whole range for the current query; the cross marks the centroid (the plain average of "
      + "the values) and the open circle the point (12, 0) of the exercise. The explorer starts at the "
      + "worked example: q = (0.1, 3.0, 0.1), τ = 1.",
  });
  // The triangle gets a drawing of its own, so that on a narrow screen the two stack and
  // each keeps its text at a readable size.
  const svgO = svgEl(null, "svg", {
    viewBox: "0 0 320 236", role: "img", class: "attn-svg",
    "aria-label": "The triangle of the three values with the output drawn as a point, and the path the output takes as the temperature varies.",
  });
  svg.after(svgO);

  const tauCtl = rangeControl(controls, {
    name: "temperature", label: "Temperature τ", count: taus.length,
    valueText: (i) => `τ = ${fmtSig(taus[i])}`,
  });
  tauCtl.input.addEventListener("input", () => setTrait(model, "temperature", taus[Number(tauCtl.input.value)]));
  const qCtls = [0, 1, 2].map((j) => {
    const ctl = rangeControl(controls, {
      name: `q${j + 1}`, label: `Score on key ${j + 1}, q<sub>${j + 1}</sub>`, count: steps.length,
      valueText: (i) => `q${"₁₂₃"[j]} = ${fmt(steps[i], 1)}`,
    });
    ctl.input.addEventListener("input", () => {
      const q = model.get("query").slice();
      q[j] = steps[Number(ctl.input.value)];
      setTrait(model, "query", q);
    });
    return ctl;
  });

  // Left drawing: the three weights as bars, the effective scores below.
  const y = scale(0, 1, 190, 22);
  yAxis(svg, { x0: 46, x1: 312, y, ticks: [0, 0.5, 1], fmtTick: (t) => fmt(t, 1), label: "weight aⱼ" });
  const bars = [];
  const barLabels = [];
  const scoreLabels = [];
  for (let j = 0; j < 3; j++) {
    const x = 62 + j * 84;
    bars.push(svgEl(svg, "rect", { x, width: 56, y: y(0), height: 0, class: "attn-bar" }));
    barLabels.push(svgEl(svg, "text", { x: x + 28, y: y(0) - 4, "text-anchor": "middle", class: "attn-value" }, ""));
    svgEl(svg, "text", { x: x + 28, y: 208, "text-anchor": "middle" }, `key ${j + 1}`);
    scoreLabels.push(svgEl(svg, "text", { x: x + 28, y: 225, "text-anchor": "middle", class: "attn-muted" }, ""));
  }

  // Right drawing: the triangle, its centroid, the point (12, 0) of the exercise, the path
  // of the output over every temperature, and the output itself.
  const vx = scale(-1, 12.5, 30, 300);
  const vy = scale(-1, 11, 226, 10);
  svgEl(svgO, "polygon", { points: V.map((v) => `${vx(v[0])},${vy(v[1])}`).join(" "), class: "attn-hull" });
  const cx = (V[0][0] + V[1][0] + V[2][0]) / 3;
  const cy = (V[0][1] + V[1][1] + V[2][1]) / 3;
  svgEl(svgO, "path", { d: `M${vx(cx) - 5},${vy(cy)}h10M${vx(cx)},${vy(cy) - 5}v10`, class: "attn-pred-sd" });
  svgEl(svgO, "circle", { cx: vx(12), cy: vy(0), r: 4, class: "attn-pred-sd" });
  svgEl(svgO, "text", { x: vx(12), y: vy(0) - 9, "text-anchor": "middle", class: "attn-muted" }, "(12, 0)");
  const path = svgEl(svgO, "polyline", { points: "", class: "attn-path" });
  const anchors = [["middle", 0, 18], ["middle", 0, 18], ["start", 10, 4]];
  V.forEach((v, j) => {
    svgEl(svgO, "circle", { cx: vx(v[0]), cy: vy(v[1]), r: 3.5, class: "attn-vertex" });
    const [anchor, dx, dy] = anchors[j];
    svgEl(svgO, "text", { x: vx(v[0]) + dx, y: vy(v[1]) + dy, "text-anchor": anchor },
      `v${"₁₂₃"[j]} = (${v[0]}, ${v[1]})`);
  });
  const point = svgEl(svgO, "circle", { r: 6, class: "attn-point" });
  const pointLabel = svgEl(svgO, "text", { class: "attn-value" }, "o");

  const rTau = readout(list, { name: "temperature", label: "temperature τ" });
  const rQuery = readout(list, { name: "query", label: "query q (its fourth entry is 0)" });
  const rScores = readout(list, { name: "scores", label: "effective scores q<sub>j</sub>/(τ√d<sub>k</sub>)" });
  const rWeights = readout(list, { name: "weights", label: "weights a = softmax(s)" });
  const rOut = readout(list, { name: "output", label: "output o = Σ a<sub>j</sub>v<sub>j</sub>" });
  const rWhere = readout(list, { name: "where", label: "where o lies (weights below 0.001 count as 0)" });

  const outputOf = (a) => [0, 1].map((m) => a[0] * V[0][m] + a[1] * V[1][m] + a[2] * V[2][m]);

  function redraw() {
    const i = nearestIndex(taus, model.get("temperature"), true);
    const tau = taus[i];
    const q = model.get("query").map((x) => steps[nearestIndex(steps, x)]);
    const s = q.map((x) => x / (tau * rootDk));
    const a = softmaxSmall(s);
    const o = outputOf(a);
    tauCtl.show(i);
    qCtls.forEach((ctl, j) => ctl.show(nearestIndex(steps, q[j])));
    a.forEach((w, j) => {
      bars[j].setAttribute("y", y(w));
      bars[j].setAttribute("height", y(0) - y(w));
      barLabels[j].setAttribute("y", y(w) - 4);
      barLabels[j].textContent = fmt(w, 3);
      scoreLabels[j].textContent = `s${"₁₂₃"[j]} = ${s[j] < 0 ? "−" : ""}${fmtSig(Math.abs(s[j]))}`;
    });
    path.setAttribute("points", taus.map((t) => {
      const p = outputOf(softmaxSmall(q.map((x) => x / (t * rootDk))));
      return `${vx(p[0]).toFixed(2)},${vy(p[1]).toFixed(2)}`;
    }).join(" "));
    point.setAttribute("cx", vx(o[0]));
    point.setAttribute("cy", vy(o[1]));
    // The label sits inside the triangle's bounding box, away from the right edge.
    pointLabel.setAttribute("x", vx(o[0]) + (o[0] > 8 ? -18 : 10));
    pointLabel.setAttribute("y", vy(o[1]) + (o[1] < 1.5 ? -8 : 4));
    rTau.show(tau, fmtSig(tau));
    rQuery.show(q, `(${q.map((x) => fmt(x, 1)).join(", ")}, 0)`);
    rScores.show(s, `(${s.map((x) => fmt(x, 3)).join(", ")})`);
    rWeights.show(a, `(${a.map((w) => fmt(w, 3)).join(", ")})`);
    rOut.show(o, `(${fmt(o[0], 2)}, ${fmt(o[1], 2)})`);
    const where = whereInTriangle(a);
    rWhere.show(JSON.stringify(where), where);  // data-value holds JSON, like the others
  }
  redraw();
  return onTraits(model, ["temperature", "query"], redraw);
}

export default { render };
