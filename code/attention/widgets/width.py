"""WidthExplorer: how the spread of q.k grows with d_k, and what 1/sqrt(d_k) does (page "The variance argument").

For each key width d_k (powers of two, 1 to 1024) and correlation rho (0 to 1 in steps of
0.1), the Python side samples scores q.k with k = rho q + sqrt(1 - rho^2) z
(:func:`attention.sample_scores`, fixed seed), histograms them raw and scaled, measures their
mean and variance and puts them beside the prediction of :func:`attention.scaled_score_moments`.
It also computes one attention row: a query against 16 keys of which key 1 is aligned with it
(correlation rho) and the other 15 are independent, scaled and unscaled.
"""

from __future__ import annotations

import functools

import numpy as np
import traitlets

from attention.forward import score_scale
from attention.softmax import softmax
from attention.stats import sample_scores, scaled_score_moments

from ._base import D_KS, GridWidget, check_d_k, read_esm, snap

RHOS = tuple(round(0.1 * i, 1) for i in range(11))
N_SAMPLES = 1000
N_BINS = 40
N_KEYS = 16


def axis_range(rho: float, scaled: bool) -> tuple[float, float]:
    """x range of a histogram: fixed for all widths at one rho, so the growth with d_k shows.

    Wide enough for the predicted mean plus or minus 4 standard deviations at d_k = 1024
    (and about 1).
    """
    d_max = D_KS[-1]
    mean, var = scaled_score_moments(d_max, rho)
    if not scaled:
        mean, var = mean * np.sqrt(d_max), var * d_max
    sd = np.sqrt(var)
    return float(min(-4.0, mean - 4 * sd)), float(max(4.0, mean + 4 * sd))


def _row(d_k: int, rho: float, seed: int) -> tuple[list[float], list[float]]:
    """One query against N_KEYS keys, key 1 aligned (correlation rho): (scaled row, unscaled row)."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(d_k)
    Z = rng.standard_normal((N_KEYS, d_k))
    K = Z.copy()
    K[0] = rho * q + np.sqrt(1.0 - rho**2) * Z[0]
    s = K @ q  # (N_KEYS,) raw scores
    scaled = softmax(s * score_scale(d_k))
    unscaled = softmax(s)
    return [round(float(a), 4) for a in scaled], [round(float(a), 4) for a in unscaled]


def _hist(x: np.ndarray, lo: float, hi: float) -> list[int]:
    counts, _ = np.histogram(x, bins=N_BINS, range=(lo, hi))
    return counts.tolist()


@functools.lru_cache(maxsize=4)
def width_grid(seed: int = 0, n: int = N_SAMPLES) -> dict:
    """Every result the d_k and rho sliders reach, as a JSON-ready dict (cached per seed)."""
    points = {}
    for d_k in D_KS:
        for rho in RHOS:
            raw = sample_scores(d_k, n, rho, scaled=False, seed=seed)
            scaled = raw / np.sqrt(d_k)  # what sample_scores(scaled=True) returns, same draws
            mean_s, var_s = scaled_score_moments(d_k, rho)
            row_scaled, row_unscaled = _row(d_k, rho, seed)
            points[f"{d_k},{rho:.1f}"] = {
                "raw_hist": _hist(raw, *axis_range(rho, False)),
                "scaled_hist": _hist(scaled, *axis_range(rho, True)),
                "raw_mean": round(float(raw.mean()), 4),
                "raw_var": round(float(raw.var()), 4),
                "scaled_mean": round(float(scaled.mean()), 4),
                "scaled_var": round(float(scaled.var()), 4),
                "pred_raw_mean": round(float(mean_s * np.sqrt(d_k)), 4),
                "pred_raw_var": round(float(var_s * d_k), 4),
                "pred_scaled_mean": round(float(mean_s), 4),
                "pred_scaled_var": round(float(var_s), 4),
                "row_scaled": row_scaled,
                "row_unscaled": row_unscaled,
            }
    return {
        "d_ks": list(D_KS), "rhos": list(RHOS), "n": n, "n_keys": N_KEYS, "seed": seed,
        "raw_range": {f"{r:.1f}": axis_range(r, False) for r in RHOS},
        "scaled_range": {f"{r:.1f}": axis_range(r, True) for r in RHOS},
        "points": points,
    }


class WidthExplorer(GridWidget):
    """Score distributions raw and scaled as d_k and the query-key correlation rho vary.

    ``d_k`` must be a power of two from 1 to 1024 (anything else raises
    ``traitlets.TraitError``); ``rho`` snaps to the nearest multiple of 0.1 in [0, 1] and raises
    outside that range. Both are synced with the browser.
    """

    _esm = read_esm("width")
    d_k = traitlets.Int(64).tag(sync=True)
    rho = traitlets.Float(0.0).tag(sync=True)
    fallback_alt = ("Static figure at rho = 0: histograms of raw scores q.k for d_k = 4, 64 and "
                    "1024, spreading out as d_k grows, and of scaled scores q.k / sqrt(d_k), "
                    "which keep the same unit spread at every width.")

    def __init__(self, seed: int = 0, **kwargs):
        super().__init__(**kwargs)
        self._grid = width_grid(seed)

    @traitlets.validate("d_k")
    def _valid_d_k(self, proposal):
        return check_d_k(proposal["value"])

    @traitlets.validate("rho")
    def _valid_rho(self, proposal):
        return snap(proposal["value"], RHOS, "rho")

    def readout(self, d_k: int | None = None, rho: float | None = None) -> dict:
        """The grid point the widget shows at (d_k, rho) (default: the current controls)."""
        d_k = self.d_k if d_k is None else check_d_k(d_k)
        rho = self.rho if rho is None else snap(rho, RHOS, "rho")
        return self._grid["points"][f"{d_k},{rho:.1f}"]

    def fallback_figure(self):
        import matplotlib.pyplot as plt

        from attention.plotting import SCALED, UNSCALED

        g = self._grid
        fig, (ax_r, ax_s) = plt.subplots(1, 2, figsize=(7.2, 3.0))
        for ax, key, color, title in ((ax_r, "raw_hist", UNSCALED, "raw scores $q\\cdot k$"),
                                      (ax_s, "scaled_hist", SCALED,
                                       "scaled scores $q\\cdot k/\\sqrt{d_k}$")):
            lo, hi = g["raw_range" if key == "raw_hist" else "scaled_range"]["0.0"]
            edges = np.linspace(lo, hi, N_BINS + 1)
            for d_k, alpha in ((4, 1.0), (64, 0.6), (1024, 0.35)):
                counts = np.array(g["points"][f"{d_k},0.0"][key], float)
                ax.stairs(counts / counts.max(), edges, color=color, alpha=alpha, lw=1.5,
                          label=f"$d_k$ = {d_k}")
            ax.set_title(title)
            ax.set_yticks([])
            ax.legend(loc="upper right", fontsize=9)
        fig.tight_layout()
        return fig
