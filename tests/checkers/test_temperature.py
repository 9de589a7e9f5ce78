"""The checker of the exercise 'attention with a temperature': it accepts the right answer and rejects each
plausible wrong attempt with a message that names the mistake."""

from __future__ import annotations

import numpy as np
import pytest

import attention
from attention import checkers
from attention.softmax import softmax


def test_temperature_applied_as_a_multiplier_fails_the_temperature_checker():
    def wrong(Q, K, V, tau):
        A = softmax(tau * Q @ K.T / np.sqrt(Q.shape[-1]))
        return A @ V, A

    assert checkers.check_attention_with_temperature(wrong, verbose=False) is False
