"""Boolean attention masks: True means "this query may attend to this key".

Explained in the page "Numerical stability and masks". Masks combine with logical AND
(``causal_mask(T) & padding_mask(lengths, T)``); the attention functions turn every False
into a score of -inf, so a forbidden key gets weight exactly 0.
"""

from __future__ import annotations

import numbers

import numpy as np


def _check_length(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a non-negative integer, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def causal_mask(T_q: int, T_k: int | None = None) -> np.ndarray:
    """Lower-triangular (T_q, T_k) mask: query i may attend to keys j <= i.

    With T_k != T_q the triangle is aligned top-left (query i sees keys 0..i), the
    convention of ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``.
    Decoding with a cache of earlier keys wants the bottom-right alignment instead:
    ``causal_mask(T_q, T_k)`` shifted by ``T_k - T_q``, i.e. ``np.tril(ones, k=T_k - T_q)``.
    """
    T_q = _check_length(T_q, "T_q")
    T_k = T_q if T_k is None else _check_length(T_k, "T_k")
    return np.tril(np.ones((T_q, T_k), dtype=bool))


def padding_mask(lengths, T: int) -> np.ndarray:
    """Key-padding mask of shape (B, 1, T): in sequence b, keys at positions >= lengths[b] are padding.

    The middle axis of size 1 broadcasts over queries, so the result combines with a
    (T, T) causal mask by ``&`` into (B, T, T). Put a head axis in front of the query axis
    yourself (``mask[:, None]``) for (B, H, T, T) scores.
    """
    T = _check_length(T, "T")
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or not np.issubdtype(lengths.dtype, np.integer):
        raise TypeError(f"lengths must be a 1-D array of integers, got {lengths!r}")
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError(f"every length must lie in [0, {T}], got {lengths.tolist()}")
    keep = np.arange(T)[None, :] < lengths[:, None]  # (B, T)
    return keep[:, None, :]  # (B, 1, T)
