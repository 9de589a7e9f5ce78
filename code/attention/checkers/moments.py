"""Checker of the exercise 'the moments of a correlated score'."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..stats import sample_scores, scaled_score_moments
from ._common import _RNG_SEED, _close, _qkv, _report, _run


def check_scaled_score_moments(fn: Callable, verbose: bool = True) -> bool:
    """Exercise 8: ``fn(d_k, rho) -> (mean, variance)`` of q.k / sqrt(d_k), k = rho q + sqrt(1-rho^2) z."""
    results = []
    for d_k, rho in ((16, 0.0), (64, 0.5), (256, 0.9)):
        want = np.array(scaled_score_moments(d_k, rho))
        results.append(_run(f"d_k = {d_k}, rho = {rho}",
                            lambda d=d_k, r=rho, w=want: _close(np.asarray(fn(d, r), dtype=float), w, "(mean, variance)", atol=1e-9)))
    s = sample_scores(64, 40_000, rho=0.5, seed=_RNG_SEED)

    def agrees_with_sampling():
        mean, var = fn(64, 0.5)
        ok = abs(mean - s.mean()) < 0.05 and abs(var - s.var()) < 0.05
        return ok, f"formula ({mean:.3f}, {var:.3f}) vs sampled ({s.mean():.3f}, {s.var():.3f})"

    results.append(_run("agrees with 40,000 sampled scores", agrees_with_sampling))
    return _report(results, verbose)
