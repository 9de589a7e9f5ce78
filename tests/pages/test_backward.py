"""The backward pass: every number the prose quotes, recomputed independently."""

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


PAGE5 = "backward"

# --- page 5: the backward pass -----------------------------------------------------------



def test_D_identity_and_library_agreement_are_at_rounding_level():
    rng = np.random.default_rng(7)
    Q, K, V, dO = (rng.standard_normal(s) for s in ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 3), (2, 3, 5, 3)))
    O, A = torch_softmax_attention(Q, K, V)
    dA = dO @ np.swapaxes(V, -1, -2)
    assert np.abs(np.sum(A * dA, -1) - np.sum(dO * O, -1)).max() < 1e-12
    assert 0 <= g(PAGE5, "D_identity_err") < 1e-12
    assert 0 <= g(PAGE5, "library_backward_err") < 1e-12


def test_masked_scores_receive_no_gradient():
    rng = np.random.default_rng(7)
    Q, K, V, dO = (rng.standard_normal(s) for s in ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 3), (2, 3, 5, 3)))
    q, k, v = (torch.tensor(x, requires_grad=True) for x in (Q, K, V))
    mask = torch.ones(5, 6, dtype=torch.bool).tril()
    F.scaled_dot_product_attention(q, k, v, attn_mask=mask).backward(torch.from_numpy(dO))
    assert float(k.grad[..., 5, :].abs().max()) == 0.0 and float(v.grad[..., 5, :].abs().max()) == 0.0
    assert g(PAGE5, "masked_dS_max") == 0.0 and g(PAGE5, "unseen_key_grad") == 0.0


def test_backward_does_twice_the_forward_matrix_product_flops():
    T_q, T_k, d_k, d_v = 512, 512, 64, 64
    forward = [(T_q, d_k, T_k), (T_q, T_k, d_v)]  # (m, k, n) of each product: Q K^T, A V
    backward = [(T_k, T_q, d_v), (T_q, d_v, T_k), (T_q, T_k, d_k), (T_k, T_q, d_k)]  # dV, dA, dQ, dK
    flops = lambda shapes: sum(2 * m * k_ * n for m, k_, n in shapes)  # noqa: E731
    assert flops(backward) / flops(forward) == g(PAGE5, "flop_ratio") == 2.0


def test_measured_backward_forward_ratios_agree_with_the_glued_times():
    s = {k: g(PAGE5, f"cost_{k}_s") for k in ("numpy_forward", "numpy_backward", "torch_forward",
                                              "torch_backward", "torch_math_forward", "torch_math_backward")}
    assert all(v > 0 for v in s.values())
    assert g(PAGE5, "numpy_bwd_ratio") == pytest.approx(s["numpy_backward"] / s["numpy_forward"])
    assert g(PAGE5, "torch_bwd_ratio") == pytest.approx(s["torch_backward"] / s["torch_forward"])
    assert g(PAGE5, "torch_math_bwd_ratio") == pytest.approx(s["torch_math_backward"] / s["torch_math_forward"])
    assert (g(PAGE5, "cost_T"), g(PAGE5, "cost_heads")) == (512, 4)


def test_memory_of_A_against_O_and_the_log_sum_exp():
    assert g(PAGE5, "A_gib_per_layer") == 32 * 8192**2 * 2 / 2**30 == 4.0
    assert g(PAGE5, "A_gib_all_layers") == 128.0
    assert g(PAGE5, "OL_mib_per_layer") == pytest.approx((32 * 8192 * 128 * 2 + 32 * 8192 * 4) / 2**20)


def test_recomputing_A_from_the_log_sum_exp_and_the_tiled_backward_are_exact():
    s = torch.randn(5, 6, dtype=torch.float64)
    assert float((torch.exp(s - torch.logsumexp(s, -1, keepdim=True)) - torch.softmax(s, -1)).abs().max()) < 1e-12
    assert 0 <= g(PAGE5, "recompute_err") < 1e-12
    assert 0 <= g(PAGE5, "tiled_backward_err") < 1e-12


def test_scale_reaches_dQ_but_not_dV():
    d_k = int(g(PAGE5, "scale_d_k"))
    rng = np.random.default_rng(3)
    Q, K, V, dO = (rng.standard_normal(s) for s in ((8, d_k), (8, d_k), (8, 4), (8, 4)))
    grads = []
    for c, q_scale in ((1 / math.sqrt(d_k), 1.0), (1 / d_k, math.sqrt(d_k))):
        q, k, v = (torch.tensor(x, requires_grad=True) for x in (q_scale * Q, K, V))
        o = torch.softmax(c * q @ k.T, -1) @ v
        o.backward(torch.from_numpy(dO))
        grads.append((q.grad.norm(), k.grad.norm(), v.grad.norm()))
    (q1, k1, v1), (q2, k2, v2) = grads
    assert g(PAGE5, "scale_dQ_ratio") == pytest.approx(float(q2 / q1), rel=1e-9) == pytest.approx(1 / math.sqrt(d_k))
    assert g(PAGE5, "scale_dK_ratio") == pytest.approx(float(k2 / k1), rel=1e-9)
    assert g(PAGE5, "scale_dV_ratio") == pytest.approx(float(v2 / v1), rel=1e-9) == pytest.approx(1.0)


def _central_differences(f, X, eps=1e-6):
    grad = np.zeros_like(X)
    for idx in np.ndindex(X.shape):
        Xp, Xm = X.copy(), X.copy()
        Xp[idx] += eps
        Xm[idx] -= eps
        grad[idx] = (f(Xp) - f(Xm)) / (2 * eps)
    return grad


def test_gradient_checks_agree_with_independent_central_differences():
    rng = np.random.default_rng(11)
    Q, K, V = rng.standard_normal((5, 4)), rng.standard_normal((6, 4)), rng.standard_normal((6, 3))
    G = rng.standard_normal((5, 3))
    mask = np.tril(np.ones((5, 6), dtype=bool))
    for name, m in (("numeric_rel_err_nomask", None), ("numeric_rel_err_mask", mask)):
        def loss(Q_, K_, V_):
            return float(np.sum(torch_softmax_attention(Q_, K_, V_, m)[0] * G))
        numeric = _central_differences(lambda X: loss(X, K, V), Q)
        dQ, _, _ = attention.attention_backward(Q, K, V, G, mask=m)
        assert np.abs(dQ - numeric).max() / np.abs(numeric).max() < 1e-7
        assert 0 < g(PAGE5, name) < 1e-7
    assert 0 < g(PAGE5, "autograd_err_fp32") < 1e-5
    assert 0 <= g(PAGE5, "autograd_err_fp64") < 1e-12
    assert g_bool(PAGE5, "gradcheck_nomask") and g_bool(PAGE5, "gradcheck_mask")
    assert 0 <= g(PAGE5, "builtin_backward_err") < 1e-12


def test_backward_reference_solution_passes_its_checker_and_wrong_ones_fail():
    namespace = {"np": np, "glue": lambda *a, **k: None,
                 "check_attention_backward": checkers.check_attention_backward}
    exec(page_cell(PAGE5, "def reference_attention_backward"), namespace)
    reference = namespace["reference_attention_backward"]
    assert checkers.check_attention_backward(reference, verbose=False)
    assert g_bool(PAGE5, "ex7_reference_passes")

    def forgets_the_scale(Q, K, V, dO, mask=None):
        dQ, dK, dV = reference(Q, K, V, dO, mask)
        return dQ * np.sqrt(Q.shape[-1]), dK * np.sqrt(Q.shape[-1]), dV

    def forgets_D(Q, K, V, dO, mask=None):
        c = 1 / np.sqrt(Q.shape[-1])
        _, A = torch_softmax_attention(Q, K, V, mask)
        dS = A * (dO @ np.swapaxes(V, -1, -2))  # the softmax's "- D" term left out
        return c * dS @ K, c * np.swapaxes(dS, -1, -2) @ Q, np.swapaxes(A, -1, -2) @ dO

    assert not checkers.check_attention_backward(forgets_the_scale, verbose=False)
    assert not checkers.check_attention_backward(forgets_D, verbose=False)
