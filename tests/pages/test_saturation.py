"""Saturation and the softmax Jacobian: every number the prose quotes, recomputed independently."""

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


# --- page 3: saturation ----------------------------------------------------------------

def _replay_opening_experiment():
    T, d_k, d_v = 32, 512, 64
    rng = np.random.default_rng(512)
    Q = rng.standard_normal((T, d_k))
    K = rng.standard_normal((T, d_k))
    V = rng.standard_normal((T, d_v))
    dO = rng.standard_normal((T, d_v))
    S = Q @ K.T
    return S, V, dO, d_k


def test_opening_experiment_unscaled_rows_are_nearly_one_hot():
    S, V, dO, d_k = _replay_opening_experiment()
    A_raw, A_scaled = softmax_rows(S), softmax_rows(S / math.sqrt(d_k))
    assert g("saturation", "open_frac_onehot_raw") == pytest.approx(np.mean(A_raw.max(axis=1) > 0.9))
    assert g("saturation", "open_mean_max_raw") == pytest.approx(A_raw.max(axis=1).mean(), rel=1e-9)
    assert g("saturation", "open_mean_max_scaled") == pytest.approx(A_scaled.max(axis=1).mean(), rel=1e-9)
    assert g("saturation", "open_max_max_scaled") == pytest.approx(A_scaled.max(), rel=1e-9)
    assert g("saturation", "open_frac_onehot_raw") > 0.6
    assert g("saturation", "open_max_max_scaled") < 0.6
    top2 = np.sort(S, axis=1)[:, -2:]
    assert g("saturation", "open_median_gap") == pytest.approx(np.median(top2[:, 1] - top2[:, 0]), rel=1e-9)


def test_opening_experiment_gradient_to_unscaled_scores_is_tiny():
    S, V, dO, d_k = _replay_opening_experiment()
    dA = dO @ V.T

    def row_norms(A):
        # the full Jacobian, row by row: an independent route to the VJP
        return np.array([np.linalg.norm((np.diag(a) - np.outer(a, a)) @ g_) for a, g_ in zip(A, dA)])

    raw, scaled = row_norms(softmax_rows(S)), row_norms(softmax_rows(S / math.sqrt(d_k)))
    assert g("saturation", "open_dS_median_raw") == pytest.approx(np.median(raw), rel=1e-6)
    assert g("saturation", "open_dS_median_scaled") == pytest.approx(np.median(scaled), rel=1e-9)
    assert g("saturation", "open_dS_ratio") == pytest.approx(np.median(scaled) / np.median(raw), rel=1e-6)
    assert g("saturation", "open_dS_frac_tiny") == pytest.approx(np.mean(raw < 0.01))
    assert g("saturation", "open_dS_ratio") > 50


def test_winner_ahead_by_ten_among_32_keys_gets_at_least_0_9986():
    assert g("saturation", "winner_bound") == pytest.approx(1 / (1 + 31 * math.exp(-10)), rel=1e-12)
    assert round(g("saturation", "winner_bound"), 4) == 0.9986
    # the bound is attained when all 31 others trail by exactly 10
    assert softmax_rows(np.r_[10.0, np.zeros(31)])[0] == pytest.approx(g("saturation", "winner_bound"), rel=1e-12)


def test_uniform_row_of_32_has_the_largest_possible_trace():
    assert g("saturation", "trace_uniform_32") == pytest.approx(1 - 1 / 32, rel=1e-12)


def test_exercise_3_raw_and_scaled_weights_and_traces():
    raw, scaled = softmax_rows([12.0, 6.0, 0.0]), softmax_rows([2.0, 1.0, 0.0])
    for i, name in enumerate(("one", "two", "three")):
        assert g("saturation", f"ex3_raw_{name}") == pytest.approx(raw[i], rel=1e-9)
        assert g("saturation", f"ex3_scaled_{name}") == pytest.approx(scaled[i], rel=1e-9)
    assert g("saturation", "ex3_trace_raw") == pytest.approx(1 - np.sum(raw**2), rel=1e-9)
    assert g("saturation", "ex3_trace_scaled") == pytest.approx(1 - np.sum(scaled**2), rel=1e-9)
    assert np.allclose(raw, [0.9975, 0.0025, 0.0], atol=5e-5)
    assert np.allclose(scaled, [0.665, 0.245, 0.090], atol=5e-4)


def test_saturation_table_matches_the_library_recomputed():
    u4, u1024 = (attention.saturation_stats(d, scaled=False) for d in (4, 1024))
    assert g("saturation", "sat_unscaled_max_4") == pytest.approx(u4.mean_max_weight, rel=1e-12)
    assert g("saturation", "sat_unscaled_max_1024") == pytest.approx(u1024.mean_max_weight, rel=1e-12)
    assert g("saturation", "sat_unscaled_trace_4") == pytest.approx(u4.mean_trace, rel=1e-12)
    assert g("saturation", "sat_unscaled_trace_1024") == pytest.approx(u1024.mean_trace, rel=1e-12)
    assert g("saturation", "sat_trace_drop") == pytest.approx(u4.mean_trace / u1024.mean_trace, rel=1e-12)
    assert g("saturation", "sat_unscaled_onehot_1024") == pytest.approx(u1024.frac_near_one_hot, rel=1e-12)
    widths = [4, 8, 16, 32, 64, 128, 256, 512, 1024]
    scaled = [attention.saturation_stats(d, scaled=True) for d in widths]
    assert g("saturation", "sat_scaled_max_lo") == pytest.approx(min(s.mean_max_weight for s in scaled), rel=1e-12)
    assert g("saturation", "sat_scaled_max_hi") == pytest.approx(max(s.mean_max_weight for s in scaled), rel=1e-12)
    assert g("saturation", "sat_scaled_trace_lo") == pytest.approx(min(s.mean_trace for s in scaled), rel=1e-12)
    assert g("saturation", "sat_scaled_trace_hi") == pytest.approx(max(s.mean_trace for s in scaled), rel=1e-12)


def test_saturation_numbers_come_out_where_the_brief_expects():
    assert g("saturation", "sat_unscaled_max_4") == pytest.approx(0.35, abs=0.03)
    assert g("saturation", "sat_unscaled_max_1024") == pytest.approx(0.95, abs=0.02)
    assert g("saturation", "sat_unscaled_trace_4") == pytest.approx(0.79, abs=0.03)
    assert g("saturation", "sat_unscaled_trace_1024") == pytest.approx(0.07, abs=0.02)
    assert g("saturation", "sat_trace_drop") > 10
    for name in ("sat_scaled_max_lo", "sat_scaled_max_hi"):
        assert g("saturation", name) == pytest.approx(0.16, abs=0.015)
    for name in ("sat_scaled_trace_lo", "sat_scaled_trace_hi"):
        assert g("saturation", name) == pytest.approx(0.93, abs=0.015)


def test_saturation_numbers_agree_with_an_independent_sampler():
    rng = np.random.default_rng(99)  # not the library's seed or code path
    for d_k, key in ((4, "sat_unscaled_max_4"), (1024, "sat_unscaled_max_1024")):
        q = rng.standard_normal((2000, 1, d_k))
        K = rng.standard_normal((2000, 32, d_k))
        a = softmax_rows(np.einsum("nod,nkd->nk", q, K))
        assert a.max(axis=1).mean() == pytest.approx(g("saturation", key), abs=0.03)


def test_mirror_image_gradient_sizes_replayed():
    rng = np.random.default_rng(9)
    n_rows, T_k, d_v = 2000, 32, 16
    Vs = rng.standard_normal((n_rows, T_k, d_v))
    z = rng.standard_normal((n_rows, T_k))
    sizes = []
    for sd in (0.01, 1.0, math.sqrt(512)):
        A = softmax_rows(sd * z)
        O = np.einsum("rj,rjv->rv", A, Vs)
        sizes.append(np.linalg.norm(A[:, :, None] * (Vs - O[:, None, :]), axis=(1, 2)).mean())
    tiny, unit, big = sizes
    assert g("saturation", "mirror_grad_tiny") == pytest.approx(tiny, rel=1e-9)
    assert g("saturation", "mirror_grad_unit") == pytest.approx(unit, rel=1e-9)
    assert g("saturation", "mirror_grad_big") == pytest.approx(big, rel=1e-9)
    assert g("saturation", "mirror_per_key_tiny") == pytest.approx(tiny / math.sqrt(T_k * d_v), rel=1e-9)
    # "of order 1/T_k": within a factor 2 of 1/32 per entry
    assert 0.5 / T_k < g("saturation", "mirror_per_key_tiny") < 2.0 / T_k
    assert big < tiny < unit
