"""The hand-derived backward pass (attention.attention_backward) against central
differences and against torch autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attention import (
    attention_backward,
    causal_mask,
    numerical_gradient,
    relative_error,
    scaled_dot_product_attention,
    softmax,
    softmax_vjp,
)
from tests._attn import random_qkv


def _numeric_grads(Q, K, V, dO, mask=None, temperature=1.0):
    def loss(Q_, K_, V_):
        O, _ = scaled_dot_product_attention(Q_, K_, V_, mask=mask, temperature=temperature)
        return np.sum(O * dO)

    return (numerical_gradient(lambda X: loss(X, K, V), Q),
            numerical_gradient(lambda X: loss(Q, X, V), K),
            numerical_gradient(lambda X: loss(Q, K, X), V))


def _partly_masked(T_q, T_k, seed):
    m = np.random.default_rng(seed).random((T_q, T_k)) < 0.6
    m[:, 0] = True
    m[-1] = False  # one fully masked query: its gradients must be zero, not NaN
    return m


CASES = {
    "no mask": dict(mask=None),
    "causal mask": dict(mask=causal_mask(4, 5)),
    "random mask with a fully masked row": dict(mask=_partly_masked(4, 5, 11)),
    "temperature 0.7": dict(mask=None, temperature=0.7),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_backward_matches_central_differences_to_1e_minus_7(case):
    Q, K, V = random_qkv(0, T_q=4, T_k=5, d_k=3, d_v=2)
    dO = np.random.default_rng(1).standard_normal((4, 2))
    got = attention_backward(Q, K, V, dO, **CASES[case])
    want = _numeric_grads(Q, K, V, dO, **CASES[case])
    for name, g, n in zip(("dQ", "dK", "dV"), got, want):
        assert relative_error(g, n) < 1e-7, name


def _autograd(Q, K, V, dO, mask=None):
    q, k, v = (torch.tensor(x, requires_grad=True) for x in (Q, K, V))
    s = q @ k.transpose(-2, -1) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~torch.as_tensor(mask), float("-inf"))
    o = torch.softmax(s, dim=-1) @ v
    o.backward(torch.tensor(dO))
    return q.grad.numpy(), k.grad.numpy(), v.grad.numpy()


@pytest.mark.parametrize("mask", [None, causal_mask(6)], ids=["no mask", "causal mask"])
def test_backward_matches_torch_autograd_with_batch_and_heads(mask):
    Q, K, V = random_qkv(2, T_q=6, T_k=6, d_k=4, d_v=3, batch=(2, 3))
    dO = np.random.default_rng(3).standard_normal((2, 3, 6, 3))
    for g, a in zip(attention_backward(Q, K, V, dO, mask=mask), _autograd(Q, K, V, dO, mask)):
        np.testing.assert_allclose(g, a, rtol=1e-10, atol=1e-12)


def test_backward_sums_the_gradient_of_a_key_shared_by_all_heads():
    rng = np.random.default_rng(4)
    Q = rng.standard_normal((3, 4, 2))  # 3 heads
    K = rng.standard_normal((5, 2))  # one K and V for every head
    V = rng.standard_normal((5, 3))
    dO = rng.standard_normal((3, 4, 3))
    dQ, dK, dV = attention_backward(Q, K, V, dO)
    assert dQ.shape == Q.shape and dK.shape == K.shape and dV.shape == V.shape
    per_head = [attention_backward(Q[h], K, V, dO[h]) for h in range(3)]
    np.testing.assert_allclose(dK, sum(p[1] for p in per_head), atol=1e-13)
    np.testing.assert_allclose(dV, sum(p[2] for p in per_head), atol=1e-13)
    for g, a in zip((dQ, dK, dV), _autograd(Q, K, V, dO)):
        np.testing.assert_allclose(g, a, rtol=1e-10, atol=1e-12)


def test_backward_gives_exactly_zero_gradients_for_a_fully_masked_query_and_its_hidden_keys():
    Q, K, V = random_qkv(5, T_q=3, T_k=4)
    mask = np.array([[1, 1, 0, 0], [0, 0, 0, 0], [1, 1, 0, 0]], dtype=bool)
    dQ, dK, dV = attention_backward(Q, K, V, np.ones((3, 2)), mask=mask)
    assert np.array_equal(dQ[1], np.zeros(3))
    assert np.array_equal(dK[2:], np.zeros((2, 3))) and np.array_equal(dV[2:], np.zeros((2, 2)))
    assert all(np.isfinite(g).all() for g in (dQ, dK, dV))


def test_backward_keeps_float32():
    Q, K, V = random_qkv(6, dtype=np.float32)
    dQ, dK, dV = attention_backward(Q, K, V, np.ones((4, 2), dtype=np.float32))
    assert dQ.dtype == dK.dtype == dV.dtype == np.float32
    ref = attention_backward(*(x.astype(np.float64) for x in (Q, K, V)), np.ones((4, 2)))
    for g, r in zip((dQ, dK, dV), ref):
        np.testing.assert_allclose(g, r, atol=1e-5)


def test_softmax_vjp_matches_central_differences():
    s = np.array([0.2, -0.4, 1.5, 0.0])
    g = np.array([1.0, -2.0, 0.5, 3.0])
    numeric = numerical_gradient(lambda x: np.dot(softmax(x), g), s)
    assert relative_error(softmax_vjp(softmax(s), g), numeric) < 1e-8


def test_numerical_gradient_of_a_quadratic_is_exact_to_rounding():
    X = np.array([[1.0, -2.0], [0.5, 3.0]])
    assert relative_error(numerical_gradient(lambda Y: np.sum(Y**2), X), 2 * X) < 1e-9


def test_relative_error_is_scaled_by_the_larger_magnitude():
    assert relative_error([1.0, 2.0], [1.0, 2.0]) == 0.0
    assert relative_error([10.0, 0.0], [10.0, 1.0]) == pytest.approx(0.1)
    assert relative_error(np.zeros(3), np.zeros(3)) == 0.0


# --- the recompute (FlashAttention-style) backward pass ------------------------------------

from attention.backward import tiled_attention_backward  # noqa: E402


def _masks(T_q, T_k):
    """Every mask kind the recompute backward must handle, each (T_q, T_k)."""
    empty_row = causal_mask(T_q, T_k)
    empty_row[2] = False  # query 2 sees no key
    from attention import padding_mask
    return {
        "no mask": None,
        "causal": causal_mask(T_q, T_k),
        "padding": padding_mask([T_k - 2, T_k - 4], T_k),  # one length per batch item
        "bottom-right causal": causal_mask(T_q, T_k, align="bottom-right"),
        "an empty row": empty_row,
    }


def _log_sum_exp(Q, K, mask):
    """L_i = ln sum_j exp(S_ij) over the visible keys, straight from the scores."""
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    m = S.max(axis=-1, keepdims=True)
    m_ = np.where(np.isneginf(m), 0.0, m)
    with np.errstate(divide="ignore"):
        return (m_ + np.log(np.exp(S - m_).sum(axis=-1, keepdims=True)))[..., 0]


@pytest.mark.parametrize("kind", list(_masks(5, 7)))
@pytest.mark.parametrize("block_size", [1, 3, 7, 16])
def test_recompute_backward_matches_the_stored_A_backward_for_every_mask_kind(kind, block_size):
    Q, K, V = random_qkv(8, T_q=5, T_k=7, d_k=4, d_v=3, batch=(2,))
    dO = np.random.default_rng(9).standard_normal((2, 5, 3))
    mask = _masks(5, 7)[kind]
    want = attention_backward(Q, K, V, dO, mask=mask)
    O, _ = scaled_dot_product_attention(Q, K, V, mask=mask)
    for got in (tiled_attention_backward(Q, K, V, dO, block_size, mask=mask),
                tiled_attention_backward(Q, K, V, dO, block_size, mask=mask,
                                         O=O, lse=_log_sum_exp(Q, K, mask))):
        for name, g_, w in zip(("dQ", "dK", "dV"), got, want):
            assert np.isfinite(g_).all(), name
            np.testing.assert_allclose(g_, w, atol=1e-12, err_msg=f"{kind}: {name}")
    if kind == "an empty row":
        assert np.all(tiled_attention_backward(Q, K, V, dO, block_size, mask=mask)[0][:, 2] == 0)


def test_recompute_backward_without_the_mask_is_wrong_where_the_mask_matters():
    """Why the mask must be applied again: the same O and L without it give other gradients."""
    Q, K, V = random_qkv(3, T_q=6, T_k=6, d_k=4, d_v=3)
    dO = np.random.default_rng(4).standard_normal((6, 3))
    mask = causal_mask(6)
    O, _ = scaled_dot_product_attention(Q, K, V, mask=mask)
    L = _log_sum_exp(Q, K, mask)
    want = attention_backward(Q, K, V, dO, mask=mask)
    wrong = tiled_attention_backward(Q, K, V, dO, 2, O=O, lse=L)
    assert max(np.abs(a - b).max() for a, b in zip(wrong, want)) > 0.1


def test_recompute_backward_matches_central_differences_and_keeps_float32():
    Q, K, V = random_qkv(0, T_q=4, T_k=5, d_k=3, d_v=2)
    dO = np.random.default_rng(1).standard_normal((4, 2))
    mask = _partly_masked(4, 5, 11)
    got = tiled_attention_backward(Q, K, V, dO, 2, mask=mask)
    for g_, n in zip(got, _numeric_grads(Q, K, V, dO, mask=mask)):
        assert relative_error(g_, n) < 1e-7
    low = tiled_attention_backward(*(x.astype(np.float32) for x in (Q, K, V, dO)), 2, mask=mask)
    assert all(x.dtype == np.float32 for x in low)
    for a, b in zip(low, got):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_recompute_backward_sums_a_key_shared_by_all_heads_and_raises_on_overflow():
    rng = np.random.default_rng(4)
    Q, K, V = rng.standard_normal((3, 4, 2)), rng.standard_normal((5, 2)), rng.standard_normal((5, 3))
    dO = rng.standard_normal((3, 4, 3))
    for g_, w, x in zip(tiled_attention_backward(Q, K, V, dO, 2), attention_backward(Q, K, V, dO),
                        (Q, K, V)):
        assert g_.shape == x.shape
        np.testing.assert_allclose(g_, w, atol=1e-12)
    big = np.full((2, 2), 1e20, dtype=np.float32)
    with pytest.raises(ValueError, match="overflowed"):
        tiled_attention_backward(big, big, big[:, :1], np.ones((2, 1), np.float32), 1)


def test_float16_backward_is_computed_in_float32_including_recomputed_O_and_A():
    # float16 inputs, d_k = 64, scores near 9600 (raw products past float16's 65504):
    # the gradients must come within 1e-3 (of each gradient's largest entry) of the
    # float64 gradients of the same float16 values, as float32 copies do; O and A
    # recomputed and rounded to float16 before dS = A (dA - D) left dQ 5.8% off.
    rng = np.random.default_rng(7)
    Q = (40 + 0.05 * rng.standard_normal((4, 64))).astype(np.float16)
    K = (30 + 0.05 * rng.standard_normal((5, 64))).astype(np.float16)
    V = rng.standard_normal((5, 2)).astype(np.float16)
    dO = rng.standard_normal((4, 2)).astype(np.float16)
    for mask in (None, causal_mask(4, 5)):
        want = attention_backward(*(x.astype(np.float64) for x in (Q, K, V, dO)), mask=mask)
        got = attention_backward(Q, K, V, dO, mask=mask)
        for g_, w in zip(got, want):
            assert g_.dtype == np.float16
            assert np.abs(g_ - w).max() <= 1e-3 * np.abs(w).max()
