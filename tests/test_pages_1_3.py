"""Pages 1-3 (soft retrieval, the variance argument, saturation): every number the prose
quotes is recomputed here, independently of the cell that glued it, and compared.

The glued values are read from the freshly executed notebooks of the built book
(``tests/glue.py``); run after ``make book``, or point ``BOOK_HTML`` at another build.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import attention
from attention.checkers import (
    check_attention_with_temperature,
    check_scaled_score_moments,
    check_softmax_jacobian,
)
from tests.glue import executed_notebook, glued, glued_number
from tests.harness import HTML, ROOT


def softmax_rows(S):
    """Softmax straight from the formula, independent of the library."""
    S = np.asarray(S, dtype=np.float64)
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def g(page, name):
    return glued_number(page, name)


# --- page 1: soft retrieval ------------------------------------------------------------

def test_worked_example_weights_match_the_hand_calculation():
    gap = 0.5 * (3.0 - 0.1)  # c (q_2 - q_1) with c = 1/sqrt(4)
    a2 = 1.0 / (1.0 + 2.0 * math.exp(-gap))
    a1 = math.exp(-gap) / (1.0 + 2.0 * math.exp(-gap))
    assert g("soft-retrieval", "ex_a2") == pytest.approx(a2, rel=1e-12)
    assert g("soft-retrieval", "ex_a1") == pytest.approx(a1, rel=1e-12)
    assert g("soft-retrieval", "ex_a3") == pytest.approx(a1, rel=1e-12)
    assert g("soft-retrieval", "ex_e145") == pytest.approx(math.exp(-1.45), rel=1e-12)
    # the brief's rounded figures
    assert round(a2, 3) == 0.681 and round(a1, 2) == 0.16


def test_worked_example_output_is_20_20_by_symmetry():
    assert g("soft-retrieval", "ex_o1") == pytest.approx(20.0, abs=1e-12)
    assert g("soft-retrieval", "ex_o2") == pytest.approx(20.0, abs=1e-12)


def test_sharpened_query_gives_hard_retrieval_in_the_limit():
    gap = 0.5 * (30.0 - 0.1)
    assert g("soft-retrieval", "ex_sharp_a2") == pytest.approx(1.0 / (1.0 + 2.0 * math.exp(-gap)), rel=1e-12)
    assert g("soft-retrieval", "ex_sharp_a1") == pytest.approx(math.exp(-gap) / (1.0 + 2.0 * math.exp(-gap)), rel=1e-9)
    assert g("soft-retrieval", "ex_sharp_a2") > 0.9999


@pytest.mark.parametrize("name, tau", [("tau_cold_a2", 0.05), ("tau_hot_a2", 50.0)])
def test_temperature_limits_on_the_worked_example(name, tau):
    s = np.array([0.1, 3.0, 0.1]) / (tau * 2.0)
    assert g("soft-retrieval", name) == pytest.approx(softmax_rows(s)[1], rel=1e-12)


def test_cold_temperature_is_nearly_one_hot_and_hot_is_nearly_uniform():
    assert g("soft-retrieval", "tau_cold_a2") > 0.999
    assert abs(g("soft-retrieval", "tau_hot_a2") - 1 / 3) < 0.01


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


# --- page 3: the training run ----------------------------------------------------------

@pytest.fixture(scope="module")
def training_runs():
    from attention.training import train_retrieval_head

    sgd = {(s, lr): train_retrieval_head(512, scaled=s, optimizer="sgd", lr=lr, steps=300)
           for s in (True, False) for lr in (0.3, 1.0, 3.0)}
    adam = {s: train_retrieval_head(512, scaled=s, optimizer="adam", lr=0.01, steps=300) for s in (True, False)}
    return sgd, adam


def _final(losses):
    return losses[-20:].mean()


def _steps_to(losses, level=0.1):
    below = np.flatnonzero(losses < level)
    return int(below[0]) + 1 if below.size else None


def test_training_glued_losses_equal_a_fresh_rerun(training_runs):
    sgd, adam = training_runs
    page = "saturation"
    assert g(page, "train_lr") == 3.0
    assert g(page, "train_first_scaled") == pytest.approx(sgd[(True, 3.0)][0], rel=1e-9)
    assert g(page, "train_first_unscaled") == pytest.approx(sgd[(False, 3.0)][0], rel=1e-9)
    assert g(page, "train_sgd_scaled") == pytest.approx(_final(sgd[(True, 3.0)]), rel=1e-9)
    assert g(page, "train_sgd_unscaled") == pytest.approx(_final(sgd[(False, 3.0)]), rel=1e-9)
    assert g(page, "train_sgd_scaled_steps") == _steps_to(sgd[(True, 3.0)])
    best = min((0.3, 1.0, 3.0), key=lambda lr: _final(sgd[(False, lr)]))
    assert g(page, "train_best_lr_unscaled") == best
    assert g(page, "train_best_unscaled") == pytest.approx(_final(sgd[(False, best)]), rel=1e-9)
    assert g(page, "train_best_unscaled_steps") == _steps_to(sgd[(False, best)])
    assert g(page, "train_scaled_steps_same_lr") == _steps_to(sgd[(True, best)])
    assert g(page, "train_worst_scaled") == pytest.approx(max(_final(sgd[(True, lr)]) for lr in (0.3, 1.0, 3.0)), rel=1e-9)
    assert g(page, "train_adam_lr") == 0.01
    assert g(page, "train_adam_scaled") == pytest.approx(_final(adam[True]), rel=1e-9)
    assert g(page, "train_adam_unscaled") == pytest.approx(_final(adam[False]), rel=1e-9)
    assert g(page, "train_adam_unscaled_steps") == _steps_to(adam[False])


def test_scaled_head_learns_with_sgd_and_unscaled_head_stalls_at_the_same_rate(training_runs):
    sgd, _ = training_runs
    assert _final(sgd[(True, 3.0)]) < 0.01
    assert _final(sgd[(False, 3.0)]) > 1.0
    assert all(_final(sgd[(True, lr)]) < 0.05 for lr in (0.3, 1.0, 3.0))


def test_adam_largely_rescues_the_unscaled_head(training_runs):
    _, adam = training_runs
    assert _final(adam[False]) < 0.1
    assert _final(adam[True]) < 0.01


def test_first_training_loss_matches_a_numpy_forward_pass():
    """The task as the page describes it, recomputed in NumPy from the same random draws."""
    torch = pytest.importorskip("torch")
    from attention.training import RetrievalTask, train_retrieval_head

    task = RetrievalTask()
    for scaled in (True, False):
        gen = torch.Generator().manual_seed(0)
        W_Q = (torch.randn(task.d_model, 512, generator=gen) / math.sqrt(task.d_model)).double().numpy()
        W_K = (torch.randn(task.d_model, 512, generator=gen) / math.sqrt(task.d_model)).double().numpy()
        X = torch.randn(task.batch, task.n_keys, task.d_model, generator=gen).double().numpy()
        V = torch.randn(task.batch, task.n_keys, task.d_v, generator=gen).double().numpy()
        target = torch.randint(task.n_keys, (task.batch,), generator=gen).numpy()
        rows = np.arange(task.batch)
        c = 1 / math.sqrt(512) if scaled else 1.0
        S = c * np.einsum("bd,btd->bt", X[rows, target] @ W_Q, X @ W_K)
        O = np.einsum("bt,btv->bv", softmax_rows(S), V)
        want = np.mean((O - V[rows, target]) ** 2)
        got = train_retrieval_head(512, scaled=scaled, steps=1)[0]
        assert got == pytest.approx(want, rel=1e-4)


# --- the exercises ---------------------------------------------------------------------

def _solution_namespace(page: str, defines: str) -> dict:
    """Execute the page's code cell that defines ``defines`` (the reference solution)."""
    text = (ROOT / "chapters" / f"{page}.md").read_text()
    cells = re.findall(r"```\{code-cell\} ipython3\n(.*?)```", text, flags=re.S)
    source = next(c for c in cells if f"def {defines}(" in c and "check_" in c)
    source = "\n".join(line for line in source.splitlines() if not line.startswith("check_"))
    ns = {"np": np, "math": math}
    exec(source, ns)
    return ns


def test_exercise_5_reference_solution_passes_and_a_wrong_one_fails():
    ns = _solution_namespace("soft-retrieval", "attention_with_temperature")
    assert check_attention_with_temperature(ns["attention_with_temperature"], verbose=False)

    def times_tau(Q, K, V, tau):  # multiplies by tau instead of dividing
        A = softmax_rows(tau * Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]))
        return A @ V, A

    assert not check_attention_with_temperature(times_tau, verbose=False)


def test_exercise_8_reference_solution_passes_and_a_wrong_one_fails():
    ns = _solution_namespace("variance", "scaled_score_moments")
    assert check_scaled_score_moments(ns["scaled_score_moments"], verbose=False)
    # forgets the correlated term's extra variance
    assert not check_scaled_score_moments(lambda d_k, rho: (rho * math.sqrt(d_k), 1.0), verbose=False)


def test_exercise_9_reference_solution_passes_and_a_wrong_one_fails():
    ns = _solution_namespace("saturation", "vjp")
    assert check_softmax_jacobian(ns["jacobian"], ns["vjp"], verbose=False)
    assert not check_softmax_jacobian(lambda a: np.diag(a), lambda a, g_: a * g_, verbose=False)


def test_executed_pages_show_every_checker_passing():
    for page, expected in (("soft-retrieval", "5 of 5 checks passed."), ("variance", "4 of 4 checks passed."),
                           ("saturation", "4 of 4 checks passed.")):
        nb_text = str(executed_notebook(page))
        assert expected in nb_text and "✗" not in nb_text


@pytest.mark.parametrize("page, labels", [
    ("soft-retrieval", ["ex-qkv-roles", "ex-convex-hull", "ex-temperature", "soft-retrieval"]),
    ("variance", ["ex-score-moments", "variance"]),
    ("saturation", ["ex-raw-vs-scaled", "ex-one-hot-jacobian", "saturation"]),
])
def test_exercise_labels_other_pages_link_to_exist(page, labels):
    html = (HTML / "chapters" / f"{page}.html").read_text()
    for label in labels:
        assert f'id="{label}"' in html, label


@pytest.mark.parametrize("page", ["soft-retrieval", "variance", "saturation"])
def test_pages_quote_no_unformatted_glue(page):
    html = (HTML / "chapters" / f"{page}.html").read_text()
    assert "np.float64" not in html and "glue:text" not in html
    assert len(glued(page)) > 5
