// WidthExplorer: raw and scaled score distributions against d_k and the correlation rho.

function render({ model, el }) {
  const g = model.get("_grid");
  const dks = g.d_ks;
  const rhos = g.rhos;
  const { controls, svg, list } = frame(el, {
    kind: "width",
    title: "Score spread against key width and query–key correlation",
    viewBox: "0 0 680 420",
    svgLabel: "Histograms of raw scores q·k and scaled scores q·k/√d_k with their predicted means, and the attention row one query gives over 16 keys, scaled and unscaled.",
    note: `Histograms: ${g.n} sampled pairs with k = ρq + √(1−ρ²)z, unit-variance entries, fixed seed; `
      + "each axis is fixed for all widths at one ρ, so you can watch the spread grow. Dashed: the predicted mean; "
      + "bracket: the predicted mean ± one standard deviation. Rows: one query against 16 keys, key 1 aligned "
      + "with it (correlation ρ), keys 2–16 independent.",
  });
  const dkCtl = rangeControl(controls, {
    name: "d_k", label: "Key width d<sub>k</sub>", count: dks.length,
    valueText: (i) => `d_k = ${dks[i]}`,
  });
  const rhoCtl = rangeControl(controls, {
    name: "rho", label: "Correlation ρ of query and key", count: rhos.length,
    valueText: (i) => `ρ = ${fmt(rhos[i], 1)}`,
  });
  dkCtl.input.addEventListener("input", () => setTrait(model, "d_k", dks[Number(dkCtl.input.value)]));
  rhoCtl.input.addEventListener("input", () => setTrait(model, "rho", rhos[Number(rhoCtl.input.value)]));

  // Two histograms, each drawn as bins of a fixed axis (per rho), heights relative to the tallest bin.
  function histPanel(x0, title, cls) {
    const w = 290;
    const yb = 190;
    const ht = 140;
    svgEl(svg, "text", { x: x0 + w / 2, y: 22, "text-anchor": "middle" }, title);
    svgEl(svg, "line", { x1: x0, x2: x0 + w, y1: yb, y2: yb, class: "attn-axis-line" });
    const nb = Object.values(g.points)[0].raw_hist.length;
    const bins = svgEl(svg, "path", { class: `attn-bar ${cls}` });
    const mean = svgEl(svg, "line", { y1: yb - ht - 6, y2: yb, class: "attn-pred" });
    const sd = svgEl(svg, "path", { class: "attn-pred-sd" });
    const ticks = [0, 1, 2].map(() => svgEl(svg, "text", { y: yb + 16, "text-anchor": "middle", class: "attn-muted" }, ""));
    return {
      draw(counts, lo, hi, predMean, predVar) {
        const max = Math.max(1, ...counts);
        bins.setAttribute("d", barsPath(counts, { x0, bw: w / nb, gap: 0, y: (c) => yb - (ht * c) / max }));
        const x = scale(lo, hi, x0, x0 + w);
        const clamp = (v) => Math.min(x0 + w, Math.max(x0, v));
        mean.setAttribute("x1", clamp(x(predMean)));
        mean.setAttribute("x2", clamp(x(predMean)));
        const s = Math.sqrt(predVar);
        const a = clamp(x(predMean - s));
        const b = clamp(x(predMean + s));
        sd.setAttribute("d", `M${a},${yb - ht - 2}v-6M${a},${yb - ht - 5}H${b}M${b},${yb - ht - 2}v-6`);
        const tv = [lo, 0, hi];
        tv.forEach((v, k) => {
          ticks[k].setAttribute("x", x(v));
          ticks[k].textContent = Math.abs(v) >= 10 ? fmt(v, 0) : fmt(v, 1);
        });
      },
    };
  }
  const rawPanel = histPanel(40, "raw scores q·k", "attn-unscaled");
  const scaledPanel = histPanel(370, "scaled scores q·k / √d_k", "attn-scaled");

  // Attention rows: one query against 16 keys, key 1 aligned with it.
  function rowPanel(x0, title, cls) {
    const w = 270;
    const y = scale(0, 1, 390, 260);
    svgEl(svg, "text", { x: x0 + w / 2, y: 244, "text-anchor": "middle" }, title);
    for (const t of [0, 0.5, 1]) {
      svgEl(svg, "line", { x1: x0, x2: x0 + w, y1: y(t), y2: y(t), class: "attn-grid" });
      svgEl(svg, "text", { x: x0 - 4, y: y(t) + 4, "text-anchor": "end" }, fmt(t, 1));
    }
    const bw = w / g.n_keys;
    const bars = svgEl(svg, "path", { class: `attn-bar ${cls}` });
    const key1 = svgEl(svg, "rect", { x: x0 + 1, width: bw - 2, y: y(0), height: 0, class: `attn-bar ${cls} attn-bar-hi` });
    svgEl(svg, "text", { x: x0 + bw / 2, y: 406, "text-anchor": "start", class: "attn-muted" }, "↑ key 1 (aligned)");
    return {
      draw(row) {
        bars.setAttribute("d", barsPath(row.slice(1), { x0: x0 + bw, bw, y }));
        key1.setAttribute("y", y(row[0]));
        key1.setAttribute("height", y(0) - y(row[0]));
      },
    };
  }
  const rowScaled = rowPanel(60, "attention row, scaled", "attn-scaled");
  const rowUnscaled = rowPanel(390, "attention row, unscaled", "attn-unscaled");

  const rDk = readout(list, { name: "d_k", label: "d<sub>k</sub>" });
  const rRho = readout(list, { name: "rho", label: "ρ" });
  const rRawMean = readout(list, { name: "raw_mean", label: "raw mean: measured (predicted)" });
  const rRawVar = readout(list, { name: "raw_var", label: "raw variance: measured (predicted)" });
  const rScMean = readout(list, { name: "scaled_mean", label: "scaled mean: measured (predicted)" });
  const rScVar = readout(list, { name: "scaled_var", label: "scaled variance: measured (predicted)" });
  const rRow = readout(list, { name: "row_key1", label: "weight on key 1: scaled, unscaled" });

  function redraw() {
    const d = Math.max(0, dks.indexOf(model.get("d_k")));
    const r = nearestIndex(rhos, model.get("rho"));
    dkCtl.show(d);
    rhoCtl.show(r);
    const rho = rhos[r];
    const key = fmt(rho, 1);
    const p = g.points[`${dks[d]},${key}`];
    const [rlo, rhi] = g.raw_range[key];
    const [slo, shi] = g.scaled_range[key];
    rawPanel.draw(p.raw_hist, rlo, rhi, p.pred_raw_mean, p.pred_raw_var);
    scaledPanel.draw(p.scaled_hist, slo, shi, p.pred_scaled_mean, p.pred_scaled_var);
    rowScaled.draw(p.row_scaled);
    rowUnscaled.draw(p.row_unscaled);
    const two = (m, q) => `${fmt(m, 2)} (${fmt(q, 2)})`;
    rDk.show(dks[d], String(dks[d]));
    rRho.show(rho, fmt(rho, 1));
    rRawMean.show([p.raw_mean, p.pred_raw_mean], two(p.raw_mean, p.pred_raw_mean));
    rRawVar.show([p.raw_var, p.pred_raw_var], two(p.raw_var, p.pred_raw_var));
    rScMean.show([p.scaled_mean, p.pred_scaled_mean], two(p.scaled_mean, p.pred_scaled_mean));
    rScVar.show([p.scaled_var, p.pred_scaled_var], two(p.scaled_var, p.pred_scaled_var));
    rRow.show([p.row_scaled[0], p.row_unscaled[0]], `${fmt(p.row_scaled[0], 3)}, ${fmt(p.row_unscaled[0], 3)}`);
  }
  redraw();
  return onTraits(model, ["d_k", "rho"], redraw);
}

export default { render };
