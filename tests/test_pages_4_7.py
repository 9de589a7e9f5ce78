"""Pages 4-7 (stability and masks, the backward pass, PyTorch, exercises): every glued number
is recomputed here independently (mostly with torch or plain Python instead of the page's
NumPy code) and compared; the exercises' reference solutions pass their checkers and
deliberately wrong solutions fail them; the static diagrams draw; the pages carry their
figures, labels and citations.

Needs a built book: ``make book`` (or BOOK_HTML=/path/to/_build/html).
"""

from __future__ import annotations

import ast
import math
import re
import runpy
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attention
from attention import checkers, measure
from tests.glue import glued, glued_number
from tests.harness import HTML

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"

pytestmark = pytest.mark.skipif(
    not (HTML.parent / "jupyter_execute" / "chapters" / "pytorch.ipynb").exists(),
    reason="the book is not built: run `make book`",
)


def g(page: str, name: str) -> float:
    text = glued(page)[name].strip()
    if text in ("inf", "-inf", "nan"):
        return float(text)
    return glued_number(page, name)


def g_text(page: str, name: str) -> str:
    text = glued(page)[name].strip()
    try:
        return str(ast.literal_eval(text))
    except (ValueError, SyntaxError):
        return text


def g_bool(page: str, name: str) -> bool:
    return glued(page)[name].strip() == "True"


def page_cell(page: str, marker: str) -> str:
    """Source of the code cell of chapters/PAGE.md that contains ``marker``."""
    source = (CHAPTERS / f"{page}.md").read_text()
    for cell in re.findall(r"```\{code-cell\} ipython3\n(.*?)```", source, flags=re.S):
        if marker in cell:
            return cell
    raise AssertionError(f"no code cell of {page}.md contains {marker!r}")


def torch_softmax_attention(Q, K, V, mask=None):
    """Independent float64 attention in torch: (O, A)."""
    q, k, v = (torch.as_tensor(np.asarray(x, dtype=np.float64)) for x in (Q, K, V))
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~torch.as_tensor(mask), float("-inf"))
    a = torch.softmax(s, dim=-1)
    return (a @ v).numpy(), a.numpy()


# --- page 4: numerical stability and masks ----------------------------------------------

PAGE4 = "stability-masks"


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


# --- page 5: the backward pass -----------------------------------------------------------

PAGE5 = "backward"


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


# --- page 6: PyTorch -----------------------------------------------------------------------

PAGE6 = "pytorch"


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


# --- static diagrams, labels, citations -----------------------------------------------------

@pytest.mark.parametrize("script, svg", [("masks.py", "masks.svg"), ("backward_graph.py", "backward-graph.svg")])
def test_static_diagram_scripts_write_svg(script, svg, tmp_path):
    # Run a copy in a temporary folder (a script writes into the folder above its own), so
    # that the book's figures/ keeps its files and modification times: a rewritten figure
    # would make the next incremental build read its page again.
    (tmp_path / "src").mkdir()
    shutil.copy2(ROOT / "figures" / "src" / script, tmp_path / "src" / script)
    runpy.run_path(str(tmp_path / "src" / script), run_name="__main__")
    text = (tmp_path / svg).read_text()
    assert text.lstrip().startswith("<?xml") and "<svg" in text
    assert text == (ROOT / "figures" / svg).read_text(), f"figures/{svg} is stale: run `make figures`"


@pytest.mark.parametrize("page, ids", [
    ("stability-masks", ["ex-mask-inf", "ex-numpy-attention", "fig-mask-patterns", "fig-tiled-memory"]),
    ("backward", ["ex-backward", "fig-backward-graph"]),
    ("pytorch", ["fig-attention-cost"]),
])
def test_pages_carry_their_exercises_and_figures(page, ids):
    html = (HTML / "chapters" / f"{page}.html").read_text()
    for anchor in ids:
        assert f'id="{anchor}"' in html, anchor


def test_exercises_page_links_all_nine_exercises():
    source = (CHAPTERS / "exercises.md").read_text()
    labels = ["ex-qkv-roles", "ex-convex-hull", "ex-raw-vs-scaled", "ex-mask-inf", "ex-temperature",
              "ex-numpy-attention", "ex-backward", "ex-score-moments", "ex-one-hot-jacobian"]
    for label in labels:
        assert "{ref}`" + label + "`" in source


def test_every_bibliography_entry_is_cited_somewhere():
    keys = re.findall(r"@\w+\{(\w+),", (ROOT / "references.bib").read_text())
    text = "".join(p.read_text() for p in CHAPTERS.glob("*.md"))
    cited = set(re.findall(r"\{cite:[pt]\}`([^`]+)`", text))
    cited = {k.strip() for group in cited for k in group.split(",")}
    assert set(keys) <= cited, set(keys) - cited
