"""Statistics of attention scores and rows: the variance argument and saturation.

Page "The variance argument": the moments of the score ``q.k`` and of the scaled score
``q.k / sqrt(d_k)``, sampled and predicted.

* :func:`score_moments`: the mean and variance of the scaled score when the entries of q and
  of the noise z have fourth moment ``kurtosis = E[q_m^4]`` (3 for the normal; then it is
  :func:`scaled_score_moments`);
* :func:`score_excess_kurtosis`: the scaled score has the same variance at every width, but
  not the same shape; pooled over queries, its excess kurtosis is ``6 / d_k`` for independent
  normal q and k (within one row, given q, the scores are normal);
* :func:`sample_entries`, :func:`sample_score_parts`, :func:`scores_from_parts` and
  :func:`sample_scores`: sampled vectors with unit-variance entries of a named distribution,
  the two sums every correlated score is made of, and the scores themselves;
* :func:`sample_statistics`: a sample's mean, variance and excess kurtosis, each with its
  standard error, so that a measurement can be read against a prediction honestly.

Throughout, the key is ``k = rho q + sqrt(1 - rho^2) z`` with q and z independent, their
entries independent with mean 0 and variance 1.

Page "Saturation and the softmax Jacobian": :func:`row_score_draws` (random rows drawn from
n_keys + 1 numbers), :func:`attention_rows`, :func:`query_gradient_rms` (the gradient that
reaches the query) and :func:`saturation_stats` (a summary over random rows).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ._validate import (
    as_float_array,
    check_choice,
    check_in_range,
    check_integer,
    check_kurtosis,
    check_positive,
)
from .forward import _score_scale
from .softmax import _jacobian_frobenius_sq, _softmax

#: Fourth moment E[x^4] of each entry distribution :func:`sample_entries` draws (mean 0,
#: variance 1): the normal, the uniform on [-sqrt(3), sqrt(3)], random signs +-1, and the
#: Laplace distribution with scale 1/sqrt(2).
ENTRY_KURTOSIS = {"normal": 3.0, "uniform": 1.8, "signs": 1.0, "laplace": 6.0}


# --- the variance argument --------------------------------------------------------------------

def score_moments(d_k: int, rho: float = 0.0, kurtosis: float = 3.0) -> tuple[float, float]:
    """Mean and variance of ``q.k / sqrt(d_k)`` when the entries have fourth moment ``kurtosis``.

    ``kurtosis = 3`` (normal entries) gives :func:`scaled_score_moments`. Returns (mean,
    variance) as Python floats.
    """
    d_k, kurtosis = check_integer(d_k, "d_k"), check_kurtosis(kurtosis)
    rho = check_in_range(rho, "rho", -1.0, 1.0)
    return rho * math.sqrt(d_k), 1.0 + rho**2 * (kurtosis - 2.0)


def scaled_score_moments(d_k: int, rho: float = 0.0) -> tuple[float, float]:
    """Mean and variance of the scaled score q.k / sqrt(d_k) when k = rho q + sqrt(1 - rho^2) z.

    q and z have independent standard normal entries. Then E[q.k] = rho d_k, so the scaled
    mean is rho sqrt(d_k); the variance of rho |q|^2 is 2 d_k rho^2 and that of
    sqrt(1 - rho^2) q.z is (1 - rho^2) d_k, with no covariance, so the scaled variance is
    (2 rho^2 + 1 - rho^2) = 1 + rho^2 at every width. Returns (mean, variance):
    :func:`score_moments` with normal entries.
    """
    return score_moments(d_k, rho, ENTRY_KURTOSIS["normal"])


def score_excess_kurtosis(d_k: int, rho: float = 0.0) -> float:
    """Excess kurtosis of the score q.k (raw or scaled: scaling does not change it), normal entries.

    q.k is a sum of d_k independent terms t = q_m k_m, and the fourth cumulant of a sum is the
    sum of the terms' fourth cumulants, so the excess kurtosis is that of one term divided by
    d_k. For correlated standard normals, E[t] = rho, Var(t) = 1 + rho^2 and t's fourth cumulant
    is 6 + 36 rho^2 + 6 rho^4, which gives 6 (1 + 6 rho^2 + rho^4) / (d_k (1 + rho^2)^2):
    ``6 / d_k`` at rho = 0, ``12 / d_k`` at rho = +-1 (then q.k = +-|q|^2, a chi-square up to sign).

    This is the kurtosis of scores pooled over independent queries. Within one softmax row
    (one q, many independent keys, rho = 0) the scores are exactly normal given q, with
    variance |q|^2 / d_k: the pooled ``6 / d_k`` is that variance changing from row to row,
    3 E[(|q|^2 / d_k)^2] = 3 (1 + 2 / d_k).
    """
    d_k, rho = check_integer(d_k, "d_k"), check_in_range(rho, "rho", -1.0, 1.0)
    r2 = rho**2
    return 6.0 * (1.0 + 6.0 * r2 + r2**2) / (d_k * (1.0 + r2) ** 2)


def sample_entries(rng: np.random.Generator, shape, entries: str = "normal") -> np.ndarray:
    """Independent entries with mean 0 and variance 1 from the named distribution (float64).

    ``entries`` is a key of :data:`ENTRY_KURTOSIS`: "normal", "uniform", "signs" (+-1 with
    probability 1/2 each) or "laplace".
    """
    return _sample_entries(rng, shape, check_choice(entries, "entries", tuple(ENTRY_KURTOSIS)))


def _sample_entries(rng: np.random.Generator, shape, entries: str) -> np.ndarray:
    if entries == "normal":
        return rng.standard_normal(shape)
    if entries == "uniform":
        return rng.uniform(-np.sqrt(3.0), np.sqrt(3.0), shape)
    if entries == "signs":
        return rng.integers(0, 2, shape) * 2.0 - 1.0
    return rng.laplace(0.0, 1.0 / np.sqrt(2.0), shape)


def sample_score_parts(d_k: int, n: int, entries: str = "normal",
                       seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` sampled pairs of sums (|q|^2, q.z), q and z with independent unit-variance entries.

    Every correlated score is made of these two sums: with k = rho q + sqrt(1 - rho^2) z,
    q.k = rho |q|^2 + sqrt(1 - rho^2) q.z (:func:`scores_from_parts`). Sampling the sums once
    gives the scores at every rho from the same draws. Sampled in chunks, so memory stays small
    at large d_k. Returns two float64 arrays of shape (n,).
    """
    d_k = check_integer(d_k, "d_k")
    n = check_positive(n, "n", integer=True)
    entries = check_choice(entries, "entries", tuple(ENTRY_KURTOSIS))
    return _sample_score_parts(d_k, n, entries, seed)


def _sample_score_parts(d_k: int, n: int, entries: str, seed) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    sq, qz = np.empty(n), np.empty(n)
    chunk = max(1, 2**20 // d_k)
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        q = _sample_entries(rng, (m, d_k), entries)
        z = _sample_entries(rng, (m, d_k), entries)
        sq[start : start + m] = np.einsum("nd,nd->n", q, q)
        qz[start : start + m] = np.einsum("nd,nd->n", q, z)
    return sq, qz


def scores_from_parts(sq: np.ndarray, qz: np.ndarray, rho: float) -> np.ndarray:
    """Raw scores q.k = rho |q|^2 + sqrt(1 - rho^2) q.z from the sums of :func:`sample_score_parts`."""
    return _scores_from_parts(sq, qz, check_in_range(rho, "rho", -1.0, 1.0))


def _scores_from_parts(sq, qz, rho: float) -> np.ndarray:
    return rho * np.asarray(sq, float) + np.sqrt(1.0 - rho**2) * np.asarray(qz, float)


def sample_scores(d_k: int, n: int, rho: float = 0.0, scaled: bool = True, seed: int = 0) -> np.ndarray:
    """``n`` independent scores q.k (divided by sqrt(d_k) when ``scaled``), k = rho q + sqrt(1-rho^2) z.

    Entries of q and z are independent standard normals (:func:`sample_score_parts`, whose
    draws these are). Returns a float64 array of shape (n,).
    """
    d_k, n = check_integer(d_k, "d_k"), check_positive(n, "n", integer=True)
    rho = check_in_range(rho, "rho", -1.0, 1.0)
    scores = _scores_from_parts(*_sample_score_parts(d_k, n, "normal", seed), rho)
    return scores / np.sqrt(d_k) if scaled else scores


def sample_statistics(x) -> dict[str, float]:
    """Mean, variance and excess kurtosis of a sample, each with its standard error.

    The standard errors are the large-sample ones: the standard deviation, over the sample, of
    each statistic's influence function, divided by sqrt(n). For the mean that is sd / sqrt(n);
    for the variance sqrt((m4 - m2^2) / n), which grows with the tails (m2, m4 are the central
    moments). Returns a dict with keys ``mean, mean_se, var, var_se, excess_kurtosis,
    excess_kurtosis_se`` (population moments, dividing by n). The kurtosis error needs
    moments up to the eighth, estimated from the same sample: for heavy tails it is
    optimistic (scaled scores at d_k = 1, n = 20,000: its median is below the standard
    deviation of the estimate over seeds). The powers are taken of the standardised sample,
    so that its scale cannot make them underflow or overflow.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    n = x.size
    if n < 2:
        raise ValueError(f"a sample needs at least two values, got {n}")
    if not np.isfinite(x).all():
        raise ValueError("the sample contains NaN or inf")
    dev = x - x.mean()
    largest = float(np.abs(dev).max())
    if largest == 0:
        raise ValueError("the sample is constant: its kurtosis is undefined")
    sd = largest * float(np.sqrt(np.mean(np.square(dev / largest))))
    z = dev / sd  # mean 0, variance 1: the central moments of x are sd^k times z's
    z2 = z * z
    g, m3 = float(np.mean(z2 * z2)), float(np.mean(z2 * z))
    infl_var = z2 - 1.0  # the variance's influence function, in units of sd^2
    infl_kurt = (z2 * z2 - g - 4.0 * m3 * z) - 2.0 * g * infl_var
    root_n = np.sqrt(n)
    return {
        "mean": float(x.mean()), "mean_se": float(sd / root_n),
        "var": float(sd * sd), "var_se": float(sd * sd * infl_var.std() / root_n),
        "excess_kurtosis": g - 3.0, "excess_kurtosis_se": float(infl_kurt.std() / root_n),
    }


# --- saturation -------------------------------------------------------------------------------

def row_score_draws(d_k: int, n_keys: int = 32, n_queries: int = 2000, seed: int = 0):
    """Random attention rows as the scores see them: (|q| (n_queries,), t (n_queries, n_keys)).

    For a query q and keys k_j with independent unit-variance normal entries, write each key
    as k_j = t_j q/|q| + u_j with u_j orthogonal to q. Given q, the t_j are independent
    standard normals, and q.k_j = |q| t_j, where |q|^2 is a chi-square with d_k degrees of
    freedom. So the scores of a row are drawn exactly, in distribution, from n_keys + 1
    numbers instead of (n_keys + 1) d_k. ``t`` depends on the seed alone, not on d_k: the
    same seed gives every width the same key directions and its own query length.
    """
    d_k = check_integer(d_k, "d_k")
    n_keys = check_positive(n_keys, "n_keys", integer=True)
    n_queries = check_positive(n_queries, "n_queries", integer=True)
    return _row_score_draws(d_k, n_keys, n_queries, seed)


def _row_score_draws(d_k: int, n_keys: int, n_queries: int, seed):
    rng = np.random.default_rng(seed)
    t = rng.standard_normal((n_queries, n_keys))
    q_norm = np.sqrt(rng.chisquare(d_k, size=n_queries))
    return q_norm, t


def _query_gradient_rms(A: np.ndarray, t: np.ndarray, c, d_k: int) -> np.ndarray:
    """:func:`query_gradient_rms` on checked arrays: A and t of one float dtype and shape."""
    Jt = A * (t - np.sum(A * t, axis=-1, keepdims=True))  # J t, the product of eq-softmax-vjp
    sq = np.sum(Jt * Jt, axis=-1) + (d_k - 1) * _jacobian_frobenius_sq(A)
    return c * np.sqrt(sq)


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
    d_k = check_integer(d_k, "d_k")
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
    return _query_gradient_rms(A, t, c, d_k)


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


def _rows(d_k, n_keys, n_queries, scaled, temperature, seed):
    """(A, t, c) of :func:`attention_rows`: its weights, key directions and score scale."""
    temperature = check_positive(temperature, "temperature")
    d_k = check_integer(d_k, "d_k")
    n_keys = check_positive(n_keys, "n_keys", integer=True)
    n_queries = check_positive(n_queries, "n_queries", integer=True)
    q_norm, t = _row_score_draws(d_k, n_keys, n_queries, seed)
    # c in s_j = c q.k_j: 1 / (temperature sqrt(d_k)) when scaled, 1 / temperature when not.
    c = _score_scale(d_k, temperature) if scaled else 1.0 / temperature
    return _softmax(c * q_norm[:, None] * t, axis=-1), t, c  # A: (n_queries, n_keys)


def attention_rows(d_k: int, n_keys: int = 32, n_queries: int = 2000, scaled: bool = True,
                   temperature: float = 1.0, seed: int = 0) -> np.ndarray:
    """Weights of ``n_queries`` independent rows, each one query against its own ``n_keys`` keys.

    q and k have independent unit-variance normal entries (drawn through
    :func:`row_score_draws`); scores are q.k, divided by temperature sqrt(d_k) when ``scaled``
    and by temperature alone when not. Returns (n_queries, n_keys).
    """
    return _rows(d_k, n_keys, n_queries, scaled, temperature, seed)[0]


def saturation_stats(d_k: int, n_keys: int = 32, scaled: bool = True, n_queries: int = 2000,
                     temperature: float = 1.0, seed: int = 0) -> SaturationStats:
    """How saturated random attention rows are at width ``d_k``, and what gradient they pass.

    The rows are those of :func:`attention_rows` (same seed, same rows). With unit-variance
    q and k, unscaled rows saturate as d_k grows (the largest weight tends to 1 and the
    trace 1 - |a|^2 to 0); scaled rows look alike at every width. The gradient reaching the
    query (:func:`query_gradient_rms`) is summarised by its mean, median and 90th percentile
    over rows, because saturation makes it spiky: a few near-tied rows carry most of it.
    """
    A, t, c = _rows(d_k, n_keys, n_queries, scaled, temperature, seed)
    grad_q = _query_gradient_rms(A, t, c, int(d_k))
    a_max = A.max(axis=-1)
    jsq = _jacobian_frobenius_sq(A)
    return SaturationStats(
        d_k=int(d_k), n_keys=int(n_keys), scaled=bool(scaled), temperature=float(temperature),
        mean_max_weight=float(a_max.mean()),
        mean_trace=float((1.0 - np.sum(A * A, axis=-1)).mean()),
        frac_near_one_hot=float((a_max > 0.9).mean()),
        mean_jacobian_sq=float(jsq.mean()), median_jacobian_sq=float(np.median(jsq)),
        mean_grad_q=float(grad_q.mean()), median_grad_q=float(np.median(grad_q)),
        p90_grad_q=float(np.percentile(grad_q, 90)),
    )
