"""attention.forward: the plain NumPy attention O = softmax(Q K^T / (tau sqrt(d_k))) V, and
the tiled version with an online softmax (tiled_attention), which equals it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from attention import (
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
    score_scale,
    softmax,
    tiled_attention,
)
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
    import ast
    import inspect

    import attention.forward as forward

    assert "need_weights" not in inspect.signature(scaled_dot_product_attention).parameters
    for fn in (forward.scaled_dot_product_attention, forward._attend):
        tree = ast.parse(inspect.getsource(fn))
        loops = [node for node in ast.walk(tree) if isinstance(node, (ast.For, ast.While))]
        assert not loops, fn.__name__
    tiled = ast.parse(inspect.getsource(forward.tiled_attention))
    assert any(isinstance(node, ast.For) for node in ast.walk(tiled))  # the test can see one


# --- tiled_attention: the online softmax, block by block ------------------------------------


@pytest.mark.parametrize("block_size", [1, 2, 3, 4, 5, 7, 16, 100])
def test_tiled_equals_plain_for_block_sizes_that_do_and_do_not_divide_T(block_size):
    Q, K, V = random_qkv(0, T_q=12, T_k=16, d_k=8, d_v=5)
    O, _ = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(tiled_attention(Q, K, V, block_size), O, rtol=0, atol=1e-13)


@pytest.mark.parametrize("block_size", [1, 3, 4, 6])
def test_tiled_equals_plain_with_a_causal_mask(block_size):
    Q, K, V = random_qkv(1, T_q=10, T_k=10, d_k=4)
    m = causal_mask(10)
    O, _ = scaled_dot_product_attention(Q, K, V, mask=m)
    np.testing.assert_allclose(tiled_attention(Q, K, V, block_size, mask=m), O, atol=1e-13)


@pytest.mark.parametrize("block_size", [2, 3, 8])
def test_tiled_gives_zero_output_for_fully_masked_rows_and_masked_early_blocks(block_size):
    Q, K, V = random_qkv(2, T_q=6, T_k=8)
    m = np.ones((6, 8), dtype=bool)
    m[1] = False  # every key masked
    m[3, :5] = False  # only keys in later blocks visible: the running max starts at -inf
    O_plain, _ = scaled_dot_product_attention(Q, K, V, mask=m)
    O = tiled_attention(Q, K, V, block_size, mask=m)
    assert np.array_equal(O[1], np.zeros(2))
    np.testing.assert_allclose(O, O_plain, atol=1e-13)


@pytest.mark.parametrize("block_size", [2, 5])
def test_tiled_handles_batch_and_head_dimensions_and_padding_masks(block_size):
    rng = np.random.default_rng(3)
    Q = rng.standard_normal((2, 3, 7, 4))  # (B, H, T, d_k)
    K = rng.standard_normal((2, 1, 7, 4))  # shared by heads
    V = rng.standard_normal((2, 1, 7, 3))
    mask = (causal_mask(7) & padding_mask([5, 0], 7))[:, None]  # (B, 1, T, T); batch 1 all padding
    O_plain, _ = scaled_dot_product_attention(Q, K, V, mask=mask)
    O = tiled_attention(Q, K, V, block_size, mask=mask)
    assert O.shape == (2, 3, 7, 3)
    np.testing.assert_allclose(O, O_plain, atol=1e-13)
    assert np.array_equal(O[1], np.zeros((3, 7, 3)))


def test_tiled_survives_scores_that_would_overflow_a_naive_exponential():
    Q, K, V = random_qkv(4, T_q=5, T_k=9)
    Q = Q * 300.0  # scores in the hundreds: exp overflows without the running max
    O_plain, _ = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(tiled_attention(Q, K, V, 2), O_plain, atol=1e-12)


def test_tiled_respects_temperature_and_float32():
    Q, K, V = random_qkv(5, T_q=6, T_k=7, dtype=np.float32)
    O_plain, _ = scaled_dot_product_attention(Q, K, V, temperature=0.5)
    O = tiled_attention(Q, K, V, 3, temperature=0.5)
    assert O.dtype == np.float32
    np.testing.assert_allclose(O, O_plain, atol=2e-6)


def test_tiled_with_no_queries_or_no_keys_follows_the_plain_policy():
    Q, K, V = random_qkv(6)
    assert tiled_attention(Q[:0], K, V, 2).shape == (0, 2)
    assert np.array_equal(tiled_attention(Q, K[:0], V[:0], 2), np.zeros((4, 2)))


@FAST
@given(qkv(max_T=9), st.integers(1, 10), st.integers(0, 2**32 - 1))
def test_tiled_equals_plain_for_random_sizes_masks_and_blocks(args, block_size, seed):
    Q, K, V = args
    mask = np.random.default_rng(seed).random((Q.shape[0], K.shape[0])) < 0.7
    O_plain, _ = scaled_dot_product_attention(Q, K, V, mask=mask)
    np.testing.assert_allclose(tiled_attention(Q, K, V, block_size, mask=mask), O_plain, atol=1e-12)


@pytest.mark.parametrize("block_size", [1, 2, 5])
def test_tiled_raises_like_the_plain_version_when_the_scores_overflow_float32(block_size):
    """Q K^T overflowing float32 once gave all-zero outputs (NaN fails l > 0, the empty-row
    guard); the plain version raises, and so must the tiled one, in every tile."""
    Q = np.full((3, 3), 1e20, dtype=np.float32)  # finite, but q . k = 3e40 overflows
    K = np.ones((4, 3), dtype=np.float32)
    K[-1] = 1e20  # only the last key, in the last block, overflows
    with pytest.raises(ValueError, match="overflowed float32"):
        scaled_dot_product_attention(Q, K, K)
    with pytest.raises(ValueError, match="overflowed float32"):
        tiled_attention(Q, K, K, block_size)
    with pytest.raises(ValueError, match="overflowed float32"):
        tiled_attention(Q, -Q, Q, block_size)  # every score -inf, no key masked
    # a masked overflowing key is not an error: its score is replaced by -inf
    mask = np.array([True, True, True, False])
    O_plain, _ = scaled_dot_product_attention(Q, K, K, mask=mask)
    np.testing.assert_allclose(tiled_attention(Q, K, K, block_size, mask=mask), O_plain)
    O = tiled_attention(Q.astype(np.float64), K, K, block_size)  # float64 copes
    assert np.isfinite(O).all() and np.abs(O).max() > 0


@pytest.mark.parametrize("block_size", [1, 2, 3])
def test_tiled_accepts_what_the_plain_version_accepts_a_visible_key_scoring_minus_inf(block_size):
    """A key whose score overflows to -inf gets weight 0 in the plain version when the row
    has finite scores too; a tile made of such keys alone must not raise either."""
    Q = np.full((2, 3), 1e20, dtype=np.float32)
    K = np.ones((4, 3), dtype=np.float32)
    K[0] = -1e20  # the first key (the first tile at block_size 1) scores -inf
    O_plain, A = scaled_dot_product_attention(Q, K, K)
    assert np.all(A[:, 0] == 0)
    np.testing.assert_allclose(tiled_attention(Q, K, K, block_size), O_plain)


@pytest.mark.parametrize("align", ["top-left", "bottom-right"])
@pytest.mark.parametrize("T_q, T_k", [(7, 7), (3, 8), (8, 3), (1, 5)])
@pytest.mark.parametrize("block_size", [1, 2, 3, 16])
def test_tiled_causal_equals_plain_attention_with_the_causal_mask(align, T_q, T_k, block_size):
    Q, K, V = random_qkv(8, T_q=T_q, T_k=T_k, d_k=4, d_v=3)
    M = causal_mask(T_q, T_k, align=align)
    O_plain, _ = scaled_dot_product_attention(Q, K, V, mask=M)
    O = tiled_attention(Q, K, V, block_size, causal=align)
    np.testing.assert_allclose(O, O_plain, rtol=0, atol=1e-13)
    # combined with a dense mask by AND (here a padding mask with an empty sequence)
    pad = padding_mask([max(T_k - 2, 0), 0], T_k)[:, None]  # (B, 1, 1, T_k)
    Qb, Kb, Vb = (np.stack([x, x]) for x in (Q, K, V))
    O_plain, _ = scaled_dot_product_attention(Qb, Kb, Vb, mask=M & pad[:, 0])
    O = tiled_attention(Qb, Kb, Vb, block_size, mask=pad[:, 0], causal=align)
    np.testing.assert_allclose(O, O_plain, rtol=0, atol=1e-13)


def test_tiled_causal_stores_no_T_by_T_mask_and_a_dense_mask_does():
    import tracemalloc

    T, block = 1024, 64
    Q, K, V = random_qkv(9, T_q=T, T_k=T, d_k=8, d_v=8, dtype=np.float32)

    def peak(fn):
        tracemalloc.start()
        try:
            fn()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    derived = peak(lambda: tiled_attention(Q, K, V, block, causal="top-left"))
    dense = peak(lambda: tiled_attention(Q, K, V, block, mask=causal_mask(T)))
    assert derived < T * T / 4 < T * T <= dense  # the bool mask alone is T * T bytes


def test_tiled_causal_refuses_unknown_alignments_and_checks_overflow_on_visible_keys():
    Q, K, V = random_qkv(10, T_q=4, T_k=4)
    for bad in ("causal", True, "lower-right"):
        with pytest.raises(ValueError, match="causal must be"):
            tiled_attention(Q, K, V, 2, causal=bad)
    big = np.full((3, 3), 1e20, dtype=np.float32)
    keys = np.ones((3, 3), dtype=np.float32)
    keys[2] = 1e20  # overflows, but only query 2 sees key 2 under the causal mask
    with pytest.raises(ValueError, match="overflowed float32"):
        tiled_attention(big, keys, keys, 1, causal="top-left")
    O = tiled_attention(big[:2], keys, keys, 1, causal="top-left")  # key 2 hidden
    O_plain, _ = scaled_dot_product_attention(big[:2], keys, keys, mask=causal_mask(2, 3))
    np.testing.assert_allclose(O, O_plain)
    # every visible key scoring -inf is an overflow; an empty causal row is not
    with pytest.raises(ValueError, match="overflowed float32"):
        tiled_attention(big, -big, big, 2, causal="bottom-right")
    O = tiled_attention(Q[:3], K[:1], V[:1], 2, causal="bottom-right")  # rows 0, 1 empty
    assert np.array_equal(O[:2], np.zeros((2, V.shape[-1])))


def test_tiled_causal_with_no_keys_or_no_queries_follows_the_plain_policy():
    Q, K, V = random_qkv(11)
    for align in ("top-left", "bottom-right"):
        assert np.array_equal(tiled_attention(Q, K[:0], V[:0], 2, causal=align), np.zeros((4, 2)))
        assert tiled_attention(Q[:0], K, V, 2, causal=align).shape == (0, 2)


def test_tiled_causal_skips_the_tiles_above_the_diagonal(monkeypatch):
    # stability.md: "tiling saves memory, not work (except the tiles above the diagonal,
    # which causal= lets it skip)". Each visited tile takes one matrix product of V.
    import attention.forward as fwd
    calls = {"tiles": 0}
    real_exp = np.exp

    def counting_exp(x, *args, **kwargs):
        if kwargs.get("out") is not None:  # the tile's exponentials, in place
            calls["tiles"] += 1
        return real_exp(x, *args, **kwargs)

    monkeypatch.setattr(fwd.np, "exp", counting_exp)
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal((8, 3)) for _ in range(3))
    tiled_attention(Q, K, V, 2)
    full = calls["tiles"]
    calls["tiles"] = 0
    tiled_attention(Q, K, V, 2, causal="top-left")
    assert (full, calls["tiles"]) == (16, 1 + 2 + 3 + 4)
