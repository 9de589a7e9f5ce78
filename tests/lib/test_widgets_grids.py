"""The widgets' Python side: every precomputed grid point equals the library computed at that setting.

The browser only selects from these grids, so checking them here checks every number a
reader can reach with the sliders. Expected values come from independent NumPy code or from
the library function the page itself uses (saturation_stats, attention_rows, sample_scores).
"""

from __future__ import annotations

import base64
import math
import re

import numpy as np
import pytest
import traitlets

import attention
from attention.widgets import SaturationExplorer, TemperatureExplorer, WidthExplorer
from attention.widgets import _base, saturation, temperature, width


@pytest.fixture(scope="module")
def temp_widget():
    return TemperatureExplorer()


@pytest.fixture(scope="module")
def width_widget():
    return WidthExplorer()


@pytest.fixture(scope="module")
def sat_widget():
    return SaturationExplorer()


# --- TemperatureExplorer ---------------------------------------------------------------

def test_temperature_weights_are_the_softmax_of_scores_over_tau_sqrt_dk_at_every_grid_point(temp_widget):
    g = temp_widget._grid
    s = np.array([0.1, 3.0, 0.1])
    for tau, w in zip(g["temperatures"], g["weights"]):
        e = np.exp(s / (tau * 2.0) - np.max(s / (tau * 2.0)))
        np.testing.assert_allclose(w, e / e.sum(), atol=5e-7)


def test_temperature_one_gives_the_texts_weights_about_016_0681_016(temp_widget):
    r = temp_widget.readout(1.0)
    assert r["temperature"] == 1.0
    np.testing.assert_allclose(r["weights"], [0.160, 0.681, 0.160], atol=5e-4)


def test_temperature_output_is_the_convex_combination_of_the_pictured_values(temp_widget):
    g = temp_widget._grid
    V = np.array(g["values"])
    for w, o in zip(g["weights"], g["outputs"]):
        assert min(w) >= 0 and math.isclose(sum(w), 1.0, abs_tol=3e-6)
        np.testing.assert_allclose(o, np.array(w) @ V, atol=1e-3)


def test_temperature_output_moves_to_vertex_v2_when_cold_and_to_the_centroid_when_hot(temp_widget):
    g = temp_widget._grid
    V = np.array(g["values"])
    assert g["temperatures"][0] == pytest.approx(0.05, rel=0.01)
    assert g["temperatures"][-1] == pytest.approx(20, rel=0.01)
    np.testing.assert_allclose(g["outputs"][0], V[1], atol=1e-6)  # tau ~ 0.05: one-hot on key 2
    np.testing.assert_allclose(g["outputs"][-1], V.mean(axis=0), atol=0.5)  # tau ~ 20: nearly uniform
    distance_to_v2 = [np.linalg.norm(np.array(o) - V[1]) for o in g["outputs"]]
    assert distance_to_v2 == sorted(distance_to_v2)  # monotone as tau grows


def test_texts_collinear_values_would_pin_the_output_at_20_20_which_is_why_the_picture_differs():
    for tau in (0.05, 1.0, 20.0):
        O, _ = attention.scaled_dot_product_attention(temperature.QUERY[None], temperature.KEYS,
                                                      temperature.TEXT_VALUES, temperature=tau)
        np.testing.assert_allclose(O[0], [20.0, 20.0], atol=1e-9)
    V = temperature.PICTURE_VALUES
    (ax, ay), (bx, by) = V[1] - V[0], V[2] - V[0]
    assert abs(ax * by - ay * bx) > 100  # twice the area: a real triangle


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
    for key in width_widget._grid["points"]:
        p = width_widget._grid["points"][key]
        for row in (p["row_scaled"], p["row_unscaled"]):
            assert len(row) == width.N_KEYS and math.isclose(sum(row), 1.0, abs_tol=1e-3)
    # An aligned key (rho = 0.5) has scaled mean 0.5 sqrt(d_k) = 16 at d_k = 1024: it takes the row.
    assert width_widget.readout(1024, 0.5)["row_scaled"][0] > 0.99


# --- SaturationExplorer ----------------------------------------------------------------

SAT_POINTS = [(4, False, 1.0), (64, True, 1.0), (1024, False, 1.0), (1024, True, 2.0),
              (16, False, 0.5), (256, True, 0.125)]


@pytest.mark.parametrize("d_k,scaled,tau", SAT_POINTS)
def test_saturation_curves_equal_saturation_stats_at_that_setting(sat_widget, d_k, scaled, tau):
    r = sat_widget.readout(d_k, tau, scaled)
    stats = attention.saturation_stats(d_k, 32, scaled, n_queries=saturation.N_QUERIES,
                                       temperature=tau, seed=0)
    assert r["mean_max_weight"] == pytest.approx(stats.mean_max_weight, abs=5.1e-5)
    assert r["mean_trace"] == pytest.approx(stats.mean_trace, abs=5.1e-5)


@pytest.mark.parametrize("d_k,scaled,tau", SAT_POINTS)
def test_saturation_row_is_the_first_row_of_attention_rows(sat_widget, d_k, scaled, tau):
    r = sat_widget.readout(d_k, tau, scaled)
    a = attention.attention_rows(d_k, 32, saturation.N_QUERIES, scaled, tau, seed=0)[0]
    np.testing.assert_allclose(r["weights"], a, atol=5.1e-5)
    assert r["max_weight"] == pytest.approx(a.max(), abs=5.1e-5)
    assert r["trace"] == pytest.approx(float(attention.jacobian_trace(a)), abs=5.1e-5)


def test_saturation_unscaled_saturates_and_scaled_stays_flat_at_temperature_one(sat_widget):
    unscaled = [sat_widget.readout(d, 1.0, False) for d in (4, 1024)]
    assert unscaled[0]["mean_max_weight"] < 0.45 and unscaled[1]["mean_max_weight"] > 0.9
    assert unscaled[0]["mean_trace"] > 10 * unscaled[1]["mean_trace"]
    for d in (4, 64, 1024):
        r = sat_widget.readout(d, 1.0, True)
        assert r["mean_max_weight"] == pytest.approx(0.16, abs=0.03)
        assert r["mean_trace"] == pytest.approx(0.93, abs=0.02)


@pytest.mark.parametrize("d_k", [1, 4, 64, 1024])
def test_dividing_by_sqrt_dk_is_the_temperature_sqrt_dk(sat_widget, d_k):
    unscaled = sat_widget.readout(d_k, math.sqrt(d_k), False)
    scaled = sat_widget.readout(d_k, 1.0, True)
    for key in ("weights", "max_weight", "trace", "mean_max_weight", "mean_trace"):
        assert unscaled[key] == pytest.approx(scaled[key], abs=1.1e-4)


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


@pytest.mark.parametrize("bad,ok", [(-0.1, None), (1.5, None), (0.33, 0.3), (0.96, 1.0)])
def test_rho_snaps_to_tenths_inside_zero_one_and_is_rejected_outside(width_widget, bad, ok):
    if ok is None:
        with pytest.raises(traitlets.TraitError, match="between 0 and 1"):
            width_widget.rho = bad
    else:
        width_widget.rho = bad
        assert width_widget.rho == ok
    width_widget.rho = 0.0


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
