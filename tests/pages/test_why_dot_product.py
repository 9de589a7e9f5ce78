"""Why the dot product: every number the prose quotes, recomputed independently (torch, or
the formula), every claim tried at other settings, and the page's rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from tests.glue import executed_notebook
from tests.pages._common import CHAPTERS, g

PAGE = "why-dot-product"
SOURCE = (CHAPTERS / f"{PAGE}.md").read_text()


def t(x):
    return torch.as_tensor(np.asarray(x, dtype=np.float64))


def torch_attention(Q, K, V, mask=None, bias=None):
    """Scaled dot-product attention in float64 torch, independent of the library."""
    q, k, v = t(Q), t(K), t(V)
    s = q @ k.T / math.sqrt(q.shape[-1])
    if bias is not None:
        s = s + t(bias)
    if mask is not None:
        s = s.masked_fill(~torch.as_tensor(mask), float("-inf"))
    a = torch.softmax(s, dim=-1)
    return (a @ v).numpy(), a.numpy()


def torch_kernel(Q, K, sigma):
    return torch.softmax(-torch.cdist(t(Q), t(K)) ** 2 / (2 * sigma**2), dim=-1).numpy()


# --- kernel regression ------------------------------------------------------------------------

def page_kernel_data():
    """The draws of the page's kernel cell, in the same order."""
    rng = np.random.default_rng(1)
    T_q, T_k, d_k = 4, 6, 8
    Q = rng.standard_normal((T_q, d_k)) * rng.uniform(0.5, 3, (T_q, 1))
    K = rng.standard_normal((T_k, d_k))
    K_equal = 2.0 * K / np.linalg.norm(K, axis=1, keepdims=True)
    V = rng.standard_normal((T_k, 3))
    return Q, K, K_equal, V, d_k


def test_kernel_and_dot_product_weights_agree_for_equal_lengths_and_differ_otherwise():
    Q, K, K_equal, V, d_k = page_kernel_data()
    sigma = d_k**0.25
    gap_unequal = np.abs(torch_kernel(Q, K, sigma) - torch_attention(Q, K, V)[1]).max()
    assert g(PAGE, "kernel_gap_unequal") == pytest.approx(gap_unequal, rel=1e-9)
    assert g(PAGE, "kernel_gap_equal") < 1e-14
    assert np.abs(torch_kernel(Q, K_equal, sigma) - torch_attention(Q, K_equal, V)[1]).max() < 1e-14


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("d_k, length", [(2, 0.3), (8, 2.0), (64, 8.0), (256, 30.0)])
def test_the_identity_holds_at_other_widths_lengths_and_query_sizes(seed, d_k, length):
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((5, d_k)) * 4.0
    K = rng.standard_normal((7, d_k))
    K *= length / np.linalg.norm(K, axis=1, keepdims=True)
    sigma = d_k**0.25
    np.testing.assert_allclose(torch_kernel(Q, K, sigma), torch_attention(Q, K, K)[1], atol=1e-10)


def page_kernel_figure_data():
    rng = np.random.default_rng(0)
    k = np.sort(rng.uniform(0, 6, 40))[:, None]
    v = np.sin(k) + 0.3 * rng.standard_normal((40, 1))
    return k, v, np.linspace(0, 6, 300)[:, None]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_narrow_kernel_follows_the_noise_and_the_wide_one_flattens_the_peaks(seed):
    # The caption: "a narrow kernel ... follows their noise; a wide one ... flattens the peaks".
    if seed == 0:
        k, v, q = page_kernel_figure_data()
    else:
        rng = np.random.default_rng(100 + seed)
        k = np.sort(rng.uniform(0, 6, 40))[:, None]
        v = np.sin(k) + 0.3 * rng.standard_normal((40, 1))
        q = np.linspace(0, 6, 300)[:, None]
    narrow = torch_kernel(q, k, 0.1) @ v
    wide = torch_kernel(q, k, 0.8) @ v
    wiggle = lambda f: np.abs(np.diff(f[:, 0], 2)).sum()  # noqa: E731
    assert wiggle(narrow) > 10 * wiggle(wide)
    assert wide.max() < 0.95 and wide.min() > -0.95  # the sine's peaks are +-1
    assert narrow.max() > 1.0 or narrow.min() < -1.0  # noise pushes it past them


# --- length --------------------------------------------------------------------------------------

def unit(degrees):
    return np.array([math.cos(math.radians(degrees)), math.sin(math.radians(degrees))])


def test_key_b_outscores_key_a_exactly_beyond_the_glued_length():
    want = math.cos(math.radians(10)) / math.cos(math.radians(60))
    assert g(PAGE, "length_b_wins") == pytest.approx(want, rel=1e-12)
    q = unit(0)[None]
    for length, b_wins in ((want * 0.999, False), (want * 1.001, True)):
        K = np.stack([unit(10), length * unit(60)])
        assert bool(torch_attention(q, K, K)[1][0, 1] > 0.5) is b_wins


def test_from_there_b_only_grows_while_the_kernel_never_prefers_b():
    q = unit(0)[None]
    weights, kernel = [], []
    for length in np.linspace(0.1, 50, 200):
        K = np.stack([unit(10), length * unit(60)])
        weights.append(torch_attention(q, K, K)[1][0, 1])
        kernel.append(torch_kernel(q, K, 2**0.25)[0, 1])
    beyond = [w for w, L in zip(weights, np.linspace(0.1, 50, 200)) if L > 1.97]
    assert beyond == sorted(beyond)
    assert max(kernel) <= 0.5  # B is never closer to q than A


@pytest.mark.parametrize("angle", [30, 60, 80, 89])
def test_any_key_with_a_positive_cosine_wins_once_long_enough_and_a_negative_one_never(angle):
    q = unit(0)[None]
    others = np.stack([unit(5), 3 * unit(-20), unit(40)])
    long_key = 1e4 * unit(angle)
    K = np.vstack([others, long_key])
    assert torch_attention(q, K, K)[1][0].argmax() == 3
    K_away = np.vstack([others, 1e4 * unit(180 - angle)])
    assert torch_attention(q, K_away, K_away)[1][0, 3] < 1e-6


def test_qk_norm_weights_do_not_depend_on_the_keys_lengths():
    q = unit(0)[None]
    seen = set()
    for length in (0.1, 1.0, 3.0, 5.0, 100.0):
        K = np.stack([unit(10), length * unit(60)])
        K_hat = K / np.linalg.norm(K, axis=1, keepdims=True)
        seen.add(round(float(torch.softmax(4.0 * t(q @ K_hat.T), -1)[0, 1]), 12))
    assert len(seen) == 1


# --- additive attention -----------------------------------------------------------------------

def additive(Q, K, W_q, W_k, w):
    return (torch.tanh(t(Q @ W_q)[:, None, :] + t(K @ W_k)[None, :, :]) @ t(w)).numpy()


def spreads(d_k: int, draws: int = 10, h: int = 32, seed: int = 100):
    """Mean over draws of the standard deviation of raw dot products and additive scores."""
    rng = np.random.default_rng(seed)
    sd_dot, sd_add = [], []
    for _ in range(draws):
        w = rng.standard_normal(h) / math.sqrt(h)
        Q, K = rng.standard_normal((64, d_k)), rng.standard_normal((64, d_k))
        W_q = rng.standard_normal((d_k, h)) / math.sqrt(d_k)
        W_k = rng.standard_normal((d_k, h)) / math.sqrt(d_k)
        S = additive(Q, K, W_q, W_k, w)
        assert np.abs(S).max() <= np.abs(w).sum()  # the bound |w|_1
        sd_dot.append((Q @ K.T).std())
        sd_add.append(S.std())
    return float(np.mean(sd_dot)), float(np.mean(sd_add))


def test_the_pages_spread_table_says_what_the_prose_reads_from_it():
    text = "".join("".join(o.get("text", "")) for c in executed_notebook(PAGE)["cells"]
                   for o in c.get("outputs", []))
    rows = [line.split() for line in text.splitlines()
            if line.strip() and line.split()[0] in ("16", "64", "256", "1024")]
    table = np.array([[float(x) for x in row] for row in rows[-4:]])  # d_k, q.k, add, lin
    assert table[:, 0].tolist() == [16, 64, 256, 1024]
    np.testing.assert_allclose(table[:, 1] / table[0, 1], np.sqrt(table[:, 0] / 16), rtol=0.1)
    for column in (2, 3):
        assert table[:, column].max() / table[:, column].min() < 1.15


def test_without_the_tanh_the_additive_spread_stays_put_too_it_is_the_initialisation():
    # "That is the initialisation's doing, not the tanh's".
    gen = torch.Generator().manual_seed(7)
    sds = []
    for d_k in (16, 256, 1024):
        q, k = torch.randn(64, d_k, generator=gen), torch.randn(64, d_k, generator=gen)
        W_q = torch.randn(d_k, 32, generator=gen) / math.sqrt(d_k)
        W_k = torch.randn(d_k, 32, generator=gen) / math.sqrt(d_k)
        w = torch.randn(32, generator=gen) / math.sqrt(32)
        pre = (q @ W_q)[:, None, :] + (k @ W_k)[None, :, :]
        sds.append(float((pre @ w).std()))
    assert max(sds) / min(sds) < 1.3


def test_additive_scores_keep_their_spread_while_dot_products_grow_like_sqrt_d_k():
    dot_16, add_16 = spreads(16)
    for d_k in (64, 1024, 4096):
        dot, add = spreads(d_k)
        assert 0.85 < add / add_16 < 1.15
        ratio = math.sqrt(d_k / 16)
        assert 0.9 * ratio < dot / dot_16 < 1.1 * ratio


def page_unit_w_spreads():
    """The page's d_a cell replayed in torch: spreads with w ~ N(0, 1) and w / sqrt(d_a)."""
    rng = np.random.default_rng(5)
    unit, scaled = {}, {}
    for width in (16, 256, 1024):
        runs_u, runs_s = [], []
        for _ in range(4):
            Q, K = rng.standard_normal((64, 64)), rng.standard_normal((64, 64))
            W_q = rng.standard_normal((64, width)) / 8.0
            W_k = rng.standard_normal((64, width)) / 8.0
            w = rng.standard_normal(width)
            S = additive(Q, K, W_q, W_k, w)
            runs_u.append(S.std())
            runs_s.append(additive(Q, K, W_q, W_k, w / math.sqrt(width)).std())
        unit[width], scaled[width] = np.mean(runs_u), np.mean(runs_s)
    return unit, scaled


def test_with_unit_variance_w_the_additive_spread_grows_like_sqrt_d_a():
    unit, scaled = page_unit_w_spreads()
    for width in (16, 256, 1024):
        assert g(PAGE, f"add_unit_{width}") == pytest.approx(unit[width], rel=1e-9)
    assert g(PAGE, "add_scaled_min") == pytest.approx(min(scaled.values()), rel=1e-9)
    assert g(PAGE, "add_scaled_max") == pytest.approx(max(scaled.values()), rel=1e-9)
    # "grows like sqrt(d_a)": from 16 to 1024 the ratio is sqrt(64) = 8, within 25%
    assert 6 < unit[1024] / unit[16] < 10
    # "keeps it between": the scaled spread moves by less than 10%
    assert max(scaled.values()) / min(scaled.values()) < 1.1


@pytest.mark.parametrize("seed", [11, 12])
def test_the_sqrt_d_a_growth_holds_at_other_seeds(seed):
    gen = torch.Generator().manual_seed(seed)
    sds = {}
    for width in (16, 1024):
        runs = []
        for _ in range(8):  # a mean over draws, as the page's table
            q, k = torch.randn(64, 64, generator=gen), torch.randn(64, 64, generator=gen)
            W_q = torch.randn(64, width, generator=gen) / 8
            W_k = torch.randn(64, width, generator=gen) / 8
            w = torch.randn(width, generator=gen)
            pre = (q @ W_q)[:, None] + (k @ W_k)[None]
            runs.append(float((torch.tanh(pre) @ w).std()))
        sds[width] = np.mean(runs)
    assert 6 < sds[1024] / sds[16] < 10


def test_the_initialisation_of_w_is_named_a_one_over_sqrt_width_scale():
    assert "is itself a $1/\\sqrt{\\text{width}}$ scale" in SOURCE
    assert "That is the initialisation's doing" in SOURCE


def test_luong_is_cited_for_the_dot_score_and_g_must_be_positive():
    section = SOURCE.split("## Additive attention")[1].split("```{math}")[0]
    assert "{cite:t}`luong2015effective`" in section
    assert "$\\sigma^2 = 1/g$ when $g > 0$" in SOURCE
    assert "finds it inside" not in SOURCE
    assert "in the cell above" not in SOURCE


def test_the_page_leaves_the_training_comparison_to_the_training_page():
    section = SOURCE.split("## Additive attention")[1].split("## Attention has no sense")[0]
    assert "{ref}`training <training>`" in section
    assert "{cite:t}`britz2017massive`" in section and "{cite:t}`vaswani2017attention`" in section


# --- order -------------------------------------------------------------------------------------

def page_order_data():
    """The draws of the page's order cells, in the same order."""
    rng = np.random.default_rng(4)
    T, d_model, d_k, d_v = 6, 8, 4, 4
    X = rng.standard_normal((T, d_model))
    W_Q = rng.standard_normal((d_model, d_k))
    W_K = rng.standard_normal((d_model, d_k))
    W_V = rng.standard_normal((d_model, d_v))
    perm = rng.permutation(T)
    embed = {word: rng.standard_normal(d_model) for word in ("dog", "bites", "man")}
    return X, W_Q, W_K, W_V, np.eye(T)[perm], embed


def self_attention(X, W_Q, W_K, W_V, **kw):
    return torch_attention(X @ W_Q, X @ W_K, X @ W_V, **kw)[0]


def test_self_attention_is_permutation_equivariant_on_the_page():
    assert g(PAGE, "gap_perm") < 1e-13
    assert g(PAGE, "gap_words") < 1e-13
    X, W_Q, W_K, W_V, P, embed = page_order_data()
    first = np.stack([embed[w] for w in ("dog", "bites", "man")])
    second = np.stack([embed[w] for w in ("man", "bites", "dog")])
    np.testing.assert_allclose(self_attention(first, W_Q, W_K, W_V),
                               self_attention(second, W_Q, W_K, W_V)[::-1], atol=1e-13)
    np.testing.assert_allclose(self_attention(P @ X, W_Q, W_K, W_V),
                               P @ self_attention(X, W_Q, W_K, W_V), atol=1e-13)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("T, d_model, d_k", [(3, 4, 2), (16, 32, 8), (64, 16, 64)])
def test_equivariance_holds_for_other_sizes_seeds_and_permutations(seed, T, d_model, d_k):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((T, d_model)) * 2
    W_Q, W_K, W_V = (rng.standard_normal((d_model, d_k)) for _ in range(3))
    P = np.eye(T)[rng.permutation(T)]
    np.testing.assert_allclose(self_attention(P @ X, W_Q, W_K, W_V),
                               P @ self_attention(X, W_Q, W_K, W_V), atol=1e-12)


def test_a_causal_mask_a_position_encoding_and_a_distance_bias_each_break_it():
    X, W_Q, W_K, W_V, P, _ = page_order_data()
    T, d_model = X.shape
    causal = np.tril(np.ones((T, T), dtype=bool))
    gap_causal = np.abs(self_attention(P @ X, W_Q, W_K, W_V, mask=causal)
                        - P @ self_attention(X, W_Q, W_K, W_V, mask=causal)).max()
    assert g(PAGE, "gap_causal") == pytest.approx(gap_causal, rel=1e-9)
    pos = np.arange(T)[:, None]
    angles = pos * 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    E = np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(T, d_model)
    gap_encoding = np.abs(self_attention(P @ X + E, W_Q, W_K, W_V)
                          - P @ self_attention(X + E, W_Q, W_K, W_V)).max()
    assert g(PAGE, "gap_encoding") == pytest.approx(gap_encoding, rel=1e-9)
    bias = -0.5 * np.abs(pos - pos.T)
    gap_alibi = np.abs(self_attention(P @ X, W_Q, W_K, W_V, bias=bias)
                       - P @ self_attention(X, W_Q, W_K, W_V, bias=bias)).max()
    assert g(PAGE, "gap_alibi") == pytest.approx(gap_alibi, rel=1e-9)
    for gap in (gap_causal, gap_encoding, gap_alibi):
        assert gap > 0.1


def rotary(Z, rate=0.5):
    """Rotate pair m of row i by the angle i * rate**m, written with complex numbers."""
    T, d = Z.shape
    z = torch.complex(t(Z[:, 0::2]), t(Z[:, 1::2]))  # (T, d/2)
    angle = torch.arange(T, dtype=torch.float64)[:, None] * rate ** torch.arange(d // 2)
    r = z * torch.polar(torch.ones_like(angle), angle)
    return torch.stack([r.real, r.imag], dim=-1).reshape(T, d).numpy()


def test_rotary_queries_and_keys_break_equivariance_and_score_by_offset_only():
    X, W_Q, W_K, W_V, P, _ = page_order_data()

    def rot_attention(X):
        q, k = rotary(X @ W_Q), rotary(X @ W_K)
        return torch_attention(q, k, X @ W_V)[0]

    gap = np.abs(rot_attention(P @ X) - P @ rot_attention(X)).max()
    assert g(PAGE, "gap_rotary") == pytest.approx(gap, rel=1e-9)
    T = X.shape[0]
    Q_r = rotary(np.repeat(X[:1] @ W_Q, T, axis=0))
    K_r = rotary(np.repeat(X[1:2] @ W_K, T, axis=0))
    S = Q_r @ K_r.T
    for offset in range(-T + 1, T):
        np.testing.assert_allclose(np.diagonal(S, offset), np.diagonal(S, offset)[0], atol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_each_position_mechanism_breaks_equivariance_at_other_seeds(seed):
    rng = np.random.default_rng(50 + seed)
    T, d_model, d_k = 7, 8, 4
    X = rng.standard_normal((T, d_model))
    W_Q, W_K, W_V = (rng.standard_normal((d_model, d_k)) for _ in range(3))
    P = np.eye(T)[np.roll(np.arange(T), 1)]
    pos = np.arange(T)[:, None]
    angles = pos * 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    E = np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(T, d_model)
    causal = np.tril(np.ones((T, T), dtype=bool))
    bias = -0.5 * np.abs(pos - pos.T)

    def gap(f):
        return np.abs(f(P @ X) - P @ f(X)).max()

    gaps = [gap(lambda Z: self_attention(Z, W_Q, W_K, W_V, mask=causal)),
            gap(lambda Z: self_attention(Z + E, W_Q, W_K, W_V)),
            gap(lambda Z: self_attention(Z, W_Q, W_K, W_V, bias=bias)),
            gap(lambda Z: torch_attention(rotary(Z @ W_Q), rotary(Z @ W_K), Z @ W_V)[0])]
    assert min(gaps) > 1e-3, gaps


def test_under_a_causal_mask_the_first_output_is_the_first_value():
    X, W_Q, W_K, W_V, _, _ = page_order_data()
    causal = np.tril(np.ones((6, 6), dtype=bool))
    np.testing.assert_allclose(self_attention(X, W_Q, W_K, W_V, mask=causal)[0], X[0] @ W_V, atol=1e-14)


# --- the page's rules ------------------------------------------------------------------------


def test_the_page_cites_its_sources():
    for key in ("nadaraya1964estimating", "watson1964smooth", "henry2020query", "bahdanau2014neural",
                "britz2017massive", "vaswani2017attention", "press2022train", "dehghani2023scaling"):
        assert f"`{key}`" in SOURCE, key


def test_review_round_1_sentences_are_as_corrected():
    import attention
    # the dot score "in translation" (memory networks and the NTM are older)
    assert "came a year later, one of the scores" not in SOURCE
    assert "in translation, the dot-product\nscore" in SOURCE
    # the caption: minus the squared distances, over the temperature 2 sigma^2
    assert "squared distances divided by $2\\sigma^2$" not in SOURCE
    assert "minus the squared distances, divided by a temperature of" in SOURCE
    # the bound is for finite inputs; the library raises when q W_q + k W_k
    # overflows instead of returning NaN
    assert "for finite inputs every score lies between" in SOURCE
    with pytest.raises(ValueError, match="pre-activation"):
        attention.additive_scores([[1e308]], [[-1e308]], [[2.0]], [[2.0]], [1.0])
    # what is unavoidable is T_q T_k d_a tanh evaluations, not the array
    assert "$T_q T_k d_a$ evaluations of $\\tanh$" in SOURCE
    calls = []
    real_tanh = np.tanh
    try:
        np.tanh = lambda x: calls.append(np.size(x)) or real_tanh(x)
        attention.additive_scores(np.ones((3, 2)), np.ones((5, 4)),
                                  np.ones((2, 7)), np.ones((4, 7)), np.ones(7))
    finally:
        np.tanh = real_tanh
    assert sum(calls) == 3 * 5 * 7


def test_qk_norm_is_the_gaussian_kernel_on_the_normalised_vectors():
    # exp(-|q_hat - k_hat|^2 / (2 sigma^2)) with sigma^2 = 1/g, normalised over
    # the keys, is softmax(g cos theta_j); on the raw vectors it is not
    assert "on the normalised\nvectors $\\hat q$ and $\\hat k_j$" in SOURCE
    rng = np.random.default_rng(5)
    q, K, gain = rng.standard_normal(8), rng.standard_normal((6, 8)), 4.0
    q_hat = q / np.linalg.norm(q)
    K_hat = K / np.linalg.norm(K, axis=1, keepdims=True)

    def normalised(x):
        return x / x.sum()

    kernel = normalised(np.exp(-((q_hat - K_hat) ** 2).sum(1) * gain / 2))
    qk_norm = normalised(np.exp(gain * K_hat @ q_hat))
    np.testing.assert_allclose(kernel, qk_norm, rtol=1e-12)
    raw = normalised(np.exp(-((q - K) ** 2).sum(1) * gain / 2))
    assert not np.allclose(raw, qk_norm, rtol=1e-3)


def test_luongs_dot_score_is_named_unscaled_and_the_spread_at_initialisation():
    assert "score $s_j = q \\cdot k_j$ (without a scale) appears" in SOURCE
    assert "keep their spread at initialisation as $d_k$ and $d_a$ grow" in SOURCE
