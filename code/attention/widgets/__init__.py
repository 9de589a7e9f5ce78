"""Live widgets of the chapter, live both in JupyterLab and in the static book (no kernel).

* :class:`TemperatureExplorer` (page "Soft retrieval"): the hand-checkable example under a
  temperature slider.
* :class:`WidthExplorer` (page "The variance argument"): raw and scaled score distributions
  against d_k and the query-key correlation rho.
* :class:`SaturationExplorer` (page "Saturation and the softmax Jacobian"): one query's
  weights, the largest weight and the Jacobian trace against d_k, temperature and scaling.

Each precomputes every state its controls reach in Python and draws in the browser: see
:mod:`attention.widgets._base`.
"""

from .saturation import SaturationExplorer
from .temperature import TemperatureExplorer
from .width import WidthExplorer

__all__ = ["SaturationExplorer", "TemperatureExplorer", "WidthExplorer"]
