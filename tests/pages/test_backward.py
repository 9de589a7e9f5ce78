"""The backward pass: every number the prose quotes, recomputed independently of the page's
cells (with torch autograd, a hand-written central difference, or exact fractions)."""

from __future__ import annotations

import ast
import inspect
import math
import re
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

import attention
from attention import checkers
from tests.glue import executed_notebook, glued
from tests.pages._common import (CHAPTERS, g, g_bool, g_text, page_cell,
                                 torch_softmax_attention)

PAGE = "backward"


def _autograd(Q, K, V, dO, mask=None, dtype=torch.float64):
    """(dQ, dK, dV) by torch autograd through the formula, as float64 arrays."""
    q, k, v = (torch.tensor(np.asarray(x), dtype=dtype, requires_grad=True) for x in (Q, K, V))
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~torch.as_tensor(mask), float("-inf"))
    (torch.softmax(s, dim=-1) @ v).backward(torch.tensor(np.asarray(dO), dtype=dtype))
    return tuple(t.grad.double().numpy() for t in (q, k, v))


def _page_inputs(seed=7):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(s) for s in ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 3), (2, 3, 5, 3)))


# --- the worked example ----------------------------------------------------------------

def test_worked_example_fractions_are_the_gradients_autograd_finds():
    """The fractions the prose derives by hand, against autograd on the same numbers."""
    ln3 = math.log(3)
    Q, K = np.array([[0.0], [ln3]]), np.array([[1.0], [0.0]])
    V, dO = np.array([[1.0, 2.0], [3.0, 0.0]]), np.eye(2)
    O, A = torch_softmax_attention(Q, K, V)
    np.testing.assert_allclose(A, [[1 / 2, 1 / 2], [3 / 4, 1 / 4]], atol=1e-15)
    np.testing.assert_allclose(O, [[2, 1], [3 / 2, 3 / 2]], atol=1e-15)
    s = torch.tensor(Q @ K.T, requires_grad=True)  # c = 1 at d_k = 1
    (torch.softmax(s, -1) @ torch.tensor(V)).backward(torch.tensor(dO))
    np.testing.assert_allclose(s.grad.numpy(), [[-1 / 2, 1 / 2], [3 / 8, -3 / 8]], atol=1e-15)
    dQ, dK, dV = _autograd(Q, K, V, dO)
    np.testing.assert_allclose(dQ, [[-1 / 2], [3 / 8]], atol=1e-15)
    np.testing.assert_allclose(dK, [[3 / 8 * ln3], [-3 / 8 * ln3]], atol=1e-15)
    np.testing.assert_allclose(dV, [[1 / 2, 3 / 4], [1 / 2, 1 / 4]], atol=1e-15)
    assert 0 <= g(PAGE, "hand_max_err") < 1e-15
    assert g(PAGE, "hand_dK_1") == pytest.approx(3 / 8 * ln3, abs=5e-5)


def test_worked_example_prose_quotes_the_fractions_the_test_checks():
    text = (CHAPTERS / f"{PAGE}.md").read_text()
    for fragment in (r"-1/2 & 1/2 \\ 3/8 & -3/8", r"1/2 & 3/4 \\ 1/2 & 1/4",
                     r"\begin{pmatrix} -1/2 \\ 3/8 \end{pmatrix}", r"\tfrac38 \ln 3 \\ -\tfrac38 \ln 3"):
        assert fragment in text, fragment


# --- the exercise and its placement --------------------------------------------------------

def test_exercise_comes_before_the_code_that_answers_it():
    text = (CHAPTERS / f"{PAGE}.md").read_text()
    assert text.index(":label: ex-backward") < text.index("def attention_backward_by_hand")
    assert "without looking at the code above" not in text
    assert not re.search(r"ex\d|exercise \d", text, flags=re.I)


def test_backward_reference_solution_passes_its_checker_and_wrong_ones_fail():
    namespace = {"np": np, "math": math, "check_attention_backward": checkers.check_attention_backward}
    exec(page_cell(PAGE, "def reference_attention_backward"), namespace)
    reference = namespace["reference_attention_backward"]
    assert checkers.check_attention_backward(reference, verbose=False)
    assert g_bool(PAGE, "backward_reference_passes")

    def forgets_D(Q, K, V, dO, mask=None):
        c = 1 / math.sqrt(Q.shape[-1])
        _, A = torch_softmax_attention(Q, K, V, mask)
        dS = A * (dO @ np.swapaxes(V, -1, -2))  # the softmax's "- D" term left out
        return c * dS @ K, c * np.swapaxes(dS, -1, -2) @ Q, np.swapaxes(A, -1, -2) @ dO

    assert not checkers.check_attention_backward(forgets_D, verbose=False)


def test_executed_page_shows_the_skeleton_failing_and_the_reference_passing():
    text = str(executed_notebook(PAGE))
    assert "0 of 11 checks passed." in text and "11 of 11 checks passed." in text


def test_the_exercise_skeleton_gives_only_the_signature_and_what_it_returns():
    # st24a: the skeleton's comments spelled out step 2 of the answer (D = (dO * O)
    # summed over the last axis, dS = A * (dA - D)), one line from the solution
    cell = page_cell(PAGE, "def my_attention_backward")
    body = cell.split("def my_attention_backward")[1].split("skeleton_backward_passes")[0]
    for answer in ("dO * O", "dA - D", "dS", "step", "softmax"):
        assert answer not in body, answer
    assert "(dQ, dK, dV)" in body and "NotImplementedError" in body


def test_exercise_states_the_contract_its_checker_demands():
    """Batch and head dimensions, the mask's polarity and broadcasting, a query that sees
    no key, and the dtype: each is a case of the checker, so each is in the text."""
    text = (CHAPTERS / f"{PAGE}.md").read_text()
    exercise = text[text.index(":label: ex-backward"):text.index("from attention.checkers import")]
    for phrase in ("(..., T_q, d_k)", 'True means "may attend"', "broadcasts",
                   "sees no key", "zero weights", "`float32` in, `float32` out",
                   "(dQ, dK, dV)"):
        assert phrase in exercise, phrase


def test_the_reference_solution_gives_zero_gradients_to_a_query_that_sees_no_key():
    namespace = {"np": np, "math": math, "check_attention_backward": lambda fn: True}
    exec(page_cell(PAGE, "def reference_attention_backward"), namespace)
    Q, K, V, dO = _page_inputs()
    mask = np.tril(np.ones((5, 6), dtype=bool))
    mask[2] = False
    dQ, dK, dV = namespace["reference_attention_backward"](Q, K, V, dO, mask)
    q, k, v = (torch.tensor(x, requires_grad=True) for x in (Q, K, V))
    # torch 2.13's built-in gives a query with no visible key a zero output
    F.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(mask)).backward(
        torch.from_numpy(dO))
    for got, t in zip((dQ, dK, dV), (q, k, v)):
        np.testing.assert_allclose(got, t.grad.numpy(), atol=1e-12)
    assert np.all(dQ[..., 2, :] == 0)
    low = namespace["reference_attention_backward"](*(x.astype(np.float32) for x in (Q, K, V, dO)), mask)
    assert all(x.dtype == np.float32 for x in low)


def test_the_reference_solution_computes_float16_in_float32_and_casts_back():
    """The prose: float16 inputs are computed in float32 and the gradients cast back.
    At d_k = 64 with scores near 9600 the raw products pass float16's 65504: in float16
    the gradients are NaN; in float32 they are float16 and within 1e-3 of the float64
    gradients of the same float16 values."""
    namespace = {"np": np, "math": math, "check_attention_backward": lambda fn: True}
    text = (CHAPTERS / f"{PAGE}.md").read_text()
    assert "`float16` inputs are computed in `float32`" in text
    exec(page_cell(PAGE, "def reference_attention_backward"), namespace)
    fn = namespace["reference_attention_backward"]
    rng = np.random.default_rng(5)
    Q = (40 + 0.05 * rng.standard_normal((4, 64))).astype(np.float16)
    K = (30 + 0.05 * rng.standard_normal((6, 64))).astype(np.float16)
    V, dO = rng.standard_normal((6, 3)), rng.standard_normal((4, 3))
    V, dO = V.astype(np.float16), dO.astype(np.float16)
    want = fn(*(x.astype(np.float64) for x in (Q, K, V, dO)))
    for got, w in zip(fn(Q, K, V, dO), want):
        assert got.dtype == np.float16
        assert np.abs(got - w).max() <= 1e-3 * np.abs(w).max()


# --- the code section and the consequences -------------------------------------------------

def test_D_identity_and_library_agreement_are_at_rounding_level():
    Q, K, V, dO = _page_inputs()
    O, A = torch_softmax_attention(Q, K, V)
    dA = dO @ np.swapaxes(V, -1, -2)
    assert np.abs(np.sum(A * dA, -1) - np.sum(dO * O, -1)).max() < 1e-12
    assert 0 <= g(PAGE, "D_identity_err") < 1e-12
    assert 0 <= g(PAGE, "library_backward_err") < 1e-12


def test_masked_scores_receive_no_gradient():
    Q, K, V, dO = _page_inputs()
    q, k, v = (torch.tensor(x, requires_grad=True) for x in (Q, K, V))
    mask = torch.ones(5, 6, dtype=torch.bool).tril()
    F.scaled_dot_product_attention(q, k, v, attn_mask=mask).backward(torch.from_numpy(dO))
    assert float(k.grad[..., 5, :].abs().max()) == 0.0 and float(v.grad[..., 5, :].abs().max()) == 0.0
    assert g(PAGE, "masked_dS_max") == 0.0 and g(PAGE, "unseen_key_grad") == 0.0
    # a query that sees no key: zero weights in the forward pass, zero gradient, no NaN
    blind = mask.clone()
    blind[2] = False
    q.grad = None
    F.scaled_dot_product_attention(q, k, v, attn_mask=blind).backward(torch.from_numpy(dO))
    assert float(q.grad[..., 2, :].abs().max()) == 0.0 and not torch.isnan(q.grad).any()
    assert g(PAGE, "blind_query_grad") == 0.0 and g(PAGE, "blind_nans") == 0


def test_backward_counts_twice_the_forward_flops_at_every_shape():
    """FlopCounterMode on a hand-written torch forward (independent of the page's cell)."""
    for T_q, T_k, d_k, d_v in ((512, 512, 64, 64), (256, 1024, 64, 32), (100, 300, 16, 48), (7, 3, 5, 2)):
        q = torch.randn(T_q, d_k, requires_grad=True)
        k = torch.randn(T_k, d_k, requires_grad=True)
        v = torch.randn(T_k, d_v, requires_grad=True)
        with FlopCounterMode(display=False) as fwd:
            o = torch.softmax(q @ k.T, -1) @ v
        with FlopCounterMode(display=False) as bwd:
            o.backward(torch.ones_like(o))
        assert fwd.get_total_flops() == 2 * T_q * T_k * (d_k + d_v)
        assert bwd.get_total_flops() == 2 * fwd.get_total_flops()
    assert g(PAGE, "flop_ratio") == 2.0  # "exactly 2.0 times ... at every one"
    assert g(PAGE, "n_flop_shapes") == 3 and g_bool(PAGE, "forward_is_formula")


def test_flop_counter_has_no_formula_for_the_fused_cpu_kernel():
    q = torch.randn(1, 2, 64, 16)
    with FlopCounterMode(display=False) as counter:
        F.scaled_dot_product_attention(q, q, q)
    assert counter.get_total_flops() == 0 == g(PAGE, "builtin_counted")


def test_measured_backward_forward_ratios_agree_with_the_glued_times():
    seconds = ast.literal_eval(glued(PAGE)["cost_seconds"])
    assert set(seconds) == {"numpy", "torch_math", "torch"}
    for name, (fwd, bwd) in seconds.items():
        assert fwd > 0 and bwd > 0
        assert g(PAGE, f"{name}_bwd_ratio") == pytest.approx(bwd / fwd)
    assert (g(PAGE, "cost_T"), g(PAGE, "cost_heads"), g(PAGE, "cost_d")) == (512, 4, 64)
    # "an elementwise pass over T x T writes as many numbers as, and reads more than, the
    # matrix product that made the matrix": it reads >= T^2, the product Q K^T reads 2 T d
    T, d = int(g(PAGE, "cost_T")), int(g(PAGE, "cost_d"))
    assert T * T > 2 * T * d
    text = (CHAPTERS / f"{PAGE}.md").read_text()
    assert "writes as many numbers as, and reads more than, the" in text


def test_the_timed_built_in_ran_its_fused_kernel():
    """The prose calls the timed built-in fused: its inputs, (1, 4, 512, 64) float32, go to
    the CPU flash kernel, and the executed page printed that backward function."""
    q = torch.randn(1, 4, 512, 64, requires_grad=True)
    name = type(F.scaled_dot_product_attention(q, q, q).grad_fn).__name__
    assert name == "ScaledDotProductFlashAttentionForCpuBackward0"
    assert f"the built-in's backward: {name}" in str(executed_notebook(PAGE))


def test_what_autograd_saves_readable_keeps_A_and_the_fused_kernel_a_log_sum_exp():
    rng = np.random.default_rng(0)
    q, k, v = (torch.tensor(rng.standard_normal((1, 2, t, 4)), requires_grad=True) for t in (5, 6, 6))
    s = torch.softmax(q @ k.transpose(-2, -1) / 2.0, -1)
    assert tuple(s.grad_fn._saved_result.shape) == (1, 2, 5, 6)  # A, kept for the backward
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        node = F.scaled_dot_product_attention(q, k, v).grad_fn
    saved = {n[len("_saved_"):] for n in dir(node) if n.startswith("_saved_")
             and torch.is_tensor(getattr(node, n)) and getattr(node, n).dim() > 0}
    assert saved == {"query", "key", "value", "output", "logsumexp"}
    lse = node._saved_logsumexp.detach()
    with torch.no_grad():
        ref = torch.logsumexp(q @ k.transpose(-2, -1) / 2.0, -1)
    assert float((lse - ref).abs().max()) < 1e-12
    assert g_bool(PAGE, "readable_keeps_A") and not g_bool(PAGE, "fused_keeps_A")
    assert g_text(PAGE, "fused_saved") == ", ".join(sorted(saved))
    assert 0 <= g(PAGE, "lse_err") < 1e-12
    # "With no mask, or with is_causal, ... no T_q x T_k tensor at all. Given an attn_mask,
    # it keeps the mask too, converted to the queries' dtype: a boolean mask of the full
    # shape (5, 6) is kept as a tensor of that shape in float64, ... a per-key padding
    # mask stays (1, 1, 1, 6)."
    kept = {}
    for label, mask in (("causal", None), ("full", torch.ones(5, 6, dtype=torch.bool).tril()),
                        ("pad", torch.ones(1, 1, 1, 6, dtype=torch.bool))):
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            node = F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                                  is_causal=mask is None).grad_fn
        big = [n for n in dir(node) if n.startswith("_saved_") and torch.is_tensor(getattr(node, n))
               and tuple(getattr(node, n).shape[-2:]) == (5, 6)]
        m = getattr(node, "_saved_attn_mask", None)
        kept[label] = (big, None if m is None else (tuple(m.shape), m.dtype))
    assert kept["causal"] == ([], None) and not g_bool(PAGE, "fused_causal_keeps_mask")
    assert kept["full"] == (["_saved_attn_mask"], ((5, 6), q.dtype))
    assert kept["pad"] == ([], ((1, 1, 1, 6), q.dtype))
    assert g_text(PAGE, "fused_full_mask_shape") == "(5, 6)"
    assert g_text(PAGE, "fused_full_mask_dtype") == "float64" == str(q.dtype).split(".")[-1]
    assert g_text(PAGE, "fused_pad_mask_shape") == "(1, 1, 1, 6)"


def test_memory_of_A_against_O_and_the_log_sum_exp():
    heads, T, layers, d_v = (int(g(PAGE, n)) for n in ("mem_heads", "mem_T", "mem_layers", "mem_d_v"))
    assert (heads, T, layers, d_v) == (32, 8192, 32, 128)
    assert g(PAGE, "A_gib_per_layer") == heads * T * T * 2 / 2**30 == 4.0
    assert g(PAGE, "A_gib_all_layers") == layers * 4.0 == 128.0
    assert g(PAGE, "OL_mib_per_layer") == pytest.approx((heads * T * d_v * 2 + heads * T * 4) / 2**20)


def _page_functions(marker, *names):
    """The named functions of the page's cell that contains ``marker``, without the rest."""
    tree = ast.parse(page_cell(PAGE, marker))
    tree.body = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    ns = {"np": np, "math": math, "T_": lambda X: np.swapaxes(X, -1, -2)}
    exec(compile(tree, PAGE, "exec"), ns)
    return [ns[n] for n in names]


def _recompute_masks(seed=0):
    """Every mask kind the prose lists, for (B, H, T_q, T_k) = (2, 3, 5, 6), at another seed."""
    rng = np.random.default_rng(seed)
    blind = np.tril(np.ones((5, 6), dtype=bool))
    blind[rng.integers(5)] = False
    lengths = rng.integers(1, 7, size=2)
    return {"no mask": None, "causal": np.tril(np.ones((5, 6), dtype=bool)),
            "bottom-right causal": np.tril(np.ones((5, 6), dtype=bool), 1),
            "padding": (np.arange(6) < lengths[:, None])[:, None, None, :],
            "a query with no key": blind}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_pages_tiled_backward_matches_autograd_with_every_mask_kind(seed):
    tiled, log_sum_exp = _page_functions("def tiled_attention_backward",
                                         "tiled_attention_backward", "log_sum_exp")
    Q, K, V, dO = _page_inputs(seed + 30)
    for name, mask in _recompute_masks(seed).items():
        want = _autograd(Q, K, V, dO, mask)
        if mask is not None and not mask.any(-1).all():  # torch's softmax gives NaN there
            want = attention.attention_backward(Q, K, V, dO, mask)
        S = Q @ np.swapaxes(K, -1, -2) / 2.0
        S = S if mask is None else np.where(mask, S, -np.inf)
        O, _ = attention.scaled_dot_product_attention(Q, K, V, mask)
        for block in (1, 2, 4):
            got = tiled(Q, K, V, O, log_sum_exp(S), dO, mask, block=block)
            for a, b in zip(got, want):
                np.testing.assert_allclose(a, b, atol=1e-12, err_msg=name)
    assert 0 <= g(PAGE, "recompute_err") < 1e-12
    assert 0 <= g(PAGE, "tiled_backward_err") < 1e-12
    assert g(PAGE, "n_mask_kinds") == 5


def test_without_the_mask_or_the_guard_the_recompute_backward_fails_as_stated():
    Q, K, V, dO = _page_inputs()
    causal = np.tril(np.ones((5, 6), dtype=bool))
    O, _ = attention.scaled_dot_product_attention(Q, K, V, causal)
    S = np.where(causal, Q @ np.swapaxes(K, -1, -2) / 2.0, -np.inf)
    L = np.log(np.exp(S).sum(-1))
    forgot = attention.backward.tiled_attention_backward(Q, K, V, dO, 2, O=O, lse=L)
    err = max(float(np.abs(a - b).max()) for a, b in zip(forgot, _autograd(Q, K, V, dO, causal)))
    assert g(PAGE, "forgot_mask_err") == pytest.approx(err, rel=1e-9) and err > 1
    # no guard: e^(-inf - (-inf)) for the query with no key, every entry of dV NaN
    blind = causal.copy()
    blind[2] = False
    with np.errstate(invalid="ignore", divide="ignore"):
        S_b = np.where(blind, Q @ np.swapaxes(K, -1, -2) / 2.0, -np.inf)
        A = np.exp(S_b - np.log(np.exp(S_b).sum(-1, keepdims=True)))
    assert np.isnan(np.swapaxes(A, -1, -2) @ dO).all()
    assert g(PAGE, "unguarded_nans") == g(PAGE, "dV_size") == V.size
    # PyTorch's fused CPU kernel saves a finite log-sum-exp, 0, for a query that sees no key
    q = torch.tensor(Q[:1, :1], requires_grad=True)
    k = torch.tensor(K[:1, :1])
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        out = F.scaled_dot_product_attention(q, k, k, attn_mask=torch.from_numpy(blind))
    lse = out.grad_fn._saved_logsumexp.detach()[0, 0]
    assert float(lse[2]) == 0.0 == g(PAGE, "torch_blind_lse")
    assert torch.isfinite(lse).all()
    out.backward(torch.ones_like(out))
    assert float(q.grad[..., 2, :].abs().max()) == 0.0


def test_the_recompute_count_is_five_products_against_two():
    from torch.utils.flop_counter import sdpa_backward_flop_count, sdpa_flop_count
    for b, h, t_q, t_k, d in ((1, 4, 512, 512, 64), (2, 3, 40, 24, 16)):
        q, k = (b, h, t_q, d), (b, h, t_k, d)
        assert sdpa_flop_count(q, k, k) == 2 * (2 * b * h * t_q * t_k * d)
        assert sdpa_backward_flop_count(q, q, k, k) == 5 * (2 * b * h * t_q * t_k * d)
    assert g(PAGE, "recompute_flop_ratio") == 2.5
    # "(with d_v = d_k; in general (3 d_k + 2 d_v)/(d_k + d_v))"
    for d_k, d_v in ((64, 64), (64, 32), (16, 48)):
        q, k, v, o = (1, 4, 100, d_k), (1, 4, 300, d_k), (1, 4, 300, d_v), (1, 4, 100, d_v)
        ratio = sdpa_backward_flop_count(o, q, k, v) / sdpa_flop_count(q, k, v)
        assert ratio == pytest.approx((3 * d_k + 2 * d_v) / (d_k + d_v))
    text = (CHAPTERS / f"{PAGE}.md").read_text()
    assert "five products against two" in text and "five products against the forward" in text


def _one_step_ratios(d_k, seed=1, T=8, d_model=32, d_v=4, lr=1e-2, eps=1e-8):
    """Alternative (c = 1/d_k, sqrt(d_k) W_Q) over standard, for the gradient and one SGD and
    one Adam step of the effective query weights; and the largest deviation from 1 of the
    ratios for W_K and W_V. NumPy, with the library's backward pass and the chain rule
    dW = X^T dX, and Adam's first step written out (m/(sqrt(v) + eps) = g/(|g| + eps))."""
    rng = np.random.default_rng(seed)
    X, G = rng.standard_normal((T, d_model)), rng.standard_normal((T, d_v))
    W_Q, W_K = rng.standard_normal((2, d_model, d_k)) / math.sqrt(d_model)
    W_V = rng.standard_normal((d_model, d_v)) / math.sqrt(d_model)
    r = math.sqrt(d_k)

    def grads(W_q, temperature):
        dQ, dK, dV = attention.attention_backward(X @ W_q, X @ W_K, X @ W_V, G, temperature=temperature)
        return X.T @ dQ, X.T @ dK, X.T @ dV

    std, alt = list(grads(W_Q, 1.0)), list(grads(r * W_Q, r))  # temperature sqrt(d_k): c = 1/d_k
    sgd = [lr * x for x in std], [lr * x for x in alt]
    adam = [lr * x / (np.abs(x) + eps) for x in std], [lr * x / (np.abs(x) + eps) for x in alt]
    n = np.linalg.norm
    others = [n(a) / n(s_) for a, s_ in zip(alt[1:] + sgd[1][1:] + adam[1][1:],
                                            std[1:] + sgd[0][1:] + adam[0][1:])]
    return (n(alt[0]) / n(std[0]), n(sgd[1][0] / r) / n(sgd[0][0]),
            n(adam[1][0] / r) / n(adam[0][0]), max(abs(o - 1) for o in others))


@pytest.mark.parametrize("d_k", [16, 64, 256])
def test_folding_sqrt_d_k_into_W_Q_slows_its_learning_by_d_k_under_SGD_and_sqrt_d_k_under_Adam(d_k):
    grad, sgd, adam, others = _one_step_ratios(d_k)
    assert grad == pytest.approx(1 / math.sqrt(d_k), rel=1e-12)
    assert sgd == pytest.approx(1 / d_k, rel=1e-12)
    assert adam == pytest.approx(1 / math.sqrt(d_k), rel=1e-4)
    assert others < 1e-12


def test_moving_the_factor_into_W_K_instead_swaps_the_roles_of_dQ_and_dK():
    rng = np.random.default_rng(2)
    d_k = 64
    Q, K, V, dO = (rng.standard_normal(s) for s in ((8, d_k), (8, d_k), (8, 4), (8, 4)))
    std = attention.attention_backward(Q, K, V, dO)
    alt = attention.attention_backward(Q, math.sqrt(d_k) * K, V, dO, temperature=math.sqrt(d_k))
    ratios = [np.linalg.norm(a) / np.linalg.norm(s_) for a, s_ in zip(alt, std)]
    assert ratios == pytest.approx([1.0, 1 / math.sqrt(d_k), 1.0], rel=1e-12)


def test_the_glued_step_ratios_are_those_ratios():
    assert g(PAGE, "scale_grad_256") == pytest.approx(1 / 16, rel=1e-9)
    assert g(PAGE, "scale_sgd_256") == pytest.approx(1 / 256, rel=1e-9)
    assert g(PAGE, "scale_adam_256") == pytest.approx(1 / 16, rel=1e-4)
    assert g(PAGE, "scale_other_min") == pytest.approx(1.0, abs=1e-9)
    assert g(PAGE, "scale_other_max") == pytest.approx(1.0, abs=1e-9)
    # SGD's step and Adam's first step are proportional to the learning rate
    assert g(PAGE, "scale_lr") == 0.01
    for lr in (1e-3, 1.0):
        assert _one_step_ratios(256, lr=lr)[1:3] == pytest.approx(_one_step_ratios(256)[1:3], rel=1e-9)


def test_mup_is_not_described_as_the_demo():
    text = (CHAPTERS / f"{PAGE}.md").read_text()
    assert "the one muP uses" not in text and "it is not muP" in text
    assert "{ref}`variance` page describes it" in text


# --- the verification section ---------------------------------------------------------------

def _central_differences(f, X, eps=1e-6):
    grad = np.zeros_like(X)
    for idx in np.ndindex(X.shape):
        Xp, Xm = X.copy(), X.copy()
        Xp[idx] += eps
        Xm[idx] -= eps
        grad[idx] = (f(Xp) - f(Xm)) / (2 * eps)
    return grad


def test_central_difference_parameters_the_prose_quotes():
    """The prose: epsilon = 1e-6 (the default the page uses), rounding of order 1e-16 / epsilon."""
    assert inspect.signature(attention.numerical_gradient).parameters["eps"].default == 1e-6
    assert 1e-16 < np.finfo(np.float64).eps < 1e-15
    text = (CHAPTERS / f"{PAGE}.md").read_text()
    assert r"\varepsilon = 10^{-6}" in text and r"10^{-16}/\varepsilon" in text


@pytest.mark.parametrize("shape", [(5, 6, 4, 3), (3, 3, 2, 2), (7, 4, 8, 5)])
@pytest.mark.parametrize("seed", [11, 12])
def test_central_differences_agree_with_autograd_at_the_glued_level(shape, seed):
    T_q, T_k, d_k, d_v = shape
    rng = np.random.default_rng(seed)
    Q, K, V, G = (rng.standard_normal(s) for s in ((T_q, d_k), (T_k, d_k), (T_k, d_v), (T_q, d_v)))
    for m in (None, np.tril(np.ones((T_q, T_k), dtype=bool))):
        dQ, dK, dV = _autograd(Q, K, V, G, m)

        def loss(Q_, K_, V_):
            return float(np.sum(torch_softmax_attention(Q_, K_, V_, m)[0] * G))
        for got, numeric in ((dQ, _central_differences(lambda X: loss(X, K, V), Q)),
                             (dK, _central_differences(lambda X: loss(Q, X, V), K)),
                             (dV, _central_differences(lambda X: loss(Q, K, X), V))):
            assert np.abs(got - numeric).max() / np.abs(numeric).max() < 1e-8
    assert g(PAGE, "numeric_cases") == 12
    assert 0 < g(PAGE, "numeric_rel_err_min") <= g(PAGE, "numeric_rel_err_max") < 1e-8
    assert 0 < g(PAGE, "numeric_rel_err_max_1e5") < g(PAGE, "numeric_rel_err_max") / 3


def test_central_differences_at_1e_minus_5_beat_1e_minus_6_on_the_pages_problems():
    """The prose: the error shrinks when the step moves from 1e-6 to 1e-5, so it is the
    check's own, not the derivation's."""
    worst = {}
    for eps in (1e-6, 1e-5):
        for (T_q, T_k, d_k, d_v), seed in [(s, r) for s in ((5, 6, 4, 3), (3, 3, 2, 2), (7, 4, 8, 5))
                                           for r in (11, 12)]:
            rng = np.random.default_rng(seed)
            Q, K, V, G = (rng.standard_normal(s) for s in ((T_q, d_k), (T_k, d_k), (T_k, d_v), (T_q, d_v)))
            for m in (None, np.tril(np.ones((T_q, T_k), dtype=bool))):
                dQ, _, _ = _autograd(Q, K, V, G, m)
                numeric = _central_differences(
                    lambda X: float(np.sum(torch_softmax_attention(X, K, V, m)[0] * G)), Q, eps)
                err = np.abs(dQ - numeric).max() / np.abs(numeric).max()
                worst[eps] = max(worst.get(eps, 0.0), err)
    assert worst[1e-5] < worst[1e-6] / 3


def test_autograd_agreement_is_at_the_precision_of_each_dtype():
    Q, K, V, dO = _page_inputs()
    mask = np.tril(np.ones((5, 6), dtype=bool))
    ref = _autograd(Q, K, V, dO, mask)
    low = _autograd(Q, K, V, dO, mask, dtype=torch.float32)
    err32 = max(float(np.abs(a - b).max()) for a, b in zip(ref, low))
    assert 1e-8 < err32 < 1e-5
    assert g(PAGE, "autograd_problems") == 3
    assert 1e-8 < g(PAGE, "autograd_err_fp32") < 1e-5
    assert 0 <= g(PAGE, "autograd_err_fp64") < 1e-12
    # "a few units of float32 rounding on gradients whose entries reach ..."
    grad_max = max(float(np.abs(x).max()) for x in ref)
    assert g(PAGE, "autograd_grad_max") >= grad_max
    assert g(PAGE, "fp32_eps") == float(np.finfo(np.float32).eps)
    assert g(PAGE, "autograd_err_fp32") < 10 * g(PAGE, "fp32_eps") * g(PAGE, "autograd_grad_max")


def test_gradcheck_passes_ours_and_rejects_a_backward_without_D():
    assert g_bool(PAGE, "gradcheck_nomask") and g_bool(PAGE, "gradcheck_mask")
    assert not g_bool(PAGE, "gradcheck_wrong")
    defaults = inspect.signature(torch.autograd.gradcheck).parameters
    assert g(PAGE, "gradcheck_atol") == defaults["atol"].default == 1e-5
    assert g(PAGE, "gradcheck_rtol") == defaults["rtol"].default == 1e-3

    class NoD(torch.autograd.Function):  # independent of the page's cell
        @staticmethod
        def forward(ctx, q, k, v):
            ctx.save_for_backward(q, k, v)
            return torch.softmax(q @ k.T / 2.0, -1) @ v

        @staticmethod
        def backward(ctx, dO):
            q, k, v = ctx.saved_tensors
            A = torch.softmax(q @ k.T / 2.0, -1)
            dS = A * (dO @ v.T)
            return dS @ k / 2.0, dS.T @ q / 2.0, A.T @ dO

    rng = np.random.default_rng(1)
    inputs = tuple(torch.tensor(rng.standard_normal(s), requires_grad=True) for s in ((5, 4), (6, 4), (6, 3)))
    assert torch.autograd.gradcheck(NoD.apply, inputs, raise_exception=False) is False

    calls = [0]

    class Counted(torch.autograd.Function):  # the right backward, counted
        @staticmethod
        def forward(ctx, q, k, v):
            ctx.save_for_backward(q, k, v)
            return torch.softmax(q @ k.T / 2.0, -1) @ v

        @staticmethod
        def backward(ctx, dO):
            calls[0] += 1
            q, k, v = ctx.saved_tensors
            with torch.enable_grad():
                q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
                out = torch.softmax(q @ k.T / 2.0, -1) @ v
                return torch.autograd.grad(out, (q, k, v), dO)

    assert torch.autograd.gradcheck(Counted.apply, inputs, raise_exception=False)
    n_out = 5 * 3
    assert g(PAGE, "gradcheck_entries") == n_out
    assert calls[0] == g(PAGE, "gradcheck_calls") > 2 * n_out  # twice per entry, and more
    calls[0] = 0
    assert torch.autograd.gradcheck(NoD.apply, inputs, raise_exception=False) is False
    assert g(PAGE, "gradcheck_calls_wrong") == 2 * n_out


def test_the_fused_kernel_runs_with_equal_widths_and_agrees():
    rng = np.random.default_rng(5)
    Q, K, V, dO = (rng.standard_normal(s) for s in ((2, 3, 5, 4), (2, 3, 6, 4), (2, 3, 6, 4), (2, 3, 5, 4)))
    q, k, v = (torch.tensor(x, requires_grad=True) for x in (Q, K, V))
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert "Flash" in type(out.grad_fn).__name__
    out.backward(torch.from_numpy(dO))
    mask = np.tril(np.ones((5, 6), dtype=bool))
    for t, r in zip((q, k, v), _autograd(Q, K, V, dO, mask)):
        np.testing.assert_allclose(t.grad.numpy(), r, atol=1e-12)
    with pytest.raises(RuntimeError), sdpa_kernel(SDPBackend.FLASH_ATTENTION):  # d_v != d_k
        F.scaled_dot_product_attention(q, k, v[..., :3])
    assert glued(PAGE)["builtin_backend"].strip("'\"") == "ScaledDotProductFlashAttentionForCpuBackward0"
    # unpinned, with d_v != d_k: a silent fallback, the graph MATH builds
    q3 = torch.tensor(Q, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        silent = F.scaled_dot_product_attention(q3, torch.tensor(K), torch.tensor(V[..., :3]))
    assert not caught
    with sdpa_kernel(SDPBackend.MATH):
        pinned = F.scaled_dot_product_attention(q3, torch.tensor(K), torch.tensor(V[..., :3]))
    assert _nodes(silent) == _nodes(pinned) and not any("Flash" in n for n in _nodes(silent))
    assert g_bool(PAGE, "fallback_is_math") and not g_bool(PAGE, "fallback_has_fused")
    # pinned to the fused kernel: an error, and a warning that names the reason
    with warnings.catch_warnings(record=True) as caught, pytest.raises(RuntimeError) as error:
        warnings.simplefilter("always")
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            F.scaled_dot_product_attention(q3, torch.tensor(K), torch.tensor(V[..., :3]))
    assert any("same last dimension" in str(w.message) for w in caught)
    assert g_text(PAGE, "flash_error") == str(error.value).strip()
    assert "because: Flash attention requires q,k,v to have the same last dimension" in str(
        executed_notebook(PAGE))
    assert 0 <= g(PAGE, "builtin_backward_err") < 1e-12


def _nodes(out):
    names, todo = set(), [out.grad_fn]
    while todo:
        node = todo.pop()
        if node is not None and type(node).__name__ not in names:
            names.add(type(node).__name__)
            todo += [f for f, _ in node.next_functions]
    return names


# --- what the reader sees ---------------------------------------------------------------------


def test_glue_comes_from_the_book_module_and_only_timings_are_measurements():
    text = (CHAPTERS / f"{PAGE}.md").read_text()
    assert "from myst_nb import glue" not in text and "from attention.glue import glue" in text
    for cell in executed_notebook(PAGE)["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if "measurement" in tags:
            assert "cpu_time" in "".join(cell["source"]) or "seconds" in "".join(cell["source"])
