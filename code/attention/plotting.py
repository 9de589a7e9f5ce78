"""One matplotlib style for every figure of the book.

Colour-blind-safe colours (Okabe and Ito), SVG output with a fixed hash salt and no date
so that two builds write identical files, and a white figure background that reads in
both the light and the dark theme.
"""

from __future__ import annotations

import matplotlib as mpl

#: Okabe-Ito colours, safe for the common colour-vision deficiencies.
COLORS = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "black": "#000000",
}
#: The two colours the book uses for its running comparison.
SCALED, UNSCALED = COLORS["blue"], COLORS["vermillion"]

STYLE = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 100,
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.prop_cycle": mpl.cycler(color=list(COLORS.values())),
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "font.size": 11,
    "axes.titlesize": 11,
    "legend.frameon": False,
    "svg.hashsalt": "scaled-dot-product-attention",
    "svg.fonttype": "path",
    "path.simplify": True,
}


def use_book_style() -> None:
    """Apply the book's style; inside IPython also switch inline figures to reproducible SVG."""
    mpl.rcParams.update(STYLE)
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # plain Python: the rcParams are all there is to set
        return
    if get_ipython() is not None:
        set_matplotlib_formats("svg", metadata={"Date": None}, bbox_inches="tight")
