"""The book's bookkeeping: publish a computed value under a name the prose can quote.

:func:`glue` writes exactly the output that the pinned ``myst_nb.glue`` writes: the
value's display representations, marked with ``{"scrapbook": {"name": ..., "mime_prefix":
...}}`` metadata, which myst-nb reads back when it renders ``{glue:text}`name``` in the
prose. It exists because ``from myst_nb import glue`` imports nbformat, whose JSON-schema
validator imports a URI grammar that is slow to compile: paid on every page of every
build, for a function of five lines. ``tests/lib/test_glue.py`` holds the two
functions' outputs equal, with one deliberate difference: a NumPy scalar is glued as the
Python number it holds. (``myst_nb.glue`` stores its repr, ``np.float64(0.25)``, which
``{glue:text}`name:.2f``` cannot format: a build warning, and a raw repr on the page.)
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: The MIME-type prefix myst-nb gives values glued with ``display=False`` (not shown).
GLUE_PREFIX = "application/papermill.record/"


def glue(name: str, variable: Any, display: bool = True) -> None:
    """Publish ``variable``'s display representation under ``name`` for the page's prose.

    With ``display=False`` (how the book uses it) nothing is shown in the notebook; the prose
    quotes the value with ``{glue:text}`name:.3f``` or places a figure with ``{glue:figure}``.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"a glue name must be a non-empty string, got {name!r}")
    from IPython.core.formatters import format_display_data
    from IPython.display import display as ipy_display

    if isinstance(variable, np.generic):  # np.float64(0.25) -> 0.25, so that it formats
        variable = variable.item()
    bundle, metadata = format_display_data(variable)
    prefix = "" if display else GLUE_PREFIX
    metadata["scrapbook"] = dict(name=name, mime_prefix=prefix)
    ipy_display({prefix + mime: data for mime, data in bundle.items()}, raw=True, metadata=metadata)
