"""Where the dot product comes from, and an alternative to it (page "Why the dot product").

* :func:`gaussian_kernel_weights`: the weights of Nadaraya-Watson kernel regression with a
  Gaussian kernel, a softmax of -|q_i - k_j|^2 / (2 sigma^2). With keys of equal length they
  equal the softmax of q_i . k_j / sigma^2: dot-product attention at temperature sigma^2.
* :func:`additive_scores`: the additive ("Bahdanau") score tanh(q_i W_q + k_j W_k) . w.

Both are written for reading, not speed: each forms a (..., T_q, T_k, width) array.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_float_array, check_positive, check_query_key


def gaussian_kernel_weights(Q, K, bandwidth: float = 1.0) -> np.ndarray:
    """Nadaraya-Watson weights with a Gaussian kernel: A_ij proportional to
    exp(-|q_i - k_j|^2 / (2 bandwidth^2)), normalised over the keys j.

    Computed from the squared distances themselves (not from their expansion into dot
    products), so that the page can compare it with dot-product attention. Shapes: Q
    (..., T_q, d_k), K (..., T_k, d_k) -> (..., T_q, T_k). ``bandwidth`` must be positive
    and finite. A row is a softmax, shifted by its maximum, so the exponentials never
    overflow; a squared distance that overflows to inf (inputs near 1e154 or beyond)
    raises a ValueError rather than returning NaN.
    """
    Q, K = check_query_key(Q, K)
    sigma = check_positive(bandwidth, "bandwidth")
    diff = Q[..., :, None, :] - K[..., None, :, :]  # (..., T_q, T_k, d_k)
    with np.errstate(over="ignore"):
        S = -np.sum(diff * diff, axis=-1) / (2.0 * sigma**2)  # (..., T_q, T_k)
    if not np.isfinite(S).all():
        raise ValueError("a squared distance |q_i - k_j|^2 / (2 bandwidth^2) overflowed "
                         "to inf: rescale Q and K (or widen the bandwidth)")
    if S.shape[-1] == 0:
        return S
    S = S - S.max(axis=-1, keepdims=True)
    E = np.exp(S)
    return E / E.sum(axis=-1, keepdims=True)


def additive_scores(Q, K, W_q, W_k, w) -> np.ndarray:
    """Additive attention scores S_ij = tanh(q_i W_q + k_j W_k) . w (Bahdanau et al., 2014).

    Shapes: Q (..., T_q, d_q), K (..., T_k, d_k), W_q (d_q, d_a), W_k (d_k, d_a), w (d_a,)
    -> (..., T_q, T_k), where d_a is the width of the hidden layer. Queries and keys may
    have different widths. Every score lies in [-sum |w|, sum |w|], however large q and k
    are, as long as q W_q + k W_k is finite: a pre-activation that overflows raises a
    ValueError rather than returning NaN. Forms the (..., T_q, T_k, d_a) array of pre-activations: unlike a dot product, no
    single matrix product gives the scores.
    """
    Q, K = check_query_key(Q, K, same_width=False)
    W_q = as_float_array(W_q, "W_q")
    W_k = as_float_array(W_k, "W_k")
    w = as_float_array(w, "w")
    if w.ndim != 1:
        raise ValueError(f"w must be a vector of shape (d_a,), got shape {w.shape}")
    d_a = w.shape[0]
    for name, W, x in (("W_q", W_q, Q), ("W_k", W_k, K)):
        if W.shape != (x.shape[-1], d_a):
            raise ValueError(f"{name} must have shape {(x.shape[-1], d_a)} for inputs of shape "
                             f"{x.shape} and w of shape {w.shape}, got shape {W.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        pre = (Q @ W_q)[..., :, None, :] + (K @ W_k)[..., None, :, :]  # (..., T_q, T_k, d_a)
    if not np.isfinite(pre).all():
        raise ValueError("a pre-activation q_i W_q + k_j W_k overflowed to inf or NaN: "
                         "rescale Q, K, W_q or W_k")
    return np.tanh(pre) @ w  # (..., T_q, T_k)
