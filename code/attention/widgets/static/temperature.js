// TemperatureExplorer: the hand-checkable example of page "Soft retrieval" under a temperature.

function render({ model, el }) {
  const g = model.get("_grid");
  const taus = g.temperatures;
  const { controls, svg, list } = frame(el, {
    kind: "temperature",
    title: "Temperature on the hand-checkable example",
    viewBox: "0 0 640 270",
    svgLabel: "Bar chart of the three attention weights, and the output drawn as a point inside the triangle of the three values.",
    note: "Keys e<sub>1</sub>, e<sub>2</sub>, e<sub>3</sub> of ℝ<sup>4</sup>, query [0.1, 3.0, 0.1, 0.0], d<sub>k</sub> = 4. "
      + "The picture uses the values v<sub>1</sub> = [10, 10], v<sub>2</sub> = [20, 30], v<sub>3</sub> = [30, 10]: "
      + "the text's values [10, 10], [20, 20], [30, 30] lie on one line, and since keys 1 and 3 always get equal "
      + "weight their output stays at [20, 20] at every temperature. The weights do not depend on the values.",
  });
  const tauCtl = rangeControl(controls, {
    name: "temperature", label: "Temperature τ (log scale)", count: taus.length,
    valueText: (i) => `τ = ${fmtSig(taus[i])}`,
  });
  tauCtl.input.addEventListener("input", () => setTrait(model, "temperature", taus[Number(tauCtl.input.value)]));

  // Left: the three weights as bars.
  const y = scale(0, 1, 220, 30);
  yAxis(svg, { x0: 58, x1: 300, y, ticks: [0, 0.25, 0.5, 0.75, 1], fmtTick: (t) => fmt(t, 2), label: "weight a_j" });
  const bars = [];
  const labels = [];
  for (let j = 0; j < 3; j++) {
    const x = 78 + j * 76;
    bars.push(svgEl(svg, "rect", { x, width: 52, y: y(0), height: 0, class: j === 1 ? "attn-bar attn-bar-hi" : "attn-bar" }));
    labels.push(svgEl(svg, "text", { x: x + 26, y: y(0) - 4, "text-anchor": "middle", class: "attn-value" }, ""));
    svgEl(svg, "text", { x: x + 26, y: 240, "text-anchor": "middle" }, `key ${j + 1}`);
    svgEl(svg, "text", { x: x + 26, y: 256, "text-anchor": "middle", class: "attn-muted" }, `s = ${g.scores[j]}`);
  }

  // Right: the triangle of the values, the path of the output over all temperatures, the point.
  const vx = scale(5, 35, 370, 610);
  const vy = scale(5, 35, 250, 10);
  const V = g.values;
  svgEl(svg, "polygon", { points: V.map((v) => `${vx(v[0])},${vy(v[1])}`).join(" "), class: "attn-hull" });
  svgEl(svg, "polyline", { points: g.outputs.map((o) => `${vx(o[0])},${vy(o[1])}`).join(" "), class: "attn-path" });
  V.forEach((v, j) => {
    svgEl(svg, "circle", { cx: vx(v[0]), cy: vy(v[1]), r: 3.5, class: "attn-vertex" });
    svgEl(svg, "text", { x: vx(v[0]), y: vy(v[1]) + (j === 1 ? -9 : 17), "text-anchor": "middle" },
      `v${j + 1} = [${v[0]}, ${v[1]}]`);
  });
  const point = svgEl(svg, "circle", { r: 7, class: "attn-point" });
  const pointLabel = svgEl(svg, "text", { class: "attn-value" }, "o");

  const rTau = readout(list, { name: "temperature", label: "temperature τ" });
  const rScores = readout(list, { name: "scores", label: "scores s/(τ√d<sub>k</sub>)" });
  const rWeights = readout(list, { name: "weights", label: "weights a" });
  const rOut = readout(list, { name: "output", label: "output o = Σ a<sub>j</sub>v<sub>j</sub>" });

  function redraw() {
    const i = nearestIndex(taus, model.get("temperature"), true);
    const tau = taus[i];
    const a = g.weights[i];
    const o = g.outputs[i];
    tauCtl.show(i);
    a.forEach((w, j) => {
      bars[j].setAttribute("y", y(w));
      bars[j].setAttribute("height", y(0) - y(w));
      labels[j].setAttribute("y", y(w) - 4);
      labels[j].textContent = fmt(w, 3);
    });
    point.setAttribute("cx", vx(o[0]));
    point.setAttribute("cy", vy(o[1]));
    pointLabel.setAttribute("x", vx(o[0]) + 10);
    pointLabel.setAttribute("y", vy(o[1]) + 4);
    const c = 1 / (tau * Math.sqrt(g.d_k));
    rTau.show(tau, fmtSig(tau));
    rScores.show(g.scores.map((s) => s * c), `[${g.scores.map((s) => fmt(s * c, 3)).join(", ")}]`);
    rWeights.show(a, `[${a.map((w) => fmt(w, 3)).join(", ")}]`);
    rOut.show(o, `[${fmt(o[0], 2)}, ${fmt(o[1], 2)}]`);
  }
  redraw();
  return onTraits(model, ["temperature"], redraw);
}

export default { render };
