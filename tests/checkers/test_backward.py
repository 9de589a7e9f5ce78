"""The checker of the exercise ``ex-backward`` is a specification: it accepts the right
answers and rejects each plausible wrong attempt with a message that names the mistake
(and only that mistake)."""

from __future__ import annotations

import functools
import importlib
import math
import re

import numpy as np
import pytest

import attention
from attention import checkers
from tests.checkers.conftest import run_once


ATTENTION = importlib.import_module("attention.checkers.attention")
BACKWARD = importlib.import_module("attention.checkers.backward")
DRAW_SIZES = ATTENTION._draw_sizes


@pytest.fixture(autouse=True)
def _fixed_sizes_only(monkeypatch):
    """The checker with its sizes drawn afresh on each call off, so that every run is
    repeatable (run_once, counted failures); the tests of the draws turn them on."""
    monkeypatch.setattr(ATTENTION, "_draw_sizes", lambda seed: ())


def swap(X):
    return np.swapaxes(X, -1, -2)


def guarded_softmax(S):
    """The softmax along the last axis, a row of -inf giving zeros, in S's dtype (the
    attempts' own: the checker refuses the library's attention.softmax)."""
    m = S.max(axis=-1, keepdims=True, initial=-np.inf)
    E = np.exp(S - np.where(np.isneginf(m), 0.0, m))
    total = E.sum(axis=-1, keepdims=True)
    return E / np.where(total == 0, 1.0, total)


# --- right answers ----------------------------------------------------------------------

def correct_in_dtype(Q, K, V, dO, mask=None):
    """The page's equations, step by step, after the forward pass of ex-numpy-attention,
    in the inputs' dtype (float16 in float16: wrong above scores of 11.1)."""
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)                                  # (..., T_q, T_k)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = S.max(axis=-1, keepdims=True, initial=-np.inf)
    E = np.exp(S - np.where(np.isneginf(m), 0.0, m))     # a query with no key: 0
    total = E.sum(axis=-1, keepdims=True)
    A = E / np.where(total == 0, 1.0, total)
    O = A @ V
    dV = swap(A) @ dO
    dA = dO @ swap(V)
    D = np.sum(dO * O, axis=-1, keepdims=True)
    dS = A * (dA - D)
    return c * dS @ K, c * swap(dS) @ Q, dV


def correct(Q, K, V, dO, mask=None):
    """The page's solution: the steps in float32 for float16 inputs, cast back."""
    w = np.promote_types(Q.dtype, np.float32)
    g = correct_in_dtype(*(x.astype(w) for x in (Q, K, V, dO)), mask)
    return tuple(x.astype(Q.dtype) for x in g)


def no_shift_in_float16(Q, K, V, dO, mask=None):  # st11a: exp() overflows above 11.1
    """The row maximum subtracted except for float16 inputs, in the inputs' dtype."""
    if Q.dtype != np.float16:
        return correct_in_dtype(Q, K, V, dO, mask)
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    E = np.exp(S)
    total = E.sum(axis=-1, keepdims=True)
    A = E / np.where(total == 0, 1.0, total)
    dA = dO @ swap(V)
    dS = A * (dA - np.sum(dO * (A @ V), axis=-1, keepdims=True))
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


def shifts_only_above_80(Q, K, V, dO, mask=None):  # st11a: in the inputs' dtype
    """The row maximum subtracted only when some |score| exceeds 80."""
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    if np.abs(S[np.isfinite(S)]).max(initial=0.0) > 80:
        m = S.max(axis=-1, keepdims=True, initial=-np.inf)
        S = S - np.where(np.isneginf(m), 0.0, m)
    E = np.exp(S)
    total = E.sum(axis=-1, keepdims=True)
    A = E / np.where(total == 0, 1.0, total)
    dA = dO @ swap(V)
    dS = A * (dA - np.sum(dO * (A @ V), axis=-1, keepdims=True))
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


def _float16_in_float32(fn):
    """fn with float16 inputs computed in float32 and the gradients cast back (the
    forward exercise's rule); other inputs as fn has them."""
    @functools.wraps(fn)
    def in_float32(Q, K, V, dO, mask=None):
        if Q.dtype != np.float16:  # other dtypes as fn has them
            return fn(Q, K, V, dO, mask)
        g = fn(*(x.astype(np.float32) for x in (Q, K, V, dO)), mask)
        return tuple(x.astype(Q.dtype) for x in g)
    return in_float32


@_float16_in_float32
def correct_with_D_from_its_definition(Q, K, V, dO, mask=None):
    """D_i = sum_j A_ij dA_ij, the definition, instead of the identity dO_i . O_i."""
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * np.einsum("...qd,...kd->...qk", Q, K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = guarded_softmax(S)
    dA = np.einsum("...qv,...kv->...qk", dO, V)
    D = np.sum(A * dA, axis=-1, keepdims=True)
    dS = A * (dA - D)
    return (c * np.einsum("...qk,...kd->...qd", dS, K),
            c * np.einsum("...qk,...qd->...kd", dS, Q),
            np.einsum("...qk,...qv->...kv", A, dO))


def the_library(Q, K, V, dO, mask=None):  # refused: the exercise is to write it
    return attention.attention_backward(Q, K, V, dO, mask=mask)


def the_blocked_library(Q, K, V, dO, mask=None):
    return attention.blocked_attention_backward(Q, K, V, dO, mask=mask)


def the_tiled_library(Q, K, V, dO, mask=None):
    return attention.tiled_attention_backward(Q, K, V, dO, 2, mask=mask)


# --- wrong answers, as a student writes them --------------------------------------------

def _forward(Q, K, V, mask=None, fill=-np.inf, scale=None, guard=True):
    """(c, A, O); ``guard`` gives a query with no visible key zero weights."""
    c = 1 / math.sqrt(Q.shape[-1]) if scale is None else scale
    S = c * Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, fill)
    m = S.max(axis=-1, keepdims=True, initial=-np.inf)
    if guard:
        m = np.where(np.isneginf(m), 0.0, m)
    A = np.exp(S - m)
    total = A.sum(axis=-1, keepdims=True)
    A = A / (np.where(total == 0, 1.0, total) if guard else total)
    return c, A, A @ V


def forgets_D(Q, K, V, dO, mask=None):
    c, A, O = _forward(Q, K, V, mask)
    dS = A * (dO @ swap(V))                              # the "- D" left out
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


def adds_D(Q, K, V, dO, mask=None):
    c, A, O = _forward(Q, K, V, mask)
    dS = A * (dO @ swap(V) + np.sum(dO * O, axis=-1, keepdims=True))
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


def D_as_a_plain_row_sum(Q, K, V, dO, mask=None):
    c, A, O = _forward(Q, K, V, mask)
    dA = dO @ swap(V)
    dS = A * (dA - dA.sum(axis=-1, keepdims=True))
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


def no_scale_in_dQ_and_dK(Q, K, V, dO, mask=None):
    c, A, O = _forward(Q, K, V, mask)
    dS = A * (dO @ swap(V) - np.sum(dO * O, axis=-1, keepdims=True))
    return dS @ K, swap(dS) @ Q, swap(A) @ dO


def scale_on_dV_too(Q, K, V, dO, mask=None):
    c, A, O = _forward(Q, K, V, mask)
    dS = A * (dO @ swap(V) - np.sum(dO * O, axis=-1, keepdims=True))
    return c * dS @ K, c * swap(dS) @ Q, c * swap(A) @ dO


def dK_without_the_transpose(Q, K, V, dO, mask=None):
    c, A, O = _forward(Q, K, V, mask)
    dS = A * (dO @ swap(V) - np.sum(dO * O, axis=-1, keepdims=True))
    return c * dS @ K, c * dS @ Q, swap(A) @ dO         # dS, not dS^T


def uses_dot_T(Q, K, V, dO, mask=None):
    """Right on one head; .T reverses every axis of a (B, H, T_q, d_k) array."""
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ K.T
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = np.exp(S - S.max(axis=-1, keepdims=True, initial=-np.inf))
    A = A / A.sum(axis=-1, keepdims=True)
    O = A @ V
    dS = A * (dO @ V.T - np.sum(dO * O, axis=-1, keepdims=True))
    return c * dS @ K, c * dS.T @ Q, A.T @ dO


def returns_dQ_dV_dK(Q, K, V, dO, mask=None):
    dQ, dK, dV = correct(Q, K, V, dO, mask)
    return dQ, dV, dK


def returns_dV_dK_dQ(Q, K, V, dO, mask=None):
    dQ, dK, dV = correct(Q, K, V, dO, mask)
    return dV, dK, dQ


def ignores_the_mask(Q, K, V, dO, mask=None):
    return correct(Q, K, V, dO)


def inverts_the_mask(Q, K, V, dO, mask=None):
    return correct(Q, K, V, dO, None if mask is None else ~mask)


def masks_with_zero(Q, K, V, dO, mask=None):
    c, A, O = _forward(Q, K, V, mask, fill=0.0)
    dS = A * (dO @ swap(V) - np.sum(dO * O, axis=-1, keepdims=True))
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


def softmax_over_queries(Q, K, V, dO, mask=None):
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = np.exp(S - S.max(axis=-2, keepdims=True))
    A = A / A.sum(axis=-2, keepdims=True)                # wrong axis
    O = A @ V
    dS = A * (dO @ swap(V) - np.sum(dO * O, axis=-1, keepdims=True))
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


def returns_None_for_dK(Q, K, V, dO, mask=None):
    dQ, _, dV = correct(Q, K, V, dO, mask)
    return dQ, None, dV


def _guarded_forward(Q, K, V, mask=None, fill=-np.inf):
    """The forward pass of ex-numpy-attention: a query with no visible key gets zeros."""
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, fill)
    m = S.max(axis=-1, keepdims=True, initial=-np.inf)
    E = np.exp(S - np.where(np.isneginf(m), 0.0, m))
    total = E.sum(axis=-1, keepdims=True)
    A = E / np.where(total == 0, 1.0, total)
    return c, A, A @ V


def _backward_from(c, A, O, Q, K, V, dO):
    dS = A * (dO @ swap(V) - np.sum(dO * O, axis=-1, keepdims=True))
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


def nan_for_a_query_with_no_visible_key(Q, K, V, dO, mask=None):
    """Right wherever every query sees a key; the unguarded softmax gives NaN otherwise."""
    c, A, O = _forward(Q, K, V, mask, guard=False)
    return _backward_from(c, A, O, Q, K, V, dO)


def minus_1e9_for_masked_scores(Q, K, V, dO, mask=None):
    """Right unless a query sees no key: then its weights are uniform, not zero."""
    return _backward_from(*_guarded_forward(Q, K, V, mask, fill=-1e9), Q, K, V, dO)


def D_from_the_unmasked_forward_pass(Q, K, V, dO, mask=None):
    c, A, O = _guarded_forward(Q, K, V, mask)
    _, A_free, O_free = _guarded_forward(Q, K, V)
    dA = dO @ swap(V)
    dS = A * (dA - np.sum(A_free * dA, axis=-1, keepdims=True))
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


def dK_without_the_mask(Q, K, V, dO, mask=None):
    dQ, _, dV = correct(Q, K, V, dO, mask)
    return dQ, correct(Q, K, V, dO)[1], dV


def mask_applied_after_the_softmax(Q, K, V, dO, mask=None):
    c, A, _ = _guarded_forward(Q, K, V)
    if mask is not None:
        A = A * mask                                     # rows no longer sum to 1
    return _backward_from(c, A, A @ V, Q, K, V, dO)


def d_k_from_axis_1(Q, K, V, dO, mask=None):
    """Q.shape[1] is d_k for one head, H for (B, H, T_q, d_k)."""
    c = 1 / math.sqrt(Q.shape[1])
    _, A, O = _guarded_forward(Q * (c * math.sqrt(Q.shape[-1])), K, V, mask)
    return _backward_from(c, A, O, Q, K, V, dO)


def scale_from_T_q(Q, K, V, dO, mask=None):
    c = 1 / math.sqrt(Q.shape[-2])
    _, A, O = _guarded_forward(Q * (c * math.sqrt(Q.shape[-1])), K, V, mask)
    return _backward_from(c, A, O, Q, K, V, dO)


def float64_from_np_sqrt(Q, K, V, dO, mask=None):
    """np.sqrt gives a float64 scalar, which makes float32 arrays float64."""
    c = 1 / np.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = guarded_softmax(S)
    return _backward_from(c, A, A @ V, Q, K, V, dO)


def jacobian_from_np_eye(Q, K, V, dO, mask=None):
    """dS through the full Jacobian diag(a) - a a^T: right, but np.eye is float64."""
    c, A, O = _guarded_forward(Q, K, V, mask)
    J = A[..., :, None] * np.eye(A.shape[-1]) - A[..., :, None] * A[..., None, :]
    dS = np.einsum("...qk,...qkj->...qj", dO @ swap(V), J)
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


def computes_in_float32(Q, K, V, dO, mask=None):
    low = [x.astype(np.float32) for x in (Q, K, V, dO)]
    return tuple(g.astype(Q.dtype) for g in correct_in_dtype(*low, mask))


def dA_through_a_pseudo_inverse(Q, K, V, dO, mask=None):
    c, A, O = _guarded_forward(Q, K, V, mask)
    dA = dO @ np.linalg.pinv(V)                          # "undoing" O = A V
    dS = A * (dA - np.sum(A * dA, axis=-1, keepdims=True))
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


def dV_through_an_inverse(Q, K, V, dO, mask=None):
    c, A, O = _guarded_forward(Q, K, V, mask)
    dV = np.linalg.inv(A) @ O * 0 + swap(A) @ dO         # inv needs a square A
    dQ, dK, _ = _backward_from(c, A, O, Q, K, V, dO)
    return dQ, dK, dV


def last_head_only(Q, K, V, dO, mask=None):
    """A loop that keeps only the last head's gradients, zeros elsewhere."""
    grads = correct(Q, K, V, dO, mask)
    if Q.ndim == 2:
        return grads
    out = []
    for g in grads:
        kept = np.zeros_like(g)
        kept[..., -1, :, :] = g[..., -1, :, :]
        out.append(kept)
    return out


def loop_without_the_batch_index(Q, K, V, dO, mask=None):
    """for b, for h: store into [:, h] -- the last batch item wins."""
    if Q.ndim == 2:
        return correct(Q, K, V, dO, mask)
    B, H, T_q, T_k = Q.shape[0], Q.shape[1], Q.shape[-2], K.shape[-2]
    m = None if mask is None else np.broadcast_to(mask, (B, H, T_q, T_k))
    out = [np.zeros_like(Q), np.zeros_like(K), np.zeros_like(V)]
    for b in range(B):
        for h in range(H):
            grads = correct(Q[b, h], K[b, h], V[b, h], dO[b, h],
                            None if m is None else m[b, h])
            for o, g in zip(out, grads):
                o[:, h] = g                              # the b index forgotten
    return out


def dS_negated(Q, K, V, dO, mask=None):
    dQ, dK, dV = correct(Q, K, V, dO, mask)
    return -dQ, -dK, dV


def every_gradient_negated(Q, K, V, dO, mask=None):
    return tuple(-g for g in correct(Q, K, V, dO, mask))


def divides_by_c(Q, K, V, dO, mask=None):
    c = 1 / math.sqrt(Q.shape[-1])
    dQ, dK, dV = correct(Q, K, V, dO, mask)
    return dQ / c**2, dK / c**2, dV


def D_without_keepdims(Q, K, V, dO, mask=None):
    """D of shape (..., T_q): subtracted along the keys; only square shapes run."""
    c, A, O = _guarded_forward(Q, K, V, mask)
    dS = A * (dO @ swap(V) - np.sum(dO * O, axis=-1))
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


def scales_Q_in_place(Q, K, V, dO, mask=None):
    """Right gradients, but the caller's Q is overwritten (Q *= c)."""
    c = 1 / math.sqrt(Q.shape[-1])
    Q *= c
    _, A, O = _forward(Q, K, V, mask, scale=1.0)
    dS = A * (dO @ swap(V) - np.sum(dO * O, axis=-1, keepdims=True))
    return c * dS @ K, swap(dS) @ Q, swap(A) @ dO        # Q already carries c


def sqrt_of_d_k_plus_one(Q, K, V, dO, mask=None):
    c, A, O = _forward(Q, K, V, mask, scale=1 / math.sqrt(Q.shape[-1] + 1))
    return _backward_from(c, A, O, Q, K, V, dO)


def dV_without_the_transpose(Q, K, V, dO, mask=None):
    """A @ dO: runs only where T_q = T_k."""
    dQ, dK, _ = correct(Q, K, V, dO, mask)
    _, A, _ = _guarded_forward(Q, K, V, mask)
    return dQ, dK, A @ dO


def nan_to_num_on_the_gradients(Q, K, V, dO, mask=None):
    """An unguarded forward pass, its NaN gradients replaced by 0 afterwards."""
    with np.errstate(all="ignore"):
        c, A, O = _forward(Q, K, V, mask, guard=False)
        return tuple(np.nan_to_num(x) for x in _backward_from(c, A, O, Q, K, V, dO))


def scale_one_over_d_k(Q, K, V, dO, mask=None):
    return _backward_from(*_forward(Q, K, V, mask, scale=1 / Q.shape[-1]), Q, K, V, dO)


def scale_from_d_v(Q, K, V, dO, mask=None):
    c = 1 / math.sqrt(V.shape[-1])
    return _backward_from(*_forward(Q, K, V, mask, scale=c), Q, K, V, dO)


def right_only_at_the_checkers_d_k(Q, K, V, dO, mask=None):
    c = 1 / math.sqrt(5)  # the checker's usual d_k
    return _backward_from(*_forward(Q, K, V, mask, scale=c), Q, K, V, dO)


def adds_not_mask_times_minus_inf(Q, K, V, dO, mask=None):
    """S + (~mask) * -inf: 0 * -inf is NaN on every allowed score."""
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = S + (~np.asarray(mask)) * -np.inf
    with np.errstate(invalid="ignore"):
        E = np.exp(S - S.max(axis=-1, keepdims=True, initial=-np.inf))
        A = E / E.sum(axis=-1, keepdims=True)
        return _backward_from(c, A, A @ V, Q, K, V, dO)


def forward_without_the_row_maximum(Q, K, V, dO, mask=None):
    """exp(S) with no shift: right until a score passes about 709 (st2, bwd2.py)."""
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    with np.errstate(all="ignore"):
        E = np.exp(S)
        total = E.sum(axis=-1, keepdims=True)
        A = E / np.where(total == 0, 1.0, total)
        return _backward_from(c, A, A @ V, Q, K, V, dO)


def mask_after_the_softmax_renormalised(Q, K, V, dO, mask=None):
    """Weights masked after the softmax and renormalised, a zero row guarded: right
    unless a masked key's score is far above the others (st2, bwd2.py)."""
    c, A, _ = _guarded_forward(Q, K, V)
    if mask is not None:
        A = np.where(mask, A, 0.0)
        total = A.sum(axis=-1, keepdims=True)
        A = A / np.where(total == 0, 1.0, total)
    return _backward_from(c, A, A @ V, Q, K, V, dO)


def mask_after_the_softmax_renormalised_in_float32(Q, K, V, dO, mask=None):
    """st24a: the mask applied after the softmax, renormalised and guarded, in float32
    for float16 inputs: on the float16 case masked near -65600 it was told the shift."""
    work = np.promote_types(Q.dtype, np.float32)
    q, k, v, do = (x.astype(work) for x in (Q, K, V, dO))
    c, A, _ = _guarded_forward(q, k, v)
    if mask is not None:
        A = np.where(mask, A, 0.0)
        total = A.sum(axis=-1, keepdims=True)
        A = A / np.where(total == 0, 1.0, total)
    return tuple(g.astype(Q.dtype) for g in _backward_from(c, A, A @ v, q, k, v, do))


def scores_in_float16(Q, K, V, dO, mask=None):
    """Q K^T formed in float16 for float32 inputs, the rest right (st2, bwd3.py)."""
    if Q.dtype != np.float32:
        return correct_in_dtype(Q, K, V, dO, mask)
    c = 1 / math.sqrt(Q.shape[-1])
    S = (c * (Q.astype(np.float16) @ swap(K.astype(np.float16)))).astype(Q.dtype)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = S.max(axis=-1, keepdims=True, initial=-np.inf)
    E = np.exp(S - np.where(np.isneginf(m), 0.0, m))
    total = E.sum(axis=-1, keepdims=True)
    A = E / np.where(total == 0, 1.0, total)
    return _backward_from(c, A, A @ V, Q, K, V, dO)


def everything_in_float16(Q, K, V, dO, mask=None):
    """float32 inputs computed wholly in float16 and cast back (st2, bwd3.py)."""
    if Q.dtype != np.float32:
        return correct_in_dtype(Q, K, V, dO, mask)
    grads = correct_in_dtype(*(x.astype(np.float16) for x in (Q, K, V, dO)), mask)
    return tuple(g.astype(Q.dtype) for g in grads)


def _adds_a_finite_bias(Q, K, V, dO, mask, bias, zero_empty_rows=False):
    """S + (~mask) * bias, fully masked rows zeroed if asked; dtype kept."""
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = S + (~np.asarray(mask)) * np.asarray(bias, dtype=S.dtype)
    E = np.exp(S - S.max(axis=-1, keepdims=True, initial=-np.inf))
    A = E / E.sum(axis=-1, keepdims=True)
    if mask is not None and zero_empty_rows:
        A = np.where(np.broadcast_to(mask, A.shape).any(axis=-1, keepdims=True), A, 0)
    return _backward_from(c, A.astype(Q.dtype), A @ V, Q, K, V, dO)


def adds_minus_1e4(Q, K, V, dO, mask=None):
    return _adds_a_finite_bias(Q, K, V, dO, mask, -1e4)


def adds_minus_1e4_and_zeroes_empty_rows(Q, K, V, dO, mask=None):
    return _adds_a_finite_bias(Q, K, V, dO, mask, -1e4, zero_empty_rows=True)


def adds_minus_1e9_and_zeroes_empty_rows(Q, K, V, dO, mask=None):
    return _adds_a_finite_bias(Q, K, V, dO, mask, -1e9, zero_empty_rows=True)


def adds_float32_min_and_zeroes_empty_rows(Q, K, V, dO, mask=None):
    """-3.4e38, "the most negative float32": tuned to any float32 score."""
    return _adds_a_finite_bias(Q, K, V, dO, mask, np.finfo(np.float32).min,
                               zero_empty_rows=True)


def _with_epsilon(eps):
    def attempt(Q, K, V, dO, mask=None):
        c = 1 / math.sqrt(Q.shape[-1])
        S = c * Q @ swap(K)
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        m = S.max(axis=-1, keepdims=True, initial=-np.inf)
        E = np.exp(S - np.where(np.isneginf(m), 0.0, m))
        A = E / (E.sum(axis=-1, keepdims=True) + eps)  # "so that 0/0 cannot happen"
        return _backward_from(c, A, A @ V, Q, K, V, dO)
    attempt.__name__ = f"epsilon_{eps:.0e}_in_the_softmax".replace("-", "_minus_")
    return attempt


epsilon_1e6_in_the_softmax = _with_epsilon(1e-6)
epsilon_1e9_in_the_softmax = _with_epsilon(1e-9)


def computes_in_float32_via_torch(Q, K, V, dO, mask=None):
    """torch's .float() on every input, the page's equations in torch (autograd is
    refused since st7a), the gradients cast back."""
    import torch

    q, k, v, g = (torch.tensor(x, dtype=torch.float32) for x in (Q, K, V, dO))
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * q @ k.transpose(-1, -2)
    if mask is not None:
        S = S.masked_fill(~torch.as_tensor(np.asarray(mask)), float("-inf"))
    A = torch.nan_to_num(torch.softmax(S, dim=-1))
    dA = g @ v.transpose(-1, -2)
    dS = A * (dA - (g * (A @ v)).sum(-1, keepdim=True))
    grads = (c * dS @ k, c * dS.transpose(-1, -2) @ q, A.transpose(-1, -2) @ g)
    return tuple(x.numpy().astype(Q.dtype) for x in grads)


def scores_in_float32_the_rest_in_float64(Q, K, V, dO, mask=None):
    """Q K^T in float32 "to save memory", the rest in float64."""
    c = 1 / math.sqrt(Q.shape[-1])
    S = (c * (Q.astype(np.float32) @ swap(K.astype(np.float32)))).astype(Q.dtype)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    return _backward_from(c, guarded_softmax(S), guarded_softmax(S) @ V, Q, K, V, dO)


# --- st4a's round: shifts that are not each row's own maximum, no 3-D input, ... ----------

def _st4a(Q, K, V, dO, mask=None, fill=-np.inf, shift="row", shift_above=None,
          zero_empty=False, work=None, transpose=swap, d=None):
    """The student's core (st4a/bwd.py): the forward pass some way, then the page's
    backward steps; the gradients in the inputs' dtype."""
    dtype = Q.dtype
    if work is not None:
        Q, K, V, dO = (x.astype(work) for x in (Q, K, V, dO))
    c = 1.0 / math.sqrt(Q.shape[-1] if d is None else d(Q))
    S = c * (Q @ transpose(K))
    if mask is not None:
        S = np.where(mask, S, fill)
    finite = np.where(np.isfinite(S), S, -np.inf)
    if shift == "row":
        m = S.max(-1, keepdims=True, initial=-np.inf)
    elif shift == "clamp":
        m = np.maximum(S.max(-1, keepdims=True, initial=-np.inf), 0.0)
    elif shift == "global":
        m = finite.max(initial=-np.inf)
    else:  # "head"
        m = finite.max(axis=(-2, -1), keepdims=True, initial=-np.inf)
    m = np.where(np.isneginf(m), 0.0, m)
    if shift_above is not None and not (S.max(initial=-np.inf) > shift_above):
        m = 0.0
    E = np.exp(S - m)
    t = E.sum(-1, keepdims=True)
    A = E / np.where(t == 0, 1.0, t)
    if zero_empty and mask is not None:
        A = np.where(np.broadcast_to(mask, S.shape).any(-1, keepdims=True), A, 0.0)
    O = A @ V
    dV, dA = transpose(A) @ dO, dO @ transpose(V)
    dS = A * (dA - np.sum(dO * O, -1, keepdims=True))
    return tuple(g.astype(dtype) for g in (c * (dS @ K), c * (transpose(dS) @ Q), dV))


def shifts_only_when_a_score_passes_709(Q, K, V, dO, mask=None):
    return _st4a(Q, K, V, dO, mask, shift_above=709.0)


def clamps_the_row_maximum_at_0(Q, K, V, dO, mask=None):
    return _st4a(Q, K, V, dO, mask, shift="clamp")


def shifts_by_the_global_maximum(Q, K, V, dO, mask=None):
    return _st4a(Q, K, V, dO, mask, shift="global")


def shifts_by_each_heads_maximum(Q, K, V, dO, mask=None):
    return _st4a(Q, K, V, dO, mask, shift="head")


def fills_minus_1e9_and_zeroes_empty_rows(Q, K, V, dO, mask=None):
    return _st4a(Q, K, V, dO, mask, fill=-1e9, zero_empty=True)


def fills_float16_min_and_zeroes_empty_rows(Q, K, V, dO, mask=None):
    return _st4a(Q, K, V, dO, mask, fill=-65504.0, zero_empty=True)


def scales_by_the_integer_root_of_d_k(Q, K, V, dO, mask=None):
    """st12a: c = 1/int(np.sqrt(d_k)), right while d_k is a square."""
    return _st4a(Q, K, V, dO, mask, d=lambda X: math.isqrt(X.shape[-1]) ** 2)


def fills_the_inputs_finfo_min_in_float32(Q, K, V, dO, mask=None):
    """st12a: float16 computed in float32, masked scores filled with
    np.finfo(Q.dtype).min (-65504 for float16), fully masked rows zeroed."""
    return _st4a(Q, K, V, dO, mask, fill=float(np.finfo(Q.dtype).min),
                 zero_empty=True, work=np.promote_types(Q.dtype, np.float32))


def transposes_for_2d_and_4d_inputs_only(Q, K, V, dO, mask=None):
    return _st4a(Q, K, V, dO, mask,
                 transpose=lambda X: X.T if X.ndim == 2 else X.transpose(0, 1, 3, 2))


def d_k_from_axis_3_or_1(Q, K, V, dO, mask=None):
    return _st4a(Q, K, V, dO, mask, d=lambda Q: Q.shape[3] if Q.ndim == 4 else Q.shape[1])


def float16_work_for_float32_inputs(Q, K, V, dO, mask=None):
    if Q.dtype == np.float32:
        return tuple(g.astype(np.float32) for g in _st4a(Q, K, V, dO, mask, work=np.float16))
    return _st4a(Q, K, V, dO, mask)


def negates_dQ_only(Q, K, V, dO, mask=None):
    """dK right: told "dQ is negated: dS = A * (dA - D)" before (st4a)."""
    dQ, dK, dV = correct(Q, K, V, dO, mask)
    return -dQ, dK, dV


@_float16_in_float32
def correct_by_the_log_of_the_mask(Q, K, V, dO, mask=None):
    """S + log(mask): -inf where masked, 0 elsewhere (st4a: right)."""
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        with np.errstate(divide="ignore"):
            S = S + np.log(mask)
    m = S.max(-1, keepdims=True, initial=-np.inf)
    E = np.exp(S - np.where(np.isneginf(m), 0, m))
    t = E.sum(-1, keepdims=True)
    A = E / np.where(t == 0, 1, t)
    return _backward_from(c, A, A @ V, Q, K, V, dO)


def squeezes_its_gradients(Q, K, V, dO, mask=None):  # st5a b1
    return tuple(np.squeeze(g) for g in correct(Q, K, V, dO, mask))


def zeroes_empty_rows_only_for_a_full_shape_mask(Q, K, V, dO, mask=None):  # st5a b9
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, np.finfo(Q.dtype).min)
    E = np.exp(S - S.max(-1, keepdims=True, initial=-np.inf))
    A = E / E.sum(-1, keepdims=True)
    if mask is not None and mask.shape == A.shape:
        A = np.where(mask.any(-1, keepdims=True), A, 0)
    return _backward_from(c, A, A @ V, Q, K, V, dO)


def normalises_with_eps_1e_12(Q, K, V, dO, mask=None):  # st5a b6
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = S.max(-1, keepdims=True, initial=-np.inf)
    E = np.exp(S - np.where(np.isneginf(m), 0.0, m))
    A = E / (E.sum(-1, keepdims=True) + 1e-12)
    return _backward_from(c, A, A @ V, Q, K, V, dO)


def adds_a_float64_bias(Q, K, V, dO, mask=None):  # st5a b2: float32 -> float64
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = S + np.where(mask, 0.0, -np.inf)
    m = S.max(-1, keepdims=True, initial=-np.inf)
    E = np.exp(S - np.where(np.isneginf(m), 0.0, m))
    t = E.sum(-1, keepdims=True)
    A = E / np.where(t == 0, 1.0, t)
    return _backward_from(c, A, A @ V, Q, K, V, dO)


OWN_MAXIMUM = "each row's own maximum, even when it is negative"


# st6a: a finite fill or a clamp of the row maximum, tuned to lie below a row of
# visible scores near -1e12 (the far case's row now lies near -1e300)
def _zeroing_empty_rows(fill):
    def attempt(Q, K, V, dO, mask=None):
        c, A, O = _guarded_forward(Q, K, V, mask, fill=fill)
        if mask is not None:
            A = np.where(np.broadcast_to(mask, A.shape).any(-1, keepdims=True), A, 0.0)
            A = A.astype(Q.dtype)
        return _backward_from(c, A, A @ V, Q, K, V, dO)
    return attempt


fills_minus_1e15_and_zeroes_empty_rows = _zeroing_empty_rows(-1e15)
fills_minus_1e15_and_zeroes_empty_rows.__name__ = "fills_minus_1e15_and_zeroes_empty_rows"
fills_float32_min_and_zeroes_empty_rows = _zeroing_empty_rows(
    float(np.finfo(np.float32).min))
fills_float32_min_and_zeroes_empty_rows.__name__ = "fills_float32_min_and_zeroes_empty_rows"


def clamps_the_row_maximum_at_minus_1e13(Q, K, V, dO, mask=None):
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    E = np.exp(S - np.maximum(S.max(axis=-1, keepdims=True, initial=-np.inf), -1e13))
    total = E.sum(axis=-1, keepdims=True)
    A = E / np.where(total == 0, 1.0, total)
    return _backward_from(c, A, A @ V, Q, K, V, dO)


def float64_bias_without_a_mask(Q, K, V, dO, mask=None):  # st6a
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    bias = np.zeros(S.shape) if mask is None else \
        np.where(mask, 0, -np.inf).astype(S.dtype)  # float64 zeros when unmasked
    S = S + bias
    m = S.max(axis=-1, keepdims=True, initial=-np.inf)
    E = np.exp(S - np.where(np.isneginf(m), 0.0, m))
    total = E.sum(axis=-1, keepdims=True)
    A = E / np.where(total == 0, 1.0, total)
    return _backward_from(c, A, A @ V, Q, K, V, dO)


def returns_lists(Q, K, V, dO, mask=None):  # st6a
    return tuple(g.tolist() for g in correct(Q, K, V, dO, mask))


def float16_branch_without_the_scale(Q, K, V, dO, mask=None):  # st8a: float16 only
    if Q.dtype != np.float16:
        return correct_in_dtype(Q, K, V, dO, mask)
    S = Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    E = np.exp(S - S.max(axis=-1, keepdims=True, initial=-np.inf))
    A = E / E.sum(axis=-1, keepdims=True)
    dA = dO @ swap(V)
    dS = A * (dA - np.sum(dA * A, axis=-1, keepdims=True))
    return dS @ K, swap(dS) @ Q, swap(A) @ dO


def float16_branch_returning_nan(Q, K, V, dO, mask=None):  # st8a: dtype alone passed
    g = correct_in_dtype(Q, K, V, dO, mask)
    return tuple(np.full_like(x, np.nan) for x in g) if Q.dtype == np.float16 else g


def float16_in_float32_cast_back(Q, K, V, dO, mask=None):
    """Right: float16 inputs computed in float32, the gradients cast back."""
    w = np.promote_types(Q.dtype, np.float32)
    g = correct_in_dtype(*(x.astype(w) for x in (Q, K, V, dO)), mask)
    return tuple(x.astype(Q.dtype) for x in g)


def _fills_in_float32(fill):
    def fills(Q, K, V, dO, mask=None):
        """The page's steps in float32 (float16 inputs too), masked scores given
        a finite fill when the work is float32 (-inf in float64), empty rows not
        zeroed: their weights are uniform (st18a: passed, empty rows were
        checked in float64 only)."""
        w = np.promote_types(Q.dtype, np.float32)
        Qw, Kw, Vw, dOw = (x.astype(w) for x in (Q, K, V, dO))
        c, A, O = _guarded_forward(Qw, Kw, Vw, mask,
                                   fill=fill if w == np.float32 else -np.inf)
        return tuple(x.astype(Q.dtype)
                     for x in _backward_from(c, A, O, Qw, Kw, Vw, dOw))
    return fills


fills_float32_min_in_float32 = _fills_in_float32(np.finfo(np.float32).min)
fills_float32_min_in_float32.__name__ = "fills_float32_min_in_float32"
fills_minus_1e9_in_float32 = _fills_in_float32(-1e9)
fills_minus_1e9_in_float32.__name__ = "fills_minus_1e9_in_float32"


def float64_unless_float32(Q, K, V, dO, mask=None):  # st7a: float16 in, float64 out
    dtype = Q.dtype
    g = correct_in_dtype(*(x.astype(np.float64) for x in (Q, K, V, dO)), mask)
    return tuple(x.astype(np.float32) for x in g) if dtype == np.float32 else g


def _torch_forward(Q, K, V, mask):
    import torch
    q, k, v = (torch.from_numpy(np.ascontiguousarray(x)).requires_grad_()
               for x in (Q, K, V))
    S = q @ k.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        S = S.masked_fill(~torch.from_numpy(np.asarray(mask)), float("-inf"))
    return (q, k, v), torch.nan_to_num(torch.softmax(S, -1)) @ v


def torch_autograd_backward(Q, K, V, dO, mask=None):  # st7a: passed
    import torch
    inputs, O = _torch_forward(Q, K, V, mask)
    O.backward(torch.from_numpy(dO))
    return tuple(x.grad.numpy() for x in inputs)


def torch_autograd_grad(Q, K, V, dO, mask=None):
    import torch
    inputs, O = _torch_forward(Q, K, V, mask)
    return tuple(g.numpy() for g in torch.autograd.grad(O, inputs, torch.from_numpy(dO)))


def _torch_output(Q, K, V, mask):
    """O as a function of torch tensors q, k, v (no requires_grad: forward mode)."""
    import torch

    def O(q, k, v):
        S = q @ k.transpose(-1, -2) / math.sqrt(Q.shape[-1])
        if mask is not None:
            S = S.masked_fill(~torch.from_numpy(np.asarray(mask)), float("-inf"))
        return torch.nan_to_num(torch.softmax(S, -1)) @ v
    return O, [torch.from_numpy(np.ascontiguousarray(x, np.float64)) for x in (Q, K, V)]


# st22a t5: forward-mode autodiff, one dual-number pass per input entry, passed all 11
# cases (430 s). These make one such pass (or call) and return the right gradients,
# so that each passes unless its call is refused.
def torch_forward_mode_dual_numbers(Q, K, V, dO, mask=None):
    import torch
    import torch.autograd.forward_ad as fwAD
    O, (q, k, v) = _torch_output(Q, K, V, mask)
    tangent = torch.zeros_like(q)
    tangent.view(-1)[:1] = 1.0
    with fwAD.dual_level():
        out = O(fwAD.make_dual(q, tangent), k, v)
        fwAD.unpack_dual((out * torch.from_numpy(dO)).sum()).tangent
    return correct(Q, K, V, dO, mask)


def torch_func_jvp(Q, K, V, dO, mask=None):
    import torch
    O, (q, k, v) = _torch_output(Q, K, V, mask)
    torch.func.jvp(lambda q_: O(q_, k, v), (q,), (torch.ones_like(q),))
    return correct(Q, K, V, dO, mask)


def torch_func_jacfwd(Q, K, V, dO, mask=None):
    import torch
    O, (q, k, v) = _torch_output(Q, K, V, mask)
    torch.func.jacfwd(lambda v_: O(q, k, v_))(v)
    return correct(Q, K, V, dO, mask)


def gives_a_3d_mask_a_head_axis(Q, K, V, dO, mask=None):  # st7a: passed
    if mask is not None and np.ndim(mask) == 3:
        mask = np.asarray(mask)[:, None]  # PyTorch's (B, 1, T_q, T_k)
    return correct(Q, K, V, dO, mask)


def reads_a_key_mask_as_padding(Q, K, V, dO, mask=None):  # st7a: passed
    if mask is not None and np.ndim(mask) == 1:
        mask = np.asarray(mask)[:, None, None]  # as if (B,) -> (B, 1, 1)
    return correct(Q, K, V, dO, mask)


def scores_in_float16_scaled_first(Q, K, V, dO, mask=None):  # st7a: "in float32"
    c = 1 / math.sqrt(Q.shape[-1])
    S = ((Q * c).astype(np.float16) @ swap(K).astype(np.float16)).astype(Q.dtype)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = S.max(axis=-1, keepdims=True, initial=-np.inf)
    E = np.exp(S - np.where(np.isneginf(m), 0.0, m))
    total = E.sum(axis=-1, keepdims=True)
    A = E / np.where(total == 0, 1.0, total)
    return _backward_from(c, A, A @ V, Q, K, V, dO)


def adds_float64_min_and_zeroes_empty_rows(Q, K, V, dO, mask=None):  # st7a: passed
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = S + np.where(mask, 0.0, np.finfo(np.float64).min).astype(S.dtype)
    with np.errstate(all="ignore"):
        E = np.exp(S - S.max(axis=-1, keepdims=True, initial=-np.inf))
        A = E / E.sum(axis=-1, keepdims=True)
    if mask is not None:
        A = np.where(np.broadcast_to(mask, A.shape).any(-1, keepdims=True), A, 0.0)
    return _backward_from(c, A.astype(Q.dtype), (A @ V).astype(Q.dtype), Q, K, V, dO)


# (attempt, a phrase its messages must contain)
def _fills_finitely(Q, K, V, dO, mask, fill):
    """The masked scores replaced by fill(S, visible), empty rows zeroed (st8a)."""
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        seen = np.broadcast_to(mask, S.shape)
        S = np.where(seen, S, fill(S, seen))
    E = np.exp(S - S.max(axis=-1, keepdims=True, initial=-np.inf))
    A = E / E.sum(axis=-1, keepdims=True)
    if mask is not None:
        A = np.where(seen.any(axis=-1, keepdims=True), A, 0)
    O = A @ V
    dA = dO @ swap(V)
    dS = A * (dA - np.sum(dO * O, axis=-1, keepdims=True))
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


def fills_minus_1_5e308(Q, K, V, dO, mask=None):  # st8a: passed
    return _fills_finitely(Q, K, V, dO, mask, lambda S, seen: -1.5e308 if S.dtype ==
                           np.float64 else np.finfo(S.dtype).min)


def fills_the_row_minimum_minus_1000(Q, K, V, dO, mask=None):  # st8a: passed
    def fill(S, seen):
        low = np.where(seen, S, np.inf).min(axis=-1, keepdims=True, initial=np.inf)
        return np.where(np.isinf(low), 0, low) - 1000.0
    return _fills_finitely(Q, K, V, dO, mask, fill)


def fills_minus_1_75e308(Q, K, V, dO, mask=None):  # st9a: passed (deepest -1.7e308)
    return _fills_finitely(Q, K, V, dO, mask, lambda S, seen: -1.75e308 if S.dtype ==
                           np.float64 else np.finfo(S.dtype).min)


@_float16_in_float32
def fills_float64_min(Q, K, V, dO, mask=None):  # right: below every finite score
    return _fills_finitely(Q, K, V, dO, mask, lambda S, seen: np.finfo(S.dtype).min)


def _skips_saturated_rows(threshold):
    def skips(Q, K, V, dO, mask=None):
        """'A saturated row passes (almost) no gradient': its dS set to 0."""
        c, A, O = _guarded_forward(Q, K, V, mask)
        dS = A * (dO @ swap(V) - np.sum(dO * O, axis=-1, keepdims=True))
        dS = np.where(A.max(axis=-1, keepdims=True, initial=-np.inf) > threshold, 0.0, dS).astype(Q.dtype)
        return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO
    skips.__name__ = f"skips_rows_above_{threshold}".replace(".", "_")
    return skips


# st9a: passed (no case had a row whose largest weight lies in (0.999, 1), and the
# tolerance was relative to the whole gradient's largest entry)
skips_rows_above_0_999 = _skips_saturated_rows(0.999)
skips_rows_above_1_minus_1e_6 = _skips_saturated_rows(1 - 1e-6)
skips_rows_above_1_minus_1e_9 = _skips_saturated_rows(1 - 1e-9)
skips_rows_above_1_minus_1e_12 = _skips_saturated_rows(1 - 1e-12)  # st11a
skips_rows_above_1_minus_1e_13 = _skips_saturated_rows(1 - 1e-13)  # st14a: passed


def zeroes_dQ_rows_above_1_minus_1e_13(Q, K, V, dO, mask=None):
    """st14a: dQ alone zeroed on rows whose largest weight is above 1 - 1e-13 (passed:
    the deepest saturated row was [29, 0, 0, 0], 1 - 7.6e-13)."""
    dQ, dK, dV = correct(Q, K, V, dO, mask)
    _, A, _ = _guarded_forward(*(x.astype(np.float64) for x in (Q, K, V)), mask)
    return np.where(A.max(axis=-1, keepdims=True, initial=-np.inf) > 1 - 1e-13, 0, dQ).astype(Q.dtype), \
        dK, dV


def _changes_dS_or_D(name, dS=None, D=None):
    def changed(Q, K, V, dO, mask=None):
        """The page's steps in float64, dS or D changed."""
        if Q.dtype != np.float64:
            return correct(Q, K, V, dO, mask)
        c, A, O = _guarded_forward(Q, K, V, mask)
        dA = dO @ swap(V)
        d = np.sum(dO * O, axis=-1, keepdims=True) if D is None else D(dO, O)
        g = A * (dA - d)
        g = g if dS is None else dS(g)
        return c * g @ K, c * swap(g) @ Q, swap(A) @ dO
    changed.__name__ = name
    return changed


# st14a: each was told "an epsilon in the softmax" (an error of 1e-8 fitted by one)
D_from_O_rounded_to_float32 = _changes_dS_or_D(
    "D_from_O_rounded_to_float32",
    D=lambda dO, O: np.sum(dO * O.astype(np.float32), axis=-1, keepdims=True))
flushes_dS_below_1e_12 = _changes_dS_or_D(
    "flushes_dS_below_1e_12", dS=lambda g: np.where(np.abs(g) < 1e-12, 0.0, g))
# st14a: told "a masked key got some weight" (dV, and so A, right)
subtracts_the_row_mean_of_dS = _changes_dS_or_D(
    "subtracts_the_row_mean_of_dS", dS=lambda g: g - g.mean(axis=-1, keepdims=True))


def _changes_the_weights(change, name):
    def changed(Q, K, V, dO, mask=None):
        """The page's steps in float64, the weights changed after the softmax."""
        if Q.dtype != np.float64:
            return correct(Q, K, V, dO, mask)
        c, A, _ = _guarded_forward(Q, K, V, mask)
        A = change(A)
        dS = A * (dO @ swap(V) - np.sum(dO * (A @ V), axis=-1, keepdims=True))
        return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO
    changed.__name__ = name
    return changed


# st14a: passed (no weight of a saturated row was below 1e-13)
flushes_weights_below_1e_13 = _changes_the_weights(
    lambda A: np.where(A < 1e-13, 0.0, A), "flushes_weights_below_1e_13")
# st18a: told the long row's note on key blocks (the online softmax's rescale)
flushes_weights_below_1e_12 = _changes_the_weights(
    lambda A: np.where(A < 1e-12, 0.0, A), "flushes_weights_below_1e_12")
flushes_weights_below_1e_9 = _changes_the_weights(
    lambda A: np.where(A < 1e-9, 0.0, A), "flushes_weights_below_1e_9")


def _floors_the_exponent(c):
    def floors(Q, K, V, dO, mask=None):
        """exp(max(S - m, -c)), the mask applied after exp() (st18a: told 'a
        masked key given a tiny weight' or 'dS changed afterwards')."""
        w = np.promote_types(Q.dtype, np.float32)
        Qw, Kw, Vw, dOw = (x.astype(w) for x in (Q, K, V, dO))
        c_ = 1 / math.sqrt(Q.shape[-1])
        S = c_ * Qw @ swap(Kw)
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        m = S.max(axis=-1, keepdims=True, initial=-np.inf)
        with np.errstate(invalid="ignore"):
            E = np.exp(np.maximum(S - np.where(np.isneginf(m), 0.0, m), -c))
        if mask is not None:
            E = np.where(mask, E, 0.0)
        t = E.sum(axis=-1, keepdims=True)
        A = E / np.where(t == 0, 1.0, t)
        g = _backward_from(c_, A, A @ Vw, Qw, Kw, Vw, dOw)
        return tuple(x.astype(Q.dtype) for x in g)
    floors.__name__ = f"floors_the_exponent_at_minus_{c}"
    return floors


floors_the_exponent_at_minus_60 = _floors_the_exponent(60)
floors_the_exponent_at_minus_100 = _floors_the_exponent(100)
# st14a: told "no threshold on A.max()" (a floor, not a threshold)
clips_weights_to_1e_12 = _changes_the_weights(
    lambda A: np.clip(A, 1e-12, 1), "clips_weights_to_1e_12")


def flushes_dS_below_1e_14(Q, K, V, dO, mask=None):
    """st14a: |dS| < 1e-14 set to 0 (passed: no saturated row's dS was all below)."""
    c, A, O = _guarded_forward(*(x.astype(np.promote_types(Q.dtype, np.float32))
                                 for x in (Q, K, V)), mask)
    dO_w = dO.astype(A.dtype)
    dS = A * (dO_w @ swap(V.astype(A.dtype)) - np.sum(dO_w * O, axis=-1, keepdims=True))
    dS = np.where(np.abs(dS) < 1e-14, 0.0, dS)
    Qw, Kw = Q.astype(A.dtype), K.astype(A.dtype)
    return tuple(x.astype(Q.dtype) for x in (c * dS @ Kw, c * swap(dS) @ Qw,
                                             swap(A) @ dO_w))


def dS_from_the_library_softmax_vjp(Q, K, V, dO, mask=None):  # st9a: passed
    c, A, O = _guarded_forward(Q, K, V, mask)
    dS = attention.softmax_vjp(A, dO @ swap(V))
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


def A_from_the_library_forward(Q, K, V, dO, mask=None):  # st9a: passed
    O, A = attention.scaled_dot_product_attention(Q, K, V, mask=mask)
    return _backward_from(1 / math.sqrt(Q.shape[-1]), A, O, Q, K, V, dO)


def long_double_gradients_for_float64(Q, K, V, dO, mask=None):  # st9a: passed
    work = np.longdouble if Q.dtype == np.float64 else Q.dtype
    grads = correct_in_dtype(*(x.astype(work) for x in (Q, K, V, dO)), mask)
    return grads if Q.dtype == np.float64 else tuple(g.astype(Q.dtype) for g in grads)


def float32_gradients_for_float64(Q, K, V, dO, mask=None):
    """Computed in float32 and not cast back: told its dtype, not only its digits."""
    return correct_in_dtype(*(x.astype(np.float32) for x in (Q, K, V, dO)), mask)


def boolean_indexing(Q, K, V, dO, mask=None):
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S[~mask] = -np.inf                               # needs a full-shape mask
    A = guarded_softmax(S)
    return _backward_from(c, A, A @ V, Q, K, V, dO)


def weights_from_the_log_sum_exp(Q, K, V, dO, mask=None):  # st8a: told a loop
    """A = exp(S - L), L the log of the row's sum (float32 inputs in float32): the
    float32 case's pairs lie just outside its 1e-4."""
    dtype = Q.dtype
    Q, K, V, dO = (x.astype(np.promote_types(dtype, np.float32)) for x in (Q, K, V, dO))
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = S.max(axis=-1, keepdims=True, initial=-np.inf)
    m = np.where(np.isneginf(m), 0.0, m)
    L = m + np.log(np.exp(S - m).sum(axis=-1, keepdims=True))
    A = np.nan_to_num(np.exp(S - L))
    O = A @ V
    dS = A * (dO @ swap(V) - np.sum(dO * O, axis=-1, keepdims=True))
    return tuple(x.astype(dtype) for x in (c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO))


def fills_minus_1e9_and_zeroes_the_masked_weights(Q, K, V, dO, mask=None):  # st8a
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, -1e9)
    E = np.exp(S - S.max(axis=-1, keepdims=True, initial=-np.inf))
    A = E / E.sum(axis=-1, keepdims=True)
    if mask is not None:
        A = np.where(mask, A, 0)
    O = A @ V
    dS = A * (dO @ swap(V) - np.sum(dO * O, axis=-1, keepdims=True))
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


def normalises_with_eps_1e_14(Q, K, V, dO, mask=None):  # st8a: was told float32
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = S.max(axis=-1, keepdims=True, initial=-np.inf)
    E = np.exp(S - np.where(np.isneginf(m), 0.0, m))
    A = E / (E.sum(axis=-1, keepdims=True) + 1e-14)
    O = A @ V
    dS = A * (dO @ swap(V) - np.sum(dO * O, axis=-1, keepdims=True))
    return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO


# These mistakes are not float16's: at the float16 case's scores (15 to 36, near
# 9600) they compute in float32 and cast back, as the forward exercise's solution does, so that
# only their own mistake fails (st11a's round added those scores).
for _name in ("adds_minus_1e4", "adds_minus_1e4_and_zeroes_empty_rows",
              "adds_minus_1e9_and_zeroes_empty_rows",
              "adds_float32_min_and_zeroes_empty_rows",
              "scores_in_float32_the_rest_in_float64", "epsilon_1e6_in_the_softmax",
              "epsilon_1e9_in_the_softmax", "nan_for_a_query_with_no_visible_key",
              "minus_1e9_for_masked_scores", "jacobian_from_np_eye",
              "normalises_with_eps_1e_14"):
    globals()[_name] = _float16_in_float32(globals()[_name])


def reads_a_3d_mask_per_batch_item(Q, K, V, dO, mask=None):
    """st13a: a 3-D mask on 4-D inputs read as (B, T_q, T_k), PyTorch's habit; it
    broadcasts when B = H, to the wrong heads (passed every case)."""
    if mask is not None and np.ndim(mask) == 3 and Q.ndim == 4:
        mask = np.asarray(mask)[:, None]
    return correct(Q, K, V, dO, mask)


def rounds_A_to_float16(Q, K, V, dO, mask=None):
    """st13a: float16 computed in float32, but A rounded to float16 on the way: dV
    passes the float16 tolerance, dQ does not (told "dV is right, so A is")."""
    dtype = Q.dtype
    Q, K, V, dO = (x.astype(np.promote_types(dtype, np.float32)) for x in (Q, K, V, dO))
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = guarded_softmax(S)
    if dtype == np.float16:
        A = A.astype(np.float16).astype(np.float32)
    O = A @ V
    dS = A * (dO @ swap(V) - np.sum(dO * O, axis=-1, keepdims=True))
    return tuple(x.astype(dtype) for x in (c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO))


def _online_weights(S, block, rescale=False, from_minus_inf=False):
    """A softmax over key blocks of ``block`` (a running maximum m and sum l), the
    running sum rescaled when m grows only if ``rescale`` (st15a forgot it); with
    ``from_minus_inf`` (rescaled) the shift is m itself, -inf while every key so far
    is masked, so that exp(m - m_new) is NaN there (st17a)."""
    m = np.full(S.shape[:-1] + (1,), -np.inf, S.dtype)
    total = np.zeros_like(m)
    rescale = rescale or from_minus_inf
    for b in range(0, S.shape[-1], block):
        m_new = np.maximum(m, S[..., b:b + block].max(-1, keepdims=True))
        shift = m_new if from_minus_inf else np.where(np.isneginf(m_new), 0.0, m_new)
        old = np.exp(m - shift) if rescale else 1.0
        total = total * old + np.exp(S[..., b:b + block] - shift).sum(-1, keepdims=True)
        m = m_new
    shift = np.where(np.isneginf(m), 0.0, m)
    return np.exp(S - shift) / np.where(total == 0, 1.0, total)


def _backward_with(name, weights, D_of=None):
    """The page's backward pass, in float32 for float16 inputs, with the weights
    ``weights(S)`` and D ``D_of(A, dA)`` (dO . O unless given)."""
    def attempt(Q, K, V, dO, mask=None):
        w = np.promote_types(Q.dtype, np.float32)
        q, k, v, do = (x.astype(w) for x in (Q, K, V, dO))
        c = 1 / math.sqrt(Q.shape[-1])
        S = c * q @ swap(k)
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        A = weights(S).astype(w)
        O = A @ v
        dA = do @ swap(v)
        D = np.sum(do * O, axis=-1, keepdims=True) if D_of is None else D_of(A, dA)
        dS = A * (dA - D)
        return tuple(x.astype(Q.dtype) for x in (c * dS @ k, c * swap(dS) @ q,
                                                 swap(A) @ do))
    attempt.__name__ = name
    return attempt


# st15a: each passed every case while the longest row was 8 keys (one block)
online_softmax_in_blocks_of_64_not_rescaled = _backward_with(
    "online_softmax_in_blocks_of_64_not_rescaled",
    lambda S: _online_weights(S, 64))
online_softmax_in_blocks_of_8_not_rescaled = _backward_with(
    "online_softmax_in_blocks_of_8_not_rescaled",
    lambda S: _online_weights(S, 8))
# st16a: passed while the long row was 300 keys (one block of 300 or more)
online_softmax_in_blocks_of_300_not_rescaled = _backward_with(
    "online_softmax_in_blocks_of_300_not_rescaled",
    lambda S: _online_weights(S, 300))
online_softmax_in_blocks_of_512_not_rescaled = _backward_with(
    "online_softmax_in_blocks_of_512_not_rescaled",
    lambda S: _online_weights(S, 512))
# st17a: passed while the long row was 1100 keys (one block of 2048 or more)
online_softmax_in_blocks_of_2048_not_rescaled = _backward_with(
    "online_softmax_in_blocks_of_2048_not_rescaled",
    lambda S: _online_weights(S, 2048))
online_softmax_in_blocks_of_4096_not_rescaled = _backward_with(
    "online_softmax_in_blocks_of_4096_not_rescaled",
    lambda S: _online_weights(S, 4096))


def _from_minus_inf(block):
    def weights(S):
        with np.errstate(all="ignore"):
            A = _online_weights(S, block, from_minus_inf=True)
        empty = np.isneginf(S.max(-1, keepdims=True, initial=-np.inf))
        return np.where(empty, 0.0, A)  # the guard at the end only (st17a)
    return _backward_with(f"online_softmax_in_blocks_of_{block}_from_minus_inf",
                          weights)


# st17a: passed (every row of every case saw key 0 or 1)
online_softmax_in_blocks_of_64_from_minus_inf = _from_minus_inf(64)
online_softmax_in_blocks_of_4_from_minus_inf = _from_minus_inf(4)
online_softmax_in_blocks_of_2_from_minus_inf = _from_minus_inf(2)
online_softmax_in_blocks_of_3_from_minus_inf = _from_minus_inf(3)
# st21a: passed while the long row 1 hid its first 4200 keys; now all but its last
online_softmax_in_blocks_of_4500_from_minus_inf = _from_minus_inf(4500)


def _from_minus_inf_nan_to_num(block):
    """st21a: the same, its NaN made zeros by np.nan_to_num (passed in blocks of 4201
    to 4998 keys while row 1 hid its first 4200)."""
    def weights(S):
        with np.errstate(all="ignore"):
            return np.nan_to_num(_online_weights(S, block, from_minus_inf=True))
    return _backward_with(f"online_softmax_in_blocks_of_{block}_from_minus_inf_nan_to_num",
                          weights)


online_softmax_in_blocks_of_4500_from_minus_inf_nan_to_num = _from_minus_inf_nan_to_num(4500)
online_softmax_in_blocks_of_4201_from_minus_inf_nan_to_num = _from_minus_inf_nan_to_num(4201)
online_softmax_in_blocks_of_64_from_minus_inf_nan_to_num = _from_minus_inf_nan_to_num(64)


def one_key_gets_weight_1(Q, K, V, dO, mask=None):  # st21a: passed (no case had T_k = 1)
    """A shortcut for one key: A = 1, so dS = 0 and dV = dO summed over the queries,
    the mask skipped."""
    if K.shape[-2] == 1:
        dV = np.broadcast_to(dO.sum(-2, keepdims=True), V.shape).astype(Q.dtype)
        return np.zeros_like(Q), np.zeros_like(K), dV
    return correct(Q, K, V, dO, mask)
D_over_the_first_8_keys = _backward_with(
    "D_over_the_first_8_keys",
    guarded_softmax, lambda A, dA: (A * dA)[..., :8].sum(-1, keepdims=True))
# st16a: each passed every case while no visible score exceeded 9600
CLIPPED = "were the scores clipped (np.clip, or np.minimum) before exp()?"
clips_scores_at_1e4 = _backward_with(
    "clips_scores_at_1e4", lambda S: guarded_softmax(np.minimum(S, 1e4)))
clips_scores_at_1e5 = _backward_with(
    "clips_scores_at_1e5", lambda S: guarded_softmax(np.minimum(S, 1e5)))
clips_scores_at_1e6 = _backward_with(
    "clips_scores_at_1e6", lambda S: guarded_softmax(np.minimum(S, 1e6)))
clips_scores_at_1e20 = _backward_with(
    "clips_scores_at_1e20", lambda S: guarded_softmax(np.clip(S, None, 1e20)))
online_softmax_rescaled = _backward_with(
    "online_softmax_rescaled", lambda S: _online_weights(S, 4, True))  # right


def reads_a_key_mask_per_query_when_square(Q, K, V, dO, mask=None):  # st15a: passed
    if mask is not None and np.ndim(mask) == 1 and Q.shape[-2] == K.shape[-2]:
        mask = np.asarray(mask)[:, None]
    return correct(Q, K, V, dO, mask)


def guards_only_masks_of_two_or_more_dimensions(Q, K, V, dO, mask=None):
    """st15a: "a (T_k,) key mask cannot empty a row": unguarded for 1-D masks."""
    if mask is not None and np.ndim(mask) >= 2:
        return correct(Q, K, V, dO, mask)

    def unguarded(S):
        E = np.exp(S - S.max(-1, keepdims=True, initial=-np.inf))
        return E / E.sum(-1, keepdims=True)
    return _backward_with("unguarded", unguarded)(Q, K, V, dO, mask)


def transposes_per_ndim_up_to_4(Q, K, V, dO, mask=None):  # st15a: passed
    order = {2: (1, 0), 3: (0, 2, 1), 4: (0, 1, 3, 2)}[Q.ndim]
    w = np.promote_types(Q.dtype, np.float32)
    q, k, v, do = (x.astype(w) for x in (Q, K, V, dO))
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * q @ k.transpose(order)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = guarded_softmax(S)
    dA = do @ v.transpose(order)
    dS = A * (dA - np.sum(do * (A @ v), axis=-1, keepdims=True))
    return tuple(x.astype(Q.dtype) for x in (c * dS @ k, c * dS.transpose(order) @ q,
                                             A.transpose(order) @ do))


def returns_masked_arrays(Q, K, V, dO, mask=None):  # st15a
    return tuple(np.ma.masked_array(g, mask=np.zeros(g.shape, bool))
                 for g in correct(Q, K, V, dO, mask))


LOG_SUM_EXP = ("exp(S - logsumexp) loses digits when scores are ~1e6: subtract the "
               "row maximum first, then normalise")


def _zeroes_dS_where(pick, name):
    def attempt(Q, K, V, dO, mask=None):
        w = np.promote_types(Q.dtype, np.float32)
        q, k, v, do = (x.astype(w) for x in (Q, K, V, dO))
        c = 1 / math.sqrt(Q.shape[-1])
        S = c * q @ swap(k)
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        A = guarded_softmax(S)
        dS = A * (do @ swap(v) - np.sum(do * (A @ v), axis=-1, keepdims=True))
        dS = np.where(pick(A.max(-1, keepdims=True, initial=-np.inf)), 0.0, dS)
        return tuple(x.astype(Q.dtype) for x in (c * dS @ k, c * swap(dS) @ q,
                                                 swap(A) @ do))
    attempt.__name__ = name
    return attempt


ONLINE = "the running sum was not rescaled when the running maximum grew"
FIRST_BLOCK = "a row whose first key block is fully masked gives NaN"
FIRST_BLOCK_ZEROED = "turned that row's NaN into zeros"
ONE_KEY = "a shortcut for T_k = 1 (dQ = dK = 0, dV = dO summed over the queries)"
SATURATED_ONE = "saturated rows are not zero: their small entries a_j(1-a_j) ~ 4e-18"
KEY_PER_QUERY = "the (T_k,) mask was read as one flag per query"

PER_HEAD = ("read as (B, T_q, T_k) with mask[:, None]: a 3-D mask on 4-D scores "
            "broadcasts as (H, T_q, T_k), one per head")




def dS_with_an_epsilon(Q, K, V, dO, mask=None):  # st19a: told "the same way"
    A, dA, D, c = _backward_parts(Q, K, V, dO, mask)
    dS = (A + 1e-30) * (dA - D)
    return c * dS @ K, c * np.swapaxes(dS, -1, -2) @ Q, np.swapaxes(A, -1, -2) @ dO


def dS_from_the_diagonal_of_J(Q, K, V, dO, mask=None):  # st19a: "dV is right"
    A, dA, D, c = _backward_parts(Q, K, V, dO, mask)
    dS = A * (1 - A) * dA
    return c * dS @ K, c * np.swapaxes(dS, -1, -2) @ Q, np.swapaxes(A, -1, -2) @ dO


def _backward_parts(Q, K, V, dO, mask):
    c = 1.0 / math.sqrt(Q.shape[-1])
    S = c * Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = S.max(axis=-1, keepdims=True, initial=-np.inf)
    E = np.exp(S - np.where(np.isneginf(m), 0.0, m))
    total = E.sum(axis=-1, keepdims=True)
    A = E / np.where(total == 0, 1.0, total)
    dA = dO @ np.swapaxes(V, -1, -2)
    return A, dA, np.sum(dO * (A @ V), axis=-1, keepdims=True), c

# --- st19a: no key at all (T_k = 0) -------------------------------------------------------

def takes_a_plain_row_maximum(Q, K, V, dO, mask=None):
    """The page's steps with a plain S.max(axis=-1, keepdims=True), which raises on no
    key at all (T_k = 0): it passed every case while every case had a key."""
    w = np.promote_types(Q.dtype, np.float32)
    Qw, Kw, Vw, dOw = (x.astype(w) for x in (Q, K, V, dO))
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Qw @ swap(Kw)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = S.max(axis=-1, keepdims=True)                    # no initial value
    E = np.exp(S - np.where(np.isneginf(m), 0.0, m))
    total = E.sum(axis=-1, keepdims=True)
    A = E / np.where(total == 0, 1.0, total)
    dS = A * (dOw @ swap(Vw) - np.sum(dOw * (A @ Vw), axis=-1, keepdims=True))
    return tuple(g.astype(Q.dtype) for g in (c * dS @ Kw, c * swap(dS) @ Qw, swap(A) @ dOw))


def _special_cases_no_key(result):
    """The right gradients, but ``result(Q, K, V, dO)`` for no key at all (T_k = 0)."""
    def attempt(Q, K, V, dO, mask=None):
        return result(Q, K, V, dO) if K.shape[-2] == 0 else correct(Q, K, V, dO, mask)
    attempt.__name__ = result.__name__
    return attempt


@_special_cases_no_key
def returns_the_shapes_of_Q_and_dO_without_keys(Q, K, V, dO):  # not those of K and V
    return np.zeros_like(Q), np.zeros_like(Q), np.zeros_like(dO)


@_special_cases_no_key
def returns_nan_without_keys(Q, K, V, dO):
    return np.full_like(Q, np.nan), np.zeros_like(K), np.zeros_like(V)


@_special_cases_no_key
def returns_float64_zeros_without_keys(Q, K, V, dO):  # np.zeros: float64 whatever the inputs
    return np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)


# --- st20a: causal by default; no key at all, batched and in float16 -------------------

def applies_a_causal_mask_by_default(Q, K, V, dO, mask=None):
    """mask=None read as "causal" on square inputs (T_q = T_k): told only "dQ differs
    from the reference by up to 0.802"."""
    if mask is None and Q.shape[-2] == K.shape[-2]:
        mask = np.tril(np.ones((Q.shape[-2],) * 2, dtype=bool))
    return correct(Q, K, V, dO, mask)


def _special_cases_no_key_with_a_plain_maximum(result):
    """``result(Q, K, V, dO)`` for no key at all (T_k = 0), and otherwise the page's
    steps with a plain S.max(axis=-1, keepdims=True): the patch a student writes after
    the checker's T_k = 0 hint (st20a: it passed while every no-key case was 2-D)."""
    def attempt(Q, K, V, dO, mask=None):
        return result(Q, K, V, dO) if K.shape[-2] == 0 else \
            takes_a_plain_row_maximum(Q, K, V, dO, mask)
    attempt.__name__ = result.__name__
    return attempt


@_special_cases_no_key_with_a_plain_maximum
def returns_2d_zeros_without_keys(Q, K, V, dO):  # (T_q, d_k), (0, d_k), (0, d_v)
    return (np.zeros(Q.shape[-2:], Q.dtype), np.zeros(K.shape[-2:], Q.dtype),
            np.zeros(V.shape[-2:], Q.dtype))


@_special_cases_no_key_with_a_plain_maximum
def returns_zeros_in_the_working_dtype_without_keys(Q, K, V, dO):  # float32 for float16
    work = np.promote_types(Q.dtype, np.float32)
    return np.zeros(Q.shape, work), np.zeros(K.shape, work), np.zeros(V.shape, work)


WRONG = [
    (applies_a_causal_mask_by_default, "a causal mask was applied with mask=None"),
    (returns_2d_zeros_without_keys, "the leading batch and head axes (2, 3) were dropped"),
    (returns_zeros_in_the_working_dtype_without_keys,
     "with T_k = 0 (no key at all) dQ is float32, dK is float32, dV is float32 for "
     "float16 inputs"),
    (takes_a_plain_row_maximum, "zero-size array to reduction operation maximum"),
    (takes_a_plain_row_maximum, "take S.max(axis=-1, keepdims=True, initial=-np.inf)"),
    (returns_nan_without_keys, "with T_k = 0 (K of shape (0, 5), V of shape (0, 7): no "
                               "key at all) dQ contains NaN"),
    (returns_the_shapes_of_Q_and_dO_without_keys,
     "dK has shape (4, 5), expected (0, 5) (the shape of K); dV has shape (4, 7), "
     "expected (0, 7) (the shape of V)"),
    (returns_float64_zeros_without_keys,
     "with T_k = 0 (no key at all) dQ is float64, dK is float64, dV is float64 for "
     "float32 inputs"),
    (dS_with_an_epsilon, "dS has an epsilon added to the weights, dS = (A + 1e-30)"),
    (dS_from_the_diagonal_of_J, "uses the diagonal of J only"),
    (clips_scores_at_1e4, CLIPPED),
    (clips_scores_at_1e5, CLIPPED),
    (clips_scores_at_1e6, CLIPPED),
    (clips_scores_at_1e20, CLIPPED),
    (online_softmax_in_blocks_of_2048_not_rescaled, "(here in key blocks of 2048,"),
    (online_softmax_in_blocks_of_4096_not_rescaled, "(here in key blocks of 4096,"),
    (online_softmax_in_blocks_of_64_from_minus_inf, FIRST_BLOCK),
    (online_softmax_in_blocks_of_4_from_minus_inf, FIRST_BLOCK),
    (online_softmax_in_blocks_of_2_from_minus_inf, FIRST_BLOCK),
    (online_softmax_in_blocks_of_3_from_minus_inf, FIRST_BLOCK),
    (online_softmax_in_blocks_of_4500_from_minus_inf, FIRST_BLOCK),
    (online_softmax_in_blocks_of_4500_from_minus_inf_nan_to_num, FIRST_BLOCK_ZEROED),
    (online_softmax_in_blocks_of_4201_from_minus_inf_nan_to_num, FIRST_BLOCK_ZEROED),
    (online_softmax_in_blocks_of_64_from_minus_inf_nan_to_num, FIRST_BLOCK_ZEROED),
    (one_key_gets_weight_1, ONE_KEY),
    (online_softmax_in_blocks_of_64_not_rescaled, ONLINE),
    (online_softmax_in_blocks_of_8_not_rescaled, ONLINE),
    (online_softmax_in_blocks_of_300_not_rescaled, ONLINE),
    (online_softmax_in_blocks_of_512_not_rescaled, ONLINE),
    (D_over_the_first_8_keys, "a row of 4999 keys"),
    (weights_from_the_log_sum_exp, LOG_SUM_EXP),
    (_zeroes_dS_where(lambda m: m == 1.0, "zeroes_dS_where_A_max_is_1"),
     SATURATED_ONE),  # st17a: passed
    (_zeroes_dS_where(lambda m: m > 1 - 1e-15, "zeroes_dS_past_1_minus_1e_15"),
     SATURATED_ONE),  # st17a: passed
    (reads_a_key_mask_per_query_when_square, KEY_PER_QUERY),
    (guards_only_masks_of_two_or_more_dimensions, "softmax is 0/0 = NaN"),
    (transposes_per_ndim_up_to_4, "here three, (2, 3, 2, T, d)"),
    (returns_masked_arrays, "dQ is a numpy.ma.MaskedArray"),
    (reads_a_3d_mask_per_batch_item, PER_HEAD),
    (gives_a_3d_mask_a_head_axis, PER_HEAD),
    (rounds_A_to_float16, "which does not show A right to float32's precision"),
    (scales_by_the_integer_root_of_d_k,
     "the scale must be 1/sqrt(d_k) as a float; int() or // truncates it"),
    (fills_the_inputs_finfo_min_in_float32,
     "a finite fill (float16's minimum) above a visible score"),
    (fills_minus_1_75e308, "a finite fill"),
    (skips_rows_above_0_999, "a saturated row still passes a small gradient"),
    (skips_rows_above_1_minus_1e_6, "a saturated row still passes a small gradient"),
    (skips_rows_above_1_minus_1e_9, "a saturated row still passes a small gradient"),
    (skips_rows_above_1_minus_1e_12, "a saturated row still passes a small gradient"),
    (skips_rows_above_1_minus_1e_13, "a saturated row still passes a small gradient"),
    (zeroes_dQ_rows_above_1_minus_1e_13, "with no threshold on A.max()"),
    (flushes_dS_below_1e_14, "no small entry of dS (or of dQ) flushed to 0"),
    (flushes_weights_below_1e_13, "weights below a threshold were flushed to 0, as "
                                  "np.where(A < 1e-13, 0, A) does"),
    (clips_weights_to_1e_12, "the weights have a floor, as np.clip(A, 1e-12, 1)"),
    (flushes_weights_below_1e_12, "np.where(A < 1e-12, 0, A)"),  # st18a
    (flushes_weights_below_1e_9, "weights below a threshold were flushed"),
    (floors_the_exponent_at_minus_60, "a visible key given a floor weight"),
    (floors_the_exponent_at_minus_100, "a visible key given a floor weight"),
    (D_from_O_rounded_to_float32, "precision was lost on the way"),
    (flushes_dS_below_1e_12, "no small entry of dS (or of dQ) flushed to 0"),
    (subtracts_the_row_mean_of_dS, "dS must be exactly 0"),
    # st22a: at [40, 0, 0, 0] it was told "compute dS the same way on every row"
    (subtracts_the_row_mean_of_dS, "its row mean was subtracted, as dS - "
     "dS.mean(-1, keepdims=True) does"),
    (dS_from_the_library_softmax_vjp, "calls the library's own attention.softmax_vjp"),
    (A_from_the_library_forward,
     "calls the library's own attention.scaled_dot_product_attention"),
    (float32_gradients_for_float64, "dQ is float32 and dK is float32 and dV is float32; "
                                    "the inputs are float64"),
    (boolean_indexing, "S[~mask] = -np.inf needs a mask of the scores' full shape"),
    (weights_from_the_log_sum_exp, "precision was lost on the way"),
    (fills_minus_1e9_and_zeroes_the_masked_weights, "a finite fill above the scores"),
    (normalises_with_eps_1e_14, "(here eps is about 1e-14"),
    (fills_minus_1_5e308, "a finite fill"),
    (fills_the_row_minimum_minus_1000, "a finite fill"),
    (float16_branch_without_the_scale, "for float16 inputs: dQ differs"),
    (float16_branch_returning_nan, "for float16 inputs: dQ, dK, dV contain NaN"),
    (correct_in_dtype, "compute in float32 (as the forward exercise's solution does) and cast back"),
    (no_shift_in_float16, "compute in float32 (as the forward exercise's solution does) and cast back"),
    (shifts_only_above_80, "compute in float32 (as the forward exercise's solution does) and cast back"),
    (adds_float64_min_and_zeroes_empty_rows, "a finite mask value (use -inf"),
    (float64_unless_float32, "dQ, dK, dV are float64 for float16 inputs"),
    (torch_autograd_backward, "calls torch.autograd.backward"),
    (torch_autograd_grad, "calls torch.autograd.grad"),
    (torch_forward_mode_dual_numbers, "calls torch.autograd.forward_ad.make_dual, "
     "PyTorch's forward-mode automatic differentiation"),
    (torch_func_jvp, "calls torch.autograd.forward_ad.make_dual"),
    (torch_func_jacfwd, "calls torch.autograd.forward_ad.make_dual"),
    (gives_a_3d_mask_a_head_axis, "was given a head axis (mask[:, None]"),
    (reads_a_key_mask_as_padding, "a (T_k,) mask is one flag per key"),
    (scores_in_float16_scaled_first, "as float16 rounding does"),
    (fills_minus_1e15_and_zeroes_empty_rows,
     "a finite fill (or a clamp of the row maximum) above the scores"),
    (fills_float32_min_and_zeroes_empty_rows,
     "a finite fill (or a clamp of the row maximum) above the scores"),
    (clamps_the_row_maximum_at_minus_1e13,
     "a finite fill (or a clamp of the row maximum) above the scores"),
    (float64_bias_without_a_mask, "dQ, dK, dV are float64 for float32 inputs"),
    (returns_lists, "dQ is a list, not a NumPy array"),
    (the_library, "calls the library's own attention.attention_backward"),
    (the_blocked_library, "calls the library's own attention.blocked_attention_backward"),
    (the_tiled_library, "calls the library's own attention.tiled_attention_backward"),
    (adds_a_float64_bias, "the mask made the gradients float64"),
    (squeezes_its_gradients, "dQ has shape (9,), expected (1, 1, 9)"),
    (zeroes_empty_rows_only_for_a_full_shape_mask, "got uniform weights over all keys"),
    (normalises_with_eps_1e_12, "(here eps is about 1e-12"),
    (shifts_only_when_a_score_passes_709, OWN_MAXIMUM),
    (clamps_the_row_maximum_at_0, OWN_MAXIMUM),
    (clamps_the_row_maximum_at_0, "clamped at 0"),
    (shifts_by_the_global_maximum, "the maximum of the whole array"),
    (shifts_by_each_heads_maximum, "the maximum of each head"),
    (fills_minus_1e9_and_zeroes_empty_rows, "an allowed score below it"),
    (fills_float16_min_and_zeroes_empty_rows, "an allowed score below it"),
    (transposes_for_2d_and_4d_inputs_only, "any number of leading axes"),
    (d_k_from_axis_3_or_1, "the scale uses T_q"),
    (float16_work_for_float32_inputs, "as float16 rounding does"),
    (negates_dQ_only, "dQ has the wrong sign, but dK is right"),
    (scores_in_float32_the_rest_in_float64, "precision was lost on the way"),
    (adds_minus_1e4, "a finite mask value (use -inf"),
    (adds_minus_1e4_and_zeroes_empty_rows, "a finite mask value (use -inf"),
    (adds_minus_1e9_and_zeroes_empty_rows, "a finite mask value (use -inf"),
    (adds_float32_min_and_zeroes_empty_rows, "a finite mask value (use -inf"),
    (epsilon_1e6_in_the_softmax, "plus a small constant"),
    (epsilon_1e9_in_the_softmax, "plus a small constant"),
    (computes_in_float32_via_torch, "computed in float32"),
    (computes_in_float32, "computed in float32"),
    (adds_not_mask_times_minus_inf, "(~mask) * -inf"),
    (nan_to_num_on_the_gradients, "np.nan_to_num"),
    (scale_one_over_d_k, "the scale is 1/d_k instead of 1/sqrt(d_k)"),
    (scale_from_d_v, "the scale uses d_v"),
    (right_only_at_the_checkers_d_k, "the scale is 1/sqrt(5), but d_k = 9"),
    (scales_Q_in_place, "changed its argument Q in place"),
    (sqrt_of_d_k_plus_one, "1/sqrt(d_k + 1)"),
    (sqrt_of_d_k_plus_one, "or d_k + 1"),
    (dV_without_the_transpose, "dV uses A where it needs A^T"),
    (forgets_D, "lacks the '- D' term"),
    (adds_D, "D has the wrong sign"),
    (D_as_a_plain_row_sum, "not the plain row sum"),
    (no_scale_in_dQ_and_dK, "dQ lacks the factor c"),
    (no_scale_in_dQ_and_dK, "dK lacks the factor c"),
    (scale_on_dV_too, "dV carries the factor c"),
    (dK_without_the_transpose, "dK uses dS where it needs dS^T"),
    (uses_dot_T, "X.T reverses every axis"),
    (returns_dQ_dV_dK, "you returned (dQ, dV, dK)"),
    (returns_dV_dK_dQ, "you returned (dV, dK, dQ)"),
    (ignores_the_mask, "the mask is ignored"),
    (inverts_the_mask, "the mask is inverted"),
    (masks_with_zero, "set to 0 instead of -inf"),
    (softmax_over_queries, "wrong axis"),
    (returns_None_for_dK, "dK is None"),
    (nan_for_a_query_with_no_visible_key, "whose every key is masked"),
    (minus_1e9_for_masked_scores, "got uniform weights"),
    (fills_float32_min_in_float32, "got uniform weights"),  # st18a: passed
    (fills_minus_1e9_in_float32, "got uniform weights"),  # st18a: passed
    (D_from_the_unmasked_forward_pass, "D comes from the unmasked forward pass"),
    (dK_without_the_mask, "dK is the gradient of unmasked attention"),
    (mask_applied_after_the_softmax, "multiplies the weights after the softmax"),
    (d_k_from_axis_1, "reads d_k from Q.shape[1]"),
    (scale_from_T_q, "the scale uses T_q"),
    (float64_from_np_sqrt, "are float64 for float32 inputs"),
    (jacobian_from_np_eye, "float64 for float32 inputs"),
    (computes_in_float32, "float32 precision"),
    (dA_through_a_pseudo_inverse, "not dO times an inverse of V"),
    (dV_through_an_inverse, "needs no matrix inverse"),
    (last_head_only, "(batch item, head) pairs"),
    (loop_without_the_batch_index, "(batch item, head) pairs"),
    (dS_negated, "dQ, dK are negated"),
    (every_gradient_negated, "every gradient has the wrong sign"),
    (divides_by_c, "dQ divides by c"),
    (divides_by_c, "dK divides by c"),
    (D_without_keepdims, "D lost its keepdims"),
    (D_without_keepdims, "keepdims=True"),
    (forward_without_the_row_maximum, "subtract each row's maximum"),
    (mask_after_the_softmax_renormalised, "and the weights renormalised"),
    (mask_after_the_softmax_renormalised_in_float32, "and the weights renormalised"),
    (scores_in_float16, "as float16 rounding does"),
    (everything_in_float16, "as float16 rounding does"),
]

# Phrases that belong to some mistakes only: no other attempt may be told them.
EXCLUSIVE = {
    "initial=-np.inf": {takes_a_plain_row_maximum},
    "dQ = c dS K, a sum over no key": {returns_nan_without_keys},
    "(the shape of K): each gradient": {returns_the_shapes_of_Q_and_dO_without_keys},
    "with T_k = 0 (no key at all) dQ is": {returns_float64_zeros_without_keys,
                                          returns_zeros_in_the_working_dtype_without_keys},
    "were dropped": {returns_2d_zeros_without_keys},
    "mask=None": {applies_a_causal_mask_by_default},
    CLIPPED: {clips_scores_at_1e4, clips_scores_at_1e5, clips_scores_at_1e6,
              clips_scores_at_1e20},
    FIRST_BLOCK: {online_softmax_in_blocks_of_64_from_minus_inf,
                  online_softmax_in_blocks_of_4_from_minus_inf,
                  online_softmax_in_blocks_of_2_from_minus_inf,
                  online_softmax_in_blocks_of_3_from_minus_inf,
                  online_softmax_in_blocks_of_4500_from_minus_inf},
    FIRST_BLOCK_ZEROED: {online_softmax_in_blocks_of_4500_from_minus_inf_nan_to_num,
                         online_softmax_in_blocks_of_4201_from_minus_inf_nan_to_num,
                         online_softmax_in_blocks_of_64_from_minus_inf_nan_to_num},
    ONE_KEY: {one_key_gets_weight_1},
    ONLINE: {online_softmax_in_blocks_of_2048_not_rescaled,
             online_softmax_in_blocks_of_4096_not_rescaled,
             online_softmax_in_blocks_of_64_not_rescaled,
             online_softmax_in_blocks_of_8_not_rescaled,
             online_softmax_in_blocks_of_300_not_rescaled,
             online_softmax_in_blocks_of_512_not_rescaled},
    # (S[~mask] on a 2-D S reads a 1-D mask per query)
    KEY_PER_QUERY: {reads_a_key_mask_per_query_when_square, boolean_indexing},
    # (D over the long row's first 8 keys, whose weights are near e^-50 there, is
    # 0, as without the term; the long row's note says D runs over all T_k keys)
    "'- D' term": {forgets_D, D_over_the_first_8_keys},
    "weights renormalised": {mask_after_the_softmax_renormalised,
                             mask_after_the_softmax_renormalised_in_float32},
    # eps 1e-14 moves the [29, 0, 0, 0] row's dQ by 1.6e-2 of its size: told so
    "a saturated row": {skips_rows_above_0_999, skips_rows_above_1_minus_1e_6,
                        skips_rows_above_1_minus_1e_9, skips_rows_above_1_minus_1e_12,
                        skips_rows_above_1_minus_1e_13, zeroes_dQ_rows_above_1_minus_1e_13,
                        flushes_dS_below_1e_14, flushes_dS_below_1e_12,
                        normalises_with_eps_1e_14},
    # (a floor on the weights gives masked keys 1e-12 each: dV stays right)
    "its row mean was subtracted": {subtracts_the_row_mean_of_dS},
    "dS must be exactly 0": {subtracts_the_row_mean_of_dS, dS_with_an_epsilon, clips_weights_to_1e_12,
                             floors_the_exponent_at_minus_60,
                             floors_the_exponent_at_minus_100},
    "weights below a threshold were flushed": {flushes_weights_below_1e_13,
                                               flushes_weights_below_1e_12,
                                               flushes_weights_below_1e_9},
    "the weights have a floor": {clips_weights_to_1e_12},
    "a finite mask value": {adds_minus_1e4, adds_minus_1e4_and_zeroes_empty_rows,
                            adds_minus_1e9_and_zeroes_empty_rows,
                            adds_float32_min_and_zeroes_empty_rows,
                            adds_float64_min_and_zeroes_empty_rows},
    "plus a small constant": {epsilon_1e6_in_the_softmax, epsilon_1e9_in_the_softmax,
                              normalises_with_eps_1e_12, normalises_with_eps_1e_14},
    "computed in float32": {computes_in_float32, computes_in_float32_via_torch,
                            float32_gradients_for_float64},
    "D has the wrong sign": {adds_D},
    "plain row sum": {D_as_a_plain_row_sum},
    "lacks the factor c": {no_scale_in_dQ_and_dK},
    "dV carries the factor c": {scale_on_dV_too},
    "dS where it needs dS^T": {dK_without_the_transpose},
    "X.T reverses every axis": {uses_dot_T},
    "wrong order": {returns_dQ_dV_dK, returns_dV_dK_dQ},
    "mask is ignored": {ignores_the_mask, dK_without_the_mask},
    "mask is inverted": {inverts_the_mask},
    "instead of -inf": {masks_with_zero},
    "wrong axis": {softmax_over_queries},
    # (in float16, eps = 1e-12 and a clamp at -1e13 are 0 and -inf: a float16
    # query with no visible key is 0/0 there, st18a's float16 empty rows)
    "softmax is 0/0 = NaN": {nan_for_a_query_with_no_visible_key,
                             guards_only_masks_of_two_or_more_dimensions, uses_dot_T,
                             normalises_with_eps_1e_12,
                             clamps_the_row_maximum_at_minus_1e13},
    "uniform weights": {minus_1e9_for_masked_scores, fills_float32_min_in_float32,
                        fills_minus_1e9_in_float32,
                        zeroes_empty_rows_only_for_a_full_shape_mask},
    "unmasked forward pass": {D_from_the_unmasked_forward_pass},
    "after the softmax": {mask_applied_after_the_softmax},
    "Q.shape[1]": {d_k_from_axis_1, d_k_from_axis_3_or_1},  # (the latter on 5-D)
    # (at d_k = 5, T_q = 4: 1/int(np.sqrt(d_k)) and 1/sqrt(T_q) are both 1/2)
    "uses T_q": {scale_from_T_q, d_k_from_axis_1, d_k_from_axis_3_or_1,
                 scales_by_the_integer_root_of_d_k},
    "int() or // truncates it": {scale_from_T_q, scales_by_the_integer_root_of_d_k},
    "(float16's minimum)": {fills_the_inputs_finfo_min_in_float32,
                            fills_float16_min_and_zeroes_empty_rows},
    "an allowed score below it": {fills_minus_1e9_and_zeroes_empty_rows,
                                  fills_float16_min_and_zeroes_empty_rows,
                                  minus_1e9_for_masked_scores,
                                  fills_minus_1e15_and_zeroes_empty_rows,
                                  fills_float32_min_and_zeroes_empty_rows},
    "maximum of the whole array": {shifts_by_the_global_maximum, shifts_by_each_heads_maximum},
    "maximum of each head": {shifts_by_the_global_maximum, shifts_by_each_heads_maximum},
    "has the wrong sign, but": {negates_dQ_only},
    "a (T_k,) mask": {reads_a_key_mask_as_padding},
    "given a head axis": {gives_a_3d_mask_a_head_axis},
    PER_HEAD: {gives_a_3d_mask_a_head_axis, reads_a_3d_mask_per_batch_item},
    "does not show A right": {rounds_A_to_float16},
    "done in float32": {scores_in_float32_the_rest_in_float64},
    "for float32 inputs": {float64_from_np_sqrt, jacobian_from_np_eye,
                           adds_a_float64_bias, float64_bias_without_a_mask,
                           returns_float64_zeros_without_keys},
    "float32 precision": {computes_in_float32, computes_in_float32_via_torch,
                          float32_gradients_for_float64},
    "inverse of V": {dA_through_a_pseudo_inverse},
    "no matrix inverse": {dV_through_an_inverse},
    "(batch item, head) pairs": {last_head_only, loop_without_the_batch_index},
    "are negated": {dS_negated},
    "every gradient has the wrong sign": {every_gradient_negated},
    "divides by c": {divides_by_c},
    # (the remedy S.max(axis=-1, keepdims=True, initial=-np.inf) names keepdims too)
    "D lost its keepdims": {D_without_keepdims},
    "(dO * O).sum(axis=-1, keepdims=True)": {D_without_keepdims},
    "argument Q in place": {scales_Q_in_place},
    "np.nan_to_num": {nan_to_num_on_the_gradients,  # (FIRST_BLOCK_ZEROED names it)
                      online_softmax_in_blocks_of_4500_from_minus_inf_nan_to_num,
                      online_softmax_in_blocks_of_4201_from_minus_inf_nan_to_num,
                      online_softmax_in_blocks_of_64_from_minus_inf_nan_to_num},
    "(~mask) * -inf": {adds_not_mask_times_minus_inf},
    "store each one at its own index": {last_head_only, loop_without_the_batch_index},
    "1/d_k instead": {scale_one_over_d_k},
    "uses d_v": {scale_from_d_v},
    "d_k + 1": {sqrt_of_d_k_plus_one},
    "A where it needs A^T": {dV_without_the_transpose},
}


def _failures(fn, capsys=None) -> list[str]:
    """The failing lines of the checker's one run on fn (see conftest.run_once), each
    joined whole (a wrapped message continues on lines indented by four spaces)."""
    run = run_once(checkers.check_attention_backward, fn)
    assert run.result is False
    return [line for line in run.text.splitlines() if line.startswith("✗")]


if np.dtype(np.longdouble) != np.float64:  # long double is float64 on some platforms
    WRONG.append((long_double_gradients_for_float64, "for float64 inputs"))


@pytest.mark.parametrize("fn", [correct, correct_with_D_from_its_definition, fills_float64_min,
                                online_softmax_rescaled,
                                correct_by_the_log_of_the_mask,
                                float16_in_float32_cast_back])
def test_correct_attempts_pass_every_case(fn, capsys):
    assert checkers.check_attention_backward(fn) is True
    out = capsys.readouterr().out
    assert "✗" not in out and "11 of 11 checks passed." in out


@pytest.mark.parametrize("fn, phrase", WRONG, ids=[f"{fn.__name__}-{i}" for i, (fn, _) in enumerate(WRONG)])
def test_each_wrong_attempt_is_rejected_with_a_message_that_names_its_mistake(fn, phrase, capsys):
    failures = _failures(fn, capsys)
    assert failures, fn.__name__
    assert any(phrase in line for line in failures), "\n".join(failures)


@pytest.mark.parametrize("fn", sorted({fn for fn, _ in WRONG}, key=lambda f: f.__name__),
                         ids=lambda f: f.__name__)
def test_no_wrong_attempt_is_told_another_mistakes_name(fn, capsys):
    failures = "\n".join(_failures(fn, capsys))
    for phrase, owners in EXCLUSIVE.items():
        if fn not in owners:
            assert phrase not in failures, (fn.__name__, phrase)


def test_dot_T_passes_on_one_head_and_fails_only_with_batch_and_heads(capsys):
    # (st15a: it has no guard either, which the all-False (T_k,) mask shows)
    failures = _failures(uses_dot_T, capsys)
    one_head = [f for f in failures if f.startswith("✗ one head")]
    assert len(failures) == 7 and len(one_head) == 1, failures
    assert "an empty sequence" in one_head[0] and "0/0 = NaN" in one_head[0]


def test_a_product_whose_shapes_do_not_fit_on_one_head_is_pointed_to_the_equations(capsys):
    failures = _failures(dK_without_the_transpose, capsys)
    one_head = [f for f in failures if f.startswith("✗ one head") and "raised" in f]
    assert one_head and all("dK = c dS^T Q" in f for f in one_head)
    assert not any("X.T reverses" in f for f in failures)


def test_the_mask_mistakes_pass_without_a_mask_and_fail_with_one(capsys):
    for fn in (ignores_the_mask, inverts_the_mask, masks_with_zero, dK_without_the_mask,
               D_from_the_unmasked_forward_pass, mask_applied_after_the_softmax):
        failures = _failures(fn, capsys)
        assert failures and all("mask" in f.split(":")[0] for f in failures), failures


def test_a_plain_row_maximum_fails_only_on_no_key_at_all_and_is_told_the_crash(capsys):
    """st19a: S.max(axis=-1, keepdims=True) raises on T_k = 0; it fails the three cases
    that hold it (one head with masks, the batched ones, st20a, and float32 and
    float16), each told what it raised."""
    failures = _failures(takes_a_plain_row_maximum, capsys)
    assert len(failures) == 3 and failures[0].startswith("✗ one head, causal mask") \
        and failures[1].startswith("✗ batch and head dimensions") \
        and failures[2].startswith("✗ float32 inputs"), failures
    assert all("no key at all" in f.split(":")[0] for f in failures), failures  # the titles
    assert all("raised ValueError: zero-size array to reduction operation maximum "
               "which has no identity; here T_k = 0" in f for f in failures), failures


def test_no_key_at_all_gives_zero_gradients_in_the_library():
    """The reference of the no-key cases: dQ zeros (T_q, d_k), dK (0, d_k), dV (0, d_v)."""
    for dtype, mask in ((np.float64, None), (np.float64, np.zeros((2, 0), bool)),
                        (np.float32, np.zeros((2, 0), bool))):
        Q, K, V = np.ones((2, 3), dtype), np.ones((0, 3), dtype), np.ones((0, 4), dtype)
        dQ, dK, dV = attention.attention_backward(Q, K, V, np.ones((2, 4), dtype), mask=mask)
        assert (dQ.shape, dK.shape, dV.shape) == ((2, 3), (0, 3), (0, 4)) and not np.any(dQ)
        assert dQ.dtype == dK.dtype == dV.dtype == dtype


def test_the_skeleton_that_raises_fails_every_case_without_crashing(capsys):
    def skeleton(Q, K, V, dO, mask=None):
        raise NotImplementedError("your code here")

    failures = _failures(skeleton, capsys)
    # every case failed the same way: one line says so
    assert failures == ["✗ every case: raised NotImplementedError: your code here"]


def test_the_empty_row_mistakes_fail_only_the_case_with_an_empty_row(capsys):
    # the all-False (T_k,) mask (an empty sequence), the padding case (one sequence
    # of length 0) and the full mask's case
    # (and the float32 and float16 queries that see no key, st18a; and the query
    # that one key, T_k = 1, is hidden from, st21a)
    failures = _failures(nan_for_a_query_with_no_visible_key, capsys)
    assert len(failures) == 5 and "an empty sequence" in failures[0], failures
    assert failures[4].startswith("✗ float32 inputs") and \
        "0/0 = NaN" in failures[4], failures
    assert "one key (T_k = 1)" in failures[1] and "0/0 = NaN" in failures[1], failures
    assert "one sequence empty" in failures[2], failures
    assert "see no key" in failures[3], failures
    # -1e9 for -inf fails there, and where a query's visible keys score below -1e9
    # (and the float32 and float16 queries that see no key, st18a)
    failures = _failures(minus_1e9_for_masked_scores, capsys)
    assert len(failures) == 6 and "see no key" in failures[4], failures
    assert "one key (T_k = 1)" in failures[2] and "uniform weights" in failures[2]
    assert "one sequence empty" in failures[3], failures
    assert failures[5].startswith("✗ float32 inputs") and \
        "uniform weights" in failures[5], failures
    assert "an empty sequence" in failures[0] and "uniform weights" in failures[0]
    assert failures[1].startswith("✗ masked keys") and "allowed score below" in failures[1]


def test_the_dtype_mistakes_fail_only_the_float32_case(capsys):
    for fn in (float64_from_np_sqrt, jacobian_from_np_eye, adds_a_float64_bias):
        failures = _failures(fn, capsys)
        assert len(failures) == 1 and failures[0].startswith("✗ float32 inputs"), failures


def test_a_float32_attempt_that_casts_back_passes(capsys):
    def casts_back(Q, K, V, dO, mask=None):
        return tuple(g.astype(Q.dtype) for g in jacobian_from_np_eye(Q, K, V, dO, mask))

    assert checkers.check_attention_backward(casts_back) is True


def test_the_checker_inputs_have_all_sizes_different():
    """So that a size read from the wrong axis (T_q for d_k, H for d_k, ...) shows."""
    from attention.checkers.backward import _inputs

    Q, K, V, dO = _inputs(np.random.default_rng(0), batch=(2, 3))
    sizes = Q.shape + K.shape[-2:-1] + V.shape[-1:]
    assert len(set(sizes)) == len(sizes) == 6


def test_every_printed_line_fits_the_book_column():
    for fn, _ in WRONG:
        out = run_once(checkers.check_attention_backward, fn).out
        assert max(len(line) for line in out.splitlines()) <= 76, fn.__name__


def test_the_checker_leaves_no_warnings_behind():
    for fn, _ in WRONG:
        run = run_once(checkers.check_attention_backward, fn)
        assert not [w for w in run.warnings if issubclass(w.category, RuntimeWarning)], fn.__name__


def test_the_softmax_over_queries_is_named_even_where_a_masked_column_gives_nan(capsys):
    """A causal mask leaves a key column all -inf: the softmax over queries is NaN there,
    and the message still names the axis, not an overflow."""
    failures = _failures(softmax_over_queries, capsys)
    assert len(failures) == 11 and all("wrong axis" in f for f in failures), failures


# Attempts whose every failing case must name their mistake (each was told another
# mistake's name, or none, on some case before).
EVERY_LINE = [
    # (st19a: the one-head masked case and the float32 one, each on no key at all)
    (takes_a_plain_row_maximum, "zero-size array to reduction operation maximum"),
    (takes_a_plain_row_maximum, "initial=-np.inf"),
    (scores_in_float32_the_rest_in_float64, "precision was lost on the way"),
    (adds_minus_1e4, "a finite mask value (use -inf"),
    (adds_minus_1e4_and_zeroes_empty_rows, "a finite mask value (use -inf"),
    (adds_minus_1e9_and_zeroes_empty_rows, "a finite mask value (use -inf"),
    (adds_float32_min_and_zeroes_empty_rows, "a finite mask value (use -inf"),
    (epsilon_1e6_in_the_softmax, "plus a small constant"),
    (epsilon_1e9_in_the_softmax, "plus a small constant"),
    (computes_in_float32, "float32"),
    (computes_in_float32_via_torch, "float32"),
    # (st24a: the long row was told its key-block note first)
    (flushes_dS_below_1e_12, "flushed to 0"),
    # (st24a: the masked float16 case was told the shift)
    (mask_after_the_softmax_renormalised_in_float32, "and the weights renormalised"),
]


@pytest.mark.parametrize("fn, phrase", EVERY_LINE, ids=[fn.__name__ for fn, _ in EVERY_LINE])
def test_every_failing_case_of_these_attempts_names_their_mistake(fn, phrase, capsys):
    failures = _failures(fn, capsys)
    assert failures and all(phrase in line for line in failures), failures


def test_a_finite_bias_that_zeroes_empty_rows_fails_only_on_the_far_masked_keys(capsys):
    failures = _failures(adds_minus_1e9_and_zeroes_empty_rows, capsys)
    assert len(failures) == 1 and "near 1e300" in failures[0], failures


def test_the_cases_hold_rows_far_below_0_float32_scores_above_88_and_3d_inputs():
    """What st4a's attempts needed: a query whose scores all lie near -1000, one whose
    visible keys score below -1e9 (near -1e12, and near -1e300), float32 scores above
    88.7 (where float32's exp() overflows) and 3-D inputs with a (T_q, T_k) mask."""
    calls = []

    def spy(Q, K, V, dO, mask=None):
        calls.append((Q.copy(), K.copy(), mask))
        return correct(Q, K, V, dO, mask)

    assert checkers.check_attention_backward(spy, verbose=False)
    rows = []
    for Q, K, mask in calls:
        if K.shape[-2] == 0:  # no key at all: no score
            continue
        S = Q.astype(np.float64) @ swap(K.astype(np.float64)) / math.sqrt(Q.shape[-1])
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        top = float(np.max(np.where(np.isfinite(S), S, -np.inf)))
        rows.append((Q.dtype, Q.ndim, mask is None or np.ndim(mask) == 2,
                     float(S.max(-1).min()), top))
    assert any(-1100 < low < -900 for _, _, _, low, _ in rows)
    assert any(-1.7e12 < low < -0.9e12 for _, _, _, low, _ in rows)
    assert any(-1.1e300 < low < -0.9e300 for _, _, _, low, _ in rows)  # finite fills fail
    assert any(d == np.float32 and top > 88.7 for d, _, _, _, top in rows)
    # float32 with and without a mask (st6a: a float64 bias only when unmasked)
    assert {mask is None for Q, _, mask in calls if Q.dtype == np.float32} == {True, False}
    assert any(ndim == 3 and flat for _, ndim, flat, _, _ in rows)


def test_precision_is_not_blamed_on_a_loop_nor_eps_on_float32(capsys):
    """Pairs just outside the tolerance are precision, not a loop; an eps of 1e-14
    in float64 is no float32 number."""
    checkers.check_attention_backward(weights_from_the_log_sum_exp)
    assert "(batch item, head) pairs" not in capsys.readouterr().out
    assert "float32" not in "".join(_failures(normalises_with_eps_1e_14, capsys))


def test_a_boolean_index_with_a_mask_is_told_it_needs_the_full_shape_on_every_case(capsys):
    raised = [f for f in _failures(boolean_indexing, capsys) if "raised IndexError" in f]
    assert len(raised) >= 3
    assert all("S[~mask] = -np.inf needs a mask of the scores' full shape" in f
               for f in raised), raised


def test_the_saturated_rows_lie_between_0_999_and_one_and_right_answers_meet_them():
    """Rows whose largest weight lies in (0.999, 1) (st9a: none did), each compared with
    its own size; the right answers come within a relative 1e-5 there."""
    from attention.checkers.backward import RTOL_SATURATED
    Q, K = np.array([[9.0], [16.0], [25.0]]), np.array([[1.0], [0.0], [0.0], [0.0]])
    largest = attention.softmax(Q @ K.T).max(axis=-1)
    assert np.all((largest > 0.999) & (largest < 1)) and largest.max() > 1 - 1e-9
    rng = np.random.default_rng(0)
    V, dO = rng.standard_normal((4, 3)), rng.standard_normal((3, 3))
    want = attention.attention_backward(Q, K, V, dO)[0]
    for fn in (correct, correct_with_D_from_its_definition):
        got = fn(Q, K, V, dO)[0]
        error = np.abs(got - want).max(axis=-1) / np.abs(want).max(axis=-1)
        assert error.max() < RTOL_SATURATED / 10, error
    # and [29, 0, 0, 0] (1 - 7.6e-13): float64 steps without the shift (right at
    # these scores) come within 7.5e-4 there, under its 32 roundings (9.3e-3)
    from attention.checkers.backward import _saturated_case
    Q29, V29 = np.array([[9.0], [29.0]]), rng.standard_normal((4, 3))
    assert 1 - attention.softmax(Q29 @ K.T).max() < 1e-12
    assert _saturated_case(shifts_only_above_80, Q29, K, V29, dO[:2])()[0]
    assert not _saturated_case(skips_rows_above_1_minus_1e_12, Q29, K, V29, dO[:2])()[0]


def test_a_change_to_dS_after_right_weights_is_not_told_a_masked_key_got_weight(capsys):
    """st14a: dS - dS.mean(-1) leaves dV (so A) right; dQ near 5e283 comes from dS,
    not from a weight."""
    failures = "\n".join(_failures(subtracts_the_row_mean_of_dS, capsys))
    assert "dS must be exactly 0 where A is 0" in failures
    assert "got some weight" not in failures
    assert "compute dS the same way on every row" not in failures  # (st22a)


def _D_summed(how):
    def right(Q, K, V, dO, mask=None):
        """The page's steps in float64, D = sum_j A_ij dA_ij summed some right way."""
        c, A, _ = _guarded_forward(Q, K, V, mask)
        dA = dO @ swap(V)
        AdA = (A * dA).reshape(-1, A.shape[-1])
        D = np.array([how(r) for r in AdA]).reshape(A.shape[:-1] + (1,))
        dS = A * (dA - D)
        return c * dS @ K, c * swap(dS) @ Q, swap(A) @ dO
    return right


def test_the_row_of_scores_32_takes_right_sums_and_rejects_a_zeroed_or_flushed_row():
    """st14a: at [32, 0, 0, 0] (1 - 3.8e-14) the allowance of 32 roundings (0.19 of
    the row's size) takes D summed in order, in reverse, exactly (math.fsum) or in
    long double (6.7e-3 off), and rejects the row zeroed or flushed (off by 1; a
    flush of the weights by sum_j>0 dA_j against 3 dA_0 - sum_j>0 dA_j, which V
    decides: 1.5 here, 1.2 in the checker's case, 0.1 with some V)."""
    from attention.checkers.backward import _saturated_case
    Q, K = np.array([[9.0], [32.0]]), np.array([[1.0], [0.0], [0.0], [0.0]])
    gap = 1 - attention.softmax(Q @ K.T).max(axis=-1)
    assert 3e-14 < gap[1] < 4e-14
    rng = np.random.default_rng(2)
    V = rng.standard_normal((4, 3))
    dO = np.vstack([rng.standard_normal((1, 3)),
                    np.random.default_rng(32).standard_normal((1, 3)) / 4])
    sums = (np.sum, math.fsum, lambda r: np.sum(r[::-1]),
            lambda r: float(np.sum(r.astype(np.longdouble))))
    for how in sums:
        assert _saturated_case(_D_summed(how), Q, K, V, dO)()[0]
    for wrong in (skips_rows_above_1_minus_1e_13, zeroes_dQ_rows_above_1_minus_1e_13,
                  flushes_dS_below_1e_14, flushes_weights_below_1e_13):
        assert not _saturated_case(wrong, Q, K, V, dO)()[0], wrong.__name__


def test_no_float16_failure_infers_a_right_A_from_dV(capsys):
    """st13a: within float16's tolerance a right dV does not show A right to float32
    precision; no float16 failure says "dV is right, so A is"."""
    for fn, _ in WRONG:
        checkers.check_attention_backward(fn)
    out = re.sub(r"\n    ", " ", capsys.readouterr().out)
    half = [line for line in out.splitlines() if "for float16 inputs:" in line]
    assert half and not any("so A is" in line for line in half)
    assert any("does not show A right to float32's precision" in line for line in half)


def test_an_h_t_q_t_k_mask_on_4d_inputs_has_b_equal_h_and_heads_that_differ():
    """The (H, T_q, T_k) mask case: B = H, so mask[:, None] broadcasts silently, and
    the heads' masks differ, so reading it per batch item changes the gradients; no
    case has a visible score equal to np.finfo(np.float64).min (the docstring: that
    fill is accepted because it ties only with such a score)."""
    seen = []

    def spy(Q, K, V, dO, mask=None):
        seen.append((Q.copy(), K.copy(), mask))
        return correct(Q, K, V, dO, mask)

    assert checkers.check_attention_backward(spy, verbose=False)
    per_head = [(Q, m) for Q, _, m in seen
                if Q.ndim == 4 and m is not None and np.ndim(m) == 3]
    assert per_head
    for Q, m in per_head:
        assert Q.shape[0] == Q.shape[1] == m.shape[0]
        assert any(not np.array_equal(m[0], m[h]) for h in range(1, m.shape[0]))
    lowest = np.finfo(np.float64).min
    for Q, K, m in seen:
        with np.errstate(all="ignore"):
            S = Q.astype(np.float64) @ np.swapaxes(K.astype(np.float64), -1, -2)
            S = S / math.sqrt(Q.shape[-1])
        visible = np.broadcast_to(True if m is None else m, S.shape)
        assert not np.any(S[visible] == lowest)


def test_the_cases_hold_a_long_row_a_square_key_mask_an_empty_sequence_and_5d_inputs():
    """What the backward page's checker paragraph lists (st15a, st17a): a masked
    row of over four thousand keys, not a multiple of any block size, whose maximum
    grows from key block to key block (of 64 to 4096 keys) in the rows that see key
    0, a row hiding its first keys beyond 4096 and a short one hiding its first 3;
    a (T_k,) mask on T_q = T_k; an all-False (T_k,) mask; no key at all; inputs with
    three leading dimensions."""
    seen = []

    def spy(Q, K, V, dO, mask=None):
        seen.append((Q.copy(), K.copy(), mask))
        return correct(Q, K, V, dO, mask)

    assert checkers.check_attention_backward(spy, verbose=False)

    def rises(Q, K, mask, block):
        S = np.where(mask, Q @ swap(K), -np.inf)
        tops = np.stack([S[..., b:b + block].max(-1)
                         for b in range(0, S.shape[-1], block)], axis=-1)
        return bool(np.all(np.diff(tops, axis=-1) > 0))

    long = [(Q, K, m) for Q, K, m in seen if K.shape[-2] >= 100 and m is not None]
    blocks = (64, 128, 256, 512, 1024, 2048, 4096)
    assert long and all(K.shape[-2] > 4096 and all(K.shape[-2] % b for b in
                                                   blocks + (100, 1000))
                        for _, K, _ in long)
    assert any(all(rises(Q[m[:, 0]], K, m[m[:, 0]], b) for b in blocks)
               and not np.all(m) and m[:, 0].sum() >= 2 for Q, K, m in long)
    # a row hiding its first keys beyond the largest block (st17a), and a short one
    # hiding its first 3
    assert any(np.any(~m[:, :4097].any(-1) & m.any(-1)) for _, _, m in long)
    # (st21a) a row that sees only its last key: a first block of any size up to
    # T_k - 1 is fully masked there
    assert any(np.any(~m[:, :-1].any(-1) & m[:, -1]) for _, _, m in long)
    # one key, T_k = 1, on (B, H) inputs, hidden from some query by a (T_q, 1) mask
    # (st21a: a shortcut giving it weight 1 passed)
    assert any(K.shape[-2] == 1 and Q.ndim == 4 and np.shape(m) == (Q.shape[-2], 1)
               and np.any(m) and not np.all(m) for Q, K, m in seen if m is not None)
    assert any(np.any(np.argmax(m, axis=-1) >= 3) for _, K, m in seen
               if m is not None and np.ndim(m) == 2 and 0 < K.shape[-2] < 10)
    assert any(np.ndim(m) == 1 and Q.shape[-2] == K.shape[-2] and np.any(m)
               and not np.all(m) for Q, K, m in seen if m is not None)
    assert any(np.ndim(m) == 1 and not np.any(m) for _, _, m in seen if m is not None)
    assert any(Q.ndim == 5 for Q, _, _ in seen)
    # no key at all, T_k = 0 (st19a), without a mask and with a (T_q, 0) one, float32
    # and float16 too, and with batch and head axes (st20a)
    no_key = {(Q.dtype.name, m is None, Q.ndim) for Q, K, m in seen if K.shape[-2] == 0
              and (m is None or np.shape(m) == Q.shape[-2:-1] + (0,))}
    assert no_key == {("float64", True, 2), ("float64", False, 2), ("float32", False, 2),
                      ("float16", True, 2), ("float64", True, 4)}
    # and unmasked square inputs, T_q = T_k (st20a: a causal mask by default was told
    # only "dQ differs")
    assert any(m is None and Q.shape[-2] == K.shape[-2] > 1 for Q, K, m in seen)


def test_a_backward_pass_that_zeroes_rows_where_A_max_is_1_fails_and_is_named(capsys):
    """The docstring (st17a; st15a found it passing): from [37, 0, 0, 0] on A.max() is
    exactly 1.0 (not at [36, 0, 0, 0]); the query at [40, 0, 0, 0] rejects a
    backward pass that zeroes such rows, or rows above 1 - 1e-15, and names it."""
    def top(s):
        a = np.exp(np.array([s, 0.0, 0.0, 0.0]) - s)
        return (a / a.sum()).max()

    assert top(36.0) < 1.0 and top(37.0) == 1.0 and top(40.0) == 1.0
    for attempt in (_zeroes_dS_where(lambda m: m == 1.0, "at_1"),
                    _zeroes_dS_where(lambda m: m > 1 - 1e-15, "past_1_minus_1e_15")):
        failures = _failures(attempt, capsys)
        assert len(failures) == 1 and SATURATED_ONE in failures[0], failures


def test_right_ways_pass_the_row_whose_largest_weight_is_1():
    """D from its definition, in long double, or dS expanded as A dA - A D: within
    the few roundings each entry allows at [40, 0, 0, 0]."""
    from attention.checkers import backward as module

    Q, K = np.array([[40.0]]), np.array([[1.0], [0.0], [0.0], [0.0]])
    rng = np.random.default_rng(3)
    V, dO = rng.standard_normal((4, 3)), rng.standard_normal((1, 3))
    for fn in (correct, correct_with_D_from_its_definition):
        assert module._rounded_one_case(fn, Q, K, V, dO)() == (True, "")


def test_the_cases_hold_visible_scores_far_above_where_a_clip_would_cut():
    """The backward page's checker paragraph (st16a): visible float64 scores near 1e7
    (not one-hot) and near 1e299, and float16 inputs whose scores pass 65504 (near
    65600 and 514000), where scores clipped from above (at 1e4 to 1e6) tie."""
    seen = []

    def spy(Q, K, V, dO, mask=None):
        seen.append((Q.copy(), K.copy(), mask))
        return correct(Q, K, V, dO, mask)

    assert checkers.check_attention_backward(spy, verbose=False)

    def top_rows(Q, K, m):
        with np.errstate(all="ignore"):
            S = Q.astype(np.float64) @ swap(K.astype(np.float64)) / math.sqrt(Q.shape[-1])
        S = np.where(True if m is None else m, S, -np.inf)
        return S.max(-1), np.sort(S, -1)

    f64 = [top_rows(Q, K, m) for Q, K, m in seen
           if Q.dtype == np.float64 and K.shape[-2] > 0]  # (T_k = 0: no score)
    # a row above 1e6 whose two largest visible scores are within 1 (not one-hot)
    with np.errstate(invalid="ignore"):  # (-inf) - (-inf) on a fully masked row
        assert any(np.any((tops > 1e6) & (s[..., -1] - s[..., -2] < 1.0))
                   for tops, s in f64)
    assert any(np.any(tops > 1e299) for tops, _ in f64)
    f16 = [top_rows(Q, K, m)[0] for Q, K, m in seen
           if Q.dtype == np.float16 and K.shape[-2] > 0]
    assert any(np.any((t > 65504) & (t < 7e4)) for t in f16)
    assert any(np.any(t > 5e5) for t in f16)


@pytest.mark.parametrize("fn", [online_softmax_in_blocks_of_64_from_minus_inf,
                                online_softmax_in_blocks_of_2_from_minus_inf])
def test_a_first_block_nan_is_named_on_every_failing_case(fn, capsys):
    # st17a: the NaN of a fully masked first block was told "usually exp() of a
    # score that overflowed (subtract each row's maximum first)"
    failures = _failures(fn, capsys)
    assert failures and all(FIRST_BLOCK in line and "overflowed" not in line
                            for line in failures), failures


def test_right_attempts_pass_at_sizes_drawn_afresh(monkeypatch):
    """st21a: sets of sizes drawn afresh on each call, as in ex-numpy-attention's
    checker (a shortcut tuned to one fixed size passed every round)."""
    monkeypatch.setattr(ATTENTION, "_draw_sizes", DRAW_SIZES)
    for seed in (1, 2, 3):
        monkeypatch.setattr(BACKWARD, "_fresh_seed", lambda seed=seed: seed)
        for fn in (correct, correct_with_D_from_its_definition):
            assert checkers.check_attention_backward(fn, verbose=False), seed


def test_a_mistake_seen_only_at_drawn_sizes_prints_them_and_the_seed(monkeypatch, capsys):
    monkeypatch.setattr(ATTENTION, "_draw_sizes", lambda seed: (((2,), 3, 4, 11, 2),))
    monkeypatch.setattr(BACKWARD, "_fresh_seed", lambda: 42)

    def right_but_at_d_k_11(Q, K, V, dO, mask=None):  # no fixed case has d_k = 11
        dQ, dK, dV = correct(Q, K, V, dO, mask)
        return (1.1 * dQ if Q.shape[-1] == 11 else dQ), dK, dV

    assert checkers.check_attention_backward(right_but_at_d_k_11) is False
    out = capsys.readouterr().out
    assert "(at sizes drawn afresh for this call: Q (2, 3, 11), K (2, 4, 11), V (2, " \
        "4, 2), no mask; _drawn_inputs(42) in attention.checkers.backward gives them " \
        "again, (Q, K, V, dO, mask) at each set of sizes)" in out
    assert "10 of 11 checks passed." in out


def test_the_printed_recipe_gives_the_drawn_inputs_again(monkeypatch, capsys):
    """st22a: the recipe printed was _draw_sizes(seed), whose sizes the backward changes
    (T_k at least 2, query 0 seeing keys 0 and 1) and which draws no dO."""
    monkeypatch.setattr(ATTENTION, "_draw_sizes", lambda seed: (((2,), 3, 1, 11, 2),))
    monkeypatch.setattr(BACKWARD, "_fresh_seed", lambda: 42)
    seen = []

    def right_but_at_d_k_11(Q, K, V, dO, mask=None):
        if Q.shape[-1] == 11:
            seen.append((Q, K, V, dO, mask))
            return tuple(1.1 * g for g in correct(Q, K, V, dO, mask))
        return correct(Q, K, V, dO, mask)

    assert checkers.check_attention_backward(right_but_at_d_k_11, verbose=False) is False
    [(Q, K, V, dO, mask)] = BACKWARD._drawn_inputs(42)
    assert K.shape == (2, 2, 11) and mask[0, :2].all()  # T_k 1 drawn, made 2
    got = seen[0]  # the first call at d_k = 11 is the drawn one, without the mask
    assert got[4] is None and all(np.array_equal(a, b) for a, b in zip(got[:4], (Q, K, V, dO)))
