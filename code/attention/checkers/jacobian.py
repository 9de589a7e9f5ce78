"""Checker of the exercise 'a saturated row has a zero Jacobian'."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..softmax import softmax, softmax_jacobian, softmax_vjp
from ._common import _RNG_SEED, _close, _qkv, _report, _run


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
