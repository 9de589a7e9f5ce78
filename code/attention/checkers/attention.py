"""Checker of the exercise 'Scaled dot-product attention in NumPy'."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..forward import scaled_dot_product_attention
from ..masks import causal_mask
from ._common import _RNG_SEED, _close, _qkv, _report, _run


def check_scaled_dot_product_attention(fn: Callable, verbose: bool = True) -> bool:
    """Exercise 6: ``fn(Q, K, V, mask=None) -> (out, weights)`` in NumPy."""
    rng = np.random.default_rng(_RNG_SEED)
    Q, K, V = _qkv(rng)
    O_ref, A_ref = scaled_dot_product_attention(Q, K, V)
    mask = causal_mask(4, 5)
    O_m, A_m = scaled_dot_product_attention(Q, K, V, mask=mask)
    Qb, Kb, Vb = _qkv(rng, batch=(2, 3))
    O_b, _ = scaled_dot_product_attention(Qb, Kb, Vb)

    def weights_rows_sum_to_one():
        _, A = fn(Q, K, V)
        s = np.asarray(A).sum(axis=-1)
        return np.allclose(s, 1.0), f"row sums are {np.round(s, 4)}"

    results = [
        _run("weights match the reference", lambda: _close(fn(Q, K, V)[1], A_ref, "weights")),
        _run("output matches the reference", lambda: _close(fn(Q, K, V)[0], O_ref, "output")),
        _run("each row of weights sums to 1", weights_rows_sum_to_one),
        _run("the scale is 1/sqrt(d_k)", lambda: _close(fn(Q * 4.0, K, V)[1],
             scaled_dot_product_attention(Q * 4.0, K, V)[1], "weights with a 4x query")),
        _run("masked keys get exactly zero weight", lambda: (
            np.all(np.asarray(fn(Q, K, V, mask=mask)[1])[~mask] == 0.0),
            "some masked weights are not exactly 0 (use -inf, not a large negative number?)")),
        _run("masked output matches the reference", lambda: _close(fn(Q, K, V, mask=mask)[0], O_m, "masked output")),
        _run("leading batch and head dimensions work", lambda: _close(fn(Qb, Kb, Vb)[0], O_b, "batched output")),
    ]
    return _report(results, verbose)
