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


def check_positive_list(values, name: str, what: str) -> list[float]:
    """A non-empty sequence of positive finite numbers, one per ``what`` (NumPy scalars too)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence of positive numbers, one per {what}, "
                        f"got {values!r}")
    out = [check_positive(v.item() if isinstance(v, np.generic) else v, f"{name}[{i}]")
           for i, v in enumerate(values)]
    if not out:
        raise ValueError(f"{name} must hold at least one {what}")
    return out


def check_callable(fn, name: str = "fn") -> None:
    if not callable(fn):
        raise TypeError(f"{name} must be callable, got {type(fn).__name__}")


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


def check_kurtosis(kurtosis) -> float:
    """A fourth moment E[x^4] of a unit-variance variable: a finite real number >= 1."""
    if isinstance(kurtosis, bool) or not isinstance(kurtosis, numbers.Real):
        raise TypeError(f"kurtosis must be a real number >= 1, got {kurtosis!r}")
    # E[x^4] >= E[x^2]^2 = 1 for any unit-variance x (equality for random signs).
    if not 1.0 <= kurtosis < np.inf:
        raise ValueError(f"kurtosis = E[x^4] of a unit-variance entry is at least 1, got {kurtosis!r}")
    return float(kurtosis)


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


def overflow_error(dtype) -> ValueError:
    """The error of scores c Q K^T that overflowed ``dtype``, the dtype they are computed in.

    The row maxima the callers check cannot tell which step overflowed, so the message
    names the three it may be: the raw products Q K^T, the factor c = 1/(temperature
    sqrt(d_k)) (inf below a temperature of about 5.6e-309 / sqrt(d_k) in float64) and
    the scaled scores c Q K^T; and suggests float64 only where the work is narrower.
    """
    dtype = np.dtype(dtype)
    wider = ("; or pass float64 inputs (float64 holds up to about 1.8e308)"
             if dtype.itemsize < 8 else "")
    return ValueError(
        f"the scores c Q K^T overflowed {dtype.name}: some raw product |q . k|, the "
        f"factor c = 1/(temperature sqrt(d_k)) or some scaled score |c q . k| exceeds "
        f"{dtype.name}'s largest number, about {float(np.finfo(dtype).max):.2g}; scale Q "
        f"or K down (if the raw products overflowed), or raise the temperature (if the "
        f"factor or the scaled scores did){wider}"
    )


def check_no_overflow(m, mask=None, T_k: int = 0) -> None:
    """Raise :func:`overflow_error` if the row maxima ``m`` of scores c Q K^T (masked
    entries -inf) show that the product overflowed.

    The inputs are finite, so a NaN or +inf maximum is an overflow, and so is -inf in a
    row that has a visible key: with ``mask`` None, any row when T_k > 0; else a row of
    ``mask`` (..., T_q, T_k) with a True. With the defaults only NaN and +inf count: a
    tile of keys, whose rows may all be masked.
    """
    visible = T_k > 0 if mask is None else mask.any(axis=-1, keepdims=True)
    if (np.isnan(m) | np.isposinf(m) | (np.isneginf(m) & visible)).any():
        raise overflow_error(m.dtype)


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


def check_qkv(Q, K, V):
    """Validate and convert Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v).

    Returns the three as arrays of their common float dtype (integers promoted to float64).
    """
    Q = as_float_array(Q, "Q")
    K = as_float_array(K, "K")
    V = as_float_array(V, "V")
    for name, x in (("Q", Q), ("K", K), ("V", V)):
        check_matrix_like(x, name)
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(
            f"Q and K must have the same width d_k: Q has shape {Q.shape}, K has shape {K.shape}"
        )
    if Q.shape[-1] == 0:
        raise ValueError(f"d_k must be at least 1: Q has shape {Q.shape}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(
            f"K and V must have the same number of keys T_k: K has shape {K.shape}, V has shape {V.shape}"
        )
    for a, b, names in ((Q, K, "Q and K"), (Q, V, "Q and V"), (K, V, "K and V")):
        _check_batches_broadcast(a, b, names)
    dtype = np.result_type(Q, K, V)
    return Q.astype(dtype, copy=False), K.astype(dtype, copy=False), V.astype(dtype, copy=False)


def check_query_key(Q, K, name_q: str = "Q", name_k: str = "K", *, same_width: bool = True):
    """Validate and convert a pair of operands (..., T_q, d_q) and (..., T_k, d_k) whose
    leading dimensions broadcast; ``same_width`` also requires d_q = d_k."""
    Q = as_float_array(Q, name_q)
    K = as_float_array(K, name_k)
    check_matrix_like(Q, name_q)
    check_matrix_like(K, name_k)
    if same_width and Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"{name_q} and {name_k} must have the same width d_k: "
                         f"{name_q} has shape {Q.shape}, {name_k} has shape {K.shape}")
    _check_batches_broadcast(Q, K, f"{name_q} and {name_k}")
    return Q, K


def _check_batches_broadcast(a: np.ndarray, b: np.ndarray, names: str) -> None:
    try:
        np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the leading (batch, head) dimensions of {names} do not broadcast: "
            f"{a.shape} and {b.shape}"
        ) from None


def check_weight_rows(a, name: str = "a") -> np.ndarray:
    """Rows of softmax weights (..., n): a real array, n >= 1, no negative entry."""
    a = as_float_array(a, name)
    if a.ndim < 1 or a.shape[-1] == 0:
        raise ValueError(f"{name} must have at least one entry along its last axis, got shape {a.shape}")
    if (a < 0).any():
        raise ValueError(f"{name} must be a probability vector (non-negative entries)")
    return a


# --- torch tensors (torch is imported only when one is checked) --------------------------

def check_tensor(x, name: str, *, allow_neg_inf: bool = False) -> None:
    """A real floating-point torch tensor without NaN (or inf): the twin of ``as_float_array``.

    Unlike the NumPy functions, integer tensors are refused (TypeError), as torch's
    built-in attention refuses them: a torch model has already chosen its float dtype.
    """
    import torch

    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not torch.is_floating_point(x):
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if x.numel():
        if torch.isnan(x).any():
            raise ValueError(f"{name} contains NaN")
        bad = torch.isposinf(x) if allow_neg_inf else torch.isinf(x)
        if bad.any():
            raise ValueError(f"{name} contains {'+inf' if allow_neg_inf else 'inf'}")


def check_torch_float_dtype(dtype):
    """torch.float32 or torch.float64."""
    import torch

    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"dtype must be torch.float32 or torch.float64, got {dtype!r}")
    return dtype


def check_index_tensor(x, name: str, shape: tuple, size: int, size_name: str) -> None:
    """A torch tensor of integer indices of shape ``shape``, each in [0, size)."""
    import torch

    if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex()
                                        or x.dtype == torch.bool):
        raise TypeError(f"{name} must hold integer indices, got dtype {x.dtype}")
    if not isinstance(x, torch.Tensor) or tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name} must be a torch tensor of shape {tuple(shape)}")
    if x.numel() and (x.min() < 0 or x.max() >= size):
        raise ValueError(f"{name} must index the {size_name} = {size} entries: each in "
                         f"[0, {size})")
