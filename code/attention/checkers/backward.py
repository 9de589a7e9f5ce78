"""Checker of the exercise 'The backward pass of attention'."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..forward import scaled_dot_product_attention
from ..gradcheck import numerical_gradient, relative_error
from ..masks import causal_mask
from ._common import _RNG_SEED, _close, _qkv, _report, _run


def check_attention_backward(fn: Callable, verbose: bool = True) -> bool:
    """Exercise 7: ``fn(Q, K, V, dO, mask=None) -> (dQ, dK, dV)``, checked by central differences."""
    rng = np.random.default_rng(_RNG_SEED + 2)
    Q, K, V = _qkv(rng, T_q=3, T_k=4, d_k=3, d_v=2)
    dO = rng.standard_normal((3, 2))
    mask = causal_mask(3, 4)
    results = []
    for label, m in (("no mask", None), ("causal mask", mask)):
        def loss(Q_, K_, V_, m=m):
            return float(np.sum(scaled_dot_product_attention(Q_, K_, V_, mask=m)[0] * dO))

        numeric = (numerical_gradient(lambda X: loss(X, K, V), Q),
                   numerical_gradient(lambda X: loss(Q, X, V), K),
                   numerical_gradient(lambda X: loss(Q, K, X), V))

        def case(m=m, numeric=numeric):
            got = fn(Q, K, V, dO) if m is None else fn(Q, K, V, dO, mask=m)
            errs = [relative_error(np.asarray(g), n) for g, n in zip(got, numeric)]
            return max(errs) < 1e-6, "relative errors dQ, dK, dV = " + ", ".join(f"{e:.2g}" for e in errs)

        results.append(_run(f"gradients match central differences ({label})", case))
    return _report(results, verbose)
