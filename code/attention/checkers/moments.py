"""Checker of the exercise ``ex-score-moments`` (page "The variance argument"): the mean and
variance of a correlated score when the entries are not normal,
``scaled_score_moments(d_k, rho, kurtosis) -> (mean, variance)``.

The specification it checks: with k = rho q + sqrt(1 - rho^2) z, the entries of q and z
independent with mean 0, variance 1 and fourth moment ``kurtosis = E[q_m^4]``, the scaled score
q.k / sqrt(d_k) has mean rho sqrt(d_k) and variance 1 + rho^2 (kurtosis - 2); for positive and
negative rho, at several widths, for normal entries (kurtosis 3) and others; and the formula
must agree with sampled scores for random-sign and Laplace entries. When an attempt fails, the
checker compares it with the usual mistakes and names the one it matches.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..moments import ENTRY_KURTOSIS, sample_score_parts, sample_statistics, score_moments, scores_from_parts
from ._common import _RNG_SEED, _report, _run

D_KS = (1, 16, 64, 256)
RHOS = (-0.8, -0.3, 0.0, 0.5, 1.0)
KURTOSES = (1.0, 1.8, 3.0, 6.0)
PROBES = tuple((d, r, k) for d in D_KS for r in RHOS for k in KURTOSES)

# Each usual mistake: (mean or variance as a function of d_k, rho, kurtosis; what it gets wrong).
MEAN_MISTAKES = [
    (lambda d, r, k: abs(r) * np.sqrt(d),
     "the mean has the sign of rho: a key that points away from its query (rho < 0) gives a "
     "negative mean, E[q.k] = rho d_k; drop the abs()"),
    (lambda d, r, k: r**2 * np.sqrt(d),
     "the mean is linear in rho, not quadratic: E[rho |q|^2] = rho E|q|^2 = rho d_k"),
    (lambda d, r, k: r * d,
     "the mean is not divided by sqrt(d_k): rho d_k is the mean of the raw score q.k; the scaled "
     "score's mean is rho d_k / sqrt(d_k) = rho sqrt(d_k)"),
    (lambda d, r, k: r + 0.0 * d,
     "the mean is divided by d_k instead of sqrt(d_k): the scaled score is q.k / sqrt(d_k), and "
     "E[q.k] = rho d_k"),
    (lambda d, r, k: 0.0 * d,
     "the mean is zero only when rho = 0: the term rho |q|^2 has mean rho d_k"),
    (lambda d, r, k: np.sqrt(d) + 0.0 * r,
     "the mean does not depend on rho: E[q.k] = rho E|q|^2 + sqrt(1 - rho^2) E[q.z] = rho d_k"),
]
VAR_MISTAKES = [
    (lambda d, r, k: 1.0 + 0.0 * r,
     "the variance is 1 only for independent q and k: you forgot the rho^2 term that "
     "rho |q|^2 contributes, rho^2 Var(|q|^2) / d_k"),
    (lambda d, r, k: 1.0 + r**2,
     "1 + rho^2 is the answer for normal entries only (kurtosis 3): Var(q_m^2) = E[q_m^4] - 1 "
     "= kurtosis - 1, which is 2 only for the normal distribution"),
    (lambda d, r, k: 1.0 + r * (k - 2.0),
     "rho is not squared: Var(rho X) = rho^2 Var(X), so the variance cannot be negative or "
     "odd in rho"),
    (lambda d, r, k: 1.0 + r,
     "rho is not squared: Var(rho X) = rho^2 Var(X), and the variance cannot depend on the "
     "sign of rho"),
    (lambda d, r, k: d * (1.0 + r**2 * (k - 2.0)),
     "the variance is unscaled: that is Var(q.k); dividing the score by sqrt(d_k) divides its "
     "variance by d_k"),
    (lambda d, r, k: d * (1.0 + r**2),
     "the variance is unscaled and ignores the kurtosis: d_k (1 + rho^2) is Var(q.k) for normal "
     "entries; divide by d_k, and use Var(q_m^2) = kurtosis - 1"),
    (lambda d, r, k: d + 0.0 * r,
     "the variance is unscaled: d_k is Var(q.k) for independent q and k; the scaled score's "
     "variance does not grow with d_k"),
    (lambda d, r, k: np.sqrt(d) * (1.0 + r**2 * (k - 2.0)),
     "the variance is divided by sqrt(d_k) instead of d_k: Var(c X) = c^2 Var(X)"),
    (lambda d, r, k: 1.0 + r**2 * (k - 1.0),
     "one rho^2 too many: either Var(q_m^2) was taken as E[q_m^4] (it is E[q_m^4] - 1 = "
     "kurtosis - 1), or the noise term sqrt(1 - rho^2) q.z was given variance d_k (it is "
     "(1 - rho^2) d_k)"),
    (lambda d, r, k: 1.0 + r**2 * k,
     "two rho^2 too many: Var(q_m^2) is E[q_m^4] - 1 = kurtosis - 1, and the noise term "
     "sqrt(1 - rho^2) q.z has variance (1 - rho^2) d_k"),
    (lambda d, r, k: 1.0 + r**2 * (k - 3.0),
     "kurtosis here is the fourth moment E[q_m^4] (3 for normal entries), not the excess "
     "kurtosis E[q_m^4] - 3"),
    (lambda d, r, k: r**2 * (k - 1.0),
     "the noise term is missing: sqrt(1 - rho^2) q.z adds (1 - rho^2) to the scaled variance"),
    (lambda d, r, k: np.sqrt(1.0 + r**2 * (k - 2.0)),
     "that is the standard deviation; return the variance, its square"),
]


def _reference(d, r, k) -> tuple[float, float]:
    return score_moments(d, r, k)


def _matches(values: dict, formula, which: int, probes) -> bool:
    """Whether the attempt's mean (which = 0) or variance (1) equals ``formula`` at every probe."""
    for p in probes:
        want = formula(*p)
        got = values[p][which]
        if not np.isclose(got, want, rtol=1e-6, atol=1e-9):
            return False
    return True


def _pair(result) -> tuple[float, float]:
    """The attempt's result as two finite floats, or an error that says what it returned."""
    if result is None:
        raise TypeError("the function returned None: return the pair (mean, variance)")
    if isinstance(result, str) or not hasattr(result, "__len__") or len(result) != 2:
        raise TypeError(f"the function must return a pair (mean, variance), got {result!r:.60}")
    mean, var = (float(np.asarray(x, dtype=np.float64)) for x in result)
    if not (np.isfinite(mean) and np.isfinite(var)):
        raise ValueError(f"the function returned ({mean}, {var}): both must be finite numbers")
    return mean, var


def _call(fn: Callable, d_k, rho, kurtosis) -> tuple[float, float]:
    try:
        result = fn(d_k, rho, kurtosis)
    except TypeError as exc:
        if "argument" in str(exc):
            raise TypeError(f"{exc}: the function must take three arguments, "
                            "scaled_score_moments(d_k, rho, kurtosis)") from None
        raise
    return _pair(result)


def _diagnose(values: dict, which: int, probes, what: str) -> tuple[bool, str]:
    """Compare the attempt's mean (which = 0) or variance (1) with the formula on ``probes``.

    A mistake is recognised on every probe at once (a formula can agree with a wrong one on
    part of them: at kurtosis 3, 1 + rho^2 (kurtosis - 3) is 1), then reported for ``probes``.
    """
    wrong = [p for p in probes if not np.isclose(values[p][which], _reference(*p)[which],
                                                 rtol=1e-9, atol=1e-12)]
    if not wrong:
        return True, ""
    swapped = (_matches(values, lambda *p: _reference(*p)[1], 0, PROBES)
               and _matches(values, lambda *p: _reference(*p)[0], 1, PROBES))
    if swapped:
        return False, "mean and variance are swapped: return (mean, variance), the mean first"
    for formula, message in (MEAN_MISTAKES if which == 0 else VAR_MISTAKES):
        if _matches(values, formula, which, PROBES):
            return False, message
    d, r, k = wrong[0]
    got, want = values[wrong[0]][which], _reference(d, r, k)[which]
    return False, (f"{what} at d_k = {d}, rho = {r}, kurtosis = {k}: got {got:.6g}, expected "
                   f"{want:.6g} (wrong at {len(wrong)} of {len(probes)} settings)")


def _agrees_with_sampling(fn: Callable, entries: str, d_k: int, rho: float, n: int, seed: int):
    kurtosis = ENTRY_KURTOSIS[entries]
    mean, var = _call(fn, d_k, rho, kurtosis)
    s = scores_from_parts(*sample_score_parts(d_k, n, entries=entries, seed=seed), rho)
    st = sample_statistics(s / np.sqrt(d_k))
    # Five standard errors: a correct formula fails with probability below one in a million.
    ok = (abs(mean - st["mean"]) <= 5 * st["mean_se"] + 1e-12
          and abs(var - st["var"]) <= 5 * st["var_se"] + 1e-12)
    return ok, (f"formula ({mean:.4g}, {var:.4g}) against {n:,} sampled scores: mean "
                f"{st['mean']:.4f} +- {st['mean_se']:.4f}, variance {st['var']:.4f} +- "
                f"{st['var_se']:.4f} (one standard error)")


def check_scaled_score_moments(fn: Callable, verbose: bool = True) -> bool:
    """Check ``fn(d_k, rho, kurtosis) -> (mean, variance)`` of the scaled score q.k / sqrt(d_k)
    with k = rho q + sqrt(1 - rho^2) z and entries of fourth moment ``kurtosis``."""
    values: dict = {}

    def returns_a_pair():
        for p in PROBES:
            values[p] = _call(fn, *p)
        return True, ""

    results = [_run("returns a pair of finite numbers (mean, variance)", returns_a_pair)]
    if not results[0][1]:
        return _report(results, verbose)
    normal = [p for p in PROBES if p[2] == 3.0]
    other = [p for p in PROBES if p[2] != 3.0]
    results.append(_run("mean, for positive and negative rho",
                        lambda: _diagnose(values, 0, PROBES, "mean")))
    results.append(_run("variance for normal entries (kurtosis 3)",
                        lambda: _diagnose(values, 1, normal, "variance")))
    results.append(_run("variance for other entries (kurtosis 1, 1.8 and 6)",
                        lambda: _diagnose(values, 1, other, "variance")))
    results.append(_run("agrees with 40,000 sampled scores, random-sign entries",
                        lambda: _agrees_with_sampling(fn, "signs", 16, -0.6, 40_000, _RNG_SEED)))
    results.append(_run("agrees with 40,000 sampled scores, Laplace entries",
                        lambda: _agrees_with_sampling(fn, "laplace", 4, 0.7, 40_000, _RNG_SEED + 1)))
    return _report(results, verbose)
