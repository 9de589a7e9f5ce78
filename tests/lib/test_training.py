"""attention.training: the vectorised trainer is R separate runs, and the task is as documented."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attention.training import (
    RetrievalTask,
    TrainedHeads,
    _scores,
    retrieval_attention,
    train_retrieval_head,
    train_retrieval_heads,
)

SHORT = RetrievalTask(steps=30)


def _softmax(S):
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# The vectorised trainer equals separate runs ------------------------------------------------


# Learning rates inside each head's working range, where a run is not chaotic: two runs that
# differ by rounding stay within rounding of each other (far outside it, a saturated head can
# amplify a difference of 1e-16 to 1e-1 within a hundred steps).
DOT_CASES = {
    "sgd": [(64, 1 / 8, 0.3), (64, 1.0, 0.1), (64, 1 / 64, 30.0), (16, 1 / 4, 1.0)],
    "adam": [(64, 1 / 8, 0.01), (64, 1.0, 0.003), (64, 1 / 64, 0.03), (16, 1.0, 0.01)],
}


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_vectorised_dot_product_runs_equal_separate_torch_optim_runs(optimizer):
    cases = DOT_CASES[optimizer]
    for d_k in {d for d, _, _ in cases}:
        mine = [(c, lr) for d, c, lr in cases if d == d_k]
        many = train_retrieval_heads(d_k, [lr for _, lr in mine], [c for c, _ in mine],
                                     optimizer=optimizer, task=SHORT, dtype=torch.float64)
        assert many.losses.shape == (len(mine), SHORT.steps)
        for r, (c, lr) in enumerate(mine):
            one = train_retrieval_head(d_k, lr, c, optimizer=optimizer, task=SHORT,
                                       dtype=torch.float64)
            np.testing.assert_allclose(many.losses[r], one, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("optimizer, lrs", [("sgd", [0.3, 1.0]), ("adam", [0.003, 0.01])])
def test_vectorised_additive_runs_equal_separate_torch_optim_runs(optimizer, lrs):
    many = train_retrieval_heads(32, lrs, score="additive", optimizer=optimizer, task=SHORT,
                                 dtype=torch.float64)
    for r, lr in enumerate(lrs):
        one = train_retrieval_head(32, lr, score="additive", optimizer=optimizer, task=SHORT,
                                   dtype=torch.float64)
        np.testing.assert_allclose(many.losses[r], one, rtol=1e-9, atol=1e-12)


def test_vectorised_runs_in_float32_stay_within_rounding_of_separate_runs():
    many = train_retrieval_heads(64, [0.3], [1 / 8], task=SHORT)
    one = train_retrieval_head(64, 0.3, 1 / 8, task=SHORT)
    assert np.abs(many.losses[0] - one).max() < 1e-5


def test_a_diverging_run_leaves_the_others_untouched():
    together = train_retrieval_heads(16, [0.5, 1e30], [0.25, 1e30], task=SHORT)
    alone = train_retrieval_heads(16, [0.5], [0.25], task=SHORT)
    assert not np.isfinite(together.losses[1]).all() or together.losses[1, -1] > 1.0
    # Equal up to float32 rounding: stacking two runs instead of one may change the order in
    # which a matrix product sums, never which numbers it sums.
    np.testing.assert_allclose(together.losses[0], alone.losses[0], rtol=1e-5)


def test_runs_with_one_seed_share_their_start_and_their_batches():
    # Same scale, different learning rates: identical first losses (same start, same batch).
    out = train_retrieval_heads(32, [0.01, 0.1, 1.0], [1 / math.sqrt(32)] * 3, task=SHORT)
    assert out.losses[0, 0] == out.losses[1, 0] == out.losses[2, 0]
    # A different seed changes both.
    other = train_retrieval_heads(32, [0.01], [1 / math.sqrt(32)], task=SHORT, seed=1)
    assert other.losses[0, 0] != out.losses[0, 0]


def test_training_is_deterministic():
    a = train_retrieval_heads(64, [0.3, 0.01], [0.125, 1.0], task=SHORT)
    b = train_retrieval_heads(64, [0.3, 0.01], [0.125, 1.0], task=SHORT)
    np.testing.assert_array_equal(a.losses, b.losses)
    for name in a.params:
        assert torch.equal(a.params[name], b.params[name])


def test_trained_heads_hold_final_weights_stacked_by_run():
    out = train_retrieval_heads(8, [0.1, 0.2, 0.3], [1.0] * 3, task=SHORT)
    assert isinstance(out, TrainedHeads)
    assert set(out.params) == {"W_Q", "W_K"}
    assert out.params["W_Q"].shape == (3, SHORT.d_model, 8)
    add = train_retrieval_heads(8, [0.1], score="additive", task=SHORT)
    assert {k: tuple(v.shape) for k, v in add.params.items()} == {
        "W_Q": (1, SHORT.d_model, 8), "W_K": (1, SHORT.d_model, 8), "w": (1, 8), "b": (1, 8)}


def test_training_with_sgd_reduces_the_loss_of_a_scaled_head():
    losses = train_retrieval_heads(64, [1.0], [1 / 8], task=RetrievalTask(steps=150)).losses[0]
    assert losses[-20:].mean() < 0.1 * losses[:5].mean()


# The task as documented ------------------------------------------------------------------


def test_first_loss_matches_a_numpy_forward_pass_from_the_documented_draws():
    """W_Q, W_K, then X, V, j* from one seeded generator, in that order."""
    task = RetrievalTask(steps=1)
    for c in (1 / math.sqrt(64), 1.0, 1 / 64):
        gen = torch.Generator().manual_seed(3)
        W_Q = (torch.randn(task.d_model, 64, generator=gen) / math.sqrt(task.d_model)).double().numpy()
        W_K = (torch.randn(task.d_model, 64, generator=gen) / math.sqrt(task.d_model)).double().numpy()
        X = torch.randn(task.batch, task.T_k, task.d_model, generator=gen).double().numpy()
        V = torch.randn(task.batch, task.T_k, task.d_v, generator=gen).double().numpy()
        j = torch.randint(task.T_k, (task.batch,), generator=gen).numpy()
        rows = np.arange(task.batch)
        S = c * np.einsum("bd,btd->bt", X[rows, j] @ W_Q, X @ W_K)
        O = np.einsum("bt,btv->bv", _softmax(S), V)
        want = np.mean((O - V[rows, j]) ** 2)
        got = train_retrieval_heads(64, [0.1], [c], task=task, seed=3).losses[0, 0]
        assert got == pytest.approx(want, rel=1e-5)


def test_uniform_weights_give_loss_one_minus_one_over_T_k():
    task = RetrievalTask(batch=8192, steps=1)
    loss = train_retrieval_heads(16, [1e-9], [1e-9], task=task).losses[0, 0]
    # Sampling error of a mean over 8192 x 16 squared normals: about 0.005.
    assert loss == pytest.approx(1 - 1 / task.T_k, abs=0.02)


def test_one_hot_weights_on_a_wrong_key_give_loss_about_two():
    task = RetrievalTask(batch=8192, steps=1)
    gen = torch.Generator().manual_seed(0)
    V = torch.randn(task.batch, task.T_k, task.d_v, generator=gen)
    wrong = V[:, 1] - V[:, 0]  # all weight on key 1, the answer at key 0
    assert (wrong**2).mean().item() == pytest.approx(2.0, abs=0.05)


def test_additive_score_without_bias_is_odd_and_with_bias_is_not():
    gen = torch.Generator().manual_seed(0)
    params = {"W_Q": torch.randn(8, 16, generator=gen), "W_K": torch.randn(8, 16, generator=gen),
              "w": torch.randn(16, generator=gen), "b": torch.zeros(16)}
    X = torch.randn(5, 6, 8, generator=gen)
    j = torch.randint(6, (5,), generator=gen)
    S = _scores(params, X, j, None, "additive")
    torch.testing.assert_close(_scores(params, -X, j, None, "additive"), -S)
    params["b"] = torch.randn(16, generator=gen)
    assert not torch.allclose(_scores(params, -X, j, None, "additive"),
                              -_scores(params, X, j, None, "additive"))


def test_retrieval_attention_rows_are_probabilities_and_match_the_formula():
    gen = torch.Generator().manual_seed(0)
    params = {"W_Q": torch.randn(8, 4, generator=gen), "W_K": torch.randn(8, 4, generator=gen)}
    X = torch.randn(3, 5, 8, generator=gen)
    j = torch.tensor([0, 4, 2])
    A = retrieval_attention(params, X, j, 0.5)
    assert A.shape == (3, 5)
    torch.testing.assert_close(A.sum(-1), torch.ones(3))
    q = X[torch.arange(3), j] @ params["W_Q"]
    S = 0.5 * np.einsum("bk,btk->bt", q.numpy(), (X @ params["W_K"]).numpy())
    np.testing.assert_allclose(A.numpy(), _softmax(S), rtol=1e-5, atol=1e-7)


def test_the_1_over_d_k_head_starts_nearly_uniform_and_the_unscaled_one_saturated():
    gen = torch.Generator().manual_seed(0)
    d_model, d_k = 32, 1024
    params = {"W_Q": torch.randn(d_model, d_k, generator=gen) / math.sqrt(d_model),
              "W_K": torch.randn(d_model, d_k, generator=gen) / math.sqrt(d_model)}
    X = torch.randn(256, 16, d_model, generator=gen)
    j = torch.randint(16, (256,), generator=gen)
    top = {c: retrieval_attention(params, X, j, c).max(-1).values.mean().item()
           for c in (1.0, 1 / math.sqrt(d_k), 1 / d_k)}
    assert top[1.0] > 0.9
    assert top[1 / d_k] < 1.5 / 16
    assert top[1 / d_k] < top[1 / math.sqrt(d_k)] < top[1.0]
