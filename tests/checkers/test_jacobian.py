"""The checker of the exercise on the Jacobian of a saturated row: it accepts the right answer and rejects each
plausible wrong attempt with a message that names the mistake."""

from __future__ import annotations

import numpy as np
import pytest

import attention
from attention import checkers
from attention.softmax import softmax


def test_wrong_jacobian_or_vjp_fails_the_jacobian_checker():
    def diag_only(a):
        return np.diag(a)

    def vjp_without_mean(a, g):
        return a * g

    assert checkers.check_softmax_jacobian(diag_only, attention.softmax_vjp, verbose=False) is False
    assert checkers.check_softmax_jacobian(attention.softmax_jacobian, vjp_without_mean,
                                           verbose=False) is False
