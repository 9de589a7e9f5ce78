"""The backward pass of attention, derived by hand in the page "The backward pass, by hand".

Forward: S = c Q K^T, A = softmax(S), O = A V with c = 1 / (temperature sqrt(d_k)).
Backward, step by step (dX means dL/dX and has the shape of X):
    dV = A^T dO,  dA = dO V^T                      (product rule of O = A V)
    D_i = sum_j A_ij dA_ij = dO_i . O_i            (one number per query)
    dS = A * (dA - D)                              (softmax VJP, row by row)
    dQ = c dS K,  dK = c dS^T Q                    (product rule of S = c Q K^T)
"""

from __future__ import annotations

import numpy as np

from ._validate import as_float_array, sum_to_shape
from .forward import check_qkv, scaled_dot_product_attention, score_scale


def attention_backward(Q, K, V, dO, mask=None, temperature: float = 1.0):
    """Gradients (dQ, dK, dV) of a loss L given dO = dL/dO, for O = attention(Q, K, V).

    Shapes as in :func:`attention.scaled_dot_product_attention`; dO has O's shape
    (..., T_q, d_v). Each gradient has the shape of its input: where a leading dimension
    was broadcast (one K shared by several heads, say), the gradient is summed over it.
    Masked entries need no special care: their weight A_ij is 0, so dS_ij is 0.
    """
    Q, K, V = check_qkv(Q, K, V)
    O, A = scaled_dot_product_attention(Q, K, V, mask=mask, temperature=temperature)
    dO = as_float_array(dO, "dO").astype(O.dtype, copy=False)
    if dO.shape != O.shape:
        raise ValueError(f"dO must have the output's shape {O.shape}, got {dO.shape}")
    c = score_scale(Q.shape[-1], temperature)
    A_t = np.swapaxes(A, -1, -2)
    dV = A_t @ dO  # (..., T_k, d_v)
    dA = dO @ np.swapaxes(V, -1, -2)  # (..., T_q, T_k)
    D = np.sum(dO * O, axis=-1, keepdims=True)  # (..., T_q, 1), equals sum_j A_ij dA_ij
    dS = dA  # (..., T_q, T_k): dS = A * (dA - D), computed in place in dA's memory
    dS -= D
    dS *= A
    dQ = c * (dS @ K)  # (..., T_q, d_k)
    dK = c * (np.swapaxes(dS, -1, -2) @ Q)  # (..., T_k, d_k)
    return sum_to_shape(dQ, Q.shape), sum_to_shape(dK, K.shape), sum_to_shape(dV, V.shape)
