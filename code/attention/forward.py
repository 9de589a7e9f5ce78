"""Scaled dot-product attention in NumPy: the plain version and the tiled (online-softmax) one.

The plain version, :func:`scaled_dot_product_attention`, is the algorithm of the pages
"Soft retrieval" and "Numerical stability": scores, mask, shift by the row maximum,
exponential, normalization, product with the values, nothing else. The tiled version,
:func:`tiled_attention`, which never forms the T_q x T_k score matrix, is derived on the
page "Numerical stability". The same arithmetic arranged for speed lives in
:mod:`attention.blocked`.
"""

from __future__ import annotations

import numpy as np

from .masks import ALIGNMENTS
from ._validate import check_mask, check_no_overflow, check_positive, check_qkv


def score_scale(d_k: int, temperature: float = 1.0) -> float:
    """The factor c = 1 / (temperature * sqrt(d_k)) that multiplies Q K^T.

    ``d_k`` must be a positive integer and ``temperature`` positive and finite; anything
    else raises (TypeError for the wrong type, ValueError for a bad value) rather than
    returning inf or NaN.
    """
    d_k = check_positive(d_k, "d_k", integer=True)
    temperature = check_positive(temperature, "temperature")
    return _score_scale(d_k, temperature)


def _score_scale(d_k: int, temperature: float) -> float:
    """:func:`score_scale` for a validated width and temperature."""
    # A Python float, not np.float64: under NumPy 2's promotion rules an np.float64 scalar
    # would silently turn float32 scores into float64.
    return float(1.0 / (temperature * np.sqrt(d_k)))


def scaled_dot_product_attention(Q, K, V, mask=None, temperature: float = 1.0):
    """Attention O = softmax(Q K^T / (temperature sqrt(d_k))) V, returning (O, A).

    Shapes: Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v); leading batch and
    head dimensions broadcast. Returns O (..., T_q, d_v) and the weights A (..., T_q, T_k).
    ``mask`` is boolean and broadcasts to (..., T_q, T_k); True = may attend, False gets
    weight exactly 0. A query whose every key is masked (or a query with T_k = 0 keys)
    gets all-zero weights and a zero output, never NaN: the same policy as the
    pinned torch's built-in. Integer inputs are promoted to float64; float16 is computed in float32 and
    the results cast back. Scaled scores c q . k that overflow the dtype they are computed
    in raise ``ValueError`` (float32 for float16 inputs, so these do not raise where only
    float16's range is exceeded).

    The same arithmetic, arranged for speed, and without returning (or holding) all
    T_q x T_k weights (``need_weights=False``): :func:`attention.blocked.blocked_attention`.
    """
    Q, K, V = check_qkv(Q, K, V)
    c = _score_scale(Q.shape[-1], check_positive(temperature, "temperature"))
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    T_q, T_k = Q.shape[-2], K.shape[-2]
    if mask is not None:
        mask = np.broadcast_to(check_mask(mask, batch + (T_q, T_k)), batch + (T_q, T_k))
    return _attend(Q, K, V, mask, c)


def _attend(Q, K, V, mask, c):
    """(O, A) for validated operands: the steps of the pages, one line each.

    The score matrix is overwritten in place by its shifted version, its exponential and
    finally the weights, so that one T_q x T_k array is all the memory this needs.
    """
    dtype = Q.dtype
    work = np.promote_types(dtype, np.float32)  # float16 is computed in float32
    Q, K, V = (x.astype(work, copy=False) for x in (Q, K, V))
    with np.errstate(over="ignore"):               # an overflow is reported below
        S = Q @ np.swapaxes(K, -1, -2)             # (..., T_q, T_k): q_i . k_j
        S *= c                                     # the scores s_ij = c q_i . k_j
    if mask is not None:
        S = np.where(mask, S, -np.inf)             # a masked key scores -inf
    m = S.max(axis=-1, keepdims=True, initial=-np.inf)  # (..., T_q, 1): each row's max
    check_no_overflow(m, mask, K.shape[-2])
    m[np.isneginf(m)] = 0.0                        # a fully masked row: shift by 0
    S -= m                                         # every score <= 0: exp cannot overflow
    A = np.exp(S, out=S)                           # e^(s_ij - m_i), masked keys give 0
    total = A.sum(axis=-1, keepdims=True)          # (..., T_q, 1), >= 1 unless all masked
    total[total == 0] = 1.0                        # a fully masked row: zero weights
    A /= total                                     # each row now sums to 1 (or is zero)
    O = A @ V                                      # (..., T_q, d_v)
    return O.astype(dtype, copy=False), A.astype(dtype, copy=False)


def _causal_rows_visible(mask, q0: int, q1: int, offset: int, batch: tuple):
    """(..., q1 - q0, 1) bool: does query i (q0 <= i < q1) see any key under the causal
    mask (keys 0 .. i + offset) and ``mask``? Read one row block of ``mask`` at a time."""
    last = np.arange(q0, q1) + offset  # the last key each query may see
    if mask is None:
        return np.broadcast_to((last >= 0)[:, None], batch + (q1 - q0, 1))
    rows = mask[..., q0:q1, :]
    # a visible key j <= last_i exists iff the first True of the row is at or before last_i
    return (rows.any(axis=-1) & (rows.argmax(axis=-1) <= last))[..., None]  # (..., bq, 1)


def tiled_attention(Q, K, V, block_size: int, mask=None, temperature: float = 1.0, *,
                    causal: str | None = None) -> np.ndarray:
    """Attention computed block by block with an online softmax; returns O only.

    Queries are processed ``block_size`` at a time, and for each query block the keys are
    visited ``block_size`` at a time while a running row maximum ``m``, a running
    normalizer ``l`` and an unnormalized output ``acc`` are updated (Milakov and
    Gimelshein 2018); ``acc`` is divided by ``l`` once, after the last block of keys, as
    in FlashAttention-2 (Dao 2023). The T_q x T_k scores never exist: at any moment one
    (block_size, block_size) tile of scores per batch element is being computed, and the
    previous tile stays referenced until the name is reassigned, so the extra memory is
    about two tiles, O(block_size^2) per batch element, instead of O(T_q T_k).

    ``mask`` is a dense boolean array that broadcasts to (..., T_q, T_k), read one tile at
    a time; a mask of that full shape, built by the caller, is itself T_q x T_k bytes and
    brings O(T_q T_k) memory back. ``causal="top-left"`` or ``"bottom-right"`` (the
    alignments of :func:`attention.causal_mask`) applies the causal mask without storing
    it, as fused kernels do: each tile's part is derived from the query and key indices,
    and tiles entirely above the diagonal are skipped. It combines with ``mask`` by AND.
    Equals :func:`scaled_dot_product_attention` to float rounding, including the
    fully-masked-row policy (zero output), a row whose first key blocks are all masked
    (its running maximum stays -inf: shifted by 0, rescaled by 0) and its error for scores
    that overflow the dtype (``ValueError``). ``block_size`` need not divide T.
    """
    Q, K, V = check_qkv(Q, K, V)
    block_size = check_positive(block_size, "block_size", integer=True)
    temperature = check_positive(temperature, "temperature")
    T_q, d_k = Q.shape[-2:]
    T_k, d_v = V.shape[-2:]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    if mask is not None:
        mask = np.broadcast_to(check_mask(mask, batch + (T_q, T_k)), batch + (T_q, T_k))
    if causal is not None and causal not in ALIGNMENTS:
        raise ValueError(f"causal must be None, 'top-left' or 'bottom-right', got {causal!r}")
    # key j is visible to query i when j <= i + offset (the diagonal of causal_mask)
    offset = 0 if causal in (None, "top-left") else T_k - T_q
    c = _score_scale(d_k, temperature)
    dtype = Q.dtype
    acc_dtype = np.promote_types(dtype, np.float32)
    O = np.zeros(batch + (T_q, d_v), dtype=dtype)
    K_t = np.swapaxes(K, -1, -2)
    for q0 in range(0, T_q, block_size):
        q1 = min(q0 + block_size, T_q)
        # with causal, no key after q1 - 1 + offset is visible to this block of queries
        k_end = T_k if causal is None else max(0, min(T_k, q1 + offset))
        Qb = Q[..., q0:q1, :].astype(acc_dtype, copy=False)
        m = np.full(batch + (q1 - q0, 1), -np.inf, dtype=acc_dtype)  # running max
        l = np.zeros(batch + (q1 - q0, 1), dtype=acc_dtype)  # running normalizer
        acc = np.zeros(batch + (q1 - q0, d_v), dtype=acc_dtype)  # running sum of e^(s-m) v
        for k0 in range(0, k_end, block_size):
            k1 = min(k0 + block_size, T_k)
            with np.errstate(over="ignore"):  # an overflow is reported below
                S = Qb @ K_t[..., :, k0:k1].astype(acc_dtype, copy=False)  # (..., bq, bk)
                S *= c  # in place: one tile of scores, the exponentials overwrite it
            tile_mask = None if mask is None else mask[..., q0:q1, k0:k1]
            if causal is not None and k1 - 1 > q0 + offset:  # the tile meets the diagonal
                below = (np.arange(k0, k1)[None, :]
                         <= np.arange(q0, q1)[:, None] + offset)  # (bq, bk)
                tile_mask = below if tile_mask is None else tile_mask & below
            if tile_mask is not None:
                np.copyto(S, -np.inf, where=~tile_mask)
            S_max = S.max(axis=-1, keepdims=True)  # (..., bq, 1): this tile's row maxima
            # The plain version's check, split: NaN or +inf in any tile is an overflow (NaN
            # would otherwise fail l > 0 below and pass as an empty row) ...
            check_no_overflow(S_max)
            m_new = np.maximum(m, S_max)
            # Rows with every key so far masked keep m = -inf; shift them by 0 instead.
            shift = np.where(np.isneginf(m_new), 0.0, m_new)
            S -= shift
            P = np.exp(S, out=S)
            rescale = np.exp(np.where(np.isneginf(m), -np.inf, m - shift))
            l = l * rescale + P.sum(axis=-1, keepdims=True)
            acc = acc * rescale + P @ V[..., k0:k1, :].astype(acc_dtype, copy=False)
            m = m_new
        # ... and a row maximum of -inf over all the keys, in a row with a visible key.
        if causal is None or T_k == 0:
            visible = None if mask is None else mask[..., q0:q1, :]
        else:  # the rows' visible keys, causal and mask together, without a T_k-wide copy
            visible = _causal_rows_visible(mask, q0, q1, offset, batch)
        check_no_overflow(m, visible, T_k)
        O[..., q0:q1, :] = np.where(l > 0, acc / np.where(l > 0, l, 1.0), 0.0)
    return O
