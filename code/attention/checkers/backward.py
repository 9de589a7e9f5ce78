"""Checker of the exercise ``ex-backward`` (page "The backward pass, by hand"): the
gradients of attention in NumPy, ``fn(Q, K, V, dO, mask=None) -> (dQ, dK, dV)``.

The contract the exercise states, and this checker tests:

* shapes: Q (..., T_q, d_k), K (..., T_k, d_k), V (..., T_k, d_v) and dO (..., T_q, d_v),
  with leading batch and head dimensions (B, H); each gradient has the shape of its
  input, and they are returned in the order (dQ, dK, dV);
* the forward pass is S = c Q K^T with c = 1/sqrt(d_k), A = softmax(S) along the keys,
  O = A V; ``mask`` is boolean, True = "may attend", broadcasts to (..., T_q, T_k), and a
  masked score is -inf before the softmax.

Six cases: one head without and with a causal mask, compared with central differences
in float64 (they know nothing of the derivation); one head with T_q = T_k (where a
missing transpose does not change a shape, only the values); and three with batch and
head dimensions (B, H): no mask, one causal mask for every head, a (B, 1, 1, T_k)
padding mask. When an attempt fails a case, the checker compares it with the usual
mistakes on the same inputs and names the one it matches. Messages are wrapped to 76
columns.
"""

from __future__ import annotations

import itertools
import math
import textwrap
import warnings
from collections.abc import Callable

import numpy as np

from ..forward import scaled_dot_product_attention
from ..gradcheck import numerical_gradient, relative_error
from ..masks import causal_mask, padding_mask
from ..softmax import softmax
from ._common import _RNG_SEED, _run

WIDTH = 76  # printed lines fit the book's code column
NAMES = ("dQ", "dK", "dV")


def _swap(X):
    return np.swapaxes(X, -1, -2)


def _gradients(Q, K, V, dO, mask=None, *, mask_mode="-inf", axis=-1, D_mode="dO.O",
               D_sign=-1.0, scale_dQ=1.0, scale_dK=1.0, scale_dV=1.0, dK_from="dS^T",
               dQ_from="dS", dV_from="A^T"):
    """(dQ, dK, dV) in float64, with the deviations from the page's formulas named.

    ``mask_mode``: "-inf" (right), "ignored", "inverted" or "zero" (masked scores set to
    0); ``axis``: the softmax's axis; ``D_mode``: "dO.O" (right), "none" (no D term) or
    "row sum" (sum_j dA_ij, without the weights); ``D_sign``: -1 is right; ``scale_X``
    multiplies the right gradient X by this factor; ``dK_from="dS"`` forgets the
    transpose of dS in dK, ``dQ_from="dS^T"`` puts one in dQ, ``dV_from="A"`` forgets
    the transpose of A in dV (these three need T_q = T_k).
    """
    Q, K, V, dO = (np.asarray(x, dtype=np.float64) for x in (Q, K, V, dO))
    c = 1.0 / math.sqrt(Q.shape[-1])
    S = c * (Q @ _swap(K))
    if mask is not None and mask_mode != "ignored":
        keep = ~np.asarray(mask) if mask_mode == "inverted" else np.asarray(mask)
        S = np.where(keep, S, 0.0 if mask_mode == "zero" else -np.inf)
    A = softmax(S, axis=axis)
    O = A @ V
    dA = dO @ _swap(V)
    if D_mode == "none":
        D = 0.0
    elif D_mode == "row sum":
        D = dA.sum(axis=-1, keepdims=True)
    else:
        D = np.sum(dO * O, axis=-1, keepdims=True)
    dS = A * (dA + D_sign * D)
    dV = (_swap(A) if dV_from == "A^T" else A) @ dO
    dQ = c * ((dS if dQ_from == "dS" else _swap(dS)) @ K)
    dK = c * ((_swap(dS) if dK_from == "dS^T" else dS) @ Q)
    return scale_dQ * dQ, scale_dK * dK, scale_dV * dV


def _mistakes(d_k: int, square: bool) -> list[tuple[str, str, dict]]:
    """(key, message, deviation) for each usual mistake; messages say what to do."""
    c = 1.0 / math.sqrt(d_k)
    mistakes = [
        ("no-D", "dS lacks the '- D' term: the softmax ties each row together, so "
                 "dS = A * (dA - D) with D_i = dO_i . O_i (one number per query)",
         dict(D_mode="none")),
        ("D-sign", "D has the wrong sign: dS = A * (dA - D), not A * (dA + D)",
         dict(D_sign=+1.0)),
        ("D-row-sum", "D_i is the weighted sum sum_j A_ij dA_ij (which equals "
                      "dO_i . O_i), not the plain row sum of dA",
         dict(D_mode="row sum")),
        ("dQ-no-scale", "dQ lacks the factor c = 1/sqrt(d_k): S = c Q K^T puts c on "
                        "dQ = c dS K", dict(scale_dQ=1.0 / c)),
        ("dK-no-scale", "dK lacks the factor c = 1/sqrt(d_k): S = c Q K^T puts c on "
                        "dK = c dS^T Q", dict(scale_dK=1.0 / c)),
        ("dQ-scale-twice", "dQ carries the factor c twice", dict(scale_dQ=c)),
        ("dK-scale-twice", "dK carries the factor c twice", dict(scale_dK=c)),
        ("dV-scaled", "dV carries the factor c, but c scales the scores S, not "
                      "O = A V: dV = A^T dO has no c", dict(scale_dV=c)),
        ("mask-ignored", "with a mask, these are the gradients of unmasked attention: "
                         "the mask is ignored; set masked scores to -inf before the "
                         "softmax (the backward pass then needs nothing more)",
         dict(mask_mode="ignored")),
        ("mask-inverted", "the mask is inverted: True means 'may attend', so masked "
                          "scores are where the mask is False", dict(mask_mode="inverted")),
        ("mask-zero", "masked scores were set to 0 instead of -inf, so masked keys "
                      "keep some weight", dict(mask_mode="zero")),
        ("axis", "the softmax runs over the wrong axis: each query's weights (a row "
                 "of A, the last axis) sum to 1", dict(axis=-2)),
    ]
    if square:
        mistakes += [
            ("dK-no-transpose", "dK uses dS where it needs dS^T: dK = c dS^T Q has one "
                                "row per key", dict(dK_from="dS")),
            ("dQ-transposed", "dQ uses dS^T where it needs dS: dQ = c dS K has one "
                              "row per query", dict(dQ_from="dS^T")),
            ("dV-no-transpose", "dV uses A where it needs A^T: dV = A^T dO has one "
                                "row per key", dict(dV_from="A")),
        ]
    return mistakes


def _same(got: np.ndarray, want: np.ndarray, rtol: float = 1e-7) -> bool:
    if got.shape != want.shape:
        return False
    scale = max(np.abs(want).max(initial=0.0), 1e-300)
    return bool(np.all(np.isfinite(got))) and \
        float(np.abs(got - want).max(initial=0.0)) <= rtol * scale


def _call(fn, Q, K, V, dO, mask):
    """The attempt's (dQ, dK, dV) as float64 arrays, or an exception that says why not."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        result = fn(Q, K, V, dO) if mask is None else fn(Q, K, V, dO, mask=mask)
    if not isinstance(result, (tuple, list)) or len(result) != 3:
        raise TypeError(f"the function must return three arrays (dQ, dK, dV), got "
                        f"{type(result).__name__}")
    grads = []
    for name, g in zip(NAMES, result):
        if g is None:
            raise TypeError(f"{name} is None: return (dQ, dK, dV)")
        grads.append(np.asarray(g, dtype=np.float64))
    return grads


def _diagnose(got, Q, K, V, dO, mask, ref) -> str:
    """Say what is wrong with gradients ``got`` that do not all match ``ref``."""
    for order in itertools.permutations(range(3)):
        if order != (0, 1, 2) and all(_same(got[i], ref[j]) for i, j in enumerate(order)):
            returned = ", ".join(NAMES[j] for j in order)
            return (f"the gradients are right but in the wrong order: you returned "
                    f"({returned}); return (dQ, dK, dV)")
    square = Q.shape[-2] == K.shape[-2]
    messages, unexplained = [], []
    for i, name in enumerate(NAMES):
        if _same(got[i], ref[i]):
            continue
        if got[i].shape != ref[i].shape:
            hint = ""
            if name == "dK" and got[i].shape[-2:] == (Q.shape[-2], K.shape[-1]):
                hint = ": it needs one row per key, dK = c dS^T Q"
            messages.append(f"{name} has shape {got[i].shape}, expected "
                            f"{ref[i].shape} (the shape of {name[1:]}){hint}")
            continue
        if np.isnan(got[i]).any():
            messages.append(f"{name} contains NaN: usually exp() of a score that "
                            "overflowed (subtract each row's maximum first), or a row "
                            "whose every score is -inf")
            continue
        found = False
        for key, message, deviation in _mistakes(Q.shape[-1], square):
            if mask is None and deviation.get("mask_mode"):
                continue
            with np.errstate(all="ignore"):
                variant = _gradients(Q, K, V, dO, mask, **deviation)
            if not _same(variant[i], ref[i]) and _same(got[i], variant[i]):
                if message not in messages:
                    messages.append(message)
                found = True
                break
        if not found:
            unexplained.append(name)
    for name in unexplained:
        i = NAMES.index(name)
        err = float(np.abs(got[i] - ref[i]).max())
        messages.append(f"{name} differs from the reference by up to {err:.3g}")
    if unexplained and _same(got[2], ref[2]) and set(unexplained) <= {"dQ", "dK"}:
        messages.append("dV is right, so A is: look at D, dS = A * (dA - D) and the "
                        "factor c")
    return "; ".join(messages)


_NUMERIC: dict = {}  # the checker's inputs are fixed: compute their references once


def _numeric_gradients(Q, K, V, dO, mask):
    """Central differences in float64 of the library's forward pass (memoised)."""
    key = tuple(np.asarray(x).tobytes() for x in (Q, K, V, dO, mask if mask is not None else 0))
    if key not in _NUMERIC:
        def loss(Q_, K_, V_):
            return float(np.sum(scaled_dot_product_attention(Q_, K_, V_, mask=mask)[0] * dO))
        _NUMERIC[key] = (numerical_gradient(lambda X: loss(X, K, V), Q),
                         numerical_gradient(lambda X: loss(Q, X, V), K),
                         numerical_gradient(lambda X: loss(Q, K, X), V))
    return _NUMERIC[key]


def _case(fn, Q, K, V, dO, mask=None, *, numeric=False, on_error=""):
    """One comparison, as a case for ``_run``. With ``numeric`` the reference is central
    differences of the library's forward pass, otherwise the formulas of the page."""
    def case():
        ref = _numeric_gradients(Q, K, V, dO, mask) if numeric else _gradients(Q, K, V, dO, mask)
        try:
            got = _call(fn, Q, K, V, dO, mask)
        except Exception as exc:
            hint = on_error
            if not hint and isinstance(exc, ValueError) and Q.ndim == 2:
                hint = ("; the shapes of a product do not fit: dV = A^T dO, dA = dO V^T, "
                        "dQ = c dS K, dK = c dS^T Q")
            return False, f"raised {type(exc).__name__}: {exc}{hint}"
        if all(_same(g, r, rtol=1e-6) for g, r in zip(got, ref)):
            return True, ""
        detail = _diagnose(got, Q, K, V, dO, mask, ref)
        if numeric and all(g.shape == r.shape for g, r in zip(got, ref)):
            errs = ", ".join(f"{relative_error(g, r):.1g}" for g, r in zip(got, ref))
            detail += f" (relative errors dQ, dK, dV against central differences: {errs})"
        return False, detail
    return case


def _report(results, verbose: bool) -> bool:
    if verbose:
        for name, ok, detail in results:
            line = f"{'✓' if ok else '✗'} {name}" + ("" if ok else f": {detail}")
            print(textwrap.fill(line, WIDTH, subsequent_indent="    ",
                                break_long_words=True, break_on_hyphens=False))
        n_ok = sum(ok for _, ok, _ in results)
        print(f"{n_ok} of {len(results)} checks passed.")
    return all(ok for _, ok, _ in results)


def _inputs(rng, batch=(), T_q=3, T_k=4, d_k=3, d_v=2):
    """Q, K, V, dO with T_q, T_k, d_v different (so a wrong shape shows) and d_k = 3."""
    return (rng.standard_normal(batch + (T_q, d_k)), rng.standard_normal(batch + (T_k, d_k)),
            rng.standard_normal(batch + (T_k, d_v)), rng.standard_normal(batch + (T_q, d_v)))


def check_attention_backward(fn: Callable, verbose: bool = True) -> bool:
    """Check ``fn(Q, K, V, dO, mask=None) -> (dQ, dK, dV)`` against the contract in this
    module's docstring: six cases, one line each; returns True when all pass."""
    rng = np.random.default_rng(_RNG_SEED + 2)
    Q, K, V, dO = _inputs(rng)
    Qs, Ks, Vs, dOs = _inputs(rng, T_q=4, T_k=4)
    Qb, Kb, Vb, dOb = _inputs(rng, batch=(2, 3))  # (B, H, T, d_k) and so on
    T_q, T_k = Q.shape[-2], K.shape[-2]
    pad = padding_mask([3, 2], T_k)[:, None]  # (B, 1, 1, T_k): keys beyond a length hidden
    one_head = [
        _run("one head, no mask (central differences)",
             _case(fn, Q, K, V, dO, numeric=True)),
        _run("one head, causal mask (central differences)",
             _case(fn, Q, K, V, dO, causal_mask(T_q, T_k), numeric=True)),
        _run("one head, T_q = T_k", _case(fn, Qs, Ks, Vs, dOs)),
    ]
    # Said only when the attempt ran on one head: then what it mishandles is the batch.
    batch_hint = ("" if one_head[0][2].startswith("raised") else
                  "; with batch and head dimensions, transpose only the last two axes, "
                  "np.swapaxes(X, -1, -2) (X.T reverses every axis), and multiply "
                  "with @, not np.dot")
    return _report(one_head + [
        _run("batch and head dimensions (B, H, T_q, d_k), no mask",
             _case(fn, Qb, Kb, Vb, dOb, on_error=batch_hint)),
        _run("one (T_q, T_k) causal mask for every batch item and head",
             _case(fn, Qb, Kb, Vb, dOb, causal_mask(T_q, T_k), on_error=batch_hint)),
        _run("a (B, 1, 1, T_k) padding mask",
             _case(fn, Qb, Kb, Vb, dOb, pad, on_error=batch_hint)),
    ], verbose)
