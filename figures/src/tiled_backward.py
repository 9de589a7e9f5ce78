"""One step of the backward pass over blocks of keys, and what it reads and writes.

Writes figures/tiled-backward.svg (page "The backward pass, by hand", consequence 4). The
T_q x T_k grid of scores is drawn faint: it never exists as a whole. One block of key
columns is the tile of this step: it reads the block's K and V (top), every query's Q, dO,
L and D (left; L from the forward pass, D computed once, before the loop), writes the block's dK and dV
(bottom) and adds its share to dQ (right), as the page's tiled_attention_backward does.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyBboxPatch, Rectangle  # noqa: E402

from attention.plotting import SCALED, UNSCALED, use_book_style  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "tiled-backward.svg"

T_Q, T_K, BLOCK, FIRST = 6, 8, 2, 4  # grid cells; the tile is key columns FIRST..FIRST+BLOCK-1
GREY = "#666666"  # the grid that is never formed


def strip(ax, x, y, w, h, text, colour, fontsize=9, filled=False):
    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.06",
                                facecolor=colour if filled else "white", edgecolor=colour,
                                linewidth=1.4, alpha=1.0))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=fontsize)


def arrow(ax, start, end, colour):
    ax.annotate("", xy=end, xytext=start,
                arrowprops=dict(arrowstyle="-|>", color=colour, linewidth=1.3, shrinkA=0, shrinkB=0))


def main() -> None:
    use_book_style()
    fig, ax = plt.subplots(figsize=(9.6, 5.4))
    ax.set_xlim(-4.6, 12.2)
    ax.set_ylim(-3.6, 8.6)
    ax.set_aspect("equal")
    ax.axis("off")

    # the score grid, faint: never formed as a whole
    for i in range(T_Q):
        for j in range(T_K):
            ax.add_patch(Rectangle((j, T_Q - 1 - i), 1, 1, facecolor="white",
                                   edgecolor=GREY, linewidth=0.6, linestyle=":"))
    ax.text(FIRST / 2, -0.35, "$T_q \\times T_k$ scores:\nnever formed as a whole",
            ha="center", va="top", fontsize=9, color=GREY)
    # the tile of this step
    ax.add_patch(Rectangle((FIRST, 0), BLOCK, T_Q, facecolor=SCALED, alpha=0.25,
                           edgecolor=SCALED, linewidth=1.8))
    ax.text(FIRST + BLOCK / 2, T_Q / 2 + 0.55, "tile", ha="center", va="center", fontsize=9)
    ax.text(FIRST + BLOCK / 2, T_Q / 2 - 0.55, "$A_b,\\ \\mathrm{d}S_b$", ha="center",
            va="center", fontsize=9)

    # read: the block's keys and values (top)
    strip(ax, FIRST, T_Q + 0.5, BLOCK, 0.7, "$K_b$", SCALED)
    strip(ax, FIRST, T_Q + 1.4, BLOCK, 0.7, "$V_b$", SCALED)
    ax.text(FIRST + BLOCK + 0.25, T_Q + 1.1, "this block of keys", ha="left", va="center",
            fontsize=9, color=SCALED)

    # read: every query's rows (left); L and D once, before the loop
    for k, name in enumerate(("$Q$", "$\\mathrm{d}O$")):
        strip(ax, -3.9 + 1.0 * k, 0, 0.8, T_Q, name, SCALED)
    strip(ax, -1.75, 0, 0.55, T_Q, "$L$", UNSCALED)
    strip(ax, -1.05, 0, 0.55, T_Q, "$D$", UNSCALED)
    ax.text(-1.15, T_Q + 0.35, "$L$ from the forward pass; $D_i = \\mathrm{d}O_i \\cdot O_i$\nonce, before the loop",
            ha="center", va="bottom", fontsize=8.5, color=UNSCALED)
    arrow(ax, (-0.35, T_Q / 2), (FIRST - 0.1, T_Q / 2), SCALED)

    # written: the block's dK and dV (bottom), dQ accumulates (right)
    strip(ax, FIRST, -2.2, BLOCK, 0.7, "$\\mathrm{d}K_b$", UNSCALED)
    strip(ax, FIRST, -3.1, BLOCK, 0.7, "$\\mathrm{d}V_b$", UNSCALED)
    ax.text(FIRST + BLOCK + 0.25, -2.65, "written once, by this block", ha="left", va="center",
            fontsize=9, color=UNSCALED)
    arrow(ax, (FIRST + BLOCK / 2, -0.05), (FIRST + BLOCK / 2, -1.45), UNSCALED)
    strip(ax, T_K + 1.2, 0, 0.8, T_Q, "$\\mathrm{d}Q$", UNSCALED)
    ax.text(T_K + 2.2, T_Q / 2, "$\\mathrm{d}Q \\;{+}{=}\\; c\\,\\mathrm{d}S_b K_b$:\na share "
            "from\nevery block", ha="left", va="center", fontsize=9, color=UNSCALED)
    arrow(ax, (FIRST + BLOCK + 0.05, T_Q / 2), (T_K + 1.1, T_Q / 2), UNSCALED)

    fig.savefig(OUT, metadata={"Date": None}, bbox_inches="tight")
    plt.close(fig)


if __name__ == "__main__":
    main()
