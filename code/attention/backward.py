"""The backward pass of attention, derived by hand on the page "The backward pass, by hand".

Forward: S = c Q K^T, A = softmax(S), O = A V with c = 1 / (temperature sqrt(d_k)).
Backward, step by step (dX means dL/dX and has the shape of X):
    dV = A^T dO,  dA = dO V^T                      (product rule of O = A V)
    D_i = sum_j A_ij dA_ij = dO_i . O_i            (one number per query)
    dS = A * (dA - D)                              (softmax VJP, row by row)
    dQ = c dS K,  dK = c dS^T Q                    (product rule of S = c Q K^T)
Four matrix products of the forward pass's size, against its two, given the stored A.
The same arithmetic arranged for speed: :func:`attention.blocked.blocked_attention_backward`.

:func:`tiled_attention_backward` is the FlashAttention-style version: it keeps no A, but
rebuilds it one tile of keys at a time from the row log-sum-exp lse, A_ij = exp(S_ij - lse_i),
one more product (Q K^T) than the stored-A version: five against the forward's two. It is
where a mask needs code: the mask is applied again on every tile, and a query that sees no
key (lse_i = -inf) must not give exp(-inf - (-inf)) = NaN.
"""

from __future__ import annotations

import numpy as np

from ._validate import (
    as_float_array,
    check_mask,
    check_no_overflow,
    check_positive,
    check_qkv,
    sum_to_shape,
)
from .forward import _attend, _score_scale


def attention_backward(Q, K, V, dO, mask=None, temperature: float = 1.0, *, O=None, A=None):
    """Gradients (dQ, dK, dV) of a loss L given dO = dL/dO, for O = attention(Q, K, V).

    Shapes as in :func:`attention.scaled_dot_product_attention`; dO has O's shape
    (..., T_q, d_v). Each gradient has the shape of its input: where a leading dimension
    was broadcast (one K shared by several heads, say), the gradient is summed over it.
    Masked entries need no special care: their weight A_ij is 0, so dS_ij is 0. The
    gradients have the inputs' common dtype (float16 is computed in float32).

    The backward pass needs the forward pass's output O and weights A. Pass both, as
    returned by ``scaled_dot_product_attention(Q, K, V, mask, temperature)``, to reuse them
    (what autograd does with the tensors it saved); without them they are recomputed,
    which costs one more forward pass. For float16 inputs the returned O and A are rounded
    to float16, and reusing them costs accuracy; recomputed, they stay float32.
    """
    Q, K, V, dO, mask, O, A, c, _ = check_backward_inputs(Q, K, V, dO, mask, temperature, O, A)
    dtype = Q.dtype
    work = np.promote_types(dtype, np.float32)  # float16 is computed in float32
    Q_, K_, V_, dO = (x.astype(work, copy=False) for x in (Q, K, V, dO))
    if O is None:  # the forward pass, once more, in float32 too (O and A not rounded
        O, A = _attend(Q_, K_, V_, mask, c)  # to float16: dS = A (dA - D) would lose them)
    O, A = (x.astype(work, copy=False) for x in (O, A))

    def T_(X):  # transpose the last two axes: X^T for every batch item and head
        return np.swapaxes(X, -1, -2)

    dV = T_(A) @ dO                                # (..., T_k, d_v)
    dA = dO @ T_(V_)                               # (..., T_q, T_k)
    D = np.sum(dO * O, axis=-1, keepdims=True)     # (..., T_q, 1): D_i = dO_i . O_i
    dS = A * (dA - D)                              # (..., T_q, T_k)
    dQ = c * (dS @ K_)                             # (..., T_q, d_k)
    dK = c * (T_(dS) @ Q_)                         # (..., T_k, d_k)
    return _gradients_in(dtype, (("dQ", dQ, Q), ("dK", dK, K), ("dV", dV, V)))


def check_backward_inputs(Q, K, V, dO, mask, temperature, O, A):
    """Validated (Q, K, V, dO, mask, O, A, c, batch) for a backward pass; computes nothing.

    Q, K, V as :func:`attention._validate.check_qkv` returns them; ``mask`` (or None)
    checked and broadcast to the scores' shape (..., T_q, T_k); ``c`` the score scale;
    ``batch`` the broadcast shape of the leading dimensions. O and A are the forward
    pass's results: both given (checked against the shapes they must have) or both None
    (returned as None: the caller computes them). dO must have O's shape.
    """
    Q, K, V = check_qkv(Q, K, V)
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    T_q, T_k, d_v = Q.shape[-2], K.shape[-2], V.shape[-1]
    o_shape, a_shape = batch + (T_q, d_v), batch + (T_q, T_k)
    if (O is None) != (A is None):
        raise TypeError("pass both O and A (the forward pass's output and weights) or neither")
    if O is not None:
        O, A = as_float_array(O, "O"), as_float_array(A, "A")
        for name, x, shape in (("O", O, o_shape), ("A", A, a_shape)):
            if x.shape != shape:
                raise ValueError(f"{name} must have shape {shape} (from the forward pass), got {x.shape}")
    if mask is not None:
        mask = np.broadcast_to(check_mask(mask, a_shape), a_shape)
    c = _score_scale(Q.shape[-1], check_positive(temperature, "temperature"))
    dO = as_float_array(dO, "dO")
    if dO.shape != o_shape:
        raise ValueError(f"dO must have the output's shape {o_shape}, got {dO.shape}")
    return Q, K, V, dO, mask, O, A, c, batch


def tiled_attention_backward(Q, K, V, dO, block_size: int, mask=None, temperature: float = 1.0,
                             *, O=None, lse=None):
    """(dQ, dK, dV) as :func:`attention_backward`, without ever holding T_q x T_k numbers.

    The recompute backward pass of FlashAttention (Dao et al. 2022, Appendix B): from the
    output ``O`` (..., T_q, d_v) and each query's log-sum-exp of its scores ``lse``
    (..., T_q; not named L, the loss), the keys are visited ``block_size`` at a time and
    each tile of weights is rebuilt as A = exp(S - lse); D_i = dO_i . O_i is computed
    once, before the loop. The mask (boolean, True = may attend, broadcasting to
    (..., T_q, T_k)) must be the forward pass's and is applied again to every tile; a
    query with no visible key (lse_i = -inf, as torch.logsumexp gives it; +inf is
    refused) gets zero weights and zero gradients, never NaN. Pass both ``O`` and
    ``lse`` or neither (then a key-blocked online-softmax pass computes them). Same
    shapes, dtype rules and broadcasting as :func:`attention_backward`: a score of -inf
    on a visible key is accepted (weight 0) unless it is the row's only kind, which,
    like NaN or +inf, is an overflow (``ValueError``); so is a gradient that overflows
    a float16 input's dtype.
    """
    Q, K, V = check_qkv(Q, K, V)
    block_size = check_positive(block_size, "block_size", integer=True)
    c = _score_scale(Q.shape[-1], check_positive(temperature, "temperature"))
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    T_q, T_k, d_v = Q.shape[-2], K.shape[-2], V.shape[-1]
    if mask is not None:
        mask = np.broadcast_to(check_mask(mask, batch + (T_q, T_k)), batch + (T_q, T_k))
    dO = as_float_array(dO, "dO")
    if dO.shape != batch + (T_q, d_v):
        raise ValueError(f"dO must have the output's shape {batch + (T_q, d_v)}, got {dO.shape}")
    if (O is None) != (lse is None):
        raise TypeError("pass both O and lse (the forward pass's output and log-sum-exp) or neither")
    dtype = Q.dtype
    work = np.promote_types(dtype, np.float32)  # float16 is computed in float32
    Q_, K_, V_, dO = (x.astype(work, copy=False) for x in (Q, K, V, dO))
    if O is None:
        O, lse = _output_and_log_sum_exp(Q_, K_, V_, mask, c, block_size)
    else:
        O = as_float_array(O, "O")
        lse = as_float_array(lse, "lse", allow_neg_inf=True)
        for name, x, shape in (("O", O, batch + (T_q, d_v)), ("lse", lse, batch + (T_q,))):
            if x.shape != shape:
                raise ValueError(f"{name} must have shape {shape} (from the forward pass), got {x.shape}")
    O, lse = O.astype(work, copy=False), lse.astype(work, copy=False)[..., None]
    lse = np.where(np.isneginf(lse), np.inf, lse)  # no visible key: exp(S - inf) = 0, not NaN

    def T_(X):
        return np.swapaxes(X, -1, -2)

    D = np.sum(dO * O, axis=-1, keepdims=True)           # (..., T_q, 1), once
    row_max = np.full(batch + (T_q, 1), -np.inf, dtype=work)  # for the overflow check
    dQ = np.zeros(batch + Q.shape[-2:], dtype=work)
    dK = np.zeros(batch + K.shape[-2:], dtype=work)
    dV = np.zeros(batch + V.shape[-2:], dtype=work)
    for k0 in range(0, T_k, block_size):
        blk = slice(k0, k0 + block_size)
        with np.errstate(over="ignore"):                   # reported by check_no_overflow
            S = c * (Q_ @ T_(K_[..., blk, :]))             # (..., T_q, block)
        if mask is not None:
            S = np.where(mask[..., blk], S, -np.inf)       # the mask, on every tile
        check_no_overflow(S.max(initial=-np.inf))
        row_max = np.maximum(row_max, S.max(axis=-1, keepdims=True))
        A = np.exp(S - lse)                                  # the tile of weights
        dV[..., blk, :] = T_(A) @ dO
        dS = A * (dO @ T_(V_[..., blk, :]) - D)
        dQ += c * (dS @ K_[..., blk, :])
        dK[..., blk, :] = c * (T_(dS) @ Q_)
    check_no_overflow(row_max, mask, T_k)  # a row whose visible scores were all -inf
    return _gradients_in(dtype, (("dQ", dQ, Q), ("dK", dK, K), ("dV", dV, V)))


def _gradients_in(dtype, named):
    """Each gradient summed to its input's shape and cast to the inputs' dtype; a gradient
    that is finite in the working precision but overflows ``dtype`` (float16's 65504)
    raises ``ValueError`` instead of coming back as +-inf."""
    out = []
    for name, g, x in named:
        g = sum_to_shape(g, x.shape)
        with np.errstate(over="ignore"):
            cast = g.astype(dtype, copy=False)
        if cast is not g and np.isinf(cast).any() and np.isfinite(g).all():
            raise ValueError(
                f"the gradient {name} overflowed {np.dtype(dtype).name}: an entry exceeds "
                f"{float(np.finfo(dtype).max):g}; scale the loss down, or compute in "
                "float32")
        out.append(cast)
    return tuple(out)


def _output_and_log_sum_exp(Q, K, V, mask, c, block_size):
    """O (..., T_q, d_v) and lse (..., T_q) by an online softmax over blocks of keys.

    lse_i = m_i + ln l_i from the running maximum m and normaliser l; -inf for a query that
    sees no key (its output is zero).
    """
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    T_q, T_k = Q.shape[-2], K.shape[-2]
    m = np.full(batch + (T_q, 1), -np.inf, dtype=Q.dtype)    # running row maximum
    l = np.zeros(batch + (T_q, 1), dtype=Q.dtype)             # running normaliser
    acc = np.zeros(batch + (T_q, V.shape[-1]), dtype=Q.dtype)  # running sum of e^(s-m) v
    for k0 in range(0, T_k, block_size):
        blk = slice(k0, k0 + block_size)
        with np.errstate(over="ignore"):  # reported by check_no_overflow
            S = c * (Q @ np.swapaxes(K[..., blk, :], -1, -2))
        if mask is not None:
            S = np.where(mask[..., blk], S, -np.inf)
        check_no_overflow(S.max(initial=-np.inf))
        m_new = np.maximum(m, S.max(axis=-1, keepdims=True))
        shift = np.where(np.isneginf(m_new), 0.0, m_new)       # all masked so far: 0
        P = np.exp(S - shift)
        rescale = np.exp(np.where(np.isneginf(m), -np.inf, m - shift))
        l = l * rescale + P.sum(axis=-1, keepdims=True)
        acc = acc * rescale + P @ V[..., blk, :]
        m = m_new
    seen = l > 0
    O = np.where(seen, acc / np.where(seen, l, 1.0), 0.0)
    with np.errstate(divide="ignore"):
        lse = np.where(seen, m + np.log(np.where(seen, l, 1.0)), -np.inf)
    return O, lse[..., 0]
