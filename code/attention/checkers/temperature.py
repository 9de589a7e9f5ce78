"""Checker of the exercise ``ex-temperature`` (page "Soft retrieval"): attention with a
temperature, ``attention_with_temperature(Q, K, V, tau) -> (O, A)``.

The specification it checks: the scores are ``Q K^T / (tau sqrt(d_k))``, ``A`` is their
softmax along the key axis and ``O = A V``; on (T_q, d_k) inputs and on inputs with leading
batch and head dimensions (..., T_q, d_k); at several temperatures; in both limits (the
output becomes the best key's value as tau -> 0+, or the average of the tied best keys'
values, and the average of all values as tau -> infinity). When an attempt fails, the
checker compares it with the usual mistakes and names the one it matches.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..forward import scaled_dot_product_attention
from ._common import _RNG_SEED, _close, _qkv, _report, _run

#: Temperatures of the ordinary cases (none is 1, where multiplying and dividing agree).
TAUS = (0.5, 2.0, 5.0)
COLD, HOT = 1e-3, 1e6


def _softmax(S, axis=-1):
    S = S - S.max(axis=axis, keepdims=True)
    E = np.exp(S)
    return E / E.sum(axis=axis, keepdims=True)


def _raw_scores(Q, K):
    return Q @ np.swapaxes(K, -1, -2)  # (..., T_q, T_k)


def _weight_mistakes(Q, K, tau) -> list[tuple[str, np.ndarray]]:
    """Weights that the usual mistakes produce, each with the message that names it."""
    d_k = Q.shape[-1]
    R = _raw_scores(Q, K)
    return [
        ("tau multiplies the scores; it must divide them: Q K^T / (tau sqrt(d_k))",
         _softmax(tau * R / np.sqrt(d_k))),
        ("the scores are divided by tau but not by sqrt(d_k): the temperature comes on top of "
         "the usual scale, Q K^T / (tau sqrt(d_k))", _softmax(R / tau)),
        ("the scores are divided by tau d_k instead of tau sqrt(d_k)", _softmax(R / (tau * d_k))),
        ("the scores are divided by sqrt(tau d_k); tau belongs outside the square root",
         _softmax(R / np.sqrt(tau * d_k))),
        ("tau is ignored: these are the weights at tau = 1", _softmax(R / np.sqrt(d_k))),
    ]


def _check_weights(got, want, Q, K, tau, what: str, atol: float = 1e-8) -> tuple[bool, str]:
    """Compare an attempt's weights with ``want`` and name the mistake if there is one."""
    ok, detail = _close(got, want, what, atol=atol)
    if ok or got is None:
        return ok, detail
    A = np.asarray(got, dtype=np.float64)
    if A.shape != want.shape:
        if A.shape == want.shape[:-2] + want.shape[:-3:-1]:
            detail += ": the weights are transposed; A has one row per query, (..., T_q, T_k)"
        return False, detail
    if not np.isfinite(A).all():
        return False, detail
    if not np.allclose(A.sum(axis=-1), 1.0, atol=1e-6):
        if np.allclose(A.sum(axis=-2), 1.0, atol=1e-6):
            return False, (detail + ": the columns sum to 1, not the rows: the softmax ran along "
                           "the query axis; run it along the keys, axis=-1")
        return False, (detail + f": the rows sum to {np.round(A.sum(axis=-1).ravel()[:3], 4)}..., "
                       "not 1: was tau applied after the softmax? It must divide the scores "
                       "before the softmax")
    for message, wrong in _weight_mistakes(Q, K, tau):
        if wrong.shape == A.shape and np.allclose(A, wrong, atol=1e-7):
            return False, f"{detail}: {message}"
    return False, detail


def _check_output(got_pair, Q, K, V, tau, want_O, what: str, atol: float = 1e-8) -> tuple[bool, str]:
    """Compare an attempt's output with ``want_O`` and say what is wrong with it."""
    O = got_pair[0]
    ok, detail = _close(O, want_O, what, atol=atol)
    if ok or O is None:
        return ok, detail
    O = np.asarray(O, dtype=np.float64)
    if O.shape != want_O.shape or not np.isfinite(O).all():
        return False, detail
    if not O.any():
        return False, f"{detail}: the output is all zeros; return O = A V, the weighted values"
    A = np.asarray(got_pair[1], dtype=np.float64)
    if A.shape == want_O.shape[:-1] + V.shape[-2:-1]:
        AV = A @ V
        for factor, name in ((1 / tau, "divided by tau"), (tau, "multiplied by tau")):
            if np.allclose(O, factor * AV, atol=1e-7):
                return False, (f"{detail}: the output is A V {name}; tau belongs only in the "
                               "scores, O = A V")
        if not np.allclose(O, AV, atol=1e-7):
            return False, f"{detail}: the output is not A V of your own weights A"
    return False, detail


def _pair(result) -> tuple:
    """The attempt's result as (O, A), or a TypeError that says what it returned instead."""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise TypeError(f"the function must return a pair (O, A), got {type(result).__name__}")
    return tuple(result)


def check_attention_with_temperature(fn: Callable, verbose: bool = True) -> bool:
    """Check ``fn(Q, K, V, tau) -> (O, A)``: scores Q K^T / (tau sqrt(d_k)), A their softmax
    along the keys, O = A V, for (T_q, d_k) and (..., T_q, d_k) inputs and in both limits."""
    rng = np.random.default_rng(_RNG_SEED + 1)
    Q, K, V = _qkv(rng, T_q=3, T_k=4, d_k=3, d_v=2)  # T_q != T_k: a transpose shows
    results = []

    def returns_a_pair_output_first():
        O, A = _pair(fn(Q, K, V, 2.0))
        if np.shape(O) == (3, 4) and np.shape(A) == (3, 2):
            return False, "the pair is in the wrong order: return (O, A), the output first"
        return True, ""

    results.append(_run("returns the pair (O, A)", returns_a_pair_output_first))

    for tau in TAUS:
        O_ref, A_ref = scaled_dot_product_attention(Q, K, V, temperature=tau)
        results.append(_run(f"weights at tau = {tau}", lambda t=tau, A=A_ref: _check_weights(
            _pair(fn(Q, K, V, t))[1], A, Q, K, t, f"weights at tau = {t}")))
        results.append(_run(f"output at tau = {tau}", lambda t=tau, O=O_ref: _check_output(
            _pair(fn(Q, K, V, t)), Q, K, V, t, O, f"output at tau = {t}")))

    # tau -> 0+: one-hot on each query's best key, and the output is that key's value.
    best = np.argmax(Q @ K.T, axis=-1)
    onehot = (np.arange(4) == best[:, None]).astype(float)  # (T_q, T_k)
    results.append(_run(f"tau -> 0+ (tau = {COLD:g}): weights one-hot on the best key",
                        lambda: _check_weights(_pair(fn(Q, K, V, COLD))[1], onehot, Q, K, COLD,
                                               f"weights at tau = {COLD:g}", atol=1e-6)))
    results.append(_run(f"tau -> 0+ (tau = {COLD:g}): output is the best key's value",
                        lambda: _check_output(_pair(fn(Q, K, V, COLD)), Q, K, V, COLD, V[best],
                                              f"output at tau = {COLD:g}", atol=1e-6)))

    # A tie for the best score: the two tied keys share the weight, however cold.
    q_tie = Q[:1]
    K_tie = K.copy()
    j = int(np.argmax(q_tie @ K.T))
    other = (j + 1) % 4
    K_tie[other] = K_tie[j]  # two identical keys: exactly equal scores
    tie = np.zeros((1, 4))
    tie[0, [j, other]] = 0.5

    def tied_keys_share_the_weight():
        O, A = _pair(fn(q_tie, K_tie, V, COLD))
        ok, detail = _check_weights(A, tie, q_tie, K_tie, COLD,
                                    f"weights at tau = {COLD:g} with two tied best keys", atol=1e-6)
        one_hot = (A is not None and np.shape(A) == tie.shape
                   and np.isclose(np.max(np.asarray(A, dtype=np.float64)), 1.0, atol=1e-6))
        if not ok and one_hot:
            detail += (": two keys tied for the best score should get 1/2 each, however small "
                       "tau is; an argmax picks only one of them")
        if ok:
            ok, detail = _close(O, tie @ V, "output with two tied best keys", atol=1e-6)
        return ok, detail

    results.append(_run("tau -> 0+ with a tie: the tied keys share the weight", tied_keys_share_the_weight))

    # tau -> infinity: uniform weights, and the output is the plain average of the values.
    uniform = np.full((3, 4), 0.25)
    results.append(_run(f"tau -> infinity (tau = {HOT:g}): uniform weights",
                        lambda: _check_weights(_pair(fn(Q, K, V, HOT))[1], uniform, Q, K, HOT,
                                               f"weights at tau = {HOT:g}", atol=1e-5)))
    results.append(_run(f"tau -> infinity (tau = {HOT:g}): output is the mean of the values",
                        lambda: _check_output(_pair(fn(Q, K, V, HOT)), Q, K, V, HOT,
                                              np.broadcast_to(V.mean(axis=0), (3, 2)),
                                              f"output at tau = {HOT:g}", atol=1e-5)))

    # Leading batch and head dimensions, (B, H, T, d), as in a real model.
    Qb, Kb, Vb = _qkv(rng, T_q=3, T_k=4, d_k=3, d_v=2, batch=(2, 3))
    O_b, A_b = scaled_dot_product_attention(Qb, Kb, Vb, temperature=2.0)

    def batched():
        try:
            O, A = _pair(fn(Qb, Kb, Vb, 2.0))
        except Exception as exc:
            return False, (f"raised {type(exc).__name__} on inputs of shape (2, 3, T, d): {exc}; "
                           "with leading batch dimensions transpose only the last two axes of K, "
                           "np.swapaxes(K, -1, -2) (K.T reverses every axis)")
        ok, detail = _check_weights(A, A_b, Qb, Kb, 2.0, "batched weights")
        if ok:
            ok, detail = _check_output((O, A), Qb, Kb, Vb, 2.0, O_b, "batched output")
        return ok, detail

    results.append(_run("leading batch and head dimensions (2, 3, T, d)", batched))
    return _report(results, verbose)
