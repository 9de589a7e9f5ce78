"""SaturationExplorer, the chapter's centerpiece (page "Saturation and the softmax Jacobian").

Controls: d_k (powers of two, 1 to 1024), temperature tau (powers of sqrt(2), 1/8 to 1024), a
scaled/unscaled switch and the number of keys T_k (8, 32 or 128). It shows one query's weights
over its keys, the row's largest weight, two gauges of the gradient (what the softmax lets
through, tr(J^2), and the gradient that reaches the query) and where the current setting sits
on two curves against d_k (mean largest weight; median and mean gradient reaching the query).

The draw (:func:`attention.row_score_draws`, fixed seed): ``n_queries`` queries, each with 128
keys, unit-variance normal entries. Only the scores and the gradient are needed, and for normal
keys both follow from each key's coordinate t_j along its query (a standard normal) and the
query's length |q| (the square root of a chi-square with d_k degrees of freedom), which are
drawn directly: the scaled scores z_j = |q| t_j / sqrt(d_k) are exactly distributed as
q.k_j / sqrt(d_k). Every width has the same key directions t and its own query lengths, so
moving d_k shows the same rows growing sharper or not; the setting T_k uses the first T_k keys,
so a larger T_k adds keys to the same row.

The setting's scores are f z_j with f = 1/tau when scaled and f = sqrt(d_k)/tau when not:
everything the widget shows depends on (d_k, T_k, f) alone, and f runs over powers of sqrt(2)
(``FACTORS``) because tau and sqrt(d_k) do. So dividing by sqrt(d_k) is exactly the
temperature sqrt(d_k): both select the same grid entry. f is the scores' standard deviation
(in expectation over |q|).

The gradient reaching the query is :func:`attention.query_gradient_rms` with
c = f / sqrt(d_k): the root-mean-square of dq = c K^T J g over the upstream gradient g and over
the parts of the keys orthogonal to q, which the scores do not see. Per grid entry: the first
query's weights, one character per key (``encode_weights``: the character's index i in
``ALPHABET`` stands for the weight (i/63)^2, at most about three pixels of bar height off); its
largest weight, tr(J^2) (:func:`attention.jacobian_frobenius_sq`) and gradient reaching the
query; and over all queries the mean largest weight and the median, mean and 90th percentile of
that gradient. They are computed in float32 and rounded to four significant digits, which keeps
the page light and its execution short; values below float32's range show as 0.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import traitlets

from attention.softmax import jacobian_frobenius_sq, softmax
from attention.scores import query_gradient_rms, row_score_draws

from ._base import D_KS, GridWidget, check_d_k, read_esm, snap

#: Temperatures 2^(k/2), k = -6..20: 1/8 to 1024; every sqrt(d_k) of the d_k slider is on it.
TEMPERATURES = tuple(float(2 ** (k / 2)) for k in range(-6, 21))
#: Numbers of keys the T_k control offers.
T_KS = (8, 32, 128)
#: Score multipliers f = 2^(h/2), h = -20..16: every (d_k, tau, scaled) lands on one of them.
H_MIN, H_MAX = -20, 16
FACTORS = tuple(float(2 ** (h / 2)) for h in range(H_MIN, H_MAX + 1))
N_QUERIES = 500
#: The draw's seed. Its first query, the row drawn as bars, is like most queries at large
#: unscaled widths nearly one-hot there; the curves and readouts summarise all of them.
SEED = 3
#: 64 characters; index i encodes the weight (i / 63)^2.
ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def factor_index(d_k: int, temperature: float, scaled: bool) -> int:
    """Index into ``FACTORS`` of the multiplier f = (1 if scaled else sqrt(d_k)) / tau."""
    e = D_KS.index(d_k)
    k = TEMPERATURES.index(temperature) - 6  # tau = 2^(k/2)
    return (0 if scaled else e) - k - H_MIN


def encode_weights(a) -> str:
    """One character per weight: the nearest of 64 levels on a square-root scale."""
    idx = np.rint(np.sqrt(np.clip(np.asarray(a, dtype=float), 0.0, 1.0)) * 63).astype(int)
    return "".join(ALPHABET[i] for i in idx)


def decode_weights(text: str) -> list[float]:
    """The weights ``encode_weights`` stands for (to about 1/63 of sqrt(weight))."""
    return [(ALPHABET.index(ch) / 63) ** 2 for ch in text]


def _sig4(x) -> list:
    """Nested lists of numbers rounded to four significant digits (floats; NaN becomes None)."""
    x = np.asarray(x, dtype=float)
    if x.ndim > 1:
        return [_sig4(y) for y in x]
    return [None if np.isnan(v) else float(f"{v:.4g}") for v in x]


def reachable(d_k: int) -> int:
    """How many factors, from the smallest, the controls reach at width d_k."""
    return max(factor_index(d_k, tau, s) for tau in TEMPERATURES for s in (False, True)) + 1


def setting(q_len, t, d_k: int, T_k: int):
    """At every factor the controls reach at d_k: weights A (n, F, T_k), gradient reaching q (n, F)."""
    # float32: the grid keeps four significant digits, and the page executes twice as fast
    t = t[:, :T_k].astype(np.float32)
    z = (q_len[:, None] * t / math.sqrt(d_k)).astype(np.float32)  # (n, T_k): q.k_j / sqrt(d_k)
    f = np.asarray(FACTORS[:reachable(d_k)], dtype=np.float32)
    A = softmax(z[:, None, :] * f[None, :, None], axis=-1)  # (n, F, T_k)
    grad = query_gradient_rms(A, t[:, None, :], f / math.sqrt(d_k), d_k)
    return A, grad


@functools.lru_cache(maxsize=4)
def saturation_grid(seed: int = SEED, n_queries: int = N_QUERIES) -> dict:
    """Every result the four controls reach, as a JSON-ready dict (cached per seed and size).

    Entries are indexed ``[t][d][h]``: t the T_k, d the d_k, h the factor (``factor_index``).
    ``factor_index[s][i][d]`` is h for the switch s (0 unscaled, 1 scaled), temperature i and
    width d, so the browser only looks things up.
    """
    shape = (len(T_KS), len(D_KS), len(FACTORS))
    # factors no control reaches at a width stay NaN (null in the JSON)
    row_max, row_jsq, row_grad, mean_max, med_grad, mean_grad, p90_grad = (
        np.full(shape, np.nan) for _ in range(7))
    rows = [[None] * len(D_KS) for _ in T_KS]
    for d, d_k in enumerate(D_KS):
        q_len, t_all = row_score_draws(d_k, T_KS[-1], n_queries, seed)
        n_f = reachable(d_k)
        for i, T_k in enumerate(T_KS):
            A, grad = setting(q_len, t_all, d_k, T_k)
            a_max = A.max(axis=-1)  # (n, n_f)
            row_max[i, d, :n_f], row_jsq[i, d, :n_f] = a_max[0], jacobian_frobenius_sq(A[0])
            row_grad[i, d, :n_f] = grad[0]
            rows[i][d] = [encode_weights(a) for a in A[0]] + [""] * (len(FACTORS) - n_f)
            mean_max[i, d, :n_f] = a_max.mean(axis=0)
            med_grad[i, d, :n_f], mean_grad[i, d, :n_f] = np.median(grad, axis=0), grad.mean(axis=0)
            p90_grad[i, d, :n_f] = np.percentile(grad, 90, axis=0)
    lookup = [[[factor_index(d_k, tau, bool(s)) for d_k in D_KS] for tau in TEMPERATURES]
              for s in (0, 1)]
    return {
        "d_ks": list(D_KS), "temperatures": list(TEMPERATURES), "t_ks": list(T_KS),
        "factors": list(FACTORS), "factor_index": lookup, "alphabet": ALPHABET,
        "n_queries": n_queries, "seed": seed, "rows": rows,
        "max_weight": _sig4(row_max), "jacobian_sq": _sig4(row_jsq), "grad_q": _sig4(row_grad),
        "mean_max_weight": _sig4(mean_max), "median_grad_q": _sig4(med_grad),
        "mean_grad_q": _sig4(mean_grad), "p90_grad_q": _sig4(p90_grad),
    }


class SaturationExplorer(GridWidget):
    """One query's attention as d_k, temperature, the 1/sqrt(d_k) switch and T_k change.

    ``d_k`` must be a power of two from 1 to 1024; ``temperature`` snaps to the nearest power
    of sqrt(2) between 1/8 and 1024 and raises ``traitlets.TraitError`` outside that range;
    ``scaled`` is a bool; ``T_k`` one of 8, 32, 128. All four are synced with the browser.
    The curves summarise ``n_queries`` random queries (500 by default).
    """

    _esm = read_esm("saturation")
    d_k = traitlets.Int(64).tag(sync=True)
    temperature = traitlets.Float(1.0).tag(sync=True)
    scaled = traitlets.Bool(True).tag(sync=True)
    T_k = traitlets.Int(32).tag(sync=True)
    fallback_alt = ("Static figure at temperature 1 with 32 keys, against d_k: left, the mean "
                    "largest attention weight; right, the median and mean gradient reaching "
                    "the query on a log scale. Unscaled, the largest weight climbs toward 1 and "
                    "the median gradient rises, then collapses, while the mean does not; scaled, all "
                    "stay flat.")
    fallback_caption = ("The saturation explorer as a static figure, at temperature 1 with 32 "
                        "keys, against <i>d</i><sub>k</sub>: the mean largest attention weight "
                        "(left) and the median and mean gradient reaching the query, on a log "
                        "scale (right). Unscaled, the largest weight climbs toward 1 and the "
                        "median gradient rises, then collapses, while the mean does not; scaled, all "
                        "stay flat.")

    def __init__(self, seed: int = SEED, n_queries: int = N_QUERIES, **kwargs):
        super().__init__(**kwargs)
        self._grid = saturation_grid(seed, n_queries)

    @traitlets.validate("d_k")
    def _valid_d_k(self, proposal):
        return check_d_k(proposal["value"])

    @traitlets.validate("temperature")
    def _valid_temperature(self, proposal):
        return snap(proposal["value"], TEMPERATURES, "temperature", log=True)

    @traitlets.validate("scaled")
    def _valid_scaled(self, proposal):
        value = proposal["value"]
        if not isinstance(value, (bool, np.bool_)):
            raise traitlets.TraitError(f"scaled must be True or False, got {value!r}")
        return bool(value)

    @traitlets.validate("T_k")
    def _valid_T_k(self, proposal):
        value = proposal["value"]
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) not in T_KS:
            raise traitlets.TraitError(f"T_k must be one of {list(T_KS)}, got {value!r}")
        return int(value)

    def readout(self, d_k: int | None = None, temperature: float | None = None,
                scaled: bool | None = None, T_k: int | None = None) -> dict:
        """What the widget shows at a setting (default: the current controls)."""
        d_k = self.d_k if d_k is None else check_d_k(d_k)
        tau = self.temperature if temperature is None else snap(temperature, TEMPERATURES,
                                                                "temperature", log=True)
        scaled = self.scaled if scaled is None else bool(scaled)
        T_k = self.T_k if T_k is None else int(T_k)
        t, d, h = T_KS.index(T_k), D_KS.index(d_k), factor_index(d_k, tau, scaled)
        g = self._grid
        keys = ("max_weight", "jacobian_sq", "grad_q", "mean_max_weight", "median_grad_q",
                "mean_grad_q", "p90_grad_q")
        return {"d_k": d_k, "temperature": tau, "scaled": scaled, "T_k": T_k,
                "score_sd": FACTORS[h], "weights": decode_weights(g["rows"][t][d][h]),
                **{k: g[k][t][d][h] for k in keys}}

    def fallback_figure(self):
        import matplotlib.pyplot as plt

        from attention.plotting import SCALED, UNSCALED

        g = self._grid
        t = T_KS.index(32)
        fig, (ax_m, ax_g) = plt.subplots(1, 2, figsize=(7.2, 3.0))
        for scaled, color, name in ((False, UNSCALED, "unscaled"), (True, SCALED, "scaled")):
            hs = [factor_index(d_k, 1.0, scaled) for d_k in D_KS]
            ax_m.plot(D_KS, [g["mean_max_weight"][t][d][h] for d, h in enumerate(hs)], "o-",
                      color=color, ms=4, label=name)
            ax_g.plot(D_KS, [g["median_grad_q"][t][d][h] for d, h in enumerate(hs)], "o-",
                      color=color, ms=4, label=f"{name}, median")
            ax_g.plot(D_KS, [g["mean_grad_q"][t][d][h] for d, h in enumerate(hs)], "--",
                      color=color, label=f"{name}, mean")
        for ax in (ax_m, ax_g):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("$d_k$")
        ax_m.set_ylim(0, 1)
        ax_m.set_title("mean largest weight")
        ax_g.set_yscale("log")
        ax_g.set_title("gradient reaching $q$")
        ax_m.legend(loc="upper left")
        ax_g.legend(loc="lower left", fontsize=8)
        fig.tight_layout()
        return fig
