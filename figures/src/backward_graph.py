"""The forward and backward computation graph of attention, with the shape of every gradient.

Writes figures/backward-graph.svg (page "The backward pass, by hand"). Top row: the forward
pass S = c Q K^T, A = softmax(S), O = A V (blue). Bottom row: the backward pass walking the
same graph from right to left (vermillion); each gradient dX has the shape of X.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyBboxPatch  # noqa: E402

from attention.plotting import SCALED, UNSCALED, use_book_style  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "backward-graph.svg"


def box(ax, x, y, text, colour, width=1.9, height=0.78, fontsize=10):
    ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                                boxstyle="round,pad=0.04,rounding_size=0.12",
                                facecolor="white", edgecolor=colour, linewidth=1.6))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def arrow(ax, start, end, colour, text=None, offset=(0, 0.14), rad=0.0):
    ax.annotate("", xy=end, xytext=start,
                arrowprops=dict(arrowstyle="-|>", color=colour, linewidth=1.3,
                                shrinkA=0, shrinkB=0, connectionstyle=f"arc3,rad={rad}"))
    if text:
        mx, my = (start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1]
        ax.text(mx, my, text, ha="center", va="bottom", fontsize=8, color=colour)


def main() -> None:
    use_book_style()
    fig, ax = plt.subplots(figsize=(10.5, 4.6))
    ax.set_xlim(-0.4, 11.6)
    ax.set_ylim(-0.9, 4.4)
    ax.axis("off")

    # forward pass (top)
    fy = 3.3
    box(ax, 0.8, 3.9, "$Q$  $(T_q{\\times}d_k)$", SCALED, width=1.9, height=0.6)
    box(ax, 0.8, 2.7, "$K$  $(T_k{\\times}d_k)$", SCALED, width=1.9, height=0.6)
    box(ax, 3.4, fy, "$S = c\\,QK^\\top$\n$(T_q{\\times}T_k)$", SCALED)
    box(ax, 5.9, fy, "$A = \\mathrm{softmax}(S)$\n$(T_q{\\times}T_k)$", SCALED, width=2.1)
    box(ax, 5.9, 2.05, "$V$  $(T_k{\\times}d_v)$", SCALED, width=1.9, height=0.6)
    box(ax, 8.4, fy, "$O = AV$\n$(T_q{\\times}d_v)$", SCALED)
    box(ax, 10.6, fy, "loss $L$\n(scalar)", SCALED, width=1.5)
    arrow(ax, (1.75, 3.8), (2.45, 3.45), SCALED)
    arrow(ax, (1.75, 2.8), (2.45, 3.15), SCALED)
    arrow(ax, (4.35, fy), (4.85, fy), SCALED)
    arrow(ax, (6.95, fy), (7.45, fy), SCALED)
    arrow(ax, (6.85, 2.2), (7.45, 3.0), SCALED)
    arrow(ax, (9.35, fy), (9.85, fy), SCALED)
    ax.text(0.0, 4.3, "forward", color=SCALED, fontsize=10, fontweight="bold")

    # backward pass (bottom), right to left
    by = 0.55
    box(ax, 10.6, by, "$\\mathrm{d}O$ given\n$(T_q{\\times}d_v)$", UNSCALED, width=1.7)
    box(ax, 8.25, 1.05, "$\\mathrm{d}V = A^\\top \\mathrm{d}O$\n$(T_k{\\times}d_v)$", UNSCALED, width=2.1)
    box(ax, 8.25, -0.2, "$\\mathrm{d}A = \\mathrm{d}O\\,V^\\top$\n$(T_q{\\times}T_k)$", UNSCALED, width=2.1)
    box(ax, 5.35, -0.2, "$\\mathrm{d}S = A \\odot (\\mathrm{d}A - D)$\n$(T_q{\\times}T_k)$,  "
        "$D_i = \\mathrm{d}O_i \\cdot O_i$", UNSCALED, width=3.1)
    box(ax, 2.0, 1.05, "$\\mathrm{d}Q = c\\,\\mathrm{d}S\\,K$\n$(T_q{\\times}d_k)$", UNSCALED, width=2.1)
    box(ax, 2.0, -0.2, "$\\mathrm{d}K = c\\,\\mathrm{d}S^\\top Q$\n$(T_k{\\times}d_k)$", UNSCALED, width=2.1)
    arrow(ax, (9.75, 0.7), (9.3, 0.95), UNSCALED)
    arrow(ax, (9.75, 0.4), (9.3, -0.1), UNSCALED)
    arrow(ax, (7.2, -0.2), (6.9, -0.2), UNSCALED)
    arrow(ax, (3.8, -0.05), (3.05, 0.9), UNSCALED)
    arrow(ax, (3.8, -0.2), (3.05, -0.2), UNSCALED)
    ax.text(0.0, -0.85, "backward: each $\\mathrm{d}X = \\partial L/\\partial X$ has the shape of $X$",
            color=UNSCALED, fontsize=10, fontweight="bold")
    fig.savefig(OUT, metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)


if __name__ == "__main__":
    main()
