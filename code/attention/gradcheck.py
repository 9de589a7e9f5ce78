"""Numerical gradients by central differences, used to check the hand-derived backward pass
(page "The backward pass, by hand")."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._validate import as_float_array, check_positive


def numerical_gradient(f: Callable[[np.ndarray], float], X, eps: float = 1e-6) -> np.ndarray:
    """Central-difference gradient of the scalar function ``f`` at ``X``.

    Each entry is (f(X + eps e_i) - f(X - eps e_i)) / (2 eps), whose error is O(eps^2)
    plus rounding of order (machine epsilon / eps). ``X`` is converted to float64 (a
    float32 check would be dominated by rounding); ``f`` must return a finite real scalar
    (ValueError for an array or a NaN/inf value, TypeError for a complex one).
    Costs 2 X.size evaluations of ``f``: meant for small test problems.
    """
    eps = check_positive(eps, "eps")
    X = as_float_array(X, "X").astype(np.float64, copy=True)
    grad = np.zeros_like(X)
    flat, gflat = X.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        orig = flat[i]
        flat[i] = orig + eps
        f_plus = _scalar(f(X))
        flat[i] = orig - eps
        f_minus = _scalar(f(X))
        flat[i] = orig
        gflat[i] = (f_plus - f_minus) / (2 * eps)
    return grad


def _scalar(value) -> float:
    arr = np.asarray(value)
    if arr.shape != ():
        raise ValueError(f"f must return a scalar, got an array of shape {arr.shape}")
    if np.iscomplexobj(arr):
        raise TypeError("f must return a real scalar, got a complex value")
    value = float(arr)
    if not np.isfinite(value):
        raise ValueError(f"f returned {value}; a gradient of a non-finite value is meaningless")
    return value


def relative_error(a, b) -> float:
    """max |a - b| / max(|a|, |b|, tiny): the figure the gradient checks quote.

    ``a`` and ``b`` are real arrays of the same shape (integers are promoted); NaN or inf
    in either raises ``ValueError`` rather than returning NaN. Two empty arrays give 0.
    """
    a = as_float_array(a, "a").astype(np.float64, copy=False)
    b = as_float_array(b, "b").astype(np.float64, copy=False)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: {a.shape} and {b.shape}")
    scale = max(np.abs(a).max(initial=0.0), np.abs(b).max(initial=0.0), np.finfo(np.float64).tiny)
    return float(np.abs(a - b).max(initial=0.0) / scale)
