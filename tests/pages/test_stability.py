"""Numerical stability and masks: every number the prose quotes, recomputed independently."""

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


PAGE4 = "stability"

# --- page 4: numerical stability and masks ----------------------------------------------



def test_float16_and_float32_overflow_thresholds_are_the_logs_of_their_largest_numbers():
    assert g(PAGE4, "fp16_max") == 65504.0 == float(torch.finfo(torch.float16).max)
    assert g(PAGE4, "fp16_cutoff") == pytest.approx(math.log(65504.0), rel=1e-12)
    assert round(g(PAGE4, "fp16_cutoff"), 2) == 11.09
    assert g(PAGE4, "fp32_cutoff") == pytest.approx(math.log(torch.finfo(torch.float32).max), rel=1e-9)
    assert round(g(PAGE4, "fp32_cutoff"), 2) == 88.72


def test_exp_of_12_is_finite_in_float64_but_infinite_in_float16():
    assert g(PAGE4, "exp12") == pytest.approx(162754.791419, rel=1e-9)
    assert math.isinf(float(torch.exp(torch.tensor(12.0, dtype=torch.float16))))
    assert math.isinf(g(PAGE4, "exp12_fp16")) and g(PAGE4, "exp12_fp16") > 0


def test_naive_float16_softmax_turns_the_winner_into_nan_and_the_stable_one_does_not():
    x = torch.tensor([12.0, 0.0, -3.0], dtype=torch.float16)
    naive = torch.exp(x) / torch.exp(x).sum()
    assert int(torch.isnan(naive).sum()) == g(PAGE4, "naive_fp16_nan") == 1
    stable = torch.softmax(x.double(), dim=0).half()
    assert float(stable[0]) == g(PAGE4, "fixed_fp16_top")


def test_underflowed_weight_is_exactly_zero_in_float32():
    assert float(torch.exp(torch.tensor(-200.0, dtype=torch.float32))) == 0.0 == g(PAGE4, "underflow_weight")
    assert g(PAGE4, "tiny_fp16") == 2.0**-24
    assert g(PAGE4, "tiny_fp16_log") == pytest.approx(-24 * math.log(2))
    assert g(PAGE4, "tiny_fp32_log") == pytest.approx(-149 * math.log(2))
    assert g(PAGE4, "sd_unscaled_512") == pytest.approx(22.627, abs=1e-3)


def test_exercise_4_weights_with_minus_infinity_and_with_zero():
    inf_w = [math.exp(2) / (math.exp(2) + math.exp(1)), math.exp(1) / (math.exp(2) + math.exp(1)), 0.0]
    z = math.exp(2) + math.exp(1) + 1.0
    zero_w = [math.exp(2) / z, math.exp(1) / z, 1.0 / z]
    for k in range(3):
        assert g(PAGE4, f"ex4_inf_{k}") == pytest.approx(inf_w[k], abs=1e-12)
        assert g(PAGE4, f"ex4_zero_{k}") == pytest.approx(zero_w[k], abs=1e-12)


def test_a_float16_running_sum_of_ones_stalls_at_2048():
    total = torch.tensor(0.0, dtype=torch.float16)
    for _ in range(4096):
        total = total + torch.tensor(1.0, dtype=torch.float16)
    assert float(total) == g(PAGE4, "running_sum_fp16") == 2048.0
    assert float(torch.tensor(2050.0, dtype=torch.float16)) - 2048.0 == g(PAGE4, "gap_at_2048") == 2.0
    assert g(PAGE4, "running_sum_fp32") == 4096.0


def test_online_normalizer_matches_the_two_pass_one():
    s = 5.0 * np.random.default_rng(4).standard_normal(1000)
    m, l = -math.inf, 0.0
    for x in s:  # the update of eq-online-update, one score at a time, in plain Python
        m_new = max(m, x)
        l = l * math.exp(m - m_new) + math.exp(x - m_new)
        m = m_new
    exact = math.fsum(math.exp(x - s.max()) for x in s)
    assert abs(l - exact) / exact < 1e-13
    assert 0 <= g(PAGE4, "online_rel_err") < 1e-13


def test_tiled_attention_matches_plain_attention_to_rounding():
    rng = np.random.default_rng(0)
    Q = rng.standard_normal((2, 4, 300, 32))
    K = rng.standard_normal((2, 4, 500, 32))
    V = rng.standard_normal((2, 4, 500, 16))
    O_ref, _ = torch_softmax_attention(Q, K, V)
    assert np.abs(attention.tiled_attention(Q, K, V, block_size=64) - O_ref).max() < 1e-12
    assert 0 <= g(PAGE4, "tiled_max_err") < 1e-12
    assert 0 <= g(PAGE4, "library_tiled_max_err") < 1e-12


def test_plain_attention_memory_is_quadratic_and_tiled_is_not():
    T, block = int(g(PAGE4, "memory_T_big")), int(g(PAGE4, "memory_block"))
    assert (T, block) == (4096, 256) and g(PAGE4, "memory_slope_from") == 1024
    Q, K, V = (np.random.default_rng(s).standard_normal((1, 1, T, 64), dtype=np.float32) for s in (1, 2, 3))
    plain = measure.peak_memory(lambda: attention.scaled_dot_product_attention(Q, K, V))
    tiled = measure.peak_memory(lambda: attention.tiled_attention(Q, K, V, block))
    MiB = 2**20
    assert g(PAGE4, "plain_peak_mib_big") == pytest.approx(plain / MiB, rel=0.05)
    assert g(PAGE4, "tiled_peak_mib_big") == pytest.approx(tiled / MiB, rel=0.2)
    assert plain >= 4 * T * T  # at least one T x T float32 matrix
    assert g(PAGE4, "plain_peak_per_matrix") == pytest.approx(g(PAGE4, "plain_peak_mib_big") * MiB / (4 * T * T))
    assert g(PAGE4, "memory_ratio_big") == pytest.approx(g(PAGE4, "plain_peak_mib_big") / g(PAGE4, "tiled_peak_mib_big"))
    assert 1.8 < g(PAGE4, "plain_memory_slope") < 2.1
    assert g(PAGE4, "tiled_memory_slope") < 1.0


def _mask_example():
    rng = np.random.default_rng(1)
    T, d_k = 6, 8
    Q, K, V = (rng.standard_normal((T, d_k)) for _ in range(3))
    return Q, K, V, np.tril(np.ones((T, T), dtype=bool))


def test_causal_mask_gives_future_keys_zero_weight_and_row_zero_is_one_hot():
    Q, K, V, M = _mask_example()
    _, A = torch_softmax_attention(Q, K, V, M)
    assert np.all(np.triu(A, k=1) == 0.0) and g(PAGE4, "mask_upper_max") == 0.0
    assert A[0, 0] == 1.0 == g(PAGE4, "mask_row0_first")
    assert 0 <= g(PAGE4, "mask_lib_err") < 1e-12
    assert g(PAGE4, "bias_equals_mask_err") == 0.0


def test_masking_with_zero_instead_of_minus_infinity_leaks_weight_to_the_future():
    Q, K, _, M = _mask_example()
    s = torch.from_numpy(Q @ K.T / math.sqrt(8)).masked_fill(~torch.from_numpy(M), 0.0)
    leak = float(torch.softmax(s, dim=-1)[0, 1:].sum())
    assert g(PAGE4, "mask_zero_leak") == pytest.approx(leak, rel=1e-9)


def test_fully_masked_row_is_nan_naively_and_zero_under_the_policy():
    row = torch.full((4,), float("-inf"))
    naive = torch.exp(row - row.max())
    assert int(torch.isnan(naive / naive.sum()).sum()) == g(PAGE4, "empty_row_nan") == 4
    Q, K, V, M = _mask_example()
    M = M.copy()
    M[2] = False
    out = F.scaled_dot_product_attention(*(torch.from_numpy(x) for x in (Q, K, V)), attn_mask=torch.from_numpy(M))
    assert float(out[2].abs().max()) == 0.0 == g(PAGE4, "torch_empty_row_abs")
    assert g(PAGE4, "torch_empty_row_nan") == 0
    assert g(PAGE4, "policy_row_abs") == 0.0
    assert g_text(PAGE4, "torch_version") == torch.__version__


def test_minus_1e9_and_added_finfo_min_overflow_float16():
    assert float(torch.tensor(-1e9).to(torch.float16)) == -math.inf == g(PAGE4, "big_neg_fp16")
    assert g(PAGE4, "big_neg_nan") == 4
    scores = torch.tensor([3.0, -20.0, 1.0, 0.5], dtype=torch.float16)
    added = scores + torch.finfo(torch.float16).min
    assert int(torch.isinf(added).sum()) == g(PAGE4, "min_added_inf") == 1
    replaced = torch.softmax(torch.full((4,), torch.finfo(torch.float16).min, dtype=torch.float16).float(), 0)
    assert float(replaced[0]) == g(PAGE4, "min_replaced_weight") == 0.25


def test_numpy_attention_reference_solution_passes_its_checker_and_wrong_ones_fail():
    namespace = {"np": np, "glue": lambda *a, **k: None,
                 "check_scaled_dot_product_attention": checkers.check_scaled_dot_product_attention}
    exec(page_cell(PAGE4, "def reference_scaled_dot_product_attention"), namespace)
    reference = namespace["reference_scaled_dot_product_attention"]
    assert checkers.check_scaled_dot_product_attention(reference, verbose=False)
    assert g_bool(PAGE4, "ex6_reference_passes")

    def unscaled(Q, K, V, mask=None):
        S = Q @ np.swapaxes(K, -1, -2)
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        A = np.exp(S - S.max(-1, keepdims=True))
        A /= A.sum(-1, keepdims=True)
        return A @ V, A

    def masks_with_zero(Q, K, V, mask=None):
        S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        if mask is not None:
            S = np.where(mask, S, 0.0)  # the mistake of exercise 4
        A = np.exp(S - S.max(-1, keepdims=True))
        A /= A.sum(-1, keepdims=True)
        return A @ V, A

    assert not checkers.check_scaled_dot_product_attention(unscaled, verbose=False)
    assert not checkers.check_scaled_dot_product_attention(masks_with_zero, verbose=False)
