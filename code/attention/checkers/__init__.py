"""Checkers for the chapter's coding exercises: call one on your own attempt.

Each ``check_*`` function runs your function on small cases, compares it with the
library's reference, prints one line per case (a tick or a cross with what differed)
and returns True when every case passes. It never raises because your code is wrong;
an exception inside your function is reported as a failed case.

One module per exercise; each module's docstring names its exercise.
"""

from .attention import check_scaled_dot_product_attention
from .backward import check_attention_backward
from .jacobian import check_softmax_jacobian
from .moments import check_scaled_score_moments
from .temperature import check_attention_with_temperature

__all__ = [
    "check_attention_backward",
    "check_attention_with_temperature",
    "check_scaled_dot_product_attention",
    "check_scaled_score_moments",
    "check_softmax_jacobian",
]
