"""The backward pass of attention, derived by hand in the page "The backward pass, by hand".

Forward: S = c Q K^T, A = softmax(S), O = A V with c = 1 / (temperature sqrt(d_k)).
Backward, step by step (dX means dL/dX and has the shape of X):
    dV = A^T dO,  dA = dO V^T                      (product rule of O = A V)
    D_i = sum_j A_ij dA_ij = dO_i . O_i            (one number per query)
    dS = A * (dA - D)                              (softmax VJP, row by row)
    dQ = c dS K,  dK = c dS^T Q                    (product rule of S = c Q K^T)
Four matrix products, against the forward pass's two: the rule of thumb that gradients cost
about twice the forward pass.
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import as_float_array, check_mask, sum_to_shape
from .forward import _blocks, _flat, check_qkv, scaled_dot_product_attention, score_scale


def attention_backward(Q, K, V, dO, mask=None, temperature: float = 1.0, *, O=None, A=None):
    """Gradients (dQ, dK, dV) of a loss L given dO = dL/dO, for O = attention(Q, K, V).

    Shapes as in :func:`attention.scaled_dot_product_attention`; dO has O's shape
    (..., T_q, d_v). Each gradient has the shape of its input: where a leading dimension
    was broadcast (one K shared by several heads, say), the gradient is summed over it.
    Masked entries need no special care: their weight A_ij is 0, so dS_ij is 0.

    The backward pass needs the forward pass's output O and weights A. Pass both, as
    returned by ``scaled_dot_product_attention(Q, K, V, mask, temperature)``, to reuse them
    (what autograd does with the tensors it saved); without them they are recomputed,
    which costs one more forward pass.
    """
    Q, K, V = check_qkv(Q, K, V)
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    T_q, T_k, d_v = Q.shape[-2], K.shape[-2], V.shape[-1]
    o_shape, a_shape = batch + (T_q, d_v), batch + (T_q, T_k)
    if (O is None) != (A is None):
        raise TypeError("pass both O and A (the forward pass's output and weights) or neither")
    if O is None:
        O, A = scaled_dot_product_attention(Q, K, V, mask=mask, temperature=temperature)
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
    dtype = Q.dtype  # the gradients have the inputs' dtype
    work = np.promote_types(dtype, np.float32)  # float16 is computed in float32
    N = math.prod(batch)
    dQ, dK, dV = _gradient_blocks(*(_flat(x, batch, N).astype(work, copy=False) for x in (Q, K, V, O, A, dO)), c)
    return tuple(sum_to_shape(g.reshape(batch + g.shape[1:]).astype(dtype, copy=False), x.shape)
                 for g, x in ((dQ, Q), (dK, K), (dV, V)))


def _gradient_blocks(Q, K, V, O, A, dO, c):
    """dQ, dK, dV for flattened (N, ., .) operands, a block of query rows at a time.

    Each block's dA = dO V^T is made, turned into dS in place and used while it is still
    in cache; dK and dV gather every block's contribution.
    """
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
        A_bt = np.swapaxes(A_b, -1, -2)
        if buffer is None:
            buffer = np.empty((i1 - i0, q1 - q0, T_k), dtype=Q.dtype)
        dS = buffer[: i1 - i0, : q1 - q0]
        np.matmul(dO_b, V_t[items], out=dS)  # dA = dO V^T
        D = np.vecdot(dO_b, O[items, rows])[..., None]  # D_i = dO_i . O_i
        dS -= D
        dS *= A_b  # dS = A * (dA - D)
        np.matmul(dS, K[items], out=dQ[items, rows])
        dV[items] += A_bt @ dO_b  # every block of queries adds to the keys' and values' gradients
        dK[items] += np.swapaxes(dS, -1, -2) @ Q[items, rows]
    dQ *= c
    dK *= c
    return dQ, dK, dV
