"""SaturationExplorer, the chapter's centerpiece (page "Saturation and the softmax Jacobian").

Controls: d_k (powers of two, 1 to 1024), temperature tau (powers of sqrt(2), 1/8 to 32) and
a scaled/unscaled switch. It shows one query's weights over 32 keys, the row's largest
weight, its Jacobian trace 1 - |a|^2 as a gauge, and where the current setting sits on the
saturation curves (mean largest weight and mean trace against d_k).

The grid comes from :func:`attention.attention_rows` (unit-variance q and k, fixed seed):
one draw per width, at scaled temperature 1. Softmax sees only differences, so
log a = s/sqrt(d_k) - logsumexp(s/sqrt(d_k)) carries the row's scores up to a shift, and
``softmax(log a * f)`` is the same row with its scores multiplied by ``f``: f = 1/tau for the
scaled rows and sqrt(d_k)/tau for the unscaled ones. The tests check that every grid point
equals :func:`attention.saturation_stats` and :func:`attention.attention_rows` called at that
setting. Because tau runs over powers of sqrt(2), unscaled at width d_k and tau = sqrt(d_k) is
exactly the scaled row at tau = 1: dividing by sqrt(d_k) is a temperature.
"""

from __future__ import annotations

import functools

import numpy as np
import traitlets

from attention.softmax import jacobian_trace, softmax
from attention.stats import attention_rows

from ._base import D_KS, GridWidget, check_d_k, read_esm, snap

#: Temperatures 2^(k/2), k = -6..10: 1/8 to 32; every sqrt(d_k) of the d_k slider is on it.
TEMPERATURES = tuple(float(2 ** (k / 2)) for k in range(-6, 11))
N_KEYS = 32
N_QUERIES = 500


def _factor(d_k: int, temperature: float, scaled: bool) -> float:
    """Multiplier taking scores q.k/sqrt(d_k) to the effective scores of this setting."""
    return (1.0 if scaled else float(np.sqrt(d_k))) / temperature


@functools.lru_cache(maxsize=4)
def saturation_grid(seed: int = 0, n_queries: int = N_QUERIES) -> dict:
    """Every result the three controls reach, as a JSON-ready dict (cached per seed and size).

    ``rows[s][t][d]``: the first query's 32 weights in units of 1e-4 (integers, to keep the
    page light); ``max_weight``/``trace``: that row's largest weight and 1 - |a|^2 (computed
    before rounding, 4 decimals); ``mean_max_weight``/``mean_trace``: averages over
    ``n_queries`` rows, what :func:`attention.saturation_stats` reports (4 decimals).
    Index s is 0 for unscaled and 1 for scaled, t the temperature, d the width.
    """
    shape = (2, len(TEMPERATURES), len(D_KS))
    rows = np.zeros(shape + (N_KEYS,), dtype=int)
    max_w, trace, mean_max, mean_trace = (np.zeros(shape) for _ in range(4))
    for d, d_k in enumerate(D_KS):
        base = attention_rows(d_k, N_KEYS, n_queries, scaled=True, temperature=1.0, seed=seed)
        log_a = np.log(base)  # (n_queries, N_KEYS): scores up to a per-row shift
        for s, scaled in enumerate((False, True)):
            for t, tau in enumerate(TEMPERATURES):
                A = softmax(log_a * _factor(d_k, tau, scaled), axis=-1)
                tr = jacobian_trace(A)
                rows[s, t, d] = np.rint(A[0] * 1e4).astype(int)
                max_w[s, t, d], trace[s, t, d] = A[0].max(), tr[0]
                mean_max[s, t, d], mean_trace[s, t, d] = A.max(axis=-1).mean(), tr.mean()
    r4 = lambda x: np.round(x, 4).tolist()  # noqa: E731
    return {
        "d_ks": list(D_KS), "temperatures": list(TEMPERATURES), "n_keys": N_KEYS,
        "n_queries": n_queries, "seed": seed,
        "rows": rows.tolist(), "max_weight": r4(max_w), "trace": r4(trace),
        "mean_max_weight": r4(mean_max), "mean_trace": r4(mean_trace),
    }


class SaturationExplorer(GridWidget):
    """One query's attention over 32 keys as d_k, temperature and the 1/sqrt(d_k) switch change.

    ``d_k`` must be a power of two from 1 to 1024; ``temperature`` snaps to the nearest power
    of sqrt(2) between 1/8 and 32 and raises ``traitlets.TraitError`` outside that range;
    ``scaled`` is a bool. All three are synced with the browser. The curves average
    ``n_queries`` random queries (500 by default) with 32 keys each.
    """

    _esm = read_esm("saturation")
    d_k = traitlets.Int(64).tag(sync=True)
    temperature = traitlets.Float(1.0).tag(sync=True)
    scaled = traitlets.Bool(True).tag(sync=True)
    fallback_alt = ("Static figure at temperature 1: mean largest attention weight and mean "
                    "Jacobian trace against d_k for 32 random keys. Unscaled, the largest weight "
                    "climbs toward 1 and the trace falls toward 0 as d_k grows; scaled, both stay "
                    "flat.")

    def __init__(self, seed: int = 0, n_queries: int = N_QUERIES, **kwargs):
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

    def readout(self, d_k: int | None = None, temperature: float | None = None,
                scaled: bool | None = None) -> dict:
        """What the widget shows at a setting (default: the current controls)."""
        d_k = self.d_k if d_k is None else check_d_k(d_k)
        tau = self.temperature if temperature is None else snap(temperature, TEMPERATURES,
                                                                "temperature", log=True)
        scaled = self.scaled if scaled is None else bool(scaled)
        s, t, d = int(scaled), TEMPERATURES.index(tau), D_KS.index(d_k)
        g = self._grid
        return {"d_k": d_k, "temperature": tau, "scaled": scaled,
                "weights": [w / 1e4 for w in g["rows"][s][t][d]],
                **{k: g[k][s][t][d] for k in ("max_weight", "trace", "mean_max_weight", "mean_trace")}}

    def fallback_figure(self):
        import matplotlib.pyplot as plt

        from attention.plotting import SCALED, UNSCALED

        g = self._grid
        t = TEMPERATURES.index(1.0)
        fig, (ax_m, ax_t) = plt.subplots(1, 2, figsize=(7.2, 3.0))
        for ax, key, label in ((ax_m, "mean_max_weight", "mean largest weight"),
                               (ax_t, "mean_trace", "mean trace $1-|a|^2$")):
            for s, color, name in ((0, UNSCALED, "unscaled"), (1, SCALED, "scaled")):
                ax.plot(D_KS, g[key][s][t], "o-", color=color, ms=4, label=name)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("$d_k$")
            ax.set_ylim(0, 1)
            ax.set_title(label)
        ax_m.legend(loc="upper left")
        fig.tight_layout()
        return fig
