"""Exercise checkers (attention.checkers): the library's own functions pass, typical
mistakes fail the matching checker, and a crashing attempt is reported, not raised."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import attention
from attention import checkers
from attention.softmax import softmax


def _sdpa(Q, K, V, mask=None):
    return attention.scaled_dot_product_attention(Q, K, V, mask=mask)


def _sdpa_tau(Q, K, V, tau):
    return attention.scaled_dot_product_attention(Q, K, V, temperature=tau)


def _backward(Q, K, V, dO, mask=None):
    return attention.attention_backward(Q, K, V, dO, mask=mask)


def _raises(*args, **kwargs):
    raise RuntimeError("my attempt crashed")


# Checker name -> (arguments built from the library's reference functions).
REFERENCE = {
    "check_scaled_dot_product_attention": (_sdpa,),
    "check_attention_with_temperature": (_sdpa_tau,),
    "check_attention_backward": (_backward,),
    "check_scaled_score_moments": (attention.scaled_score_moments,),
    "check_softmax_jacobian": (attention.softmax_jacobian, attention.softmax_vjp),
}


def test_every_checker_is_covered_by_these_tests():
    public = {n for n, f in inspect.getmembers(checkers, inspect.isfunction)
              if n.startswith("check_") and f.__module__ == checkers.__name__}
    assert public == set(REFERENCE)


@pytest.mark.parametrize("name", list(REFERENCE))
def test_reference_implementations_pass_their_checker(name, capsys):
    assert getattr(checkers, name)(*REFERENCE[name]) is True
    out = capsys.readouterr().out
    assert "✗" not in out and "checks passed" in out


@pytest.mark.parametrize("name", list(REFERENCE))
def test_an_attempt_that_raises_is_reported_as_failed_not_raised(name, capsys):
    args = tuple(_raises for _ in REFERENCE[name])
    assert getattr(checkers, name)(*args) is False
    assert "raised RuntimeError: my attempt crashed" in capsys.readouterr().out


def _nan_attention(Q, K, V, *args, **kwargs):
    n = np.nan
    return np.full(Q.shape[:-1] + V.shape[-1:], n), np.full(Q.shape[:-1] + K.shape[-2:-1], n)


NAN_ATTEMPTS = {
    "check_scaled_dot_product_attention": (_nan_attention,),
    "check_attention_with_temperature": (_nan_attention,),
    "check_attention_backward": (lambda Q, K, V, dO, mask=None: tuple(np.full_like(x, np.nan) for x in (Q, K, V)),),
    "check_scaled_score_moments": (lambda d_k, rho: (np.nan, np.nan),),
    "check_softmax_jacobian": (lambda a: np.full((a.size, a.size), np.nan), lambda a, g: np.full_like(a, np.nan)),
}


@pytest.mark.parametrize("name", list(REFERENCE))
def test_an_attempt_returning_nan_of_the_right_shape_fails(name):
    assert getattr(checkers, name)(*NAN_ATTEMPTS[name], verbose=False) is False


def test_verbose_false_prints_nothing(capsys):
    assert checkers.check_scaled_score_moments(attention.scaled_score_moments, verbose=False)
    assert capsys.readouterr().out == ""


# Typical mistakes -------------------------------------------------------------------


def _attention_without_sqrt(Q, K, V, mask=None):
    S = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]  # divides by d_k instead of sqrt(d_k)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = softmax(S)
    return A @ V, A


def _attention_masking_with_zero(Q, K, V, mask=None):
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, S, 0.0)  # a zero score still gets weight
    A = softmax(S)
    return A @ V, A


def _attention_ignoring_batch(Q, K, V, mask=None):
    S = Q @ K.T / np.sqrt(Q.shape[-1])  # .T reverses every axis of a batched K
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = softmax(S)
    return A @ V, A


@pytest.mark.parametrize("wrong", [_attention_without_sqrt, _attention_masking_with_zero,
                                   _attention_ignoring_batch])
def test_wrong_attention_fails_the_attention_checker(wrong, capsys):
    assert checkers.check_scaled_dot_product_attention(wrong) is False
    assert "✗" in capsys.readouterr().out


def test_masking_with_zero_fails_exactly_the_mask_cases(capsys):
    checkers.check_scaled_dot_product_attention(_attention_masking_with_zero)
    failed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("✗")]
    assert failed and all("mask" in line for line in failed)


def test_temperature_applied_as_a_multiplier_fails_the_temperature_checker():
    def wrong(Q, K, V, tau):
        A = softmax(tau * Q @ K.T / np.sqrt(Q.shape[-1]))
        return A @ V, A

    assert checkers.check_attention_with_temperature(wrong, verbose=False) is False


def test_backward_without_the_D_term_fails_the_backward_checker():
    def wrong(Q, K, V, dO, mask=None):
        c = 1 / np.sqrt(Q.shape[-1])
        _, A = attention.scaled_dot_product_attention(Q, K, V, mask=mask)
        dA = dO @ V.T
        dS = A * dA  # forgot "- D": not the softmax VJP
        return c * dS @ K, c * dS.T @ Q, A.T @ dO

    assert checkers.check_attention_backward(wrong, verbose=False) is False


def test_backward_without_the_scale_fails_the_backward_checker():
    def wrong(Q, K, V, dO, mask=None):
        dQ, dK, dV = attention.attention_backward(Q, K, V, dO, mask=mask)
        return dQ * np.sqrt(Q.shape[-1]), dK, dV

    assert checkers.check_attention_backward(wrong, verbose=False) is False


@pytest.mark.parametrize("wrong", [
    lambda d_k, rho: (rho * d_k, 1 + rho**2),  # mean not scaled by 1/sqrt(d_k)
    lambda d_k, rho: (rho * np.sqrt(d_k), 1.0),  # forgot the rho^2 |q|^2 variance
    lambda d_k, rho: (0.0, float(d_k)),  # unscaled variance
])
def test_wrong_moments_fail_the_moments_checker(wrong):
    assert checkers.check_scaled_score_moments(wrong, verbose=False) is False


def test_wrong_jacobian_or_vjp_fails_the_jacobian_checker():
    def diag_only(a):
        return np.diag(a)

    def vjp_without_mean(a, g):
        return a * g

    assert checkers.check_softmax_jacobian(diag_only, attention.softmax_vjp, verbose=False) is False
    assert checkers.check_softmax_jacobian(attention.softmax_jacobian, vjp_without_mean,
                                           verbose=False) is False
