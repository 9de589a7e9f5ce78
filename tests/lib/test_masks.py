"""Boolean masks (True = may attend) and the fully-masked-row policy (attention.masks)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from attention import causal_mask, padding_mask, prefix_mask, scaled_dot_product_attention
from tests._attn import FAST, qkv, random_qkv


def test_causal_mask_lets_query_i_see_exactly_keys_up_to_i():
    m = causal_mask(4)
    assert m.dtype == np.bool_ and m.shape == (4, 4)
    for i in range(4):
        for j in range(4):
            assert m[i, j] == (j <= i)


def test_causal_mask_with_more_keys_than_queries_is_aligned_top_left_like_torch():
    m = causal_mask(2, 4)
    assert np.array_equal(m, [[True, False, False, False], [True, True, False, False]])
    torch_rule = torch.ones(2, 4, dtype=torch.bool).tril()  # what is_causal=True uses
    assert np.array_equal(m, torch_rule.numpy())


@pytest.mark.filterwarnings("ignore:Lower right causal bias")
def test_bottom_right_causal_mask_lets_the_last_query_see_every_key_like_torch():
    from torch.nn.attention.bias import causal_lower_right

    for T_q, T_k in [(2, 5), (1, 4), (3, 3), (4, 2)]:
        m = causal_mask(T_q, T_k, align="bottom-right")
        for i in range(T_q):
            for j in range(T_k):
                assert m[i, j] == (j <= i + T_k - T_q)
        want = causal_lower_right(T_q, T_k)._materialize(torch.device("cpu"))
        assert np.array_equal(m, want.numpy())


def test_the_two_alignments_agree_on_square_masks():
    for T in range(5):
        assert np.array_equal(causal_mask(T, align="bottom-right"), causal_mask(T))


def test_causal_mask_allocates_only_the_mask_itself():
    # stability.md: a causal mask built inside the call adds the mask's T^2 bytes to
    # the peak, nothing more (np.tril(np.ones(...)) made two more T^2 temporaries)
    import tracemalloc
    T = 1024
    for align, T_k in (("top-left", T), ("bottom-right", T + 100)):
        tracemalloc.start()
        try:
            M = causal_mask(T, T_k, align=align)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert M.dtype == bool and M.shape == (T, T_k)
        assert peak < 1.1 * T * T_k, peak


def test_prefix_mask_is_bidirectional_over_the_prefix_and_causal_after():
    m = prefix_mask(6, 3)
    assert m.dtype == np.bool_ and m.shape == (6, 6)
    for i in range(6):
        for j in range(6):
            assert m[i, j] == (j < 3 or j <= i)


def test_prefix_mask_runs_from_the_causal_mask_to_the_full_one():
    assert np.array_equal(prefix_mask(5, 0), causal_mask(5))
    assert np.array_equal(prefix_mask(5, 1), causal_mask(5))
    assert np.array_equal(prefix_mask(5, 5), np.ones((5, 5), dtype=bool))


def test_prefix_outputs_ignore_the_tokens_after_the_prefix():
    # A prefix position reads the whole prefix and nothing after it: changing the later
    # tokens leaves its output unchanged, while a causal model's later outputs move.
    rng = np.random.default_rng(3)
    Q, K, V = (rng.standard_normal((6, 4)) for _ in range(3))
    O, _ = scaled_dot_product_attention(Q, K, V, mask=prefix_mask(6, 3))
    K2, V2 = K.copy(), V.copy()
    K2[3:], V2[3:] = rng.standard_normal((2, 3, 4))
    O2, _ = scaled_dot_product_attention(Q, K2, V2, mask=prefix_mask(6, 3))
    np.testing.assert_array_equal(O[:3], O2[:3])
    assert np.abs(O[3:] - O2[3:]).max() > 1e-3


def test_causal_mask_gives_future_keys_zero_weight():
    Q, K, V = random_qkv(0, T_q=5, T_k=5)
    _, A = scaled_dot_product_attention(Q, K, V, mask=causal_mask(5))
    assert np.all(A[np.triu_indices(5, k=1)] == 0.0)
    assert A[0, 0] == 1.0  # the first query can only see itself


def test_padding_mask_hides_keys_at_and_after_each_length():
    m = padding_mask([3, 1, 0], 4)
    assert m.shape == (3, 1, 4) and m.dtype == np.bool_
    assert np.array_equal(m[:, 0], [[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]])


def test_padding_and_causal_masks_combine_with_and():
    m = causal_mask(4) & padding_mask([2, 4], 4)
    assert m.shape == (2, 4, 4)
    assert np.array_equal(m[0], np.tril(np.ones((4, 4), bool)) & (np.arange(4) < 2))
    assert np.array_equal(m[1], causal_mask(4))


@FAST
@given(qkv(), st.integers(0, 2**32 - 1))
def test_masked_keys_get_exactly_zero_weight_and_the_rest_renormalise(args, seed):
    Q, K, V = args
    mask = np.random.default_rng(seed).random((Q.shape[0], K.shape[0])) < 0.6
    O, A = scaled_dot_product_attention(Q, K, V, mask=mask)
    assert np.all(A[~mask] == 0.0)
    for i in range(Q.shape[0]):
        if mask[i].any():
            _, A_i = scaled_dot_product_attention(Q[i : i + 1], K[mask[i]], V[mask[i]])
            np.testing.assert_allclose(A[i, mask[i]], A_i[0], atol=1e-12)
            np.testing.assert_allclose(A[i].sum(), 1.0, atol=1e-12)
        else:
            assert np.all(A[i] == 0.0) and np.all(O[i] == 0.0)


def test_padded_keys_do_not_change_the_output_of_a_sequence():
    rng = np.random.default_rng(1)
    Q, K, V = rng.standard_normal((3, 2)), rng.standard_normal((5, 2)), rng.standard_normal((5, 3))
    K_junk, V_junk = K.copy(), V.copy()
    K_junk[3:], V_junk[3:] = 100.0, -100.0
    mask = padding_mask([3], 5)[0]  # (1, 5) broadcasts over queries
    O, _ = scaled_dot_product_attention(Q, K_junk, V_junk, mask=mask)
    O_short, _ = scaled_dot_product_attention(Q, K[:3], V[:3])
    np.testing.assert_allclose(O, O_short, atol=1e-14)


def test_fully_masked_row_gives_zero_weights_and_zero_output_in_numpy():
    Q, K, V = random_qkv(2)
    mask = np.ones((4, 5), dtype=bool)
    mask[2] = False
    O, A = scaled_dot_product_attention(Q, K, V, mask=mask)
    assert np.array_equal(A[2], np.zeros(5)) and np.array_equal(O[2], np.zeros(2))
    assert np.isfinite(O).all() and np.isfinite(A).all()


def test_torch_builtin_also_gives_a_zero_output_for_a_fully_masked_row():
    # The library's policy copies a measured behaviour of the installed torch; if a torch
    # upgrade changes it, this test says so.
    q, k, v = (torch.randn(1, 1, 3, 4, generator=torch.Generator().manual_seed(i)) for i in range(3))
    mask = torch.ones(3, 3, dtype=torch.bool)
    mask[1] = False
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.equal(out[0, 0, 1], torch.zeros(4))
    assert torch.isfinite(out).all()
