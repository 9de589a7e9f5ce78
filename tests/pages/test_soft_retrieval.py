"""Soft retrieval: every number the prose quotes, recomputed independently, and the page's
rules (hidden glue, short lines, no typed numbers in figures, exercise before its answer)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from tests.glue import executed_notebook
from tests.pages._common import CHAPTERS, g, softmax_rows

PAGE = "soft-retrieval"
SOURCE = (CHAPTERS / f"{PAGE}.md").read_text()


def a_2_of_the_example(tau: float) -> float:
    """Weight of key 2 for scores (0.1, 3.0, 0.1) / (tau sqrt(4)), from the formula."""
    gap = (3.0 - 0.1) / (2.0 * tau)
    return 1.0 / (1.0 + 2.0 * math.exp(-gap))


# --- numbers quoted in the prose ----------------------------------------------------------

def test_worked_example_weights_match_the_hand_calculation():
    gap = 0.5 * (3.0 - 0.1)  # c (q_2 - q_1) with c = 1/sqrt(4)
    a2 = 1.0 / (1.0 + 2.0 * math.exp(-gap))
    a1 = math.exp(-gap) / (1.0 + 2.0 * math.exp(-gap))
    assert g(PAGE, "ex_a2") == pytest.approx(a2, rel=1e-12)
    assert g(PAGE, "ex_a1") == pytest.approx(a1, rel=1e-12)
    assert g(PAGE, "ex_a3") == pytest.approx(a1, rel=1e-12)
    assert g(PAGE, "ex_e145") == pytest.approx(math.exp(-1.45), rel=1e-12)
    # the brief's rounded figures
    assert round(a2, 3) == 0.681 and round(a1, 2) == 0.16


def test_worked_example_output_is_20_20_by_symmetry():
    assert g(PAGE, "ex_o1") == pytest.approx(20.0, abs=1e-12)
    assert g(PAGE, "ex_o2") == pytest.approx(20.0, abs=1e-12)


def test_sharpened_query_gives_hard_retrieval_in_the_limit():
    gap = 0.5 * (30.0 - 0.1)
    assert g(PAGE, "ex_sharp_a2") == pytest.approx(1.0 / (1.0 + 2.0 * math.exp(-gap)), rel=1e-12)
    assert g(PAGE, "ex_sharp_a1") == pytest.approx(math.exp(-gap) / (1.0 + 2.0 * math.exp(-gap)), rel=1e-9)
    assert g(PAGE, "ex_sharp_a2") > 0.9999


@pytest.mark.parametrize("name, tau", [("tau_cold_a2", 0.05), ("tau_hot_a2", 50.0)])
def test_temperature_limits_on_the_worked_example(name, tau):
    s = np.array([0.1, 3.0, 0.1]) / (tau * 2.0)
    assert g(PAGE, name) == pytest.approx(softmax_rows(s)[1], rel=1e-12)


def test_cold_temperature_is_nearly_one_hot_and_hot_is_nearly_uniform():
    assert g(PAGE, "tau_cold_a2") > 0.999
    assert abs(g(PAGE, "tau_hot_a2") - 1 / 3) < 0.01


def slope(tau: float) -> float:
    """a_2 (1 - a_2) / (tau sqrt(d_k)), with 1 - a_2 = 2 e^-gap / (1 + 2 e^-gap) exactly."""
    gap = (3.0 - 0.1) / (2.0 * tau)
    one_minus_a2 = 2.0 * math.exp(-gap) / (1.0 + 2.0 * math.exp(-gap))
    return a_2_of_the_example(tau) * one_minus_a2 / (tau * 2.0)


def test_the_weight_of_key_2_barely_moves_with_the_query_when_cold():
    assert g(PAGE, "slope_tau1") == pytest.approx(slope(1.0), rel=1e-9)
    assert g(PAGE, "slope_tau005") == pytest.approx(slope(0.05), rel=1e-9)
    assert g(PAGE, "slope_tau50") == pytest.approx(slope(50.0), rel=1e-9)
    assert g(PAGE, "slope_ratio") == pytest.approx(slope(1.0) / slope(0.05), rel=1e-9)
    # "not zero" and "a factor of about 1e10 less"; "the hot end is no better"
    assert 0 < g(PAGE, "slope_tau005") < 1e-10
    assert g(PAGE, "slope_tau50") < slope(1.0) / 10


def test_the_slope_formula_agrees_with_a_central_difference():
    h = 1e-6
    for tau in (0.3, 1.0, 3.0):
        def a2(q2):
            return softmax_rows(np.array([0.1, q2, 0.1]) / (2.0 * tau))[1]
        assert (a2(3.0 + h) - a2(3.0 - h)) / (2 * h) == pytest.approx(slope(tau), rel=1e-6)


def test_explorer_inside_bullet_numbers_are_the_softmax_of_the_query_over_two():
    a = softmax_rows(np.array([1.6, 0.6, -0.2]) / 2.0)  # tau = 1, sqrt(d_k) = 2
    for j in range(3):
        assert g(PAGE, f"try_a{j + 1}") == pytest.approx(a[j], rel=1e-12)
    assert g(PAGE, "try_o1") == pytest.approx(10 * a[1], rel=1e-12)
    assert g(PAGE, "try_o2") == pytest.approx(10 * a[2], rel=1e-12)
    # "about (0.50, 0.30, 0.20)" and "about (3, 2), the first answer of the exercise"
    assert [round(x, 2) for x in a] == [0.50, 0.30, 0.20]
    assert abs(10 * a[1] - 3) < 0.05 and abs(10 * a[2] - 2) < 0.05


# Largest finite numbers, written from their bit layout (not read from NumPy).
FLOAT64_MAX = (2 - 2.0**-52) * 2.0**1023
FLOAT32_MAX = (2 - 2.0**-23) * 2.0**127


def test_the_overflow_thresholds_the_exercise_quotes():
    assert g(PAGE, "ln_max64") == pytest.approx(math.log(FLOAT64_MAX), rel=1e-12)
    assert g(PAGE, "ln_max32") == pytest.approx(math.log(FLOAT32_MAX), rel=1e-6)
    assert round(g(PAGE, "ln_max64"), 2) == 709.78 and round(g(PAGE, "ln_max32"), 2) == 88.72


@pytest.mark.parametrize("name, dtype, biggest", [("tau_over64", torch.float64, FLOAT64_MAX),
                                                  ("tau_over32", torch.float32, FLOAT32_MAX)])
def test_without_the_shift_the_worked_example_overflows_exactly_below_the_glued_tau(name, dtype, biggest):
    tau = g(PAGE, name)
    assert tau == pytest.approx(1.5 / math.log(biggest), rel=1e-6)  # 3.0 / (2 tau) = ln max
    q = torch.tensor([0.1, 3.0, 0.1], dtype=dtype)
    for factor, overflows in ((1.01, False), (0.99, True)):
        e = torch.exp(q / (2.0 * tau * factor))  # unshifted exponentials
        assert bool(torch.isinf(e).any()) is overflows
        shifted = torch.softmax(q / (2.0 * tau * factor), dim=-1)  # torch shifts by the max
        assert torch.isfinite(shifted).all()


def test_one_maximum_for_the_whole_array_gives_nan_where_each_rows_own_does_not():
    # The solution's third cell: two queries of one direction, one a hundred times shorter.
    q = torch.tensor([0.1, 3.0, 0.1], dtype=torch.float64)
    S = torch.stack([q, q / 100]) / (1e-3 * 2.0)  # (2, 3), tau = 1e-3, sqrt(d_k) = 2
    E = torch.exp(S - S.max())
    A_global = E / E.sum(-1, keepdim=True)
    assert torch.isnan(A_global[1]).all() and not torch.isnan(A_global[0]).any()
    assert torch.isfinite(torch.softmax(S, dim=-1)).all()
    assert "one maximum:    [nan nan nan]" in page_output_text()


def page_output_text() -> str:
    """Everything the page's cells print (a cell's stream may arrive in several pieces)."""
    return "\n".join("".join("".join(output.get("text", "")) for output in cell.get("outputs", []))
                     for cell in executed_notebook(PAGE)["cells"])


def test_softmax_weights_are_positive_for_finite_scores_and_underflow_only_far_apart():
    # The convex-hull exercise's third part: strictly inside, except where exp underflows.
    for gap in (1.0, 30.0, 700.0):
        a = torch.softmax(torch.tensor([0.0, gap, 0.0], dtype=torch.float64), dim=-1)
        assert (a > 0).all()
    a = torch.softmax(torch.tensor([0.0, 800.0, 0.0], dtype=torch.float64), dim=-1)
    assert a.tolist() == [0.0, 1.0, 0.0]
    assert "weights [0. 1. 0.] output [10.  0.]" in page_output_text()


def own_score_tops_row(T: int, d_model: int, draws: int = 10, seed: int = 7) -> float:
    gen = torch.Generator().manual_seed(seed)
    hits = []
    for _ in range(draws):
        X = torch.randn(T, d_model, generator=gen, dtype=torch.float64)
        hits.append(((X @ X.T).argmax(dim=1) == torch.arange(T)).double().mean().item())
    return float(np.mean(hits))


def test_wide_random_tokens_score_themselves_highest_in_every_row_narrow_ones_less_so_when_many():
    # Other draws (torch's generator) than the page's: "in every row at width 64, while narrow
    # tokens among many others lose the top spot more often".
    table = {(d, T): own_score_tops_row(T, d) for d in (8, 16, 64) for T in (16, 128, 512)}
    for T in (16, 128, 512):
        assert table[64, T] == 1.0
        assert table[8, T] <= table[16, T] <= table[64, T]
    for d in (8, 16):
        assert table[d, 16] > table[d, 128] > table[d, 512]
    assert table[8, 512] < 0.5
    # ... with equal lengths always (Cauchy-Schwarz), and a token that loses its row always
    # loses it to a longer one.
    X = np.random.default_rng(3).standard_normal((256, 16))
    X_unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    assert np.array_equal((X_unit @ X_unit.T).argmax(axis=1), np.arange(256))
    winner = (X @ X.T).argmax(axis=1)
    lost = winner != np.arange(256)
    norms = np.linalg.norm(X, axis=1)
    assert lost.any() and (norms[winner[lost]] > norms[lost]).all()


def test_the_page_table_is_the_one_its_cell_prints():
    text = page_output_text()
    assert "rows whose own score is the largest" in text
    row_64 = next(line for line in text.splitlines() if line.startswith("d_model = 64"))
    assert row_64.split()[3:6] == ["100.0%"] * 3
    # the printed self weights are the glued ones
    assert row_64.split()[7] == f"{g(PAGE, 'qkv_self_w_64_16'):.3f}"
    assert row_64.split()[9] == f"{g(PAGE, 'qkv_self_w_64_512'):.3f}"


def test_with_the_worked_examples_query_keys_1_and_3_always_tie():
    for tau in np.geomspace(0.05, 20, 9):
        a = softmax_rows(np.array([0.1, 3.0, 0.1]) / (2 * tau))
        assert a[0] == a[2]


# --- the page's rules ------------------------------------------------------------------------


def test_notation_lives_on_the_index_page_only():
    assert "| Symbol |" not in SOURCE
    assert "{ref}`notation table <notation>`" in SOURCE
    index = (CHAPTERS / "index.md").read_text()
    assert "(notation)=\n## Notation" in index
    for row in ("$q$ | $1 \\times d_k$", "$k_j$, $v_j$", "$d_{\\text{model}}$", "$J$ |",
                "$T$ when $T_q = T_k$", "$o = a V$", "| $B$, $H$ |", "$(B, H, T_q, d_k)$"):
        assert row in index, row
    assert "(B, H, T, d)" not in index and "(B, H, T, d)" not in SOURCE
    assert "$L$ for $T_q$, $S$ for $T_k$, $E$ for $d_k$" in index
    # the additive score's weights are told apart from the projections
    assert "| $W_q$, $W_k$, $w$ | $d_q \\times d_a$, $d_k \\times d_a$, $d_a$ |" in index
    # not "one line of mathematics": T5, muP, QK-norm compute it otherwise
    assert "one line of mathematics" not in index
    assert "built around one operation, usually written as" in index
    # rv2: not every transformer (linear attention drops the softmax)
    assert "The standard transformer, from the 2017" in index
    assert "Every transformer" not in index
    # the additive weights appear on several pages: no "only"
    assert "({ref}`why-dot-product` only)" not in index
    assert "additive attention's weights, not the projections" in index
    assert "(the total divisor $\\tau\\sqrt{d_k}$ is also called the temperature)" in index
    # the zip's notebooks: pages with a notebook header (references.md has
    # one and no code, and is in it); execution-stats has none
    assert "a plain Markdown page, not a notebook" in index
    assert "which has no code" not in index
    assert "kernelspec" not in (CHAPTERS / "execution-stats.md").read_text()
    assert "kernelspec" in (CHAPTERS / "references.md").read_text()


def test_the_temperature_exercise_comes_before_the_explorer_and_the_tie_demonstration():
    exercise = SOURCE.index(":label: ex-temperature")
    solution = SOURCE.index("```{solution-start} ex-temperature\n:class: dropdown")
    assert exercise < solution < SOURCE.index("TemperatureExplorer()")
    # ... and before the page derives the two limits and the cold slope it asks about.
    assert exercise < SOURCE.index("The temperature's two limits") < SOURCE.index("def da2_dq2")
    assert SOURCE.index("```{solution-end}", solution) < SOURCE.index("The temperature's two")
    assert exercise < SOURCE.index("K_tie")  # the tie is shown only inside the solution
    assert SOURCE.index("K_tie") < SOURCE.index("```{solution-end}", solution)
    # Above the exercise the page derives only the single-best-key limit.
    assert not re.search(r"\btie", SOURCE[:exercise].split("## Temperature")[1])
    # ... and does not say why the shift must be each row's own (question 3; st10b: the
    # shift's note said it keeps the largest exponential from underflowing to 0)
    note = SOURCE.index("(Subtracting the largest score before exponentiating")
    assert note < exercise
    assert "it keeps the exponentials from overflowing. The page on" in SOURCE
    assert "underflow" not in SOURCE[note:SOURCE.index("{ref}`numerical stability", note)]


def test_the_cold_regime_is_not_said_to_stop_learning():
    assert "learning stops" not in SOURCE
    assert "In exact arithmetic the\nderivative is not zero" in SOURCE
    assert "does not *stop* learning" in SOURCE


def test_in_float32_only_the_path_through_its_own_score_dies():
    # "Only the path through key 2's own score dies": autograd, float32, tau = 0.05.
    q = torch.tensor([0.1, 3.0, 0.1, 0.0], dtype=torch.float32, requires_grad=True)
    a = torch.softmax(q @ torch.eye(4)[:3].T / (0.05 * 2.0), dim=-1)
    a[1].backward()
    assert a[1].item() == 1.0 and q.grad[1].item() == 0.0 and q.grad[3].item() == 0.0
    # the paths through s_1 and s_3: -a_2 a_1 / (tau sqrt(d_k)), not zero
    gap = (3.0 - 0.1) / (2.0 * 0.05)
    a1 = math.exp(-gap) / (1.0 + 2.0 * math.exp(-gap))
    for j in (0, 2):
        assert q.grad[j].item() == pytest.approx(-a1 / 0.1, rel=1e-5)
        assert q.grad[j].item() == pytest.approx(g(PAGE, "f32_grad_q1"), rel=1e-6)
    # a_2 (a_1 + a_3) keeps its digits in float32; a_2 (1 - a_2) is 0
    a32 = a.detach().numpy()
    assert a32[1] * (np.float32(1) - a32[1]) == 0.0
    assert g(PAGE, "f32_a2_a1a3") == pytest.approx(2 * a1, rel=1e-5)
    assert g(PAGE, "f32_a2_a1a3") > 0
    text = page_output_text()
    assert "a_2 == 1? True" in text and "a_2 (1 - a_2) = 0.0" in text
    # float64 keeps the whole derivative, equal to the formula
    q64 = torch.tensor([0.1, 3.0, 0.1, 0.0], dtype=torch.float64, requires_grad=True)
    a64 = torch.softmax(q64 @ torch.eye(4, dtype=torch.float64)[:3].T / 0.1, dim=-1)
    a64[1].backward()
    assert q64.grad[1].item() == pytest.approx(slope(0.05), rel=1e-3)


def test_no_sentence_says_a_weight_rounded_to_one_passes_nothing():
    assert "passes none" not in SOURCE
    assert "Only the path through key 2's own score dies" in SOURCE


def test_near_a_tie_the_slope_grows_like_one_over_tau():
    def tie_slope(tau):
        a = softmax_rows(np.array([0.1, 3.0, 2.95]) / (2.0 * tau))
        return a[1] * (a[0] + a[2]) / (2.0 * tau)
    assert g(PAGE, "tie_slope_tau1") == pytest.approx(tie_slope(1.0), rel=1e-9)
    assert g(PAGE, "tie_slope_tau005") == pytest.approx(tie_slope(0.05), rel=1e-9)
    # "more sensitive" when cold, and a_2 (1 - a_2) "near 1/4" at tau = 0.05
    assert g(PAGE, "tie_slope_tau005") > 10 * g(PAGE, "tie_slope_tau1")
    assert tie_slope(0.05) * 0.1 == pytest.approx(0.25, abs=0.02)
    # the worked example's query does the opposite
    assert g(PAGE, "slope_tau005") < g(PAGE, "slope_tau1") / 1e9


def jacobian_sizes(seed, tau, n_rows=20_000, T_k=3, d_k=4):
    """|d a / d q| (Frobenius) of random rows, in torch, from the row form
    d a_j / d q = c a_j (k_j - sum_l a_l k_l) = c a_j sum_l a_l (k_j - k_l):
    no 1 - a_j, so nothing cancels when a_j rounds to 1."""
    rng = np.random.default_rng(seed)
    Q = torch.tensor(rng.standard_normal((n_rows, d_k)))
    K = torch.tensor(rng.standard_normal((n_rows, T_k, d_k)))
    c = 1 / (tau * math.sqrt(d_k))
    a = torch.softmax(torch.einsum("nd,ntd->nt", Q, K) * c, dim=-1)
    diff = K[:, :, None, :] - K[:, None, :, :]  # k_j - k_l
    rows = c * a[:, :, None] * torch.einsum("nl,njld->njd", a, diff)
    return rows.flatten(1).norm(dim=1).numpy()


TAUS = (1.0, 0.1, 0.01, 0.001)


def test_the_row_form_agrees_with_exact_arithmetic_where_1_minus_a_cancels():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    rng = np.random.default_rng(9)
    Q, K = rng.standard_normal((20_000, 4)), rng.standard_normal((20_000, 3, 4))
    sizes = jacobian_sizes(9, 0.01)
    for i in np.argsort(sizes)[10_000:10_005]:  # rows at the median
        s = [mpmath.mpf(float(x)) * 50 for x in K[i] @ Q[i]]  # c = 50
        e = [mpmath.exp(x - max(s)) for x in s]
        w = [x / sum(e) for x in e]
        J = [[w[j] * ((j == l) - w[l]) for l in range(3)] for j in range(3)]
        tot = sum((50 * sum(J[j][l] * mpmath.mpf(float(K[i, l, m]))
                            for l in range(3))) ** 2
                  for j in range(3) for m in range(4))
        assert sizes[i] == pytest.approx(float(mpmath.sqrt(tot)), rel=1e-6)


def test_over_random_rows_the_median_vanishes_while_the_mean_and_the_tail_do_not():
    s = {tau: jacobian_sizes(9, tau) for tau in TAUS}
    assert g(PAGE, "jac_mean_1") == pytest.approx(s[1.0].mean(), rel=1e-9)
    assert g(PAGE, "jac_mean_001") == pytest.approx(s[0.01].mean(), rel=1e-9)
    assert g(PAGE, "jac_median_1") == pytest.approx(np.median(s[1.0]), rel=1e-9)
    assert g(PAGE, "jac_median_001") == pytest.approx(
        np.median(s[0.01]), rel=1e-6)
    assert g(PAGE, "jac_max_1") == pytest.approx(s[1.0].max(), rel=1e-9)
    assert g(PAGE, "jac_max_0001") == pytest.approx(s[0.001].max(), rel=1e-9)
    for name, tau in (("jac_above1_01", 0.1), ("jac_above1_001", 0.01),
                      ("jac_above1_0001", 0.001)):
        assert g(PAGE, name) == np.mean(s[tau] > 1)
    assert "and the 99th percentile grows" not in SOURCE
    assert "cooling it\nfurther makes those rows fewer and more sensitive still" in SOURCE
    assert "about {glue:text}`jac_above1_0001:.1%`\nof the rows" in SOURCE
    assert f"{g(PAGE, 'jac_above1_0001'):.1%}" == "0.7%"
    assert "the largest size among the 20,000 rows grows" in SOURCE


def test_at_the_no_way_out_setting_rounding_puts_the_point_on_the_corner():
    # "stays inside the triangle, up to the rounding of the convex-hull
    # exercise's last part": the coldest grid temperature, q = (-4, 4, -4)
    from attention.widgets import temperature as tw
    r = tw.explorer_readout(min(tw.TEMPERATURES), [-4.0, 4.0, -4.0])
    assert r["weights"][1] == 1.0 and 0 < r["weights"][0] < 1e-30
    assert r["output"][0] == 10.0 and r["output"][1] > 0  # just outside
    inside = tw.explorer_readout(1.0, [1.6, 0.6, -0.2])["weights"]
    assert min(inside) > 0 and sum(inside) == pytest.approx(1.0, rel=1e-15)
    assert ("stays inside the triangle, up to the rounding\nof the "
            "convex-hull exercise's last part") in SOURCE
    assert "no path leaves the triangle" in tw.TemperatureExplorer().fallback_alt
    assert "stays inside" not in tw.TemperatureExplorer().fallback_alt


def test_autograd_passes_back_the_vector_jacobian_product():
    # "Autograd computes the vector-Jacobian product a_j (g_j - a.g)":
    # torch's softmax backward, for a general g and for g one-hot on key 2
    s = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64, requires_grad=True)
    a = torch.softmax(s, dim=-1)
    for g_ in (torch.tensor([0.5, -2.0, 1.0], dtype=torch.float64),
               torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)):
        (grad,) = torch.autograd.grad(a, s, g_, retain_graph=True)
        want = a.detach() * (g_ - (a.detach() * g_).sum())
        assert torch.allclose(grad, want, rtol=1e-13, atol=0)
    # the product itself is the saturation exercise's answer: not given here (st4)
    assert "$a_j (g_j - a \\cdot g)$" not in SOURCE
    assert "autograd's arithmetic forms the $1 - a_2$, which is exactly $0$" in SOURCE


@pytest.mark.parametrize("seed", [1, 2, 3, 9])
def test_the_random_row_sentence_holds_at_other_seeds(seed):
    s = [jacobian_sizes(seed, tau) for tau in TAUS]
    assert np.median(s[2]) < 1e-10 < 0.1 < np.median(s[0])  # "the median falls"
    assert s[2].mean() > s[0].mean()  # "the mean ends higher than it started"
    # "fewer and more sensitive still": the largest grows at every step,
    # the share above 1 rises to tau = 0.1, then falls at every step
    assert all(x.max() < y.max() for x, y in zip(s, s[1:]))
    share = [np.mean(x > 1) for x in s]
    assert share[0] < share[1] > share[2] > share[3] > 0
    # "about 0.7% of the rows at tau = 0.001" (140 of 20,000 at seed 9;
    # its standard error is about 0.06%): every seed between 0.5% and 1%
    assert 0.005 < share[3] < 0.010
    assert len(s[3]) == 20_000  # "the largest size among the 20,000 rows"


def test_the_hand_arithmetic_typed_into_the_math_is_right():
    # s = (0.05, 1.5, 0.05), gaps 1.45 and, for the sharper query, 14.95
    assert "(0.05,\\; 1.5,\\; 0.05)" in SOURCE
    assert 0.5 * 0.1 == pytest.approx(0.05) and 0.5 * 3.0 == 1.5
    assert 0.5 * (3.0 - 0.1) == pytest.approx(1.45) and "-1.45, 0, -1.45" in SOURCE
    assert 0.5 * (30 - 0.1) == pytest.approx(14.95) and "= 14.95$" in SOURCE


def test_graves_is_cited_where_the_temperature_is_introduced():
    section = SOURCE.split("## Temperature")[1].split("````{exercise}")[0]
    assert "{cite:t}`graves2014neural`" in section


def test_a_weight_rounded_to_one_can_put_the_output_just_outside_the_hull():
    # "the largest weight rounds to exactly 1 while the others are still
    # positive ... o_1 is exactly 10 while o_2 is positive"; e^-800 underflows
    V = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    a = softmax_rows(np.array([0.0, 40.0, 0.0]))
    o = a @ V
    assert a[1] == 1.0 and a[0] > 0 and o[0] == 10.0 and o[1] > 0
    assert "a_2 == 1? True  output [1.00000000e+01 4.24835426e-17]" in (
        page_output_text())
    assert "Both hold in exact arithmetic; rounding can put a computed output" in SOURCE
    assert "cannot leave their convex hull, up to rounding" in SOURCE
    assert "\\min_l v_{lm} = \\sum_j a_j \\min_l v_{lm}" in SOURCE


def test_float32_passes_nothing_back_once_the_other_weights_underflow():
    # the summary's condition: at tau = 0.01 the gap 145 underflows e^-145 in
    # float32 and every entry of d a_2 / d q is 0
    q = torch.tensor([0.1, 3.0, 0.1, 0.0], requires_grad=True)
    a = torch.softmax(q @ torch.eye(4)[:3].T / (0.01 * 2.0), dim=-1)
    a[1].backward()
    assert a[0].item() == 0.0 and (q.grad == 0).all()
    assert "as long as their weights have not underflowed to zero" in SOURCE


def sgd_move_of_a_2(tau: float, lr: float = 1e-3) -> float:
    """One torch.optim.SGD step on the loss -a_2 (whole query, float64):
    how far a_2 rises, read from a_1 + a_3 = 1 - a_2 so no digits cancel."""
    K = torch.eye(4, dtype=torch.float64)[:3]
    q = torch.tensor([0.1, 3.0, 0.1, 0.0], dtype=torch.float64,
                     requires_grad=True)
    opt = torch.optim.SGD([q], lr=lr)
    a = torch.softmax(q @ K.T / (tau * 2.0), dim=-1)
    rest_before = (a[0] + a[2]).item()
    (-a[1]).backward()
    opt.step()
    with torch.no_grad():
        a = torch.softmax(q @ K.T / (tau * 2.0), dim=-1)
    return rest_before - (a[0] + a[2]).item()


def test_with_plain_sgd_the_weight_moves_the_square_less():
    # a real optimiser step at the same learning rate, not the formula
    ratio = slope(1.0) / slope(0.05)
    move_1, move_005 = sgd_move_of_a_2(1.0), sgd_move_of_a_2(0.05)
    assert move_005 > 0
    # "about the square of that factor less": within a factor 1.5 of it,
    # and far from the factor itself
    assert 1 / 1.5 < (move_1 / move_005) / ratio ** 2 < 1.5
    assert "with plain SGD at the same learning rate" in SOURCE
    assert "weight moves about the square of that factor less" in SOURCE
    # the loss here is -a_2, so dL/da_2 = -1 at both temperatures, as the sentence assumes
    assert "for the same $\\partial L / \\partial a_2$" in SOURCE
    # NumPy 2: a float64 scalar promotes float32 scores
    x = np.ones(2, np.float32)
    assert (np.sqrt(np.int64(4)) * x).dtype == np.float64
    assert (0.5 * x).dtype == np.float32
    assert "(NumPy 2's promotion rules)" in " ".join(SOURCE.split())


def test_float16_products_of_large_entries_overflow_or_round_at_tau_1_and_are_tried():
    # st13b: the solution said only that a small tau's scaled scores overflow float16;
    # the raw products of large entries overflow (or are rounded) even at tau = 1,
    # whatever the division after them, and the checker runs such inputs at tau = 1
    from attention.checkers import temperature as t

    text = " ".join(SOURCE.split())
    assert ("in `float16` the raw products $QK^\\top$ of large entries overflow or are "
            "rounded even at $\\tau = 1$, in `float32` they overflow past $3.4 \\times 10^{38}$ and "
            "round a cold near tie wrong (dividing them afterwards comes too late)") in text
    assert ("The raw scores are shifted by their row maximum *before* they are divided by "
            "$\\tau\\sqrt{d_k}$") in text
    Qw, Kw, _, Qr, Kr, _ = t._wide_float16_inputs()
    with np.errstate(over="ignore"):
        assert np.isinf(Qw @ Kw.T).any()  # overflowed: inf, whatever comes after
    exact = Qr.astype(np.float64) @ Kr.T.astype(np.float64)
    assert np.isfinite(exact).all() and np.abs(exact).max() < 65504
    assert np.abs((Qr @ Kr.T).astype(np.float64) - exact).max() >= 2.5  # rounded
    # in float32 neither happens: finite, and exact here
    assert np.isfinite(Qw.astype(np.float32) @ Kw.T.astype(np.float32)).all()
    assert np.array_equal((Qr.astype(np.float32) @ Kr.T.astype(np.float32)), exact)
    assert t.COLD16 < 1e-3  # and a small tau on float16 inputs of ordinary size
    # the title of the checker's float16 case names tau = 1 on those entries
    from attention import checkers
    import contextlib
    import io

    def solution_like(Q, K, V, tau):
        # (float64 work, shifted before it is scaled: st20b; st23b: raw scores in
        # float32 overflow at entries of 3e19 and round a cold near tie wrong)
        w = np.float64
        R = Q.astype(w) @ np.swapaxes(K.astype(w), -1, -2)
        S = (R - R.max(axis=-1, keepdims=True)).astype(np.float64) / tau / Q.shape[-1] ** 0.5
        E = np.exp(S)
        A = E / E.sum(axis=-1, keepdims=True)
        return (A @ V.astype(w)).astype(Q.dtype), A.astype(Q.dtype)

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert checkers.check_attention_with_temperature(solution_like)
    report = " ".join(out.getvalue().split())
    assert "and 1 on entries of size 30 at d_k = 128 and 20 at d_k = 64" in report


def test_with_q_k_v_all_x_wide_tokens_mostly_get_back_their_own_vectors():
    # "wide tokens attend mostly to themselves and get back roughly their own
    # vectors": width 64, scaled scores, 16 to 512 tokens
    assert ("So, here up to $T = 512$, wide\ntokens attend mostly to "
            "themselves") in SOURCE
    # the cell's median self weights, recomputed in the cell's draw order
    rng = np.random.default_rng(2)
    w = {}
    for d in (8, 16, 64):
        for T in (16, 128, 512):
            meds = []
            for _ in range(10):
                X = rng.standard_normal((T, d))
                meds.append(np.median(np.diag(
                    softmax_rows(X @ X.T / math.sqrt(d)))))
            w[d, T] = np.mean(meds)
    for d, T in ((64, 16), (64, 512), (16, 512)):
        assert g(PAGE, f"qkv_self_w_{d}_{T}") == pytest.approx(w[d, T],
                                                             rel=1e-9)
    # "mostly to themselves" at width 64 for every T shown, and falling with T;
    # "a top score is not yet most of the weight" at width 16
    assert min(w[64, T] for T in (16, 128, 512)) > 0.5
    assert w[64, 16] > w[64, 128] > w[64, 512]
    assert w[16, 512] < 0.5
    for T in (16, 128, 512):
        X = np.random.default_rng(T).standard_normal((T, 64))
        A = softmax_rows(X @ X.T / 8.0)
        O = A @ X
        cos = (O * X).sum(1) / np.linalg.norm(O, axis=1) / np.linalg.norm(X, axis=1)
        assert np.median(np.diag(A)) > 0.5 and np.median(cos) > 0.9, T


def test_the_solution_shifts_before_it_scales_and_is_finite_at_every_tau():
    # st15b, st20b: the solution scaled float32 scores before the shift, NaN once the
    # scaled scores (raw scores of about 1e38 at tau = 0.1) or the factor 1/(tau
    # sqrt(d_k)) (below about 3e-39) passed float32's largest number; it shifts the raw
    # scores first, in float64, and is one-hot there, in every dtype, at every tau > 0
    from tests.pages._common import solution_namespace

    assert "# shift, then scale: each row's best is 0 at every tau > 0" in SOURCE
    fn = solution_namespace("soft-retrieval", "attention_with_temperature")[
        "attention_with_temperature"]
    rng = np.random.default_rng(0)
    Q, K, V = (rng.standard_normal(s) for s in ((3, 4), (5, 4), (5, 2)))
    best = (Q @ K.T).argmax(axis=-1)
    runs = [(1e19, tau) for tau in (0.1, 1e-3, 1e-40)] + \
        [(1.0, tau) for tau in (1e-30, 1e-40, 1e-310, 5e-324)]  # (float64's subnormal)
    for scale, tau in runs:
        for dtype in (np.float64, np.float32, np.float16):
            if scale > 1 and dtype == np.float16:
                continue  # (1e19 is inf in float16)
            q = (scale * Q).astype(dtype)
            O, A = fn(q, K.astype(dtype), V.astype(dtype), tau)
            assert A.dtype == O.dtype == dtype and np.isfinite(A).all(), (scale, tau)
            assert np.array_equal(A.argmax(axis=-1), best) and np.allclose(A.max(axis=-1), 1)
    # scaled first in float32, the raw scores of about 1e38 are inf at tau = 0.1
    R = (1e19 * Q).astype(np.float32) @ (1e19 * K).astype(np.float32).T
    with np.errstate(over="ignore"):
        assert np.isinf(R * np.float32(1 / (0.1 * 4**0.5))).any()
        assert np.isinf(np.float32(1 / (1e-40 * 4**0.5)))  # and the factor at 1e-40
