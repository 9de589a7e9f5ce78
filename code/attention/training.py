"""A tiny training run: can one attention head learn to attend to the right key?

Used on the page "Saturation and the softmax Jacobian" (section "Does it matter for
training?"). The task: each example is a sequence of ``n_keys`` random tokens x_j with
random values v_j; the query token is a copy of one of them, x_{j*}. The head computes
q = x_{j*} W_Q, k_j = x_j W_K, scores s_j = c q.k_j, weights a = softmax(s) and output
o = sum_j a_j v_j, and is trained on the squared error between o and v_{j*}. It succeeds
when W_Q W_K^T learns to make a token's query point along its own key.

W_Q and W_K start with N(0, 1/d_model) entries, so q and k have unit-variance entries and
an unscaled score q.k has variance d_k, as on the page "The variance argument". Fresh
data is drawn at every step from a seeded generator: two runs give identical losses.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


class RetrievalTask(NamedTuple):
    """Sizes of the retrieval task (defaults keep one 300-step run under a second)."""

    d_model: int = 32  # width of the tokens x_j
    n_keys: int = 16  # keys per example
    d_v: int = 16  # width of the values v_j
    batch: int = 32  # examples per step


def train_retrieval_head(d_k: int, scaled: bool = True, optimizer: str = "sgd", lr: float = 1.0,
                         steps: int = 300, task: RetrievalTask = RetrievalTask(),
                         seed: int = 0) -> np.ndarray:
    """Train W_Q, W_K (d_model x d_k each) on the retrieval task; return the loss at every step.

    ``scaled`` multiplies the scores by c = 1/sqrt(d_k), otherwise c = 1. ``optimizer`` is
    ``"sgd"`` (plain gradient descent, no momentum) or ``"adam"`` (torch defaults besides
    ``lr``). The loss is the mean over the batch and the d_v output entries of
    (o - v_{j*})^2: about 1 when the weights are spread out, about 2 when the head is sure
    of a wrong key, 0 when it has learned the task. Runs on one CPU thread in float32.
    Returns a float64 array of shape (steps,).
    """
    import torch

    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be 'sgd' or 'adam', got {optimizer!r}")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: one thread is fastest and reproducible
    try:
        gen = torch.Generator().manual_seed(seed)
        d_model, n_keys, d_v, batch = task
        W_Q = (torch.randn(d_model, d_k, generator=gen) / math.sqrt(d_model)).requires_grad_()
        W_K = (torch.randn(d_model, d_k, generator=gen) / math.sqrt(d_model)).requires_grad_()
        params = [W_Q, W_K]
        opt = torch.optim.SGD(params, lr=lr) if optimizer == "sgd" else torch.optim.Adam(params, lr=lr)
        c = 1.0 / math.sqrt(d_k) if scaled else 1.0
        rows = torch.arange(batch)
        losses = np.empty(steps)
        for step in range(steps):
            X = torch.randn(batch, n_keys, d_model, generator=gen)  # tokens (B, T, d_model)
            V = torch.randn(batch, n_keys, d_v, generator=gen)  # values (B, T, d_v)
            target = torch.randint(n_keys, (batch,), generator=gen)  # j* for each example
            q = X[rows, target] @ W_Q  # (B, d_k): the query token is a copy of x_{j*}
            K = X @ W_K  # (B, T, d_k)
            S = c * torch.einsum("bd,btd->bt", q, K)  # (B, T)
            A = torch.softmax(S, dim=-1)  # (B, T)
            O = torch.einsum("bt,btv->bv", A, V)  # (B, d_v)
            loss = ((O - V[rows, target]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[step] = loss.item()
        return losses
    finally:
        torch.set_num_threads(threads)
