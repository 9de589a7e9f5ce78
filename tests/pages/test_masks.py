"""Masks: every number the prose quotes, recomputed independently of the page's cells
(torch, plain Python or a fresh NumPy computation), and the page's exercises."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from attention import checkers
from tests.glue import executed_notebook
from tests.pages._common import (CHAPTERS, g, g_bool, g_text, page_cell,
                                 torch_softmax_attention)

PAGE = "masks"


def _mask_example():
    rng = np.random.default_rng(1)
    T, d_k = 6, 8
    Q, K, V = (rng.standard_normal((T, d_k)) for _ in range(3))
    return Q, K, V, np.tril(np.ones((T, T), dtype=bool))


def test_exercise_weights_with_minus_infinity_and_with_zero():
    e2, e1 = math.exp(2), math.exp(1)
    inf_w = [e2 / (e2 + e1), e1 / (e2 + e1), 0.0]
    zero_w = [e2 / (e2 + e1 + 1), e1 / (e2 + e1 + 1), 1 / (e2 + e1 + 1)]
    for k in range(3):
        assert g(PAGE, f"inf_w_{k}") == pytest.approx(inf_w[k], abs=1e-12)
        assert g(PAGE, f"zero_w_{k}") == pytest.approx(zero_w[k], abs=1e-12)


def test_causal_mask_gives_future_keys_zero_weight_and_row_zero_is_one_hot():
    Q, K, V, M = _mask_example()
    _, A = torch_softmax_attention(Q, K, V, M)
    assert np.all(np.triu(A, k=1) == 0.0) and g(PAGE, "mask_upper_max") == 0.0
    assert A[0, 0] == 1.0 == g(PAGE, "mask_row0_first")
    assert 0 <= g(PAGE, "mask_lib_err") < 1e-12
    assert g(PAGE, "bias_equals_mask_err") == 0.0


def test_masking_with_zero_instead_of_minus_infinity_leaks_weight_to_the_future():
    Q, K, _, M = _mask_example()
    s = torch.from_numpy(Q @ K.T / math.sqrt(8)).masked_fill(~torch.from_numpy(M), 0.0)
    leak = float(torch.softmax(s, dim=-1)[0, 1:].sum())
    assert g(PAGE, "mask_zero_leak") == pytest.approx(leak, rel=1e-9)


def test_alibi_moves_the_last_querys_weight_to_its_nearest_keys():
    Q, K, _, M = _mask_example()
    T = 6
    i, j = np.indices((T, T))
    s = torch.from_numpy(Q @ K.T / math.sqrt(8))
    bias = torch.from_numpy(np.where(M, -0.5 * (i - j), -np.inf))
    before = torch.softmax(s.masked_fill(~torch.from_numpy(M), float("-inf")), -1)
    after = torch.softmax(s + bias, -1)
    assert g(PAGE, "alibi_last_before") == pytest.approx(float(before[-1, -1]), rel=1e-9)
    assert g(PAGE, "alibi_last_after") == pytest.approx(float(after[-1, -1]), rel=1e-9)
    assert g(PAGE, "alibi_first_before") == pytest.approx(float(before[-1, 0]), rel=1e-9)
    assert g(PAGE, "alibi_first_after") == pytest.approx(float(after[-1, 0]), rel=1e-9)
    # "PyTorch's built-in attention accepts such a floating-point attn_mask and adds it"
    q, k, v = (torch.from_numpy(x)[None, None] for x in _mask_example()[:3])
    O_bias = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)[0, 0]
    assert torch.allclose(O_bias, after @ v[0, 0], atol=1e-14, rtol=0)
    assert g(PAGE, "alibi_last_after") > g(PAGE, "alibi_last_before")
    assert g(PAGE, "alibi_first_after") < g(PAGE, "alibi_first_before")


# --- one machinery, three models ---------------------------------------------------------

def _visible(kind: str, T: int, prefix: int) -> np.ndarray:
    """The three masks from their definitions, in plain Python."""
    rule = {"encoder": lambda i, j: True, "decoder": lambda i, j: j <= i,
            "prefix LM": lambda i, j: j < prefix or j <= i}[kind]
    return np.array([[rule(i, j) for j in range(T)] for i in range(T)])


def _projections():
    rng = np.random.default_rng(4)
    d_model, d_k, T = 16, 8, 8
    X = rng.standard_normal((T, d_model))
    W_Q, W_K, W_V = (rng.standard_normal((d_model, d_k)) / math.sqrt(d_model) for _ in range(3))
    return rng, X, W_Q, W_K, W_V


def _torch_self_attention(X, W_Q, W_K, W_V, mask):
    return torch_softmax_attention(X @ W_Q, X @ W_K, X @ W_V, mask)[0]


def test_seeing_is_depending_at_other_seeds_and_prefix_lengths():
    for seed, T, prefix in ((0, 6, 2), (1, 9, 4), (2, 5, 5)):
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((T, 6))
        Ws = [rng.standard_normal((6, 4)) for _ in range(3)]
        for kind in ("encoder", "decoder", "prefix LM"):
            M = _visible(kind, T, prefix)
            for t in range(T):
                X2 = X.copy()
                X2[t] += 1.0
                d = np.abs(_torch_self_attention(X2, *Ws, M) - _torch_self_attention(X, *Ws, M)).max(-1)
                assert np.flatnonzero(d > 1e-12).tolist() == [i for i in range(T) if M[i, t]]


def test_changing_a_token_moves_exactly_the_outputs_that_see_it():
    assert (g(PAGE, "models_T"), g(PAGE, "models_prefix")) == (8, 3)
    rng, X, W_Q, W_K, W_V = _projections()
    moved = {}
    for kind in ("encoder", "decoder", "prefix LM"):
        M = _visible(kind, 8, 3)
        for t in (1, 6):
            X2 = X.copy()
            X2[t] = rng.standard_normal(16)
            d = np.abs(_torch_self_attention(X2, W_Q, W_K, W_V, M)
                       - _torch_self_attention(X, W_Q, W_K, W_V, M)).max(-1)
            moved[kind, t] = np.flatnonzero(d > 1e-12).tolist()
            assert moved[kind, t] == [i for i in range(8) if M[i, t]]  # "sees" = depends on
    assert moved["decoder", 1] == list(range(1, 8)) and g(PAGE, "moved_decoder_first") == 1
    assert len(moved["prefix LM", 1]) == 8 == g(PAGE, "moved_prefix_count")
    assert moved["prefix LM", 6] == moved["decoder", 6] == [6, 7]
    assert g_bool(PAGE, "moved_prefix_after_as_decoder")


def test_cached_decoding_reproduces_the_causal_forward_pass_at_several_seeds_and_lengths():
    for seed, T in ((4, 8), (0, 3), (1, 17), (2, 30)):
        rng = np.random.default_rng(seed)
        X = rng.standard_normal((T, 16))
        W_Q, W_K, W_V = (rng.standard_normal((16, 8)) / 4.0 for _ in range(3))
        full = _torch_self_attention(X, W_Q, W_K, W_V, _visible("decoder", T, 0))
        for t in range(T):  # step t: one query against the t + 1 cached keys, no mask
            o = torch_softmax_attention(X[t:t + 1] @ W_Q, X[:t + 1] @ W_K, X[:t + 1] @ W_V)[0]
            np.testing.assert_allclose(o[0], full[t], atol=1e-13)
    assert 0 <= g(PAGE, "cache_err") < 1e-13


def test_a_cached_chunk_needs_the_bottom_right_mask_and_top_left_is_wrong():
    _, X, W_Q, W_K, W_V = _projections()
    T, cached = 8, 5
    assert g(PAGE, "chunk_cached") == cached
    full = _torch_self_attention(X, W_Q, W_K, W_V, _visible("decoder", T, 0))
    from torch.nn.attention.bias import causal_lower_right

    right = causal_lower_right(T - cached, T)._materialize(torch.device("cpu")).numpy()
    left = np.tril(np.ones((T - cached, T), dtype=bool))
    o_right = torch_softmax_attention(X[cached:] @ W_Q, X @ W_K, X @ W_V, right)[0]
    o_left = torch_softmax_attention(X[cached:] @ W_Q, X @ W_K, X @ W_V, left)[0]
    assert np.abs(o_right - full[cached:]).max() < 1e-13
    assert 0 <= g(PAGE, "chunk_err_bottom_right") < 1e-13
    for c in range(T):  # every split of the sequence into cache + chunk
        m = np.tril(np.ones((T - c, T), dtype=bool), k=c)
        o = torch_softmax_attention(X[c:] @ W_Q, X @ W_K, X @ W_V, m)[0]
        assert np.abs(o - full[c:]).max() < 1e-13
    assert g(PAGE, "chunk_err_top_left") == pytest.approx(np.abs(o_left - full[cached:]).max(), rel=1e-9)
    assert g(PAGE, "chunk_err_top_left") > 0.1
    # "what PyTorch's is_causal=True uses": the top-left triangle, with T_q != T_k
    q, k, v = (torch.from_numpy(x)[None, None] for x in (X[cached:] @ W_Q, X @ W_K, X @ W_V))
    by_flag = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    by_mask = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.from_numpy(left))
    assert torch.allclose(by_flag, by_mask, atol=1e-14, rtol=0)


# --- when -inf fails ------------------------------------------------------------------

def test_fully_masked_row_is_nan_naively_and_zero_under_the_policy():
    row = torch.full((4,), float("-inf"))
    naive = torch.exp(row - row.max())
    assert int(torch.isnan(naive / naive.sum()).sum()) == g(PAGE, "empty_row_nan") == 4
    assert g(PAGE, "policy_row_abs") == 0.0


def test_torch_returns_zeros_for_a_fully_masked_row_with_every_cpu_kernel_and_dtype():
    Q, K, V, M = _mask_example()
    M = M.copy()
    M[2] = False
    q, k, v = (torch.from_numpy(x)[None, None] for x in (Q, K, V))
    for backend in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION):
        for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16):
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(q.to(dtype), k.to(dtype), v.to(dtype),
                                                     attn_mask=torch.from_numpy(M))
            assert float(out[0, 0, 2].abs().max()) == 0.0
            assert not torch.isnan(out).any()
    # the same with T_q != T_k, batch and head dimensions, and an additive -inf mask
    g_ = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 3, T, 8, generator=g_, dtype=torch.float64) for T in (3, 7, 7))
    M = torch.ones(3, 7, dtype=torch.bool)
    M[1] = False
    bias = torch.zeros(3, 7, dtype=torch.float64).masked_fill(~M, float("-inf"))
    for backend in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION):
        for mask in (M, bias):
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            assert torch.equal(out[..., 1, :], torch.zeros(2, 3, 8))
    assert g(PAGE, "torch_empty_row_abs") == 0.0 and g(PAGE, "torch_empty_row_nan") == 0
    assert g_text(PAGE, "torch_version") == torch.__version__


def test_an_empty_row_poisons_dV_and_W_V_but_not_dQ_dK_under_masked_fill():
    # The same experiment, built independently: autograd through masked_fill and a
    # hand-written stable softmax, a loss that ignores the empty query.
    rng = np.random.default_rng(11)
    T, d_model, d_k = 6, 16, 8
    X = torch.from_numpy(rng.standard_normal((T, d_model)))
    Ws = [torch.from_numpy(rng.standard_normal((d_model, d_k))).requires_grad_() for _ in range(3)]
    Q, K, V = (X @ W for W in Ws)
    for x in (Q, K, V):
        x.retain_grad()
    M = torch.ones(T, T, dtype=torch.bool).tril()
    M[2] = False
    S = (Q @ K.T / math.sqrt(d_k)).masked_fill(~M, float("-inf"))
    E = torch.exp(S - S.amax(-1, keepdim=True))
    O = (E / E.sum(-1, keepdim=True)) @ V
    keep = torch.arange(T) != 2
    loss = (O[keep] * torch.ones_like(O[keep])).sum()
    assert torch.isfinite(loss)  # "the loss is finite, since it never looks at query 2"
    loss.backward()
    assert not torch.isnan(Q.grad).any() and not torch.isnan(K.grad).any()
    assert torch.isnan(V.grad).any(dim=-1).all()
    assert torch.isnan(Ws[2].grad).all() and not torch.isnan(Ws[0].grad).any()
    assert g(PAGE, "nan_T") == 6
    assert (g(PAGE, "nan_dQ_rows"), g(PAGE, "nan_dK_rows"), g(PAGE, "nan_dV_rows")) == (0, 0, 6)
    assert g(PAGE, "nan_WV_entries") == g(PAGE, "nan_WV_size") == 128
    assert g(PAGE, "nan_WQK_entries") == 0


def test_one_optimizer_step_after_an_empty_row_makes_W_V_nan_and_clipping_spreads_it():
    rng = np.random.default_rng(11)
    T, d_model, d_k = 6, 16, 8
    X = torch.from_numpy(rng.standard_normal((T, d_model)))
    Ws0 = [torch.from_numpy(rng.standard_normal((d_model, d_k))) for _ in range(3)]
    M = torch.ones(T, T, dtype=torch.bool).tril()
    M[2] = False
    keep = torch.arange(T) != 2

    def grads(builtin, backend=SDPBackend.MATH):
        Ws = [w.clone().requires_grad_() for w in Ws0]
        Q, K, V = (X @ w for w in Ws)
        if builtin:  # 4-D inputs, the kernel pinned: both CPU kernels can run
            with sdpa_kernel(backend):
                O = F.scaled_dot_product_attention(Q[None, None], K[None, None], V[None, None],
                                                   attn_mask=M)[0, 0]
        else:
            S = (Q @ K.T / math.sqrt(d_k)).masked_fill(~M, float("-inf"))
            E = torch.exp(S - S.amax(-1, keepdim=True))
            O = (E / E.sum(-1, keepdim=True)) @ V
        O[keep].sum().backward()
        return Ws

    for make in (lambda p: torch.optim.SGD(p, lr=0.1), lambda p: torch.optim.Adam(p, lr=0.1),
                 lambda p: torch.optim.AdamW(p, lr=0.1)):
        Ws = grads(builtin=False)
        make(Ws).step()
        assert [int(torch.isnan(w).sum()) for w in Ws] == [0, 0, d_model * d_k]
        Ws = grads(builtin=False)
        torch.nn.utils.clip_grad_norm_(Ws, 1.0)
        make(Ws).step()
        assert all(torch.isnan(w).all() for w in Ws)
    for backend in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION):
        assert sum(int(torch.isnan(w.grad).sum()) for w in grads(True, backend)) == 0
    # "with 3-D ones only MATH can run": the flash kernel refuses 3-D inputs
    q = torch.zeros(1, T, d_k, dtype=torch.float64)
    with pytest.raises(RuntimeError), sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        F.scaled_dot_product_attention(q, q, q, attn_mask=M)
    assert g(PAGE, "sdpa_backends_tried") == 2
    cell = page_cell(PAGE, "sdpa_nan = {}")
    assert "SDPBackend.MATH, SDPBackend.FLASH_ATTENTION" in cell and "[None, None]" in cell
    assert g(PAGE, "step_nan_WV_min") == g(PAGE, "nan_WV_size") == 128
    assert g(PAGE, "step_nan_WQK_max") == 0
    assert g(PAGE, "clipped_nan_min") == g(PAGE, "weights_size") == 3 * 128
    assert g(PAGE, "sdpa_nan_entries") == 0


def _empty_row_head(seed=11, T=6, d_model=16, d_k=8):
    rng = np.random.default_rng(seed)
    X = torch.from_numpy(rng.standard_normal((T, d_model)))
    Ws0 = [torch.from_numpy(rng.standard_normal((d_model, d_k))) for _ in range(3)]
    M = torch.ones(T, T, dtype=torch.bool).tril()
    M[2] = False
    keep = torch.arange(T) != 2

    def loss(Ws, apply_mask):
        Q, K, V = (X @ w for w in Ws)
        S = apply_mask(Q @ K.T / math.sqrt(d_k), M)
        E = torch.exp(S - S.amax(-1, keepdim=True))
        return ((E / E.sum(-1, keepdim=True)) @ V)[keep].sum()

    return Ws0, loss


def test_an_additive_minus_infinity_mask_sends_nan_into_dQ_and_dK_where_replacing_does_not():
    Ws0, loss = _empty_row_head()
    ways = {
        "masked_fill": lambda S, M: S.masked_fill(~M, float("-inf")),
        "where": lambda S, M: torch.where(M, S, torch.tensor(float("-inf"), dtype=S.dtype)),
        "add": lambda S, M: S + torch.zeros_like(S).masked_fill(~M, float("-inf")),
    }
    nan = {}
    for name, way in ways.items():
        Ws = [w.clone().requires_grad_() for w in Ws0]
        out = loss(Ws, way)
        assert torch.isfinite(out)  # the same forward: the loss ignores row 2
        out.backward()
        nan[name] = [int(torch.isnan(w.grad).sum()) for w in Ws]
    assert nan["masked_fill"] == nan["where"] == [0, 0, 128]
    assert nan["add"] == [128, 128, 128]
    assert g(PAGE, "replace_nan_WQK") == 0
    assert (g(PAGE, "bias_nan_WQ"), g(PAGE, "bias_nan_WK"), g(PAGE, "bias_nan_WV")) == (128,) * 3
    # the forward passes agree exactly on the rows with a visible key
    Q, K, V, M = _mask_example()
    S = torch.from_numpy(Q @ K.T / math.sqrt(8))
    Mt = torch.from_numpy(M)
    a = torch.softmax(ways["add"](S, Mt), -1)
    assert torch.equal(a, torch.softmax(ways["masked_fill"](S, Mt), -1))
    text = (CHAPTERS / f"{PAGE}.md").read_text()
    assert "not the same backward pass" in text
    assert "In the forward pass the bias form reproduces" in text


def test_grad_scaler_skips_the_poisoned_step_and_lowers_its_scale():
    Ws0, loss = _empty_row_head()
    Ws = [w.clone().requires_grad_() for w in Ws0]
    optimizer = torch.optim.SGD(Ws, lr=0.01)
    scaler = torch.amp.GradScaler("cpu")
    before = scaler.get_scale()
    scaler.scale(loss(Ws, lambda S, M: S.masked_fill(~M, float("-inf")))).backward()
    scaler.step(optimizer)
    scaler.update()
    assert all(torch.equal(w.detach(), w0) for w, w0 in zip(Ws, Ws0))  # skipped
    assert (g(PAGE, "scaler_moved"), g(PAGE, "scale_before"), g(PAGE, "scale_after")) == \
        (0, before, scaler.get_scale()) == (0, 65536.0, 32768.0)


def _online_attention(Q, K, V, M, block, guard):
    """Key blocks with an online softmax, written row by row in plain Python floats."""
    c = 1 / math.sqrt(Q.shape[1])
    out = []
    for i in range(len(Q)):
        m, l, acc = -math.inf, 0.0, np.zeros(V.shape[1])
        for start in range(0, len(K), block):
            js = range(start, min(start + block, len(K)))
            s = [c * float(Q[i] @ K[j]) if M[i, j] else -math.inf for j in js]
            m_new = max([m] + s)
            shift = 0.0 if (guard and m_new == -math.inf) else m_new
            with np.errstate(invalid="ignore"):
                p = np.exp(np.array(s) - shift)
                rescale = np.exp(m - shift)
            l = l * rescale + p.sum()
            acc = acc * rescale + p @ V[list(js)]
            m = m_new
        out.append(acc / l if (l > 0 or not guard) else np.zeros_like(acc))
    return np.array(out)


def test_a_fully_masked_first_key_block_makes_the_unguarded_online_softmax_nan():
    from attention import causal_mask, tiled_attention

    T, pad, d_k = 8, 3, 8
    assert (g(PAGE, "lp_T"), g(PAGE, "lp_pad")) == (T, pad)
    M = causal_mask(T) & (np.arange(T) >= pad)
    Q, K, V = (np.random.default_rng(5).standard_normal((T, d_k)) for _ in range(3))
    with np.errstate(invalid="ignore", divide="ignore"):
        bad = _online_attention(Q, K, V, M, 2, guard=False)
    good = _online_attention(Q, K, V, M, 2, guard=True)
    O_ref, _ = torch_softmax_attention(Q, K, V, M)
    O_ref = np.where(M.any(-1, keepdims=True), O_ref, 0.0)
    assert np.isnan(bad).any(-1).all() and int(M.any(-1).sum()) == 5
    assert (g(PAGE, "lp_nan_rows"), g(PAGE, "lp_seen_rows"), g(PAGE, "lp_seen_nan_rows")) == (8, 5, 5)
    assert np.abs(good - O_ref).max() < 1e-12 and 0 <= g(PAGE, "lp_guarded_err") < 1e-12
    assert np.abs(tiled_attention(Q, K, V, 2, mask=M) - O_ref).max() < 1e-12
    assert 0 <= g(PAGE, "lp_library_err") < 1e-12
    # "a sliding window, under which a late query sees none of the first keys": the rows
    # whose first block is hidden are NaN without the guard, the others are not
    i, j = np.indices((T, T))
    W = (j <= i) & (j > i - 3)  # each query sees itself and the two keys before it
    with np.errstate(invalid="ignore", divide="ignore"):
        bad = _online_attention(Q, K, V, W, 2, guard=False)
    first_hidden = ~W[:, :2].any(-1)
    assert first_hidden.any() and (np.isnan(bad).any(-1) == first_hidden).all()
    O_ref, _ = torch_softmax_attention(Q, K, V, W)
    assert np.abs(tiled_attention(Q, K, V, 2, mask=W) - O_ref).max() < 1e-12


def test_the_empty_row_guards_are_in_the_solution_not_above_the_exercise():
    # st24a: both guards of the policy (shift by 0 where the maximum is -inf, divide a
    # zero sum by 1) were shown in code right above the exercise that asks for them; the
    # text above now teaches the problem (0/0), the solution holds the code
    text = (CHAPTERS / f"{PAGE}.md").read_text()
    above = text[:text.index(":label: ex-numpy-attention")]
    start = text.index("{solution-start} ex-numpy-attention")
    solution = text[start:text.index("{solution-end}", start)]
    for guard in ("np.isneginf(m", "total == 0", "l > 0", "shift by 0", "divided by 1"):
        assert guard not in above, guard
    assert "$0/0$, NaN again" in above
    assert "np.where(np.isneginf(m_new), 0.0, m_new)" in solution
    assert "np.where(l > 0, acc / np.where(l > 0, l, 1.0), 0.0)" in solution
    assert "{glue:text}`lp_guarded_err:.1e`" in solution


def test_a_causal_mask_on_a_left_padded_sequence_empties_the_padding_rows():
    from attention import causal_mask

    for T in range(1, 8):
        for pad in range(T + 1):
            M = causal_mask(T) & (np.arange(T) >= pad)
            assert np.flatnonzero(~M.any(axis=-1)).tolist() == list(range(pad))
    assert "left_padded = np.arange(6) >= 2" in page_cell(PAGE, "left_padded =")


def test_minus_1e9_and_added_finfo_min_overflow_float16():
    assert g(PAGE, "fp16_min") == float(torch.finfo(torch.float16).min) == -65504.0
    assert g(PAGE, "fp16_min_minus_20") == -65524.0
    assert float(torch.tensor(-65524.0).to(torch.float16)) == -math.inf
    assert g(PAGE, "masked_row_len") == 4
    S = torch.tensor([3.0, -20.0, 1.0, 0.5], dtype=torch.float16)
    none = torch.zeros(4, dtype=torch.bool)
    with pytest.raises(RuntimeError, match="overflow"):
        S.masked_fill(~none, -1e9)
    import warnings
    with warnings.catch_warnings():  # "torch.where rounds it silently"
        warnings.simplefilter("error")
        assert torch.isneginf(torch.where(none, S, -1e9)).all()
    # "NumPy warns of an overflow and rounds it"
    with np.errstate(over="warn"), pytest.warns(RuntimeWarning, match="overflow"):
        assert np.isneginf(np.float16(-1e9))
    assert float(torch.tensor(-1e9).to(torch.float16)) == -math.inf == g(PAGE, "big_neg_fp16")
    assert float(torch.tensor(-1e9).to(torch.bfloat16)) == g(PAGE, "big_neg_bf16")
    assert math.isfinite(g(PAGE, "big_neg_bf16"))
    assert g(PAGE, "big_neg_nan") == 4
    scores = torch.tensor([3.0, -20.0, 1.0, 0.5], dtype=torch.float16)
    added = scores + torch.finfo(torch.float16).min
    assert int(torch.isinf(added).sum()) == g(PAGE, "min_added_inf") == 1
    replaced = torch.softmax(torch.full((4,), torch.finfo(torch.float16).min, dtype=torch.float16).float(), 0)
    assert float(replaced[0]) == g(PAGE, "min_replaced_weight") == 0.25
    # adding finfo.min once leaves this row finite: the -inf entry gets weight 0
    w = torch.softmax(added.float(), 0)
    assert not torch.isnan(w).any() and g(PAGE, "min_added_nan") == 0
    assert float(w[0]) == pytest.approx(1 / 3)
    assert g(PAGE, "min_added_weight") == float(torch.tensor(1 / 3, dtype=torch.float16))
    # the real failures: an empty row whose scores are all below -16, and two biases
    assert (g(PAGE, "fp16_gap_at_min"), g(PAGE, "fp16_half_gap_at_min")) == (32.0, 16.0)
    fp16_min = torch.finfo(torch.float16).min
    for x in np.arange(-40.0, 40.0, 0.25):  # "any score below -16 tips the sum over"
        tipped = bool(torch.isinf(torch.tensor(x, dtype=torch.float16) + fp16_min))
        assert tipped == (x <= -16.0), x
    low = torch.tensor([-20.0, -17.0, -30.0, -16.5], dtype=torch.float16) + fp16_min
    assert torch.isneginf(low).all() and g(PAGE, "low_added_nan") == 4
    assert torch.isneginf(scores + fp16_min + fp16_min).all() and g(PAGE, "two_biases_nan") == 4


# --- the exercises -----------------------------------------------------------------------

def test_numpy_attention_reference_solution_passes_its_checker():
    namespace = {"np": np, "math": math, "glue": lambda *a, **k: None,
                 "check_scaled_dot_product_attention": checkers.check_scaled_dot_product_attention}
    exec(page_cell(PAGE, "def reference_scaled_dot_product_attention"), namespace)
    reference = namespace["reference_scaled_dot_product_attention"]
    assert checkers.check_scaled_dot_product_attention(reference, verbose=False)
    assert g_bool(PAGE, "numpy_reference_passes")
    text = str(executed_notebook(PAGE))
    assert "15 of 15 checks passed." in text


def test_exercises_come_before_their_answers():
    text = (CHAPTERS / f"{PAGE}.md").read_text()
    # the -inf exercise precedes the cells that answer it
    ex = text.index(":label: ex-mask-inf")
    for reveal in ("A_zero = stable_softmax", "a_empty = stable_softmax", "big_neg_fp16 ="):
        assert ex < text.index(reveal), reveal
    # ... and the page's introduction does not give away its part (b), that a float16
    # constant turns the usual workaround back into the first way to NaN (st4b)
    intro = text[:text.index("The notation is that of the earlier pages")]
    assert "float16" not in intro and "workaround" not in intro
    # the NumPy exercise's implementation sits in its folded solution
    start = text.index("```{solution-start} ex-numpy-attention")
    end = text.index("```{solution-end}")
    assert start < text.index("def reference_scaled_dot_product_attention") < end
    assert ":class: dropdown" in text[start:end]
    # the contract the checker tests is stated in the exercise
    ex_np = text[text.index(":label: ex-numpy-attention"):start]
    for term in ("True means", "broadcasts", "fully masked", "dtype", "exactly* 0"):
        assert term in ex_np, term
    # the solution of the -inf exercise says what happens to dV
    sol = text[text.index("```{solution} ex-mask-inf"):text.index("### Why $-\\infty$ and not 0")]
    assert "\\mathrm{d}V" in sol


def test_page_labels_and_notation():
    text = (CHAPTERS / f"{PAGE}.md").read_text()
    # rv2 M2: two ways to NaN, plus a float16 constant that brings the first back (only
    # in a row every key of which it masks); the two red lines, no "breaks twice over"
    assert "the two ways in which" in text and "NaN two ways" in text
    assert "three ways in which" not in text and "NaN three ways" not in text
    assert "keys that two masks" not in text
    # rv2 M1: the additive bias is Delta (B is the batch size)
    assert "S + B" not in text and "B_{ij}" not in text and "S + \\Delta" in text
    index = (CHAPTERS / "index.md").read_text()
    assert "| $\\Delta$ | $T_q \\times T_k$ | an additive bias on the scores" in index
    assert "breaks twice over" not in text
    alt = text[text.index(":name: fig-mask-models"):text.index("The masks of an encoder")]
    assert "two red lines" in alt and "a red line" not in alt
    assert text.startswith("---") and "(masks)=" in text and "(masks-failures)=" in text
    assert "stability-masks" not in text
    assert "ex4_" not in text and "ex6_" not in text and "exercise 4" not in text.lower()
    assert "$n$" not in text
    assert "from myst_nb import glue" not in text and 'glue(f"' not in text


def test_an_added_minus_inf_on_an_empty_row_is_harmless_in_the_builtin():
    # the rules: "with an unguarded softmax (your own code) ... an added -inf sends that
    # row's NaN into dQ and dK (torch's built-in attention, guarded, does not)"
    from torch.nn.attention import SDPBackend, sdpa_kernel
    T, d = 8, 16
    M = torch.ones(T, T, dtype=torch.bool).tril()
    M[2] = False  # an empty row
    gen = torch.Generator().manual_seed(0)
    for dtype in (torch.float32, torch.float64):
        bias = torch.zeros(T, T, dtype=dtype).masked_fill(~M, float("-inf"))
        qkv = [torch.randn(1, 1, T, d, dtype=dtype, generator=gen) for _ in range(4)]
        dO = qkv.pop()
        for backend in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION):
            q, k, v = (x.clone().requires_grad_() for x in qkv)
            with sdpa_kernel(backend):
                F.scaled_dot_product_attention(q, k, v, attn_mask=bias).backward(dO)
            assert not any(torch.isnan(x.grad).any() for x in (q, k, v))
        q, k, v = (x.clone().requires_grad_() for x in qkv)  # the unguarded softmax
        A = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + bias, dim=-1)
        (A @ v).backward(dO)
        assert torch.isnan(q.grad[0, 0, 2]).all() and torch.isnan(k.grad).any()
