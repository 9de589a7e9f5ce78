"""Draw figures/qkv-shapes.svg: the shapes of Q, K, V, S, A and O in batched attention (page "Soft retrieval").

Each matrix is a grid with one cell per entry, drawn to scale for T_q = 4 queries,
T_k = 6 keys, d_k = 3 and d_v = 2, so the reader can see which dimensions must agree
and which survive: S = c Q K^T is T_q x T_k, A = softmax(S) has the same shape, O = A V
is T_q x d_v. One row of each is highlighted: query 2 and everything it produces.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

from attention.plotting import COLORS, use_book_style

OUT = Path(__file__).resolve().parent.parent / "qkv-shapes.svg"
T_Q, T_K, D_K, D_V = 4, 6, 3, 2
ROW = 1  # the highlighted query (0-based)


def grid(ax, x0, y_top, rows, cols, color, label, dims, highlight_row=None, highlight_col=None):
    """A rows x cols grid whose top-left corner is at (x0, y_top); returns its right edge."""
    for i in range(rows):
        for j in range(cols):
            on = (highlight_row is not None and i == highlight_row) or (highlight_col is not None and j == highlight_col)
            ax.add_patch(Rectangle((x0 + j, y_top - i - 1), 1, 1, facecolor=matplotlib.colors.to_rgba(color, 0.55 if on else 0.15),
                                   edgecolor=color, lw=1.0))
    ax.text(x0 + cols / 2, y_top + 0.45, label, ha="center", va="bottom", fontsize=13)
    ax.text(x0 + cols / 2, y_top - rows - 0.35, dims, ha="center", va="top", fontsize=9.5, color="0.25")
    return x0 + cols


def symbol(ax, x, y, text):
    ax.text(x, y, text, ha="center", va="center", fontsize=15)


def main():
    use_book_style()
    fig, ax = plt.subplots(figsize=(10.5, 3.4))
    top = 5.0
    mid = top - T_Q / 2
    x = 0.0
    x = grid(ax, x, top, T_Q, D_K, COLORS["orange"], "$Q$", "$T_q \\times d_k$", highlight_row=ROW)
    symbol(ax, x + 0.6, mid, "·")
    x = grid(ax, x + 1.2, top + (D_K - T_Q) / 2 * 0 + 0.0, D_K, T_K, COLORS["blue"], "$K^{\\top}$", "$d_k \\times T_k$")
    symbol(ax, x + 1.3, mid, "$\\times\\, c \\;=$")
    x = grid(ax, x + 2.6, top, T_Q, T_K, COLORS["purple"], "$S$", "$T_q \\times T_k$", highlight_row=ROW)
    ax.annotate("", xy=(x + 2.1, mid), xytext=(x + 0.3, mid), arrowprops=dict(arrowstyle="-|>", lw=1.5, color="0.2"))
    ax.text(x + 1.2, mid + 0.3, "softmax\nof each row", ha="center", va="bottom", fontsize=8.5)
    x = grid(ax, x + 2.4, top, T_Q, T_K, COLORS["vermillion"], "$A$", "$T_q \\times T_k$\nrows sum to 1", highlight_row=ROW)
    symbol(ax, x + 0.6, mid, "·")
    x = grid(ax, x + 1.2, top + 1, T_K, D_V, COLORS["green"], "$V$", "$T_k \\times d_v$")
    symbol(ax, x + 0.7, mid, "=")
    x = grid(ax, x + 1.4, top, T_Q, D_V, COLORS["sky"], "$O$", "$T_q \\times d_v$", highlight_row=ROW)
    ax.set_xlim(-0.3, x + 0.3)
    ax.set_ylim(top - T_K - 0.2, top + 1.6)
    ax.set_aspect("equal")
    ax.axis("off")
    fig.tight_layout()
    fig.savefig(OUT, format="svg", metadata={"Date": None})
    plt.close(fig)


if __name__ == "__main__":
    main()
