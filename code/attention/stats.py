"""Statistics of attention scores and weights: the variance argument and saturation.

Used by the pages "The variance argument" (score moments) and "Saturation and the
softmax Jacobian" (saturation statistics).
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from ._validate import check_positive
from .softmax import softmax


def _check_d_k(d_k) -> int:
    if isinstance(d_k, bool) or not isinstance(d_k, numbers.Integral):
        raise TypeError(f"d_k must be a positive integer, got {d_k!r}")
    if d_k < 1:
        raise ValueError(f"d_k must be a positive integer, got {d_k!r}")
    return int(d_k)


def _check_rho(rho) -> float:
    if isinstance(rho, bool) or not isinstance(rho, numbers.Real):
        raise TypeError(f"rho must be a real number in [-1, 1], got {rho!r}")
    if not -1.0 <= rho <= 1.0:  # also catches NaN and +-inf
        raise ValueError(f"rho must lie in [-1, 1], got {rho!r}")
    return float(rho)


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


class SaturationStats(NamedTuple):
    """Averages over random queries of one attention row's shape (page "Saturation")."""

    d_k: int
    n_keys: int
    scaled: bool
    temperature: float
    mean_max_weight: float  # mean of max_j a_j: 1/n_keys is uniform, 1 is one-hot
    mean_trace: float  # mean of 1 - |a|^2, the softmax Jacobian's trace
    frac_near_one_hot: float  # fraction of rows whose largest weight exceeds 0.9


def attention_rows(d_k: int, n_keys: int = 32, n_queries: int = 2000, scaled: bool = True,
                   temperature: float = 1.0, seed: int = 0) -> np.ndarray:
    """Weights of ``n_queries`` independent rows, each one query against its own ``n_keys`` keys.

    q and k have independent unit-variance normal entries; scores are q.k, divided by
    temperature sqrt(d_k) when ``scaled`` and by temperature alone when not.
    Returns (n_queries, n_keys).
    """
    d_k = _check_d_k(d_k)
    n_keys = check_positive(n_keys, "n_keys", integer=True)
    n_queries = check_positive(n_queries, "n_queries", integer=True)
    temperature = check_positive(temperature, "temperature")
    rng = np.random.default_rng(seed)
    scale = 1.0 / (temperature * (np.sqrt(d_k) if scaled else 1.0))
    rows = np.empty((n_queries, n_keys))
    chunk = max(1, 2**21 // (n_keys * d_k))
    for start in range(0, n_queries, chunk):
        m = min(chunk, n_queries - start)
        q = rng.standard_normal((m, 1, d_k))
        K = rng.standard_normal((m, n_keys, d_k))
        s = np.einsum("mod,mkd->mk", q, K) * scale  # (m, n_keys)
        rows[start : start + m] = softmax(s, axis=-1)
    return rows


def saturation_stats(d_k: int, n_keys: int = 32, scaled: bool = True, n_queries: int = 2000,
                     temperature: float = 1.0, seed: int = 0) -> SaturationStats:
    """Mean largest weight and mean Jacobian trace of random attention rows at width ``d_k``.

    With unit-variance q and k, unscaled rows saturate as d_k grows (the largest weight
    tends to 1 and the trace 1 - |a|^2 to 0); scaled rows look the same at every width.
    """
    A = attention_rows(d_k, n_keys, n_queries, scaled, temperature, seed)
    a_max = A.max(axis=-1)
    return SaturationStats(
        d_k=int(d_k), n_keys=int(n_keys), scaled=bool(scaled), temperature=float(temperature),
        mean_max_weight=float(a_max.mean()),
        mean_trace=float((1.0 - np.sum(A * A, axis=-1)).mean()),
        frac_near_one_hot=float((a_max > 0.9).mean()),
    )
