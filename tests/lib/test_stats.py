"""Score moments and saturation statistics (attention.stats) against sampling."""

from __future__ import annotations

import numpy as np
import pytest

from attention import (
    SaturationStats,
    attention_rows,
    sample_scores,
    saturation_stats,
    scaled_score_moments,
)


@pytest.mark.parametrize("d_k", [1, 16, 256])
@pytest.mark.parametrize("rho", [0.0, 0.5, -0.9])
def test_score_moments_agree_with_monte_carlo(d_k, rho):
    n = 40_000
    s = sample_scores(d_k, n, rho=rho, seed=d_k)
    mean, var = scaled_score_moments(d_k, rho)
    # Standard errors: sd / sqrt(n) for the mean; var * sqrt(2 / (n - 1)) for a normal-ish
    # variance (the rho |q|^2 term has heavier tails, hence the generous factor).
    assert abs(s.mean() - mean) < 5 * np.sqrt(var / n)
    assert abs(s.var() - var) < 8 * var * np.sqrt(2 / (n - 1))


def test_scaled_variance_is_one_plus_rho_squared_at_every_width():
    for d_k in (1, 4, 1024):
        assert scaled_score_moments(d_k, 0.6) == pytest.approx((0.6 * np.sqrt(d_k), 1.36))
    assert scaled_score_moments(64) == (0.0, 1.0)


def test_unscaled_score_variance_grows_like_d_k():
    for d_k in (4, 64, 512):
        s = sample_scores(d_k, 20_000, scaled=False, seed=1)
        assert s.var() == pytest.approx(d_k, rel=0.05)


def test_sample_scores_is_reproducible_from_its_seed_and_changes_with_it():
    a = sample_scores(8, 100, rho=0.3, seed=5)
    assert a.shape == (100,) and a.dtype == np.float64
    assert np.array_equal(a, sample_scores(8, 100, rho=0.3, seed=5))
    assert not np.array_equal(a, sample_scores(8, 100, rho=0.3, seed=6))


def test_sample_scores_fills_every_chunk_at_large_d_k():
    # d_k = 2**18 samples 4 rows per chunk, so n = 10 spans three chunks, the last partial.
    # With rho = 1, k = q and the scaled score |q|^2 / sqrt(d_k) has mean sqrt(d_k) = 512
    # and variance 2: every entry must be near 512 (an unfilled np.empty entry would not be).
    s = sample_scores(2**18, 10, rho=1.0, seed=0)
    assert np.all(np.abs(s - 512.0) < 8 * np.sqrt(2.0))


def test_attention_rows_are_probability_vectors_of_the_requested_shape():
    A = attention_rows(16, n_keys=10, n_queries=50, seed=2)
    assert A.shape == (50, 10)
    np.testing.assert_allclose(A.sum(axis=-1), 1.0)
    assert np.array_equal(A, attention_rows(16, n_keys=10, n_queries=50, seed=2))


def test_unscaled_rows_saturate_as_d_k_grows_while_scaled_rows_do_not():
    scaled = [saturation_stats(d, n_queries=500, seed=3) for d in (4, 256)]
    unscaled = [saturation_stats(d, scaled=False, n_queries=500, seed=3) for d in (4, 256)]
    assert abs(scaled[0].mean_max_weight - scaled[1].mean_max_weight) < 0.03
    assert unscaled[1].mean_max_weight > 0.8 > unscaled[0].mean_max_weight
    assert unscaled[1].mean_trace < 0.3 < scaled[1].mean_trace
    assert unscaled[1].frac_near_one_hot > scaled[1].frac_near_one_hot


def test_saturation_stats_summarise_attention_rows():
    st = saturation_stats(8, n_keys=6, n_queries=300, temperature=0.5, seed=4)
    assert isinstance(st, SaturationStats)
    A = attention_rows(8, n_keys=6, n_queries=300, temperature=0.5, seed=4)
    assert st.mean_max_weight == pytest.approx(A.max(axis=-1).mean())
    assert st.mean_trace == pytest.approx((1 - (A**2).sum(axis=-1)).mean())
    assert st.frac_near_one_hot == pytest.approx((A.max(axis=-1) > 0.9).mean())
    assert (st.d_k, st.n_keys, st.scaled, st.temperature) == (8, 6, True, 0.5)
    assert 1 / 6 <= st.mean_max_weight <= 1 and 0 <= st.mean_trace <= 1 - 1 / 6
