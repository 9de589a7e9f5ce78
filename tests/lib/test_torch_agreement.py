"""The NumPy and PyTorch versions agree with torch.nn.functional.scaled_dot_product_attention;
the torch version passes gradcheck; SelfAttention and dropout behave as documented."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attention
import attention.torch as at

B, H, T_q, T_k, d_k, d_v = 2, 3, 5, 7, 4, 6  # T_q != T_k and d_k != d_v on purpose


def _qkv(dtype, seed=0, T_q=T_q, T_k=T_k):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(B, H, n, w, generator=g, dtype=dtype) for n, w in ((T_q, d_k), (T_k, d_k), (T_k, d_v)))


def _masks(dtype):
    """Named (attn_mask, is_causal) pairs; the boolean mask has no fully masked row."""
    g = torch.Generator().manual_seed(1)
    bool_mask = torch.rand(B, 1, T_q, T_k, generator=g) < 0.6
    bool_mask[..., 0] = True
    additive = torch.randn(T_q, T_k, generator=g, dtype=dtype)
    additive[0, 3:] = float("-inf")
    return {
        "no mask": (None, False),
        "boolean mask": (bool_mask, False),
        "additive mask": (additive, False),
        "causal": (None, True),
    }


TOL = {torch.float32: 2e-6, torch.float64: 1e-13}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("kind", list(_masks(torch.float64)))
def test_torch_version_matches_the_builtin(dtype, kind):
    q, k, v = _qkv(dtype)
    attn_mask, is_causal = _masks(dtype)[kind]
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
    got = at.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
    assert got.dtype == dtype and got.shape == (B, H, T_q, d_v)
    torch.testing.assert_close(got, want, atol=TOL[dtype], rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("kind", ["no mask", "boolean mask", "causal"])
def test_numpy_version_matches_the_builtin(dtype, kind):
    q, k, v = _qkv(dtype)
    attn_mask, is_causal = _masks(dtype)[kind]
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
    mask = attention.causal_mask(T_q, T_k) if is_causal else (None if attn_mask is None else attn_mask.numpy())
    O, _ = attention.scaled_dot_product_attention(q.numpy(), k.numpy(), v.numpy(), mask=mask)
    assert O.dtype == q.numpy().dtype
    np.testing.assert_allclose(O, want.numpy(), atol=TOL[dtype], rtol=0)


def test_numpy_version_with_an_additive_bias_added_to_scores_matches_the_builtin():
    # The NumPy API takes boolean masks only: an additive bias of 0 / -inf is the same as
    # the boolean mask "bias is finite".
    q, k, v = _qkv(torch.float64)
    bias = torch.zeros(T_q, T_k, dtype=torch.float64)
    bias[:, 4:] = float("-inf")
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    O, _ = attention.scaled_dot_product_attention(q.numpy(), k.numpy(), v.numpy(),
                                                  mask=np.isfinite(bias.numpy()))
    np.testing.assert_allclose(O, want.numpy(), atol=1e-13)


def test_custom_scale_matches_the_builtin_and_the_numpy_temperature():
    q, k, v = _qkv(torch.float64)
    want = F.scaled_dot_product_attention(q, k, v, scale=0.2)
    torch.testing.assert_close(at.scaled_dot_product_attention(q, k, v, scale=0.2), want)
    tau = 1.0 / (0.2 * np.sqrt(d_k))  # scale = 1 / (tau sqrt(d_k))
    O, _ = attention.scaled_dot_product_attention(q.numpy(), k.numpy(), v.numpy(), temperature=tau)
    np.testing.assert_allclose(O, want.numpy(), atol=1e-13)


@pytest.mark.parametrize("mask_dtype", [torch.bool, torch.float64])
def test_a_mask_together_with_is_causal_is_refused_as_the_builtins_math_kernel_refuses_it(mask_dtype):
    # The built-in's documentation makes attn_mask + is_causal an error. In torch 2.13 its
    # MATH kernel raises; its CPU flash kernel instead applies both masks. Ours refuses,
    # rather than silently dropping one of the two masks.
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = _qkv(torch.float64, T_q=T_k)
    mask = torch.ones(T_k, T_k, dtype=mask_dtype)
    with pytest.raises(ValueError, match="not both"):
        at.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True)
    with sdpa_kernel(SDPBackend.MATH), pytest.raises(RuntimeError, match="is_causal"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True)
    # either one alone is accepted, and the module combines them itself
    at.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    at.scaled_dot_product_attention(q, k, v, is_causal=True)


def test_fully_masked_row_gives_zero_output_in_all_three_versions():
    q, k, v = _qkv(torch.float32)
    mask = torch.ones(T_q, T_k, dtype=torch.bool)
    mask[2] = False
    builtin = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    ours = at.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    O, A = attention.scaled_dot_product_attention(q.numpy(), k.numpy(), v.numpy(), mask=mask.numpy())
    for out in (builtin.numpy(), ours.numpy(), O):
        assert np.array_equal(out[..., 2, :], np.zeros((B, H, d_v)))
        assert np.isfinite(out).all()
    assert np.array_equal(A[..., 2, :], np.zeros((B, H, T_k)))
    torch.testing.assert_close(ours, builtin, atol=2e-6, rtol=0)


def test_safe_softmax_matches_torch_softmax_and_zeroes_fully_masked_rows():
    x = torch.randn(3, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(at.safe_softmax(x), torch.softmax(x, dim=-1))
    x[1] = float("-inf")
    x[2, :2] = float("-inf")
    x.requires_grad_(True)
    a = at.safe_softmax(x)
    assert torch.equal(a[1], torch.zeros(5, dtype=torch.float64))
    assert torch.equal(a[2, :2], torch.zeros(2, dtype=torch.float64))
    a[:, 0].sum().backward()
    assert torch.isfinite(x.grad).all()


@pytest.mark.parametrize("dtype,T_k", [(torch.float16, 70_000), (torch.bfloat16, 777), (torch.float16, 12)])
def test_safe_softmax_in_half_precision_is_torch_softmax_even_where_a_half_sum_overflows(dtype, T_k):
    # A float16 sum of 70,000 weights near one overflows to inf: computed in the input's
    # dtype, every weight would be 0, the answer of a fully masked row.
    x = (0.01 * torch.randn(2, T_k, generator=torch.Generator().manual_seed(4))).to(dtype)
    ours, builtin = at.safe_softmax(x), torch.softmax(x, dim=-1)
    assert ours.dtype == dtype
    assert ours.float().sum(-1).sub(1).abs().max() < 0.01
    torch.testing.assert_close(ours, builtin, atol=0, rtol=0.01)

@pytest.mark.parametrize("kind", ["no mask", "boolean mask", "additive mask", "causal", "fully masked row"])
def test_gradcheck_passes_on_the_torch_version(kind):
    q, k, v = (t[:1, :1].clone().requires_grad_(True) for t in _qkv(torch.float64, seed=3, T_q=3, T_k=4))
    attn_mask, is_causal = None, False
    if kind == "boolean mask":
        attn_mask = torch.tensor([[1, 0, 1, 1], [1, 1, 0, 0], [0, 1, 1, 1]], dtype=torch.bool)
    elif kind == "additive mask":
        attn_mask = torch.tensor([[0.5, -1.0, 0.0, float("-inf")]] * 3, dtype=torch.float64)
    elif kind == "causal":
        is_causal = True
    elif kind == "fully masked row":
        attn_mask = torch.tensor([[1, 1, 0, 1], [0, 0, 0, 0], [1, 0, 1, 1]], dtype=torch.bool)

    def fn(q, k, v):
        return at.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)

    assert torch.autograd.gradcheck(fn, (q, k, v), eps=1e-6, atol=1e-8)


def test_torch_version_gradients_agree_with_numpy_backward():
    q, k, v = (t.clone().requires_grad_(True) for t in _qkv(torch.float64, seed=4))
    mask = _masks(torch.float64)["boolean mask"][0]
    dO = torch.randn(B, H, T_q, d_v, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    at.scaled_dot_product_attention(q, k, v, attn_mask=mask).backward(dO)
    grads = attention.attention_backward(q.detach().numpy(), k.detach().numpy(), v.detach().numpy(),
                                         dO.numpy(), mask=mask.numpy())
    for t, g in zip((q, k, v), grads):
        np.testing.assert_allclose(t.grad.numpy(), g, atol=1e-12)


# SelfAttention ---------------------------------------------------------------------


def _module(seed=0, **kw):
    torch.manual_seed(seed)
    return at.SelfAttention(8, d_k=4, **kw)


def test_self_attention_maps_B_T_d_model_to_the_same_shape():
    x = torch.randn(2, 5, 8)
    assert _module()(x).shape == (2, 5, 8)
    assert _module()(torch.randn(5, 8)).shape == (5, 8)  # unbatched works too
    m = at.SelfAttention(8)
    assert m.W_q.weight.shape == (8, 8)  # d_k defaults to d_model
    assert m(x).shape == (2, 5, 8)


def test_causal_self_attention_ignores_future_tokens():
    m = _module(causal=True)
    x = torch.randn(1, 6, 8, generator=torch.Generator().manual_seed(1))
    x2 = x.clone()
    x2[0, 4] += 10.0  # change token 4 only
    y, y2 = m(x), m(x2)
    torch.testing.assert_close(y[0, :4], y2[0, :4], atol=1e-6, rtol=0)
    assert not torch.allclose(y[0, 4:], y2[0, 4:])


def test_non_causal_self_attention_lets_a_later_token_change_earlier_outputs():
    m = _module(causal=False)
    x = torch.randn(1, 6, 8, generator=torch.Generator().manual_seed(1))
    x2 = x.clone()
    x2[0, 4] += 10.0
    assert not torch.allclose(m(x)[0, 0], m(x2)[0, 0])


def test_causal_self_attention_stays_causal_when_given_a_padding_mask_too():
    m = _module(causal=True)
    x = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(2))
    pad = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])[:, None, :]  # (B, 1, T)
    y = m(x, attn_mask=pad)
    want = m(x, attn_mask=pad & torch.ones(5, 5, dtype=torch.bool).tril())
    torch.testing.assert_close(y, want)
    torch.testing.assert_close(y[0], m(x[:1])[0], atol=1e-6, rtol=0)  # all-True padding = causal only


def test_self_attention_gradient_reaches_the_input_and_every_weight():
    m = _module(causal=True)
    x = torch.randn(2, 5, 8, requires_grad=True)
    m(x).pow(2).sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    for p in m.parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0


@pytest.mark.parametrize("causal", [False, True])
def test_fused_and_unfused_self_attention_agree(causal):
    fused, unfused = _module(causal=causal, fused=True), _module(causal=causal, fused=False)
    x = torch.randn(3, 7, 8, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(fused(x), unfused(x), atol=2e-6, rtol=0)
    pad = torch.arange(7)[None, None, :] < torch.tensor([7, 4, 1])[:, None, None]
    torch.testing.assert_close(fused(x, attn_mask=pad), unfused(x, attn_mask=pad), atol=2e-6, rtol=0)


# Dropout ---------------------------------------------------------------------------


@pytest.mark.parametrize("impl", ["ours", "builtin"])
def test_dropout_zeroes_weights_at_rate_p_and_rescales_the_rest(impl):
    # With q = k = 0 every weight is 1/T_k; with v = I the output row is the weight row.
    p, n_rows, n_keys = 0.3, 4000, 10
    q = torch.zeros(n_rows, 1, 4)
    k = torch.zeros(n_keys, 4)
    v = torch.eye(n_keys)
    sdpa = at.scaled_dot_product_attention if impl == "ours" else F.scaled_dot_product_attention
    torch.manual_seed(0)
    w = sdpa(q, k.expand(n_rows, n_keys, 4), v.expand(n_rows, n_keys, n_keys), dropout_p=p)
    kept = w != 0
    torch.testing.assert_close(w[kept], torch.full_like(w[kept], 1.0 / (n_keys * (1 - p))))
    frac_zero = 1.0 - kept.float().mean().item()
    sigma = np.sqrt(p * (1 - p) / kept.numel())
    assert abs(frac_zero - p) < 4 * sigma
    assert abs(w.sum(-1).mean().item() - 1.0) < 0.01  # unbiased in expectation


def test_zero_dropout_is_deterministic_and_self_attention_dropout_is_off_in_eval_mode():
    q, k, v = _qkv(torch.float32)
    torch.testing.assert_close(at.scaled_dot_product_attention(q, k, v, dropout_p=0.0),
                               at.scaled_dot_product_attention(q, k, v))
    m = _module(dropout=0.5, fused=False)
    x = torch.randn(2, 5, 8)
    m.eval()
    torch.testing.assert_close(m(x), m(x))
    m.train()
    torch.manual_seed(1)
    y1 = m(x)
    torch.manual_seed(2)
    assert not torch.allclose(y1, m(x))


# Mixed dtypes --------------------------------------------------------------------------


@pytest.mark.parametrize("dtypes", [
    (torch.float32, torch.float64, torch.float64),
    (torch.float64, torch.float32, torch.float64),
    (torch.float32, torch.float32, torch.float16),
    (torch.float16, torch.bfloat16, torch.float16),
], ids=["q32-k64-v64", "k32", "v16", "bf16-k"])
def test_mixed_dtypes_are_refused_as_the_builtin_refuses_them(dtypes):
    q, k, v = (x.to(dt) for x, dt in zip(_qkv(torch.float64), dtypes))
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, k, v)
    with pytest.raises(TypeError, match="same dtype") as excinfo:
        at.scaled_dot_product_attention(q, k, v)
    for dt in dtypes:  # the message names every dtype it was given
        assert str(dt) in str(excinfo.value)


@pytest.mark.parametrize("q_dtype, mask_dtype, accepted", [
    (torch.float64, torch.float32, True),   # float32 is always accepted
    (torch.float16, torch.float32, True),
    (torch.float64, torch.float64, True),   # or the inputs' own dtype
    (torch.float32, torch.float64, False),
    (torch.float32, torch.float16, False),
])
def test_additive_mask_dtype_follows_the_builtins_rule(q_dtype, mask_dtype, accepted):
    q, k, v = (x.to(q_dtype) for x in _qkv(torch.float64))
    bias = torch.randn(T_q, T_k, generator=torch.Generator().manual_seed(9)).to(mask_dtype)
    if accepted:
        want = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        got = at.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        tol = {torch.float64: 1e-6, torch.float16: 2e-3}[q_dtype]  # the bias is rounded
        torch.testing.assert_close(got, want, atol=tol, rtol=0)
    else:
        with pytest.raises(RuntimeError, match="attn_mask dtype"):
            F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        with pytest.raises(TypeError, match="additive attn_mask must be float32"):
            at.scaled_dot_product_attention(q, k, v, attn_mask=bias)


def test_the_body_reads_like_the_page_and_the_checks_live_apart():
    import inspect
    body = inspect.getsource(at.scaled_dot_product_attention).split('"""')[-1]
    assert "_check_inputs(" in body
    assert "raise" not in body and "isinstance" not in body  # no checks in the body
    code = [line for line in body.splitlines() if line.strip()]
    assert len(code) <= 16  # about the page's ten lines, plus the call to the checks


def test_a_one_dimensional_key_mask_broadcasts_although_the_unpinned_builtin_rejects_it():
    """The docstring: a (T_k,) mask is accepted and broadcast, as MATH broadcasts it; torch
    2.13's unpinned built-in refuses it on the CPU."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = _qkv(torch.float32)
    keep = torch.tensor([True, False, True, True, False, True, True])  # (T_k,)
    ours = at.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    assert torch.equal(ours, at.scaled_dot_product_attention(q, k, v, attn_mask=keep.expand(T_q, T_k)))
    with sdpa_kernel(SDPBackend.MATH):
        math_out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    assert float((ours - math_out).abs().max()) < 2e-6
    q4 = torch.randn(1, 2, 5, 4)
    with pytest.raises(IndexError):
        F.scaled_dot_product_attention(q4, q4, q4, attn_mask=torch.ones(5, dtype=torch.bool))
