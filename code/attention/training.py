"""Training one attention head to retrieve: does the score scale matter for learning?

Page "Does the scale matter for training?" (``chapters/training.md``) explains the task
and runs the sweep. The task: each example is a sequence of ``T_k`` random tokens x_j
(rows of X, width ``d_model``) with random values v_j (width ``d_v``); the query token is
a copy of one of them, x_{j*}. The head computes q = x_{j*} W_Q and k_j = x_j W_K (width
``d_k``), scores s_j, weights a = softmax(s) and output o = a V, and is trained on the
mean squared error between o and v_{j*}. It has learned the task when each token's query
points along its own key.

Two kinds of score:

* ``"dot"``: s_j = c q.k_j. The scale c is 1/sqrt(d_k) for the scaled head, 1 for the
  unscaled one, 1/d_k for the "1/d_k scale".
* ``"additive"`` (after Bahdanau et al. 2014, who write their score
  w . tanh(q W_q + k_j W_k) without a bias): s_j = w . tanh(q + k_j + b), with w and b of width d_k. Bahdanau's two matrices
  W_q, W_k would multiply q and k before the tanh;
  since q and k are themselves linear in the tokens, those products are folded into W_Q
  and W_K. The bias b matters here: without it the score is an odd function of (q, k),
  so a head that ranks x's own key first for the query x must rank it last for -x.

W_Q and W_K start with N(0, 1/d_model) entries, so q and k have unit-variance entries;
w starts with N(0, 1/d_k) entries and b at zero. Random numbers come from a seeded
``torch.Generator`` in this order: W_Q, W_K, w (additive only), then for every step X, V
and the targets j*. So all runs with the same seed and score start from the same W_Q, W_K
(and w) and see the same fresh batch at every step: two dot-product heads of a sweep
differ only in their scale or learning rate. An additive run starts from the same W_Q and
W_K as a dot-product run of its seed, but its draw of w moves the generator on, so it sees
other batches.

Two trainers compute the same thing. :func:`train_retrieval_head` is one run written
plainly with ``torch.optim``: the page's loop ``train_one``, with Adam available too.
:func:`train_retrieval_heads` trains many runs at once, which is what makes a sweep fit
in a page's time budget: their weights are stacked along a leading run dimension, their
losses are summed (so each run's gradient is its own) and each run steps with its own
learning rate. For dot-product scores it also multiplies W_Q W_K^T first, a
d_model x d_model matrix: the same function and the same gradients, at a cost that no
longer grows with the batch times the number of keys times d_k. The two agree up to
float rounding, since they sum in different orders; at learning rates where a head's
training is chaotic (the unscaled head near the top of its working range, for one), such
differences grow over the run, so compare the two at rates where it is not.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ._validate import (
    check_choice,
    check_index_tensor,
    check_integer,
    check_positive,
    check_positive_list,
    check_tensor,
    check_torch_float_dtype,
)
from .measure import threads as _threads  # results then do not depend on the core count

__all__ = [
    "RetrievalTask",
    "TrainedHeads",
    "retrieval_attention",
    "train_retrieval_head",
    "train_retrieval_heads",
]

SCORES = ("dot", "additive")
OPTIMIZERS = ("sgd", "adam")


class RetrievalTask(NamedTuple):
    """Sizes of the retrieval task and of a training run."""

    d_model: int = 32  # width of the tokens x_j
    T_k: int = 16  # keys (tokens) per example
    d_v: int = 16  # width of the values v_j
    batch: int = 32  # examples per step, drawn fresh at every step
    steps: int = 200  # optimizer steps


class TrainedHeads(NamedTuple):
    """What :func:`train_retrieval_heads` returns.

    ``losses``: float64 array (R, steps), the training loss of each run at each step (NaN
    or inf once a run has diverged). ``params``: the final weights, each stacked along the
    run dimension R: ``W_Q``, ``W_K`` (R, d_model, d_k), and for additive scores ``w``,
    ``b`` (R, d_k).
    """

    losses: np.ndarray
    params: dict


# Input checks ----------------------------------------------------------------------------


def _check_task(task) -> RetrievalTask:
    if not isinstance(task, RetrievalTask):
        raise TypeError(f"task must be a RetrievalTask, got {type(task).__name__}")
    for name, value in task._asdict().items():
        check_integer(value, f"task.{name}")
    if task.T_k < 2:
        raise ValueError(f"task.T_k must be at least 2 (one key is nothing to choose from), "
                         f"got {task.T_k}")
    return task


def _check_score_and_scale(score, c, name: str = "c"):
    """Dot-product heads need a scale c; additive ones have none."""
    check_choice(score, "score", SCORES)
    if score == "additive" and c is not None:
        raise ValueError(f"an additive score has no scale: pass {name}=None")
    if score == "dot" and c is None:
        raise ValueError(f"a dot-product score needs its scale {name} (c = 1/sqrt(d_k) "
                         "for the scaled head)")


# The task and the head -------------------------------------------------------------------


def _initial_params(task: RetrievalTask, d_k: int, score: str, gen, dtype) -> dict:
    import torch

    params = {
        "W_Q": torch.randn(task.d_model, d_k, generator=gen, dtype=dtype) / math.sqrt(task.d_model),
        "W_K": torch.randn(task.d_model, d_k, generator=gen, dtype=dtype) / math.sqrt(task.d_model),
    }
    if score == "additive":
        params["w"] = torch.randn(d_k, generator=gen, dtype=dtype) / math.sqrt(d_k)
        params["b"] = torch.zeros(d_k, dtype=dtype)
    return params


def _batch(task: RetrievalTask, gen, dtype):
    import torch

    X = torch.randn(task.batch, task.T_k, task.d_model, generator=gen, dtype=dtype)  # (B, T_k, d_model)
    V = torch.randn(task.batch, task.T_k, task.d_v, generator=gen, dtype=dtype)  # (B, T_k, d_v)
    target = torch.randint(task.T_k, (task.batch,), generator=gen)  # (B,): j* of each example
    return X, V, target


def retrieval_attention(params: dict, X, target, c: float | None = None, score: str = "dot"):
    """Attention weights A (B, T_k) of one head on a batch of the retrieval task.

    ``params``: ``W_Q``, ``W_K`` (d_model, d_k) and, for ``score="additive"``, ``w``, ``b``
    (d_k,), as torch tensors (one run, no run dimension). ``X`` (B, T_k, d_model) holds
    the tokens and ``target`` (B,) the index j* of each example's query token. ``c`` is the
    scale of a dot-product head and must be None for an additive one.
    """
    import torch

    _check_score_and_scale(score, c)
    c = None if c is None else check_positive(c, "c")
    needed = ("W_Q", "W_K", "w", "b") if score == "additive" else ("W_Q", "W_K")
    if not isinstance(params, dict) or not set(needed) <= set(params):
        raise TypeError(f"params must be a dict of torch tensors with keys {needed}")
    for name in needed:
        check_tensor(params[name], f"params[{name!r}]")
    check_tensor(X, "X")
    if X.dim() != 3 or params["W_Q"].shape[0] != X.shape[-1]:
        raise ValueError(f"X must have shape (B, T_k, d_model) with d_model the "
                         f"{params['W_Q'].shape[0]} rows of W_Q, got {tuple(X.shape)}")
    check_index_tensor(target, "target", X.shape[:1], X.shape[1], "T_k")
    return torch.softmax(_scores(params, X, target, c, score), dim=-1)


def _scores(params, X, target, c, score):
    """Scores S (B, T_k) of one head: the forward pass as the page writes it."""
    import torch

    x_q = X[torch.arange(X.shape[0]), target]  # (B, d_model): the query token x_{j*}
    q = x_q @ params["W_Q"]  # (B, d_k)
    K = X @ params["W_K"]  # (B, T_k, d_k)
    if score == "dot":
        return c * torch.einsum("bk,btk->bt", q, K)  # (B, T_k)
    H = torch.tanh(q[:, None, :] + K + params["b"])  # (B, T_k, d_k)
    return H @ params["w"]  # (B, T_k)


# One run, plainly --------------------------------------------------------------------------


def train_retrieval_head(d_k: int, lr: float, c: float | None = None, *, score: str = "dot",
                         optimizer: str = "sgd", task: RetrievalTask = RetrievalTask(),
                         seed: int = 0, dtype=None, threads: int = 1) -> np.ndarray:
    """Train one head on the retrieval task; return its loss at every step.

    ``c`` is the scale of a dot-product head (``score="dot"``), e.g. ``1 / math.sqrt(d_k)``;
    pass None for ``score="additive"``. ``optimizer``: ``"sgd"`` (plain gradient descent,
    no momentum) or ``"adam"`` (torch's defaults besides ``lr``). ``dtype`` is
    ``torch.float32`` (the default) or ``torch.float64``; torch runs on ``threads`` threads.
    Returns a float64 array of shape (task.steps,).
    """
    import torch

    d_k, lr = check_integer(d_k, "d_k"), check_positive(lr, "lr")
    _check_score_and_scale(score, c)
    c = None if c is None else check_positive(c, "c")
    check_choice(optimizer, "optimizer", OPTIMIZERS)
    task, seed = _check_task(task), check_integer(seed, "seed", minimum=0)
    dtype = check_torch_float_dtype(torch.float32 if dtype is None else dtype)
    with _threads(check_integer(threads, "threads")):
        gen = torch.Generator().manual_seed(seed)
        params = {name: p.requires_grad_() for name, p in
                  _initial_params(task, d_k, score, gen, dtype).items()}
        make = torch.optim.SGD if optimizer == "sgd" else torch.optim.Adam
        opt = make(list(params.values()), lr=lr)
        losses = np.empty(task.steps)
        for step in range(task.steps):
            X, V, target = _batch(task, gen, dtype)
            A = torch.softmax(_scores(params, X, target, c, score), dim=-1)  # (B, T_k)
            O = torch.einsum("bt,btv->bv", A, V)  # (B, d_v)
            loss = ((O - V[torch.arange(task.batch), target]) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[step] = loss.item()
    return losses


# Many runs at once -----------------------------------------------------------------------------


def _stacked_scores(P, x_q, X, c, score):
    """Scores (R, B, T_k) of R stacked heads on one shared batch."""
    import torch

    if score == "dot":
        # s_j = c x_q W_Q W_K^T x_j^T: form W_Q W_K^T (R, d_model, d_model) first.
        M = c[:, None, None] * (P["W_Q"] @ P["W_K"].transpose(1, 2))
        return torch.einsum("bd,rde,bte->rbt", x_q, M, X)
    B, T_k, d_model = X.shape
    R, _, d_k = P["W_K"].shape
    q = x_q @ P["W_Q"]  # (R, B, d_k)
    K = X.reshape(B * T_k, d_model) @ P["W_K"]  # (R, B T_k, d_k)
    H = torch.tanh(K.view(R, B, T_k, d_k) + (q + P["b"][:, None, :])[:, :, None, :])
    return (H.view(R, B * T_k, d_k) @ P["w"][:, :, None]).view(R, B, T_k)


def train_retrieval_heads(d_k: int, lrs, cs=None, *, score: str = "dot", optimizer: str = "sgd",
                          task: RetrievalTask = RetrievalTask(), seed: int = 0, dtype=None,
                          threads: int = 1) -> TrainedHeads:
    """Train R heads at once, run r with learning rate ``lrs[r]`` and scale ``cs[r]``.

    The same computation as R calls of :func:`train_retrieval_head` (same seed, so the same
    initial weights and batches), vectorised: the runs' weights are stacked along a leading
    run dimension, all R losses are computed in one pass and their sum is backpropagated
    (run r's weights reach only loss r, so each run gets exactly its own gradient), and each
    run steps with its own learning rate. SGD and Adam are written out, Adam with the
    arithmetic and defaults of ``torch.optim.Adam``, because ``torch.optim`` takes one
    learning rate per tensor. ``cs`` (length R) is needed for ``score="dot"`` and must be
    None for ``score="additive"``. Runs never mix: one that diverges (its loss becomes inf
    or NaN) leaves the others untouched. Returns a :class:`TrainedHeads`.
    """
    import torch

    d_k = check_integer(d_k, "d_k")
    lr_list = check_positive_list(lrs, "lrs", "run")
    R = len(lr_list)
    if score == "dot" and cs is not None:
        c_list = check_positive_list(cs, "cs", "run")
        if len(c_list) != R:
            raise ValueError(f"lrs and cs must have one entry per run: got {R} and {len(c_list)}")
    _check_score_and_scale(score, None if cs is None else 1.0, "cs")
    check_choice(optimizer, "optimizer", OPTIMIZERS)
    task, seed = _check_task(task), check_integer(seed, "seed", minimum=0)
    dtype = check_torch_float_dtype(torch.float32 if dtype is None else dtype)
    with _threads(check_integer(threads, "threads")):
        gen = torch.Generator().manual_seed(seed)
        P = {name: p.expand(R, *p.shape).clone().requires_grad_()  # (R, ...) each
             for name, p in _initial_params(task, d_k, score, gen, dtype).items()}
        lr = torch.tensor(lr_list, dtype=dtype)  # (R,)
        c = torch.tensor(c_list, dtype=dtype) if score == "dot" else None  # (R,)
        # Adam's running moments, and a work buffer so that no step allocates memory.
        moments = {name: (torch.zeros_like(p), torch.zeros_like(p), torch.empty_like(p))
                   for name, p in P.items()}
        rows = torch.arange(task.batch)
        losses = torch.empty(R, task.steps, dtype=torch.float64)
        for step in range(1, task.steps + 1):
            X, V, target = _batch(task, gen, dtype)
            S = _stacked_scores(P, X[rows, target], X, c, score)  # (R, B, T_k)
            A = torch.softmax(S, dim=-1)
            O = torch.einsum("rbt,btv->rbv", A, V)  # (R, B, d_v)
            loss = ((O - V[rows, target]) ** 2).mean(dim=(1, 2))  # (R,): one loss per run
            grads = torch.autograd.grad(loss.sum(), list(P.values()))
            with torch.no_grad():
                for (name, p), g in zip(P.items(), grads):
                    lr_p = lr.view(R, *([1] * (p.dim() - 1)))  # (R, 1, ...): one per run
                    if optimizer == "sgd":
                        p.sub_(g.mul_(lr_p))
                    else:
                        _adam_step(p, g, *moments[name], lr_p, step)
            losses[:, step - 1] = loss.detach().to(torch.float64)
    return TrainedHeads(losses.numpy(), {name: p.detach() for name, p in P.items()})


def _adam_step(p, g, m, v, work, lr, t: int, betas=(0.9, 0.999), eps=1e-8):
    """One Adam step in place: torch.optim.Adam's arithmetic, with a learning rate per run.

    ``m`` and ``v`` are the running moments, ``work`` a buffer of p's shape, ``lr`` the
    learning rates shaped to broadcast over p, ``t`` the step number (from 1).
    """
    import torch

    beta1, beta2 = betas
    m.lerp_(g, 1 - beta1)  # running mean of the gradient
    v.mul_(beta2).addcmul_(g, g, value=1 - beta2)  # running mean of its square
    torch.sqrt(v, out=work)
    work.div_(math.sqrt(1 - beta2**t)).add_(eps)  # sqrt(v / (1 - beta2^t)) + eps
    torch.div(m, work, out=work).mul_(lr)
    p.sub_(work, alpha=1 / (1 - beta1**t))
