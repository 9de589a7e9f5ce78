"""Scaled dot-product attention in NumPy: the plain version and the tiled (online-softmax) one.

The plain version is built up in the pages "Soft retrieval" and "Numerical stability and
masks"; the tiled one, which never forms the T_q x T_k score matrix, in the latter.
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import (
    as_float_array,
    check_mask,
    check_matrix_like,
    check_positive,
)


def check_qkv(Q, K, V):
    """Validate and convert Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v)."""
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
        try:
            np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            raise ValueError(
                f"the leading (batch, head) dimensions of {names} do not broadcast: "
                f"{a.shape} and {b.shape}"
            ) from None
    dtype = np.result_type(Q, K, V)
    return Q.astype(dtype, copy=False), K.astype(dtype, copy=False), V.astype(dtype, copy=False)


def score_scale(d_k: int, temperature: float = 1.0) -> float:
    """The factor c = 1 / (temperature * sqrt(d_k)) that multiplies Q K^T.

    ``d_k`` must be a positive integer and ``temperature`` positive and finite; anything
    else raises (TypeError for the wrong type, ValueError for a bad value) rather than
    returning inf or NaN.
    """
    d_k = check_positive(d_k, "d_k", integer=True)
    temperature = check_positive(temperature, "temperature")
    # A Python float, not np.float64: under NumPy 2's promotion rules an np.float64 scalar
    # would silently turn float32 scores into float64.
    return float(1.0 / (temperature * np.sqrt(d_k)))


# How the plain version is computed (the arithmetic of the pages, arranged for speed):
# * the factor c multiplies Q (T_q d_k numbers), not Q K^T (T_q T_k numbers);
# * scores are kept in base 2: 2^(s log2 e) = e^s, and NumPy's exp2 is faster than its exp
#   (FlashAttention kernels make the same substitution);
# * the scores are processed a block of query rows at a time, so that the exponential, the
#   row sums and the product with V find the block still in cache;
# * the shift by the row maximum (page "Numerical stability and masks") is skipped when the
#   Cauchy-Schwarz bound |s_ij| <= c |q_i| |k_j| proves every score of the block lies within
#   +-SHIFT_FREE_BOUND: then nothing can overflow or underflow, and since softmax ignores a
#   shift, the weights differ from the shifted ones by rounding only.
LOG2_E = float(np.log2(np.e))

# e^60 ~ 1.1e26: no float32 overflow even summed over 10^12 keys; e^-60 ~ 8.8e-27 is a normal
# float32, so a row's largest weight keeps full precision.
SHIFT_FREE_BOUND = 60.0

# Score entries per block (2^20 float32 = 4 MiB), but never fewer than MIN_BLOCK_ROWS query
# rows: thinner products run well below BLAS's best rate.
BLOCK_ENTRIES = 1 << 20
MIN_BLOCK_ROWS = 512


def scaled_dot_product_attention(Q, K, V, mask=None, temperature: float = 1.0, *,
                                 need_weights: bool = True):
    """Attention O = softmax(Q K^T / (temperature sqrt(d_k))) V, returning (O, A).

    Shapes: Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v); leading batch and
    head dimensions broadcast. Returns O (..., T_q, d_v) and the weights A (..., T_q, T_k).
    ``mask`` is boolean and broadcasts to (..., T_q, T_k); True = may attend, False gets
    weight exactly 0. A query whose every key is masked (or a query with T_k = 0 keys)
    gets all-zero weights and a zero output, never NaN: the same policy as torch 2.13's
    built-in. Integer inputs are promoted to float64; float16 is computed in float32 and
    the results cast back.

    ``need_weights=False`` returns (O, None) and never holds more than one block of query
    rows' scores (a few MiB) instead of all T_q x T_k weights: the O(T^2) memory of
    attention is the price of *returning* A, not of computing O. (torch's
    ``nn.MultiheadAttention`` has the same switch.)
    """
    Q, K, V = check_qkv(Q, K, V)
    temperature = check_positive(temperature, "temperature")
    if not isinstance(need_weights, (bool, np.bool_)):
        raise TypeError(f"need_weights must be True or False, got {need_weights!r}")
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    T_q, d_k = Q.shape[-2:]
    T_k, d_v = V.shape[-2:]
    if mask is not None:
        mask = np.broadcast_to(check_mask(mask, batch + (T_q, T_k)), batch + (T_q, T_k))
    dtype = Q.dtype
    work = np.promote_types(dtype, np.float32)  # float16 is computed in float32
    N = math.prod(batch)
    filled = bool(N and T_q and T_k)  # else there is nothing to compute: zero weights, zero output
    new = np.empty if filled else np.zeros  # the blocks write every entry
    O = new((N, T_q, d_v), dtype=work)
    A = new((N, T_q, T_k), dtype=work) if need_weights else None
    if filled:
        _attention_blocks(Q, K, V, mask, batch, score_scale(d_k, temperature), O, A)
    O = O.reshape(batch + (T_q, d_v)).astype(dtype, copy=False)
    if A is not None:
        A = A.reshape(batch + (T_q, T_k)).astype(dtype, copy=False)
    return O, A


def _flat(x: np.ndarray, batch: tuple, N: int) -> np.ndarray:
    """x broadcast to ``batch`` and flattened to (N, rows, columns): a view unless it must copy."""
    return np.broadcast_to(x, batch + x.shape[x.ndim - 2:]).reshape((N,) + x.shape[x.ndim - 2:])


def _mask_items(mask: np.ndarray, batch: tuple, i0: int, i1: int) -> np.ndarray:
    """Items i0..i1-1 of a mask of shape batch + (T_q, T_k), without copying the others.

    A mask is often one (T_q, T_k) matrix broadcast over every batch item and head, so it
    is never flattened whole (that would copy it N times).
    """
    if not batch:
        return mask[None]
    if i1 - i0 == 1:
        return mask[np.unravel_index(i0, batch)][None]  # a view
    return mask[np.unravel_index(np.arange(i0, i1), batch)]  # a copy of these items only


def _blocks(N: int, T_q: int, T_k: int):
    """(i0, i1, q0, q1): batch items i0..i1-1, query rows q0..q1-1, about BLOCK_ENTRIES scores each.

    Small problems group several whole items per block (one block is common: a page's
    example); large ones take a block of at least MIN_BLOCK_ROWS rows of one item.
    """
    if T_q * T_k <= BLOCK_ENTRIES:
        group = BLOCK_ENTRIES // (T_q * T_k)
        for i0 in range(0, N, group):
            yield i0, min(i0 + group, N), 0, T_q
    else:
        rows = max(MIN_BLOCK_ROWS, BLOCK_ENTRIES // T_k)
        for i in range(N):
            for q0 in range(0, T_q, rows):
                yield i, i + 1, q0, min(q0 + rows, T_q)


def _attention_blocks(Q, K, V, mask, batch, c, O, A) -> None:
    """Fill O (N, T_q, d_v), and A (N, T_q, T_k) unless it is None, block by block."""
    N, T_q, T_k = O.shape[0], Q.shape[-2], K.shape[-2]
    work = O.dtype
    Q = _flat(Q, batch, N)
    K = _flat(K, batch, N).astype(work, copy=False)
    K_t = np.swapaxes(K, -1, -2)  # (N, d_k, T_k), a view: BLAS reads it transposed
    V = _flat(V, batch, N).astype(work, copy=False)
    with np.errstate(over="ignore"):
        k_max = np.sqrt(np.vecdot(K, K).max(axis=-1))  # largest |k_j| of each item
    shift_free = SHIFT_FREE_BOUND * LOG2_E  # the bound, in base-2 units
    base2_scale = c * LOG2_E
    buffer = None
    ones = np.ones(T_k, dtype=work)
    for i0, i1, q0, q1 in _blocks(N, T_q, T_k):
        Qb = np.multiply(Q[i0:i1, q0:q1], base2_scale, dtype=work)
        if A is not None:
            S = A[i0:i1, q0:q1]
        else:
            if buffer is None:
                buffer = np.empty((i1 - i0, q1 - q0, T_k), dtype=work)
            S = buffer[: i1 - i0, : q1 - q0]
        with np.errstate(over="ignore"):  # an overflow is reported by _shift_by_row_max
            np.matmul(Qb, K_t[i0:i1], out=S)  # base-2 scores (c log2 e) q_i . k_j
        if mask is not None:
            np.copyto(S, -np.inf, where=~_mask_items(mask, batch, i0, i1)[:, q0:q1])
        with np.errstate(over="ignore"):  # an infinite norm only means "shift"
            q_max = np.sqrt(np.vecdot(Qb, Qb).max(axis=-1))
        if not np.all(q_max * k_max[i0:i1] <= shift_free):  # Cauchy-Schwarz bound on |score|
            _shift_by_row_max(S)
        np.exp2(S, out=S)
        total = (S @ ones)[..., None]  # (items, rows, 1): each row's sum, by BLAS
        total[total == 0] = 1.0  # a row with every key masked: zero weights, zero output
        Ob = O[i0:i1, q0:q1]
        np.matmul(S, V[i0:i1], out=Ob)
        Ob /= total
        if A is not None:
            S /= total  # division, not a reciprocal: a lone key's weight is exactly 1


def _shift_by_row_max(S: np.ndarray) -> None:
    """Subtract each row's maximum in place (a fully masked row, all -inf, is left as it is).

    The inputs are finite, so a NaN or +inf score means that Q K^T itself overflowed.
    """
    m = S.max(axis=-1, keepdims=True)
    if np.isnan(m).any() or np.isposinf(m).any():
        raise ValueError(
            f"the scores Q K^T overflowed {S.dtype.name}: some |q . k| exceeds the "
            "largest representable number; scale Q or K down, or compute in float64"
        )
    m[np.isneginf(m)] = 0.0
    S -= m


def tiled_attention(Q, K, V, block_size: int, mask=None, temperature: float = 1.0) -> np.ndarray:
    """Attention computed block by block with an online softmax; returns O only.

    Queries are processed ``block_size`` at a time, and for each query block the keys are
    visited ``block_size`` at a time while a running row maximum ``m``, a running
    normaliser ``l`` and an unnormalised output ``acc`` are updated (Milakov and
    Gimelshein 2018). Only a (block_size, block_size) tile of scores exists at any
    moment, so extra memory is O(block_size^2) per batch element instead of O(T_q T_k).
    Equals :func:`scaled_dot_product_attention` to float rounding, including the
    fully-masked-row policy (zero output). ``block_size`` need not divide T.
    """
    Q, K, V = check_qkv(Q, K, V)
    block_size = check_positive(block_size, "block_size", integer=True)
    temperature = check_positive(temperature, "temperature")
    T_q, d_k = Q.shape[-2:]
    T_k, d_v = V.shape[-2:]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    if mask is not None:
        mask = np.broadcast_to(check_mask(mask, batch + (T_q, T_k)), batch + (T_q, T_k))
    c = score_scale(d_k, temperature)
    dtype = Q.dtype
    acc_dtype = np.promote_types(dtype, np.float32)
    O = np.zeros(batch + (T_q, d_v), dtype=dtype)
    K_t = np.swapaxes(K, -1, -2)
    for q0 in range(0, T_q, block_size):
        q1 = min(q0 + block_size, T_q)
        Qb = Q[..., q0:q1, :].astype(acc_dtype, copy=False)
        m = np.full(batch + (q1 - q0, 1), -np.inf, dtype=acc_dtype)  # running max
        l = np.zeros(batch + (q1 - q0, 1), dtype=acc_dtype)  # running normaliser
        acc = np.zeros(batch + (q1 - q0, d_v), dtype=acc_dtype)  # running sum of e^(s-m) v
        for k0 in range(0, T_k, block_size):
            k1 = min(k0 + block_size, T_k)
            S = Qb @ K_t[..., :, k0:k1].astype(acc_dtype, copy=False)  # (..., bq, bk)
            S *= c  # in place: the tile is the only block-sized array we keep
            if mask is not None:
                np.copyto(S, -np.inf, where=~mask[..., q0:q1, k0:k1])
            m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
            # Rows with every key so far masked keep m = -inf; shift them by 0 instead.
            shift = np.where(np.isneginf(m_new), 0.0, m_new)
            S -= shift
            P = np.exp(S, out=S)
            rescale = np.exp(np.where(np.isneginf(m), -np.inf, m - shift))
            l = l * rescale + P.sum(axis=-1, keepdims=True)
            acc = acc * rescale + P @ V[..., k0:k1, :].astype(acc_dtype, copy=False)
            m = m_new
        O[..., q0:q1, :] = np.where(l > 0, acc / np.where(l > 0, l, 1.0), 0.0)
    return O
