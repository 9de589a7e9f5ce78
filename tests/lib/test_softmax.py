"""Softmax, its Jacobian and its vector-Jacobian product (attention.softmax)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention import (
    jacobian_frobenius_sq,
    jacobian_trace,
    naive_softmax,
    numerical_gradient,
    relative_error,
    softmax,
    softmax_jacobian,
    softmax_vjp,
)
from tests._attn import FAST, score_rows


@FAST
@given(score_rows())
def test_softmax_rows_are_probability_vectors(x):
    a = softmax(x)
    assert a.shape == x.shape
    assert np.all(a >= 0)
    np.testing.assert_allclose(a.sum(axis=-1), 1.0, rtol=0, atol=1e-12)


@FAST
@given(score_rows(), st.floats(-1e3, 1e3, allow_nan=False))
def test_softmax_is_unchanged_by_adding_a_constant_to_a_row(x, shift):
    np.testing.assert_allclose(softmax(x + shift), softmax(x), rtol=0, atol=1e-12)


@FAST
@given(score_rows())
def test_softmax_preserves_the_order_of_scores(x):
    a = softmax(x)
    order = np.argsort(x, axis=-1, kind="stable")
    assert np.all(np.diff(np.take_along_axis(a, order, axis=-1), axis=-1) >= 0)


def test_softmax_along_another_axis_normalises_that_axis():
    x = np.random.default_rng(0).standard_normal((3, 4))
    np.testing.assert_allclose(softmax(x, axis=0).sum(axis=0), 1.0)
    np.testing.assert_allclose(softmax(x, axis=0), softmax(x.T).T)


def test_softmax_of_huge_scores_does_not_overflow_where_the_naive_one_does():
    x = np.array([1000.0, 999.0, 0.0])
    with np.errstate(all="ignore"):
        assert np.isnan(naive_softmax(x)).any()
    a = softmax(x)
    assert np.isfinite(a).all()
    np.testing.assert_allclose(a[:2], [1 / (1 + np.exp(-1)), np.exp(-1) / (1 + np.exp(-1))])


def test_float16_softmax_stays_finite_and_keeps_its_dtype_while_naive_overflows_above_ln_65504():
    x = np.array([12.0, 11.0, 0.0], dtype=np.float16)
    assert np.isnan(naive_softmax(x)).any()  # exp(12) = inf in float16, inf / inf = NaN
    a = softmax(x)
    assert a.dtype == np.float16
    np.testing.assert_allclose(a.astype(np.float64), softmax(x.astype(np.float64)), atol=1e-3)


def test_naive_softmax_agrees_with_the_stable_one_on_small_scores():
    x = np.random.default_rng(1).standard_normal((3, 5))
    np.testing.assert_allclose(naive_softmax(x), softmax(x), rtol=1e-14)


def test_minus_infinity_scores_get_exactly_zero_weight():
    a = softmax(np.array([0.5, -np.inf, 2.0, -np.inf]))
    assert a[1] == 0.0 and a[3] == 0.0
    np.testing.assert_allclose(a[[0, 2]], softmax(np.array([0.5, 2.0])))


def test_a_row_of_only_minus_infinity_gives_zeros_not_nan():
    a = softmax(np.array([[-np.inf, -np.inf], [0.0, 1.0]]))
    assert np.array_equal(a[0], [0.0, 0.0])
    np.testing.assert_allclose(a[1].sum(), 1.0)


def test_integer_scores_are_promoted_to_float64():
    a = softmax(np.array([1, 2, 3]))
    assert a.dtype == np.float64
    np.testing.assert_allclose(a, softmax(np.array([1.0, 2.0, 3.0])))


@FAST
@given(score_rows(max_rows=1, max_cols=6))
def test_jacobian_is_symmetric_with_zero_row_sums_and_positive_semidefinite(x):
    J = softmax_jacobian(softmax(x[0]))
    np.testing.assert_allclose(J, J.T, atol=1e-15)
    np.testing.assert_allclose(J.sum(axis=-1), 0.0, atol=1e-14)
    assert np.linalg.eigvalsh(J).min() > -1e-12


def test_jacobian_matches_central_differences_of_softmax():
    s = np.array([0.3, -1.2, 2.0, 0.7])
    J = softmax_jacobian(softmax(s))
    numeric = np.stack([numerical_gradient(lambda x, i=i: softmax(x)[i], s) for i in range(4)])
    assert relative_error(J, numeric) < 1e-8


def test_jacobian_of_batched_rows_has_one_matrix_per_row():
    A = softmax(np.random.default_rng(2).standard_normal((2, 3, 4)))
    J = softmax_jacobian(A)
    assert J.shape == (2, 3, 4, 4)
    np.testing.assert_allclose(J[1, 2], softmax_jacobian(A[1, 2]))


@FAST
@given(score_rows(max_rows=3, max_cols=6), st.integers(0, 2**32 - 1))
def test_vjp_equals_g_times_the_jacobian(x, seed):
    a = softmax(x)
    g = np.random.default_rng(seed).standard_normal(a.shape)
    want = np.einsum("...i,...ij->...j", g, softmax_jacobian(a))
    np.testing.assert_allclose(softmax_vjp(a, g), want, atol=1e-12)


def test_one_hot_row_has_zero_jacobian_and_passes_no_gradient():
    a = np.array([0.0, 1.0, 0.0])
    assert np.array_equal(softmax_jacobian(a), np.zeros((3, 3)))
    assert np.array_equal(softmax_vjp(a, np.array([1.0, -2.0, 3.0])), np.zeros(3))
    assert jacobian_trace(a) == 0.0


def test_jacobian_trace_is_one_minus_one_over_n_for_a_uniform_row_and_equals_the_trace():
    assert jacobian_trace(np.full(4, 0.25)) == pytest.approx(0.75)
    a = softmax(np.array([[0.1, 2.0, -1.0], [3.0, 3.0, 0.0]]))
    np.testing.assert_allclose(jacobian_trace(a), np.trace(softmax_jacobian(a), axis1=-2, axis2=-1))


@FAST
@given(score_rows(max_rows=3, max_cols=7))
def test_frobenius_square_is_the_sum_of_squared_jacobian_entries_and_obeys_its_bound(x):
    a = softmax(x)
    J = softmax_jacobian(a)
    got = jacobian_frobenius_sq(a)
    np.testing.assert_allclose(got, np.sum(J**2, axis=(-2, -1)), atol=1e-14)
    p2 = np.sum(a**2, axis=-1)
    assert np.all(got >= 0)
    assert np.all(got <= p2 * (1 - p2) + 1e-14) and np.all(got <= 0.25 + 1e-14)


def test_frobenius_square_is_a_quarter_at_a_two_way_tie_and_about_one_over_t_k_when_uniform():
    assert jacobian_frobenius_sq(np.array([0.5, 0.5, 0.0])) == pytest.approx(0.25)
    for T_k in (2, 8, 32, 1000):
        assert jacobian_frobenius_sq(np.full(T_k, 1 / T_k)) == pytest.approx((T_k - 1) / T_k**2)
    assert jacobian_frobenius_sq(np.array([0.0, 1.0, 0.0])) == 0.0


def test_frobenius_square_is_e_of_jg_squared_for_unit_covariance_g():
    a = softmax(np.array([1.0, 0.2, -0.5, 2.0, 0.0]))
    g = np.random.default_rng(3).standard_normal((200_000, 5))
    mc = np.mean(np.sum((g @ softmax_jacobian(a)) ** 2, axis=1))
    assert mc == pytest.approx(float(jacobian_frobenius_sq(a)), rel=0.01)


def test_frobenius_square_of_a_nearly_one_hot_row_has_no_cancellation():
    # a = softmax([L, 0, 0, 0]): with e = exp(-L) the exact value is 18 e^2 to leading order,
    # far below the rounding error of 1 - a_max computed from a_max.
    for L in (20.0, 40.0, 80.0):
        a = softmax(np.array([L, 0.0, 0.0, 0.0]))
        e = np.exp(-L)
        assert jacobian_frobenius_sq(a) == pytest.approx(18 * e**2, rel=1e-6)


def test_frobenius_square_keeps_float32_and_batches():
    A = softmax(np.random.default_rng(4).standard_normal((2, 3, 6))).astype(np.float32)
    out = jacobian_frobenius_sq(A)
    assert out.dtype == np.float32 and out.shape == (2, 3)
    np.testing.assert_allclose(out, jacobian_frobenius_sq(A.astype(np.float64)), rtol=1e-5)
