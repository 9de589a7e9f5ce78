"""Checkers for the chapter's coding exercises: call one on your own attempt.

Each ``check_*`` function runs your function on cases that span what its exercise
allows, compares it with the library's reference, prints a tick or a cross per case (with
what went wrong, naming the mistake when it recognises one; a single line when every case
fails the same way) and returns True when every case passes. It never raises because your
code is wrong; an exception inside your function is reported as a failed case.

``_engine`` runs the cases and prints the report; each other module is one exercise (its
docstring names it): its cases and its table of named mistakes.
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
