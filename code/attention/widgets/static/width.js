// WidthExplorer: raw and scaled score distributions against d_k and the correlation rho.
// Two layouts of the same drawing: side by side when the drawing is wide, stacked in one
// column when it is narrow (a phone), so that its text is never drawn smaller than 10 px.

const WIDTH_LAYOUTS = {
  wide: {
    w: 680, h: 430,
    hists: [{ x0: 40, w: 290, top: 0 }, { x0: 370, w: 290, top: 0 }],
    rows: [{ x0: 60, w: 270, top: 230 }, { x0: 390, w: 270, top: 230 }],
  },
  narrow: {
    w: 340, h: 816,
    hists: [{ x0: 30, w: 290, top: 0 }, { x0: 30, w: 290, top: 212 }],
    rows: [{ x0: 40, w: 280, top: 440 }, { x0: 40, w: 280, top: 628 }],
  },
};
// Below this drawn width (px) the wide layout would scale its 12 px text under 10 px.
const WIDTH_NARROW_BELOW = 600;

// Round tick values (steps of 1, 2, 2.5 or 5 times a power of ten), at most maxTicks of them,
// always including 0 when it lies inside [lo, hi].
function niceTicks(lo, hi, maxTicks) {
  const span = hi - lo;
  const mag = 10 ** Math.floor(Math.log10(span / maxTicks));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => span / s <= maxTicks);
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step) {
    ticks.push(Math.abs(v) < 1e-9 * step ? 0 : v);
  }
  const digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9) + (step / mag === 2.5 ? 1 : 0));
  return { ticks, digits };
}

// "measured ± standard error (predicted)", to two significant digits of the standard error.
function withError(m, se, pred) {
  const digits = se > 0 ? Math.min(4, Math.max(0, 1 - Math.floor(Math.log10(se)))) : 2;
  return `${fmt(m, digits)} ± ${fmt(se, digits)} (${fmt(pred, digits)})`;
}

function render({ model, el }) {
  const g = model.get("_grid");
  const dks = g.d_ks;
  const rhos = g.rhos;
  const { controls, svg, list } = frame(el, {
    kind: "width",
    title: "Score spread against key width and query–key correlation",
    viewBox: "0 0 680 430",
    svgLabel: "Histograms of raw scores q·k and scaled scores q·k/√dₖ with their predicted means, the scaled one with the normal curve of the predicted mean and variance, and the attention row one query gives over 16 keys, scaled and unscaled.",
    note: `Histograms: ${g.n.toLocaleString("en")} sampled pairs with k = ρq + √(1−ρ²)z, independent standard normal entries, `
      + "fixed seed (the same draws at every ρ); each axis is fixed for all widths at one ρ, so you can watch the spread grow. "
      + "Dashed line: the predicted mean; bracket: the predicted mean ± one standard deviation; "
      + "curve over the scaled histogram: a normal distribution with the predicted mean and variance. "
      + "Readouts: measured ± one standard error (predicted). "
      + "Rows: one query against 16 keys, key 1 correlated with it (ρ), keys 2–16 independent.",
  });
  const dkCtl = rangeControl(controls, {
    name: "d_k", label: "Key width d<sub>k</sub>", count: dks.length,
    valueText: (i) => `dₖ = ${dks[i]}`,  // dₖ: the label's d<sub>k</sub> as plain text
  });
  const rhoCtl = rangeControl(controls, {
    name: "rho", label: "Correlation ρ of query and key", count: rhos.length,
    valueText: (i) => `ρ = ${fmt(rhos[i], 1)}`,
  });
  dkCtl.input.addEventListener("input", () => setTrait(model, "d_k", dks[Number(dkCtl.input.value)]));
  rhoCtl.input.addEventListener("input", () => setTrait(model, "rho", rhos[Number(rhoCtl.input.value)]));
  const nb = g.n_bins;
  const STATS = ["raw_mean", "raw_var", "scaled_mean", "scaled_var", "kurtosis"];
  // One grid point (d_k index i, rho index j), with the names Python's readout uses.
  function point(i, j) {
    const p = {
      raw_hist: g.raw_hist[i][j],
      scaled_hist: g.scaled_hist[i][j],
      scaled_normal: g.scaled_normal[i][j],
      row_scaled: g.rows[i][j][0].map((c) => c / g.row_unit),
      row_unscaled: g.rows[i][j][1].map((c) => c / g.row_unit),
    };
    STATS.forEach((name, k) => {
      p[name] = g.stats[i][j][2 * k];
      p[`${name}_se`] = g.stats[i][j][2 * k + 1];
      p[`pred_${name}`] = g.pred[i][j][k];
    });
    return p;
  }

  // A histogram on a fixed axis (per rho), heights relative to the tallest bin or curve point.
  function histPanel({ x0, w, top }, title, cls, withCurve) {
    const yb = top + 190;
    const ht = 140;
    svgEl(svg, "text", { x: x0 + w / 2, y: top + 22, "text-anchor": "middle" }, title);
    svgEl(svg, "line", { x1: x0, x2: x0 + w, y1: yb, y2: yb, class: "attn-axis-line" });
    const bins = svgEl(svg, "path", { class: `attn-bar ${cls}` });
    const curve = withCurve ? svgEl(svg, "path", { class: "attn-normal" }) : null;
    const mean = svgEl(svg, "line", { y1: yb - ht - 6, y2: yb, class: "attn-pred" });
    const sd = svgEl(svg, "path", { class: "attn-pred-sd" });
    const tickGroup = svgEl(svg, "g", { class: "attn-ticks" });
    let drawnRange = null;
    return {
      draw(counts, normal, lo, hi, predMean, predVar) {
        const max = Math.max(1, ...counts, ...(normal || []));
        const bw = w / nb;
        const y = (c) => yb - (ht * c) / max;
        bins.setAttribute("d", barsPath(counts, { x0, bw, gap: 0, y }));
        if (curve) {
          curve.setAttribute("d", normal.map((c, j) => `${j ? "L" : "M"}${(x0 + (j + 0.5) * bw).toFixed(2)},${y(c).toFixed(2)}`).join(""));
        }
        const x = scale(lo, hi, x0, x0 + w);
        const clamp = (v) => Math.min(x0 + w, Math.max(x0, v));
        mean.setAttribute("x1", clamp(x(predMean)));
        mean.setAttribute("x2", clamp(x(predMean)));
        const s = Math.sqrt(predVar);
        const a = clamp(x(predMean - s));
        const b = clamp(x(predMean + s));
        sd.setAttribute("d", `M${a},${yb - ht - 2}v-6M${a},${yb - ht - 5}H${b}M${b},${yb - ht - 2}v-6`);
        const key = `${lo},${hi}`;
        if (key !== drawnRange) {  // the axis changes only with rho
          drawnRange = key;
          tickGroup.replaceChildren();
          const { ticks, digits } = niceTicks(lo, hi, 5);
          for (const v of ticks) {
            svgEl(tickGroup, "line", { x1: x(v), x2: x(v), y1: yb, y2: yb + 4, class: "attn-axis-line" });
            svgEl(tickGroup, "text", { x: x(v), y: yb + 17, "text-anchor": "middle", class: "attn-muted attn-tick" }, fmt(v, digits));
          }
        }
      },
    };
  }

  // Attention rows: one query against 16 keys, key 1 correlated with it.
  function rowPanel({ x0, w, top }, title, cls) {
    const y = scale(0, 1, top + 160, top + 30);
    svgEl(svg, "text", { x: x0 + w / 2, y: top + 14, "text-anchor": "middle" }, title);
    for (const t of [0, 0.5, 1]) {
      svgEl(svg, "line", { x1: x0, x2: x0 + w, y1: y(t), y2: y(t), class: "attn-grid" });
      svgEl(svg, "text", { x: x0 - 4, y: y(t) + 4, "text-anchor": "end" }, fmt(t, 1));
    }
    const bw = w / g.n_keys;
    const bars = svgEl(svg, "path", { class: `attn-bar ${cls}` });
    const key1 = svgEl(svg, "rect", { x: x0 + 1, width: bw - 2, y: y(0), height: 0, class: `attn-bar ${cls} attn-bar-hi` });
    svgEl(svg, "text", { x: x0 + bw / 2, y: top + 176, "text-anchor": "start", class: "attn-muted" }, "↑ key 1 (correlated)");
    return {
      draw(row) {
        bars.setAttribute("d", barsPath(row.slice(1), { x0: x0 + bw, bw, y }));
        key1.setAttribute("y", y(row[0]));
        key1.setAttribute("height", y(0) - y(row[0]));
      },
    };
  }

  let layoutName = null;
  let panels = null;
  function build(name) {
    layoutName = name;
    const L = WIDTH_LAYOUTS[name];
    svg.replaceChildren();
    svg.setAttribute("viewBox", `0 0 ${L.w} ${L.h}`);
    el.dataset.layout = name;
    panels = {
      raw: histPanel(L.hists[0], "raw scores q·k", "attn-unscaled", false),
      scaled: histPanel(L.hists[1], "scaled scores q·k / √dₖ", "attn-scaled", true),
      // The rows in the histograms' order: unscaled (raw) on the left or first, scaled beside it.
      rowScaled: rowPanel(L.rows[1], "attention row, scaled", "attn-scaled"),
      rowUnscaled: rowPanel(L.rows[0], "attention row, unscaled", "attn-unscaled"),
    };
  }

  const rDk = readout(list, { name: "d_k", label: "d<sub>k</sub>" });
  const rRho = readout(list, { name: "rho", label: "ρ" });
  const rRawMean = readout(list, { name: "raw_mean", label: "raw mean: measured ± s.e. (predicted)" });
  const rRawVar = readout(list, { name: "raw_var", label: "raw variance: measured ± s.e. (predicted)" });
  const rScMean = readout(list, { name: "scaled_mean", label: "scaled mean: measured ± s.e. (predicted)" });
  const rScVar = readout(list, { name: "scaled_var", label: "scaled variance: measured ± s.e. (predicted)" });
  const rKurt = readout(list, { name: "kurtosis", label: "excess kurtosis: measured ± s.e. (predicted)" });
  const rRow = readout(list, { name: "row_key1", label: "weight on key 1: unscaled, scaled" });

  function redraw() {
    const d = Math.max(0, dks.indexOf(model.get("d_k")));
    const r = nearestIndex(rhos, model.get("rho"));
    dkCtl.show(d);
    rhoCtl.show(r);
    const rho = rhos[r];
    const key = fmt(rho, 1);
    const p = point(d, r);
    const [rlo, rhi] = g.raw_range[key];
    const [slo, shi] = g.scaled_range[key];
    panels.raw.draw(p.raw_hist, null, rlo, rhi, p.pred_raw_mean, p.pred_raw_var);
    panels.scaled.draw(p.scaled_hist, p.scaled_normal, slo, shi, p.pred_scaled_mean, p.pred_scaled_var);
    panels.rowScaled.draw(p.row_scaled);
    panels.rowUnscaled.draw(p.row_unscaled);
    rDk.show(dks[d], String(dks[d]));
    rRho.show(rho, fmt(rho, 1));
    for (const [out, name, pred] of [[rRawMean, "raw_mean", "pred_raw_mean"], [rRawVar, "raw_var", "pred_raw_var"],
      [rScMean, "scaled_mean", "pred_scaled_mean"], [rScVar, "scaled_var", "pred_scaled_var"],
      [rKurt, "kurtosis", "pred_kurtosis"]]) {
      out.show([p[name], p[`${name}_se`], p[pred]], withError(p[name], p[`${name}_se`], p[pred]));
    }
    rRow.show([p.row_unscaled[0], p.row_scaled[0]], `${fmt(p.row_unscaled[0], 3)}, ${fmt(p.row_scaled[0], 3)}`);
  }

  // Choose the layout from the drawing's width; re-lay out (next frame, outside the observer's
  // own callback) only when the choice changes.
  const pick = () => {
    const width = svg.getBoundingClientRect().width;
    return width > 0 && width < WIDTH_NARROW_BELOW ? "narrow" : "wide";
  };
  build(pick());
  redraw();
  let frameId = 0;
  const observer = new ResizeObserver(() => {
    cancelAnimationFrame(frameId);
    frameId = requestAnimationFrame(() => {
      const name = pick();
      if (name !== layoutName) {
        build(name);
        redraw();
      }
    });
  });
  observer.observe(svg);
  const stop = onTraits(model, ["d_k", "rho"], redraw);
  return () => {
    stop();
    observer.disconnect();
    cancelAnimationFrame(frameId);
  };
}

export default { render };
