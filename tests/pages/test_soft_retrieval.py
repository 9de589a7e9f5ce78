"""Soft retrieval: every number the prose quotes, recomputed independently, and the page's
rules (hidden glue, short lines, no typed numbers in figures, exercise before its answer)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from attention.checkers import _common
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


def test_the_checkers_cold_case_overflows_without_the_max_shift():
    # The solution says some of the checker's scores at tau = 1e-3 pass 709.
    rng = np.random.default_rng(_common._RNG_SEED + 1)
    Q, K, V = _common._qkv(rng, T_q=3, T_k=4, d_k=3, d_v=2)
    assert (Q @ K.T / (1e-3 * math.sqrt(3))).max() > 709
    with np.errstate(over="ignore"):
        assert np.isinf(np.exp(710.0))


def own_score_tops_row(T: int, d_model: int, draws: int = 40, seed: int = 7) -> float:
    rng = np.random.default_rng(seed)
    hits = [np.mean((X @ X.T).argmax(axis=1) == np.arange(T))
            for X in (rng.standard_normal((T, d_model)) for _ in range(draws))]
    return float(np.mean(hits))


def test_random_tokens_score_themselves_highest_in_nearly_every_row_more_so_when_wider():
    # Other draws than the page's: "nearly every row, the more reliably the wider the tokens".
    for T in (16, 256):
        narrow, wide = own_score_tops_row(T, 16), own_score_tops_row(T, 64)
        assert narrow > 0.85 and wide > 0.999 and wide >= narrow
    # ... and with equal lengths, always (Cauchy-Schwarz).
    X = np.random.default_rng(3).standard_normal((256, 16))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    assert np.array_equal((X @ X.T).argmax(axis=1), np.arange(256))


def test_with_the_worked_examples_query_keys_1_and_3_always_tie():
    for tau in np.geomspace(0.05, 20, 9):
        a = softmax_rows(np.array([0.1, 3.0, 0.1]) / (2 * tau))
        assert a[0] == a[2]


# --- the page's rules ------------------------------------------------------------------------

def code_cells(text: str):
    return re.findall(r"```\{code-cell\} ipython3\n(.*?)```", text, flags=re.S)


def test_every_glue_call_is_in_a_removed_cell():
    for cell in code_cells(SOURCE):
        if "glue(" in cell:
            assert cell.startswith(":tags: [remove-cell]"), cell[:200]


def test_code_and_printed_lines_fit_76_characters():
    for cell in code_cells(SOURCE):
        for line in cell.splitlines():
            assert len(line) <= 76, line
    for cell in executed_notebook(PAGE)["cells"]:
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            for line in "".join(text).splitlines():
                assert len(line) <= 76, line


def figure_blocks(text: str):
    return re.findall(r"```\{(?:glue:)?figure\}.*?\n(.*?)```", text, flags=re.S)


def test_no_number_is_typed_into_a_caption_or_alt_text():
    blocks = figure_blocks(SOURCE)
    assert len(blocks) == 3
    for block in blocks:
        body = "\n".join(line for line in block.splitlines() if not line.startswith(":name:"))
        body = re.sub(r"\$[^$]*\$", "", body)  # math: subscripts, not quoted numbers
        body = re.sub(r"\b[a-zA-Z]+_?\d\b", "", body)  # a_2, v2: names
        assert not re.search(r"\d", body), body


def test_notation_lives_on_the_index_page_only():
    assert "| Symbol |" not in SOURCE
    assert "{ref}`notation table <notation>`" in SOURCE
    index = (CHAPTERS / "index.md").read_text()
    assert "(notation)=\n## Notation" in index
    for row in ("$q$ | $1 \\times d_k$", "$k_j$, $v_j$", "$d_{\\text{model}}$", "$J$ |",
                "$T$ when $T_q = T_k$", "$o = a V$"):
        assert row in index, row
    assert "$L$ for $T_q$, $S$ for $T_k$, $E$ for $d_k$" in index


def test_the_temperature_exercise_comes_before_the_explorer_and_the_tie_demonstration():
    exercise = SOURCE.index(":label: ex-temperature")
    solution = SOURCE.index("```{solution-start} ex-temperature\n:class: dropdown")
    assert exercise < solution < SOURCE.index("TemperatureExplorer()")
    assert exercise < SOURCE.index("K_tie")  # the tie is shown only inside the solution
    assert SOURCE.index("K_tie") < SOURCE.index("```{solution-end}", solution)
    # Above the exercise the page derives only the single-best-key limit.
    assert not re.search(r"\btie", SOURCE[:exercise].split("## Temperature")[1])


def test_the_cold_regime_is_not_said_to_stop_learning():
    assert "learning stops" not in SOURCE
    assert "does not *stop* learning" in SOURCE


def test_graves_is_cited_where_the_temperature_is_introduced():
    section = SOURCE.split("## Temperature")[1].split("````{exercise}")[0]
    assert "{cite:t}`graves2014neural`" in section
