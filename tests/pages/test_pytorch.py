"""Attention in PyTorch: every number the prose quotes, recomputed independently.

The page's glued values are read from its executed notebook; each test recomputes the same
quantity here, with its own code (often at other seeds and sizes, so that a claim that holds
only for the page's draw fails), and compares.
"""

from __future__ import annotations

import ast
import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import attention
import attention.torch
from attention import measure
from tests.glue import glued
from tests.pages._common import g, g_bool, g_text, page_cell

PAGE = "pytorch"
MIB = 2**20


def page_sdpa():
    """The page's own ten lines, executed from its source."""
    ns = {"math": math, "torch": torch, "F": F}
    exec(page_cell(PAGE, "def sdpa("), ns)
    return ns["sdpa"]


def reference(q, k, v, mask=None, causal=False):
    """Attention in float64 straight from the formula, independent of the page and library."""
    q, k, v = (x.double() for x in (q, k, v))
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask.double()
    return torch.softmax(s, dim=-1) @ v


def pinned(backend, *args, **kwargs):
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(*args, **kwargs)


def glued_dict(name):
    return ast.literal_eval(glued(PAGE)[name].strip())


# --- the ten lines -------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_ten_lines_and_the_library_match_the_builtin_and_the_formula(seed):
    sdpa = page_sdpa()
    g_ = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(2, 4, T, 8, generator=g_) for T in (16, 12, 12))
    mask = torch.rand(2, 1, 16, 12, generator=g_) > 0.3
    mask[..., 0] = True
    bias = torch.randn(2, 4, 16, 12, generator=g_)
    for kwargs, want in (({}, reference(q, k, v)), ({"attn_mask": mask}, reference(q, k, v, mask)),
                         ({"attn_mask": bias}, reference(q, k, v, bias))):
        for fn in (sdpa, attention.torch.scaled_dot_product_attention,
                   F.scaled_dot_product_attention):
            assert float((fn(q, k, v, **kwargs).double() - want).abs().max()) < 2e-6
    qs = q[..., :12, :]
    assert float((sdpa(qs, k, v, is_causal=True).double() - reference(qs, k, v, causal=True))
                 .abs().max()) < 2e-6
    assert 0 < g(PAGE, "sdpa_max_err_page") < 2e-6
    assert 0 < g(PAGE, "sdpa_max_err_lib") < 2e-6
    assert g_text(PAGE, "torch_version") == torch.__version__


def test_the_ten_lines_and_the_library_refuse_a_mask_with_is_causal():
    sdpa = page_sdpa()
    q = torch.randn(1, 1, 5, 4)
    mask = torch.ones(5, 5, dtype=torch.bool)
    for fn in (sdpa, attention.torch.scaled_dot_product_attention):
        with pytest.raises(ValueError, match="not both"):
            fn(q, q, q, attn_mask=mask, is_causal=True)


@pytest.mark.parametrize("seed", [0, 3, 7, 11, 16])
def test_float16_ten_lines_and_math_round_once_while_the_unpinned_builtin_does_not(seed):
    sdpa = page_sdpa()
    g_ = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(2, 4, T, 8, generator=g_).half() for T in (16, 12, 12))
    mask = torch.rand(2, 1, 16, 12, generator=g_) > 0.3
    mask[..., 0] = True
    exact = reference(q, k, v, mask)
    step = torch.from_numpy(np.spacing(exact.abs().numpy().astype(np.float16)).astype(np.float64))
    sized = exact.abs() >= 1 / 16

    def steps(out):
        gap = (out.double() - exact).abs()
        return float((gap / step)[sized].max()), float(gap.max())

    ours, ours_abs = steps(sdpa(q, k, v, attn_mask=mask))
    math_, _ = steps(pinned(SDPBackend.MATH, q, k, v, attn_mask=mask))
    unpinned, unpinned_abs = steps(F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
    # rounded once from float32: the nearest float16, at most half a step away
    assert ours <= 0.5 + 1e-3 and math_ <= 0.5 + 1e-3
    assert unpinned > 1.5 and unpinned_abs < 3 * ours_abs + 1e-3
    assert SDPBackend(torch._fused_sdp_choice(q, k, v, mask)).name == "FLASH_ATTENTION"
    # the page's values obey the same bounds
    assert g(PAGE, "half_steps_ours") <= 0.5 + 1e-3 and g(PAGE, "half_steps_math") <= 0.5 + 1e-3
    assert g(PAGE, "half_steps_builtin") > 1.5
    assert g(PAGE, "half_abs_builtin") < 3 * g(PAGE, "half_abs_ours") + 1e-3


def test_is_causal_aligns_the_triangle_top_left_and_causal_lower_right_bottom_right():
    from torch.nn.attention.bias import causal_lower_right
    torch.manual_seed(6)
    q, k, v = torch.randn(1, 1, 3, 8), torch.randn(1, 1, 5, 8), torch.randn(1, 1, 5, 8)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    top_left = torch.tensor([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]], dtype=torch.bool)
    bottom_right = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    assert float((out - reference(q, k, v, top_left)).abs().max()) < 1e-6
    assert float((out - reference(q, k, v, bottom_right)).abs().max()) > 0.01
    helper = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(3, 5))
    assert float((helper - reference(q, k, v, bottom_right)).abs().max()) < 1e-6
    assert g(PAGE, "causal_diff_top_left") == 0.0
    assert g(PAGE, "causal_diff_bottom_right") > 0.01
    assert g(PAGE, "causal_lower_right_diff") == 0.0


def test_self_attention_is_causal_passes_gradient_and_keeps_the_shape():
    from attention.torch import SelfAttention
    torch.manual_seed(8)
    layer = SelfAttention(32, 16, causal=True)
    x = torch.randn(2, 10, 32, requires_grad=True)
    y = layer(x)
    assert str(tuple(y.shape)) == g_text(PAGE, "sa_out_shape")
    y.pow(2).sum().backward()
    assert all(float(p.grad.norm()) > 0 for p in layer.parameters()) and float(x.grad.norm()) > 0
    x2 = x.detach().clone()
    x2[:, 6] += 1.0
    with torch.no_grad():
        change = (layer(x2) - layer(x.detach())).abs().amax(dim=(0, 2))
    assert float(change[:6].max()) == 0.0 and float(change[6:].min()) > 0
    assert g(PAGE, "sa_causal_t") == 6
    assert g(PAGE, "sa_past_change") == 0.0 and g(PAGE, "sa_future_change") > 0
    assert g(PAGE, "sa_min_grad_norm") > 0 and g(PAGE, "sa_input_grad_norm") > 0
    assert 0 <= g(PAGE, "sa_fused_vs_readable") < 1e-5


# --- which kernel ran ------------------------------------------------------------------


def test_cpu_backends_that_run_when_pinned():
    q = torch.randn(1, 2, 8, 8)
    runs = []
    for name, backend in SDPBackend.__members__.items():
        if name == "ERROR":
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                pinned(backend, q, q, q)
                runs.append(name)
            except RuntimeError:
                pass
    assert " and ".join(runs) == g_text(PAGE, "cpu_backends") == "MATH and FLASH_ATTENTION"
    assert len(runs) == g(PAGE, "n_cpu_backends")


@pytest.mark.parametrize("T, d", [(8, 4), (64, 16), (100, 32)])
def test_the_dispatchers_choices_and_silent_fallbacks(T, d):
    def choice(*args, **kwargs):
        return SDPBackend(torch._fused_sdp_choice(*args, **kwargs)).name

    q = torch.randn(1, 2, T, d)
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        x = q.to(dtype)
        assert choice(x, x, x) == "FLASH_ATTENTION"
    assert choice(q, q, q, torch.rand(T, T) > 0.3) == "FLASH_ATTENTION"
    assert choice(q, q, q, torch.randn(T, T)) == "FLASH_ATTENTION"
    assert choice(q, q, q, is_causal=True) == "FLASH_ATTENTION"
    assert choice(q, q, q, dropout_p=0.1) == "MATH"
    assert choice(q, q, torch.randn(1, 2, T, d + 2)) == "MATH"
    assert choice(q[0], q[0], q[0]) == "MATH"
    assert g_text(PAGE, "default_backend") == "FLASH_ATTENTION"
    assert g_text(PAGE, "dropout_backend") == g_text(PAGE, "narrow_v_backend") == "MATH"
    assert g_text(PAGE, "three_d_backend") == "MATH"


def test_grad_fn_names_the_kernel_that_ran():
    q = torch.randn(1, 2, 32, 16, requires_grad=True)
    assert F.scaled_dot_product_attention(q, q, q).grad_fn.name() == \
        "ScaledDotProductFlashAttentionForCpuBackward0" == g_text(PAGE, "default_grad_fn")
    assert pinned(SDPBackend.MATH, q, q, q).grad_fn.name() != g_text(PAGE, "default_grad_fn")
    # 3-D tensors, as the self-attention module passes them, go to MATH on this CPU
    x3 = torch.randn(2, 5, 8, requires_grad=True)
    assert "Flash" not in F.scaled_dot_product_attention(x3, x3, x3).grad_fn.name()


def test_a_mask_with_is_causal_raises_under_math_and_is_combined_under_flash():
    torch.manual_seed(11)
    q = torch.randn(1, 2, 32, 16)
    mask = torch.rand(32, 32) > 0.3
    with pytest.raises(RuntimeError, match="is_causal"):
        pinned(SDPBackend.MATH, q, q, q, attn_mask=mask, is_causal=True)
    both = pinned(SDPBackend.FLASH_ATTENTION, q, q, q, attn_mask=mask, is_causal=True)
    keep = mask & torch.ones(32, 32, dtype=torch.bool).tril()
    assert float((both.double() - reference(q, q, q, keep)).abs().max()) < 1e-5
    assert SDPBackend(torch._fused_sdp_choice(q, q, q, mask, is_causal=True)).name == "FLASH_ATTENTION"
    assert g_bool(PAGE, "math_refuses_both") and g_bool(PAGE, "flash_applies_both")


def test_pinning_the_flash_kernel_with_dropout_fails_loudly():
    q = torch.randn(1, 2, 16, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError):
            pinned(SDPBackend.FLASH_ATTENTION, q, q, q, dropout_p=0.1)
    assert g_bool(PAGE, "pinned_dropout_failed")


def test_dropout_drops_about_p_and_rescales_by_one_over_one_minus_p():
    p = g(PAGE, "dropout_p")
    assert p == 0.1
    n = 64 * 64
    assert abs(g(PAGE, "dropped_fraction") - p) < 5 * math.sqrt(p * (1 - p) / n)
    assert g(PAGE, "dropout_rescale") == pytest.approx(1 / (1 - p), rel=1e-6)
    # 2000 draws: each entry's mean has relative spread sqrt(p / (1 - p) / 2000) ~ 0.0075
    assert 0 < g(PAGE, "dropout_expectation_err") < 0.05
    torch.manual_seed(2)
    A = torch.softmax(torch.randn(64, 64), dim=-1)
    mean = torch.stack([F.dropout(A, p=p) for _ in range(2000)]).mean(dim=0)
    assert float((mean - A).abs().max() / A.abs().max()) < 0.05


# --- what the fused kernel does differently --------------------------------------------


@pytest.mark.parametrize("seed", [1, 2])
def test_math_and_flash_give_the_same_output_and_gradients(seed):
    g_ = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, 2, 200, 32, generator=g_, requires_grad=True) for _ in range(3))
    dO = torch.randn(1, 2, 200, 32, generator=g_)
    results = []
    for backend in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION):
        out = pinned(backend, q, k, v)
        results.append((out.detach(), *torch.autograd.grad(out, (q, k, v), dO)))
    for a, b in zip(*results):
        assert float((a - b).abs().max()) < 1e-5
    assert 0 < g(PAGE, "kernel_gap_max") < 1e-5
    assert g(PAGE, "kernel_gap_T") == 256


def test_flop_counts_follow_the_two_and_five_product_formulas():
    T, d = int(g(PAGE, "flops_T")), 64
    product = 2 * T * T * d  # one T x T x d matrix product, a multiply and an add per term
    assert g(PAGE, "flops_fwd_math") == 2 * product == 4 * T * T * d
    assert g(PAGE, "flops_bwd_math") == 4 * product
    assert g(PAGE, "flops_fwd_flash_counted") == 0
    assert g(PAGE, "flops_fwd_flash") == 2 * product
    assert g(PAGE, "flops_bwd_flash") == 5 * product
    assert g(PAGE, "flops_ratio_math") == 2.0 and g(PAGE, "flops_ratio_flash") == 2.5
    # the count under MATH comes from the operators that ran
    from torch.utils.flop_counter import FlopCounterMode
    q = torch.randn(1, 1, 128, 32, requires_grad=True)
    counter = FlopCounterMode(display=False)
    with counter, sdpa_kernel(SDPBackend.MATH):
        F.scaled_dot_product_attention(q, q, q)
    assert counter.get_total_flops() == 4 * 128 * 128 * 32


def test_bytes_kept_for_backward_by_each_kernel():
    T, d = int(g(PAGE, "saved_T_big")), 64
    assert T == 2048
    math_bytes = 4 * (T * T + 3 * T * d)          # A, scaled Q and K, V
    flash_bytes = 4 * (4 * T * d + T)              # Q, K, V, O and the log-sum-exp
    assert g(PAGE, "saved_mib_math") * MIB == pytest.approx(math_bytes)
    assert g(PAGE, "saved_mib_ours") * MIB == pytest.approx(math_bytes)
    assert g(PAGE, "saved_mib_flash") * MIB == pytest.approx(flash_bytes)
    assert g(PAGE, "saved_ratio") == pytest.approx(math_bytes / flash_bytes)
    assert g(PAGE, "matrix_mib_big") == 4 * T * T / MIB
    # check the shapes directly at a small size
    q = torch.randn(1, 1, 48, 8, requires_grad=True)
    for backend, want in ((SDPBackend.MATH, (48, 48)), (SDPBackend.FLASH_ATTENTION, (1, 48))):
        shapes = []
        with torch.autograd.graph.saved_tensors_hooks(lambda t: shapes.append(tuple(t.shape)) or t,
                                                      lambda t: t):
            pinned(backend, q, q, q)
        assert want in [s[-2:] for s in shapes]
        if backend == SDPBackend.FLASH_ATTENTION:
            assert all(s[-2:] != (48, 48) for s in shapes)


def test_training_step_memory_math_quadratic_flash_below_one_matrix():
    T = int(g(PAGE, "step_T_big"))
    matrix = 4 * T * T
    d = 64
    peaks = {}
    with measure.threads(1):
        for backend in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION):
            q, k, v = (torch.randn(1, 1, T, d, requires_grad=True) for _ in range(3))
            dO = torch.randn(1, 1, T, d)

            def run():
                out = pinned(backend, q, k, v)
                return torch.autograd.grad(out, (q, k, v), dO)

            peaks[backend.name] = max(measure.peak_memory(run, "rss") for _ in range(3))
    assert peaks["MATH"] > 2.5 * matrix and peaks["FLASH_ATTENTION"] < matrix
    glued_math, glued_flash = g(PAGE, "step_mib_math") * MIB, g(PAGE, "step_mib_flash") * MIB
    assert glued_math == pytest.approx(peaks["MATH"], rel=0.35)
    assert glued_math > 2.5 * matrix and glued_flash < matrix
    assert g(PAGE, "step_matrices_math") == pytest.approx(glued_math / matrix)
    assert g(PAGE, "step_matrix_mib") == matrix / MIB
    assert g(PAGE, "step_ratio") == pytest.approx(glued_math / glued_flash)
    all_mib = glued_dict("step_mib_all")
    growth = all_mib["MATH 2048"] / all_mib["MATH 1024"]
    assert g(PAGE, "step_growth_math") == pytest.approx(growth)
    assert 3.4 < growth < 4.4  # a T^2 cost quadruples (the rss reading is coarse)
    assert all_mib["FLASH_ATTENTION 2048"] == pytest.approx(glued_flash / MIB)
    for t in (1024, 2048):  # below one T x T matrix from T = 1024 on, as the caption says
        assert all_mib[f"FLASH_ATTENTION {t}"] < 4 * t * t / MIB
        assert all_mib[f"FLASH_ATTENTION {t}"] / (4 * t * t / MIB) < \
            all_mib["FLASH_ATTENTION 256"] / (4 * 256 * 256 / MIB)
    # the prose quotes the two times and draws no conclusion from them
    assert g(PAGE, "step_speedup") == pytest.approx(g(PAGE, "step_ms_math") / g(PAGE, "step_ms_flash"))


# --- beyond the built-in -----------------------------------------------------------------


def test_flex_attention_block_kinds_and_agreement():
    T, block, window = int(g(PAGE, "flex_T")), int(g(PAGE, "flex_block")), int(g(PAGE, "flex_window"))
    i, j = np.indices((T, T))
    n = T // block
    assert g(PAGE, "flex_n_blocks") == n * n
    for name, allowed in (("causal", i >= j), ("window", (i >= j) & (i - j < window))):
        per_block = allowed.reshape(n, block, n, block).swapaxes(1, 2).reshape(n, n, -1)
        empty = int((~per_block.any(-1)).sum())
        full = int(per_block.all(-1).sum())
        assert g(PAGE, f"flex_{name}_empty") == empty
        assert g(PAGE, f"flex_{name}_full") == full
        assert g(PAGE, f"flex_{name}_partial") == n * n - empty - full
    assert 0 <= g(PAGE, "flex_alibi_err") < 1e-5
    assert 0 <= g(PAGE, "flex_cap_err") < 1e-5
    assert g(PAGE, "flex_n_warnings") == 1
    # the prose: the whole grid is evaluated once, and full blocks are kept apart from
    # partial ones (inside which mask_mod is applied again)
    import inspect
    from torch.nn.attention.flex_attention import create_block_mask
    source = inspect.getsource(create_block_mask)
    assert "= create_mask(mask_mod, B, H, Q_LEN, KV_LEN" in source
    assert "separate_full_blocks" in source


def test_packed_sequences_with_a_document_mask_equal_separate_attention():
    assert 0 <= g(PAGE, "packed_err") < 1e-5
    assert g_text(PAGE, "paged_out_shape") == "(1, 8)"
    lengths = [5, 3, 8]
    assert g(PAGE, "padded_scores") == len(lengths) * max(lengths) ** 2 == 192
    assert g(PAGE, "wanted_scores") == int(np.sum(np.square(lengths))) == 98


# --- what attention costs ------------------------------------------------------------------


def test_cost_figures_are_consistent_and_memory_is_as_the_text_says():
    T, d, tile = int(g(PAGE, "cost_T_big")), int(g(PAGE, "cost_d")), int(g(PAGE, "cost_tile"))
    assert g(PAGE, "flops_big") == 4 * T * T * d
    ms = glued_dict("cost_ms_all")
    for key, name in (("plain", "plain NumPy"), ("tiled", "tiled NumPy"),
                      ("math", "torch MATH"), ("flash", "torch FLASH")):
        assert g(PAGE, f"cost_ms_{key}") == pytest.approx(ms[f"{name} {T}"])
        growth = ms[f"{name} 2048"] / ms[f"{name} 1024"]
        assert g(PAGE, f"time_growth_{key}") == pytest.approx(growth)
        assert growth > 1.5  # the work quadruples; timings on a shared machine wander
    # memory, recomputed exactly (tracemalloc counts every NumPy buffer)
    Q, K, V = measure.random_qkv(T, d=d, heads=1, batch=1)
    plain = measure.peak_memory(lambda: attention.scaled_dot_product_attention(Q, K, V))
    tiled = measure.peak_memory(lambda: attention.tiled_attention(Q, K, V, tile))
    assert g(PAGE, "cost_mib_plain") * MIB == pytest.approx(plain, rel=0.02)
    assert g(PAGE, "cost_mib_tiled") * MIB == pytest.approx(tiled, rel=0.02)
    Q1, K1, V1 = measure.random_qkv(T // 2, d=d, heads=1, batch=1)
    half = measure.peak_memory(lambda: attention.scaled_dot_product_attention(Q1, K1, V1))
    assert g(PAGE, "plain_memory_growth") == pytest.approx(plain / half, rel=0.02)
    assert 3.5 < g(PAGE, "plain_memory_growth") < 4.1
    # the tiled peak is the output plus a few tiles
    output, one_tile = 4 * T * d, 4 * tile * tile
    assert g(PAGE, "output_mib") * MIB == output and g(PAGE, "tile_mib") * MIB == one_tile
    assert output + one_tile <= tiled <= output + 4 * one_tile
    assert plain > 4 * T * T
