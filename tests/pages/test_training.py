"""The training experiment: every number the prose quotes, recomputed independently."""

from __future__ import annotations

import math
import re
import runpy
import shutil
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attention
from attention import checkers, measure
from attention.checkers import (
    check_attention_with_temperature,
    check_scaled_score_moments,
    check_softmax_jacobian,
)
from tests.glue import executed_notebook, glued, glued_number
from tests.harness import HTML, ROOT
from tests.pages._common import (
    CHAPTERS,
    g,
    g_bool,
    g_text,
    page_cell,
    softmax_rows,
    solution_namespace,
    torch_softmax_attention,
)


# --- page 3: the training run ----------------------------------------------------------

@pytest.fixture(scope="module")
def training_runs():
    from attention.training import train_retrieval_head

    sgd = {(s, lr): train_retrieval_head(512, scaled=s, optimizer="sgd", lr=lr, steps=300)
           for s in (True, False) for lr in (0.3, 1.0, 3.0)}
    adam = {s: train_retrieval_head(512, scaled=s, optimizer="adam", lr=0.01, steps=300) for s in (True, False)}
    return sgd, adam


def _final(losses):
    return losses[-20:].mean()


def _steps_to(losses, level=0.1):
    below = np.flatnonzero(losses < level)
    return int(below[0]) + 1 if below.size else None


def test_training_glued_losses_equal_a_fresh_rerun(training_runs):
    sgd, adam = training_runs
    page = "saturation"
    assert g(page, "train_lr") == 3.0
    assert g(page, "train_first_scaled") == pytest.approx(sgd[(True, 3.0)][0], rel=1e-9)
    assert g(page, "train_first_unscaled") == pytest.approx(sgd[(False, 3.0)][0], rel=1e-9)
    assert g(page, "train_sgd_scaled") == pytest.approx(_final(sgd[(True, 3.0)]), rel=1e-9)
    assert g(page, "train_sgd_unscaled") == pytest.approx(_final(sgd[(False, 3.0)]), rel=1e-9)
    assert g(page, "train_sgd_scaled_steps") == _steps_to(sgd[(True, 3.0)])
    best = min((0.3, 1.0, 3.0), key=lambda lr: _final(sgd[(False, lr)]))
    assert g(page, "train_best_lr_unscaled") == best
    assert g(page, "train_best_unscaled") == pytest.approx(_final(sgd[(False, best)]), rel=1e-9)
    assert g(page, "train_best_unscaled_steps") == _steps_to(sgd[(False, best)])
    assert g(page, "train_scaled_steps_same_lr") == _steps_to(sgd[(True, best)])
    assert g(page, "train_worst_scaled") == pytest.approx(max(_final(sgd[(True, lr)]) for lr in (0.3, 1.0, 3.0)), rel=1e-9)
    assert g(page, "train_adam_lr") == 0.01
    assert g(page, "train_adam_scaled") == pytest.approx(_final(adam[True]), rel=1e-9)
    assert g(page, "train_adam_unscaled") == pytest.approx(_final(adam[False]), rel=1e-9)
    assert g(page, "train_adam_unscaled_steps") == _steps_to(adam[False])


def test_scaled_head_learns_with_sgd_and_unscaled_head_stalls_at_the_same_rate(training_runs):
    sgd, _ = training_runs
    assert _final(sgd[(True, 3.0)]) < 0.01
    assert _final(sgd[(False, 3.0)]) > 1.0
    assert all(_final(sgd[(True, lr)]) < 0.05 for lr in (0.3, 1.0, 3.0))


def test_adam_largely_rescues_the_unscaled_head(training_runs):
    _, adam = training_runs
    assert _final(adam[False]) < 0.1
    assert _final(adam[True]) < 0.01


def test_first_training_loss_matches_a_numpy_forward_pass():
    """The task as the page describes it, recomputed in NumPy from the same random draws."""
    torch = pytest.importorskip("torch")
    from attention.training import RetrievalTask, train_retrieval_head

    task = RetrievalTask()
    for scaled in (True, False):
        gen = torch.Generator().manual_seed(0)
        W_Q = (torch.randn(task.d_model, 512, generator=gen) / math.sqrt(task.d_model)).double().numpy()
        W_K = (torch.randn(task.d_model, 512, generator=gen) / math.sqrt(task.d_model)).double().numpy()
        X = torch.randn(task.batch, task.n_keys, task.d_model, generator=gen).double().numpy()
        V = torch.randn(task.batch, task.n_keys, task.d_v, generator=gen).double().numpy()
        target = torch.randint(task.n_keys, (task.batch,), generator=gen).numpy()
        rows = np.arange(task.batch)
        c = 1 / math.sqrt(512) if scaled else 1.0
        S = c * np.einsum("bd,btd->bt", X[rows, target] @ W_Q, X @ W_K)
        O = np.einsum("bt,btv->bv", softmax_rows(S), V)
        want = np.mean((O - V[rows, target]) ** 2)
        got = train_retrieval_head(512, scaled=scaled, steps=1)[0]
        assert got == pytest.approx(want, rel=1e-4)
