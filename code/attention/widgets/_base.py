"""What the three live widgets share: the ES module, the grid trait and the static fallback.

A widget's Python side computes every result its controls can reach (a grid, with the
library's own functions and a fixed seed) into the synced ``_grid`` trait; the browser side
(``static/*.js``, plain ES modules with no build step) only selects from the grid and draws
SVG. In JupyterLab, anywidget's front end runs that module and syncs the control traits both
ways; in the built book, ``site/attn-widgets-loader.js`` runs the same module from the widget
state embedded in the page, with no kernel.

Displaying a widget emits two outputs: the live widget, and a static figure (a matplotlib SVG)
that no-JavaScript readers and print see. The figure is hidden in JupyterLab (the ``hidden``
attribute) and hidden by the book's loader once the live widget has rendered.
"""

from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path

import anywidget
import numpy as np
import traitlets

STATIC = Path(__file__).with_name("static")


def read_esm(name: str) -> str:
    """The ES module of widget ``name``: the shared drawing helpers followed by its own code."""
    return (STATIC / "common.js").read_text() + "\n" + (STATIC / f"{name}.js").read_text()


CSS = (STATIC / "widgets.css").read_text()

#: Powers of two the d_k sliders reach: 1, 2, 4, ..., 1024.
D_KS = tuple(2**e for e in range(11))

# Shown in the book with no JavaScript and in print; hidden in JupyterLab (``hidden``) and by
# the loader once the live widget runs. Scoped to .bd-article, the book theme's article;
# !important because the theme's Bootstrap sets [hidden]{display:none!important}.
FALLBACK_STYLE = (
    "<style>.bd-article .attn-fallback[hidden]{display:block!important}"
    ".bd-article .attn-fallback.attn-replaced[hidden]{display:none!important}"
    ".attn-fallback img{max-width:100%;height:auto;background:#fff}"
    "@media print{.bd-article .attn-fallback.attn-replaced[hidden]{display:block!important}"
    ".attn-live{display:none!important}}</style>"
)


def check_d_k(value) -> int:
    """A d_k the grid holds (a power of two from 1 to 1024), or a TraitError saying so."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) not in D_KS:
        raise traitlets.TraitError(
            f"d_k must be a power of two from 1 to 1024 (one of {list(D_KS)}), got {value!r}")
    return int(value)


def snap(value, grid, name: str, log: bool = False) -> float:
    """The grid value nearest to ``value`` (on a log scale if ``log``).

    Values outside the grid's range, NaN, infinities and non-numbers raise a TraitError that
    names the allowed range: the widget never draws a state it did not compute.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise traitlets.TraitError(f"{name} must be a number, got {value!r}")
    value = float(value)
    lo, hi = grid[0], grid[-1]
    if not math.isfinite(value) or not (lo * (1 - 1e-9) - 1e-12 <= value <= hi * (1 + 1e-9) + 1e-12):
        raise traitlets.TraitError(f"{name} must lie between {lo:g} and {hi:g}, got {value!r}")
    g = np.asarray(grid, dtype=float)
    distance = np.abs(np.log(g) - np.log(value)) if log else np.abs(g - value)
    return float(grid[int(np.argmin(distance))])


def svg_data_uri(fig) -> str:
    """A matplotlib figure as a compact SVG data URI (text kept as text, no timestamp)."""
    import matplotlib as mpl

    buf = io.BytesIO()
    with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": "attention-widgets"}):
        fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


class GridWidget(anywidget.AnyWidget):
    """Base class: a synced grid of precomputed results plus a static fallback figure."""

    _css = CSS
    #: Every result the controls can reach, computed in Python; the ES module only selects.
    _grid = traitlets.Dict().tag(sync=True)

    #: Alt text of the static fallback figure (each widget sets its own).
    fallback_alt = ""
    #: Its caption (HTML), shown with it where the live widget is not (no JavaScript, print):
    #: what the figure shows and what to look for. The chapter's PDF numbers it.
    fallback_caption = ""

    def fallback_figure(self):  # pragma: no cover - each widget overrides it
        raise NotImplementedError

    def fallback_html(self) -> str:
        """The static figure as HTML: hidden in JupyterLab, shown in the book without JS and in print."""
        import matplotlib as mpl
        import matplotlib.pyplot as plt

        from attention.plotting import STYLE

        with mpl.rc_context(STYLE):  # the book's style, without changing the reader's session
            fig = self.fallback_figure()
            try:
                uri = svg_data_uri(fig)
            finally:
                plt.close(fig)
        alt = html.escape(self.fallback_alt, quote=True)
        caption = (f'<figcaption class="attn-fallback-caption">{self.fallback_caption}</figcaption>'
                   if self.fallback_caption else "")
        return (f'{FALLBACK_STYLE}<figure class="attn-fallback" hidden data-model-id="{self.model_id}">'
                f'<img src="{uri}" alt="{alt}">{caption}</figure>')

    def _ipython_display_(self):
        from IPython.display import HTML, display

        data, metadata = self._repr_mimebundle_()
        display(data, metadata=metadata, raw=True)
        display(HTML(self.fallback_html()))
