"""The checker of the exercise 'Scaled dot-product attention in NumPy': it accepts the right answer and rejects each
plausible wrong attempt with a message that names the mistake."""

from __future__ import annotations

import numpy as np
import pytest

import attention
from attention import checkers
from attention.softmax import softmax


def _attention_without_sqrt(Q, K, V, mask=None):
    S = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]  # divides by d_k instead of sqrt(d_k)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = softmax(S)
    return A @ V, A


def _attention_masking_with_zero(Q, K, V, mask=None):
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, S, 0.0)  # a zero score still gets weight
    A = softmax(S)
    return A @ V, A


def _attention_ignoring_batch(Q, K, V, mask=None):
    S = Q @ K.T / np.sqrt(Q.shape[-1])  # .T reverses every axis of a batched K
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = softmax(S)
    return A @ V, A


@pytest.mark.parametrize("wrong", [_attention_without_sqrt, _attention_masking_with_zero,
                                   _attention_ignoring_batch])
def test_wrong_attention_fails_the_attention_checker(wrong, capsys):
    assert checkers.check_scaled_dot_product_attention(wrong) is False
    assert "✗" in capsys.readouterr().out


def test_masking_with_zero_fails_exactly_the_mask_cases(capsys):
    checkers.check_scaled_dot_product_attention(_attention_masking_with_zero)
    failed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("✗")]
    assert failed and all("mask" in line for line in failed)
