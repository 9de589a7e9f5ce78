"""attention.regression: Gaussian-kernel weights and additive scores, against formulas written
out independently (torch, loops), and the identities the page "Why the dot product" uses."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import attention
from attention.regression import additive_scores, gaussian_kernel_weights


def torch_kernel_weights(Q, K, sigma):
    q, k = torch.as_tensor(Q), torch.as_tensor(K)
    d2 = torch.cdist(q, k) ** 2
    return torch.softmax(-d2 / (2 * sigma**2), dim=-1).numpy()


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0])
def test_gaussian_kernel_weights_match_torch_cdist(sigma):
    rng = np.random.default_rng(0)
    Q, K = rng.standard_normal((5, 3)), rng.standard_normal((7, 3))
    np.testing.assert_allclose(gaussian_kernel_weights(Q, K, sigma), torch_kernel_weights(Q, K, sigma),
                               rtol=1e-10, atol=1e-14)


def test_gaussian_kernel_weights_are_nadaraya_watson_weights_written_as_a_loop():
    rng = np.random.default_rng(1)
    Q, K = rng.standard_normal((3, 2)), rng.standard_normal((4, 2))
    A = gaussian_kernel_weights(Q, K, 0.8)
    for i in range(3):
        kern = [math.exp(-np.sum((Q[i] - K[j]) ** 2) / (2 * 0.8**2)) for j in range(4)]
        np.testing.assert_allclose(A[i], np.array(kern) / sum(kern), rtol=1e-12)


@pytest.mark.parametrize("d_k, T_k, length", [(4, 3, 1.0), (16, 10, 4.0), (64, 32, 8.0)])
def test_with_keys_of_equal_length_the_kernel_is_dot_product_attention(d_k, T_k, length):
    rng = np.random.default_rng(d_k)
    Q = rng.standard_normal((5, d_k)) * 3.0  # queries of any lengths
    K = rng.standard_normal((T_k, d_k))
    K *= length / np.linalg.norm(K, axis=1, keepdims=True)
    V = rng.standard_normal((T_k, 2))
    # sigma^2 = sqrt(d_k): the Gaussian kernel becomes softmax(q.k / sqrt(d_k))
    _, A = attention.scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(gaussian_kernel_weights(Q, K, d_k**0.25), A, atol=1e-12)


def test_with_keys_of_unequal_length_the_kernel_and_the_dot_product_differ():
    rng = np.random.default_rng(5)
    Q, K = rng.standard_normal((5, 8)), rng.standard_normal((6, 8)) * rng.uniform(0.5, 2, (6, 1))
    _, A = attention.scaled_dot_product_attention(Q, K, np.zeros((6, 1)))
    assert np.abs(gaussian_kernel_weights(Q, K, 8**0.25) - A).max() > 0.05


def test_gaussian_kernel_weights_take_batch_dimensions_and_never_overflow():
    rng = np.random.default_rng(2)
    Q, K = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 3, 6, 5))
    A = gaussian_kernel_weights(Q, K, 0.7)
    assert A.shape == (2, 3, 4, 6)
    np.testing.assert_allclose(A[1, 2], gaussian_kernel_weights(Q[1, 2], K[1, 2], 0.7))
    far = gaussian_kernel_weights(np.zeros((1, 2)), np.array([[1e3, 0.0], [1e3 + 1, 0.0]]), 1e-2)
    assert np.isfinite(far).all() and far[0, 0] == pytest.approx(1.0)


def test_additive_scores_match_a_loop_over_pairs_and_allow_different_widths():
    rng = np.random.default_rng(3)
    Q, K = rng.standard_normal((3, 4)), rng.standard_normal((5, 6))
    W_q, W_k, w = rng.standard_normal((4, 7)), rng.standard_normal((6, 7)), rng.standard_normal(7)
    S = additive_scores(Q, K, W_q, W_k, w)
    assert S.shape == (3, 5)
    for i in range(3):
        for j in range(5):
            assert S[i, j] == pytest.approx(float(np.tanh(Q[i] @ W_q + K[j] @ W_k) @ w), rel=1e-12)


def test_additive_scores_are_bounded_by_the_l1_norm_of_w_however_large_the_inputs():
    rng = np.random.default_rng(4)
    W_q, W_k, w = rng.standard_normal((8, 5)), rng.standard_normal((8, 5)), rng.standard_normal(5)
    for size in (1.0, 100.0, 1e6):
        S = additive_scores(size * rng.standard_normal((6, 8)), size * rng.standard_normal((9, 8)),
                            W_q, W_k, w)
        assert np.abs(S).max() <= np.abs(w).sum() + 1e-12


def test_additive_scores_take_batch_dimensions():
    rng = np.random.default_rng(6)
    Q, K = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4))
    W_q, W_k, w = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.standard_normal(3)
    S = additive_scores(Q, K, W_q, W_k, w)
    assert S.shape == (2, 3, 5)
    np.testing.assert_allclose(S[1], additive_scores(Q[1], K[1], W_q, W_k, w))


@pytest.mark.parametrize("g", [0.5, 4.0, 30.0])
def test_qk_norm_scores_are_the_gaussian_kernel_of_the_unit_vectors_with_sigma_squared_one_over_g(g):
    # Page "Why the dot product": QK-norm's softmax(g cos theta) is the kernel with sigma^2 = 1/g.
    rng = np.random.default_rng(int(g * 10))
    Q, K = rng.standard_normal((4, 6)) * 3, rng.standard_normal((9, 6)) * rng.uniform(0.1, 5, (9, 1))
    Q_hat = Q / np.linalg.norm(Q, axis=1, keepdims=True)
    K_hat = K / np.linalg.norm(K, axis=1, keepdims=True)
    A_qk_norm = torch.softmax(g * torch.as_tensor(Q_hat @ K_hat.T), dim=-1).numpy()
    np.testing.assert_allclose(gaussian_kernel_weights(Q_hat, K_hat, g**-0.5), A_qk_norm, atol=1e-12)


def test_additive_scores_spread_is_set_by_the_hidden_width_not_by_d_k():
    # With variance-preserving projections the pre-activations have the same distribution at
    # every d_k, so the scores' spread does not grow with d_k (unlike q . k).
    rng = np.random.default_rng(9)
    spreads, dots = [], []
    for d_k in (8, 128, 2048):
        sd = []
        for _ in range(16):  # one draw of the weights moves the spread a fair amount
            Q, K = rng.standard_normal((32, d_k)), rng.standard_normal((32, d_k))
            W_q = rng.standard_normal((d_k, 16)) / np.sqrt(d_k)
            W_k = rng.standard_normal((d_k, 16)) / np.sqrt(d_k)
            sd.append(additive_scores(Q, K, W_q, W_k, np.ones(16) / 4.0).std())
        spreads.append(np.mean(sd))
        dots.append((Q @ K.T).std())
    assert max(spreads) / min(spreads) < 1.15
    assert dots[-1] / dots[0] > 10  # sqrt(2048 / 8) = 16
