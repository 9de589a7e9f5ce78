"""Score moments and saturation statistics (attention.scores) against sampling."""

from __future__ import annotations

import numpy as np
import pytest

from attention import (
    SaturationStats,
    attention_rows,
    jacobian_frobenius_sq,
    query_gradient_rms,
    row_score_draws,
    sample_scores,
    saturation_stats,
    scaled_score_moments,
    softmax,
    softmax_jacobian,
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
    J = softmax_jacobian(A)
    jsq = np.sum(J**2, axis=(-2, -1))
    assert st.mean_jacobian_sq == pytest.approx(jsq.mean())
    assert st.median_jacobian_sq == pytest.approx(np.median(jsq))
    _, t = row_score_draws(8, 6, 300, seed=4)
    c = 1 / (0.5 * np.sqrt(8))
    Jt = np.einsum("rij,rj->ri", J, t)
    dq = c * np.sqrt(np.sum(Jt**2, axis=1) + 7 * jsq)
    assert st.mean_grad_q == pytest.approx(dq.mean())
    assert st.median_grad_q == pytest.approx(np.median(dq))
    assert st.p90_grad_q == pytest.approx(np.percentile(dq, 90))


def test_row_score_draws_give_the_distribution_of_whole_vector_scores():
    d_k, n = 4, 200_000
    q_norm, t = row_score_draws(d_k, 1, n, seed=11)
    z = q_norm * t[:, 0] / np.sqrt(d_k)  # q.k / sqrt(d_k)
    # variance 1 and excess kurtosis 6 / d_k, as for independent normal q and k
    assert z.var() == pytest.approx(1.0, rel=0.02)
    assert np.mean(z**4) / z.var() ** 2 - 3 == pytest.approx(6 / d_k, abs=0.15)
    assert np.mean(q_norm**2) == pytest.approx(d_k, rel=0.02)


def test_row_score_draws_share_key_directions_across_widths_and_vary_with_the_seed():
    n1, t1 = row_score_draws(16, 8, 50, seed=2)
    n2, t2 = row_score_draws(512, 8, 50, seed=2)
    assert np.array_equal(t1, t2) and not np.allclose(n1, n2)
    assert t1.shape == (50, 8) and n1.shape == (50,)
    assert not np.array_equal(t1, row_score_draws(16, 8, 50, seed=3)[1])


def test_query_gradient_rms_is_the_average_over_the_unseen_parts_of_the_keys():
    """Monte Carlo over the keys' components orthogonal to q (and g) for fixed scores."""
    rng = np.random.default_rng(7)
    for d_k, T_k, scale in ((4, 8, 2.0), (16, 32, 4.0), (64, 32, 0.5)):
        q = rng.standard_normal(d_k)
        q_hat = q / np.linalg.norm(q)
        t = rng.standard_normal(T_k)
        c = scale / np.sqrt(d_k)
        a = softmax(c * np.linalg.norm(q) * t)
        U = rng.standard_normal((20_000, T_k, d_k))
        U -= (U @ q_hat)[..., None] * q_hat  # only the parts orthogonal to q
        K = t[None, :, None] * q_hat + U  # (draws, T_k, d_k), every draw has the same scores
        dq_sq = c**2 * np.sum((softmax_jacobian(a) @ K) ** 2, axis=(1, 2))
        want = float(query_gradient_rms(a, t, c, d_k)) ** 2
        assert dq_sq.mean() == pytest.approx(want, rel=4 * dq_sq.std() / np.sqrt(len(dq_sq)) / want + 1e-9)


def test_query_gradient_rms_at_width_one_is_exact_and_about_sigma_sqrt_gauge_when_wide():
    rng = np.random.default_rng(8)
    t = rng.standard_normal(16)
    a = softmax(1.3 * t)
    J = softmax_jacobian(a)
    assert float(query_gradient_rms(a, t, 0.7, 1)) == pytest.approx(0.7 * np.linalg.norm(J @ t))
    # wide: c sqrt((d_k - 1) tr J^2 + |J t|^2) ~ c sqrt(d_k) sqrt(tr J^2)
    d_k, c = 4096, 1.3 / np.sqrt(4096)
    got = float(query_gradient_rms(a, t, c, d_k))
    assert got == pytest.approx(1.3 * np.sqrt(float(jacobian_frobenius_sq(a))), rel=0.01)


def test_query_gradient_rms_keeps_float32_and_broadcasts_c_over_rows_of_weights():
    A = softmax(np.random.default_rng(9).standard_normal((5, 3, 8))).astype(np.float32)
    t = np.random.default_rng(10).standard_normal((5, 1, 8))
    c = np.array([0.1, 1.0, 10.0])
    out = query_gradient_rms(A, t, c, 32)
    assert out.shape == (5, 3) and out.dtype == np.float32
    ref = query_gradient_rms(A.astype(np.float64), t, c, 32)
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_unscaled_gradient_median_collapses_while_its_mean_grows_and_scaled_stays_flat():
    unscaled = [saturation_stats(d, scaled=False, n_queries=1000, seed=5) for d in (16, 1024)]
    scaled = [saturation_stats(d, scaled=True, n_queries=1000, seed=5) for d in (16, 1024)]
    assert unscaled[1].median_grad_q < unscaled[0].median_grad_q / 100
    assert unscaled[1].mean_grad_q > unscaled[0].mean_grad_q
    assert unscaled[1].p90_grad_q > 1000 * unscaled[1].median_grad_q
    assert scaled[1].median_grad_q == pytest.approx(scaled[0].median_grad_q, rel=0.1)
