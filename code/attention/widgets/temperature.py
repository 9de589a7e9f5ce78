"""TemperatureExplorer: one query, three keys, three values, under a temperature (page
"Soft retrieval").

The keys are the first three axes of R^4 (d_k = 4), so the raw score of key j is the query's
j-th entry, q . k_j = q_j, and the query's fourth entry meets no key (it is 0 here). The
reader sets q_1, q_2, q_3 (from -4 to 4 in steps of 0.1) and the temperature tau (53 steps
on a log scale from about 0.05 to 20); the effective scores are q_j / (tau sqrt(d_k)). The
values are the triangle of the convex-hull exercise, v_1 = (0, 0), v_2 = (10, 0),
v_3 = (0, 10), so the output o = a_1 v_1 + a_2 v_2 + a_3 v_3 = (10 a_2, 10 a_3) can be
steered to every part of the triangle: its corners (one weight near 1), its edges (one
weight near 0) and its inside.

The starting query [0.1, 3.0, 0.1] is the page's worked example; with it keys 1 and 3 always
tie, which is why the query must be free: with that query alone the output could only move
along one line.

Unlike the other widgets, the browser computes the weights itself: the softmax of three
numbers is exact and cheap, whereas a grid over three query entries and the temperature
would hold millions of points. The grid holds the slider positions and the values; the
tests check that the numbers the browser shows equal :func:`readout`, which calls the
library's :func:`attention.scaled_dot_product_attention`.
"""

from __future__ import annotations

import numpy as np
import traitlets

from attention.forward import scaled_dot_product_attention

from ._base import GridWidget, read_esm, snap

#: Keys e_1, e_2, e_3 of R^4 (rows): the raw score of key j is the query's j-th entry.
KEYS = np.eye(4)[:3]  # (3, 4)
#: The worked example's query on page "Soft retrieval"; its fourth entry meets no key.
QUERY = np.array([0.1, 3.0, 0.1, 0.0])  # (4,)
#: The triangle of the convex-hull exercise (ex-convex-hull): v_1, v_2, v_3 as rows.
VALUES = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])  # (3, 2)
#: Temperatures 10^(k/20), k = -26..26: about 0.05 to 20, 53 points, 1.0 exactly in the middle.
TEMPERATURES = tuple(float(10 ** (k / 20)) for k in range(-26, 27))
#: Positions of each query slider: -4.0, -3.9, ..., 4.0.
QUERY_STEPS = tuple(round(k / 10, 1) for k in range(-40, 41))


def snap_query_entry(value, name: str) -> float:
    """The slider position (a multiple of 0.1 in [-4, 4]) nearest to ``value``.

    Values outside [-4, 4], NaN, infinities and non-numbers raise a TraitError naming the
    range. (``_base.snap`` assumes a positive range; this one is linear and signed.)
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise traitlets.TraitError(f"{name} must be a number, got {value!r}")
    value = float(value)
    lo, hi = QUERY_STEPS[0], QUERY_STEPS[-1]
    if not (lo - 1e-9 <= value <= hi + 1e-9):  # also False for NaN
        raise traitlets.TraitError(f"{name} must lie between {lo:g} and {hi:g}, got {value!r}")
    return QUERY_STEPS[int(np.argmin(np.abs(np.asarray(QUERY_STEPS) - value)))]


def explorer_readout(temperature: float, query) -> dict:
    """What the explorer shows for ``query`` = (q_1, q_2, q_3) at ``temperature``.

    Computed with :func:`attention.scaled_dot_product_attention` on the query
    (q_1, q_2, q_3, 0), the keys :data:`KEYS` and the values :data:`VALUES`: ``scores`` are the
    effective scores q_j / (tau sqrt(d_k)), ``weights`` their softmax, ``output`` = a V.
    """
    q = np.append(np.asarray(query, dtype=np.float64), 0.0)[None, :]  # (1, 4)
    O, A = scaled_dot_product_attention(q, KEYS, VALUES, temperature=temperature)
    d_k = KEYS.shape[1]
    return {
        "temperature": float(temperature),
        "query": [float(x) for x in query],
        "scores": [float(s / (temperature * np.sqrt(d_k))) for s in (KEYS @ q[0])],
        "weights": A[0].tolist(),
        "output": O[0].tolist(),
    }


def where_in_triangle(weights, eps: float = 1e-3) -> str:
    """Where the output lies, read off its weights: at a corner, on an edge or inside.

    A weight below ``eps`` counts as zero: one weight left means a corner ("at v2"), two an
    edge ("on the edge v2 v3"), three the inside. The explorer shows the same words.
    """
    big = [j + 1 for j, a in enumerate(weights) if a >= eps]
    if len(big) == 1:
        return f"at the corner v{big[0]}"
    if len(big) == 2:
        return f"on the edge v{big[0]} v{big[1]}"
    return "inside the triangle"


class TemperatureExplorer(GridWidget):
    """Temperature and query sliders on the three-key example (page "Soft retrieval").

    Shows the three weights as bars and the output o = sum_j a_j v_j as a point in the
    triangle of the values v_1 = (0, 0), v_2 = (10, 0), v_3 = (0, 10), with the path the
    output takes as tau runs over its whole range for the current query.

    ``temperature`` snaps to the nearest of the 53 grid temperatures (10^(k/20), about 0.05
    to 20); ``query`` is the list (q_1, q_2, q_3), each entry snapped to a multiple of 0.1 in
    [-4, 4]. Both are synced with the browser; values outside the ranges raise
    ``traitlets.TraitError``.
    """

    _esm = read_esm("temperature")
    temperature = traitlets.Float(1.0).tag(sync=True)
    query = traitlets.List(traitlets.Float(), default_value=QUERY[:3].tolist()).tag(sync=True)
    fallback_alt = ("Static figure. Left: the three attention weights of the worked example's "
                    "query at a low, a middle and a high temperature. Right: the triangle of "
                    "the values with the paths the output takes as the temperature varies, "
                    "for the worked example's query (from the corner v2 toward the centroid) "
                    "and for two other queries, one of which runs along an edge; no path "
                    "leaves the triangle.")
    fallback_caption = ("The temperature explorer as a static figure. Left: the three attention "
                        "weights of the worked example's query at three temperatures τ. Right: "
                        "the triangle of the values and the path the output <i>o</i> takes as τ "
                        "varies, for the worked example's query (from the corner "
                        "<i>v</i><sub>2</sub> toward the centroid) and for two other queries, "
                        "one of which runs along an edge: no path leaves the triangle.")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._grid = {
            "temperatures": list(TEMPERATURES),
            "query_steps": list(QUERY_STEPS),
            "values": VALUES.tolist(),
            "d_k": int(KEYS.shape[1]),
        }

    @traitlets.validate("temperature")
    def _valid_temperature(self, proposal):
        return snap(proposal["value"], TEMPERATURES, "temperature", log=True)

    @traitlets.validate("query")
    def _valid_query(self, proposal):
        value = proposal["value"]
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or len(value) != 3:
            raise traitlets.TraitError(
                f"query must be three numbers (q_1, q_2, q_3), the scores on keys 1 to 3, got {value!r}")
        return [snap_query_entry(x, f"q_{j + 1}") for j, x in enumerate(value)]

    def readout(self, temperature: float | None = None, query=None) -> dict:
        """What the widget shows (default: at its current settings): the effective scores,
        weights, output and where the output lies; settings snap to the sliders' grid."""
        tau = self.temperature if temperature is None else snap(temperature, TEMPERATURES,
                                                                 "temperature", log=True)
        q = self.query if query is None else self._valid_query({"value": list(query)})
        r = explorer_readout(tau, q)
        r["where"] = where_in_triangle(r["weights"])
        return r

    def fallback_figure(self):
        import matplotlib.pyplot as plt

        from attention.plotting import COLORS

        fig, (ax_w, ax_o) = plt.subplots(1, 2, figsize=(7.2, 3.4), width_ratios=[1.1, 1])
        shown = [0.1, 1.0, 10.0]
        colors = [COLORS["vermillion"], COLORS["blue"], COLORS["orange"]]
        x = np.arange(3)
        for n, (t, c) in enumerate(zip(shown, colors)):
            tau = snap(t, TEMPERATURES, "temperature", log=True)
            ax_w.bar(x + (n - 1) * 0.27, self.readout(tau, QUERY[:3])["weights"], width=0.25,
                     color=c, label=f"τ = {tau:.2g}")
        ax_w.set_xticks(x, ["key 1", "key 2", "key 3"])
        ax_w.set_ylim(0, 1)
        ax_w.set_ylabel("weight $a_j$")
        ax_w.legend(loc="upper left")
        ax_w.set_title("worked example's query")

        V = VALUES
        ax_o.fill(V[:, 0], V[:, 1], color=COLORS["sky"], alpha=0.25, lw=0)
        ax_o.plot(*np.vstack([V, V[:1]]).T, color="0.4", lw=1)
        paths = [(QUERY[:3], COLORS["black"], "-"), ((-4.0, 3.0, 2.8), COLORS["vermillion"], "--"),
                 ((1.6, 0.6, -0.2), COLORS["blue"], ":")]
        for q, c, ls in paths:
            O = np.array([self.readout(t, q)["output"] for t in TEMPERATURES])
            ax_o.plot(O[:, 0], O[:, 1], color=c, lw=1.6, ls=ls)
            ax_o.plot(*O[TEMPERATURES.index(1.0)], "o", color=c, ms=6)
        for j, v in enumerate(V):
            ax_o.annotate(f"$v_{j + 1}$", v, textcoords="offset points",
                          xytext=((-9, -13), (9, -13), (-12, -3))[j], ha="center")
        ax_o.set_aspect("equal")
        ax_o.set_xlim(-1.5, 11.5)
        ax_o.set_ylim(-1.5, 11.5)
        ax_o.set_title("output o for every τ (dot: τ = 1)")
        fig.tight_layout()
        return fig
