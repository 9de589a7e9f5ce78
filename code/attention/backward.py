"""The backward pass of attention, derived by hand on the page "The backward pass, by hand".

Forward: S = c Q K^T, A = softmax(S), O = A V with c = 1 / (temperature sqrt(d_k)).
Backward, step by step (dX means dL/dX and has the shape of X):
    dV = A^T dO,  dA = dO V^T                      (product rule of O = A V)
    D_i = sum_j A_ij dA_ij = dO_i . O_i            (one number per query)
    dS = A * (dA - D)                              (softmax VJP, row by row)
    dQ = c dS K,  dK = c dS^T Q                    (product rule of S = c Q K^T)
Four matrix products of the forward pass's size, against its two. The same arithmetic
arranged for speed: :func:`attention.blocked.blocked_attention_backward`.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_float_array, check_mask, sum_to_shape
from .forward import check_qkv, scaled_dot_product_attention, score_scale


def attention_backward(Q, K, V, dO, mask=None, temperature: float = 1.0, *, O=None, A=None):
    """Gradients (dQ, dK, dV) of a loss L given dO = dL/dO, for O = attention(Q, K, V).

    Shapes as in :func:`attention.scaled_dot_product_attention`; dO has O's shape
    (..., T_q, d_v). Each gradient has the shape of its input: where a leading dimension
    was broadcast (one K shared by several heads, say), the gradient is summed over it.
    Masked entries need no special care: their weight A_ij is 0, so dS_ij is 0. The
    gradients have the inputs' dtype (float16 is computed in float32).

    The backward pass needs the forward pass's output O and weights A. Pass both, as
    returned by ``scaled_dot_product_attention(Q, K, V, mask, temperature)``, to reuse them
    (what autograd does with the tensors it saved); without them they are recomputed,
    which costs one more forward pass.
    """
    Q, K, V, dO, O, A, c, _ = check_backward_inputs(Q, K, V, dO, mask, temperature, O, A)
    dtype = Q.dtype
    work = np.promote_types(dtype, np.float32)  # float16 is computed in float32
    Q_, K_, V_, dO, O, A = (x.astype(work, copy=False) for x in (Q, K, V, dO, O, A))

    def T_(X):  # transpose the last two axes: X^T for every batch item and head
        return np.swapaxes(X, -1, -2)

    dV = T_(A) @ dO                                # (..., T_k, d_v)
    dA = dO @ T_(V_)                               # (..., T_q, T_k)
    D = np.sum(dO * O, axis=-1, keepdims=True)     # (..., T_q, 1): D_i = dO_i . O_i
    dS = A * (dA - D)                              # (..., T_q, T_k)
    dQ = c * (dS @ K_)                             # (..., T_q, d_k)
    dK = c * (T_(dS) @ Q_)                         # (..., T_k, d_k)
    return tuple(sum_to_shape(g, x.shape).astype(dtype, copy=False)
                 for g, x in ((dQ, Q), (dK, K), (dV, V)))


def check_backward_inputs(Q, K, V, dO, mask, temperature, O, A, *,
                          forward=scaled_dot_product_attention):
    """Validated (Q, K, V, dO, O, A, c, batch) for a backward pass.

    O and A are the forward pass's results: both given (checked against the shapes they
    must have) or neither (then ``forward(Q, K, V, mask=mask, temperature=temperature)``
    computes them). ``batch`` is the broadcast shape of the leading dimensions.
    """
    Q, K, V = check_qkv(Q, K, V)
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    T_q, T_k, d_v = Q.shape[-2], K.shape[-2], V.shape[-1]
    o_shape, a_shape = batch + (T_q, d_v), batch + (T_q, T_k)
    if (O is None) != (A is None):
        raise TypeError("pass both O and A (the forward pass's output and weights) or neither")
    if O is None:
        O, A = forward(Q, K, V, mask=mask, temperature=temperature)
    else:
        O, A = as_float_array(O, "O"), as_float_array(A, "A")
        for name, x, shape in (("O", O, o_shape), ("A", A, a_shape)):
            if x.shape != shape:
                raise ValueError(f"{name} must have shape {shape} (from the forward pass), got {x.shape}")
        if mask is not None:
            check_mask(mask, a_shape)
    c = score_scale(Q.shape[-1], temperature)  # also validates the temperature
    dO = as_float_array(dO, "dO")
    if dO.shape != o_shape:
        raise ValueError(f"dO must have the output's shape {o_shape}, got {dO.shape}")
    return Q, K, V, dO, O, A, c, batch
