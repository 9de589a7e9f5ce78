"""Checkers for the chapter's coding exercises: call one on your own attempt.

Each ``check_*`` function runs your function on a few small cases, compares it with the
library's reference, prints one line per case (a tick or a cross with what differed)
and returns True when every case passes. It never raises because your code is wrong;
an exception inside your function is reported as a failed case.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .backward import attention_backward
from .forward import scaled_dot_product_attention
from .gradcheck import numerical_gradient, relative_error
from .masks import causal_mask
from .softmax import softmax, softmax_jacobian, softmax_vjp
from .stats import sample_scores, scaled_score_moments

_RNG_SEED = 2017


def _report(results: list[tuple[str, bool, str]], verbose: bool) -> bool:
    if verbose:
        for name, ok, detail in results:
            print(f"{'✓' if ok else '✗'} {name}" + ("" if ok else f": {detail}"))
        n_ok = sum(ok for _, ok, _ in results)
        print(f"{n_ok} of {len(results)} checks passed.")
    return all(ok for _, ok, _ in results)


def _run(name: str, case: Callable[[], tuple[bool, str]]) -> tuple[str, bool, str]:
    try:
        ok, detail = case()
    except Exception as exc:  # the reader's code failed: report it, do not crash
        return name, False, f"raised {type(exc).__name__}: {exc}"
    return name, bool(ok), detail


def _close(got: Any, want: np.ndarray, what: str, atol: float = 1e-8) -> tuple[bool, str]:
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape:
        return False, f"{what} has shape {got.shape}, expected {want.shape}"
    err = float(np.abs(got - want).max(initial=0.0))
    return err <= atol, f"{what} differs from the reference by up to {err:.3g}"


def _qkv(rng, T_q=4, T_k=5, d_k=3, d_v=2, batch=()):
    return (rng.standard_normal(batch + (T_q, d_k)), rng.standard_normal(batch + (T_k, d_k)),
            rng.standard_normal(batch + (T_k, d_v)))


def check_scaled_dot_product_attention(fn: Callable, verbose: bool = True) -> bool:
    """Exercise 6: ``fn(Q, K, V, mask=None) -> (out, weights)`` in NumPy."""
    rng = np.random.default_rng(_RNG_SEED)
    Q, K, V = _qkv(rng)
    O_ref, A_ref = scaled_dot_product_attention(Q, K, V)
    mask = causal_mask(4, 5)
    O_m, A_m = scaled_dot_product_attention(Q, K, V, mask=mask)
    Qb, Kb, Vb = _qkv(rng, batch=(2, 3))
    O_b, _ = scaled_dot_product_attention(Qb, Kb, Vb)

    def weights_rows_sum_to_one():
        _, A = fn(Q, K, V)
        s = np.asarray(A).sum(axis=-1)
        return np.allclose(s, 1.0), f"row sums are {np.round(s, 4)}"

    results = [
        _run("weights match the reference", lambda: _close(fn(Q, K, V)[1], A_ref, "weights")),
        _run("output matches the reference", lambda: _close(fn(Q, K, V)[0], O_ref, "output")),
        _run("each row of weights sums to 1", weights_rows_sum_to_one),
        _run("the scale is 1/sqrt(d_k)", lambda: _close(fn(Q * 4.0, K, V)[1],
             scaled_dot_product_attention(Q * 4.0, K, V)[1], "weights with a 4x query")),
        _run("masked keys get exactly zero weight", lambda: (
            np.all(np.asarray(fn(Q, K, V, mask=mask)[1])[~mask] == 0.0),
            "some masked weights are not exactly 0 (use -inf, not a large negative number?)")),
        _run("masked output matches the reference", lambda: _close(fn(Q, K, V, mask=mask)[0], O_m, "masked output")),
        _run("leading batch and head dimensions work", lambda: _close(fn(Qb, Kb, Vb)[0], O_b, "batched output")),
    ]
    return _report(results, verbose)


def check_attention_with_temperature(fn: Callable, verbose: bool = True) -> bool:
    """Exercise 5: ``fn(Q, K, V, tau) -> (out, weights)`` with scores Q K^T / (tau sqrt(d_k))."""
    rng = np.random.default_rng(_RNG_SEED + 1)
    Q, K, V = _qkv(rng, T_q=3, T_k=4)
    results = []
    for tau in (0.5, 1.0, 3.0):
        O_ref, A_ref = scaled_dot_product_attention(Q, K, V, temperature=tau)
        results.append(_run(f"weights at tau = {tau}", lambda t=tau, A=A_ref: _close(fn(Q, K, V, t)[1], A, "weights")))
    onehot = (np.arange(4) == np.argmax(Q @ K.T, axis=-1)[:, None]).astype(float)
    results.append(_run("tau -> 0+ approaches the argmax (tau = 1e-3)",
                        lambda: _close(fn(Q, K, V, 1e-3)[1], onehot, "weights at tau = 1e-3", atol=1e-3)))
    results.append(_run("tau -> infinity approaches uniform (tau = 1e6)",
                        lambda: _close(fn(Q, K, V, 1e6)[1], np.full((3, 4), 0.25), "weights at tau = 1e6", atol=1e-4)))
    return _report(results, verbose)


def check_attention_backward(fn: Callable, verbose: bool = True) -> bool:
    """Exercise 7: ``fn(Q, K, V, dO, mask=None) -> (dQ, dK, dV)``, checked by central differences."""
    rng = np.random.default_rng(_RNG_SEED + 2)
    Q, K, V = _qkv(rng, T_q=3, T_k=4, d_k=3, d_v=2)
    dO = rng.standard_normal((3, 2))
    mask = causal_mask(3, 4)
    results = []
    for label, m in (("no mask", None), ("causal mask", mask)):
        def loss(Q_, K_, V_, m=m):
            return float(np.sum(scaled_dot_product_attention(Q_, K_, V_, mask=m)[0] * dO))

        numeric = (numerical_gradient(lambda X: loss(X, K, V), Q),
                   numerical_gradient(lambda X: loss(Q, X, V), K),
                   numerical_gradient(lambda X: loss(Q, K, X), V))

        def case(m=m, numeric=numeric):
            got = fn(Q, K, V, dO) if m is None else fn(Q, K, V, dO, mask=m)
            errs = [relative_error(np.asarray(g), n) for g, n in zip(got, numeric)]
            return max(errs) < 1e-6, "relative errors dQ, dK, dV = " + ", ".join(f"{e:.2g}" for e in errs)

        results.append(_run(f"gradients match central differences ({label})", case))
    return _report(results, verbose)


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


def check_softmax_jacobian(jacobian: Callable, vjp: Callable, verbose: bool = True) -> bool:
    """Exercise 9: ``jacobian(a) -> (n, n)`` and ``vjp(a, g) -> (n,)`` for softmax outputs ``a``."""
    a = softmax(np.array([2.0, 1.0, 0.1, -1.0]))
    g = np.array([0.3, -1.0, 2.0, 0.5])
    one_hot = np.array([0.0, 1.0, 0.0, 0.0])
    results = [
        _run("Jacobian matches diag(a) - a a^T", lambda: _close(jacobian(a), softmax_jacobian(a), "J")),
        _run("VJP matches g^T J", lambda: _close(vjp(a, g), softmax_vjp(a, g), "VJP")),
        _run("a one-hot row has the zero Jacobian", lambda: _close(jacobian(one_hot), np.zeros((4, 4)), "J at one-hot")),
        _run("a one-hot row passes no gradient", lambda: _close(vjp(one_hot, g), np.zeros(4), "VJP at one-hot")),
    ]
    return _report(results, verbose)
