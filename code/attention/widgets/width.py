"""WidthExplorer: how the spread of q.k grows with d_k, and what 1/sqrt(d_k) does (page "The variance argument").

For each key width d_k (powers of two, 1 to 1024) the Python side samples N_SAMPLES pairs of
vectors q, z with independent standard normal entries (:func:`attention.sample_score_parts`,
fixed seed) and forms, for every correlation rho from -1 to 1 in steps of 0.1, the scores
q.k = rho |q|^2 + sqrt(1 - rho^2) q.z of the keys k = rho q + sqrt(1 - rho^2) z (the same
draws for every rho). It histograms them raw and scaled, measures their mean, variance and
excess kurtosis, each with its standard error (:func:`attention.sample_statistics`), and puts
them beside the predictions of :func:`attention.scaled_score_moments` and
:func:`attention.score_excess_kurtosis`. Over the scaled histogram the browser draws the counts
a normal distribution with the predicted mean and variance would put in each bin
(:func:`normal_bin_counts`): same variance does not mean same shape. The grid holds every
number the browser draws, so that no computation here has a twin in the ES module. Finally it computes one attention row: a query against 16 keys of
which key 1 is correlated with it (rho) and the other 15 are independent, scaled and unscaled.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import traitlets

from attention.forward import score_scale
from attention.scores import (
    sample_score_parts,
    sample_statistics,
    scaled_score_moments,
    score_excess_kurtosis,
    scores_from_parts,
)
from attention.softmax import softmax

from ._base import D_KS, GridWidget, check_d_k, read_esm

RHOS = tuple(round(0.1 * i, 1) + 0.0 for i in range(-10, 11))  # + 0.0: no "-0.0"
N_SAMPLES = 20_000
N_BINS = 40
N_KEYS = 16


def axis_range(rho: float, scaled: bool) -> tuple[float, float]:
    """x range of a histogram: fixed for all widths at one rho, so the growth with d_k shows.

    Wide enough for the predicted mean plus or minus 4 standard deviations at d_k = 1024
    (and at least -4 to 4).
    """
    d_max = D_KS[-1]
    mean, var = scaled_score_moments(d_max, rho)
    if not scaled:
        mean, var = mean * np.sqrt(d_max), var * d_max
    sd = np.sqrt(var)
    return float(min(-4.0, mean - 4 * sd)), float(max(4.0, mean + 4 * sd))


def snap_rho(value) -> float:
    """The grid's rho nearest to ``value``, or a TraitError naming the allowed range [-1, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise traitlets.TraitError(f"rho must be a number, got {value!r}")
    if not math.isfinite(value) or abs(value) > 1 + 1e-9:
        raise traitlets.TraitError(f"rho must lie between -1 and 1, got {value!r}")
    return RHOS[int(np.argmin(np.abs(np.array(RHOS) - float(value))))]


def normal_bin_counts(mean: float, var: float, lo: float, hi: float, n: int) -> list[int]:
    """Expected counts (rounded) in each of N_BINS bins on [lo, hi] of n draws from N(mean, var)."""
    sd = math.sqrt(var)
    cdf = [0.5 * (1.0 + math.erf((x - mean) / (sd * math.sqrt(2.0))))
           for x in np.linspace(lo, hi, N_BINS + 1)]
    return [round(n * (b - a)) for a, b in zip(cdf[:-1], cdf[1:])]


#: Attention weights are stored as whole numbers of this unit (four decimals, as shown).
ROW_UNIT = 10_000


def _row(d_k: int, rho: float, seed: int) -> tuple[list[int], list[int]]:
    """One query against N_KEYS keys, key 1 correlated with it (rho): the scaled and the
    unscaled row, each weight as a whole number of 1/ROW_UNIT."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(d_k)
    Z = rng.standard_normal((N_KEYS, d_k))
    K = Z.copy()
    K[0] = rho * q + np.sqrt(1.0 - rho**2) * Z[0]
    s = K @ q  # (N_KEYS,) raw scores
    scaled = softmax(s * score_scale(d_k))
    unscaled = softmax(s)
    return ([int(round(float(a) * ROW_UNIT)) for a in scaled],
            [int(round(float(a) * ROW_UNIT)) for a in unscaled])


def _hist(x: np.ndarray, lo: float, hi: float) -> list[int]:
    counts, _ = np.histogram(x, bins=N_BINS, range=(lo, hi))
    return [int(c) for c in counts]


def _r(x: float) -> float:
    return round(float(x), 4)


#: The order of the measured statistics in the grid's ``stats``: (value, standard error) pairs.
STATS = ("raw_mean", "raw_var", "scaled_mean", "scaled_var", "kurtosis")


@functools.lru_cache(maxsize=4)
def width_grid(seed: int = 0, n: int = N_SAMPLES) -> dict:
    """Every result the d_k and rho sliders reach, as a JSON-ready dict (cached per seed).

    It is embedded in the page: each per-point field is a list over d_k of lists over rho.
    ``raw_hist`` and ``scaled_hist`` hold the N_BINS exact counts; ``scaled_normal`` the counts
    of the normal curve drawn over the scaled histogram (:func:`normal_bin_counts`); ``stats``
    the measured mean, variance (raw and scaled) and excess kurtosis, each followed by its
    standard error; ``pred`` their predictions; ``rows`` the scaled then the unscaled attention
    row in units of 1/ROW_UNIT. :meth:`WidthExplorer.readout` names one point's numbers.
    """
    raw_hist, scaled_hist, scaled_normal, stats, pred, rows = [], [], [], [], [], []
    for d_k in D_KS:
        parts = sample_score_parts(d_k, n, seed=seed)
        root = np.sqrt(d_k)
        for field in (raw_hist, scaled_hist, scaled_normal, stats, pred, rows):
            field.append([])
        for rho in RHOS:
            raw = scores_from_parts(*parts, rho)
            st = sample_statistics(raw / root)  # the scaled scores' statistics
            mean_s, var_s = scaled_score_moments(d_k, rho)
            raw_hist[-1].append(_hist(raw, *axis_range(rho, False)))
            scaled_hist[-1].append(_hist(raw / root, *axis_range(rho, True)))
            scaled_normal[-1].append(normal_bin_counts(_r(mean_s), _r(var_s), *axis_range(rho, True), n))
            # Scaling by 1/sqrt(d_k) scales a mean and its error by 1/sqrt(d_k), a variance
            # and its error by 1/d_k, and leaves the kurtosis as it is.
            stats[-1].append([_r(v) for v in (
                st["mean"] * root, st["mean_se"] * root, st["var"] * d_k, st["var_se"] * d_k,
                st["mean"], st["mean_se"], st["var"], st["var_se"],
                st["excess_kurtosis"], st["excess_kurtosis_se"])])
            pred[-1].append([_r(v) for v in (
                mean_s * root, var_s * d_k, mean_s, var_s, score_excess_kurtosis(d_k, rho))])
            rows[-1].append(list(_row(d_k, rho, seed)))
    return {
        "d_ks": list(D_KS), "rhos": list(RHOS), "n": n, "n_keys": N_KEYS, "n_bins": N_BINS,
        "seed": seed, "row_unit": ROW_UNIT,
        "raw_range": {f"{r:.1f}": axis_range(r, False) for r in RHOS},
        "scaled_range": {f"{r:.1f}": axis_range(r, True) for r in RHOS},
        "raw_hist": raw_hist, "scaled_hist": scaled_hist, "scaled_normal": scaled_normal,
        "stats": stats, "pred": pred, "rows": rows,
    }


def grid_point(grid: dict, d_k: int, rho: float) -> dict:
    """One point of :func:`width_grid` by name: histograms of N_BINS counts, the normal curve's
    counts ``scaled_normal``, each statistic (``raw_mean``, ``raw_mean_se``, ``pred_raw_mean``,
    ...) and the rows as weights (as the ES module names them)."""
    i, j = grid["d_ks"].index(d_k), grid["rhos"].index(rho)
    point = {name: grid[name][i][j] for name in ("raw_hist", "scaled_hist", "scaled_normal")}
    values = grid["stats"][i][j]
    for k, name in enumerate(STATS):
        point[name], point[f"{name}_se"] = values[2 * k], values[2 * k + 1]
        point[f"pred_{name}"] = grid["pred"][i][j][k]
    scaled, unscaled = grid["rows"][i][j]
    point["row_scaled"] = [c / grid["row_unit"] for c in scaled]
    point["row_unscaled"] = [c / grid["row_unit"] for c in unscaled]
    return point


class WidthExplorer(GridWidget):
    """Score distributions raw and scaled as d_k and the query-key correlation rho vary.

    ``d_k`` must be a power of two from 1 to 1024 (anything else raises
    ``traitlets.TraitError``); ``rho`` snaps to the nearest multiple of 0.1 in [-1, 1] and raises
    outside that range (:func:`snap_rho`). Both are synced with the browser.
    """

    _esm = read_esm("width")
    d_k = traitlets.Int(64).tag(sync=True)
    rho = traitlets.Float(0.0).tag(sync=True)
    fallback_alt = ("Static figure for a key independent of its query: histograms of raw scores "
                    "q.k at three widths, spreading out as d_k grows, and of the scaled scores "
                    "q.k / sqrt(d_k), whose spread stays about the same at every width.")
    fallback_caption = ("The variance explorer as a static figure, for a key independent of its "
                        "query: histograms of the raw scores <i>q</i>·<i>k</i> (left) and of the "
                        "scaled scores <i>q</i>·<i>k</i>/√<i>d</i><sub>k</sub> (right) at three "
                        "widths, each drawn to the height of its own tallest bar. The raw spread "
                        "grows with <i>d</i><sub>k</sub>; the scaled one stays about the same.")

    def __init__(self, seed: int = 0, **kwargs):
        super().__init__(**kwargs)
        self._grid = width_grid(seed)

    @traitlets.validate("d_k")
    def _valid_d_k(self, proposal):
        return check_d_k(proposal["value"])

    @traitlets.validate("rho")
    def _valid_rho(self, proposal):
        return snap_rho(proposal["value"])

    def readout(self, d_k: int | None = None, rho: float | None = None) -> dict:
        """The grid point the widget shows at (d_k, rho) (default: the current controls)."""
        d_k = self.d_k if d_k is None else check_d_k(d_k)
        rho = self.rho if rho is None else snap_rho(rho)
        return grid_point(self._grid, d_k, rho)

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
                counts = np.array(self.readout(d_k, 0.0)[key], float)
                ax.stairs(counts / counts.max(), edges, color=color, alpha=alpha, lw=1.5,
                          label=f"$d_k$ = {d_k}")
            ax.set_title(title)
            ax.set_yticks([])
            ax.legend(loc="upper right", fontsize=9)
        fig.tight_layout()
        return fig
