"""Bad input to every public helper gets a clear error or a documented, tested result.

Conventions of the library (see attention/_validate.py):
* wrong shapes or widths: ValueError whose message names both shapes;
* bool, complex, object and string arrays: TypeError; integer arrays are promoted to float64;
* NaN or inf in the data: ValueError (-inf is allowed only where it means "masked");
* a mask must be boolean (TypeError otherwise) and broadcast to the scores (ValueError);
* temperature, scale, eps: positive and finite (ValueError); block sizes, lengths, d_k:
  integers (TypeError for a float or a bool) and positive / non-negative (ValueError);
* T_q = 0 gives an empty output; T_k = 0 a zero output (like a fully masked row).

Public names are written qualified (``attention.X``, ``at.X``, ``checkers.X``) so that the
meta-test at the end can check that every public function has a bad-input test here.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import attention
import attention.torch as at
import attention.training as training
from attention import checkers, measure, plotting, widgets

rng = np.random.default_rng(0)
Q, K, V = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
dO = rng.standard_normal((4, 2))


def _with(x, index, value):
    y = np.array(x, dtype=np.float64)
    y[index] = value
    return y


BAD_ARRAYS = {
    "complex": (Q.astype(np.complex128), TypeError, "complex"),
    "bool": (Q > 0, TypeError, "boolean"),
    "object": (Q.astype(object), TypeError, "object"),
    "string": (Q.astype(str), TypeError, "<U"),
    "NaN": (_with(Q, (1, 2), np.nan), ValueError, "NaN"),
    "+inf": (_with(Q, (0, 0), np.inf), ValueError, "inf"),
    "-inf": (_with(Q, (0, 0), -np.inf), ValueError, "inf"),
}

# The functions that take (Q, K, V[, ...]) and validate them the same way.
QKV_FUNCTIONS = {
    "plain": lambda Q, K, V, **kw: attention.scaled_dot_product_attention(Q, K, V, **kw),
    "blocked": lambda Q, K, V, **kw: attention.blocked_attention(Q, K, V, **kw),
    "tiled": lambda Q, K, V, **kw: attention.tiled_attention(Q, K, V, 2, **kw),
    "backward": lambda Q, K, V, **kw: attention.attention_backward(
        Q, K, V, np.ones(np.shape(Q)[:-1] + np.shape(V)[-1:]), **kw),
    "blocked backward": lambda Q, K, V, **kw: attention.blocked_attention_backward(
        Q, K, V, np.ones(np.shape(Q)[:-1] + np.shape(V)[-1:]), **kw),
}


# Q, K, V: dtypes, values, shapes -----------------------------------------------------


@pytest.mark.parametrize("fn", list(QKV_FUNCTIONS))
@pytest.mark.parametrize("kind", list(BAD_ARRAYS))
@pytest.mark.parametrize("which", ["Q", "K", "V"])
def test_attention_rejects_bad_arrays_in_each_operand(fn, kind, which):
    bad, error, words = BAD_ARRAYS[kind]
    args = {"Q": Q, "K": K[:4], "V": V[:4, :3]}  # same shape (4, 3) so `bad` fits anywhere
    args[which] = bad
    with pytest.raises(error, match=re.escape(words)):
        QKV_FUNCTIONS[fn](args["Q"], args["K"], args["V"])


def _names_both(excinfo, a, b):
    msg = str(excinfo.value)
    return str(tuple(a)) in msg and str(tuple(b)) in msg


SHAPE_ERRORS = {
    "mismatched d_k": (Q, rng.standard_normal((5, 2)), V, (4, 3), (5, 2)),
    "K and V lengths differ": (Q, K, rng.standard_normal((6, 2)), (5, 3), (6, 2)),
    "leading dims do not broadcast": (rng.standard_normal((2, 4, 3)), rng.standard_normal((3, 5, 3)),
                                      V, (2, 4, 3), (3, 5, 3)),
}


@pytest.mark.parametrize("fn", list(QKV_FUNCTIONS))
@pytest.mark.parametrize("case", list(SHAPE_ERRORS))
def test_attention_shape_errors_name_both_shapes(fn, case):
    q, k, v, shape_a, shape_b = SHAPE_ERRORS[case]
    with pytest.raises(ValueError) as excinfo:
        QKV_FUNCTIONS[fn](q, k, v)
    assert _names_both(excinfo, shape_a, shape_b), str(excinfo.value)


@pytest.mark.parametrize("fn", list(QKV_FUNCTIONS))
def test_attention_rejects_vectors_and_zero_width_keys(fn):
    with pytest.raises(ValueError, match=r"\(3,\)"):
        QKV_FUNCTIONS[fn](Q[0], K, V)
    with pytest.raises(ValueError, match="d_k must be at least 1"):
        QKV_FUNCTIONS[fn](np.zeros((4, 0)), np.zeros((5, 0)), V)


@pytest.mark.parametrize("forward, backward", [
    (attention.scaled_dot_product_attention, attention.attention_backward),
    (attention.blocked_attention, attention.blocked_attention_backward)], ids=["plain", "blocked"])
def test_attention_with_no_queries_gives_empty_results(forward, backward):
    O, A = forward(Q[:0], K, V)
    assert O.shape == (0, 2) and A.shape == (0, 5)
    assert attention.tiled_attention(Q[:0], K, V, 2).shape == (0, 2)
    dQ, dK, dV = backward(Q[:0], K, V, dO[:0])
    assert dQ.shape == (0, 3)
    assert np.array_equal(dK, np.zeros_like(K)) and np.array_equal(dV, np.zeros_like(V))


@pytest.mark.parametrize("forward, backward", [
    (attention.scaled_dot_product_attention, attention.attention_backward),
    (attention.blocked_attention, attention.blocked_attention_backward)], ids=["plain", "blocked"])
def test_attention_with_no_keys_gives_zero_output_and_zero_gradients(forward, backward):
    O, A = forward(Q, K[:0], V[:0])
    assert np.array_equal(O, np.zeros((4, 2))) and A.shape == (4, 0)
    assert np.array_equal(attention.tiled_attention(Q, K[:0], V[:0], 3), np.zeros((4, 2)))
    dQ, dK, dV = backward(Q, K[:0], V[:0], dO)
    assert np.array_equal(dQ, np.zeros_like(Q)) and dK.shape == (0, 3) and dV.shape == (0, 2)


@pytest.mark.parametrize("fn", list(QKV_FUNCTIONS))
def test_attention_promotes_integer_arrays_to_float64(fn):
    out = QKV_FUNCTIONS[fn](np.ones((4, 3), dtype=np.int32), np.arange(15).reshape(5, 3), np.eye(5, 2, dtype=int))
    first = out[0] if isinstance(out, tuple) else out
    assert first.dtype == np.float64 and np.isfinite(first).all()


@pytest.mark.parametrize("fn", ["plain", "blocked", "tiled"])
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["+inf scores", "-inf scores"])
def test_forward_attention_raises_when_the_scores_overflow_the_dtype(fn, sign):
    """Finite inputs whose Q K^T overflows float32: an error naming the dtype, never a
    silently wrong (or all-zero) output; with the overflowing key masked, no error."""
    big = np.full((4, 3), 1e20, dtype=np.float32)
    with pytest.raises(ValueError, match="overflowed float32"):
        QKV_FUNCTIONS[fn](big, sign * big[:3], big[:3])
    mask = np.array([True, True, False])
    keys = np.ones((3, 3), dtype=np.float32)
    keys[2] = sign * 1e20  # only this key overflows, and it is masked
    out = QKV_FUNCTIONS[fn](big, keys, keys, mask=mask)
    first = out[0] if isinstance(out, tuple) else out
    assert np.isfinite(first).all()


@pytest.mark.parametrize("fn", ["plain", "blocked", "tiled", "backward"])
def test_an_overflow_caused_by_a_small_temperature_names_the_scaled_scores(fn):
    """q . k = 4 is finite; c q . k overflows float32 only because the temperature is tiny:
    the message names the scaled scores and the temperature, not |q . k|."""
    ones = np.ones((2, 4), dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no stray RuntimeWarning before the error
        with pytest.raises(ValueError, match=r"the scores c Q K\^T overflowed float32") as err:
            QKV_FUNCTIONS[fn](ones, ones, ones, temperature=1e-39)
    assert "raise the temperature (if the factor or the scaled scores did)" in str(err.value)


@pytest.mark.parametrize("fn", ["plain", "blocked", "tiled", "backward"])
def test_an_overflow_in_float64_names_every_step_it_may_be_and_suggests_no_float64(fn):
    """st25b: the raw products of float64 inputs overflowed (1e200 squared) and were told
    "the scaled scores c Q K^T overflowed float64 ... compute in float64"; at a subnormal
    temperature the factor c itself is inf. Each message names the raw products, the
    factor and the scaled scores, and suggests float64 only for narrower work."""
    big, ones = np.full((2, 4), 1e200), np.ones((2, 4))
    for args, kwargs in (((big, big, big), {}), ((ones, ones, ones), {"temperature": 1e-310})):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (the factor's own overflow, at 1e-310)
            with pytest.raises(ValueError, match="overflowed float64") as err:
                QKV_FUNCTIONS[fn](*args, **kwargs)
        text = str(err.value)
        assert "raw product" in text and "factor c" in text and "scaled score" in text
        assert "float64 inputs" not in text and "compute in float64" not in text
    with pytest.raises(ValueError, match="pass float64 inputs"):
        QKV_FUNCTIONS[fn](*(np.full((2, 2), 1e20, np.float32),) * 3)  # q . k = 2e40


def test_float16_scores_beyond_float16s_range_are_computed_in_float32_without_error():
    """The docstring's promise: float16 inputs are judged for overflow in float32."""
    Q16 = np.array([[400.0, 0.0]], dtype=np.float16)
    K16 = np.array([[400.0, 0.0], [-400.0, 0.0]], dtype=np.float16)  # q . k = +-160,000
    O, A = attention.scaled_dot_product_attention(Q16, K16, K16)
    assert A.dtype == np.float16 and np.isfinite(A).all()


@pytest.mark.parametrize("causal, error", [("causal", ValueError), ("lower-right", ValueError),
                                           (True, ValueError), (1, ValueError)])
def test_tiled_attention_refuses_unknown_causal_alignments(causal, error):
    with pytest.raises(error, match="causal must be None, 'top-left' or 'bottom-right'"):
        attention.tiled_attention(Q, K, V, 2, causal=causal)


# Masks ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", list(QKV_FUNCTIONS))
@pytest.mark.parametrize("mask", [np.ones((4, 5), dtype=int), np.zeros((4, 5)), np.where(np.ones((4, 5)), 0.0, -np.inf)],
                         ids=["int 0/1", "float zeros", "additive float"])
def test_attention_refuses_non_boolean_masks(fn, mask):
    with pytest.raises(TypeError, match="boolean"):
        QKV_FUNCTIONS[fn](Q, K, V, mask=mask)


@pytest.mark.parametrize("fn", list(QKV_FUNCTIONS))
@pytest.mark.parametrize("shape", [(5, 4), (4, 3), (3, 4, 5)], ids=["transposed", "too few keys", "enlarges"])
def test_attention_refuses_masks_that_do_not_broadcast_to_the_scores(fn, shape):
    with pytest.raises(ValueError) as excinfo:
        QKV_FUNCTIONS[fn](Q, K, V, mask=np.ones(shape, dtype=bool))
    assert _names_both(excinfo, shape, (4, 5)), str(excinfo.value)


# Temperature and block size -------------------------------------------------------------


@pytest.mark.parametrize("fn", list(QKV_FUNCTIONS))
@pytest.mark.parametrize("tau, error", [(0.0, ValueError), (-1.0, ValueError), (np.nan, ValueError),
                                        (np.inf, ValueError), ("1", TypeError), (True, TypeError),
                                        (None, TypeError)])
def test_attention_refuses_bad_temperatures(fn, tau, error):
    with pytest.raises(error, match="temperature"):
        QKV_FUNCTIONS[fn](Q, K, V, temperature=tau)


@pytest.mark.parametrize("block_size, error", [(0, ValueError), (-2, ValueError), (2.0, TypeError),
                                               (np.nan, TypeError), (np.inf, TypeError), (True, TypeError),
                                               ("4", TypeError)])
def test_tiled_attention_refuses_bad_block_sizes(block_size, error):
    with pytest.raises(error, match="block_size"):
        attention.tiled_attention(Q, K, V, block_size)


def test_tiled_attention_accepts_numpy_integer_block_sizes():
    O, _ = attention.scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(attention.tiled_attention(Q, K, V, np.int64(3)), O, atol=1e-14)


# attention_backward's dO ----------------------------------------------------------------


@pytest.mark.parametrize("bad, error, words", [
    (np.ones((4, 3)), ValueError, "(4, 2)"),
    (np.ones((2, 4, 2)), ValueError, "(2, 4, 2)"),
    (_with(dO, (0, 0), np.nan), ValueError, "NaN"),
    (dO.astype(complex), TypeError, "complex"),
])
@pytest.mark.parametrize("backward", [attention.attention_backward, attention.blocked_attention_backward],
                         ids=["plain", "blocked"])
def test_attention_backward_refuses_bad_output_gradients(bad, error, words, backward):
    with pytest.raises(error, match=re.escape(words)):
        backward(Q, K, V, bad)


O_fwd, A_fwd = attention.scaled_dot_product_attention(Q, K, V)


@pytest.mark.parametrize("saved, error, words", [
    (dict(O=O_fwd), TypeError, "both O and A"),
    (dict(A=A_fwd), TypeError, "both O and A"),
    (dict(O=O_fwd, A=A_fwd.T), ValueError, "(4, 5)"),
    (dict(O=O_fwd[:, :1], A=A_fwd), ValueError, "(4, 2)"),
    (dict(O=O_fwd, A=_with(A_fwd, (0, 0), np.nan)), ValueError, "NaN"),
    (dict(O=O_fwd, A=A_fwd, temperature=0.0), ValueError, "temperature"),
    (dict(O=O_fwd, A=A_fwd, mask=np.ones((4, 5))), TypeError, "boolean"),
], ids=["O alone", "A alone", "A transposed", "O too narrow", "NaN in A", "bad temperature",
        "non-boolean mask"])
@pytest.mark.parametrize("backward", [attention.attention_backward, attention.blocked_attention_backward],
                         ids=["plain", "blocked"])
def test_attention_backward_refuses_bad_saved_forward_results(saved, error, words, backward):
    with pytest.raises(error, match=re.escape(words)):
        backward(Q, K, V, dO, **saved)


@pytest.mark.parametrize("flag", ["yes", 1, None])
def test_blocked_attention_refuses_a_non_boolean_need_weights(flag):
    with pytest.raises(TypeError, match="need_weights"):
        attention.blocked_attention(Q, K, V, need_weights=flag)


# Softmax family ----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["complex", "bool", "object", "string", "NaN", "+inf"])
def test_softmax_rejects_bad_arrays_but_allows_minus_inf(kind):
    bad, error, words = BAD_ARRAYS[kind]
    with pytest.raises(error, match=re.escape(words)):
        attention.softmax(bad)
    assert attention.softmax(np.array([-np.inf, 0.0]))[0] == 0.0


def test_softmax_of_an_empty_array_is_empty_and_a_bad_axis_raises():
    assert attention.softmax(np.zeros((3, 0))).shape == (3, 0)
    with pytest.raises(ValueError):  # numpy's AxisError is a ValueError
        attention.softmax(Q, axis=2)


@pytest.mark.parametrize("kind", ["complex", "bool", "object", "string"])
def test_naive_softmax_rejects_non_real_arrays(kind):
    with pytest.raises(TypeError):
        attention.naive_softmax(BAD_ARRAYS[kind][0])


def test_naive_softmax_lets_nan_and_inf_through_as_documented():
    with np.errstate(all="ignore"):
        assert np.isnan(attention.naive_softmax(np.array([np.nan, 0.0]))).all()
        assert np.isnan(attention.naive_softmax(np.array([1000.0, 0.0]))).any()
    assert attention.naive_softmax(np.array([0, 0])).dtype == np.float64  # integers promoted


PROB_FUNCTIONS = {
    "softmax_jacobian": lambda a: attention.softmax_jacobian(a),
    "softmax_vjp": lambda a: attention.softmax_vjp(a, np.ones(np.shape(a))),
    "jacobian_trace": lambda a: attention.jacobian_trace(a),
    "jacobian_frobenius_sq": lambda a: attention.jacobian_frobenius_sq(a),
}


@pytest.mark.parametrize("fn", list(PROB_FUNCTIONS))
@pytest.mark.parametrize("a, error, words", [
    (np.float64(0.5), ValueError, "at least one entry"),
    (np.zeros((2, 0)), ValueError, "at least one entry"),
    (np.array([1.5, -0.5]), ValueError, "non-negative"),
    (np.array([np.nan, 1.0]), ValueError, "NaN"),
    (np.array([0.5, 0.5], dtype=complex), TypeError, "complex"),
    (np.array([True, False]), TypeError, "boolean"),
], ids=["scalar", "empty row", "negative", "NaN", "complex", "bool"])
def test_softmax_jacobian_functions_refuse_non_probability_input(fn, a, error, words):
    with pytest.raises(error, match=re.escape(words)):
        PROB_FUNCTIONS[fn](a)


@pytest.mark.parametrize("g, error, words", [
    (np.ones(4), ValueError, "(4,)"),
    (np.ones((2, 3)), ValueError, "(2, 3)"),
    (np.array([np.inf, 0.0, 0.0]), ValueError, "inf"),
    (np.array(["a", "b", "c"]), TypeError, "dtype"),
])
def test_softmax_vjp_refuses_bad_upstream_gradients(g, error, words):
    with pytest.raises(error, match=re.escape(words)):
        attention.softmax_vjp(np.array([0.2, 0.3, 0.5]), g)


# Masks -------------------------------------------------------------------------------------


@pytest.mark.parametrize("args, error", [
    ((-1,), ValueError), ((2.0,), TypeError), ((True,), TypeError), (("3",), TypeError),
    ((3, -1), ValueError), ((3, 2.5), TypeError),
])
def test_causal_mask_refuses_bad_lengths(args, error):
    with pytest.raises(error, match="T_"):
        attention.causal_mask(*args)


def test_causal_mask_refuses_an_unknown_alignment():
    with pytest.raises(ValueError, match="bottom-right"):
        attention.causal_mask(3, 4, align="bottom")


@pytest.mark.parametrize("args, error, words", [
    ((4, 5), ValueError, "[0, 4]"), ((4, -1), ValueError, "prefix"),
    ((4, 1.0), TypeError, "prefix"), ((4, True), TypeError, "prefix"),
    ((-1, 0), ValueError, "T must"), ((3.0, 1), TypeError, "T must"),
])
def test_prefix_mask_refuses_bad_lengths(args, error, words):
    with pytest.raises(error, match=re.escape(words)):
        attention.prefix_mask(*args)


def test_causal_mask_of_length_zero_is_empty():
    assert attention.causal_mask(0).shape == (0, 0)
    assert attention.causal_mask(np.int64(2), 0).shape == (2, 0)


@pytest.mark.parametrize("lengths, T, error, words", [
    ([3, 5], 4, ValueError, "[0, 4]"),
    ([-1, 2], 4, ValueError, "[0, 4]"),
    ([1.0, 2.0], 4, TypeError, "integers"),
    ([[1, 2]], 4, TypeError, "1-D"),
    ([True, False], 4, TypeError, "integers"),
    ([1, 2], -1, ValueError, "T must"),
    ([1, 2], 4.0, TypeError, "T must"),
])
def test_padding_mask_refuses_bad_lengths(lengths, T, error, words):
    with pytest.raises(error, match=re.escape(words)):
        attention.padding_mask(lengths, T)


def test_padding_mask_with_T_zero_and_no_sequences():
    assert attention.padding_mask([0, 0], 0).shape == (2, 1, 0)
    assert attention.padding_mask(np.array([], dtype=int), 3).shape == (0, 1, 3)


# Kernel regression and additive scores (page "Why the dot product") ---------------------

KERNEL_FUNCTIONS = {
    "gaussian_kernel_weights": lambda Q, K: attention.gaussian_kernel_weights(Q, K, 1.0),
    "additive_scores": lambda Q, K: attention.additive_scores(Q, K, np.ones((3, 2)), np.ones((3, 2)),
                                                              np.ones(2)),
}


@pytest.mark.parametrize("fn", list(KERNEL_FUNCTIONS))
@pytest.mark.parametrize("kind", list(BAD_ARRAYS))
@pytest.mark.parametrize("which", ["Q", "K"])
def test_kernel_functions_reject_bad_arrays(fn, kind, which):
    bad, error, words = BAD_ARRAYS[kind]
    args = {"Q": Q, "K": K}
    args[which] = bad
    with pytest.raises(error, match=re.escape(words)):
        KERNEL_FUNCTIONS[fn](args["Q"], args["K"])


@pytest.mark.parametrize("fn", list(KERNEL_FUNCTIONS))
def test_kernel_functions_refuse_vectors_and_unbroadcastable_batches(fn):
    with pytest.raises(ValueError, match=r"\(3,\)"):
        KERNEL_FUNCTIONS[fn](Q[0], K)
    with pytest.raises(ValueError) as excinfo:
        KERNEL_FUNCTIONS[fn](np.ones((2, 4, 3)), np.ones((3, 5, 3)))
    assert _names_both(excinfo, (2, 4, 3), (3, 5, 3)), str(excinfo.value)


def test_gaussian_kernel_weights_refuse_mismatched_widths_and_bad_bandwidths():
    with pytest.raises(ValueError) as excinfo:
        attention.gaussian_kernel_weights(Q, np.ones((5, 2)))
    assert _names_both(excinfo, (4, 3), (5, 2))
    for bandwidth, error in [(0.0, ValueError), (-1.0, ValueError), (np.nan, ValueError),
                             (np.inf, ValueError), ("1", TypeError), (True, TypeError)]:
        with pytest.raises(error, match="bandwidth"):
            attention.gaussian_kernel_weights(Q, K, bandwidth)


def test_gaussian_kernel_weights_with_no_keys_are_empty():
    assert attention.gaussian_kernel_weights(Q, K[:0]).shape == (4, 0)


@pytest.mark.parametrize("W_q, W_k, w, words", [
    (np.ones((3, 2)), np.ones((3, 2)), np.ones((2, 1)), "w must be a vector"),
    (np.ones((2, 2)), np.ones((3, 2)), np.ones(2), "W_q must have shape (3, 2)"),
    (np.ones((3, 2)), np.ones((3, 4)), np.ones(2), "W_k must have shape (3, 2)"),
    (np.ones((3, 2)), np.ones((3, 2)), np.array([1.0, np.nan]), "w contains NaN"),
])
def test_additive_scores_refuse_projections_of_the_wrong_shape(W_q, W_k, w, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        attention.additive_scores(Q, K, W_q, W_k, w)


def test_additive_scores_refuse_non_real_projections():
    with pytest.raises(TypeError, match="complex"):
        attention.additive_scores(Q, K, np.ones((3, 2), dtype=complex), np.ones((3, 2)), np.ones(2))


# Gradient checking ----------------------------------------------------------------------


@pytest.mark.parametrize("f, error, words", [
    (lambda X: X * 2.0, ValueError, "scalar"),
    (lambda X: np.sum(X) + 0j, TypeError, "complex"),
    (lambda X: np.nan, ValueError, "nan"),
    (lambda X: np.inf, ValueError, "inf"),
], ids=["array", "complex", "NaN", "inf"])
def test_numerical_gradient_refuses_a_function_that_is_not_a_finite_real_scalar(f, error, words):
    with pytest.raises(error, match=words):
        attention.numerical_gradient(f, Q)


@pytest.mark.parametrize("kwargs, error", [
    (dict(X=_with(Q, (0, 0), np.nan)), ValueError), (dict(X=Q.astype(str)), TypeError),
    (dict(X=Q, eps=0.0), ValueError), (dict(X=Q, eps=-1e-6), ValueError), (dict(X=Q, eps=np.nan), ValueError),
])
def test_numerical_gradient_refuses_bad_points_and_steps(kwargs, error):
    with pytest.raises(error):
        attention.numerical_gradient(lambda X: float(np.sum(X)), **kwargs)


def test_numerical_gradient_of_integer_input_is_float64():
    g = attention.numerical_gradient(lambda X: float(np.sum(X**2)), np.array([1, 2]))
    assert g.dtype == np.float64 and np.allclose(g, [2.0, 4.0])


@pytest.mark.parametrize("a, b, error, words", [
    (np.ones(3), np.ones(4), ValueError, "(3,) and (4,)"),
    (np.array([np.nan]), np.ones(1), ValueError, "NaN"),
    (np.ones(1), np.array([np.inf]), ValueError, "inf"),
    (np.ones(2, dtype=complex), np.ones(2), TypeError, "complex"),
])
def test_relative_error_refuses_mismatched_or_non_finite_arrays(a, b, error, words):
    with pytest.raises(error, match=re.escape(words)):
        attention.relative_error(a, b)


# Scale and statistics -------------------------------------------------------------------


@pytest.mark.parametrize("args, error", [
    ((0,), ValueError), ((-4,), ValueError), ((4.0,), TypeError), ((True,), TypeError),
    ((4, 0.0), ValueError), ((4, np.nan), ValueError), ((4, -1.0), ValueError),
])
def test_score_scale_refuses_bad_widths_and_temperatures(args, error):
    with pytest.raises(error):
        attention.score_scale(*args)


BAD_D_K = [(0, ValueError), (-3, ValueError), (2.0, TypeError), (True, TypeError), ("8", TypeError)]
BAD_RHO = [(1.5, ValueError), (-1.01, ValueError), (np.nan, ValueError), (np.inf, ValueError),
           ("0.5", TypeError), (True, TypeError)]


@pytest.mark.parametrize("d_k, error", BAD_D_K)
def test_statistics_refuse_bad_d_k(d_k, error):
    for call in (lambda: attention.scaled_score_moments(d_k),
                 lambda: attention.sample_scores(d_k, 10),
                 lambda: attention.attention_rows(d_k),
                 lambda: attention.saturation_stats(d_k),
                 lambda: attention.row_score_draws(d_k),
                 lambda: attention.query_gradient_rms(np.full(4, 0.25), np.ones(4), 1.0, d_k)):
        with pytest.raises(error, match="d_k"):
            call()


@pytest.mark.parametrize("rho, error", BAD_RHO)
def test_statistics_refuse_bad_rho(rho, error):
    for call in (lambda: attention.scaled_score_moments(16, rho), lambda: attention.sample_scores(16, 10, rho=rho)):
        with pytest.raises(error, match="rho"):
            call()


def test_statistics_accept_the_boundary_correlations():
    assert attention.scaled_score_moments(4, 1.0) == (2.0, 2.0)
    assert attention.sample_scores(4, 5, rho=-1.0).shape == (5,)


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(n_keys=0), ValueError, "n_keys"), (dict(n_queries=0), ValueError, "n_queries"),
    (dict(n_keys=2.5), TypeError, "n_keys"), (dict(temperature=0.0), ValueError, "temperature"),
])
def test_attention_rows_and_saturation_stats_refuse_bad_sizes(kwargs, error, words):
    for fn in (attention.attention_rows, attention.saturation_stats):
        with pytest.raises(error, match=words):
            fn(8, **kwargs)
    if "temperature" not in kwargs:
        with pytest.raises(error, match=words):
            attention.row_score_draws(8, **kwargs)


@pytest.mark.parametrize("A, t, c, error, words", [
    (np.array([0.5, -0.5]), np.ones(2), 1.0, ValueError, "non-negative"),
    (np.zeros((2, 0)), np.ones(0), 1.0, ValueError, "at least one entry"),
    (np.array([0.5, np.nan]), np.ones(2), 1.0, ValueError, "NaN"),
    (np.full(4, 0.25), np.ones(3), 1.0, ValueError, "does not broadcast"),
    (np.full(4, 0.25), np.array([1.0, np.inf, 0.0, 0.0]), 1.0, ValueError, "inf"),
    (np.full(4, 0.25), np.ones(4), np.nan, ValueError, "NaN"),
    (np.full(4, 0.25).astype(complex), np.ones(4), 1.0, TypeError, "complex"),
], ids=["negative", "empty", "NaN weight", "shapes", "inf t", "NaN c", "complex"])
def test_query_gradient_rms_refuses_bad_weights_directions_and_scales(A, t, c, error, words):
    with pytest.raises(error, match=re.escape(words)):
        attention.query_gradient_rms(A, t, c, 16)


@pytest.mark.parametrize("n, error", [(0, ValueError), (-5, ValueError), (10.0, TypeError)])
def test_sample_scores_refuses_bad_sample_counts(n, error):
    with pytest.raises(error, match="n must"):
        attention.sample_scores(8, n)


# attention.scores (page "The variance argument") ---------------------------------------


@pytest.mark.parametrize("d_k, error", BAD_D_K)
def test_moment_functions_refuse_bad_d_k(d_k, error):
    for call in (lambda: attention.score_moments(d_k),
                 lambda: attention.score_excess_kurtosis(d_k),
                 lambda: attention.sample_score_parts(d_k, 10)):
        with pytest.raises(error, match="d_k"):
            call()


@pytest.mark.parametrize("rho, error", BAD_RHO)
def test_moment_functions_refuse_bad_rho(rho, error):
    for call in (lambda: attention.score_moments(16, rho), lambda: attention.score_excess_kurtosis(16, rho),
                 lambda: attention.scores_from_parts(np.ones(3), np.ones(3), rho)):
        with pytest.raises(error, match="rho"):
            call()


@pytest.mark.parametrize("kurtosis, error", [(0.5, ValueError), (np.nan, ValueError), (np.inf, ValueError),
                                             ("3", TypeError), (True, TypeError)])
def test_score_moments_refuses_a_fourth_moment_below_one(kurtosis, error):
    with pytest.raises(error, match="kurtosis"):
        attention.score_moments(16, 0.5, kurtosis)


def test_sampling_refuses_unknown_entry_distributions_and_bad_counts():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="entries must be one of"):
        attention.sample_entries(rng, 3, "cauchy")
    with pytest.raises(ValueError, match="entries must be one of"):
        attention.sample_score_parts(4, 10, entries="gaussian")
    for n, error in ((0, ValueError), (10.0, TypeError)):
        with pytest.raises(error, match="n must"):
            attention.sample_score_parts(4, n)


@pytest.mark.parametrize("x, words", [([1.0], "at least two"), ([1.0, np.nan], "NaN"),
                                      ([2.0, 2.0, 2.0], "constant")])
def test_sample_statistics_refuses_samples_without_a_kurtosis(x, words):
    with pytest.raises(ValueError, match=words):
        attention.sample_statistics(x)


def test_saturation_stats_record_needs_every_field():
    with pytest.raises(TypeError):
        attention.SaturationStats(8, 32, True)  # the measured fields are missing


# attention.torch ----------------------------------------------------------------------------

tq, tk, tv = (torch.from_numpy(x) for x in (Q, K, V))
TORCH_BAD = {
    "numpy array": (Q, TypeError, "torch.Tensor"),
    "int tensor": (torch.ones(4, 3, dtype=torch.int64), TypeError, "floating-point"),
    "bool tensor": (torch.ones(4, 3, dtype=torch.bool), TypeError, "floating-point"),
    "complex tensor": (tq.to(torch.complex128), TypeError, "floating-point"),
    "NaN": (torch.from_numpy(_with(Q, (1, 1), np.nan)), ValueError, "NaN"),
    "inf": (torch.from_numpy(_with(Q, (1, 1), -np.inf)), ValueError, "inf"),
}


@pytest.mark.parametrize("kind", list(TORCH_BAD))
@pytest.mark.parametrize("which", ["q", "k", "v"])
def test_torch_attention_rejects_bad_tensors(kind, which):
    bad, error, words = TORCH_BAD[kind]
    args = {"q": tq, "k": tk[:4], "v": tv[:4].repeat(1, 2)[:, :3]}
    args[which] = bad
    with pytest.raises(error, match=re.escape(words)):
        at.scaled_dot_product_attention(args["q"], args["k"], args["v"])


@pytest.mark.parametrize("q, k, v, shape_a, shape_b", [
    (tq, tk[:, :2], tv, (4, 3), (5, 2)),
    (tq, tk, tv[:4], (5, 3), (4, 2)),
    (tq.expand(2, 4, 3), tk.expand(3, 5, 3), tv, (2, 4, 3), (3, 5, 3)),
], ids=["mismatched E", "mismatched S", "leading dims"])
def test_torch_attention_shape_errors_name_both_shapes(q, k, v, shape_a, shape_b):
    with pytest.raises(ValueError) as excinfo:
        at.scaled_dot_product_attention(q, k, v)
    assert _names_both(excinfo, shape_a, shape_b), str(excinfo.value)


def test_torch_attention_rejects_vectors_and_zero_width():
    with pytest.raises(ValueError, match=r"\(3,\)"):
        at.scaled_dot_product_attention(tq[0], tk, tv)
    with pytest.raises(ValueError, match="at least 1"):
        at.scaled_dot_product_attention(torch.zeros(4, 0), torch.zeros(5, 0), torch.zeros(5, 2))


@pytest.mark.parametrize("mask, error, words", [
    (torch.ones(5, 4, dtype=torch.bool), ValueError, "(5, 4)"),
    (torch.ones(3, 4, 5, dtype=torch.bool), ValueError, "(3, 4, 5)"),
    (torch.ones(4, 5, dtype=torch.int64), TypeError, "floating-point"),
    (torch.full((4, 5), float("nan"), dtype=torch.float64), ValueError, "NaN"),
    (torch.full((4, 5), float("inf"), dtype=torch.float64), ValueError, "+inf"),
    (np.ones((4, 5), dtype=bool), TypeError, "torch.Tensor"),
], ids=["transposed", "enlarges", "int", "NaN bias", "+inf bias", "numpy"])
def test_torch_attention_rejects_bad_masks(mask, error, words):
    with pytest.raises(error, match=re.escape(words)):
        at.scaled_dot_product_attention(tq, tk, tv, attn_mask=mask)


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(scale=0.0), ValueError, "scale"), (dict(scale=-1.0), ValueError, "scale"),
    (dict(scale=float("nan")), ValueError, "scale"), (dict(scale=float("inf")), ValueError, "scale"),
    (dict(scale="1"), TypeError, "scale"),
    (dict(dropout_p=1.0), ValueError, "dropout_p"), (dict(dropout_p=-0.1), ValueError, "dropout_p"),
    (dict(dropout_p=float("nan")), ValueError, "dropout_p"),
    (dict(is_causal=True, attn_mask=torch.ones(4, 5, dtype=torch.bool)), ValueError, "either"),
])
def test_torch_attention_rejects_bad_options(kwargs, error, words):
    with pytest.raises(error, match=words):
        at.scaled_dot_product_attention(tq, tk, tv, **kwargs)


def test_torch_attention_with_no_queries_or_no_keys_matches_the_builtin():
    empty_q = at.scaled_dot_product_attention(tq[:0], tk, tv)
    assert empty_q.shape == (0, 2)
    no_keys = at.scaled_dot_product_attention(tq, tk[:0], tv[:0])
    builtin = torch.nn.functional.scaled_dot_product_attention(tq, tk[:0], tv[:0])
    assert torch.equal(no_keys, torch.zeros(4, 2, dtype=torch.float64))
    assert torch.equal(no_keys, builtin)


@pytest.mark.parametrize("S, error, words", [
    (torch.ones(3, dtype=torch.int64), TypeError, "floating-point"),
    (torch.tensor([0.0, float("nan")]), ValueError, "NaN"),
    (torch.tensor([0.0, float("inf")]), ValueError, "+inf"),
    (np.zeros(3), TypeError, "torch.Tensor"),
])
def test_safe_softmax_rejects_bad_scores(S, error, words):
    with pytest.raises(error, match=re.escape(words)):
        at.safe_softmax(S)


def test_safe_softmax_of_an_empty_row_is_empty():
    assert at.safe_softmax(torch.zeros(3, 0)).shape == (3, 0)


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(d_model=0), ValueError, "d_model"), (dict(d_model=2.5), TypeError, "d_model"),
    (dict(d_model=8, d_k=0), ValueError, "d_k"), (dict(d_model=8, d_k=True), TypeError, "d_k"),
    (dict(d_model=8, dropout=1.0), ValueError, "dropout"), (dict(d_model=8, dropout=-0.5), ValueError, "dropout"),
])
def test_self_attention_refuses_bad_sizes_and_dropout(kwargs, error, words):
    with pytest.raises(error, match=words):
        at.SelfAttention(**kwargs)


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("x, error, words", [
    (torch.ones(2, 5, 7), ValueError, "d_model = 8"),
    (torch.ones(8), ValueError, "d_model = 8"),
    (torch.ones(2, 5, 8, dtype=torch.int64), TypeError, "floating-point"),
    (torch.full((2, 5, 8), float("nan")), ValueError, "NaN"),
    (np.ones((2, 5, 8), dtype=np.float32), TypeError, "torch.Tensor"),
], ids=["wrong width", "vector", "int", "NaN", "numpy"])
def test_self_attention_forward_refuses_bad_input(fused, x, error, words):
    with pytest.raises(error, match=re.escape(words)):
        at.SelfAttention(8, fused=fused)(x)


# attention.training ----------------------------------------------------------------------

_TINY = training.RetrievalTask(d_model=4, T_k=3, d_v=2, batch=2, steps=1)


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(d_k=0), ValueError, "d_k"),
    (dict(d_k=2.0), TypeError, "d_k"),
    (dict(d_k=True), TypeError, "d_k"),
    (dict(lrs=[]), ValueError, "at least one run"),
    (dict(lrs=0.1), TypeError, "sequence"),
    (dict(lrs="0.1"), TypeError, "sequence"),
    (dict(lrs=[0.1, -1.0], cs=[1.0, 1.0]), ValueError, "lrs[1]"),
    (dict(lrs=[float("nan")]), ValueError, "lrs[0]"),
    (dict(lrs=[0.1], cs=[float("inf")]), ValueError, "cs[0]"),
    (dict(lrs=[0.1, 0.2], cs=[1.0]), ValueError, "one entry per run"),
    (dict(cs=None), ValueError, "needs its scale cs"),
    (dict(score="additive"), ValueError, "pass cs=None"),
    (dict(score="mlp"), ValueError, "score"),
    (dict(optimizer="rmsprop"), ValueError, "optimizer"),
    (dict(seed=-1), ValueError, "seed"),
    (dict(dtype=torch.float16), TypeError, "dtype"),
    (dict(threads=0), ValueError, "threads"),
    (dict(task=(4, 3, 2, 2, 1)), TypeError, "RetrievalTask"),
    (dict(task=_TINY._replace(T_k=1)), ValueError, "T_k"),
    (dict(task=_TINY._replace(batch=0)), ValueError, "task.batch"),
    (dict(task=_TINY._replace(steps=1.5)), TypeError, "task.steps"),
], ids=lambda v: None)
def test_train_retrieval_heads_refuses_bad_arguments(kwargs, error, words):
    args = dict(d_k=2, lrs=[0.1], cs=[1.0], task=_TINY) | kwargs
    with pytest.raises(error, match=re.escape(words)):
        training.train_retrieval_heads(**args)


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(lr=0.0), ValueError, "lr"),
    (dict(lr=float("inf")), ValueError, "lr"),
    (dict(lr="0.1"), TypeError, "lr"),
    (dict(c=-1.0), ValueError, "c must be positive"),
    (dict(c=None), ValueError, "needs its scale c"),
    (dict(score="additive"), ValueError, "pass c=None"),
    (dict(optimizer="sgd-momentum"), ValueError, "optimizer"),
    (dict(d_k=-3), ValueError, "d_k"),
    (dict(task=_TINY._replace(d_model=0)), ValueError, "task.d_model"),
], ids=lambda v: None)
def test_train_retrieval_head_refuses_bad_arguments(kwargs, error, words):
    args = dict(d_k=2, lr=0.1, c=1.0, task=_TINY) | kwargs
    with pytest.raises(error, match=re.escape(words)):
        training.train_retrieval_head(**args)


@pytest.mark.parametrize("seed, error", [(-1, ValueError), (1.5, TypeError), (True, TypeError)])
def test_additive_sweep_point_refuses_a_bad_seed(seed, error):
    from attention import sweep

    with pytest.raises(error, match="seed"):
        sweep.additive_point(seed)


def test_training_accepts_numpy_learning_rates_and_a_one_step_task():
    out = training.train_retrieval_heads(2, np.array([0.1, 0.2]), np.array([1.0, 1.0]), task=_TINY)
    assert isinstance(out, training.TrainedHeads) and out.losses.shape == (2, 1)
    assert training.train_retrieval_head(2, 0.1, 1.0, task=_TINY).shape == (1,)


_P = {"W_Q": torch.ones(4, 2), "W_K": torch.ones(4, 2)}
_X, _J = torch.ones(2, 3, 4), torch.tensor([0, 2])


@pytest.mark.parametrize("args, kwargs, error, words", [
    ((_P, _X.numpy(), _J), {}, TypeError, "X must be a torch.Tensor"),
    ((_P, _X[0], _J), {}, ValueError, "(B, T_k, d_model)"),
    ((_P, torch.full((2, 3, 4), float("nan")), _J), {}, ValueError, "X contains NaN"),
    ((_P, _X, _J[:1]), {}, ValueError, "target must be a torch tensor of shape (2,)"),
    ((_P, _X, torch.tensor([0, 3])), {}, ValueError, "index the T_k = 3 entries"),
    ((_P, _X, torch.tensor([0.0, 1.0])), {}, TypeError, "target must hold integer indices"),
    ((_P, torch.ones(2, 3, 5), _J), {}, ValueError, "the 4 rows of W_Q, got (2, 3, 5)"),
    ((_P, _X, _J), {"c": None}, ValueError, "needs its scale c"),
    ((_P, _X, _J), {"c": 0.0}, ValueError, "c must be positive"),
    ((_P, _X, _J), {"score": "additive", "c": None}, TypeError, "keys ('W_Q', 'W_K', 'w', 'b')"),
    (({"W_Q": torch.ones(4, 2)}, _X, _J), {}, TypeError, "keys ('W_Q', 'W_K')"),
    (({"W_Q": torch.ones(4, 2), "W_K": np.ones((4, 2))}, _X, _J), {}, TypeError,
     "params['W_K'] must be a torch.Tensor"),
], ids=lambda v: None)
def test_retrieval_attention_refuses_bad_input(args, kwargs, error, words):
    kwargs = {"c": 1.0} | kwargs
    with pytest.raises(error, match=re.escape(words)):
        training.retrieval_attention(*args, **kwargs)


def test_retrieval_task_and_trained_heads_records_need_every_field():
    assert training.RetrievalTask() == training.RetrievalTask(32, 16, 16, 32, 200)
    with pytest.raises(TypeError):
        training.TrainedHeads(np.zeros((1, 1)))


# attention.checkers ----------------------------------------------------------------------


def _checker_names():
    return sorted(n for n, f in inspect.getmembers(checkers, inspect.isfunction)
                  if n.startswith("check_") and f.__module__.startswith(checkers.__name__ + "."))


CHECKER_CALLS = {
    "check_scaled_dot_product_attention": lambda x: checkers.check_scaled_dot_product_attention(x, verbose=False),
    "check_attention_with_temperature": lambda x: checkers.check_attention_with_temperature(x, verbose=False),
    "check_attention_backward": lambda x: checkers.check_attention_backward(x, verbose=False),
    "check_scaled_score_moments": lambda x: checkers.check_scaled_score_moments(x, verbose=False),
    "check_softmax_jacobian": lambda x: checkers.check_softmax_jacobian(x, x, verbose=False),
}


@pytest.mark.parametrize("name", sorted(CHECKER_CALLS))
@pytest.mark.parametrize("attempt", [None, lambda *a, **k: "nonsense"], ids=["None", "returns a string"])
def test_checkers_report_failure_instead_of_raising_for_unusable_attempts(name, attempt):
    assert CHECKER_CALLS[name](attempt) is False


# attention.tiled_attention_backward (attention.backward) and at.peak_allocated ---------------------------

from attention.backward import tiled_attention_backward  # noqa: E402

L_fwd = np.log(np.exp(Q @ K.T / np.sqrt(3)).sum(axis=-1))


@pytest.mark.parametrize("kind", list(BAD_ARRAYS))
@pytest.mark.parametrize("which", ["Q", "K", "V", "dO"])
def test_tiled_attention_backward_rejects_bad_arrays(kind, which):
    bad, error, words = BAD_ARRAYS[kind]
    args = {"Q": Q, "K": K[:4], "V": V[:4, :3], "dO": np.ones((4, 3))}
    args[which] = bad
    with pytest.raises(error, match=re.escape(words)):
        tiled_attention_backward(args["Q"], args["K"], args["V"], args["dO"], 2)


@pytest.mark.parametrize("kwargs, error, words", [
    (dict(block_size=0), ValueError, "block_size"),
    (dict(block_size=1.5), TypeError, "block_size"),
    (dict(block_size=2, O=O_fwd), TypeError, "both O and lse"),
    (dict(block_size=2, lse=L_fwd), TypeError, "both O and lse"),
    (dict(block_size=2, O=O_fwd, lse=L_fwd[:3]), ValueError, "(4,)"),
    (dict(block_size=2, O=O_fwd[:, :1], lse=L_fwd), ValueError, "(4, 2)"),
    (dict(block_size=2, O=O_fwd, lse=_with(L_fwd, (0,), np.inf)), ValueError, "+inf"),
    (dict(block_size=2, mask=np.ones((4, 5))), TypeError, "boolean"),
    (dict(block_size=2, mask=np.ones((3, 5), dtype=bool)), ValueError, "(3, 5)"),
    (dict(block_size=2, temperature=-1.0), ValueError, "temperature"),
], ids=["zero block", "fractional block", "O alone", "lse alone", "lse too short", "O too narrow",
        "+inf in lse", "non-boolean mask", "mask of the wrong shape", "bad temperature"])
def test_tiled_attention_backward_refuses_bad_options_and_saved_results(kwargs, error, words):
    with pytest.raises(error, match=re.escape(words)):
        tiled_attention_backward(Q, K, V, dO, **kwargs)


def test_tiled_attention_backward_refuses_bad_output_gradients_and_overflow():
    with pytest.raises(ValueError, match=re.escape("(4, 2)")):
        tiled_attention_backward(Q, K, V, np.ones((4, 3)), 2)
    huge = np.full((2, 2), 1e30, dtype=np.float32)
    with pytest.raises(ValueError, match="overflowed"):
        tiled_attention_backward(huge, huge, huge, np.ones((2, 2), np.float32), 1)


@pytest.mark.parametrize("backward", ["plain", "tiled", "blocked"])
def test_float16_gradients_that_overflow_raise_instead_of_returning_inf(backward):
    # one key, so dV = sum of dO over three queries = 180000 > 65504: +-inf came back before
    rng = np.random.default_rng(0)
    Q16, K16, V16 = (rng.standard_normal(s).astype(np.float16) for s in ((3, 4), (1, 4), (1, 2)))
    dO16 = np.full((3, 2), 60000.0, dtype=np.float16)
    from attention.blocked import blocked_attention_backward
    run = {"plain": lambda dO: attention.attention_backward(Q16, K16, V16, dO),
           "tiled": lambda dO: tiled_attention_backward(Q16, K16, V16, dO, 2),
           "blocked": lambda dO: blocked_attention_backward(Q16, K16, V16, dO)}[backward]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning either: a clear error
        with pytest.raises(ValueError, match="gradient dV overflowed float16"):
            run(dO16)
        grads = run(dO16 / 1000)  # small enough: finite float16 gradients
    assert all(g.dtype == np.float16 and np.isfinite(g).all() for g in grads)


def test_a_visible_minus_inf_score_in_a_row_with_finite_keys_is_accepted_like_forward():
    # key 0's score overflows to -inf (q . k = -1e40 in float32); keys 1, 2 are finite
    Q3 = np.array([[1e20, 1.0]], np.float32)
    K3 = np.array([[-1e20, 0.0], [0.0, 1.0], [0.0, 2.0]], np.float32)
    V3 = np.arange(6, dtype=np.float32).reshape(3, 2)
    dO3 = np.ones((1, 2), np.float32)
    O, A = attention.scaled_dot_product_attention(Q3, K3, V3)
    assert A[0, 0] == 0 and np.isfinite(O).all()
    want = attention.attention_backward(Q3, K3, V3, dO3)
    for block in (1, 2, 3):
        got = tiled_attention_backward(Q3, K3, V3, dO3, block)
        assert all(np.allclose(a, b) for a, b in zip(got, want)), block
    # every visible score -inf in a row is still the overflow forward reports
    with pytest.raises(ValueError, match="overflowed"):
        tiled_attention_backward(Q3, K3[:1], V3[:1], dO3, 1)
    with pytest.raises(ValueError, match="overflowed"):
        attention.scaled_dot_product_attention(Q3, K3[:1], V3[:1])


@pytest.mark.parametrize("fn", [None, 3, "run"])
def test_peak_allocated_refuses_what_it_cannot_call(fn):
    with pytest.raises(TypeError, match="callable"):
        at.peak_allocated(fn)


# attention.measure, attention.plotting, attention.sweep, attention.widgets: what the pages call --


@pytest.mark.parametrize("call, error, words", [
    (lambda: measure.random_qkv(0), ValueError, "T must be a positive integer"),
    (lambda: measure.random_qkv(8, d=2.0), TypeError, "d must be a positive integer"),
    (lambda: measure.random_qkv(8, heads=True), TypeError, "heads"),
    (lambda: measure.random_qkv(8, seed=-1), ValueError, "seed"),
    (lambda: measure.random_qkv(8, dtype=np.int32), TypeError, "float dtype"),
    (lambda: measure.peak_memory(None), TypeError, "callable"),
    (lambda: measure.peak_memory(lambda: 0, method="vmrss"), ValueError, "method must be one of"),
    (lambda: measure.median_time(3), TypeError, "callable"),
    (lambda: measure.median_time(lambda: 0, repeats=0), ValueError, "repeats"),
    (lambda: measure.median_time(lambda: 0, warmup=-1), ValueError, "warmup"),
], ids=["T 0", "float d", "bool heads", "negative seed", "int dtype", "peak of None",
        "unknown method", "time of 3", "no repeats", "negative warmup"])
def test_measure_refuses_bad_sizes_functions_and_options(call, error, words):
    with pytest.raises(error, match=re.escape(words)):
        call()


@pytest.mark.parametrize("n, error", [(0, ValueError), (1.5, TypeError), (True, TypeError)])
def test_measure_threads_refuses_a_bad_thread_count_and_none_changes_nothing(n, error):
    with pytest.raises(error, match="n must be a positive integer"):
        with measure.threads(n):
            pass
    before = torch.get_num_threads()
    with measure.threads(None):
        assert torch.get_num_threads() == before


def test_use_book_style_takes_no_argument_and_sets_the_books_style():
    import matplotlib as mpl

    with pytest.raises(TypeError):
        plotting.use_book_style("dark")
    with mpl.rc_context():
        plotting.use_book_style()
        assert mpl.rcParams["svg.hashsalt"] == plotting.STYLE["svg.hashsalt"]


def test_sweep_readers_refuse_a_missing_file_and_a_scale_per_run_mismatch(tmp_path):
    from attention import sweep

    with pytest.raises(FileNotFoundError):
        sweep.load_sweep(tmp_path / "no-such-sweep.json")
    task = training.RetrievalTask(d_model=4, T_k=3, d_v=2, batch=2, steps=1)
    params = {"W_Q": torch.ones(2, 4, 2), "W_K": torch.ones(2, 4, 2)}  # two stacked runs
    with pytest.raises(ValueError, match="one scale per stacked run"):
        sweep.held_out_scores(params, [1.0], task, n=4)
    with pytest.raises(ValueError, match="n must be a positive integer"):
        sweep.held_out_scores(params, [1.0, 1.0], task, n=0)


@pytest.mark.parametrize("make, trait, value", [
    (lambda: widgets.SaturationExplorer(), "T_k", 5),
    (lambda: widgets.SaturationExplorer(), "temperature", float("nan")),
    (lambda: widgets.TemperatureExplorer(), "temperature", -1.0),
    (lambda: widgets.WidthExplorer(), "rho", 2.0),
    (lambda: widgets.WidthExplorer(), "d_k", 3),
], ids=["saturation T_k", "saturation NaN temperature", "temperature below range",
        "width rho", "width d_k off the grid"])
def test_explorers_refuse_values_off_their_grid(make, trait, value):
    import traitlets

    explorer = make()
    with pytest.raises(traitlets.TraitError, match=trait):
        setattr(explorer, trait, value)


# Meta-test ---------------------------------------------------------------------------------


CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
PAGES = Path(__file__).resolve().parents[2] / "chapters"


def _cells(text: str, shown_only: bool):
    """The Python of a page's code cells (magics dropped), or only of those a reader sees."""
    for match in CODE_CELL.finditer(text):
        lines = match.group(1).splitlines()
        options = []
        while lines and lines[0].startswith(":"):
            options.append(lines.pop(0))
        if shown_only and any("remove-cell" in line for line in options):
            continue
        yield "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))


def _aliases(tree) -> dict:
    """Every name an ``import attention...`` or ``from attention... import`` binds, anywhere."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "attention":
                    module = importlib.import_module(alias.name)
                    out[alias.asname or "attention"] = module if alias.asname else attention
        elif (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
              and node.module.split(".")[0] == "attention"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                obj = getattr(module, alias.name, None)
                if obj is None:
                    obj = importlib.import_module(f"{node.module}.{alias.name}")
                out[alias.asname or alias.name] = obj
    return out


def _referenced(tree, aliases: dict) -> dict:
    """id -> object of everything the code reaches through those names (``attention.x.y``):
    code only, so a name in a comment or a string does not count."""
    found = {}
    for node in ast.walk(tree):
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in aliases:
            obj = aliases[node.id]
            found[id(obj)] = obj
            for part in reversed(parts):
                obj = getattr(obj, part, None)
                if obj is None:
                    break
                found[id(obj)] = obj
    return found


def _parse(source: str):
    with warnings.catch_warnings():  # a page's invalid escape in a plain string
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(source)


def _shown_on_pages() -> dict:
    """qualified name -> the functions and classes of the library that the pages' shown
    cells use (through the imports of any of the page's cells)."""
    shown = {}
    for page in sorted(PAGES.glob("*.md")):
        text = page.read_text()
        aliases = {}
        for source in _cells(text, shown_only=False):
            aliases.update(_aliases(_parse(source)))
        for source in _cells(text, shown_only=True):
            for obj in _referenced(_parse(source), aliases).values():
                if ((inspect.isfunction(obj) or inspect.isclass(obj))
                        and getattr(obj, "__module__", "").startswith("attention")):
                    shown[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return shown


def _public_names() -> dict:
    """qualified name -> object: every name of the public lists, and every function or
    class a page shows a reader."""
    names = {f"attention.{n}": getattr(attention, n, None) for n in attention.__all__}
    names |= {f"at.{n}": getattr(at, n) for n in at.__all__}
    names |= {f"training.{n}": getattr(training, n) for n in training.__all__}
    names |= {f"checkers.{n}": getattr(checkers, n) for n in _checker_names()}
    return names | _shown_on_pages()


def _tested(source: str) -> dict:
    """What the tests before the meta-test reach in code (not in comments or strings)."""
    tree = ast.parse(source[: source.index("# Meta-test")])
    return _referenced(tree, _aliases(tree))


def _missing(source: str) -> list:
    tested = _tested(source)
    return sorted(q for q, obj in _public_names().items() if obj is None or id(obj) not in tested)


def test_every_public_helper_has_a_bad_input_test_in_this_file():
    missing = _missing(Path(__file__).read_text())
    assert not missing, f"public names without a bad-input test in {Path(__file__).name}: {missing}"
    assert set(CHECKER_CALLS) == set(_checker_names())


def test_the_meta_test_covers_what_the_pages_show():
    shown = _shown_on_pages()
    for name in ("attention.scores.saturation_stats", "attention.measure.random_qkv",
                 "attention.sweep.load_sweep", "attention.widgets.width.WidthExplorer",
                 "attention.blocked.blocked_attention", "attention.torch.peak_allocated"):
        assert name in shown, name


def test_the_meta_test_would_notice_a_new_public_name(monkeypatch):
    monkeypatch.setattr(attention, "__all__", [*attention.__all__, "brand_new_helper"])
    monkeypatch.setattr(attention, "brand_new_helper", lambda: None, raising=False)
    with pytest.raises(AssertionError, match="brand_new_helper"):
        test_every_public_helper_has_a_bad_input_test_in_this_file()


def test_a_name_in_a_comment_or_a_string_is_not_a_test():
    source = (
        "import attention\n"
        "def test_x():\n"
        "    # attention.saturation_stats(0) should raise\n"
        "    'attention.softmax is tested here'\n"
        "    attention.causal_mask(3)\n"
        "# Meta-test\n")
    tested = _tested(source)
    assert id(attention.causal_mask) in tested
    assert id(attention.saturation_stats) not in tested and id(attention.softmax) not in tested
    assert "attention.saturation_stats" in _missing(source)


def test_kernel_functions_raise_when_an_intermediate_overflows_instead_of_nan():
    # finite inputs whose squared distance, or q W_q + k W_k, overflows: these
    # returned NaN silently before
    with pytest.raises(ValueError, match="squared distance"):
        attention.gaussian_kernel_weights([[1e160, 0.0]], [[0.0, 0.0], [1.0, 0.0]])
    with pytest.raises(ValueError, match="pre-activation"):
        attention.additive_scores([[1e308]], [[-1e308]], [[2.0]], [[2.0]], [1.0])
    with pytest.raises(ValueError, match="pre-activation"):
        attention.additive_scores([[1e308]], [[1.0]], [[2.0]], [[2.0]], [1.0])



def test_torch_attentions_docstring_says_what_an_overflow_of_the_scores_does():
    """The library's torch twin keeps the page's ten lines and does not detect scores that
    overflow: its docstring says so, and says what each sign does."""
    import torch

    import attention.torch as at
    from attention.torch import scaled_dot_product_attention as sdpa
    u = torch.ones(1, 1, 1, 4)
    q, v = 3e19 * u, torch.randn(1, 1, 2, 3)
    k = 3e19 * torch.cat([u, u * 1.1], dim=-2)
    with pytest.raises(ValueError, match=r"\+inf"):
        sdpa(q, k, v)
    assert torch.equal(sdpa(q, -k, v), torch.zeros(1, 1, 1, 3))  # passes for fully masked
    doc = " ".join(at.scaled_dot_product_attention.__doc__.split())
    assert "a row that overflows to -inf passes for a fully masked one and gives zeros" in doc
