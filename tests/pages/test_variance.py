"""The variance argument: every number the prose quotes, recomputed independently."""

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


# --- page 2: the variance argument -----------------------------------------------------

@pytest.mark.parametrize("name, d_k, brief", [("sd_64", 64, 8.0), ("sd_128", 128, 11.3), ("sd_512", 512, 22.6)])
def test_raw_score_standard_deviation_is_sqrt_d_k(name, d_k, brief):
    assert g("variance", name) == pytest.approx(math.sqrt(d_k), rel=1e-12)
    assert g("variance", name) == pytest.approx(brief, abs=0.05)


def _replay_variance_sampling():
    """The page's sampling, replayed: same seed, same order of draws."""
    rng = np.random.default_rng(4)
    raw = {}
    for d_k in 2 ** np.arange(0, 11):
        q = rng.standard_normal((20_000, d_k))
        k = rng.standard_normal((20_000, d_k))
        raw[int(d_k)] = (q * k).sum(axis=1)
    return raw


def test_measured_score_variances_match_the_replayed_sampling_and_the_theory():
    raw = _replay_variance_sampling()
    for d_k in (64, 512):
        assert g("variance", f"var_raw_{d_k}") == pytest.approx(raw[d_k].var(), rel=1e-9)
        assert g("variance", f"var_scaled_{d_k}") == pytest.approx((raw[d_k] / math.sqrt(d_k)).var(), rel=1e-9)
        assert g("variance", f"var_raw_{d_k}") == pytest.approx(d_k, rel=0.05)
    scaled = [(s / math.sqrt(d)).var() for d, s in raw.items()]
    assert g("variance", "var_scaled_min") == pytest.approx(min(scaled), rel=1e-9)
    assert g("variance", "var_scaled_max") == pytest.approx(max(scaled), rel=1e-9)
    assert 0.95 < min(scaled) and max(scaled) < 1.05


def test_correlated_key_moments_match_formula_and_sampling():
    d_k, rho = 256, 0.9
    assert g("variance", "corr_mean_formula") == pytest.approx(rho * math.sqrt(d_k), rel=1e-12)
    assert g("variance", "corr_var_formula") == pytest.approx(1 + rho**2, rel=1e-12)
    # an independent Monte Carlo, with its own seed: within sampling error of the formula
    s = attention.sample_scores(d_k, 40_000, rho=rho, seed=123)
    assert g("variance", "corr_mean_sampled") == pytest.approx(s.mean(), abs=0.05)
    assert g("variance", "corr_var_sampled") == pytest.approx(s.var(), abs=0.06)
    assert g("variance", "corr_mean_sampled") == pytest.approx(14.4, abs=0.05)


def test_t5_parametrization_moves_scores_sqrt_d_k_times_further_under_one_adam_step():
    assert g("variance", "adam_step_ratio") == pytest.approx(math.sqrt(256), rel=0.01)
