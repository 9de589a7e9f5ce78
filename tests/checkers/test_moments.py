"""The checker of the exercise on the moments of a correlated score: it accepts the right answer and rejects each
plausible wrong attempt with a message that names the mistake."""

from __future__ import annotations

import numpy as np
import pytest

import attention
from attention import checkers
from attention.softmax import softmax


@pytest.mark.parametrize("wrong", [
    lambda d_k, rho: (rho * d_k, 1 + rho**2),  # mean not scaled by 1/sqrt(d_k)
    lambda d_k, rho: (rho * np.sqrt(d_k), 1.0),  # forgot the rho^2 |q|^2 variance
    lambda d_k, rho: (0.0, float(d_k)),  # unscaled variance
])
def test_wrong_moments_fail_the_moments_checker(wrong):
    assert checkers.check_scaled_score_moments(wrong, verbose=False) is False
