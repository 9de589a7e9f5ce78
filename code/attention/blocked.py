"""Attention arranged for speed: the same arithmetic as the plain version, in blocks.

:func:`attention.scaled_dot_product_attention` and :func:`attention.attention_backward`
are the algorithms of the pages, one line per step. The two functions here compute the
same results (to rounding) and are what the benchmarks (``benchmarks/bench_kernels.py``)
judge against torch's fused kernel. What each change buys:

* blocks of query rows (about ``BLOCK_ENTRIES`` scores, at least ``MIN_BLOCK_ROWS`` rows;
  several small batch items share one block): the exponential, the row sums and the
  product with V find the block still in cache instead of streaming T_q x T_k numbers
  through memory several times;
* the factor c multiplies Q (T_q d_k numbers), not Q K^T (T_q T_k numbers);
* every step after the product writes into the block it reads (no temporary arrays), and
  the row sums are a BLAS product with a vector of ones;
* ``need_weights=False``: the output alone, in the memory of one block.

The shift by the row maximum (page "Numerical stability") is always taken. GPU kernels
such as FlashAttention work in base 2 (2^(x log2 e) = e^x), because exp2 is their fast
instruction; NumPy's float32 ``exp`` is vectorised, and this version stays in base e
(``make bench`` times ``exp`` against ``exp2`` on one block and prints both).
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import check_mask, check_no_overflow, check_positive, check_qkv
from .backward import _gradients_in, check_backward_inputs
from .forward import _score_scale

__all__ = ["blocked_attention", "blocked_attention_backward"]

# A block holds about BLOCK_ENTRIES scores (2^16 float32 = 256 KiB, small enough to stay in
# a core's cache between the steps that read it), but never fewer than MIN_BLOCK_ROWS rows,
# because thinner matrix products run well below BLAS's best rate. `make bench` times the
# forward pass against the least NumPy work of the same arithmetic at each T.
BLOCK_ENTRIES = 1 << 16
MIN_BLOCK_ROWS = 512

def blocked_attention(Q, K, V, mask=None, temperature: float = 1.0, *,
                      need_weights: bool = True):
    """(O, A) as :func:`attention.scaled_dot_product_attention`, computed faster.

    Same shapes, masks, dtype rules, fully-masked-row policy and errors; the results agree
    with the plain version to a few units of rounding (the scale multiplies Q, not Q K^T).
    ``need_weights=False`` returns (O, None) holding only one block of scores at a time.
    """
    Q, K, V = check_qkv(Q, K, V)
    temperature = check_positive(temperature, "temperature")
    if not isinstance(need_weights, (bool, np.bool_)):
        raise TypeError(f"need_weights must be True or False, got {need_weights!r}")
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    T_q, T_k = Q.shape[-2], K.shape[-2]
    if mask is not None:
        mask = np.broadcast_to(check_mask(mask, batch + (T_q, T_k)), batch + (T_q, T_k))
    return _blocked_forward(Q, K, V, mask, batch, _score_scale(Q.shape[-1], temperature),
                            need_weights)


def _blocked_forward(Q, K, V, mask, batch, c, need_weights=True):
    """(O, A) of :func:`blocked_attention` for validated operands (``mask`` broadcast to
    batch + (T_q, T_k) or None, ``c`` the score scale); A is None unless ``need_weights``."""
    T_q, T_k, d_v = Q.shape[-2], K.shape[-2], V.shape[-1]
    dtype = Q.dtype
    work = np.promote_types(dtype, np.float32)  # float16 is computed in float32
    N = math.prod(batch)
    filled = bool(N and T_q and T_k)  # else nothing to compute: zero weights, zero output
    new = np.empty if filled else np.zeros  # the blocks write every entry
    O = new((N, T_q, d_v), dtype=work)
    A = new((N, T_q, T_k), dtype=work) if need_weights else None
    if filled:
        _attention_blocks(Q, K, V, mask, batch, c, O, A)
    O = O.reshape(batch + (T_q, d_v)).astype(dtype, copy=False)
    if A is not None:
        A = A.reshape(batch + (T_q, T_k)).astype(dtype, copy=False)
    return O, A


def _flat(x: np.ndarray, batch: tuple, N: int) -> np.ndarray:
    """x broadcast to ``batch`` and flattened to (N, rows, columns): a view unless it must copy."""
    if x.shape[:-2] == batch:
        return x.reshape((N,) + x.shape[-2:])
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
    buffer = None
    ones = np.ones(T_k, dtype=work)
    for i0, i1, q0, q1 in _blocks(N, T_q, T_k):
        with np.errstate(over="ignore"):  # an overflow is reported by _shift_by_row_max
            Qb = np.multiply(Q[i0:i1, q0:q1], c, dtype=work)  # c Q: fewer numbers than c Q K^T
        if A is not None:
            S = A[i0:i1, q0:q1]  # the scores become the weights in place
        else:
            if buffer is None:
                buffer = np.empty((i1 - i0, q1 - q0, T_k), dtype=work)
            S = buffer[: i1 - i0, : q1 - q0]
        with np.errstate(over="ignore", invalid="ignore"):  # reported by _shift_by_row_max
            np.matmul(Qb, K_t[i0:i1], out=S)  # the scores c q_i . k_j
        if mask is not None:
            items = _mask_items(mask, batch, i0, i1)[:, q0:q1]
            np.copyto(S, -np.inf, where=~items)
        else:
            items = None
        _shift_by_row_max(S, items)
        np.exp(S, out=S)
        total = (S @ ones)[..., None]  # (items, rows, 1): each row's sum, by BLAS
        total[total == 0] = 1.0  # a row with every key masked: zero weights, zero output
        Ob = O[i0:i1, q0:q1]
        np.matmul(S, V[i0:i1], out=Ob)
        Ob /= total
        if A is not None:
            S /= total  # division, not a reciprocal: a lone key's weight is exactly 1


def _shift_by_row_max(S: np.ndarray, mask) -> None:
    """Subtract each row's maximum in place (a fully masked row, all -inf, is left as it is).

    The inputs are finite, so a NaN or infinite maximum means that Q K^T itself
    overflowed (-inf is allowed for a row whose every key is masked).
    """
    m = S.max(axis=-1, keepdims=True)
    if not np.isfinite(m).all():  # rare: a fully masked row, or an overflow
        check_no_overflow(m, mask, S.shape[-1])
        m[np.isneginf(m)] = 0.0
    S -= m


def blocked_attention_backward(Q, K, V, dO, mask=None, temperature: float = 1.0, *,
                               O=None, A=None):
    """(dQ, dK, dV) as :func:`attention.attention_backward`, a block of query rows at a time.

    Same arguments, shapes and dtype rules. Pass the forward pass's ``O`` and ``A`` (from
    :func:`blocked_attention` or the plain version) to reuse them, as autograd reuses
    what it saved; without them they are recomputed as :func:`blocked_attention` computes them.
    Each block's dA = dO V^T is turned into dS in place and used while still in cache.
    """
    Q, K, V, dO, mask, O, A, c, batch = check_backward_inputs(
        Q, K, V, dO, mask, temperature, O, A)
    if O is None:  # the forward pass, once more: this module's kernel
        O, A = _blocked_forward(Q, K, V, mask, batch, c)
    dtype = Q.dtype  # the gradients have the inputs' dtype
    work = np.promote_types(dtype, np.float32)  # float16 is computed in float32
    N = math.prod(batch)
    flat = (_flat(x, batch, N).astype(work, copy=False) for x in (Q, K, V, O, A, dO))
    dQ, dK, dV = _gradient_blocks(*flat, c)
    # summed in the working precision, then cast: an overflow of float16 raises
    return _gradients_in(dtype, ((name, g.reshape(batch + g.shape[1:]), x) for name, g, x
                                 in (("dQ", dQ, Q), ("dK", dK, K), ("dV", dV, V))))


def _gradient_blocks(Q, K, V, O, A, dO, c):
    """dQ, dK, dV for flattened (N, ., .) operands, a block of query rows at a time."""
    N, T_q, d_k = Q.shape
    T_k, d_v = V.shape[-2:]
    dQ = np.zeros_like(Q)
    dK = np.zeros((N, T_k, d_k), dtype=Q.dtype)
    dV = np.zeros((N, T_k, d_v), dtype=Q.dtype)
    if not (N and T_q and T_k):
        return dQ, dK, dV
    V_t = np.swapaxes(V, -1, -2)
    buffer = None
    for i0, i1, q0, q1 in _blocks(N, T_q, T_k):
        items, rows = slice(i0, i1), slice(q0, q1)
        A_b, dO_b = A[items, rows], dO[items, rows]
        if buffer is None:
            buffer = np.empty((i1 - i0, q1 - q0, T_k), dtype=Q.dtype)
        dS = buffer[: i1 - i0, : q1 - q0]
        np.matmul(dO_b, V_t[items], out=dS)  # dA = dO V^T
        D = np.vecdot(dO_b, O[items, rows])[..., None]  # D_i = dO_i . O_i
        dS -= D
        dS *= A_b  # dS = A * (dA - D)
        np.matmul(dS, K[items], out=dQ[items, rows])
        dV[items] += np.swapaxes(A_b, -1, -2) @ dO_b  # every block adds to dK and dV
        dK[items] += np.swapaxes(dS, -1, -2) @ Q[items, rows]
    dQ *= c
    dK *= c
    return dQ, dK, dV
