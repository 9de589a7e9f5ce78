"""Statistics of attention scores and weights: the variance argument and saturation.

Used by the pages "The variance argument" (score moments) and "Saturation and the
softmax Jacobian" (saturation statistics and the gradient that reaches the query).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._validate import as_float_array, check_in_range, check_positive
from .softmax import jacobian_frobenius_sq, softmax


def _check_d_k(d_k) -> int:
    return check_positive(d_k, "d_k", integer=True)


def _check_rho(rho) -> float:
    return check_in_range(rho, "rho", -1.0, 1.0)


def scaled_score_moments(d_k: int, rho: float = 0.0) -> tuple[float, float]:
    """Mean and variance of the scaled score q.k / sqrt(d_k) when k = rho q + sqrt(1 - rho^2) z.

    q and z have independent standard normal entries. Then E[q.k] = rho d_k, so the scaled
    mean is rho sqrt(d_k); the variance of rho |q|^2 is 2 d_k rho^2 and that of
    sqrt(1 - rho^2) q.z is (1 - rho^2) d_k, with no covariance, so the scaled variance is
    (2 rho^2 + 1 - rho^2) = 1 + rho^2 at every width. Returns (mean, variance).
    """
    d_k, rho = _check_d_k(d_k), _check_rho(rho)
    return rho * np.sqrt(d_k), 1.0 + rho**2


def sample_scores(d_k: int, n: int, rho: float = 0.0, scaled: bool = True, seed: int = 0) -> np.ndarray:
    """``n`` independent scores q.k (divided by sqrt(d_k) when ``scaled``), k = rho q + sqrt(1-rho^2) z.

    Entries of q and z are independent standard normals; sampled in chunks so memory stays
    small at large d_k. Returns a float64 array of shape (n,).
    """
    d_k, rho = _check_d_k(d_k), _check_rho(rho)
    n = check_positive(n, "n", integer=True)
    rng = np.random.default_rng(seed)
    out = np.empty(n)
    chunk = max(1, 2**20 // d_k)
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        q = rng.standard_normal((m, d_k))
        z = rng.standard_normal((m, d_k))
        k = rho * q + np.sqrt(1.0 - rho**2) * z
        out[start : start + m] = np.einsum("nd,nd->n", q, k)
    return out / np.sqrt(d_k) if scaled else out


def row_score_draws(d_k: int, n_keys: int = 32, n_queries: int = 2000, seed: int = 0):
    """Random attention rows as the scores see them: (|q| (n_queries,), t (n_queries, n_keys)).

    For a query q and keys k_j with independent unit-variance normal entries, write each key
    as k_j = t_j q/|q| + u_j with u_j orthogonal to q. Given q, the t_j are independent
    standard normals, and q.k_j = |q| t_j, where |q|^2 is a chi-square with d_k degrees of
    freedom. So the scores of a row are drawn exactly, in distribution, from n_keys + 1
    numbers instead of (n_keys + 1) d_k. ``t`` depends on the seed alone, not on d_k: the
    same seed gives every width the same key directions and its own query length.
    """
    d_k = _check_d_k(d_k)
    n_keys = check_positive(n_keys, "n_keys", integer=True)
    n_queries = check_positive(n_queries, "n_queries", integer=True)
    rng = np.random.default_rng(seed)
    t = rng.standard_normal((n_queries, n_keys))
    q_norm = np.sqrt(rng.chisquare(d_k, size=n_queries))
    return q_norm, t


def query_gradient_rms(A, t, c, d_k: int) -> np.ndarray:
    """The gradient that reaches the query, as a root-mean-square size given the row's scores.

    An upstream gradient g on the weights a becomes J g on the scores and dq = c K^T J g on
    the query. Write each key as k_j = t_j q/|q| + u_j with u_j orthogonal to q: the scores
    see only t. Averaged over g (identity covariance) and over the u_j (independent normal
    vectors in the d_k - 1 directions orthogonal to q, for unit-variance normal keys),
    E|dq|^2 = c^2 (|J t|^2 + (d_k - 1) tr(J^2)), about c^2 d_k tr(J^2): the squared score
    scale times what the softmax lets through (page "Saturation", section "What gets
    through"). Returns its square root, O(T_k) per row. Shapes: ``A`` (..., T_k), ``t``
    broadcastable to it, ``c`` broadcastable to the result (...). Computed in A's dtype
    (float32 or wider).
    """
    d_k = _check_d_k(d_k)
    A = as_float_array(A, "A")
    if A.ndim < 1 or A.shape[-1] == 0 or (A < 0).any():
        raise ValueError(f"A must hold rows of softmax weights (non-negative, at least one "
                         f"entry), got shape {A.shape}")
    A = A.astype(np.promote_types(A.dtype, np.float32), copy=False)  # float32 stays float32
    t = as_float_array(t, "t")
    try:
        t = np.broadcast_to(t.astype(A.dtype, copy=False), A.shape)
    except ValueError:
        raise ValueError(f"t of shape {t.shape} does not broadcast to A's shape {A.shape}") from None
    c = as_float_array(c, "c").astype(A.dtype, copy=False)
    Jt = A * (t - np.sum(A * t, axis=-1, keepdims=True))  # J t, the product of eq-softmax-vjp
    sq = np.sum(Jt * Jt, axis=-1) + (d_k - 1) * jacobian_frobenius_sq(A)
    return c * np.sqrt(sq)


class SaturationStats(NamedTuple):
    """Summary over random queries of one attention row's shape and gradient (page "Saturation")."""

    d_k: int
    n_keys: int
    scaled: bool
    temperature: float
    mean_max_weight: float  # mean of max_j a_j: 1/n_keys is uniform, 1 is one-hot
    mean_trace: float  # mean of 1 - |a|^2, the Jacobian's trace: the row's spread
    frac_near_one_hot: float  # fraction of rows whose largest weight exceeds 0.9
    mean_jacobian_sq: float  # mean of tr(J^2) = E|J g|^2: what the softmax lets through
    median_jacobian_sq: float
    mean_grad_q: float  # mean over rows of the gradient reaching the query (query_gradient_rms)
    median_grad_q: float
    p90_grad_q: float  # its 90th percentile over rows


def score_scale_of(d_k: int, scaled: bool, temperature: float = 1.0) -> float:
    """c in s_j = c q.k_j: 1 / (temperature sqrt(d_k)) when scaled, 1 / temperature when not."""
    return 1.0 / (temperature * (np.sqrt(d_k) if scaled else 1.0))


def attention_rows(d_k: int, n_keys: int = 32, n_queries: int = 2000, scaled: bool = True,
                   temperature: float = 1.0, seed: int = 0) -> np.ndarray:
    """Weights of ``n_queries`` independent rows, each one query against its own ``n_keys`` keys.

    q and k have independent unit-variance normal entries (drawn through
    :func:`row_score_draws`); scores are q.k, divided by temperature sqrt(d_k) when ``scaled``
    and by temperature alone when not. Returns (n_queries, n_keys).
    """
    temperature = check_positive(temperature, "temperature")
    q_norm, t = row_score_draws(d_k, n_keys, n_queries, seed)
    c = score_scale_of(d_k, scaled, temperature)
    return softmax(c * q_norm[:, None] * t, axis=-1)  # (n_queries, n_keys)


def saturation_stats(d_k: int, n_keys: int = 32, scaled: bool = True, n_queries: int = 2000,
                     temperature: float = 1.0, seed: int = 0) -> SaturationStats:
    """How saturated random attention rows are at width ``d_k``, and what gradient they pass.

    The rows are those of :func:`attention_rows` (same seed, same rows). With unit-variance
    q and k, unscaled rows saturate as d_k grows (the largest weight tends to 1 and the
    trace 1 - |a|^2 to 0); scaled rows look alike at every width. The gradient reaching the
    query (:func:`query_gradient_rms`) is summarised by its mean, median and 90th percentile
    over rows, because saturation makes it spiky: a few near-tied rows carry most of it.
    """
    temperature = check_positive(temperature, "temperature")
    q_norm, t = row_score_draws(d_k, n_keys, n_queries, seed)
    c = score_scale_of(d_k, scaled, temperature)
    A = softmax(c * q_norm[:, None] * t, axis=-1)  # (n_queries, n_keys)
    grad_q = query_gradient_rms(A, t, c, d_k)
    a_max = A.max(axis=-1)
    jsq = jacobian_frobenius_sq(A)
    return SaturationStats(
        d_k=int(d_k), n_keys=int(n_keys), scaled=bool(scaled), temperature=float(temperature),
        mean_max_weight=float(a_max.mean()),
        mean_trace=float((1.0 - np.sum(A * A, axis=-1)).mean()),
        frac_near_one_hot=float((a_max > 0.9).mean()),
        mean_jacobian_sq=float(jsq.mean()), median_jacobian_sq=float(np.median(jsq)),
        mean_grad_q=float(grad_q.mean()), median_grad_q=float(np.median(grad_q)),
        p90_grad_q=float(np.percentile(grad_q, 90)),
    )
