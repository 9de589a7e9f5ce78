"""Moments of attention scores beyond their mean and variance (page "The variance argument").

:func:`attention.scaled_score_moments` gives the mean and variance of the scaled score
``q.k / sqrt(d_k)`` for normal entries. This module adds what the page builds on it:

* :func:`score_moments`: the same pair when the entries of q and of the noise z have another
  distribution, through their fourth moment ``kurtosis = E[q_m^4]`` (3 for the normal); it is
  the reference of the exercise ``ex-score-moments``;
* :func:`score_excess_kurtosis`: the scaled score has the same variance at every width, but not
  the same shape; pooled over queries, its excess kurtosis is ``6 / d_k`` for independent
  normal q and k (within one row, given q, the scores are normal);
* :func:`sample_entries` and :func:`sample_score_parts`: sampled vectors with unit-variance
  entries of a named distribution, and the two sums every correlated score is made of;
* :func:`sample_statistics`: a sample's mean, variance and excess kurtosis, each with its
  standard error, so that a measurement can be read against a prediction honestly.

Throughout, the key is ``k = rho q + sqrt(1 - rho^2) z`` with q and z independent, their
entries independent with mean 0 and variance 1.
"""

from __future__ import annotations

import numbers

import numpy as np

from ._validate import check_in_range, check_positive

#: Fourth moment E[x^4] of each entry distribution :func:`sample_entries` draws (mean 0,
#: variance 1): the normal, the uniform on [-sqrt(3), sqrt(3)], random signs +-1, and the
#: Laplace distribution with scale 1/sqrt(2).
ENTRY_KURTOSIS = {"normal": 3.0, "uniform": 1.8, "signs": 1.0, "laplace": 6.0}


def _check_d_k(d_k) -> int:
    return check_positive(d_k, "d_k", integer=True)


def _check_rho(rho) -> float:
    return check_in_range(rho, "rho", -1.0, 1.0)


def _check_kurtosis(kurtosis) -> float:
    if isinstance(kurtosis, bool) or not isinstance(kurtosis, numbers.Real):
        raise TypeError(f"kurtosis must be a real number >= 1, got {kurtosis!r}")
    # E[x^4] >= E[x^2]^2 = 1 for any unit-variance x (equality for random signs).
    if not 1.0 <= kurtosis < np.inf:
        raise ValueError(f"kurtosis = E[x^4] of a unit-variance entry is at least 1, got {kurtosis!r}")
    return float(kurtosis)


def score_moments(d_k: int, rho: float = 0.0, kurtosis: float = 3.0) -> tuple[float, float]:
    """Mean and variance of ``q.k / sqrt(d_k)`` when the entries have fourth moment ``kurtosis``.

    q.k = rho |q|^2 + sqrt(1 - rho^2) q.z. The mean is rho d_k. Var(q_m^2) = kurtosis - 1, so
    Var(rho |q|^2) = rho^2 d_k (kurtosis - 1); Var(q.z) = d_k; the two terms are uncorrelated
    because z has mean zero. Dividing by d_k: (rho sqrt(d_k), 1 + rho^2 (kurtosis - 2)).
    ``kurtosis = 3`` (normal entries) gives :func:`attention.scaled_score_moments`.
    """
    d_k, rho, kurtosis = _check_d_k(d_k), _check_rho(rho), _check_kurtosis(kurtosis)
    return rho * float(np.sqrt(d_k)), 1.0 + rho**2 * (kurtosis - 2.0)


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
    d_k, rho = _check_d_k(d_k), _check_rho(rho)
    r2 = rho**2
    return 6.0 * (1.0 + 6.0 * r2 + r2**2) / (d_k * (1.0 + r2) ** 2)


def sample_entries(rng: np.random.Generator, shape, entries: str = "normal") -> np.ndarray:
    """Independent entries with mean 0 and variance 1 from the named distribution (float64).

    ``entries`` is a key of :data:`ENTRY_KURTOSIS`: "normal", "uniform", "signs" (+-1 with
    probability 1/2 each) or "laplace".
    """
    if entries == "normal":
        return rng.standard_normal(shape)
    if entries == "uniform":
        return rng.uniform(-np.sqrt(3.0), np.sqrt(3.0), shape)
    if entries == "signs":
        return rng.integers(0, 2, shape) * 2.0 - 1.0
    if entries == "laplace":
        return rng.laplace(0.0, 1.0 / np.sqrt(2.0), shape)
    raise ValueError(f"entries must be one of {sorted(ENTRY_KURTOSIS)}, got {entries!r}")


def sample_score_parts(d_k: int, n: int, entries: str = "normal",
                       seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` sampled pairs of sums (|q|^2, q.z), q and z with independent unit-variance entries.

    Every correlated score is made of these two sums: with k = rho q + sqrt(1 - rho^2) z,
    q.k = rho |q|^2 + sqrt(1 - rho^2) q.z (:func:`scores_from_parts`). Sampling the sums once
    gives the scores at every rho from the same draws. Sampled in chunks, so memory stays small
    at large d_k. Returns two float64 arrays of shape (n,).
    """
    d_k = _check_d_k(d_k)
    n = check_positive(n, "n", integer=True)
    if entries not in ENTRY_KURTOSIS:
        raise ValueError(f"entries must be one of {sorted(ENTRY_KURTOSIS)}, got {entries!r}")
    rng = np.random.default_rng(seed)
    sq, qz = np.empty(n), np.empty(n)
    chunk = max(1, 2**20 // d_k)
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        q = sample_entries(rng, (m, d_k), entries)
        z = sample_entries(rng, (m, d_k), entries)
        sq[start : start + m] = np.einsum("nd,nd->n", q, q)
        qz[start : start + m] = np.einsum("nd,nd->n", q, z)
    return sq, qz


def scores_from_parts(sq: np.ndarray, qz: np.ndarray, rho: float) -> np.ndarray:
    """Raw scores q.k = rho |q|^2 + sqrt(1 - rho^2) q.z from the sums of :func:`sample_score_parts`."""
    rho = _check_rho(rho)
    return rho * np.asarray(sq, float) + np.sqrt(1.0 - rho**2) * np.asarray(qz, float)


def sample_statistics(x) -> dict[str, float]:
    """Mean, variance and excess kurtosis of a sample, each with its standard error.

    The standard errors are the large-sample ones: the standard deviation, over the sample, of
    each statistic's influence function, divided by sqrt(n). For the mean that is sd / sqrt(n);
    for the variance sqrt((m4 - m2^2) / n), which grows with the tails (m2, m4 are the central
    moments). Returns a dict with keys ``mean, mean_se, var, var_se, excess_kurtosis,
    excess_kurtosis_se`` (population moments, dividing by n). The kurtosis error needs
    moments up to the eighth, estimated from the same sample: for heavy tails it is
    optimistic (scaled scores at d_k = 1, n = 20,000: its median about a fifth below the
    standard deviation of the estimate over seeds).
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    n = x.size
    if n < 2:
        raise ValueError(f"a sample needs at least two values, got {n}")
    if not np.isfinite(x).all():
        raise ValueError("the sample contains NaN or inf")
    dev = x - x.mean()
    m2, m3, m4 = (dev**2).mean(), (dev**3).mean(), (dev**4).mean()
    if m2 == 0:
        raise ValueError("the sample is constant: its kurtosis is undefined")
    g = m4 / m2**2
    infl_var = dev**2 - m2
    infl_m4 = dev**4 - m4 - 4.0 * m3 * dev
    infl_kurt = (infl_m4 - 2.0 * g * m2 * infl_var) / m2**2
    root_n = np.sqrt(n)
    return {
        "mean": float(x.mean()), "mean_se": float(np.sqrt(m2) / root_n),
        "var": float(m2), "var_se": float(infl_var.std() / root_n),
        "excess_kurtosis": float(g - 3.0), "excess_kurtosis_se": float(infl_kurt.std() / root_n),
    }
