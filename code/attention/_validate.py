"""Input checks shared by every public function.

The rule of the library: bad input raises an error that names what is wrong;
nothing returns a silently wrong answer. Integer arrays are promoted to float64.
"""

from __future__ import annotations

import numbers

import numpy as np


def as_float_array(x, name: str, *, allow_neg_inf: bool = False) -> np.ndarray:
    """Return ``x`` as a floating-point array, or raise a clear error.

    * integer arrays are promoted to float64; float16/32/64 keep their dtype;
    * bool, complex, object and string arrays raise ``TypeError``;
    * NaN (and +inf, and -inf unless ``allow_neg_inf``) raise ``ValueError``.
    """
    arr = np.asarray(x)
    if arr.dtype == np.bool_:
        raise TypeError(f"{name} must be a real numeric array, got a boolean array")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, got complex dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.integer):
        arr = arr.astype(np.float64)
    elif not np.issubdtype(arr.dtype, np.floating):
        raise TypeError(f"{name} must be a real numeric array, got dtype {arr.dtype}")
    # One BLAS dot product decides the common case: a NaN or an inf anywhere makes the sum of
    # squares NaN or inf. A non-finite sum can also be an overflow of large finite values, so
    # only then look closer.
    if arr.size and not np.isfinite(np.vdot(arr, arr)):
        if np.isnan(arr).any():
            raise ValueError(f"{name} contains NaN")
        if allow_neg_inf:
            if np.isposinf(arr).any():
                raise ValueError(f"{name} contains +inf")
        elif not np.isfinite(arr).all():
            raise ValueError(f"{name} contains inf")
    return arr


def check_matrix_like(x: np.ndarray, name: str) -> None:
    """Attention operands are (..., T, d): at least two dimensions."""
    if x.ndim < 2:
        raise ValueError(f"{name} must have shape (..., T, d), got shape {x.shape}")


def check_integer(value, name: str, *, minimum: int = 1) -> int:
    """An integer (not a bool) at least ``minimum``: a size (1), a length or a seed (0)."""
    kind = "positive" if minimum == 1 else "non-negative" if minimum == 0 else f">= {minimum}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a {kind} integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be a {kind} integer, got {value!r}")
    return int(value)


def check_positive(value, name: str, *, integer: bool = False):
    """A strictly positive, finite number (an int when ``integer``)."""
    if integer:
        return check_integer(value, name, minimum=1)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive number, got {value!r}")
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be positive and finite, got {value!r}")
    return float(value)


def check_in_range(value, name: str, low: float, high: float) -> float:
    """A real number in [low, high] (NaN and the infinities are outside)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number in [{low:g}, {high:g}], got {value!r}")
    if not low <= value <= high:  # also catches NaN
        raise ValueError(f"{name} must lie in [{low:g}, {high:g}], got {value!r}")
    return float(value)


def check_choice(value, name: str, choices: tuple) -> object:
    """One of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def check_mask(mask, score_shape: tuple[int, ...]) -> np.ndarray:
    """A boolean mask (True = may attend) that broadcasts to the scores' shape."""
    m = np.asarray(mask)
    if m.dtype != np.bool_:
        raise TypeError(
            f"mask must be a boolean array (True = may attend), got dtype {m.dtype}; "
            "for an additive bias add it to the scores yourself"
        )
    try:
        np.broadcast_shapes(m.shape, score_shape)
    except ValueError:
        raise ValueError(
            f"mask of shape {m.shape} does not broadcast to the scores' shape {score_shape}"
        ) from None
    if np.broadcast_shapes(m.shape, score_shape) != tuple(score_shape):
        raise ValueError(
            f"mask of shape {m.shape} would enlarge the scores' shape {score_shape}"
        )
    return m


def float_dtype(*arrays: np.ndarray) -> np.dtype:
    """The common float dtype of the operands (integers were promoted already)."""
    return np.result_type(*arrays)


def sum_to_shape(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Undo broadcasting: sum ``grad`` over the axes that broadcasting added or stretched."""
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for axis, size in enumerate(shape):
        if size == 1 and grad.shape[axis] != 1:
            grad = grad.sum(axis=axis, keepdims=True)
    return grad
