"""Softmax, its Jacobian and its vector-Jacobian product.

Explained in the chapter's pages "Saturation and the softmax Jacobian" (the Jacobian and
its VJP, what passes through it) and "Numerical stability" (why the row maximum is
subtracted).
"""

from __future__ import annotations

import numpy as np

from ._validate import as_float_array, check_weight_rows


def _compute_dtype(x: np.ndarray) -> np.dtype:
    # Half precision overflows exp() above 11.09; like mixed-precision training we compute
    # the exponentials and their sum in float32 and cast the result back.
    return np.promote_types(x.dtype, np.float32)


def softmax(x, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``.

    Subtracts each row's maximum before exponentiating, so the largest exponent is
    exp(0) = 1 and nothing overflows in exp. (The difference x - max itself can
    overflow to -inf, with NumPy's overflow warning, when a row spans more than the
    dtype's range; exp gives 0 there, which is that weight correctly rounded.)
    ``-inf`` entries (masked scores) get weight exactly 0.
    A row that is entirely ``-inf`` (every key masked) returns all zeros rather than NaN:
    the library's policy for fully masked rows, the same as the pinned torch's built-in attention.

    Shapes: any; the result has the shape of ``x``. float16 is computed in float32 and
    cast back; integers are promoted to float64. NaN or +inf in ``x`` raise ``ValueError``.
    """
    return _softmax(as_float_array(x, "x", allow_neg_inf=True), axis)


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """:func:`softmax` of a validated float array."""
    out_dtype = x.dtype
    xc = x.astype(_compute_dtype(x), copy=False)
    if x.size == 0:
        return np.zeros_like(x)
    m = np.max(xc, axis=axis, keepdims=True)
    m = np.where(np.isneginf(m), 0.0, m)  # a fully masked row: exp(-inf - 0) = 0, no NaN
    e = np.exp(xc - m)
    total = np.sum(e, axis=axis, keepdims=True)
    safe_total = np.where(total > 0, total, 1.0)
    return (e / safe_total).astype(out_dtype, copy=False)


def naive_softmax(x, axis: int = -1) -> np.ndarray:
    """Softmax straight from the definition exp(x) / sum exp(x), in the input's dtype.

    Kept only to show what goes wrong: in float16 exp(12) is already inf (the largest
    float16 is 65,504 and ln 65504 = 11.09), and inf / inf is NaN. Use :func:`softmax`.
    No input checks beyond dtype: NaN and inf flow through on purpose. Integers are
    promoted to float64; bool, complex, object and string arrays raise ``TypeError``.
    """
    x = np.asarray(x)
    if np.issubdtype(x.dtype, np.integer):
        x = x.astype(np.float64)
    elif x.dtype == np.bool_ or not np.issubdtype(x.dtype, np.floating):
        raise TypeError(f"x must be a real numeric array, got dtype {x.dtype}")
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x)
        return e / np.sum(e, axis=axis, keepdims=True)


def softmax_jacobian(a) -> np.ndarray:
    """Jacobian da/ds = diag(a) - a a^T of softmax at output ``a``.

    ``a`` has shape (..., n) (softmax outputs); the result has shape (..., n, n).
    It is symmetric, its rows sum to zero and it is positive semidefinite. Its trace
    1 - |a|^2 measures how spread out the row is (:func:`jacobian_trace`); what it lets a
    random gradient through is tr(J^2) (:func:`jacobian_frobenius_sq`). Built here only to
    be looked at: backpropagation uses :func:`softmax_vjp`, which never forms it.
    """
    a = check_weight_rows(a)
    return a[..., :, None] * np.eye(a.shape[-1], dtype=a.dtype) - a[..., :, None] * a[..., None, :]


def softmax_vjp(a, g) -> np.ndarray:
    """Vector-Jacobian product g^T J (equation eq-softmax-vjp), in O(n) without forming J.

    ``a`` (..., n) are softmax outputs, ``g`` (..., n) the gradient with respect to them;
    returns the gradient with respect to the scores, shape (..., n).
    """
    a = check_weight_rows(a)
    g = as_float_array(g, "g")
    if np.broadcast_shapes(a.shape, g.shape) != a.shape:
        raise ValueError(f"g of shape {g.shape} does not match a of shape {a.shape}")
    return a * (g - np.sum(a * g, axis=-1, keepdims=True))


def jacobian_trace(a) -> np.ndarray:
    """Trace of the softmax Jacobian, 1 - sum_j a_j^2, over the last axis (shape (...)).

    A measure of spread, not of gradient flow: 0 for a one-hot row, largest (1 - 1/T_k) for
    the uniform row, which passes little gradient. It is the chance that two keys drawn
    independently with probabilities a land on different keys.
    """
    a = check_weight_rows(a)
    return 1.0 - np.sum(a * a, axis=-1)


def jacobian_frobenius_sq(a) -> np.ndarray:
    """tr(J^2) = |J|_F^2 of the softmax Jacobian J = diag(a) - a a^T, over the last axis.

    It is E|J g|^2 for an upstream gradient g with identity covariance: the mean squared size
    of what the softmax lets through (page "Saturation", section "What gets through").
    Equal to |a|^2 - 2 sum_j a_j^3 + |a|^4, at most |a|^2 (1 - |a|^2) <= 1/4 (an exact tie
    of two keys), about 1/T_k for the uniform row and 0 for a one-hot row.

    Computed in O(T_k) from the largest weight a_m and sums over the other entries o_j:
    sum_j a_j^2 (1 - a_j)^2 + sum_{j != l} a_j^2 a_l^2, with 1 - a_m taken as the sum of the
    others, so that a nearly one-hot row gives a small non-negative number instead of a
    rounding error. Shape (..., T_k) -> (...).
    """
    return _jacobian_frobenius_sq(check_weight_rows(a))


def _jacobian_frobenius_sq(a: np.ndarray) -> np.ndarray:
    """:func:`jacobian_frobenius_sq` of validated weights."""
    a = a.astype(np.promote_types(a.dtype, np.float32), copy=False)
    m = np.argmax(a, axis=-1)[..., None]
    a_m = np.take_along_axis(a, m, axis=-1)[..., 0]  # (...): the largest weight
    o = a.copy()
    np.put_along_axis(o, m, 0.0, axis=-1)  # the other weights, the largest set to 0
    o2 = o * o
    one_minus_m = np.sum(o, axis=-1)  # 1 - a_m, without cancellation
    S = np.sum(o2, axis=-1)  # sum of the others' squares
    diag_others = np.sum(o2 * (1.0 - o) ** 2, axis=-1)  # sum_{j != m} J_jj^2
    # sum_{j != l} a_j^2 a_l^2 = (pairs without m) + 2 a_m^2 S
    off = (S * S - np.sum(o2 * o2, axis=-1)) + 2.0 * a_m**2 * S
    return diag_others + (a_m * one_minus_m) ** 2 + off
