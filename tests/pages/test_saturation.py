"""Saturation and the softmax Jacobian: every number the prose quotes, recomputed independently
(own softmax, Jacobians built entry by entry, the page's seeds replayed), and the claims around
them checked at the settings they speak of and at others."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import attention
from attention.checkers import check_softmax_jacobian
from tests.glue import executed_notebook
from tests.pages._common import (
    CHAPTERS,
    code_cells,
    g,
    softmax_rows,
    solution_namespace,
)

PAGE = "saturation"
SOURCE = (CHAPTERS / f"{PAGE}.md").read_text()


def jacobian_built(a):
    """J = diag(a) - a a^T, entry by entry, for rows a (..., T_k)."""
    a = np.asarray(a, dtype=np.float64)
    return a[..., :, None] * np.eye(a.shape[-1]) - a[..., :, None] * a[..., None, :]


def gauge_built(a):
    """tr(J^2) as the sum of the squared entries of J (|J|_F^2)."""
    return np.sum(jacobian_built(a) ** 2, axis=(-2, -1))


# --- the opening experiment ----------------------------------------------------------------

def _replay_opening_experiment():
    T, d_k, d_v = 32, 512, 64
    rng = np.random.default_rng(512)
    Q = rng.standard_normal((T, d_k))
    K = rng.standard_normal((T, d_k))
    V = rng.standard_normal((T, d_v))
    dO = rng.standard_normal((T, d_v))
    return Q @ K.T, V, dO, d_k


def test_opening_experiment_unscaled_rows_are_nearly_one_hot():
    S, V, dO, d_k = _replay_opening_experiment()
    A_raw, A_scaled = softmax_rows(S), softmax_rows(S / math.sqrt(d_k))
    assert g(PAGE, "open_frac_onehot_raw") == pytest.approx(np.mean(A_raw.max(axis=1) > 0.9))
    assert g(PAGE, "open_mean_max_raw") == pytest.approx(A_raw.max(axis=1).mean(), rel=1e-9)
    assert g(PAGE, "open_mean_max_scaled") == pytest.approx(A_scaled.max(axis=1).mean(), rel=1e-9)
    assert g(PAGE, "open_max_max_scaled") == pytest.approx(A_scaled.max(), rel=1e-9)
    assert g(PAGE, "open_frac_onehot_raw") > 0.6
    assert g(PAGE, "open_max_max_scaled") < 0.6


def _opening_dQ(S, V, dO, K, d_k):
    """dQ of both heads, dS taken with respect to the same products QK^T (J built row by
    row: an independent route to the VJP; the scaled head's dS carries 1/sqrt(d_k))."""
    dA = dO @ V.T

    def dS(A):
        return np.array([jacobian_built(a) @ g_ for a, g_ in zip(A, dA)])

    return dS(softmax_rows(S)) @ K, dS(softmax_rows(S / math.sqrt(d_k))) @ K / math.sqrt(d_k)


def test_opening_gradient_is_tiny_for_most_unscaled_rows_but_larger_in_total():
    T, d_k, d_v = 32, 512, 64
    rng = np.random.default_rng(512)
    Q, K = rng.standard_normal((T, d_k)), rng.standard_normal((T, d_k))
    V, dO = rng.standard_normal((T, d_v)), rng.standard_normal((T, d_v))
    dQ_raw, dQ_sc = _opening_dQ(Q @ K.T, V, dO, K, d_k)
    raw, scaled = np.linalg.norm(dQ_raw, axis=1), np.linalg.norm(dQ_sc, axis=1)
    assert g(PAGE, "open_dQ_median_raw") == pytest.approx(np.median(raw), rel=1e-6)
    assert g(PAGE, "open_dQ_median_scaled") == pytest.approx(np.median(scaled), rel=1e-9)
    assert g(PAGE, "open_dQ_ratio") == pytest.approx(np.median(scaled) / np.median(raw), rel=1e-6)
    assert g(PAGE, "open_dQ_frac_tiny") == pytest.approx(np.mean(raw < 0.01))
    # "at this length, T = 32, it leaves a third of the rows almost silent"
    assert abs(np.mean(raw < 0.01) - 1 / 3) < 0.05
    text = " ".join(SOURCE.split())
    for phrase in ("silences most rows", "Most rows fall silent", "most rows fall silent",
                   "most rows pass almost nothing"):
        assert phrase not in text, phrase
    assert g(PAGE, "open_dQ_max_raw") == pytest.approx(raw.max(), rel=1e-9)
    assert g(PAGE, "open_dQ_max_scaled") == pytest.approx(scaled.max(), rel=1e-9)
    tot_raw, tot_sc = np.linalg.norm(dQ_raw), np.linalg.norm(dQ_sc)
    assert g(PAGE, "open_dQ_total_raw") == pytest.approx(tot_raw, rel=1e-9)
    assert g(PAGE, "open_dQ_total_scaled") == pytest.approx(tot_sc, rel=1e-9)
    assert g(PAGE, "open_dQ_total_ratio") == pytest.approx(tot_raw / tot_sc, rel=1e-9)
    # "about 17 times smaller", "5.5 times more" (this draw), as the prose rounds them
    assert round(g(PAGE, "open_dQ_ratio")) == 17
    assert round(g(PAGE, "open_dQ_total_ratio"), 1) == 5.5
    # "a few unscaled rows pass far more than any scaled row"
    assert 3 <= np.sum(raw > scaled.max()) <= 12
    # the like-for-like ratio is not the page's old dS-with-respect-to-its-own-scores one
    assert "379 times" not in SOURCE and "open_dS_ratio" not in SOURCE


def test_the_opening_draw_is_typical_over_200_other_draws():
    r = np.random.default_rng(20_000)
    T, d_k, d_v = 32, 512, 64
    med_ratio, tot_ratio = [], []
    for _ in range(200):
        Q, K = r.standard_normal((2, T, d_k))
        V, dO = r.standard_normal((2, T, d_v))
        S = Q @ K.T
        dA = dO @ V.T
        # the VJP written out: a * (g - a.g), an independent formula
        def vjp(A):
            return A * (dA - np.sum(A * dA, axis=1, keepdims=True))
        dQ_r = vjp(softmax_rows(S)) @ K
        dQ_s = vjp(softmax_rows(S / math.sqrt(d_k))) @ K / math.sqrt(d_k)
        n_r, n_s = np.linalg.norm(dQ_r, axis=1), np.linalg.norm(dQ_s, axis=1)
        med_ratio.append(np.median(n_s) / np.median(n_r))
        tot_ratio.append(np.linalg.norm(dQ_r) / np.linalg.norm(dQ_s))
    med_ratio, tot_ratio = np.array(med_ratio), np.array(tot_ratio)
    assert g(PAGE, "open_rep_median_smaller") == pytest.approx(np.mean(med_ratio > 1))
    assert g(PAGE, "open_rep_total_larger") == pytest.approx(np.mean(tot_ratio > 1))
    assert g(PAGE, "open_rep_total_lo") == pytest.approx(tot_ratio.min(), rel=1e-9)
    assert g(PAGE, "open_rep_total_hi") == pytest.approx(tot_ratio.max(), rel=1e-9)
    assert g(PAGE, "open_rep_total_larger") == 1.0  # "in 100% ... the larger"
    assert g(PAGE, "open_rep_median_smaller") > 0.9


def test_leads_of_ten_are_not_the_rule_but_the_median_lead_already_saturates():
    S, *_ = _replay_opening_experiment()
    top2 = np.sort(S, axis=1)[:, -2:]
    lead = top2[:, 1] - top2[:, 0]
    assert g(PAGE, "winner_bound") == pytest.approx(1 / (1 + 31 * math.exp(-10)), rel=1e-12)
    assert round(g(PAGE, "winner_bound"), 4) == 0.9986
    # the bound is attained when all 31 others trail by exactly 10
    assert softmax_rows(np.r_[10.0, np.zeros(31)])[0] == pytest.approx(g(PAGE, "winner_bound"))
    assert g(PAGE, "open_median_gap") == pytest.approx(np.median(lead), rel=1e-9)
    assert g(PAGE, "open_frac_lead10") == pytest.approx(np.mean(lead >= 10))
    assert g(PAGE, "open_frac_lead10") < 0.5  # "not the rule"
    assert g(PAGE, "open_bound_median_gap") == pytest.approx(
        1 / (1 + 31 * math.exp(-np.median(lead))), rel=1e-12)
    assert g(PAGE, "open_bound_median_gap") > 0.98
    assert "such leads are routine" not in SOURCE


# --- the Jacobian ------------------------------------------------------------------------

def test_two_key_jacobian_is_the_sigmoid_derivative_times_a_fixed_matrix():
    s = np.array([0.8, -0.4])
    p = 1 / (1 + math.exp(-(s[0] - s[1])))
    assert g(PAGE, "two_key_p") == pytest.approx(p, rel=1e-12)
    assert g(PAGE, "two_key_slope") == pytest.approx(p * (1 - p), rel=1e-12)
    J = jacobian_built(softmax_rows(s))
    np.testing.assert_allclose(J, p * (1 - p) * np.array([[1, -1], [-1, 1]]), atol=1e-15)
    # sigma' = sigma (1 - sigma): a central difference of the sigmoid
    h = 1e-6
    sig = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    assert (sig(1.2 + h) - sig(1.2 - h)) / (2 * h) == pytest.approx(p * (1 - p), rel=1e-8)


def test_the_gauge_is_e_jg_squared_and_at_most_a_quarter_at_a_two_way_tie():
    T_k = 32
    uniform = np.full(T_k, 1 / T_k)
    assert g(PAGE, "trace_uniform_32") == pytest.approx(1 - 1 / 32, rel=1e-12)
    assert g(PAGE, "gauge_uniform_32") == pytest.approx(gauge_built(uniform), rel=1e-12)
    assert g(PAGE, "gauge_uniform_32") == pytest.approx((T_k - 1) / T_k**2, rel=1e-12)
    S, *_ = _replay_opening_experiment()
    row = softmax_rows(S[0] / math.sqrt(512))
    assert g(PAGE, "gauge_scaled_row") == pytest.approx(gauge_built(row), rel=1e-9)
    # Monte Carlo of E|J g|^2 with its own seed: within 2% of tr(J^2)
    gs = np.random.default_rng(123).standard_normal((200_000, T_k))
    mc = np.mean(np.sum((gs @ jacobian_built(row)) ** 2, axis=1))
    assert mc == pytest.approx(g(PAGE, "gauge_scaled_row"), rel=0.02)
    assert g(PAGE, "gauge_scaled_row_mc") == pytest.approx(g(PAGE, "gauge_scaled_row"), rel=0.02)
    # the bound: tr(J^2) <= |a|^2 (1 - |a|^2) <= 1/4, equal only at a two-way tie
    rng = np.random.default_rng(4)
    for conc in (0.05, 0.3, 1.0, 5.0):
        a = rng.dirichlet(np.full(6, conc), size=20_000)
        p2 = np.sum(a**2, axis=1)
        assert np.all(gauge_built(a) <= p2 * (1 - p2) + 1e-12)
        assert gauge_built(a).max() < 0.25
    assert gauge_built(np.array([0.5, 0.5, 0, 0])) == pytest.approx(0.25, rel=1e-12)
    assert gauge_built(np.eye(5)[2]) == 0.0


# --- the sweep over the score scale ----------------------------------------------------------

@pytest.fixture(scope="module")
def sweep():
    """The page's rows replayed: tr J, tr(J^2) from J built entry by entry, and c |J K|_F."""
    n_rows, T_k, d_k = 4000, 32, 64
    rng = np.random.default_rng(64)
    q = rng.standard_normal((n_rows, d_k))
    K = rng.standard_normal((n_rows, T_k, d_k))
    qk = np.einsum("rd,rjd->rj", q, K)
    out = {}
    for sd in (0.1, 0.2, 0.5, 1, 2, 4, 8, 16, 32):
        c = sd / math.sqrt(d_k)
        A = softmax_rows(c * qk)
        J = jacobian_built(A)  # (rows, T_k, T_k)
        JK = J @ K  # (rows, T_k, d_k)
        lead = np.diff(np.sort(c * qk, axis=1)[:, -2:], axis=1)[:, 0]
        out[sd] = {"tr J": np.trace(J, axis1=1, axis2=2), "gauge": np.sum(J**2, axis=(1, 2)),
                   "dq": c * np.linalg.norm(JK, axis=(1, 2)), "lead": lead}
    return out


def test_sweep_numbers_are_the_replayed_rows_statistics(sweep):
    sds = sorted(sweep)
    gauge_means = [sweep[s]["gauge"].mean() for s in sds]
    med_dq = [np.median(sweep[s]["dq"]) for s in sds]
    assert g(PAGE, "sw_gauge_mean_lo") == pytest.approx(sweep[0.1]["gauge"].mean(), rel=1e-9)
    assert g(PAGE, "sw_gauge_uniform") == pytest.approx(31 / 1024, rel=1e-12)
    assert g(PAGE, "sw_gauge_mean_peak") == pytest.approx(max(gauge_means), rel=1e-9)
    assert g(PAGE, "sw_gauge_peak_sd") == sds[int(np.argmax(gauge_means))]
    assert g(PAGE, "sw_gauge_mean_32") == pytest.approx(sweep[32]["gauge"].mean(), rel=1e-9)
    assert g(PAGE, "sw_gauge_median_32") == pytest.approx(np.median(sweep[32]["gauge"]), rel=1e-3, abs=1e-12)
    assert g(PAGE, "sw_gauge_p90_32") == pytest.approx(np.percentile(sweep[32]["gauge"], 90), rel=1e-9)
    assert g(PAGE, "sw_trace_median_32") == pytest.approx(np.median(sweep[32]["tr J"]), rel=1e-3, abs=1e-12)
    for name, sd in (("sw_dq_median_01", 0.1), ("sw_dq_median_1", 1), ("sw_dq_median_32", 32)):
        assert g(PAGE, name) == pytest.approx(np.median(sweep[sd]["dq"]), rel=1e-6)
    for name, sd in (("sw_dq_mean_01", 0.1), ("sw_dq_mean_1", 1), ("sw_dq_mean_32", 32)):
        assert g(PAGE, name) == pytest.approx(sweep[sd]["dq"].mean(), rel=1e-6)
    assert g(PAGE, "sw_dq_p90_32") == pytest.approx(np.percentile(sweep[32]["dq"], 90), rel=1e-6)
    assert g(PAGE, "sw_dq_median_peak") == pytest.approx(max(med_dq), rel=1e-6)
    assert g(PAGE, "sw_dq_median_peak_sd") == sds[int(np.argmax(med_dq))]
    for name, sd in (("sw_dq_p90_over_median_01", 0.1), ("sw_dq_p90_over_median_32", 32)):
        dq = sweep[sd]["dq"]
        assert g(PAGE, name) == pytest.approx(np.percentile(dq, 90) / np.median(dq), rel=1e-6)
    # "small scores shrink every row's gradient by about the same factor"; saturation does not
    assert g(PAGE, "sw_dq_p90_over_median_01") < 2 < 1000 < g(PAGE, "sw_dq_p90_over_median_32")
    assert "## The mirror image" not in SOURCE and ": the mirror image" not in SOURCE


def test_the_peaks_on_the_finer_grid():
    """Both peaks, from the page's rows (seed 64), the gauge and the gradient from the row's
    weights alone: c^2 (|J t|^2 + (d_k - 1) tr(J^2)), written out here."""
    n_rows, T_k, d_k = 4000, 32, 64
    rng = np.random.default_rng(64)
    q = rng.standard_normal((n_rows, d_k))
    K = rng.standard_normal((n_rows, T_k, d_k))
    qk = np.einsum("rd,rjd->rj", q, K)
    t = qk / np.linalg.norm(q, axis=1, keepdims=True)
    fine = 2.0 ** np.arange(0, 4.01, 0.25)
    gauge, dq = [], []
    for sd in fine:
        c = sd / math.sqrt(d_k)
        a = softmax_rows(c * qk)
        sq = np.sum(a**2, axis=1)
        gj = np.maximum(sq - 2 * np.sum(a**3, axis=1) + sq**2, 0.0)
        Jt = a * (t - np.sum(a * t, axis=1, keepdims=True))
        gauge.append(gj.mean())
        dq.append(np.median(c * np.sqrt(np.sum(Jt**2, axis=1) + (d_k - 1) * gj)))
    assert g(PAGE, "sw_gauge_peak_fine") == fine[int(np.argmax(gauge))]
    assert g(PAGE, "sw_dq_peak_fine") == fine[int(np.argmax(dq))]
    # the two peaks are at different scales, both between the table's grid points 2 and 8
    assert 2 < g(PAGE, "sw_gauge_peak_fine") < g(PAGE, "sw_dq_peak_fine") < 8


def test_saturation_makes_the_gradient_sparse_and_spiky_rather_than_uniformly_small(sweep):
    sds = sorted(sweep)
    med = np.array([np.median(sweep[s]["dq"]) for s in sds])
    mean = np.array([sweep[s]["dq"].mean() for s in sds])
    peak = int(np.argmax(med))
    # the median rises, then collapses; the mean keeps growing
    assert np.all(np.diff(med[: peak + 1]) > 0) and np.all(np.diff(med[peak:]) < 0)
    assert med[-1] < med[peak] / 100
    assert np.all(np.diff(mean) > 0)
    assert np.percentile(sweep[32]["dq"], 90) > 1000 * med[-1]
    # the trace only falls
    assert np.all(np.diff([np.median(sweep[s]["tr J"]) for s in sds]) < 0)

    def share_for_half(x):
        sq = np.sort(x**2)[::-1]
        return (np.searchsorted(np.cumsum(sq) / sq.sum(), 0.5) + 1) / len(sq)

    assert g(PAGE, "sw_half_1") == pytest.approx(share_for_half(sweep[1]["dq"]))
    assert g(PAGE, "sw_half_32") == pytest.approx(share_for_half(sweep[32]["dq"]))
    assert g(PAGE, "sw_half_1") > 0.35 and g(PAGE, "sw_half_32") < 0.06
    top = sweep[32]["dq"] >= np.percentile(sweep[32]["dq"], 90)
    assert g(PAGE, "sw_lead_top_32") == pytest.approx(np.median(sweep[32]["lead"][top]), rel=1e-9)
    assert g(PAGE, "sw_lead_all_32") == pytest.approx(np.median(sweep[32]["lead"]), rel=1e-9)
    assert g(PAGE, "sw_lead_top_32") < 1 < 5 < g(PAGE, "sw_lead_all_32")


@pytest.mark.parametrize("d_k, T_k, seed", [(16, 32, 1), (64, 8, 2), (256, 128, 3)])
def test_the_median_collapses_while_the_mean_grows_at_other_widths_and_key_counts(d_k, T_k, seed):
    """The same shape at other settings, with independent rows (the page's claim is general)."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((600, d_k))
    K = rng.standard_normal((600, T_k, d_k))
    qk = np.einsum("rd,rjd->rj", q, K)
    med, mean = [], []
    for sd in (1, 4, 32):
        c = sd / math.sqrt(d_k)
        A = softmax_rows(c * qk)
        JK = A[:, :, None] * (K - np.einsum("rj,rjd->rd", A, K)[:, None, :])  # row j: a_j (k_j - aK)
        dq = c * np.linalg.norm(JK, axis=(1, 2))
        med.append(np.median(dq))
        mean.append(dq.mean())
    assert med[2] < med[1] / 20 and mean[2] > mean[0]


def test_the_two_routes_to_the_gradient_agree_and_the_approximation_holds(sweep):
    # the library's average given the scores, recomputed here from its formula with J built
    n_rows, T_k, d_k = 4000, 32, 64
    rng = np.random.default_rng(64)
    q = rng.standard_normal((n_rows, d_k))
    K = rng.standard_normal((n_rows, T_k, d_k))
    t = np.einsum("rd,rjd->rj", q, K) / np.linalg.norm(q, axis=1, keepdims=True)
    gaps, approx = [], []
    for sd in sorted(sweep):
        c = sd / math.sqrt(d_k)
        J = jacobian_built(softmax_rows(sd * t * np.linalg.norm(q, axis=1, keepdims=True) / 8))
        Jt = np.einsum("rij,rj->ri", J, t)
        given = c * np.sqrt(np.sum(Jt**2, axis=1) + (d_k - 1) * np.sum(J**2, axis=(1, 2)))
        direct = np.median(sweep[sd]["dq"])
        gaps.append(abs(np.median(given) / direct - 1))
        approx.append(abs(np.median(sd * np.sqrt(sweep[sd]["gauge"])) / direct - 1))
    assert g(PAGE, "routes_worst_gap") == pytest.approx(max(gaps), rel=1e-3)
    assert g(PAGE, "approx_worst_gap") == pytest.approx(max(approx), rel=1e-3)
    assert max(gaps) < 0.05 and max(approx) < 0.06


def test_raw_vs_scaled_solution_weights_and_gauges():
    raw, scaled = softmax_rows([12.0, 6.0, 0.0]), softmax_rows([2.0, 1.0, 0.0])
    for i, name in enumerate(("one", "two", "three")):
        assert g(PAGE, f"rvs_raw_{name}") == pytest.approx(raw[i], rel=1e-9)
        assert g(PAGE, f"rvs_scaled_{name}") == pytest.approx(scaled[i], rel=1e-9)
    assert g(PAGE, "rvs_gauge_raw") == pytest.approx(gauge_built(raw), rel=1e-6)
    assert g(PAGE, "rvs_gauge_scaled") == pytest.approx(gauge_built(scaled), rel=1e-9)
    assert g(PAGE, "rvs_gauge_ratio") == pytest.approx(gauge_built(scaled) / gauge_built(raw), rel=1e-6)
    # like for like (rv11): at the query the scaled head's c = 1/6 enters squared; a direct
    # check that E|c K^T J g|^2 over random keys and gradients has about that ratio
    assert g(PAGE, "rvs_query_ratio") == pytest.approx(gauge_built(scaled) / gauge_built(raw) / 36, rel=1e-6)
    rng = np.random.default_rng(0)
    K, G = rng.standard_normal((4000, 3, 36)), rng.standard_normal((4000, 3))
    def at_query(a, c):
        J = np.diag(a) - np.outer(a, a)
        return np.mean(np.sum((c * np.einsum("nkd,k->nd", K, 0 * a) +
                               c * np.einsum("nkd,nk->nd", K, G @ J)) ** 2, axis=-1))
    ratio = at_query(scaled, 1 / 6) / at_query(raw, 1.0)
    assert ratio == pytest.approx(g(PAGE, "rvs_query_ratio"), rel=0.1)
    assert "times more reaches the scores. Compared where the two meet, at\nthe query" in SOURCE
    assert np.allclose(raw, [0.9975, 0.0025, 0.0], atol=5e-5)
    assert np.allclose(scaled, [0.665, 0.245, 0.090], atol=5e-4)
    # the third raw weight is shown as it is (6.1e-06), not as 0.0000 on a page that
    # teaches that no softmax weight is exactly 0 (st4b)
    assert f"{raw[2]:.4f}" == "0.0000" and "{glue:text}`rvs_raw_three:.1e`" in SOURCE
    # tr(J^2) is the expected squared size of J g for a gradient g of unit-variance
    # entries, whose own expected squared size is T_k: the row keeps tr(J^2) / T_k of
    # it, not tr(J^2) (st4b)
    rng = np.random.default_rng(0)
    G = rng.standard_normal((200_000, 3))
    for a in (raw, scaled):
        J = jacobian_built(a)
        assert np.mean(np.sum((G @ J) ** 2, axis=1)) == pytest.approx(gauge_built(a), rel=0.02)
    assert np.mean(np.sum(G**2, axis=1)) == pytest.approx(3, rel=0.01)
    solution = SOURCE[SOURCE.index("Raw: $a \\approx$"):]
    assert "of its squared size" not in SOURCE
    assert ("A random upstream gradient of\nunit-variance entries (expected squared size "
            "$T_k$) comes out of the softmax with an\nexpected squared size of only "
            "$\\operatorname{tr}(J^2) =$ {glue:text}`rvs_gauge_raw:.1e`") in solution
    assert ("a random upstream gradient of unit-variance entries (expected squared size "
            "$T_k$) on to the\nscores with an expected squared size of only "
            "$\\operatorname{tr}(J^2) = (T_k - 1)/T_k^2") in SOURCE
    assert not any(re.search(r"ex\d", name) for name in re.findall(r'glue\("([^"]+)"', SOURCE))


# --- across widths -------------------------------------------------------------------------

def _stats_replayed(d_k, scaled, n=2000, T_k=32, seed=0):
    """saturation_stats recomputed: the same draw, own softmax, J built entry by entry."""
    rng = np.random.default_rng(seed)
    t = rng.standard_normal((n, T_k))
    q_norm = np.sqrt(rng.chisquare(d_k, size=n))
    c = 1 / math.sqrt(d_k) if scaled else 1.0
    A = softmax_rows(c * q_norm[:, None] * t)
    J = jacobian_built(A)
    Jt = np.einsum("rij,rj->ri", J, t)
    dq = c * np.sqrt(np.sum(Jt**2, axis=1) + (d_k - 1) * np.sum(J**2, axis=(1, 2)))
    return {"max": A.max(axis=1).mean(), "trace": np.mean(1 - np.sum(A**2, axis=1)),
            "onehot": np.mean(A.max(axis=1) > 0.9), "dq_median": np.median(dq),
            "dq_mean": dq.mean(), "dq_p90": np.percentile(dq, 90)}


WIDTHS = [4, 8, 16, 32, 64, 128, 256, 512, 1024]


@pytest.fixture(scope="module")
def table():
    return {(d, s): _stats_replayed(d, s) for d in WIDTHS for s in (False, True)}


def test_saturation_table_numbers_replayed(table):
    u4, u512, u1024 = table[4, False], table[512, False], table[1024, False]
    assert g(PAGE, "sat_unscaled_max_4") == pytest.approx(u4["max"], rel=1e-9)
    assert g(PAGE, "sat_unscaled_max_512") == pytest.approx(u512["max"], rel=1e-9)
    assert g(PAGE, "sat_unscaled_max_1024") == pytest.approx(u1024["max"], rel=1e-9)
    assert g(PAGE, "sat_unscaled_trace_4") == pytest.approx(u4["trace"], rel=1e-9)
    assert g(PAGE, "sat_unscaled_trace_1024") == pytest.approx(u1024["trace"], rel=1e-9)
    assert g(PAGE, "sat_trace_drop") == pytest.approx(u4["trace"] / u1024["trace"], rel=1e-9)
    assert g(PAGE, "sat_unscaled_onehot_512") == pytest.approx(u512["onehot"])
    assert g(PAGE, "sat_unscaled_onehot_1024") == pytest.approx(u1024["onehot"])
    assert g(PAGE, "sat_unscaled_dq_median_4") == pytest.approx(u4["dq_median"], rel=1e-6)
    assert g(PAGE, "sat_unscaled_dq_median_peak") == pytest.approx(
        max(table[d, False]["dq_median"] for d in WIDTHS), rel=1e-6)
    assert g(PAGE, "sat_unscaled_dq_median_1024") == pytest.approx(u1024["dq_median"], rel=1e-4)
    assert g(PAGE, "sat_unscaled_dq_mean_1024") == pytest.approx(u1024["dq_mean"], rel=1e-6)
    assert g(PAGE, "sat_unscaled_dq_p90_1024") == pytest.approx(u1024["dq_p90"], rel=1e-6)
    sc = [table[d, True] for d in WIDTHS]
    assert g(PAGE, "sat_scaled_max_lo") == pytest.approx(min(x["max"] for x in sc), rel=1e-9)
    assert g(PAGE, "sat_scaled_max_hi") == pytest.approx(max(x["max"] for x in sc), rel=1e-9)
    assert g(PAGE, "sat_scaled_trace_lo") == pytest.approx(min(x["trace"] for x in sc), rel=1e-9)
    assert g(PAGE, "sat_scaled_trace_hi") == pytest.approx(max(x["trace"] for x in sc), rel=1e-9)
    assert g(PAGE, "sat_scaled_dq_median_lo") == pytest.approx(min(x["dq_median"] for x in sc), rel=1e-6)
    assert g(PAGE, "sat_scaled_dq_median_hi") == pytest.approx(max(x["dq_median"] for x in sc), rel=1e-6)


def test_saturation_numbers_come_out_where_the_brief_expects():
    assert g(PAGE, "sat_unscaled_max_4") == pytest.approx(0.35, abs=0.03)
    assert g(PAGE, "sat_unscaled_max_1024") == pytest.approx(0.95, abs=0.02)
    assert g(PAGE, "sat_unscaled_trace_4") == pytest.approx(0.79, abs=0.03)
    assert g(PAGE, "sat_unscaled_trace_1024") == pytest.approx(0.07, abs=0.02)
    assert g(PAGE, "sat_trace_drop") > 10
    for name in ("sat_scaled_max_lo", "sat_scaled_max_hi"):
        assert g(PAGE, name) == pytest.approx(0.16, abs=0.015)
    for name in ("sat_scaled_trace_lo", "sat_scaled_trace_hi"):
        assert g(PAGE, name) == pytest.approx(0.93, abs=0.015)
    # the unscaled median gradient rises then falls by orders of magnitude; scaled stays flat
    assert g(PAGE, "sat_unscaled_dq_median_1024") < g(PAGE, "sat_unscaled_dq_median_peak") / 100
    assert g(PAGE, "sat_unscaled_dq_mean_1024") > g(PAGE, "sat_unscaled_dq_median_4")
    assert g(PAGE, "sat_scaled_dq_median_hi") < 1.15 * g(PAGE, "sat_scaled_dq_median_lo")


def test_saturation_numbers_agree_with_whole_vectors_drawn_another_way():
    """The shortcut (|q| and t) against queries and keys drawn as whole vectors, another seed."""
    rng = np.random.default_rng(99)
    for d_k, key in ((4, "sat_unscaled_max_4"), (512, "sat_unscaled_max_512"),
                     (1024, "sat_unscaled_max_1024")):
        q = rng.standard_normal((2000, 1, d_k))
        K = rng.standard_normal((2000, 32, d_k))
        a = softmax_rows(np.einsum("nod,nkd->nk", q, K))
        assert a.max(axis=1).mean() == pytest.approx(g(PAGE, key), abs=0.02)
    # and the gradient: c |J K|_F from whole vectors at d_k = 64, unscaled
    q = rng.standard_normal((2000, 64))
    K = rng.standard_normal((2000, 32, 64))
    A = softmax_rows(np.einsum("nd,nkd->nk", q, K))
    dq = np.linalg.norm(jacobian_built(A) @ K, axis=(1, 2))
    replay = _stats_replayed(64, False)
    assert np.mean(dq) == pytest.approx(replay["dq_mean"], rel=0.06)
    assert np.median(dq) == pytest.approx(replay["dq_median"], rel=0.15)
    assert np.percentile(dq, 90) == pytest.approx(replay["dq_p90"], rel=0.06)


def test_the_opening_and_the_table_differ_by_sampling_not_by_setting():
    r = np.random.default_rng(10_000)
    Q = r.standard_normal((200, 32, 512))
    K = r.standard_normal((200, 32, 512))
    largest = softmax_rows(np.einsum("nid,njd->nij", Q, K)).max(axis=-1)
    fracs, means = np.mean(largest > 0.9, axis=1), largest.mean(axis=1)
    for name, values, pct in (("rep_frac_lo", fracs, 5), ("rep_frac_mid", fracs, 50),
                              ("rep_frac_hi", fracs, 95), ("rep_mean_lo", means, 5),
                              ("rep_mean_mid", means, 50), ("rep_mean_hi", means, 95)):
        assert g(PAGE, name) == pytest.approx(np.percentile(values, pct), rel=1e-9)
    S, *_ = _replay_opening_experiment()
    opening = np.mean(softmax_rows(S).max(axis=1) > 0.9)
    assert g(PAGE, "rep_frac_rank") == pytest.approx(np.mean(fracs < opening))
    opening_mean = softmax_rows(S).max(axis=1).mean()
    assert g(PAGE, "rep_mean_rank") == pytest.approx(np.mean(means < opening_mean))
    # the table sits in the middle of the repeats' spread, the opening at its saturated end
    assert abs(g(PAGE, "sat_unscaled_onehot_512") - g(PAGE, "rep_frac_mid")) < 0.05
    assert abs(g(PAGE, "sat_unscaled_max_512") - g(PAGE, "rep_mean_mid")) < 0.01
    assert g(PAGE, "rep_frac_rank") > 0.85 and g(PAGE, "rep_mean_rank") > 0.85


# --- the number of keys ----------------------------------------------------------------------

def test_sum_of_squares_prediction_against_measurement_over_key_counts():
    rng = np.random.default_rng(2)
    s_grid = np.arange(0.25, 3.01, 0.25)
    sum_sq = {}
    for T_k in (8, 32, 128, 512, 2048, 8192):
        z = rng.standard_normal((max(2**19 // T_k, 1024), T_k))
        sum_sq[T_k] = np.array([np.mean(np.sum(softmax_rows(s * z) ** 2, axis=1)) for s in s_grid])
    assert g(PAGE, "tk_pred_trace_32") == pytest.approx(1 - math.e / 32, rel=1e-12)
    assert g(PAGE, "tk_obs_trace_32") == pytest.approx(1 - sum_sq[32][3], rel=1e-9)
    assert g(PAGE, "tk_pred_trace_32") == pytest.approx(0.915, abs=5e-4)
    assert g(PAGE, "tk_obs_trace_32") == pytest.approx(0.927, abs=3e-3)

    def last_good(T_k):
        ratio = sum_sq[T_k] / (np.exp(s_grid**2) / T_k)
        bad = np.flatnonzero(abs(ratio - 1) > 0.1)
        return s_grid[bad[0] - 1]

    assert g(PAGE, "tk_good_8") == last_good(8)
    assert g(PAGE, "tk_good_8192") == last_good(8192)
    # other draws of the 1024 rows put the 8192-key edge at 1.5 or 1.75, never elsewhere
    for seed in (11, 12, 13):
        z = np.random.default_rng(seed).standard_normal((1024, 8192))
        other = np.array([np.mean(np.sum(softmax_rows(s * z) ** 2, axis=1)) for s in s_grid])
        ratio = other / (np.exp(s_grid**2) / 8192)
        bad = np.flatnonzero(abs(ratio - 1) > 0.1)
        assert s_grid[bad[0] - 1] in (1.5, 1.75)
    assert g(PAGE, "tk_good_8") < g(PAGE, "tk_good_8192")  # "the more keys, the longer it holds"
    # while e^{2 s^2} << T_k the prediction holds, at every key count (within 5%)
    for T_k, values in sum_sq.items():
        ok = np.exp(2 * s_grid**2) < T_k / 100
        np.testing.assert_allclose(values[ok], np.exp(s_grid[ok] ** 2) / T_k, rtol=0.05)
        # beyond, the measured rows are flatter than predicted, never sharper
        assert np.all(values <= np.exp(s_grid**2) / T_k * 1.01)
    # at a fixed scale, more keys give a flatter row (smaller sum of squares)
    for i in range(len(s_grid)):
        col = [sum_sq[T][i] for T in (8, 32, 128, 512, 2048, 8192)]
        assert all(a > b for a, b in zip(col, col[1:]))
    # caption and alt text: "the curves for few keys level off toward their ceiling T_k"; the
    # many-key curves do not (8192 keys: about 6% of its ceiling at the largest scale, still
    # growing by half per step), so the caption must not say every curve flattens
    growth = {T: sum_sq[T][-1] / sum_sq[T][-2] for T in sum_sq}
    assert growth[8] < 1.1 and growth[32] < 1.15 and growth[8192] > 1.4
    assert all(growth[a] < growth[b] for a, b in zip((8, 32, 128, 512, 2048), (32, 128, 512, 2048, 8192)))
    assert sum_sq[8192][-1] < 0.1 and sum_sq[8][-1] > 0.5
    text = " ".join(SOURCE.split())
    assert "each flattening toward its own dotted ceiling" not in text
    assert text.count("the curves for few keys level off toward their") == 2  # caption, alt


def test_at_s_squared_ln_tk_the_rows_are_far_from_one_hot():
    for T_k, name in ((32, "tk_at_logT_32"), (8192, "tk_at_logT_8192")):
        z = np.random.default_rng(3).standard_normal((max(2**19 // T_k, 1024), T_k))
        a = softmax_rows(math.sqrt(math.log(T_k)) * z)
        assert g(PAGE, name) == pytest.approx(np.mean(np.sum(a**2, axis=1)), rel=1e-9)
        assert g(PAGE, name) < 0.3


def test_long_context_claims_cite_qwen_and_yarn():
    section = SOURCE.split("## Saturation depends on $T_k$ too")[1].split("## Scores that are too small")[0]
    assert "{cite:p}`bai2023qwen`" in section and "{cite:p}`peng2023yarn`" in section


# --- the exercises -----------------------------------------------------------------------------

def test_one_hot_jacobian_reference_solution_passes_and_wrong_ones_fail():
    ns = solution_namespace(PAGE, "vjp")
    assert check_softmax_jacobian(ns["jacobian"], ns["vjp"], verbose=False)
    assert not check_softmax_jacobian(lambda a: np.diag(a), ns["vjp"], verbose=False)
    assert not check_softmax_jacobian(ns["jacobian"], lambda a, g_: ns["jacobian"](a) @ g_, verbose=False)


def test_the_one_hot_exercise_comes_before_any_implementation_and_any_one_hot_argument():
    exercise = SOURCE.index(":label: ex-one-hot-jacobian")
    solution = SOURCE.index("```{solution-start} ex-one-hot-jacobian\n:class: dropdown")
    first_def = SOURCE.index("```{code-cell} ipython3\ndef jacobian(")
    assert first_def > solution and "def vjp(" in SOURCE[first_def:first_def + 400]
    before = SOURCE[:exercise]
    assert "e_m e_m^\\top" not in before and "one-hot row, where $J$" not in before
    assert "a * (g - np.dot(a, g))" not in before
    # the product J g is derived in the solution and displayed after it, not above the
    # exercise that asks for it
    assert "a \\odot" not in before and "a\\,(a^\\top g)" not in before
    end = SOURCE.index("```{solution-end}", solution)
    assert SOURCE.index(":label: eq-softmax-vjp") > end
    assert "a \\odot (g - (a \\cdot g)" in SOURCE[solution:end]


def test_the_one_hot_exercise_names_the_lengths_its_checker_measures():
    from attention.checkers.jacobian import SIZES

    exercise = SOURCE.split(":label: ex-one-hot-jacobian")[1].split("````")[0]
    listed = ", ".join(map(str, SIZES[:-1])) + f" and {SIZES[-1]} keys"
    assert re.sub(r"\s+", " ", exercise).count(listed) == 1, listed


def test_the_one_hot_exercise_names_the_odd_lengths_and_the_gradients_measured():
    from attention.checkers import jacobian as checker

    exercise = re.sub(r"\s+", " ", SOURCE.split(":label: ex-one-hot-jacobian")[1]
                      .split("````")[0])
    assert "and on rows of odd lengths, with gradients of both signs, all positive " \
           "and all negative," in exercise
    assert checker.ODD_SIZES and all(n % 2 for n in checker.ODD_SIZES)
    assert checker.GRADIENT_KINDS == ("of both signs", "all positive", "all negative")
    rng = np.random.default_rng(0)
    signs = [np.sign(checker._gradient(rng, 64, kind)) for kind in checker.GRADIENT_KINDS]
    assert signs[0].min() < 0 < signs[0].max()
    assert np.all(signs[1] > 0) and np.all(signs[2] < 0)


def test_the_raw_vs_scaled_exercise_is_not_answered_above_it():
    exercise = SOURCE.index(":label: ex-raw-vs-scaled")
    before = SOURCE[:exercise]
    assert "12.0, 6.0" not in before and "[12, 6, 0]" not in before
    assert not re.search(r"\(2, 1, 0\)", before)


def test_executed_page_shows_the_checker_passing():
    text = str(executed_notebook(PAGE))
    assert "7 of 7 checks passed." in text and "✗" not in text


# --- the page's rules ------------------------------------------------------------------------


def test_the_number_of_keys_is_t_k_never_n():
    prose = re.sub(r"```\{code-cell\}.*?```", "", SOURCE, flags=re.S)
    for bad in (r"\bn\b keys", r"1 - 1/n\b", r"O\(n\)", r"\\mathbb\{R\}\^n\b", r"1/n\b"):
        assert not re.search(bad, prose), bad
    for cell in code_cells(SOURCE):
        assert not re.search(r"^n = ", cell, flags=re.M)


def test_no_training_result_is_claimed_on_this_page():
    assert "train_retrieval_head" not in SOURCE and "attention.training" not in SOURCE
    assert "{ref}`training" in SOURCE
    for phrase in ("Adam largely rescues", "stays where it started", "learns at all three"):
        assert phrase not in SOURCE


def test_trace_is_called_spread_not_gradient_flow():
    assert "trace measures how much gradient" not in SOURCE
    assert "measures how much gradient passes" not in SOURCE
    assert "stability-masks" not in SOURCE


# --- the mean gradient levels off at large scales -------------------------------------------

def _far_rows_dq(seed, n_rows=50_000, d_k=64, T_k=32, sds=(8, 32, 128, 512, 2048)):
    """|dq| per row, from the row's scores alone: c^2 (|J t|^2 + (d_k - 1) tr(J^2))."""
    q_norm, t = attention.row_score_draws(d_k, T_k, n_rows, seed=seed)
    out = {}
    for sd in sds:
        c = sd / math.sqrt(d_k)
        a = softmax_rows(c * q_norm[:, None] * t)
        Jt = a * (t - np.sum(a * t, axis=1, keepdims=True))
        sq = np.sum(a**2, axis=1)
        gauge = sq - 2 * np.sum(a**3, axis=1) + sq**2
        gauge = np.maximum(gauge, 0.0)  # rounding can leave -1e-17
        out[sd] = c * np.sqrt(np.sum(Jt**2, axis=1) + (d_k - 1) * gauge)
    return out


def test_the_mean_gradient_levels_off_while_the_90th_percentile_falls():
    dq = _far_rows_dq(1)
    for name, sd in (("far_dq_rms_32", 32), ("far_dq_rms_128", 128), ("far_dq_rms_512", 512),
                     ("far_dq_rms_2048", 2048)):
        assert g(PAGE, name) == pytest.approx(np.sqrt(np.mean(dq[sd] ** 2)), rel=1e-6)
    assert g(PAGE, "far_dq_mean_8") == pytest.approx(dq[8].mean(), rel=1e-6)
    assert g(PAGE, "far_dq_mean_32") == pytest.approx(dq[32].mean(), rel=1e-6)
    assert g(PAGE, "far_dq_mean_2048") == pytest.approx(dq[2048].mean(), rel=1e-6)
    for sd in (32, 2048):  # "± one standard error" of the mean over the rows
        assert g(PAGE, f"far_dq_se_{sd}") == pytest.approx(dq[sd].std() / math.sqrt(dq[sd].size), rel=1e-6)
    # "differs a little from the one above": by under a tenth, and not zero
    diff = abs(g(PAGE, "far_dq_mean_32") - g(PAGE, "sw_dq_mean_32"))
    assert 0 < diff < 0.1 * g(PAGE, "sw_dq_mean_32")
    assert g(PAGE, "far_dq_p90_32") == pytest.approx(np.percentile(dq[32], 90), rel=1e-6)
    assert g(PAGE, "far_dq_p90_128") == pytest.approx(np.percentile(dq[128], 90), rel=1e-6)
    for seed in (1, 2, 3):  # "only reaches": at other seeds too
        dq = _far_rows_dq(seed)
        assert dq[32].mean() > 1.1 * dq[8].mean()
        assert dq[2048].mean() < 1.15 * dq[32].mean()
        assert np.percentile(dq[128], 90) < 0.1 * np.percentile(dq[32], 90)
        # "the root mean square keeps growing ... about doubling with each fourfold step"
        rms = [np.sqrt(np.mean(dq[sd] ** 2)) for sd in (32, 128, 512, 2048)]
        assert all(1.7 < b / a < 2.3 for a, b in zip(rms, rms[1:]))
    assert "the mean level off" not in SOURCE


def test_the_opening_keeps_dS_the_gradient_of_each_heads_own_scores():
    """dS = dL/dS with S = c QK^T, and dQ = c dS K, in the prose and in the code (H5, H10);
    the batch norm is a root-sum-square, and sets a summed gradient's size only for
    uncorrelated rows (G8); near uniform rows only the factor a_j is the same for every key."""
    text = " ".join(SOURCE.split())
    assert "dQ_raw, dQ_scaled = dS_raw @ K, c * dS_scaled @ K" in SOURCE
    assert "softmax_vjp(A_scaled, dA) / math.sqrt(d_k)" not in SOURCE
    assert r"$\mathrm{d}Q = c\,\mathrm{d}S\,K$ in both heads" in text
    assert "the quantity an optimizer steps" not in text
    assert "the root-sum-square of the rows' norms" in text
    assert "for rows whose gradients are uncorrelated, sets the size of a batch's summed" in text
    assert "the same for every key." not in text
    assert "passes little gradient to the query. Spread is not flow." not in text


def test_a_uniform_row_passes_about_one_over_T_k_and_needs_tiny_differences_not_tiny_scores():
    """The spread-is-not-flow sentence: tr(J^2) = (T_k - 1)/T_k^2 at a uniform row; a row
    with large but equal scores is just as uniform (so the sentence speaks of differences)."""
    T_k = 32
    a = np.full(T_k, 1 / T_k)
    J = np.diag(a) - np.outer(a, a)
    assert np.trace(J @ J) == pytest.approx((T_k - 1) / T_k**2)
    assert attention.softmax(np.full(T_k, 100.0)) == pytest.approx(a)
    text = " ".join(SOURCE.split())
    assert "near-uniform only when the score *differences* are tiny" in text


def test_the_query_gradient_average_rests_on_the_keys_parts_orthogonal_to_q():
    """eq-query-gradient: given q, the keys' components orthogonal to q do not enter J, and
    averaging |J K|_F^2 over them gives |J t|^2 + (d_k - 1) tr(J^2), whatever K K^T is (at
    d_k = 64, T_k = 32 the eigenvalues of K K^T / d_k are far from all being 1, so the keys'
    near-orthogonality is not the reason)."""
    d_k, T_k, n = 64, 32, 4000
    rng = np.random.default_rng(3)
    q = rng.standard_normal(d_k)
    u = q / np.linalg.norm(q)
    K0 = rng.standard_normal((T_k, d_k))
    ev = np.linalg.eigvalsh(K0 @ K0.T / d_k)
    assert ev.min() < 0.3 and ev.max() > 2  # K K^T is not close to d_k I
    t = K0 @ u  # the components the scores see
    J = jacobian_built(softmax_rows(np.linalg.norm(q) / math.sqrt(d_k) * t))
    # fresh orthogonal parts, the component along q kept: J is the same for every draw
    Z = rng.standard_normal((n, T_k, d_k))
    K = t[None, :, None] * u + (Z - (Z @ u)[..., None] * u)
    mc = np.mean(np.sum((J @ K) ** 2, axis=(1, 2)))
    exact = np.sum((J @ t) ** 2) + (d_k - 1) * np.trace(J @ J)
    assert mc == pytest.approx(exact, rel=0.02)
    text = " ".join(SOURCE.split())
    assert "nearly orthogonal" not in text and r"K K^\top \approx d_k I" not in text
    assert ("its $d_k - 1$ components orthogonal to $q$, on which $J$ does not depend. For keys "
            "of independent standard normal entries, averaging over those orthogonal parts gives "
            r"$\lVert J t \rVert^2 + (d_k - 1) \operatorname{tr}(J^2)$") in text


def test_the_direct_route_is_the_more_spread_one(sweep):
    """"a small gap: the direct route keeps the keys' random parts, which spread its values":
    row by row, the direct |dq|^2 is the average given the scores times a random factor of
    mean 1 (the average removes it) and a spread of several per cent, at every scale."""
    n_rows, T_k, d_k = 4000, 32, 64
    rng = np.random.default_rng(64)
    q = rng.standard_normal((n_rows, d_k))
    K = rng.standard_normal((n_rows, T_k, d_k))
    t = np.einsum("rd,rjd->rj", q, K) / np.linalg.norm(q, axis=1, keepdims=True)
    for sd in sorted(sweep):
        c = sd / math.sqrt(d_k)
        J = jacobian_built(softmax_rows(c * np.linalg.norm(q, axis=1, keepdims=True) * t))
        Jt = np.einsum("rij,rj->ri", J, t)
        given = c * np.sqrt(np.sum(Jt**2, axis=1) + (d_k - 1) * np.sum(J**2, axis=(1, 2)))
        r = sweep[sd]["dq"] ** 2 / given**2
        assert abs(r.mean() - 1) < 0.01 and r.std() > 0.03, sd
    text = " ".join(SOURCE.split())
    assert "sampling noise: they differ only by" not in text
    assert "(a small gap: the direct route keeps the keys' random parts, which spread its values)" in text


def test_adam_undoes_the_gradients_factor_c_not_the_forward_one():
    """One Adam step on q moves it by about lr whatever the gradient's size, so a factor c on
    the gradient is undone; the scores then move by c times that step, so the forward factor
    is not (item 8 of review 11)."""
    import torch

    d_k, T_k = 64, 8
    gen = torch.Generator().manual_seed(0)
    q0 = torch.randn(d_k, generator=gen)
    K = torch.randn(T_k, d_k, generator=gen)
    g = torch.randn(T_k, generator=gen)  # upstream gradient of the scores
    moves = {}
    for c in (1.0, 0.01):
        q = q0.clone().requires_grad_()
        (c * (K @ q) * g).sum().backward()  # gradient of q: c K^T g
        opt = torch.optim.Adam([q], lr=1e-3)
        opt.step()
        step = (q.detach() - q0).norm().item()
        moves[c] = (step, (c * K @ (q.detach() - q0)).norm().item())
    assert moves[0.01][0] == pytest.approx(moves[1.0][0], rel=1e-3)  # step: factor c undone
    assert moves[0.01][1] == pytest.approx(0.01 * moves[1.0][1], rel=1e-3)  # scores: not
    text = " ".join(SOURCE.split())
    assert "undoes a uniform shrinking." not in text
    assert ("undoes the gradient's factor $c$, but not the forward one (a step of the query "
            "reaches the scores times $c$), which still needs a larger rate") in text


def test_the_eigenvalues_print_no_negative_zero_and_the_caption_names_spread():
    """The eigenvalue printout beside "positive semidefinite" shows no negative zero; the
    gauges figure's caption does not call the trace (left panel, "not flow") a gauge of the
    gradient."""
    text = str(executed_notebook(PAGE))
    line = re.search(r"eigenvalues: \[[^\]]*\]", text)
    assert line and "-0." not in line.group(0)
    assert "Three gauges of one row's gradient" not in SOURCE
    assert ("Three measures of a softmax row against the score scale, over random rows: its "
            "spread and two gauges of its gradient.") in " ".join(SOURCE.split())
