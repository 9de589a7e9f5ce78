"""The checker of the exercise ``ex-backward`` is a specification: it accepts the right
answers and rejects each plausible wrong attempt with a message that names the mistake
(and only that mistake)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import attention
from attention import checkers


def swap(X):
    return np.swapaxes(X, -1, -2)


# --- right answers ----------------------------------------------------------------------

def correct(Q, K, V, dO, mask=None):
    """The page's equations, step by step."""
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * Q @ swap(K)                                  # (..., T_q, T_k)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = np.exp(S - S.max(axis=-1, keepdims=True))
    A = A / A.sum(axis=-1, keepdims=True)
    O = A @ V
    dV = swap(A) @ dO
    dA = dO @ swap(V)
    D = np.sum(dO * O, axis=-1, keepdims=True)
    dS = A * (dA - D)
    return c * dS @ K, c * swap(dS) @ Q, dV


def correct_with_D_from_its_definition(Q, K, V, dO, mask=None):
    """D_i = sum_j A_ij dA_ij, the definition, instead of the identity dO_i . O_i."""
    c = 1 / math.sqrt(Q.shape[-1])
    S = c * np.einsum("...qd,...kd->...qk", Q, K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = attention.softmax(S)
    dA = np.einsum("...qv,...kv->...qk", dO, V)
    D = np.sum(A * dA, axis=-1, keepdims=True)
    dS = A * (dA - D)
    return (c * np.einsum("...qk,...kd->...qd", dS, K),
            c * np.einsum("...qk,...qd->...kd", dS, Q),
            np.einsum("...qk,...qv->...kv", A, dO))


def the_library(Q, K, V, dO, mask=None):
    return attention.attention_backward(Q, K, V, dO, mask=mask)


def the_blocked_library(Q, K, V, dO, mask=None):
    return attention.blocked_attention_backward(Q, K, V, dO, mask=mask)


# --- wrong answers, as a student writes them --------------------------------------------

def _forward(Q, K, V, mask=None, fill=-np.inf, scale=None):
    c = 1 / math.sqrt(Q.shape[-1]) if scale is None else scale
    S = c * Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, fill)
    A = np.exp(S - S.max(axis=-1, keepdims=True))
    A = A / A.sum(axis=-1, keepdims=True)
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
    A = np.exp(S - S.max(axis=-1, keepdims=True))
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


# (attempt, a phrase its messages must contain)
WRONG = [
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
]

# Phrases that belong to some mistakes only: no other attempt may be told them.
EXCLUSIVE = {
    "'- D' term": {forgets_D},
    "wrong sign": {adds_D},
    "plain row sum": {D_as_a_plain_row_sum},
    "lacks the factor c": {no_scale_in_dQ_and_dK},
    "dV carries the factor c": {scale_on_dV_too},
    "dS where it needs dS^T": {dK_without_the_transpose},
    "X.T reverses every axis": {uses_dot_T},
    "wrong order": {returns_dQ_dV_dK, returns_dV_dK_dQ},
    "mask is ignored": {ignores_the_mask},
    "mask is inverted": {inverts_the_mask},
    "instead of -inf": {masks_with_zero},
    "wrong axis": {softmax_over_queries},
}


def _failures(fn, capsys) -> list[str]:
    assert checkers.check_attention_backward(fn) is False
    out = capsys.readouterr().out
    text = re.sub(r"\n    ", " ", out)  # a wrapped message continues on indented lines
    return [line for line in text.splitlines() if line.startswith("✗")]


@pytest.mark.parametrize("fn", [correct, correct_with_D_from_its_definition, the_library,
                                the_blocked_library])
def test_correct_attempts_pass_every_case(fn, capsys):
    assert checkers.check_attention_backward(fn) is True
    out = capsys.readouterr().out
    assert "✗" not in out and "6 of 6 checks passed." in out


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
    failures = _failures(uses_dot_T, capsys)
    assert len(failures) == 3 and all("(B, H, T_q, d_k)" in f or "(B, 1, 1, T_k)" in f
                                      or "every batch item" in f for f in failures)


def test_a_product_whose_shapes_do_not_fit_on_one_head_is_pointed_to_the_equations(capsys):
    failures = _failures(dK_without_the_transpose, capsys)
    one_head = [f for f in failures if f.startswith("✗ one head") and "raised" in f]
    assert one_head and all("dK = c dS^T Q" in f for f in one_head)
    assert not any("X.T reverses" in f for f in failures)


def test_the_mask_mistakes_pass_without_a_mask_and_fail_with_one(capsys):
    for fn in (ignores_the_mask, inverts_the_mask, masks_with_zero):
        failures = _failures(fn, capsys)
        assert failures and all("mask" in f.split(":")[0] for f in failures), failures


def test_the_skeleton_that_raises_fails_every_case_without_crashing(capsys):
    def skeleton(Q, K, V, dO, mask=None):
        raise NotImplementedError("your code here")

    failures = _failures(skeleton, capsys)
    assert len(failures) == 6 and all("NotImplementedError" in f for f in failures)


def test_every_printed_line_fits_the_book_column(capsys):
    for fn, _ in WRONG:
        checkers.check_attention_backward(fn)
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 76


def test_the_checker_leaves_no_warnings_behind(recwarn):
    for fn, _ in WRONG:
        checkers.check_attention_backward(fn, verbose=False)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
