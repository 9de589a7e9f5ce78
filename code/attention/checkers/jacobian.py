"""Checker of Exercise 5, ``ex-one-hot-jacobian`` (page "Saturation and the softmax Jacobian"):
``jacobian(a) -> (T_k, T_k)`` and ``vjp(a, g) -> (T_k,)`` for one row of softmax weights ``a``.

The specification it checks: ``jacobian(a)`` is J = diag(a) - a a^T (equation eq-jacobian);
``vjp(a, g)`` is J g = a * (g - a.g) (equation eq-softmax-vjp), a vector of the row's shape;
both give zero for a one-hot row; both return float64 NumPy arrays (not lists, not float32)
and leave their arguments unchanged; and ``vjp`` never builds J: on a row of ``LONG`` keys its
peak memory, measured with ``tracemalloc``, must stay far below that of a T_k x T_k matrix.
When an attempt fails, the checker compares it with the usual mistakes and names the one it
matches.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import numpy as np

from ..softmax import softmax, softmax_jacobian, softmax_vjp
from ._common import _close as _close_any
from ._common import _report, _run

_NAN_CAUSE = ("your function produced NaN, and J and the VJP need only products and differences "
              "of the finite numbers in a and g: NaN comes from an operation with no answer, "
              "such as 0/0, inf - inf or 0 * inf (a division by an entry of a gives 0/0 "
              "where that entry is 0, as in a one-hot row)")


def _close(got, want, what, atol=1e-8):
    return _close_any(got, want, what, atol=atol, nan_cause=_NAN_CAUSE)


#: Keys of the row on which the VJP's memory is measured: J would take LONG^2 * 8 bytes.
LONG = 2048
#: Peak memory allowed for the VJP on that row: 64 vectors of LONG float64 entries (1 MiB),
#: a thirty-second of J's 32 MiB.
VJP_MEMORY_LIMIT = 64 * LONG * 8


def _jacobian_mistakes(a: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Matrices the usual mistakes produce, each with the message that names it."""
    n = len(a)
    outer = np.outer(a, a)
    return [
        ("this is diag(a) alone: the - a a^T term is missing", np.diag(a)),
        ("this is - a a^T alone: the diag(a) term is missing", -outer),
        ("this is a a^T alone: J = diag(a) - a a^T needs both terms, with these signs", outer),
        ("the sign is flipped: this is a a^T - diag(a); J = diag(a) - a a^T has a_i (1 - a_i) "
         "on its diagonal, which is positive", outer - np.diag(a)),
        ("the outer product became a number: for a row vector a, a.T @ a (or a @ a) is the "
         "scalar |a|^2; the matrix a a^T is np.outer(a, a)", np.diag(a) - (a @ a) * np.ones((n, n))),
        ("this is diag(a) - |a|^2 I: the outer product a a^T became the scalar |a|^2; use "
         "np.outer(a, a)", np.diag(a) - (a @ a) * np.eye(n)),
        ("this is diag(a) - a a^T computed with a * a (entry by entry) in place of the outer "
         "product np.outer(a, a)", np.diag(a) - np.diag(a * a)),
        ("the diagonal subtracts a_i^2 twice: diag(a (1 - a)) already holds the - a_i^2 of "
         "a a^T; J = diag(a) - a a^T", np.diag(a * (1 - a)) - outer),
        ("this is I - 1 a^T, the Jacobian of log-softmax (d log a_i / d s_j = delta_ij - a_j); "
         "the softmax's multiplies row i by a_i: diag(a) - a a^T", np.eye(n) - a[None, :]),
        ("this is I - a 1^T, the transpose of log-softmax's Jacobian I - 1 a^T; the "
         "softmax's is diag(a) - a a^T", np.eye(n) - a[:, None]),
        ("the product a_i a_j lost its a_j: this is diag(a) - a 1^T (entries a_i delta_ij - "
         "a_i); J_ij = a_i delta_ij - a_i a_j", np.diag(a) - a[:, None] * np.ones(n)),
        ("the product a_i a_j lost its a_i: this is diag(a) - 1 a^T, the transpose of "
         "diag(a) - a 1^T; J_ij = a_i delta_ij - a_i a_j", np.diag(a) - a[None, :] * np.ones(n)),
        ("this is the two-key formula p (1 - p) [[1, -1], [-1, 1]] spread over T_k keys; it "
         "holds for two keys only: J = diag(a) - a a^T",
         a[0] * a[1] * (2 * np.eye(n) - 1)),
        ("this is the two-key formula p (1 - p) [[1, -1], [-1, 1]] spread over T_k keys; it "
         "holds for two keys only: J = diag(a) - a a^T",
         a[0] * (1 - a[0]) * (2 * np.eye(n) - 1)),
    ]


def _vjp_mistakes(a: np.ndarray, g: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Vectors the usual mistakes produce, each with the message that names it."""
    ag = float(a @ g)
    return [
        ("this is a * g: the - a (a.g) term is missing; J g = a * (g - a.g)", a * g),
        ("this is a * g - a: the term to subtract is a times the number a.g, not a itself",
         a * g - a),
        ("this is g - a.g: the result must be multiplied by a, entry by entry", g - ag),
        ("this subtracts the plain mean of g; J g = a * (g - a.g) subtracts the mean of g "
         "weighted by a", a * (g - g.mean())),
        ("the sign is flipped: this is a (a.g) - a * g", a * ag - a * g),
        ("this is a * (g - sum(g)): the number to subtract is the weighted mean a.g",
         a * (g - g.sum())),
        ("this is g * (a - a.g): a and g are swapped; J g = a * (g - a.g)", g * (a - ag)),
        ("this is g - a sum(g), the VJP of log-softmax; the softmax's is a * (g - a.g)",
         g - a * g.sum()),
        ("np.mean(a * g) is a.g divided by T_k: the weighted mean is the sum "
         "np.sum(a * g), or a @ g", a * (g - np.mean(a * g))),
        ("this is a (1 - a) g, the diagonal of J alone: the off-diagonal terms - a_i a_j g_j "
         "are missing; J g = a * (g - a.g)", a * (1 - a) * g),
        ("this is a * (g - (a.g) a): inside the bracket a.g is multiplied by a a second "
         "time; subtract the number a.g itself: J g = a * (g - a.g)", a * (g - ag * a)),
        ("this is a * g - a.g: the number a.g must be multiplied by a, entry by entry; "
         "J g = a * g - a (a.g)", a * g - ag),
    ]


def _diagnose(got, want: np.ndarray, mistakes, what: str, atol: float = 1e-8) -> tuple[bool, str]:
    if got is not None and not isinstance(got, np.ndarray):
        return False, (f"{what} is a {type(got).__name__}, not a NumPy array: return the "
                       "array itself (no .tolist(), list() or list comprehension)")
    if got is not None and got.dtype != want.dtype:
        return False, (f"{what} has dtype {got.dtype}, expected {want.dtype}: the row a is "
                       f"{want.dtype}, and a float32 or float16 result drops digits (no "
                       ".astype)")
    ok, detail = _close(got, want, what, atol=atol)
    if ok or got is None:
        return ok, detail
    arr = np.asarray(got, dtype=np.float64)
    if arr.shape != want.shape:
        if arr.shape == (2, 2) and want.shape[0] > 2:
            detail += (": this is the two-key formula's 2 x 2 matrix; J has one row and one "
                       "column per key")
        if arr.size == want.size:
            detail += (f": it holds the right number of entries; return shape {want.shape} "
                       "(np.reshape, or avoid the extra axis)")
        return False, detail
    for message, wrong in mistakes:
        if np.allclose(arr, wrong, atol=1e-9, rtol=1e-7):
            return False, f"{detail}: {message}"
    return False, detail


def _vjp_peak_memory(vjp: Callable) -> tuple[bool, str]:
    """Peak memory of vjp on a row of LONG keys, against the limit that building J would break."""
    rng = np.random.default_rng(5)
    a = softmax(rng.standard_normal(LONG))
    g = rng.standard_normal(LONG)
    want = softmax_vjp(a, g)  # before the call, in case vjp changes g in place
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        got = vjp(a, g)
        _, peak = tracemalloc.get_traced_memory()
        peak -= before
    finally:
        if not was_tracing:
            tracemalloc.stop()
    if peak > VJP_MEMORY_LIMIT:
        return False, (f"on a row of {LONG} keys your vjp used {peak / 2**20:.1f} MiB at its peak; "
                       f"a {LONG} x {LONG} matrix takes {LONG**2 * 8 / 2**20:.0f} MiB: it builds J "
                       "(or another T_k x T_k array). Use a * (g - a.g), which needs O(T_k) memory")
    ok, detail = _close(got, want, f"VJP on a row of {LONG} keys")
    return ok, detail if not ok else f"peak memory {peak / 2**10:.0f} KiB"


def _untouched_then(func: Callable, args: tuple, want: np.ndarray, mistakes, what: str):
    """Call func on copies of args: fail if it changed one in place, else diagnose its result."""
    copies = [x.copy() for x in args]
    got = func(*copies)
    for name, x, y in zip(("a", "g"), args, copies):
        if not np.array_equal(x, y):
            return False, (f"your function changed its argument {name} in place (an "
                           f"augmented assignment such as {name} -= ... or {name} *= ...): "
                           "the caller's array is corrupted; compute into a new array")
    return _diagnose(got, want, mistakes, what)


def check_softmax_jacobian(jacobian: Callable, vjp: Callable, verbose: bool = True) -> bool:
    """Check ``jacobian(a) -> (T_k, T_k)`` and ``vjp(a, g) -> (T_k,)`` for softmax weights ``a``.

    Prints one line per check and returns True when all pass (see the module docstring).
    """
    a = softmax(np.array([2.0, 1.0, 0.1, -1.0]))
    g = np.array([0.3, -1.0, 2.0, 0.5])
    one_hot = np.array([0.0, 1.0, 0.0, 0.0])
    results = [
        _run("Jacobian matches diag(a) - a a^T",
             lambda: _untouched_then(jacobian, (a,), softmax_jacobian(a), _jacobian_mistakes(a), "J")),
        _run("a one-hot row has the zero Jacobian",
             lambda: _close(jacobian(one_hot.copy()), np.zeros((4, 4)), "J at one-hot")),
        _run("VJP matches J g = a * (g - a.g)",
             lambda: _untouched_then(vjp, (a, g), softmax_vjp(a, g), _vjp_mistakes(a, g), "VJP")),
        _run("a one-hot row passes no gradient",
             lambda: _close(vjp(one_hot.copy(), g.copy()), np.zeros(4), "VJP at one-hot")),
        _run("a two-key row: J = p (1 - p) [[1, -1], [-1, 1]]",
             lambda: _close(jacobian(np.array([0.8, 0.2])), 0.16 * np.array([[1.0, -1.0], [-1.0, 1.0]]),
                            "J of a = (0.8, 0.2)")),
        _run(f"the VJP never builds J (memory on a row of {LONG} keys)", lambda: _vjp_peak_memory(vjp)),
    ]
    return _report(results, verbose)
