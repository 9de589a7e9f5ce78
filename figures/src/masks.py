"""Causal, padding and combined attention masks as three grids (page "Masks").

Writes figures/masks.svg. Rows are queries i, columns keys j; a filled cell means
"query i may attend to key j" (True in the boolean mask), an empty one gets weight 0.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402

from attention import causal_mask, padding_mask  # noqa: E402
from attention.plotting import COLORS, use_book_style  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "masks.svg"
T = 8          # a sequence of 8 positions ...
LENGTH = 5     # ... of which the last 3 are padding


def draw_grid(ax, keep: np.ndarray, title: str) -> None:
    cmap = ListedColormap(["#EEEEEE", COLORS["blue"]])
    ax.imshow(keep.astype(int), cmap=cmap, vmin=0, vmax=1)
    ax.set_xticks(range(T))
    ax.set_yticks(range(T))
    ax.set_xticks(np.arange(-0.5, T), minor=True)
    ax.set_yticks(np.arange(-0.5, T), minor=True)
    ax.grid(False)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="both", length=0, labelsize=8)
    ax.set_xlabel("key $j$")
    ax.set_title(title)
    for i in range(T):
        for j in range(T):
            if not keep[i, j]:
                ax.text(j, i, "$-\\infty$", ha="center", va="center", fontsize=8, color="#555555")


def main() -> None:
    use_book_style()
    causal = causal_mask(T)
    padding = np.broadcast_to(padding_mask(np.array([LENGTH]), T)[0], (T, T))
    both = causal & padding
    fig, axes = plt.subplots(1, 3, figsize=(9.6, 3.6))
    draw_grid(axes[0], causal, "causal: $j \\leq i$")
    draw_grid(axes[1], padding, f"padding: keys $j < {LENGTH}$")
    draw_grid(axes[2], both, "combined: causal AND padding")
    axes[0].set_ylabel("query $i$")
    fig.tight_layout()
    fig.savefig(OUT, metadata={"Date": None})
    plt.close(fig)


if __name__ == "__main__":
    main()
