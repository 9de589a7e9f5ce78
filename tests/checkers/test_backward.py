"""The checker of the exercise 'The backward pass of attention': it accepts the right answer and rejects each
plausible wrong attempt with a message that names the mistake."""

from __future__ import annotations

import numpy as np
import pytest

import attention
from attention import checkers
from attention.softmax import softmax


def test_backward_without_the_D_term_fails_the_backward_checker():
    def wrong(Q, K, V, dO, mask=None):
        c = 1 / np.sqrt(Q.shape[-1])
        _, A = attention.scaled_dot_product_attention(Q, K, V, mask=mask)
        dA = dO @ V.T
        dS = A * dA  # forgot "- D": not the softmax VJP
        return c * dS @ K, c * dS.T @ Q, A.T @ dO

    assert checkers.check_attention_backward(wrong, verbose=False) is False


def test_backward_without_the_scale_fails_the_backward_checker():
    def wrong(Q, K, V, dO, mask=None):
        dQ, dK, dV = attention.attention_backward(Q, K, V, dO, mask=mask)
        return dQ * np.sqrt(Q.shape[-1]), dK, dV

    assert checkers.check_attention_backward(wrong, verbose=False) is False
