"""Draw figures/hard-soft-lookup.svg: a dict lookup next to its soft version (page "Soft retrieval").

Left: the query matches exactly one key, and that key's value is returned. Right: the query
is compared with every key, the similarities become weights, and the answer is the
weighted average of all the values. The weights drawn are those of the page's
hand-checkable example (computed here, not typed in).
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from attention import softmax
from attention.plotting import COLORS, use_book_style

OUT = Path(__file__).resolve().parent.parent / "hard-soft-lookup.svg"


def box(ax, x, y, text, color, w=1.5, h=0.62, fill=0.18):
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.04,rounding_size=0.12",
                                facecolor=matplotlib.colors.to_rgba(color, fill), edgecolor=color, lw=1.4))
    ax.text(x, y, text, ha="center", va="center", fontsize=10.5)


def arrow(ax, p, q, lw, color, alpha=1.0, style="-|>"):
    ax.add_patch(FancyArrowPatch(p, q, arrowstyle=style, mutation_scale=11, lw=lw, color=color,
                                 alpha=alpha, shrinkA=2, shrinkB=2))


def main():
    use_book_style()
    # The page's example: keys are the first three axes of R^4, query (0.1, 3.0, 0.1, 0).
    q = np.array([0.1, 3.0, 0.1, 0.0])
    K = np.eye(3, 4)
    V = np.array([[10.0, 10.0], [20.0, 20.0], [30.0, 30.0]])
    a = softmax(K @ q / np.sqrt(4))
    o = a @ V

    fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.9))
    ys = [2.2, 1.2, 0.2]
    for ax, title in zip(axes, ("Hard lookup: a Python dict", "Soft lookup: attention")):
        ax.set_xlim(-0.2, 7.6)
        ax.set_ylim(-0.55, 2.95)
        ax.axis("off")
        ax.set_title(title, fontsize=11.5)

    ax = axes[0]
    box(ax, 0.8, 1.2, 'query\n"dog"', COLORS["orange"])
    for y, key, val in zip(ys, ('"cat"', '"dog"', '"owl"'), ("10", "20", "30")):
        hit = key == '"dog"'
        box(ax, 3.3, y, f"key {key}", COLORS["blue"], fill=0.3 if hit else 0.08)
        box(ax, 5.4, y, f"value {val}", COLORS["green"], w=1.3, fill=0.3 if hit else 0.08)
        ax.plot([4.05, 4.75], [y, y], color="0.6", lw=1, ls=":")
        arrow(ax, (1.55, 1.2), (2.55, y), 2.2 if hit else 0.8, COLORS["black"] if hit else "0.75",
              style="-|>" if hit else "-")
        ax.text(2.05, (1.2 + y) / 2 + 0.13, "=" if hit else "≠", ha="center", fontsize=10,
                color=COLORS["black"] if hit else "0.55")
    arrow(ax, (6.05, 1.2), (6.75, 1.2), 2.0, COLORS["black"])
    ax.text(7.1, 1.2, "20", ha="center", va="center", fontsize=12, fontweight="bold")
    ax.text(3.8, -0.5, "one exact match wins; a miss raises KeyError", ha="center", fontsize=9.5, color="0.3")

    ax = axes[1]
    box(ax, 0.8, 1.2, "query q", COLORS["orange"])
    for y, j, a_j in zip(ys, range(3), a):
        box(ax, 3.3, y, f"key k$_{j + 1}$", COLORS["blue"], fill=0.08 + 0.4 * a_j)
        box(ax, 5.4, y, f"value v$_{j + 1}$", COLORS["green"], w=1.3, fill=0.08 + 0.4 * a_j)
        arrow(ax, (1.55, 1.2), (2.55, y), 0.6 + 4.0 * a_j, COLORS["black"], alpha=0.35 + 0.65 * a_j)
        ax.text(4.4, y + 0.43, f"a$_{j + 1}$ = {a_j:.2f}", ha="center", fontsize=9.5, color=COLORS["vermillion"])
        ax.plot([4.05, 4.75], [y, y], color="0.6", lw=1, ls=":")
        arrow(ax, (6.05, y), (6.8, 1.2), 0.6 + 4.0 * a_j, COLORS["black"], alpha=0.35 + 0.65 * a_j)
    ax.text(7.15, 1.2, "o", ha="center", va="center", fontsize=12, fontweight="bold")
    ax.text(3.8, -0.5, f"every key takes part: o = Σ$_j$ a$_j$ v$_j$ = ({o[0]:.0f}, {o[1]:.0f})",
            ha="center", fontsize=9.5, color="0.3")
    fig.tight_layout()
    fig.savefig(OUT, format="svg", metadata={"Date": None})
    plt.close(fig)


if __name__ == "__main__":
    main()
