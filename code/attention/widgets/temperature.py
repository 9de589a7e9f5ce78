"""TemperatureExplorer: the hand-checkable example of page "Soft retrieval" under a temperature.

Keys are the first three axes of R^4 and the query is [0.1, 3.0, 0.1, 0.0], so the raw
scores are [0.1, 3.0, 0.1] and d_k = 4. The effective scores are s / (tau sqrt(d_k)); at
tau = 1 the weights are about [0.160, 0.681, 0.160].

The text's values [10, 10], [20, 20], [30, 30] lie on one line, and since keys 1 and 3 always
get equal weight the output stays at [20, 20] for every temperature: a picture of it would not
move. The widget therefore draws the output for the values v1 = [10, 10], v2 = [20, 30],
v3 = [30, 10] (same first coordinates, the second changed so that the three points span a real
triangle); the weights are the same for any values.
"""

from __future__ import annotations

import numpy as np
import traitlets

from attention.forward import scaled_dot_product_attention

from ._base import GridWidget, read_esm, snap

#: The example of page "Soft retrieval": keys e1, e2, e3 of R^4, one query, d_k = 4.
KEYS = np.eye(4)[:3]  # (3, 4)
QUERY = np.array([0.1, 3.0, 0.1, 0.0])  # (4,)
TEXT_VALUES = np.array([[10.0, 10.0], [20.0, 20.0], [30.0, 30.0]])  # collinear: hull is a segment
PICTURE_VALUES = np.array([[10.0, 10.0], [20.0, 30.0], [30.0, 10.0]])  # a real triangle
#: Temperatures 10^(k/20), k = -26..26: about 0.05 to 20, 53 points, 1.0 exactly in the middle.
TEMPERATURES = tuple(float(10 ** (k / 20)) for k in range(-26, 27))


def temperature_grid(values=PICTURE_VALUES) -> dict:
    """Weights and output of the example at every temperature of the slider.

    Computed with :func:`attention.scaled_dot_product_attention` (``temperature=tau``), the
    library's own attention; weights rounded to 6 decimals, outputs to 4.
    """
    weights, outputs = [], []
    for tau in TEMPERATURES:
        O, A = scaled_dot_product_attention(QUERY[None, :], KEYS, values, temperature=tau)
        weights.append([round(float(a), 6) for a in A[0]])
        outputs.append([round(float(o), 4) for o in O[0]])
    return {
        "temperatures": list(TEMPERATURES),
        "weights": weights,  # (53, 3)
        "outputs": outputs,  # (53, 2)
        "values": values.tolist(),
        "text_values": TEXT_VALUES.tolist(),
        "scores": (KEYS @ QUERY).tolist(),
        "d_k": int(QUERY.shape[0]),
    }


class TemperatureExplorer(GridWidget):
    """Temperature slider on the hand-checkable example (page "Soft retrieval").

    Shows the three weights as bars and the output o = sum_j a_j v_j as a point inside the
    triangle of the values v1 = [10, 10], v2 = [20, 30], v3 = [30, 10]: as tau falls the point
    moves to v2, the vertex of the best-matching key; as tau grows it moves to the centroid.
    (The text's values [10, 10], [20, 20], [30, 30] are collinear and give o = [20, 20] at
    every temperature, so the picture uses these instead; the weights do not depend on them.)

    ``temperature`` is synced both ways; a value set from Python snaps to the nearest of the
    53 grid temperatures (10^(k/20), about 0.05 to 20); one outside that range raises
    ``traitlets.TraitError``.
    """

    _esm = read_esm("temperature")
    temperature = traitlets.Float(1.0).tag(sync=True)
    fallback_alt = ("Static figure: the three attention weights at temperatures 0.1, 1 and 10, "
                    "and the path of the output inside the triangle of the values, from the "
                    "centroid at high temperature to the vertex v2 at low temperature.")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._grid = temperature_grid()

    @traitlets.validate("temperature")
    def _valid_temperature(self, proposal):
        return snap(proposal["value"], TEMPERATURES, "temperature", log=True)

    def readout(self, temperature: float | None = None) -> dict:
        """What the widget shows at ``temperature`` (default: the current one): weights and output."""
        tau = self.temperature if temperature is None else snap(temperature, TEMPERATURES,
                                                                 "temperature", log=True)
        i = TEMPERATURES.index(tau)
        return {"temperature": tau, "weights": self._grid["weights"][i],
                "output": self._grid["outputs"][i]}

    def fallback_figure(self):
        import matplotlib.pyplot as plt

        from attention.plotting import COLORS

        g = self._grid
        fig, (ax_w, ax_o) = plt.subplots(1, 2, figsize=(7.2, 3.2), width_ratios=[1.2, 1])
        shown = [0.1, 1.0, 10.0]
        idx = [int(np.argmin(np.abs(np.log(TEMPERATURES) - np.log(t)))) for t in shown]
        colors = [COLORS["vermillion"], COLORS["blue"], COLORS["orange"]]
        x = np.arange(3)
        for n, (i, c) in enumerate(zip(idx, colors)):
            ax_w.bar(x + (n - 1) * 0.27, g["weights"][i], width=0.25, color=c,
                     label=f"τ = {TEMPERATURES[i]:.2g}")
        ax_w.set_xticks(x, ["key 1", "key 2", "key 3"])
        ax_w.set_ylim(0, 1)
        ax_w.set_ylabel("weight $a_j$")
        ax_w.legend(loc="upper left")
        V = np.array(g["values"])
        ax_o.fill(V[:, 0], V[:, 1], color=COLORS["sky"], alpha=0.25, lw=0)
        ax_o.plot(*np.vstack([V, V[:1]]).T, color="0.4", lw=1)
        O = np.array(g["outputs"])
        ax_o.plot(O[:, 0], O[:, 1], color=COLORS["black"], lw=1, ls="--")
        for i, c in zip(idx, colors):
            ax_o.plot(*O[i], "o", color=c, ms=7)
        for j, v in enumerate(V):
            ax_o.annotate(f"$v_{j + 1}$", v, textcoords="offset points", xytext=(0, 6 if j == 1 else -14),
                          ha="center")
        ax_o.set_aspect("equal")
        ax_o.set_xlim(5, 35)
        ax_o.set_ylim(5, 35)
        ax_o.set_title("output o inside the triangle")
        fig.tight_layout()
        return fig
