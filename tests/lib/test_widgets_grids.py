"""The widgets' Python side: every precomputed grid point equals the library computed at that setting.

The browser only selects from these grids, so checking them here checks every number a
reader can reach with the sliders. Expected values come from independent NumPy code or from
the library function the page itself uses (saturation_stats, attention_rows, sample_scores).
"""

from __future__ import annotations

import base64
import itertools
import math
import re

import numpy as np
import pytest
import traitlets

import attention
from attention.widgets import SaturationExplorer, TemperatureExplorer, WidthExplorer
from attention.widgets import _base, saturation, width
from attention.widgets import temperature as tw


@pytest.fixture(scope="module")
def temp_widget():
    return TemperatureExplorer()


@pytest.fixture(scope="module")
def width_widget():
    return WidthExplorer()


@pytest.fixture(scope="module")
def sat_widget():
    return SaturationExplorer()


TEMP_TAUS = tw.TEMPERATURES
TEMP_STEPS = tw.QUERY_STEPS
WIDTH_D_KS = list(width.D_KS)
WIDTH_RHOS = list(width.RHOS)
WIDTH_STATS = ("raw_mean", "raw_var", "scaled_mean", "scaled_var", "kurtosis")


# --- TemperatureExplorer ---------------------------------------------------------------


def test_temperature_one_gives_the_texts_weights_about_016_0681_016(temp_widget):
    r = temp_widget.readout(1.0)
    assert r["temperature"] == 1.0
    np.testing.assert_allclose(r["weights"], [0.160, 0.681, 0.160], atol=5e-4)


def _softmax(s):
    e = np.exp(np.asarray(s, dtype=np.float64) - np.max(s))
    return e / e.sum()


def test_temperature_grid_holds_the_slider_positions_and_the_values_of_the_hull_exercise():
    g = TemperatureExplorer()._grid
    assert g["temperatures"] == list(TEMP_TAUS) and len(TEMP_TAUS) == 53
    assert TEMP_TAUS[0] == pytest.approx(0.05, rel=0.01) and TEMP_TAUS[-1] == pytest.approx(20, rel=0.01)
    assert g["query_steps"][0] == -4.0 and g["query_steps"][-1] == 4.0 and len(TEMP_STEPS) == 81
    assert g["values"] == [[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]] and g["d_k"] == 4


@pytest.mark.parametrize("tau", [TEMP_TAUS[0], 1.0, TEMP_TAUS[-1]])
@pytest.mark.parametrize("q", [(0.1, 3.0, 0.1), (-4.0, 4.0, -4.0), (1.6, 0.6, -0.2), (2.0, 2.0, 2.0)])
def test_temperature_readout_is_the_softmax_of_the_query_over_tau_sqrt_dk(tau, q):
    r = tw.explorer_readout(tau, q)
    a = _softmax(np.array(q) / (tau * 2.0))
    np.testing.assert_allclose(r["weights"], a, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(r["output"], [10 * a[1], 10 * a[2]], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r["scores"], np.array(q) / (tau * 2.0), rtol=1e-15)


def test_temperature_starting_state_is_the_worked_example():
    w = TemperatureExplorer()
    r = w.readout()
    assert w.temperature == 1.0 and w.query == [0.1, 3.0, 0.1]
    np.testing.assert_allclose(r["weights"], [0.160, 0.681, 0.160], atol=5e-4)
    assert r["where"] == "inside the triangle"


def test_temperature_query_entries_snap_to_tenths_and_out_of_range_values_are_refused():
    w = TemperatureExplorer()
    w.query = [0.04, -3.96, 2.0]
    assert w.query == [0.0, -4.0, 2.0]
    for bad in ([1.0, 2.0], [4.5, 0.0, 0.0], [0.0, float("nan"), 0.0], [0.0, 0.0, float("inf")], "abc"):
        with pytest.raises(traitlets.TraitError):
            w.query = bad
    assert w.query == [0.0, -4.0, 2.0]
    with pytest.raises(traitlets.TraitError, match="between"):
        w.temperature = 100.0


@pytest.mark.parametrize("weights, words", [
    ((1.0, 0.0, 0.0), "at the corner v1"), ((0.0005, 0.9995, 0.0), "at the corner v2"),
    ((0.0, 0.5, 0.5), "on the edge v2 v3"), ((0.3, 0.0, 0.7), "on the edge v1 v3"),
    ((0.2, 0.3, 0.5), "inside the triangle"),
])
def test_temperature_where_the_output_lies_is_read_off_its_weights(weights, words):
    assert tw.where_in_triangle(weights) == words


def test_temperature_fallback_figure_has_alt_text_without_typed_numbers():
    w = TemperatureExplorer()
    assert not re.search(r"\d", w.fallback_alt.replace("v2", ""))
    assert "attn-fallback" in w.fallback_html()


# --- WidthExplorer ---------------------------------------------------------------------

@pytest.mark.parametrize("d_k,rho", [(1, 0.0), (64, 0.0), (64, 0.5), (1024, 0.3), (256, 1.0)])
def test_width_grid_moments_are_those_of_the_librarys_samples(width_widget, d_k, rho):
    p = width_widget.readout(d_k, rho)
    raw = attention.sample_scores(d_k, width.N_SAMPLES, rho, scaled=False, seed=0)
    scaled = attention.sample_scores(d_k, width.N_SAMPLES, rho, scaled=True, seed=0)
    assert p["raw_mean"] == round(float(raw.mean()), 4)
    assert p["raw_var"] == round(float(raw.var()), 4)
    assert p["scaled_mean"] == round(float(scaled.mean()), 4)
    assert p["scaled_var"] == round(float(scaled.var()), 4)
    counts, _ = np.histogram(scaled, bins=width.N_BINS, range=width.axis_range(rho, True))
    assert p["scaled_hist"] == counts.tolist()
    counts, _ = np.histogram(raw, bins=width.N_BINS, range=width.axis_range(rho, False))
    assert p["raw_hist"] == counts.tolist()


def test_width_grid_holds_every_number_the_browser_draws(width_widget):
    # No codec for the ES module to mirror: full histograms and the normal curve's counts.
    g = width_widget._grid
    for name in ("raw_hist", "scaled_hist", "scaled_normal"):
        assert all(len(point) == width.N_BINS for row in g[name] for point in row), name
    p = width_widget.readout(64, 0.5)
    lo, hi = width.axis_range(0.5, True)
    assert p["scaled_normal"] == width.normal_bin_counts(p["pred_scaled_mean"], p["pred_scaled_var"],
                                                         lo, hi, width.N_SAMPLES)
    assert sum(p["scaled_normal"]) == pytest.approx(width.N_SAMPLES, rel=1e-3)


def test_width_grid_embedded_in_the_page_stays_small(width_widget):
    """The grid is embedded in the page's widget state: about 167 KB of JSON, under the 300 KB
    a widget's grid may weigh (it holds every number the browser draws, as plain lists)."""
    import json
    assert len(json.dumps(width_widget._grid)) < 200_000


@pytest.mark.parametrize("d_k,rho", [(1, 0.0), (16, 0.2), (1024, 0.0), (1024, 1.0)])
def test_width_predictions_are_rho_sqrt_dk_and_one_plus_rho_squared(width_widget, d_k, rho):
    p = width_widget.readout(d_k, rho)
    assert p["pred_scaled_mean"] == pytest.approx(rho * math.sqrt(d_k), abs=1e-4)
    assert p["pred_scaled_var"] == pytest.approx(1 + rho**2, abs=1e-4)
    assert p["pred_raw_mean"] == pytest.approx(rho * d_k, abs=1e-4)
    assert p["pred_raw_var"] == pytest.approx(d_k * (1 + rho**2), abs=1e-3)


def test_width_raw_variance_grows_like_dk_and_scaled_variance_stays_near_one(width_widget):
    for d_k in (16, 256, 1024):
        p = width_widget.readout(d_k, 0.0)
        assert p["raw_var"] / d_k == pytest.approx(1.0, rel=0.15)
        assert p["scaled_var"] == pytest.approx(1.0, rel=0.15)


def test_width_rows_are_softmax_rows_with_the_aligned_key_winning_at_large_width(width_widget):
    for d_k, rho in itertools.product(width.D_KS, width.RHOS):
        p = width_widget.readout(d_k, rho)
        for row in (p["row_scaled"], p["row_unscaled"]):
            assert len(row) == width.N_KEYS and math.isclose(sum(row), 1.0, abs_tol=1e-3)
    # An aligned key (rho = 0.5) has scaled mean 0.5 sqrt(d_k) = 16 at d_k = 1024: it takes the row.
    assert width_widget.readout(1024, 0.5)["row_scaled"][0] > 0.99


def test_width_rho_slider_covers_minus_one_to_one_in_tenths(width_widget):
    assert WIDTH_RHOS == [round(-1 + 0.1 * i, 1) for i in range(21)] and WIDTH_RHOS[10] == 0.0
    assert width_widget._grid["rhos"] == WIDTH_RHOS and width_widget._grid["d_ks"] == WIDTH_D_KS
    assert width_widget._grid["n"] == width.N_SAMPLES == 20_000
    width_widget.rho = -0.44
    assert width_widget.rho == -0.4
    width_widget.rho = -1.0
    assert width_widget.rho == -1.0
    for bad in (-1.05, 1.2, float("nan"), "0.5"):
        with pytest.raises(traitlets.TraitError):
            width_widget.rho = bad
    width_widget.rho = 0.0


def test_width_every_measurement_agrees_with_its_prediction_within_four_standard_errors(width_widget):
    for d_k, rho in itertools.product(WIDTH_D_KS, WIDTH_RHOS):
        key, p = (d_k, rho), width_widget.readout(d_k, rho)
        mean, var = attention.scaled_score_moments(d_k, rho)
        assert p["pred_scaled_mean"] == pytest.approx(mean, abs=1e-4)
        assert p["pred_scaled_var"] == pytest.approx(var, abs=1e-4)
        assert p["pred_raw_mean"] == pytest.approx(mean * math.sqrt(d_k), abs=1e-3)
        assert p["pred_raw_var"] == pytest.approx(var * d_k, abs=1e-3)
        assert p["pred_kurtosis"] == pytest.approx(attention.score_excess_kurtosis(d_k, rho), abs=1e-4)
        for name in WIDTH_STATS:
            assert p[f"{name}_se"] > 0
            assert abs(p[name] - p[f"pred_{name}"]) < 4 * p[f"{name}_se"], (key, name)


@pytest.mark.parametrize("d_k, rho", [(1, 0.5), (64, -0.3), (1024, 1.0)])
def test_width_grid_holds_the_statistics_of_the_librarys_samples(width_widget, d_k, rho):
    sq, qz = attention.sample_score_parts(d_k, width.N_SAMPLES, seed=0)
    raw = attention.scores_from_parts(sq, qz, rho)
    st = attention.sample_statistics(raw / math.sqrt(d_k))
    p = width_widget.readout(d_k, rho)
    assert p["scaled_var"] == round(st["var"], 4) and p["scaled_var_se"] == round(st["var_se"], 4)
    assert p["raw_var"] == round(st["var"] * d_k, 4) and p["raw_var_se"] == round(st["var_se"] * d_k, 4)
    assert p["raw_mean_se"] == round(st["mean_se"] * math.sqrt(d_k), 4)
    assert p["kurtosis"] == round(st["excess_kurtosis"], 4)
    counts, _ = np.histogram(raw / math.sqrt(d_k), bins=width.N_BINS, range=width.axis_range(rho, True))
    assert p["scaled_hist"] == counts.tolist()
    counts, _ = np.histogram(raw, bins=width.N_BINS, range=width.axis_range(rho, False))
    assert p["raw_hist"] == counts.tolist()


def test_width_normal_curve_holds_the_expected_counts_of_the_predicted_normal(width_widget):
    for d_k, rho in ((1, 0.0), (64, 0.5), (1024, -1.0)):
        p = width_widget.readout(d_k, rho)
        lo, hi = width.axis_range(rho, True)
        mean, sd = p["pred_scaled_mean"], math.sqrt(p["pred_scaled_var"])
        cdf = [0.5 * math.erfc(-(x - mean) / (sd * math.sqrt(2)))
               for x in np.linspace(lo, hi, width.N_BINS + 1)]
        np.testing.assert_allclose(p["scaled_normal"], width.N_SAMPLES * np.diff(cdf), atol=0.5 + 1e-9)
        assert sum(p["scaled_normal"]) == pytest.approx(width.N_SAMPLES, rel=1e-3)


def test_width_at_width_one_the_histogram_rises_above_the_normal_curve_and_at_1024_it_follows_it(width_widget):
    one, wide = width_widget.readout(1, 0.0), width_widget.readout(1024, 0.0)
    centre = width.N_BINS // 2  # the bins either side of zero on the symmetric axis [-4, 4]
    assert sum(one["scaled_hist"][centre - 1 : centre + 1]) > 1.5 * sum(one["scaled_normal"][centre - 1 : centre + 1])
    assert sum(wide["scaled_hist"][centre - 1 : centre + 1]) == pytest.approx(
        sum(wide["scaled_normal"][centre - 1 : centre + 1]), rel=0.1)


def test_width_fallback_figure_has_alt_text_without_typed_numbers(width_widget):
    assert "attn-fallback" in width_widget.fallback_html()
    assert not re.search(r"\d", width_widget.fallback_alt)


# --- SaturationExplorer ----------------------------------------------------------------

SAT_POINTS = [(4, False, 1.0, 32), (64, True, 1.0, 32), (1024, False, 1.0, 32),
              (1024, True, 2.0, 8), (16, False, 0.5, 128), (256, True, 0.125, 128),
              (1024, False, 1024.0, 32), (1, False, 16.0, 8)]


def _recomputed(d_k, scaled, tau, T_k):
    """The grid point recomputed in float64 from the same draw: own softmax, J built entry by entry."""
    q_norm, t = attention.row_score_draws(d_k, 128, saturation.N_QUERIES, seed=saturation.SEED)
    t = t[:, :T_k]
    c = 1 / (tau * math.sqrt(d_k)) if scaled else 1 / tau
    s = c * q_norm[:, None] * t
    e = np.exp(s - s.max(axis=1, keepdims=True))
    A = e / e.sum(axis=1, keepdims=True)
    J = A[:, :, None] * np.eye(T_k) - A[:, :, None] * A[:, None, :]
    jsq = np.sum(J**2, axis=(1, 2))
    Jt = np.einsum("rij,rj->ri", J, t)
    dq = c * np.sqrt(np.sum(Jt**2, axis=1) + (d_k - 1) * jsq)
    return A, jsq, dq


def _close4(got, want):
    """Four significant digits, computed in float32 (and values below float32's range as 0)."""
    return got == pytest.approx(want, rel=2e-3, abs=1e-30)


@pytest.mark.parametrize("d_k,scaled,tau,T_k", SAT_POINTS)
def test_saturation_grid_point_equals_the_float64_recomputation(sat_widget, d_k, scaled, tau, T_k):
    r = sat_widget.readout(d_k, tau, scaled, T_k)
    A, jsq, dq = _recomputed(d_k, scaled, tau, T_k)
    assert _close4(r["mean_max_weight"], A.max(axis=1).mean())
    assert _close4(r["median_grad_q"], np.median(dq))
    assert _close4(r["mean_grad_q"], dq.mean())
    assert _close4(r["p90_grad_q"], np.percentile(dq, 90))
    assert _close4(r["max_weight"], A[0].max())
    assert r["jacobian_sq"] == pytest.approx(jsq[0], rel=2e-3, abs=1e-12)
    assert r["grad_q"] == pytest.approx(dq[0], rel=2e-3, abs=1e-9)
    # the drawn bars: 64 levels on a square-root scale, so sqrt(weight) is within 1/126
    np.testing.assert_allclose(np.sqrt(r["weights"]), np.sqrt(A[0]), atol=1 / 126 + 1e-6)
    assert r["score_sd"] == pytest.approx((1 if scaled else math.sqrt(d_k)) / tau)


def test_saturation_rows_are_the_librarys_attention_rows_and_stats(sat_widget):
    rows = attention.attention_rows(64, 128, saturation.N_QUERIES, True, 1.0, seed=saturation.SEED)
    np.testing.assert_allclose(sat_widget.readout(64, 1.0, True, 128)["weights"], rows[0], atol=0.02)
    st = attention.saturation_stats(64, 128, True, saturation.N_QUERIES, 1.0, seed=saturation.SEED)
    r = sat_widget.readout(64, 1.0, True, 128)
    assert r["mean_max_weight"] == pytest.approx(st.mean_max_weight, rel=2e-3)
    assert r["median_grad_q"] == pytest.approx(st.median_grad_q, rel=2e-3)


def test_saturation_unscaled_saturates_and_its_gradient_turns_spiky_while_scaled_stays_flat(sat_widget):
    unscaled = [sat_widget.readout(d, 1.0, False, 32) for d in (4, 1024)]
    assert unscaled[0]["mean_max_weight"] < 0.45 and unscaled[1]["mean_max_weight"] > 0.9
    assert unscaled[1]["median_grad_q"] < unscaled[0]["median_grad_q"] / 10
    assert unscaled[1]["mean_grad_q"] > unscaled[0]["mean_grad_q"]
    assert unscaled[1]["p90_grad_q"] > 100 * unscaled[1]["median_grad_q"]
    for d in (4, 64, 1024):
        r = sat_widget.readout(d, 1.0, True, 32)
        assert r["mean_max_weight"] == pytest.approx(0.16, abs=0.03)
        assert r["median_grad_q"] == pytest.approx(0.235, abs=0.03)


@pytest.mark.parametrize("d_k", [1, 4, 64, 1024])
def test_dividing_by_sqrt_dk_is_the_temperature_sqrt_dk(sat_widget, d_k):
    for T_k in saturation.T_KS:
        unscaled = sat_widget.readout(d_k, math.sqrt(d_k), False, T_k)
        scaled = sat_widget.readout(d_k, 1.0, True, T_k)
        for key in ("weights", "max_weight", "jacobian_sq", "grad_q", "mean_max_weight",
                    "median_grad_q", "mean_grad_q", "p90_grad_q"):
            assert unscaled[key] == scaled[key]


def test_more_keys_flatten_the_row_at_a_fixed_score_scale(sat_widget):
    for d_k, tau, scaled in ((1024, 16.0, False), (64, 1.0, True), (16, 0.5, True)):
        means = [sat_widget.readout(d_k, tau, scaled, T)["mean_max_weight"] for T in saturation.T_KS]
        assert means[0] > means[1] > means[2]


def test_every_setting_the_controls_reach_is_in_the_grid_and_the_grid_is_small(sat_widget):
    g = sat_widget._grid
    for s in (0, 1):
        for i in range(len(saturation.TEMPERATURES)):
            for d in range(len(_base.D_KS)):
                h = g["factor_index"][s][i][d]
                for t in range(len(saturation.T_KS)):
                    assert g["median_grad_q"][t][d][h] is not None
                    assert len(g["rows"][t][d][h]) == saturation.T_KS[t]
    import json
    assert len(json.dumps(g)) < 200_000


def test_weight_encoding_round_trips_within_its_quantization():
    a = np.array([0.0, 1e-5, 1 / 128, 1 / 32, 0.25, 0.5, 0.99, 1.0])
    back = np.array(saturation.decode_weights(saturation.encode_weights(a)))
    assert np.all(np.abs(np.sqrt(back) - np.sqrt(a)) <= 1 / 126 + 1e-12)
    assert back[0] == 0.0 and back[-1] == 1.0


def test_the_things_to_try_end_states_say_what_the_page_says(sat_widget):
    """The five bullets under the explorer, at the states they leave (the browser test walks them)."""
    start = sat_widget.readout(64, 1.0, True, 32)
    assert start["score_sd"] == 1.0
    # 1. unscaled, d_k 1 -> 1024: bars collapse, the median rises then collapses, the mean grows
    path = [sat_widget.readout(d, 1.0, False, 32) for d in _base.D_KS]
    med = [r["median_grad_q"] for r in path]
    peak = int(np.argmax(med))
    assert 0 < peak < len(med) - 1 and med[-1] < med[peak] / 100 and med[-1] < med[0]
    assert path[-1]["mean_grad_q"] > path[0]["mean_grad_q"]
    assert max(path[-1]["weights"]) > 0.99 and path[-1]["mean_max_weight"] > 0.9
    assert path[-1]["p90_grad_q"] > 100 * path[-1]["median_grad_q"]
    # 2. scaled, d_k back to 1: bars change far less than unscaled, curves flat
    sc = [sat_widget.readout(d, 1.0, True, 32) for d in _base.D_KS]
    spread_sc = max(r["max_weight"] for r in sc) - min(r["max_weight"] for r in sc)
    spread_un = max(r["max_weight"] for r in path) - min(r["max_weight"] for r in path)
    assert spread_sc < spread_un / 3
    assert max(r["mean_max_weight"] for r in sc) - min(r["mean_max_weight"] for r in sc) < 0.04
    assert max(r["median_grad_q"] for r in sc) < 1.35 * min(r["median_grad_q"] for r in sc)
    # 3. d_k 1024, unscaled, tau 32: the scaled head at tau 1 (checked above, exactly)
    # 4. tau 1024: flat bars, gauge at the uniform value, gradient far below tau 32's
    hot, warm = sat_widget.readout(1024, 1024.0, False, 32), sat_widget.readout(1024, 32.0, False, 32)
    assert max(hot["weights"]) < 1.3 / 32 and hot["mean_max_weight"] < 1.1 / 32
    assert hot["jacobian_sq"] == pytest.approx(31 / 32**2, rel=0.02)
    assert hot["median_grad_q"] < warm["median_grad_q"] / 10
    # 5. tau 16 (scores of sd 2), T_k 8 then 128: a short row leans on one key, a long one spreads
    by_keys = {T: sat_widget.readout(1024, 16.0, False, T) for T in saturation.T_KS}
    assert by_keys[8]["score_sd"] == 2.0
    assert by_keys[8]["mean_max_weight"] > 0.5 > 0.3 > by_keys[128]["mean_max_weight"]
    assert max(by_keys[8]["weights"]) > max(by_keys[128]["weights"])


# --- trait validation ------------------------------------------------------------------

@pytest.mark.parametrize("bad", [0, 3, 2048, -4, True, 64.5, "64", None])
def test_d_k_outside_the_powers_of_two_up_to_1024_is_rejected(sat_widget, bad):
    with pytest.raises(traitlets.TraitError):
        sat_widget.d_k = bad
    assert sat_widget.d_k in _base.D_KS


@pytest.mark.parametrize("bad", [0.01, 100.0, -1.0, float("nan"), float("inf"), "hot", None])
def test_temperature_outside_the_grid_range_is_rejected_with_the_range_in_the_message(bad):
    w = TemperatureExplorer()
    with pytest.raises(traitlets.TraitError, match="between" if isinstance(bad, float) else None):
        w.temperature = bad
    assert w.temperature == 1.0


def test_temperature_inside_the_range_snaps_to_the_nearest_grid_value_on_a_log_scale(sat_widget):
    sat_widget.temperature = 1.1
    assert sat_widget.temperature == 1.0
    sat_widget.temperature = 1.3
    assert sat_widget.temperature == pytest.approx(math.sqrt(2))
    sat_widget.temperature = 1.0


@pytest.mark.parametrize("bad,ok", [(-1.1, None), (1.5, None), (0.33, 0.3), (0.96, 1.0), (-0.44, -0.4),
                                    (-1.0, -1.0)])
def test_rho_snaps_to_tenths_inside_minus_one_one_and_is_rejected_outside(width_widget, bad, ok):
    if ok is None:
        with pytest.raises(traitlets.TraitError, match="between -1 and 1"):
            width_widget.rho = bad
    else:
        width_widget.rho = bad
        assert width_widget.rho == ok
    width_widget.rho = 0.0


@pytest.mark.parametrize("bad", [0, 16, 64, 8.5, True, "32", None])
def test_t_k_outside_8_32_128_is_rejected(sat_widget, bad):
    with pytest.raises(traitlets.TraitError, match="T_k"):
        sat_widget.T_k = bad
    assert sat_widget.T_k in saturation.T_KS


def test_temperatures_reach_far_above_sqrt_1024(sat_widget):
    assert saturation.TEMPERATURES[0] == 0.125 and saturation.TEMPERATURES[-1] == 1024.0
    sat_widget.temperature = 1000.0
    assert sat_widget.temperature == 1024.0
    sat_widget.temperature = 1.0


def test_scaled_switch_accepts_only_booleans(sat_widget):
    with pytest.raises(traitlets.TraitError):
        sat_widget.scaled = "yes"
    sat_widget.scaled = False
    assert sat_widget.readout()["scaled"] is False
    sat_widget.scaled = True


# --- what the browser receives ---------------------------------------------------------

@pytest.mark.parametrize("cls", [TemperatureExplorer, WidthExplorer, SaturationExplorer])
def test_module_reads_only_grid_fields_python_provides(cls):
    w = cls()
    grid = w._grid
    used = set(re.findall(r"\bg\.([a-z_]+)", w._esm))
    assert used, "the module should read the grid"
    assert used <= set(grid), f"the module reads fields Python does not send: {used - set(grid)}"
    assert "export default" in w._esm and "function render" in w._esm


@pytest.mark.parametrize("cls", [TemperatureExplorer, WidthExplorer, SaturationExplorer])
def test_fallback_is_a_hidden_svg_figure_with_alt_text_tied_to_the_widget(cls):
    w = cls()
    out = w.fallback_html()
    assert f'data-model-id="{w.model_id}"' in out and " hidden " in out
    alt = re.search(r'alt="([^"]+)"', out).group(1)
    assert len(alt) > 40
    uri = re.search(r'src="data:image/svg\+xml;base64,([^"]+)"', out).group(1)
    assert base64.b64decode(uri).lstrip().startswith(b"<?xml")


def test_display_emits_the_live_widget_then_its_fallback():
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    w = TemperatureExplorer()
    with capture_output() as captured:
        w._ipython_display_()
    kinds = [set(o.data) for o in captured.outputs]
    assert "application/vnd.jupyter.widget-view+json" in kinds[0]
    assert "text/html" in kinds[1] and "attn-fallback" in captured.outputs[1].data["text/html"]
