"""Numerical stability: every number the prose quotes, recomputed independently of the
page's cells (plain Python, torch or a fresh NumPy computation)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import attention
from attention import measure
from tests.pages._common import (CHAPTERS, g, page_cell,
                                 torch_softmax_attention)

PAGE = "stability"
MiB = 2**20


def test_float16_and_float32_overflow_thresholds_are_the_logs_of_their_largest_numbers():
    assert g(PAGE, "fp16_max") == 65504.0 == float(torch.finfo(torch.float16).max)
    assert g(PAGE, "fp16_cutoff") == pytest.approx(math.log(65504.0), rel=1e-12)
    assert round(g(PAGE, "fp16_cutoff"), 2) == 11.09
    assert g(PAGE, "fp32_cutoff") == pytest.approx(math.log(torch.finfo(torch.float32).max), rel=1e-9)
    assert round(g(PAGE, "fp32_cutoff"), 2) == 88.72
    assert g(PAGE, "sd_unscaled_512") == pytest.approx(22.627, abs=1e-3)


def test_exp_of_12_is_finite_in_float64_but_infinite_in_float16():
    assert g(PAGE, "exp12") == pytest.approx(162754.791419, rel=1e-9)
    assert math.isinf(float(torch.exp(torch.tensor(12.0, dtype=torch.float16))))
    assert math.isinf(g(PAGE, "exp12_fp16")) and g(PAGE, "exp12_fp16") > 0


def test_naive_float16_softmax_turns_the_winner_into_nan_and_the_stable_one_does_not():
    x = torch.tensor([12.0, 0.0, -3.0], dtype=torch.float16)
    naive = torch.exp(x) / torch.exp(x).sum()
    assert int(torch.isnan(naive).sum()) == g(PAGE, "naive_fp16_nan") == 1
    stable = torch.softmax(x.double(), dim=0).half()
    assert float(stable[0]) == g(PAGE, "fixed_fp16_top")


def test_underflow_gaps_are_minus_the_logs_of_the_smallest_subnormals():
    assert float(torch.exp(torch.tensor(-200.0, dtype=torch.float32))) == 0.0 == g(PAGE, "underflow_weight")
    assert g(PAGE, "tiny_fp16") == 2.0**-24
    # positive magnitudes: "more than about 16.6 below the maximum"
    assert g(PAGE, "underflow_gap_fp16") == pytest.approx(24 * math.log(2))
    assert g(PAGE, "underflow_gap_fp32") == pytest.approx(149 * math.log(2))
    assert g(PAGE, "underflow_gap_fp16") > 0 and g(PAGE, "underflow_gap_fp32") > 0
    # gradual underflow: below the smallest normal float16, 2^-14 = e^-9.7, a weight is
    # subnormal and keeps fewer significant bits the smaller it is: the subnormals are
    # evenly spaced (2^-24), so the relative spacing grows as the weight shrinks
    assert g(PAGE, "normal_fp16") == 2.0**-14
    assert g(PAGE, "normal_gap_fp16") == pytest.approx(14 * math.log(2))
    assert round(g(PAGE, "normal_gap_fp16"), 1) == 9.7
    rel = [abs(float(np.float16(math.exp(-x))) / math.exp(-x) - 1) for x in (9, 12, 15)]
    assert rel[0] <= 2.0**-11 < rel[1] < rel[2]
    sub = [np.float16(math.exp(-x)) for x in (10, 12, 14, 16)]
    assert all(float(np.spacing(w)) == 2.0**-24 for w in sub)
    assert float(np.spacing(np.float16(1.0))) / 1.0 == 2.0**-10  # normal: 10 bits


def _sum_of_ones(dtype, n=4096):
    total = torch.tensor(0.0, dtype=dtype)
    for _ in range(n):
        total = total + torch.tensor(1.0, dtype=dtype)
    return float(total)


def test_running_sums_of_ones_stall_at_two_to_the_significant_bits():
    assert g(PAGE, "running_sum_n") == 4096
    assert g(PAGE, "running_sum_fp16") == _sum_of_ones(torch.float16) == 2.0**11
    assert g(PAGE, "running_sum_bf16") == _sum_of_ones(torch.bfloat16) == 2.0**8
    assert g(PAGE, "running_sum_fp32") == 4096.0
    assert g(PAGE, "fp16_stall_at") == 2048.0 and g(PAGE, "fp16_gap") == 2.0
    assert float(torch.tensor(2049.0, dtype=torch.float16)) == 2048.0


def test_format_facts_spacing_bits_and_bfloat16_range():
    assert g(PAGE, "fp16_spacing_1") == 2.0**-10
    assert g(PAGE, "bf16_spacing_1") == 2.0**-7
    assert (g(PAGE, "fp16_sig_bits"), g(PAGE, "fp16_exp_bits")) == (11, 5)
    assert (g(PAGE, "bf16_sig_bits"), g(PAGE, "bf16_exp_bits")) == (8, 8)
    assert g(PAGE, "bf16_cutoff") == pytest.approx(math.log(float(torch.finfo(torch.bfloat16).max)))
    assert round(g(PAGE, "bf16_cutoff"), 2) == round(g(PAGE, "fp32_cutoff"), 2)


def test_one_underflowing_term_is_harmless_but_many_flushed_terms_and_ties_are_not():
    assert (g(PAGE, "flush_gap"), g(PAGE, "flush_n_min"), g(PAGE, "flush_n_max")) == \
        (18.0, 1e5, 1e6)
    # e^-18 rounds to 0 in float16 (below half its smallest subnormal), not in float32
    assert float(torch.exp(torch.tensor(-18.0)).half()) == 0.0
    assert float(torch.exp(torch.tensor(-18.0))) > 0
    for n, name in ((10**5, "flush_lost_pct_min"), (10**6, "flush_lost_pct_max")):
        lost = n * math.exp(-18) / (1 + n * math.exp(-18))  # the share the zeros drop
        assert g(PAGE, name) == pytest.approx(100 * lost, rel=1e-6)
    assert round(g(PAGE, "flush_lost_pct_min"), 2) == 0.15
    assert round(g(PAGE, "flush_lost_pct_max"), 1) == 1.5
    # the sum of n ones overflows float16 from 65520 on (65520 rounds up to 65536 = inf)
    assert (g(PAGE, "tied_ok_n"), g(PAGE, "tied_bad_n")) == (65519, 65520)
    assert math.isinf(float(torch.tensor(65520.0).half()))
    assert float(torch.tensor(65519.0).half()) == 65504.0
    assert g(PAGE, "tied_bad_weight") == 0.0
    for n, finite in ((65519, True), (65520, False)):
        with np.errstate(over="ignore"):
            total = np.ones(n, dtype=np.float16).sum()  # NumPy's float16 sum, as on the page
        assert bool(np.isfinite(total)) is finite
    # "NumPy's float16 sum along a contiguous axis accumulates in float32": 2048 + 1 + 1
    # is 2050, not 2048; along a strided axis it rounds every partial sum (stalls, no inf)
    assert float(np.array([2048, 1, 1], dtype=np.float16).sum()) == 2050.0
    assert float(np.ones(4096, dtype=np.float16).sum()) == 4096.0
    assert float(np.ones((4096, 3), dtype=np.float16).sum(axis=0)[0]) == 2048.0
    assert float(np.ones((65520, 2), dtype=np.float16).sum(axis=0)[0]) == 2048.0
    assert float(torch.tensor(65536.0 - 17).half()) == 65504.0  # just below 65520: finite
    # the tied sum is exact in float32
    assert float(np.ones(65520, dtype=np.float32).sum()) == 65520.0
    # float32 cures the flush only pairwise: e^-18 is below half the gap above 1, so a
    # one-term-at-a-time float32 sum drops every term after the maximum (the whole 1.5%)
    e18 = np.float32(math.exp(-18))
    assert e18 < np.spacing(np.float32(1)) / 2 and np.float32(1) + e18 == 1
    n = 10**6
    l_true = 1 + n * math.exp(-18)
    assert g(PAGE, "flush_lost32_seq_pct") == pytest.approx(100 * (1 - 1 / l_true), rel=1e-5)
    assert round(g(PAGE, "flush_lost32_seq_pct"), 1) == 1.5
    terms = np.full(n + 1, e18, dtype=np.float32)
    terms[0] = 1
    # term by term the running sum starts at 1 and 1 + e^-18 == 1, so it stays exactly 1:
    # the glued loss above is 1 - 1 / l_true; a short float32 loop shows the same
    acc = np.float32(0)
    for t in terms[:1000]:
        acc = np.float32(acc + t)
    assert acc == 1.0
    pair = 1 - float(terms.sum()) / l_true
    assert g(PAGE, "flush_lost32_pair") == pytest.approx(pair, rel=1e-6)
    assert abs(g(PAGE, "flush_lost32_pair")) < 1e-6  # ~ one float32 rounding, at most


def _pv_errors(T_k, rng, rows=8, d_v=8):
    """Median relative errors (each entry against that entry of the output) of P V in
    float16, accumulated key by key in float16 (a loop over the keys with a float16
    accumulator), in float32 by torch and rounded once, and by NumPy's and torch's own
    float16 products; also how many float16 steps the library products lie from the
    float32 sums."""
    s = rng.standard_normal((rows, T_k))
    P = np.exp(s - s.max(-1, keepdims=True)).astype(np.float16)
    V = rng.standard_normal((T_k, d_v)).astype(np.float16)
    exact = torch.from_numpy(P).double() @ torch.from_numpy(V).double()
    acc = np.zeros((rows, d_v), dtype=np.float16)
    for j in range(T_k):
        acc = acc + P[:, j, None] * V[j]          # every partial sum rounded to float16
    in32 = (torch.from_numpy(P).float() @ torch.from_numpy(V).float()).half()
    lib = {"numpy": torch.from_numpy(P @ V),
           "torch": torch.from_numpy(P) @ torch.from_numpy(V)}

    def err(x):
        return float(((x.double() - exact).abs() / exact.abs()).median())

    steps = max(float(((x.double() - in32.double()).abs()
                       / torch.from_numpy(np.spacing(in32.abs().numpy()).astype(np.float64))).max())
                for x in lib.values())
    return err(torch.from_numpy(acc)), err(in32), max(err(x) for x in lib.values()), steps


def test_float16_accumulation_error_grows_with_the_keys_and_float32_stays_at_one_rounding():
    assert (g(PAGE, "acc_T_k_min"), g(PAGE, "acc_T_k_max")) == (256, 16384)
    assert g(PAGE, "acc_sums_per_length") == 64
    half_spacing = 2.0**-11
    assert g(PAGE, "fp16_half_spacing") == half_spacing
    rng = np.random.default_rng(0)  # the page's draws, recomputed another way
    e16, e32, elib = zip(*[_pv_errors(T_k, rng)[:3] for T_k in (256, 1024, 4096, 16384)])
    # torch's median of 64 values is the lower middle one, NumPy's the mean of the two
    assert g(PAGE, "acc_err_fp16_first") == pytest.approx(e16[0], rel=0.1)
    assert g(PAGE, "acc_err_fp16_last") == pytest.approx(e16[-1], rel=0.1)
    assert g(PAGE, "acc_err_fp32_min") == pytest.approx(min(e32), rel=0.3)
    assert g(PAGE, "acc_err_fp32_max") == pytest.approx(max(e32), rel=0.3)
    assert g(PAGE, "acc_err_library_max") == pytest.approx(max(elib), rel=0.3)
    # "grows with the number of keys": at every step, at this seed and at others
    for seed in (0, 1, 2):
        r = np.random.default_rng(seed)
        e16, e32, elib, _ = zip(*[_pv_errors(T_k, r) for T_k in (256, 1024, 4096, 16384)])
        assert all(a < b for a, b in zip(e16, e16[1:])), (seed, e16)
        assert e16[-1] > 5 * e16[0]
        # float32 accumulation: below half the float16 spacing at 1, at every length
        assert max(e32) < half_spacing and max(elib) < half_spacing, (seed, e32, elib)
    assert g(PAGE, "acc_err_fp32_max") < half_spacing
    assert g(PAGE, "acc_err_library_max") < half_spacing
    # "the library products behave like the float32 sums": at other seeds and lengths too
    for seed, T_k in ((1, 300), (2, 2048), (3, 8192)):
        e16, e32, elib, steps = _pv_errors(T_k, np.random.default_rng(seed))
        assert elib <= 2 * e32 + 1e-12 and e16 > 5 * elib, (seed, T_k)
        assert steps <= 1.0  # "may differ ... by one float16 rounding step"


def test_online_normalizer_matches_the_two_pass_one():
    assert (g(PAGE, "online_rows"), g(PAGE, "online_T_k")) == (5, 1000)
    assert (g(PAGE, "online_block_min"), g(PAGE, "online_block_max")) == (1, 1000)
    for seed in range(5):
        s = 5.0 * np.random.default_rng(seed).standard_normal(1000)
        m, l = -math.inf, 0.0
        for x in s:  # the update of eq-online-update, one score at a time, in plain Python
            m_new = max(m, x)
            l = l * math.exp(m - m_new) + math.exp(x - m_new)
            m = m_new
        exact = math.fsum(math.exp(x - s.max()) for x in s)
        assert abs(l - exact) / exact < 1e-13
    assert 0 <= g(PAGE, "online_rel_err") < 1e-13


def test_worked_example_by_hand():
    cell = page_cell(PAGE, "s6 = np.array")
    assert "s6 = np.array([1.0, 3.0, 2.0, 5.0, 0.0, 4.0])" in cell
    assert "v6 = np.array([1.0, 0.0, 2.0, 1.0, 3.0, 0.0])" in cell
    e = math.exp
    l1 = e(-2) + 1 + e(-1)
    acc1 = e(-2) * 1 + 1 * 0 + e(-1) * 2
    l2 = e(-2) * l1 + 1 + e(-5) + e(-1)
    acc2 = e(-2) * acc1 + 1 * 1 + e(-5) * 3 + e(-1) * 0
    assert (g(PAGE, "hand_m_1"), g(PAGE, "hand_m_2")) == (3.0, 5.0)
    assert g(PAGE, "hand_l_1") == pytest.approx(l1, rel=1e-12)
    assert g(PAGE, "hand_acc_1") == pytest.approx(acc1, rel=1e-12)
    assert g(PAGE, "hand_l_2") == pytest.approx(l2, rel=1e-12)
    assert g(PAGE, "hand_acc_2") == pytest.approx(acc2, rel=1e-12)
    assert g(PAGE, "hand_rescale") == pytest.approx(e(-2), rel=1e-12)
    a = torch.softmax(torch.tensor([1.0, 3.0, 2.0, 5.0, 0.0, 4.0], dtype=torch.float64), 0)
    o = float(a @ torch.tensor([1.0, 0.0, 2.0, 1.0, 3.0, 0.0], dtype=torch.float64))
    assert g(PAGE, "hand_o") == pytest.approx(o, rel=1e-12) == pytest.approx(acc2 / l2)
    assert 0 <= g(PAGE, "hand_o_err") < 1e-12
    # the prose's rounded values are what a reader with a calculator gets
    assert (round(l1, 4), round(acc1, 4), round(l2, 4), round(acc2, 4), round(o, 4)) == \
        (1.5032, 0.8711, 1.5781, 1.1381, 0.7212)


def test_tiled_attention_matches_plain_attention_to_rounding():
    assert (g(PAGE, "tiled_block_min"), g(PAGE, "tiled_block_max")) == (32, 500)
    rng = np.random.default_rng(0)
    Q = rng.standard_normal((2, 4, 300, 32))
    K = rng.standard_normal((2, 4, 500, 32))
    V = rng.standard_normal((2, 4, 500, 16))
    O_ref, _ = torch_softmax_attention(Q, K, V)
    for block in (32, 128, 500):
        assert np.abs(attention.tiled_attention(Q, K, V, block_size=block) - O_ref).max() < 1e-12
    assert 0 <= g(PAGE, "tiled_max_err") < 1e-12
    assert 0 <= g(PAGE, "library_tiled_max_err") < 1e-12


def _row_blocked_attention():
    """The page's row_blocked_attention, executed from its cell (its memory is measured)."""
    cell = page_cell(PAGE, "def row_blocked_attention")
    ns = {"np": np, "math": math}
    exec(cell.split("\n\n\n")[0], ns)
    return ns["row_blocked_attention"]


def test_row_blocked_two_pass_attention_equals_plain_attention():
    row_blocked = _row_blocked_attention()
    rng = np.random.default_rng(0)
    Q = rng.standard_normal((2, 4, 300, 32))
    K = rng.standard_normal((2, 4, 500, 32))
    V = rng.standard_normal((2, 4, 500, 16))
    O_ref, _ = torch_softmax_attention(Q, K, V)
    for rows in (1, 32, 128, 500):
        assert np.abs(row_blocked(Q, K, V, rows) - O_ref).max() < 1e-12
    assert 0 <= g(PAGE, "row_blocked_max_err") < 1e-12


def _memory(T, d, block):
    Q, K, V = (np.random.default_rng(s).standard_normal((1, 1, T, d), dtype=np.float32)
               for s in (1, 2, 3))
    row_blocked = _row_blocked_attention()
    return {
        "plain": measure.peak_memory(lambda: attention.scaled_dot_product_attention(Q, K, V)),
        "row-blocked": measure.peak_memory(lambda: row_blocked(Q, K, V, block)),
        "tiled": measure.peak_memory(lambda: attention.tiled_attention(Q, K, V, block)),
    }


def test_plain_memory_is_quadratic_row_blocked_and_tiled_are_not():
    T, block, d = int(g(PAGE, "memory_T_big")), int(g(PAGE, "memory_block")), int(g(PAGE, "memory_d"))
    assert (T, block, d) == (4096, 256, 64) and g(PAGE, "memory_slope_from") == 1024
    peaks = {t: _memory(t, d, block) for t in (256, 512, 1024, 2048, 4096)}
    big = peaks[T]
    assert g(PAGE, "plain_peak_mib_big") == pytest.approx(big["plain"] / MiB, rel=0.05)
    assert g(PAGE, "row_blocked_peak_mib_big") == pytest.approx(big["row-blocked"] / MiB, rel=0.2)
    assert g(PAGE, "tiled_peak_mib_big") == pytest.approx(big["tiled"] / MiB, rel=0.2)
    assert big["plain"] >= 4 * T * T  # at least one T x T float32 matrix
    assert g(PAGE, "plain_peak_per_matrix") == pytest.approx(g(PAGE, "plain_peak_mib_big") * MiB / (4 * T * T))
    assert g(PAGE, "memory_ratio_big") == pytest.approx(g(PAGE, "plain_peak_mib_big") / g(PAGE, "tiled_peak_mib_big"))
    # the caption, at every point: at T = 256 both blocked versions need more than the
    # plain one; from 512 on both need less, and the tiled one least
    assert (g(PAGE, "memory_T_small"), g(PAGE, "memory_T_second")) == (256, 512)
    assert g(PAGE, "tiled_peak_mib_small") > g(PAGE, "plain_peak_mib_small")
    assert peaks[256]["row-blocked"] > peaks[256]["plain"]
    assert peaks[256]["tiled"] > peaks[256]["plain"]
    for t in (512, 1024, 2048, 4096):
        assert peaks[t]["tiled"] < peaks[t]["row-blocked"] < peaks[t]["plain"], t
    # the fitted slopes: T^2 and T
    assert 1.8 < g(PAGE, "plain_memory_slope") < 2.1
    assert 0.8 < g(PAGE, "row_blocked_memory_slope") < 1.1
    big_T = (1024, 2048, 4096)
    for name, lo, hi in (("plain", 1.8, 2.1), ("row-blocked", 0.8, 1.1)):
        slope = np.polyfit(np.log(big_T), np.log([peaks[t][name] for t in big_T]), 1)[0]
        assert lo < slope < hi, (name, slope)
    # the tiled peak is O (T x d float32) plus a few fixed-size tiles at every T
    tiles = [(peaks[t]["tiled"] - 4 * t * d) / (4 * block * block) for t in big_T]
    assert all(1.5 < n < 3.0 for n in tiles), tiles
    assert max(tiles) - min(tiles) < 0.5, tiles


def test_library_row_blocked_path_and_a_dense_mask_in_the_tiled_version():
    T, block, d = int(g(PAGE, "memory_T_big")), int(g(PAGE, "memory_block")), int(g(PAGE, "memory_d"))
    Q, K, V = (np.random.default_rng(s).standard_normal((1, 1, T, d), dtype=np.float32)
               for s in (1, 2, 3))
    assert g(PAGE, "min_block_rows") == attention.blocked.MIN_BLOCK_ROWS == 512
    no_weights = measure.peak_memory(
        lambda: attention.blocked_attention(Q, K, V, need_weights=False))
    assert g(PAGE, "no_weights_peak_mib") == pytest.approx(no_weights / MiB, rel=0.2)
    # blocks of 512 rows x T keys, float32, plus O: far below T x T, above the tiled version
    assert 4 * 512 * T <= no_weights < 4 * T * T / 4
    assert g(PAGE, "causal_mask_mib") == T * T / MiB  # one byte per (query, key)
    M = attention.causal_mask(T)
    before = measure.peak_memory(lambda: attention.tiled_attention(Q, K, V, block, mask=M))
    built = measure.peak_memory(
        lambda: attention.tiled_attention(Q, K, V, block, mask=attention.causal_mask(T)))
    assert g(PAGE, "masked_peak_mib") == pytest.approx(before / MiB, rel=0.2)
    assert g(PAGE, "masked_built_peak_mib") == pytest.approx(built / MiB, rel=0.2)
    assert built >= T * T > 5 * before  # the mask brings T^2 back
    # "the mask itself on top of the tiled version's working set": nothing else
    assert g(PAGE, "masked_built_peak_mib") == pytest.approx(
        g(PAGE, "causal_mask_mib") + g(PAGE, "masked_peak_mib"), rel=0.1)
    assert g(PAGE, "mask_over_tiled") == pytest.approx(
        g(PAGE, "causal_mask_mib") / g(PAGE, "tiled_peak_mib_big"))
    assert g(PAGE, "mask_over_tiled") > 5
    derived = measure.peak_memory(
        lambda: attention.tiled_attention(Q, K, V, block, causal="top-left"))
    assert g(PAGE, "causal_peak_mib") == pytest.approx(derived / MiB, rel=0.2)
    assert derived < T * T / 4 and g(PAGE, "causal_peak_mib") < g(PAGE, "causal_mask_mib") / 4
    # masked tiled output is the plain masked output
    O_plain, _ = attention.scaled_dot_product_attention(Q[..., :300, :], K[..., :300, :],
                                                        V[..., :300, :], mask=M[:300, :300])
    O_tiled = attention.tiled_attention(Q[..., :300, :], K[..., :300, :], V[..., :300, :],
                                        64, mask=M[:300, :300])
    assert np.abs(O_tiled - O_plain).max() < 1e-5


def test_tiled_memory_is_the_output_plus_about_two_tiles_of_the_block_size():
    T, d = int(g(PAGE, "memory_T_big")), int(g(PAGE, "memory_d"))
    assert g(PAGE, "memory_O_mib") == 4 * T * d / MiB
    assert (g(PAGE, "memory_block_mid"), g(PAGE, "memory_block_max")) == (512, 1024)
    Q, K, V = (np.random.default_rng(s).standard_normal((1, 1, T, d), dtype=np.float32) for s in (1, 2, 3))
    for b, name in ((512, "tiled_peak_mib_mid"), (1024, "tiled_peak_mib_max")):
        tiled = measure.peak_memory(lambda: attention.tiled_attention(Q, K, V, b))
        assert g(PAGE, name) == pytest.approx(tiled / MiB, rel=0.2)
    # the prose explains the peak as O plus "the tile being computed, the previous one, and
    # small row vectors": between about two and two and a half tiles
    assert 1.8 < g(PAGE, "tiles_min") <= g(PAGE, "tiles_max") < 2.6
    assert g(PAGE, "tiled_peak_mib_mid") > g(PAGE, "tiled_peak_mib_big")


def test_page_keeps_stability_only_and_links_to_masks():
    text = (CHAPTERS / f"{PAGE}.md").read_text()
    assert text.startswith("---") and "(stability)=" in text
    assert "stability-masks" not in text
    assert "{ref}`masks`" in text or "<masks>" in text
    assert "dao2023flashattention2" in text
    assert "their errors average out" not in text
    # claims the hostile read dropped: no exact-equality claim about the library products,
    # no "widely used" without a source; glue from the light module, under literal names
    assert "library_is_fp32" not in text and "widely used" not in text
    assert "from myst_nb import glue" not in text and 'glue(f"' not in text
    # notation: sequence lengths are T, T_q, T_k, never n
    assert "$n$" not in text and "^{n}" not in text and "$m_n$" not in text
    # issue 21: the claims the expert read refuted stay out
    assert "reads each row twice" not in text and "three times" in text
    assert "One detail differs" not in text
    assert "underflow is harmless" not in text.lower()
    assert "stays far below" not in text
    assert "sees every NumPy buffer" not in text
    assert "normalis" not in text and "normaliser" not in text  # -ize, as the page spells it
