"""The plain NumPy attention: O = softmax(Q K^T / (tau sqrt(d_k))) V (attention.forward)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from attention import scaled_dot_product_attention, score_scale, softmax
from tests._attn import FAST, qkv, random_qkv


@FAST
@given(qkv())
def test_weights_are_probability_vectors_and_output_is_weights_times_values(args):
    Q, K, V = args
    O, A = scaled_dot_product_attention(Q, K, V)
    assert A.shape == (Q.shape[0], K.shape[0]) and O.shape == (Q.shape[0], V.shape[1])
    assert np.all(A >= 0)
    np.testing.assert_allclose(A.sum(axis=-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(O, A @ V, atol=1e-12)


@FAST
@given(qkv())
def test_each_output_lies_within_the_per_coordinate_range_of_the_values(args):
    Q, K, V = args
    O, _ = scaled_dot_product_attention(Q, K, V)
    tol = 1e-12
    assert np.all(O >= V.min(axis=0) - tol) and np.all(O <= V.max(axis=0) + tol)


def _inside_triangle(p, a, b, c, tol=1e-12):
    """True when p lies in the closed triangle abc (same-side test with 2-D cross products)."""
    def cross(o, u, w):
        return (u[0] - o[0]) * (w[1] - o[1]) - (u[1] - o[1]) * (w[0] - o[0])

    d1, d2, d3 = cross(a, b, p), cross(b, c, p), cross(c, a, p)
    has_neg = min(d1, d2, d3) < -tol
    has_pos = max(d1, d2, d3) > tol
    return not (has_neg and has_pos)


def test_outputs_with_three_2d_values_lie_inside_the_values_triangle():
    rng = np.random.default_rng(3)
    V = np.array([[0.0, 0.0], [4.0, 0.5], [1.0, 3.0]])
    Q = 3.0 * rng.standard_normal((200, 2))
    K = rng.standard_normal((3, 2))
    O, _ = scaled_dot_product_attention(Q, K, V)
    assert all(_inside_triangle(o, *V) for o in O)
    # The test itself can fail: a point outside the triangle is detected.
    assert not _inside_triangle(np.array([3.0, 3.0]), *V)


def test_scores_are_divided_by_sqrt_d_k():
    Q, K, V = random_qkv(0, d_k=16)
    _, A = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(A, softmax(Q @ K.T / 4.0), atol=1e-15)
    assert score_scale(16) == 0.25
    assert score_scale(16, temperature=2.0) == 0.125


def test_temperature_divides_the_scores_and_limits_are_argmax_and_uniform():
    Q, K, V = random_qkv(1)
    _, A2 = scaled_dot_product_attention(Q, K, V, temperature=2.0)
    np.testing.assert_allclose(A2, softmax(Q @ K.T / (2.0 * np.sqrt(3))), atol=1e-15)
    _, A_cold = scaled_dot_product_attention(Q, K, V, temperature=1e-4)
    np.testing.assert_allclose(A_cold, np.eye(5)[np.argmax(Q @ K.T, axis=-1)], atol=1e-6)
    _, A_hot = scaled_dot_product_attention(Q, K, V, temperature=1e8)
    np.testing.assert_allclose(A_hot, 0.2, atol=1e-7)


def test_leading_batch_and_head_dimensions_broadcast_like_separate_calls():
    rng = np.random.default_rng(4)
    Q = rng.standard_normal((2, 3, 4, 5))  # (B, H, T_q, d_k)
    K = rng.standard_normal((2, 1, 6, 5))  # one K shared by the heads
    V = rng.standard_normal((6, 2))  # one V for everything
    O, A = scaled_dot_product_attention(Q, K, V)
    assert O.shape == (2, 3, 4, 2) and A.shape == (2, 3, 4, 6)
    for b in range(2):
        for h in range(3):
            O_bh, A_bh = scaled_dot_product_attention(Q[b, h], K[b, 0], V)
            np.testing.assert_allclose(O[b, h], O_bh, atol=1e-14)
            np.testing.assert_allclose(A[b, h], A_bh, atol=1e-14)


def test_identical_keys_give_uniform_weights_and_the_mean_value():
    rng = np.random.default_rng(5)
    Q = rng.standard_normal((3, 4))
    K = np.tile(rng.standard_normal(4), (5, 1))
    V = rng.standard_normal((5, 2))
    O, A = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(A, 0.2, atol=1e-15)
    np.testing.assert_allclose(O, np.broadcast_to(V.mean(axis=0), O.shape), atol=1e-14)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_inputs_keep_their_dtype_and_agree_with_float64(dtype):
    Q, K, V = random_qkv(6, dtype=dtype)
    O, A = scaled_dot_product_attention(Q, K, V)
    assert O.dtype == dtype and A.dtype == dtype
    O64, _ = scaled_dot_product_attention(*(x.astype(np.float64) for x in (Q, K, V)))
    tol = {np.float16: 5e-3, np.float32: 1e-6, np.float64: 0}[dtype]
    np.testing.assert_allclose(O.astype(np.float64), O64, atol=tol)


def test_integer_inputs_are_promoted_to_float64_as_documented():
    Q = np.array([[1, 0], [0, 2]])
    K = np.array([[1, 1], [2, 0], [0, 3]])
    V = np.array([[1, 2], [3, 4], [5, 6]])
    O, A = scaled_dot_product_attention(Q, K, V)
    assert O.dtype == np.float64 and A.dtype == np.float64
    O_f, _ = scaled_dot_product_attention(Q.astype(float), K.astype(float), V.astype(float))
    np.testing.assert_array_equal(O, O_f)


def test_mixed_float32_and_float64_inputs_compute_in_float64():
    Q, K, V = random_qkv(7)
    O, _ = scaled_dot_product_attention(Q.astype(np.float32), K, V)
    assert O.dtype == np.float64


def test_empty_query_sequence_gives_an_empty_output():
    _, K, V = random_qkv(8)
    O, A = scaled_dot_product_attention(np.zeros((0, 3)), K, V)
    assert O.shape == (0, 2) and A.shape == (0, 5)


def test_no_keys_gives_a_zero_output_like_a_fully_masked_row():
    Q, _, _ = random_qkv(9)
    O, A = scaled_dot_product_attention(Q, np.zeros((0, 3)), np.zeros((0, 2)))
    assert A.shape == (4, 0)
    assert np.array_equal(O, np.zeros((4, 2)))


def test_the_plain_function_is_the_pages_algorithm_without_a_block_loop():
    """Blocks of query rows (need_weights=False) live in attention.blocked: the plain
    function has no loop and no need_weights switch."""
    import inspect

    import attention.forward as forward

    assert "need_weights" not in inspect.signature(scaled_dot_product_attention).parameters
    for fn in (forward.scaled_dot_product_attention, forward._attend):
        body = inspect.getsource(fn).split('"""')[-1]
        assert "for " not in body and "while " not in body, fn.__name__
