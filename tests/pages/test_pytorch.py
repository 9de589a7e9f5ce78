"""Attention in PyTorch: every number the prose quotes, recomputed independently."""

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


PAGE6 = "pytorch"

# --- page 6: PyTorch -----------------------------------------------------------------------



def test_readable_torch_attention_matches_the_builtin():
    from attention import torch as attention_torch
    torch.manual_seed(5)
    q, k, v = torch.randn(2, 4, 16, 8), torch.randn(2, 4, 12, 8), torch.randn(2, 4, 12, 8)
    mask = torch.rand(2, 1, 16, 12) > 0.3
    mask[..., 0] = True
    for kwargs in ({}, {"attn_mask": mask}, {"attn_mask": torch.randn(2, 4, 16, 12)}):
        err = (attention_torch.scaled_dot_product_attention(q, k, v, **kwargs)
               - F.scaled_dot_product_attention(q, k, v, **kwargs)).abs().max()
        assert float(err) < 1e-5
    assert 0 < g(PAGE6, "sdpa_max_err_page") < 1e-5
    assert 0 < g(PAGE6, "sdpa_max_err_lib") < 1e-5
    assert 0 <= g(PAGE6, "sdpa_half_err") < 2e-3
    assert g_text(PAGE6, "torch_version") == torch.__version__


def test_is_causal_aligns_the_triangle_top_left():
    torch.manual_seed(6)
    q, k, v = torch.randn(1, 1, 3, 8), torch.randn(1, 1, 5, 8), torch.randn(1, 1, 5, 8)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    top_left = torch.tensor([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]], dtype=torch.bool)
    bottom_right = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    assert float((out - F.scaled_dot_product_attention(q, k, v, attn_mask=top_left)).abs().max()) == 0.0
    assert float((out - F.scaled_dot_product_attention(q, k, v, attn_mask=bottom_right)).abs().max()) > 0.01
    assert g(PAGE6, "causal_diff_top_left") == 0.0
    assert g(PAGE6, "causal_diff_bottom_right") > 0.01
    assert g(PAGE6, "causal_lower_right_diff") == 0.0


def test_builtin_returns_zeros_for_a_fully_masked_row():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q = torch.randn(1, 2, 4, 8)
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    mask[1] = False
    for backend in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION):
        with sdpa_kernel(backend):
            out = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
        assert float(out[..., 1, :].abs().max()) == 0.0 and not torch.isnan(out).any()
    assert g(PAGE6, "empty_row_max_abs") == 0.0 and g(PAGE6, "empty_row_nans") == 0
    assert g(PAGE6, "empty_row_lib_max_abs") == 0.0


def test_self_attention_is_causal_passes_gradient_and_keeps_the_shape():
    from attention.torch import SelfAttention
    torch.manual_seed(8)
    layer = SelfAttention(32, 16, causal=True)
    x = torch.randn(2, 10, 32, requires_grad=True)
    y = layer(x)
    assert str(tuple(y.shape)) == g_text(PAGE6, "sa_out_shape")
    y.pow(2).sum().backward()
    assert all(float(p.grad.norm()) > 0 for p in layer.parameters()) and float(x.grad.norm()) > 0
    x2 = x.detach().clone()
    x2[:, 6] += 1.0
    with torch.no_grad():
        change = (layer(x2) - layer(x.detach())).abs().amax(dim=(0, 2))
    assert float(change[:6].max()) == 0.0 and float(change[6:].min()) > 0
    assert g(PAGE6, "sa_causal_t") == 6
    assert g(PAGE6, "sa_past_change") == 0.0 and g(PAGE6, "sa_future_change") > 0
    assert g(PAGE6, "sa_min_grad_norm") > 0 and g(PAGE6, "sa_input_grad_norm") > 0
    assert 0 <= g(PAGE6, "sa_fused_vs_readable") < 1e-5


def test_cpu_backends_default_choice_and_silent_dropout_fallback():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q = torch.randn(1, 2, 8, 8)
    runs = []
    for name, backend in SDPBackend.__members__.items():
        if name == "ERROR":
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                with sdpa_kernel(backend):
                    F.scaled_dot_product_attention(q, q, q)
                runs.append(name)
            except RuntimeError:
                pass
    assert " and ".join(runs) == g_text(PAGE6, "cpu_backends")
    assert len(runs) == g(PAGE6, "n_cpu_backends")
    assert SDPBackend(torch._fused_sdp_choice(q, q, q)).name == g_text(PAGE6, "default_backend")
    assert SDPBackend(torch._fused_sdp_choice(q, q, q, dropout_p=0.1)).name == g_text(PAGE6, "dropout_backend") == "MATH"
    assert g_bool(PAGE6, "pinned_dropout_failed")


def test_flex_attention_block_sparsity_and_agreement():
    T, block, window = int(g(PAGE6, "flex_T")), 32, int(g(PAGE6, "flex_window"))
    i, j = np.indices((T, T))
    for name, allowed in (("flex_causal_sparsity", i >= j), ("flex_window_sparsity", (i >= j) & (i - j < window))):
        blocks = allowed.reshape(T // block, block, T // block, block).any(axis=(1, 3))
        assert g(PAGE6, name) == pytest.approx(100.0 * (1 - blocks.mean()))
    assert 0 <= g(PAGE6, "flex_alibi_err") < 1e-5
    assert 0 <= g(PAGE6, "flex_cap_err") < 1e-5
    assert g(PAGE6, "flex_n_warnings") == 1


def test_packed_sequences_with_a_document_mask_equal_separate_attention():
    assert 0 <= g(PAGE6, "packed_err") < 1e-5
    assert g_text(PAGE6, "paged_out_shape") == "(1, 8)"
    lengths = [5, 3, 8]
    assert g(PAGE6, "padded_scores") == len(lengths) * max(lengths) ** 2 == 192
    assert g(PAGE6, "wanted_scores") == int(np.sum(np.square(lengths))) == 98


def test_dropout_drops_about_p_and_rescales_by_one_over_one_minus_p():
    p = g(PAGE6, "dropout_p")
    assert p == 0.1
    n = 64 * 64
    assert abs(g(PAGE6, "dropped_fraction") - p) < 5 * math.sqrt(p * (1 - p) / n)
    assert g(PAGE6, "dropout_rescale") == pytest.approx(1 / (1 - p), rel=1e-6)
    assert 0 < g(PAGE6, "dropout_expectation_err") < 0.05


def test_cost_figures_are_consistent_and_plain_memory_is_quadratic():
    n, heads, d = int(g(PAGE6, "cost_n_big")), int(g(PAGE6, "cost_heads")), int(g(PAGE6, "cost_d"))
    assert g(PAGE6, "flops_big") == 4 * n * n * d * heads
    seconds = ast.literal_eval(glued(PAGE6)["cost_seconds"])
    ns = [256, 512, 1024, 2048, 4096]
    for impl in ("numpy", "numpy_no_weights", "tiled", "torch"):
        assert g(PAGE6, f"cost_ms_{impl}") == pytest.approx(1e3 * seconds[impl][-1])
        big = [(m, t) for m, t in zip(ns, seconds[impl]) if m >= g(PAGE6, "slope_from")]
        slope = np.polyfit(np.log([m for m, _ in big]), np.log([t for _, t in big]), 1)[0]
        assert g(PAGE6, f"time_slope_{impl}") == pytest.approx(slope)
    assert g(PAGE6, "builtin_speedup") == pytest.approx(seconds["numpy"][-1] / seconds["torch"][-1])
    Q, K, V = (np.random.default_rng(s).standard_normal((1, heads, n, d), dtype=np.float32) for s in (4, 5, 6))
    plain = measure.peak_memory(lambda: attention.scaled_dot_product_attention(Q, K, V))
    assert g(PAGE6, "cost_mib_numpy") == pytest.approx(plain / 2**20, rel=0.05)
    assert g(PAGE6, "cost_mib_tiled") < 0.1 * g(PAGE6, "cost_mib_numpy")
    assert 1.8 < g(PAGE6, "plain_memory_slope") < 2.1
    # The output-only version: one block of scores instead of all of A, as the text says.
    entries, rows = int(g(PAGE6, "block_entries")), int(g(PAGE6, "block_min_rows"))
    assert (entries, rows) == (attention.forward.BLOCK_ENTRIES, attention.forward.MIN_BLOCK_ROWS)
    assert 1024 * 1024 <= entries and n * rows > entries  # n = 1024 fits one block; n = 4096 does not
    assert g(PAGE6, "one_block_n") == 1024
    block_bytes = max(entries, rows * n) * 4
    assert g(PAGE6, "cost_mib_numpy_no_weights") * 2**20 <= block_bytes + 4 * n * d * 4
    assert g(PAGE6, "cost_mib_numpy_no_weights") < g(PAGE6, "cost_mib_numpy") / 4
