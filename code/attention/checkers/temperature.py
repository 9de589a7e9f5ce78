"""Checker of the exercise 'attention with a temperature'."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..forward import scaled_dot_product_attention
from ._common import _RNG_SEED, _close, _qkv, _report, _run


def check_attention_with_temperature(fn: Callable, verbose: bool = True) -> bool:
    """Exercise 5: ``fn(Q, K, V, tau) -> (out, weights)`` with scores Q K^T / (tau sqrt(d_k))."""
    rng = np.random.default_rng(_RNG_SEED + 1)
    Q, K, V = _qkv(rng, T_q=3, T_k=4)
    results = []
    for tau in (0.5, 1.0, 3.0):
        O_ref, A_ref = scaled_dot_product_attention(Q, K, V, temperature=tau)
        results.append(_run(f"weights at tau = {tau}", lambda t=tau, A=A_ref: _close(fn(Q, K, V, t)[1], A, "weights")))
    onehot = (np.arange(4) == np.argmax(Q @ K.T, axis=-1)[:, None]).astype(float)
    results.append(_run("tau -> 0+ approaches the argmax (tau = 1e-3)",
                        lambda: _close(fn(Q, K, V, 1e-3)[1], onehot, "weights at tau = 1e-3", atol=1e-3)))
    results.append(_run("tau -> infinity approaches uniform (tau = 1e6)",
                        lambda: _close(fn(Q, K, V, 1e6)[1], np.full((3, 4), 0.25), "weights at tau = 1e6", atol=1e-4)))
    return _report(results, verbose)
